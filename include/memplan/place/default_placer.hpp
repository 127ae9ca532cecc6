#pragma once
// place::default_placer -- returns a zero-fragmentation arena (arena == arena_lower_bound: the max
// resident bytes with alignment accounted, OLLA §4.4/§5.4) whenever it finds one within its budget:
// the fast heuristics first (greedy_by_breadth, best_fit, greedy_by_size, pyramid); if none meets the
// bound, place::exact gets the remaining time, starting from the best heuristic arena. If the budget
// runs out the best arena so far is returned with its gap in `note`.
//
// The budget is wall-clock (default 50 ms); with a node_limit and no time pressure the result is
// deterministic.
#include <algorithm>
#include <chrono>
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
  double time_limit = 0.05;        // seconds in all
  std::int64_t node_limit = -1;    // for the exact search, < 0: unlimited

  [[nodiscard]] std::string name() const { return "default"; }

  [[nodiscard]] buffer_placement place(const buffer_problem& p) const {
    validate(p);
    const auto until = detail::deadline::after(time_limit);
    const auto relaxed = detail::without_capacity(p);
    const auto bound = arena_lower_bound(p);
    buffer_placement best;
    bool have = false;
    std::string tried;
    auto consider = [&](buffer_placement pl) {
      tried += (tried.empty() ? "" : ", ") + pl.placer + "=" + std::to_string(pl.arena);
      if (!have || pl.arena < best.arena) { best = std::move(pl); have = true; }
    };
    // Most often zero-fragmentation first (greedy_by_breadth did best on the DNN-like benchmark lists);
    // each further heuristic only while the bound is not met and time is left.
    consider(greedy_by_breadth{}.place(relaxed));
    if (best.arena > bound && !until.expired()) consider(best_fit{}.place(relaxed));
    if (best.arena > bound && !until.expired()) consider(greedy_by_size{}.place(relaxed));
    if (best.arena > bound && !until.expired()) consider(pyramid{}.place(relaxed));
    if (best.arena > bound && !until.expired()) {
      auto pl = exact{.time_limit = until.seconds_left(), .node_limit = node_limit}.place(relaxed);
      tried += ", exact=" + std::to_string(pl.arena) + " (" + pl.note + ")";
      if (pl.arena < best.arena || pl.optimal) best = std::move(pl);  // exact's proven bound comes along
    }
    const auto lb = std::max(bound, best.lower_bound);
    const bool optimal = best.optimal || best.arena == lb;
    return detail::finish(p, std::move(best.offsets), name() + "(" + best.placer + ")", tried, lb, optimal);
  }
};

}  // namespace memplan::place
