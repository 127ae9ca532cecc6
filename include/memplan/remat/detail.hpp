#pragma once
// What every checkpointer of remat/ shares: running the engine over an incoming timeline and handing
// the result on with the scheduler's evidence and a stage record.
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>

#include <memplan/core/context.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/remat/engine.hpp>

namespace memplan::remat::detail {

// The peak a checkpointer aims at (none: max).
inline std::int64_t target_of(const plan_context& ctx) {
  return ctx.has_memory_limit() ? ctx.peak_target() : std::numeric_limits<std::int64_t>::max();
}

// The engine's timeline, carrying over what the stages before recorded (evidence, stage records).
inline timeline carry(const timeline& in, timeline out) {
  out.order_lower_bound = in.order_lower_bound;
  out.order_optimal = in.order_optimal;
  out.stages = in.stages;
  return out;
}

// Recompute cost of a timeline's recompute steps, as the engine charges it (one unit per op when the
// graph has no costs).
inline double recompute_cost(const engine& e, const timeline& tl) {
  double c = 0;
  for (const auto& s : tl.steps)
    if (s.kind == step_kind::recompute) c += e.cost(s.id);
  return c;
}

inline double compute_cost(const engine& e) {
  double c = 0;
  for (auto o : e.order()) c += e.cost(o);
  return c;
}

inline std::string overhead_text(const engine& e, const timeline& tl) {
  std::ostringstream os;
  os.precision(3);
  const auto total = compute_cost(e);
  os << 100.0 * recompute_cost(e, tl) / (total > 0 ? total : 1.0) << " % recompute overhead";
  return os.str();
}

}  // namespace memplan::remat::detail
