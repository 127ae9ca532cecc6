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
#include <vector>

#include <memplan/core/buffer.hpp>

namespace memplan::place {

// Max over steps of the resident bytes (plain sizes, no alignment): the number OLLA calls the peak
// memory without fragmentation. O(n log n), O(n) on compact step indices.
inline std::int64_t resident_peak(const buffer_problem& p) {
  std::int64_t cur = 0, peak = 0;
  for (const auto& e : memplan::detail::lifetime_events(p, [&](std::size_t i) { return p.buffers[i].size > 0; })) {
    cur += e.kind == 1 ? p.buffers[e.i].size : -p.buffers[e.i].size;  // frees first at equal times: [lower, upper)
    peak = std::max(peak, cur);
  }
  return peak;
}

// A proven lower bound on the arena: resident bytes with the global alignment accounted, and pins.
inline std::int64_t arena_lower_bound(const buffer_problem& p) {
  const std::int64_t g = p.alignment;
  std::int64_t bound = 0;
  for (const auto& b : p.buffers)
    if (b.fixed_offset >= 0) bound = std::max(bound, b.fixed_offset + b.size);
  if (g == 1) return std::max(bound, resident_peak(p));
  // At each step: sum of align_up(size, g) minus the largest alignment slack of a live buffer (only the
  // topmost buffer can avoid its slack). Computed with a sweep keeping a multiset of slacks.
  const auto evs = memplan::detail::lifetime_events(p, [&](std::size_t i) { return p.buffers[i].size > 0; });
  std::vector<std::int64_t> slacks;  // kept sorted; live set sizes are modest in practice
  std::int64_t cur = 0;
  for (std::size_t k = 0; k < evs.size(); ++k) {
    const auto& e = evs[k];
    const auto size = p.buffers[e.i].size;
    const auto aligned = align_up(size, g);
    const auto slack = aligned - size;
    if (e.kind == 1) {
      cur += aligned;
      slacks.insert(std::upper_bound(slacks.begin(), slacks.end(), slack), slack);
    } else {
      cur -= aligned;
      slacks.erase(std::lower_bound(slacks.begin(), slacks.end(), slack));
    }
    const bool last_at_t = k + 1 == evs.size() || evs[k + 1].t != e.t;
    if (last_at_t && !slacks.empty()) bound = std::max(bound, cur - slacks.back());
  }
  return bound;
}

}  // namespace memplan::place
