#pragma once
// place::online::caching_allocator -- a model of PyTorch's CUDA caching allocator (c10/cuda/
// CUDACachingAllocator.cpp, the allocator whose fragmentation OLLA Fig. 8 measures, §5.4):
//  * requests are rounded up to a multiple of 512 B (minimum 512 B);
//  * two pools: small (rounded size <= 1 MiB) and large;
//  * a request first takes the smallest cached free block of its pool that holds it (best fit, ties:
//    lowest address); else a new segment is cudaMalloc'ed: 2 MiB for small requests, 20 MiB for
//    large requests under 10 MiB, and the request rounded up to 2 MiB from 10 MiB on (its own segment);
//  * a block is split when the remainder is >= 512 B (small pool) or > 1 MiB (large pool); otherwise
//    the whole block is handed out;
//  * a freed block is merged with free neighbours of the same segment only (no cross-segment
//    coalescing) and cached; segments are never released (no empty_cache).
// Segments are laid out one after the other in a virtual address space; reserved = sum of segments.
// Constants are fields so that variants (e.g. 2 MiB-rounded large segments) can be modelled.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/core/buffer.hpp>
#include <memplan/place/online/online.hpp>

namespace memplan::place::online {

struct caching_allocator {
  std::int64_t min_block = 512;                       // kMinBlockSize: rounding and small split threshold
  std::int64_t small_size = std::int64_t{1} << 20;    // kSmallSize: largest request of the small pool
  std::int64_t small_segment = std::int64_t{2} << 20; // kSmallBuffer
  std::int64_t large_segment = std::int64_t{20} << 20;// kLargeBuffer, for large requests < min_large_alloc
  std::int64_t min_large_alloc = std::int64_t{10} << 20;  // kMinLargeAlloc
  std::int64_t round_large = std::int64_t{2} << 20;   // kRoundLarge

  [[nodiscard]] std::string name() const { return "caching_allocator"; }

  [[nodiscard]] std::int64_t round_size(std::int64_t size) const {
    return size < min_block ? min_block : align_up(size, min_block);
  }
  [[nodiscard]] std::int64_t segment_size(std::int64_t rounded) const {
    if (rounded <= small_size) return small_segment;
    if (rounded < min_large_alloc) return large_segment;
    return align_up(rounded, round_large);
  }

  [[nodiscard]] online_result simulate(const buffer_problem& p) const {
    const auto evs = replay_order(p, name());
    for (std::size_t i = 0; i < p.buffers.size(); ++i)
      if (effective_alignment(p, p.buffers[i]) > min_block)
        throw error(errc::invalid_argument, name() + ": buffer " + std::to_string(i) + " needs alignment " +
                                                std::to_string(effective_alignment(p, p.buffers[i])) +
                                                "; the caching allocator guarantees " + std::to_string(min_block));
    struct block {
      std::int64_t size;
      std::int64_t seg_begin, seg_end;
      bool small;
      bool free;
    };
    std::map<std::int64_t, block> blocks;                           // address -> block
    std::set<std::pair<std::int64_t, std::int64_t>> pool[2];        // (size, address) of free blocks; [0] large, [1] small
    std::vector<std::int64_t> offsets(p.buffers.size(), 0);
    std::int64_t reserved = 0;
    for (const auto& e : evs) {
      const auto& b = p.buffers[e.buffer];
      if (b.size == 0) continue;
      if (e.allocate) {
        const auto rs = round_size(b.size);
        const bool small = rs <= small_size;
        auto& cache = pool[small ? 1 : 0];
        auto it = cache.lower_bound({rs, 0});
        std::int64_t addr;
        if (it == cache.end()) {
          const auto seg = segment_size(rs);
          addr = reserved;
          blocks[addr] = {seg, addr, addr + seg, small, false};
          reserved += seg;
        } else {
          addr = it->second;
          cache.erase(it);
          blocks[addr].free = false;
        }
        auto& blk = blocks[addr];
        const auto remaining = blk.size - rs;
        if (small ? remaining >= min_block : remaining > small_size) {
          blocks[addr + rs] = {remaining, blk.seg_begin, blk.seg_end, small, true};
          cache.insert({remaining, addr + rs});
          blk.size = rs;
        }
        offsets[e.buffer] = addr;
      } else {
        const auto addr = offsets[e.buffer];
        auto it = blocks.find(addr);
        auto& cache = pool[it->second.small ? 1 : 0];
        it->second.free = true;
        // Merge with the next and previous blocks of the same segment when they are free.
        auto next = std::next(it);
        if (next != blocks.end() && next->second.free && next->first == it->first + it->second.size &&
            next->second.seg_begin == it->second.seg_begin) {
          cache.erase({next->second.size, next->first});
          it->second.size += next->second.size;
          blocks.erase(next);
        }
        if (it != blocks.begin()) {
          auto prev = std::prev(it);
          if (prev->second.free && prev->first + prev->second.size == it->first &&
              prev->second.seg_begin == it->second.seg_begin) {
            cache.erase({prev->second.size, prev->first});
            prev->second.size += it->second.size;
            blocks.erase(it);
            it = prev;
          }
        }
        cache.insert({it->second.size, it->first});
      }
    }
    return finish_online(p, std::move(offsets), reserved, name());
  }

  [[nodiscard]] buffer_placement place(const buffer_problem& p) const { return simulate(p).placement; }
};

}  // namespace memplan::place::online
