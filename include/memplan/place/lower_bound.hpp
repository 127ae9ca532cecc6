#pragma once
// Lower bounds on the arena of any placement of a buffer_problem.
//
// The classic bound is the maximum over time of the resident bytes, i.e. the maximum weight clique of
// the interval graph of lifetimes (OLLA §4.4, "peak_mem_no_frag", eq. 13). With a global alignment g every
// buffer except the topmost one at a given step is followed by a buffer starting on a multiple of g, so it
// occupies at least align_up(size, g) bytes; the bound below accounts for that. Pinned buffers add the
// trivial bound fixed_offset + size.
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include <memplan/core/buffer.hpp>

namespace memplan::place {

// Max over steps of the resident bytes (plain sizes, no alignment): the number OLLA calls the peak
// memory without fragmentation. O(n log n).
inline std::int64_t resident_peak(const buffer_problem& p) {
  std::vector<std::pair<std::int64_t, std::int64_t>> ev;  // (time, +size at lower / -size at upper)
  ev.reserve(2 * p.buffers.size());
  for (const auto& b : p.buffers) {
    if (b.size == 0) continue;
    ev.emplace_back(b.lower, b.size);
    ev.emplace_back(b.upper, -b.size);
  }
  std::sort(ev.begin(), ev.end());  // at equal times the frees (negative) come first: [lower, upper)
  std::int64_t cur = 0, peak = 0;
  for (const auto& [t, d] : ev) {
    cur += d;
    peak = std::max(peak, cur);
  }
  return peak;
}

// A proven lower bound on the arena: resident bytes with the global alignment accounted, and pins.
inline std::int64_t arena_lower_bound(const buffer_problem& p) {
  const std::int64_t g = p.alignment;
  // At each step: sum of align_up(size, g) minus the largest alignment slack of a live buffer (only the
  // topmost buffer can avoid its slack). Computed with a sweep keeping a multiset of slacks.
  struct ev { std::int64_t t; int kind; std::int64_t size; };  // kind 0 = free (first), 1 = allocate
  std::vector<ev> evs;
  evs.reserve(2 * p.buffers.size());
  std::int64_t bound = 0;
  for (const auto& b : p.buffers) {
    if (b.fixed_offset >= 0) bound = std::max(bound, b.fixed_offset + b.size);
    if (b.size == 0) continue;
    evs.push_back({b.lower, 1, b.size});
    evs.push_back({b.upper, 0, b.size});
  }
  std::sort(evs.begin(), evs.end(), [](const ev& a, const ev& b) {
    return a.t != b.t ? a.t < b.t : a.kind < b.kind;
  });
  if (g == 1) return std::max(bound, resident_peak(p));
  // slack in [0, g): count live buffers per slack value would need g buckets; use a sorted multiset.
  std::vector<std::int64_t> slacks;  // kept sorted; live set sizes are modest in practice
  std::int64_t cur = 0;
  for (std::size_t i = 0; i < evs.size(); ++i) {
    const auto& e = evs[i];
    const auto aligned = align_up(e.size, g);
    const auto slack = aligned - e.size;
    if (e.kind == 1) {
      cur += aligned;
      slacks.insert(std::upper_bound(slacks.begin(), slacks.end(), slack), slack);
    } else {
      cur -= aligned;
      slacks.erase(std::lower_bound(slacks.begin(), slacks.end(), slack));
    }
    const bool last_at_t = i + 1 == evs.size() || evs[i + 1].t != e.t;
    if (last_at_t && !slacks.empty()) bound = std::max(bound, cur - slacks.back());
  }
  return bound;
}

}  // namespace memplan::place
