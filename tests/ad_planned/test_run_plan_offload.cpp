// Offloading proven by execution: the MLP, CNN and transformer (and the MLP and CNN with in-place
// activations, whose offloaded values include the last versions of in-place chains) train under
// offload plans (and combined offload + recompute plans) at several budgets below the no-offload
// arena; the executor
// copies each offloaded value to a host buffer, poisons its device bytes, and copies it back at the
// prefetch. Every loss, weight and optimizer state is bitwise equal to eager training, and the
// arena's high-water equals the plan's arena, within the budget.
#include <doctest/doctest.h>

#include <algorithm>
#include <iterator>

#include <memplan/ad/inplace.hpp>
#include <memplan/ad/run_plan.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/registry/offloaders.hpp>
#include <memplan/schedule/default_scheduler.hpp>

#include "planned_support.hpp"

using namespace memplan;

TEST_CASE("offloading: MLP, CNN and transformer train under offload plans bitwise equal to eager, within every budget met") {
  const auto sched = schedule::default_scheduler{.time_limit_s = -1, .max_iterations = 5000};
  const adplanned::case_model mlp{"mlp", ad::models::mlp({.batch = 64, .in = 2, .hidden = 64, .layers = 4, .classes = 2}, ad::adam{0.01f}), 0};
  // The same MLP and CNN with their activations written in place of their inputs (ad/inplace.hpp): an
  // activation's storage then holds two versions, and the offloaders move the last one after the
  // in-place write (offload/model.hpp).
  auto inplace = [](adplanned::case_model c) {
    c.name += " (in-place activations)";
    c.m.step = ad::inplace_activations(c.m.step);
    return c;
  };
  int inplace_moved = 0;  // plans that offload an in-place write's result
  for (const auto& c : {mlp, adplanned::small_cnn(), adplanned::small_transformer(), inplace(mlp), inplace(adplanned::small_cnn())}) {
    const auto prob = ad::make_problem(c.m.step);
    plan_context ctx;
    ctx.alignment = ad::plan_alignment;
    ctx.timing.bandwidth = 1e9;
    ctx.timing.device_flops = 1e9;
    const auto a0 = plan(prob, sched | place::default_placer{}, ctx).arena;
    int plans = 0, offloading = 0;
    const std::int64_t budgets[] = {a0 * 9 / 10, a0 * 4 / 5, a0 * 7 / 10};
    const char* const names[] = {"default", "greedy", "vdnn", "combined"};
    for (std::size_t bi = 0; bi < std::size(budgets); ++bi) {
      for (std::size_t oi = 0; oi < std::size(names); ++oi) {
        // Under the sanitizer each offloader trains at one or two of the three budgets of every model.
        if (testing::sanitizer_skips(bi, oi)) continue;
        const auto budget = budgets[bi];
        const char* const name = names[oi];
        CAPTURE(c.name);
        CAPTURE(std::string(name));
        CAPTURE(budget);
        plan_context bc = ctx;
        bc.budget = budget;
        memory_plan mp;
        try {
          mp = plan(prob, sched | offloaders().make(name) | place::default_placer{}, bc);
        } catch (const error& e) {
          INFO(std::string(e.what()));
          CHECK(e.code() == errc::infeasible);
          continue;
        }
        CHECK(mp.arena <= budget);
        CHECK(mp.timed);
        adplanned::check_with_choices(c, prob, mp, 6, 17);  // bitwise = eager; high-water == arena
        ++plans;
        offloading += mp.stats.transfer_bytes > 0;
        inplace_moved += std::any_of(mp.steps.begin(), mp.steps.end(), [&](const step& s) {
          return s.kind == step_kind::offload && prob.inplace_of(s.tensor()) != no_id;
        });
      }
    }
    MESSAGE(c.name << ": no-offload arena " << a0 << " B; " << plans << " plans trained, " << offloading
                   << " of them offloading, all bitwise equal to eager");
    CHECK(offloading > 0);
  }
  MESSAGE(inplace_moved << " plans offload the result of an in-place write");
  CHECK(inplace_moved > 0);
}
