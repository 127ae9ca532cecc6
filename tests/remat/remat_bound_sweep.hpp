#pragma once
// The brute-force sweep that the lower-bound tests share: every `stride`-th small graph of
// remat_instances(), at budgets from its least feasible peak to its peak without recomputation, with
// the exact optimum over every plan of its given order. A doctest helper: call it inside a TEST_CASE.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>

#include <memplan/core/timeline.hpp>

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

}  // namespace memplan::testing
