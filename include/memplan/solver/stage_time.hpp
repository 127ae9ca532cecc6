#pragma once
// How a solver-backed stage (the *_ilp schedulers, checkpointers and placers) spends its time limit:
// the limit covers the whole stage -- warm start, model building and solve -- so that its wall time
// stays within the limit (issue 12: <= limit + 10 %). The solve's share is here; the warm start's,
// which reads the plan context, is warm_start_context in core/solver_time.hpp (solver/ depends on
// base/ only).
#include <optional>

#include <memplan/base/deadline.hpp>
#include <memplan/solver/milp.hpp>

namespace memplan::solver {

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
