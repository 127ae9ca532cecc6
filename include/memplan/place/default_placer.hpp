#pragma once
// place::default_placer -- the placer to use without thinking: zero fragmentation (arena ==
// arena_lower_bound, OLLA §4.4/§5.4) whenever it finds it within its budget, else the best arena found
// with its gap in `note`.
//
// greedy_by_breadth first (zero fragmentation on most training graphs in milliseconds), best_fit if
// that misses the bound; then place::exact searches from their best for the rest of the budget
// (decision mode when the problem has a finite capacity: the first placement that fits ends it;
// otherwise minimisation); greedy_by_size and pyramid only if time is left after that. Every pass
// checks the deadline (a greedy pass cut short stacks its remaining buffers on top), so the wall time
// stays within time_limit_s plus a few milliseconds.
#include <algorithm>
#include <string>

#include <memplan/place/best_fit.hpp>
#include <memplan/place/buffer.hpp>
#include <memplan/place/detail/support.hpp>
#include <memplan/place/exact.hpp>
#include <memplan/place/greedy_by_breadth.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/place/lower_bound.hpp>
#include <memplan/place/pyramid.hpp>

namespace memplan::place {

struct default_placer {
  static constexpr double default_time_limit_s = 1.0;
  double time_limit_s = -1;        // seconds in all; < 0: default_time_limit_s
  std::int64_t node_limit = -1;    // for the exact search, < 0: unlimited
  std::int64_t accept = -1;        // as exact::accept (-1: the capacity when finite, else minimise)

  [[nodiscard]] std::string name() const { return "default"; }
  [[nodiscard]] double seconds() const { return time_limit_s < 0 ? default_time_limit_s : time_limit_s; }

  [[nodiscard]] buffer_placement place(const buffer_problem& p) const {
    validate(p);
    const auto until = detail::deadline::after(seconds());
    const auto relaxed = detail::without_capacity(p);
    const auto bound = arena_lower_bound(p);
    const bool capacity_given = p.capacity != std::numeric_limits<std::int64_t>::max();
    const std::int64_t level = accept >= 0 ? accept : capacity_given ? p.capacity : 0;
    const auto good = [&](const buffer_placement& pl) { return pl.arena <= bound || pl.arena <= level || pl.optimal; };
    buffer_placement best;
    std::string tried;
    auto consider = [&](buffer_placement pl) {
      tried += (tried.empty() ? "" : ", ") + pl.placer + "=" + std::to_string(pl.arena);
      if (best.offsets.empty() || pl.arena < best.arena) best = std::move(pl);
    };
    consider(greedy_by_breadth{}.place(relaxed, until));
    if (!good(best) && !until.expired()) consider(best_fit{}.place(relaxed, until));
    if (!good(best) && !until.expired()) {
      auto pl = exact{.node_limit = node_limit, .accept = accept}.search_from(p, best, until);
      tried += ", exact=" + std::to_string(pl.arena) + " (" + pl.note + ")";
      if (pl.arena < best.arena || pl.optimal) best = std::move(pl);  // exact's proven bound comes along
    }
    // Whatever time is left (the search gave up early): the remaining heuristics.
    if (!good(best) && !until.expired()) consider(greedy_by_size{}.place(relaxed, until));
    if (!good(best) && !until.expired()) consider(pyramid{}.place(relaxed, until));
    const auto lb = std::max(bound, best.lower_bound);
    const bool optimal = best.optimal || best.arena == lb;
    return detail::finish(p, std::move(best.offsets), name() + "(" + best.placer + ")", tried, lb, optimal);
  }
};

}  // namespace memplan::place
