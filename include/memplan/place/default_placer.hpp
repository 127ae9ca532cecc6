#pragma once
// place::default_placer -- returns a zero-fragmentation arena (arena == arena_lower_bound: the max
// resident bytes with alignment accounted, OLLA §4.4/§5.4) whenever it finds one within its budget:
// greedy_by_breadth and best_fit first; if neither meets the bound, place::exact searches from their best
// for the remaining time; greedy_by_size and pyramid only if time is still left after that. If the budget
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
    // The canonical search usually closes the last gap within a few thousand nodes, so it gets the
    // rest of the budget right after the two best heuristics, starting from their best placement.
    consider(greedy_by_breadth{}.place(relaxed));
    if (best.arena > bound && !until.expired()) consider(best_fit{}.place(relaxed));
    if (best.arena > bound && !until.expired()) {
      auto pl = exact{.node_limit = node_limit}.improve(relaxed, best, until.seconds_left());
      tried += ", exact=" + std::to_string(pl.arena) + " (" + pl.note + ")";
      if (pl.arena < best.arena || pl.optimal) best = std::move(pl);  // exact's proven bound comes along
    }
    // Whatever time is left (the search gave up early): the remaining heuristics.
    if (best.arena > bound && !best.optimal && !until.expired()) consider(greedy_by_size{}.place(relaxed));
    if (best.arena > bound && !best.optimal && !until.expired()) consider(pyramid{}.place(relaxed));
    const auto lb = std::max(bound, best.lower_bound);
    const bool optimal = best.optimal || best.arena == lb;
    return detail::finish(p, std::move(best.offsets), name() + "(" + best.placer + ")", tried, lb, optimal);
  }
};

}  // namespace memplan::place
