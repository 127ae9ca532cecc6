#pragma once
// warm_start_context -- the warm start's share of a solver-backed stage's time limit (the *_ilp
// schedulers, checkpointers and placers): the limit covers the whole stage -- warm start, model
// building and solve -- so that its wall time stays within the limit (issue 12: <= limit + 10 %).
// The solve's share is solver::options_within (solver/stage_time.hpp, included here). In core/
// because it reads the plan context.
#include <algorithm>

#include <memplan/base/deadline.hpp>
#include <memplan/core/context.hpp>
#include <memplan/solver/stage_time.hpp>

namespace memplan {

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

}  // namespace memplan
