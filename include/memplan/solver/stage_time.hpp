#pragma once
// How a solver-backed stage (the *_ilp schedulers, checkpointers and placers) spends its time limit:
// the limit covers the whole stage -- warm start, model building and solve -- so that its wall time
// stays within the limit (issue 12: <= limit + 10 %).
#include <algorithm>
#include <optional>

#include <memplan/base/deadline.hpp>
#include <memplan/core/context.hpp>
#include <memplan/solver/milp.hpp>

namespace memplan::solver {

// The context the warm start runs with: with an explicit ctx.time_limit_s and a solve to follow, a
// quarter of the stage's limit (the rest is the solver's); without a solve, all of it, or with the
// stage's `clock`, what is left on it (building a checkpointer's facts on a 3,197-op graph came first
// and took 15 % of a 0.2 s limit); without an explicit limit, the warm start's own default (it
// returns long before the solver's 30 s).
inline plan_context warm_start_context(const plan_context& ctx, double limit, bool will_solve, const deadline* clock = nullptr) {
  auto w = ctx;
  w.runners_up = nullptr;  // the warm start's other plans are not the stage's
  if (ctx.time_limit_s >= 0 && limit > 0) {
    const double left = clock && clock->limited() ? std::max(1e-3, clock->seconds_left()) : limit;
    w.time_limit_s = will_solve ? std::min(0.25 * limit, left) : left;
  }
  return w;
}

// The solver's options for what is left of the stage's clock (`limit` < 0: none; 0: the root node
// only); nullopt when nothing is left for a solve.
inline std::optional<options> options_within(const deadline& clock, double limit) {
  options so;
  so.time_limit_s = infinity;
  if (limit == 0) {
    so.node_limit = 0;
  } else if (clock.limited()) {
    if (clock.expired()) return std::nullopt;
    so.time_limit_s = clock.seconds_left();
  }
  return so;
}

}  // namespace memplan::solver
