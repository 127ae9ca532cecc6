#pragma once
// place::online::first_fit and place::online::best_fit -- classic free-list allocators over one growing
// heap: a request takes the lowest (first fit) or the smallest (best fit; ties: lowest) free block that
// holds it at an aligned address, splitting off the rest; a freed block is coalesced with free
// neighbours; when no block fits, the heap grows at its top (reusing a free block that ends at the top).
// reserved = the heap's high-water mark.
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <memplan/core/buffer.hpp>
#include <memplan/place/online/online.hpp>

namespace memplan::place::online {

namespace detail {

enum class rule { first, best };

inline online_result replay_free_list(const buffer_problem& p, rule r, const std::string& name) {
  const auto evs = replay_order(p, name);
  std::vector<std::int64_t> offsets(p.buffers.size(), 0);
  std::map<std::int64_t, std::int64_t> free_blocks;  // start -> end
  std::int64_t top = 0, high = 0;
  for (const auto& e : evs) {
    const auto& b = p.buffers[e.buffer];
    if (b.size == 0) continue;  // offset 0, nothing to manage
    if (!e.allocate) {
      auto start = offsets[e.buffer], end = start + b.size;
      auto next = free_blocks.lower_bound(start);
      if (next != free_blocks.end() && next->first == end) { end = next->second; next = free_blocks.erase(next); }
      if (next != free_blocks.begin()) {
        auto prev = std::prev(next);
        if (prev->second == start) { start = prev->first; free_blocks.erase(prev); }
      }
      if (end == top) top = start;  // the heap shrinks back; the high-water mark stays
      else free_blocks[start] = end;
      continue;
    }
    const auto align = effective_alignment(p, b);
    auto chosen = free_blocks.end();
    std::int64_t chosen_pos = 0;
    for (auto it = free_blocks.begin(); it != free_blocks.end(); ++it) {
      const auto pos = align_up(it->first, align);
      if (pos + b.size > it->second) continue;
      if (r == rule::first) { chosen = it; chosen_pos = pos; break; }
      if (chosen == free_blocks.end() || it->second - it->first < chosen->second - chosen->first) {
        chosen = it;
        chosen_pos = pos;
      }
    }
    if (chosen == free_blocks.end()) {
      chosen_pos = align_up(top, align);
      if (chosen_pos > top) free_blocks[top] = chosen_pos;  // alignment padding stays free
      top = chosen_pos + b.size;
      high = std::max(high, top);
    } else {
      const auto [s, end] = *chosen;
      free_blocks.erase(chosen);
      if (s < chosen_pos) free_blocks[s] = chosen_pos;
      if (chosen_pos + b.size < end) free_blocks[chosen_pos + b.size] = end;
    }
    offsets[e.buffer] = chosen_pos;
  }
  return finish_online(p, std::move(offsets), high, name);
}

}  // namespace detail

struct first_fit {
  [[nodiscard]] std::string name() const { return "online_first_fit"; }
  [[nodiscard]] online_result simulate(const buffer_problem& p) const {
    return detail::replay_free_list(p, detail::rule::first, name());
  }
  [[nodiscard]] buffer_placement place(const buffer_problem& p) const { return simulate(p).placement; }
};

struct best_fit {
  [[nodiscard]] std::string name() const { return "online_best_fit"; }
  [[nodiscard]] online_result simulate(const buffer_problem& p) const {
    return detail::replay_free_list(p, detail::rule::best, name());
  }
  [[nodiscard]] buffer_placement place(const buffer_problem& p) const { return simulate(p).placement; }
};

}  // namespace memplan::place::online
