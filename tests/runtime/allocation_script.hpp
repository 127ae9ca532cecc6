#pragma once
// Test support: an allocation "program" (allocate k bytes / free allocation j) that can be run against
// any std::pmr::memory_resource, random programs, perturbations of them, and an address-overlap checker
// that fails the moment a resource hands out memory overlapping a live allocation.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <memory_resource>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace memplan::test {

struct script_op {
  bool alloc = true;
  std::size_t bytes = 0;      // alloc
  std::size_t alignment = 8;  // alloc
  std::int32_t id = 0;        // the allocation (its index among the allocs of the script)
};
using script = std::vector<script_op>;

// Live allocations by address; throws on an overlap, a double free or a misaligned pointer.
class overlap_checker {
 public:
  void on_alloc(const void* p, std::size_t bytes, std::size_t alignment) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    if (a % alignment != 0) throw std::runtime_error("misaligned pointer");
    if (bytes == 0) return;
    auto it = live_.lower_bound(a);
    if (it != live_.end() && it->first < a + bytes) throw std::runtime_error("overlap with a later live allocation");
    if (it != live_.begin() && std::prev(it)->first + std::prev(it)->second > a) throw std::runtime_error("overlap with an earlier live allocation");
    live_[a] = bytes;
  }
  void on_free(const void* p, std::size_t bytes) {
    if (bytes == 0) return;
    if (live_.erase(reinterpret_cast<std::uintptr_t>(p)) != 1) throw std::runtime_error("free of a pointer that is not live");
  }
  [[nodiscard]] std::size_t live() const { return live_.size(); }

 private:
  std::map<std::uintptr_t, std::size_t> live_;
};

// Runs the script on r: writes a pattern over every allocation (so ASan sees every byte used) and checks
// it is intact at the free (another allocation wrote over it otherwise). Allocations never freed by the
// script are returned in `leftover` (pointer, bytes, alignment).
struct run_result {
  std::vector<std::tuple<void*, std::size_t, std::size_t>> leftover;
};
inline run_result run_script(const script& s, std::pmr::memory_resource& r, overlap_checker& chk) {
  std::vector<std::tuple<void*, std::size_t, std::size_t>> ptr;
  for (const auto& op : s) {
    if (op.alloc) {
      if (static_cast<std::size_t>(op.id) >= ptr.size()) ptr.resize(static_cast<std::size_t>(op.id) + 1);
      void* p = r.allocate(op.bytes, op.alignment);
      chk.on_alloc(p, op.bytes, op.alignment);
      std::memset(p, static_cast<int>(op.id & 0xff), op.bytes);
      ptr[static_cast<std::size_t>(op.id)] = {p, op.bytes, op.alignment};
    } else {
      auto& [p, bytes, al] = ptr.at(static_cast<std::size_t>(op.id));
      const auto* c = static_cast<const unsigned char*>(p);
      for (std::size_t k = 0; k < bytes; ++k)
        if (c[k] != static_cast<unsigned char>(op.id & 0xff)) throw std::runtime_error("allocation " + std::to_string(op.id) + " was overwritten");
      chk.on_free(p, bytes);
      r.deallocate(p, bytes, al);
      p = nullptr;
    }
  }
  run_result rr;
  for (auto& t : ptr)
    if (std::get<0>(t)) rr.leftover.push_back(t);
  return rr;
}
inline void release(const run_result& rr, std::pmr::memory_resource& r, overlap_checker& chk) {
  for (const auto& [p, bytes, al] : rr.leftover) {
    chk.on_free(p, bytes);
    r.deallocate(p, bytes, al);
  }
}

// A random program: n allocations of 0..max_bytes (a few empty), each freed a random while later; a
// fraction `escape` never freed.
inline script random_script(std::mt19937_64& rng, int n, std::size_t max_bytes = 4096, double escape = 0.05) {
  script s;
  std::vector<std::int32_t> live;
  std::uniform_int_distribution<std::size_t> size(0, max_bytes);
  std::uniform_int_distribution<int> al(0, 3);
  std::bernoulli_distribution free_now(0.45), esc(escape), empty(0.03);
  std::int32_t next = 0;
  while (next < n || !live.empty()) {
    if (next < n && (live.empty() || !free_now(rng))) {
      const auto bytes = empty(rng) ? std::size_t{0} : size(rng) + 1;
      s.push_back({true, bytes, std::size_t{8} << al(rng), next});
      if (!esc(rng)) live.push_back(next);
      ++next;
    } else {
      std::uniform_int_distribution<std::size_t> pick(0, live.size() - 1);
      const auto k = pick(rng);
      s.push_back({false, 0, 0, live[k]});
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
  return s;
}

}  // namespace memplan::test
