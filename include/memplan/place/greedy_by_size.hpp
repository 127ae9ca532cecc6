#pragma once
// place::greedy_by_size -- "Greedy by Size for Offset Calculation" (Pisarchyk & Lee 2020, used by TFLite;
// MemoMalloc §2.3 "greedy_by_size"): buffers in order of decreasing size; each goes to the smallest gap
// (best fit) among the already placed buffers whose lifetimes overlap its own, or on top of them.
// Overlapping buffers are found with an interval index, so the cost is O(n (log n + k log k)) for at
// most k buffers live together, not the O(n^2) of the textbook version.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include <memplan/core/buffer.hpp>
#include <memplan/place/detail/support.hpp>

namespace memplan::place {

struct greedy_by_size {
  // best (the paper's smallest gap) or first (the lowest gap that fits, as TFLite Micro's planner).
  detail::fit gap = detail::fit::best;

  [[nodiscard]] std::string name() const { return "greedy_by_size"; }

  [[nodiscard]] buffer_placement place(const buffer_problem& p) const { return place(p, deadline::never()); }

  // With a deadline: if it passes before every buffer is placed, the rest is stacked on top (valid,
  // said in `note`); the pass checks it every 256 buffers.
  [[nodiscard]] buffer_placement place(const buffer_problem& p, const deadline& until) const { return detail::place_one_pass(*this, p, until); }

  // The offsets of the pass alone (validated input assumed; not yet checked by the referee: the
  // composite placers check the one placement they return).
  [[nodiscard]] std::vector<std::int64_t> offsets(const buffer_problem& p, const deadline& until, bool* cut = nullptr) const {
    auto order = detail::free_buffers(p);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return p.buffers[a].size > p.buffers[b].size;  // ties: index order
    });
    return detail::place_in_order(p, order, gap, {}, &until, cut);
  }
};

}  // namespace memplan::place
