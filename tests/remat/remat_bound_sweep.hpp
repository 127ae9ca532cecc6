#pragma once
// The sweeps that the lower-bound tests share (doctest helpers: call them inside a TEST_CASE):
//  * every `stride`-th small graph of remat_instances(), at budgets from its least feasible peak to its
//    peak without recomputation, with the exact optimum over every plan of its given order;
//  * the default checkpointer's plans of random training DAGs at three budgets.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include <memplan/base/error.hpp>
#include <memplan/core/bounds.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/remat/default_checkpointer.hpp>
#include <memplan/schedule/given.hpp>

#include "../property/training_dag.hpp"
#include "remat_check.hpp"

namespace memplan::testing {

// f(instance, its given timeline, the least feasible peak (remat_min_peak), budget, optimum) for each
// budget of budget_sweep (below the peak without recomputation).
template <class F>
void for_each_brute_force_budget(std::size_t stride, F&& f) {
  std::size_t index = 0;
  for (const auto& inst : remat_instances()) {
    if (index++ % stride != 0) continue;
    INFO(inst.name);
    const auto tl = given_timeline(inst.p);
    const auto lo = remat_min_peak(inst.p, tl, remat_plans::any);
    REQUIRE(lo.complete);
    REQUIRE(lo.feasible);
    for (const auto b : budget_sweep(lo.peak, tl.peak)) {
      INFO("budget " << b);
      const auto opt = remat_brute_force(inst.p, tl, b, remat_plans::any);
      REQUIRE(opt.feasible);
      f(inst, tl, lo.peak, b, opt);
    }
  }
}

// f(problem, plan, budget, recompute cost as the bounds count it: step costs, or one per recompute
// when the graph has no costs) for the default checkpointer's plan of every `stride`-th training DAG
// of seeds 0-59, over the given order, at budgets 0.8, 0.5 and 0.2 of the way from the op-local floor
// to the peak without recomputation. A budget a graph cannot meet (sizes near 2^61 may not place at
// all) is skipped, with errc::infeasible or limit_exceeded only. Returns the number of plans.
template <class F>
int for_each_training_plan(std::uint64_t stride, F&& f) {
  int plans = 0;
  for (std::uint64_t seed = 0; seed < 60; seed += stride) {
    const auto p = training_dag(seed);
    INFO(p.name());
    const auto base = plan(p, schedule::given{} | place::default_placer{});
    bool costed = false;
    for (op_id o = 0; o < p.num_ops(); ++o) costed |= p.cost(o) > 0;
    const auto floor = op_local_bound(p);
    for (const double frac : {0.8, 0.5, 0.2}) {
      const auto budget = floor + static_cast<std::int64_t>(frac * static_cast<double>(base.peak - floor));
      INFO("budget " << budget);
      memory_plan mp;
      try {
        mp = plan(p, schedule::given{} | remat::default_checkpointer{} | place::default_placer{}, {.budget = budget});
      } catch (const error& e) {
        INFO(std::string(e.what()));
        REQUIRE((e.code() == errc::infeasible || e.code() == errc::limit_exceeded));
        continue;
      }
      double spent = 0;
      for (const auto& s : mp.steps)
        if (s.kind == step_kind::recompute) spent += costed ? step_cost(p, s) : 1.0;
      f(p, mp, budget, spent);
      ++plans;
    }
  }
  return plans;
}

}  // namespace memplan::testing
