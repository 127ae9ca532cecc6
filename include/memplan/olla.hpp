#pragma once
// memplan's front door:
//
//   #include <memplan/olla.hpp>
//   auto plan = memplan::olla::optimize(my_graph);                  // sizes from the graph's CPOs
//   auto plan = memplan::olla::optimize(my_graph, memplan::lookups<...>{sizes, costs, workspaces});
//
// It reorders operators to lower the peak (OLLA §3.2, here with the solver-free default scheduler:
// list-scheduling heuristics + local search), then places every tensor in one arena (OLLA §3.3,
// the default placer: greedy placers, then exact search until the arena meets its lower bound),
// and returns a memory_plan that memplan::verify accepted. For the ILP formulations (eq. 14/15)
// compose a pipeline with schedule::olla_ilp / place::olla_ilp and pass a MILP backend in the
// context (plan_context::solver = solver::cbc{} from <memplan/solver/cbc.hpp>, target memplan::cbc).
#include <cstdint>
#include <limits>

#include <memplan/core/adapt.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/verify.hpp>
#include <memplan/graph/dataflow_graph.hpp>
#include <memplan/graph/traits.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/schedule/default_scheduler.hpp>

namespace memplan::olla {

struct options {
  double schedule_time_limit_s = 1.0;  // time limit of the default scheduler's search
  double place_time_limit_s = 0.05;    // time limit of the default placer's search
  std::int64_t alignment = 1;          // every offset a multiple of this (power of two)
  std::int64_t capacity = -1;          // arena limit in bytes (errc::infeasible above it); -1: none
  bool reorder = true;                 // false: keep the graph's given order, only place
  bool deterministic = false;          // work limits instead of time limits (plan_context::deterministic)
  // Ops that list implementations: the least-workspace one no slower than their own, then faster ones
  // that fit under that peak (plan_context::implementations; own: as the graph gives them).
  implementation_choice implementations = implementation_choice::no_slower;
  // Certify stats.lower_bound with the min-cut bound too when the cheaper bounds leave a gap
  // (plan_context::cut_bound; what `memplan plan` does): up to cut_bound_time_limit_s more per plan.
  bool cut_bound = false;
  double cut_bound_time_limit_s = 0.5;
};

// The pipeline optimize() runs, for users who want to compose further.
inline auto default_pipeline(const options& opt = {}) {
  schedule::default_scheduler s;
  s.time_limit_s = opt.schedule_time_limit_s;
  place::default_placer pl;
  pl.time_limit_s = opt.place_time_limit_s;
  return s | pl;
}

inline memory_plan optimize(const problem& p, const options& opt = {}) {
  plan_context ctx;
  ctx.alignment = opt.alignment;
  ctx.capacity = opt.capacity;
  ctx.deterministic = opt.deterministic;
  ctx.implementations = opt.implementations;
  ctx.cut_bound = opt.cut_bound;
  ctx.cut_bound_time_limit_s = opt.cut_bound_time_limit_s;
  if (!opt.reorder) {
    place::default_placer pl;
    pl.time_limit_s = opt.place_time_limit_s;
    return plan(p, pl, ctx);
  }
  return plan(p, default_pipeline(opt), ctx);
}

template <op_graph G>
memory_plan optimize(const G& g, const options& opt = {}) {
  return optimize(make_problem(g), opt);
}

template <op_graph G, class Bytes, class Cost, class Workspace>
memory_plan optimize(const G& g, const lookups<Bytes, Cost, Workspace>& lk, const options& opt = {}) {
  return optimize(make_problem(g, lk), opt);
}

}  // namespace memplan::olla
