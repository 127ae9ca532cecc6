// Recomputation proven by execution: the MLP, CNN and transformer (and the MLP and CNN with in-place
// activations) train under recompute plans at
// several budgets, down to the smallest one memplan meets, and under plans that choose operator
// implementations jointly with recomputation (remat::monet_greedy, remat::monet_ilp); every loss,
// weight and optimizer state is bitwise equal to eager training (with the plan's implementations), and
// the arena's high-water equals the plan's arena, within the budget.
#include <doctest/doctest.h>

#include <algorithm>
#include <iterator>

#include <memplan/ad/inplace.hpp>
#include <memplan/ad/run_plan.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/registry/checkpointers.hpp>
#include <memplan/remat/frontier.hpp>
#include <memplan/schedule/default_scheduler.hpp>

#include "planned_support.hpp"

using namespace memplan;

TEST_CASE("recomputation: MLP, CNN and transformer train under recompute plans bitwise equal to eager, within every budget met") {
  const auto sched = schedule::default_scheduler{.time_limit_s = -1, .max_iterations = 5000};
  // An MLP deep and wide enough for its activations to outweigh its weights.
  const adplanned::case_model mlp{"mlp", ad::models::mlp({.batch = 64, .in = 2, .hidden = 64, .layers = 4, .classes = 2}, ad::adam{0.01f}), 0};
  // The same MLP and CNN with their activations written in place of their inputs (ad/inplace.hpp):
  // a dropped activation is rebuilt by replaying the layer and then the in-place activation into the
  // freed storage.
  auto inplace = [](adplanned::case_model c) {
    c.name += " (in-place activations)";
    c.m.step = ad::inplace_activations(c.m.step);
    return c;
  };
  int inplace_rebuilt = 0;  // plans that recompute an in-place activation
  for (const auto& c : {mlp, adplanned::small_cnn(), adplanned::small_transformer(), inplace(mlp), inplace(adplanned::small_cnn())}) {
    const auto prob = ad::make_problem(c.m.step);
    plan_context ctx;
    ctx.alignment = ad::plan_alignment;
    const auto a0 = plan(prob, sched | place::default_placer{}, ctx).arena;
    // The smallest budget the default checkpointer meets (the frontier's last point).
    const auto pts = remat::frontier(prob, sched, remat::default_checkpointer{}, place::default_placer{}, {.points = 5}, ctx);
    std::int64_t smallest = a0;
    for (const auto& f : pts) smallest = std::min(smallest, f.budget < 0 ? f.arena : f.budget);
    int plans = 0, recomputing = 0;
    const std::int64_t budgets[] = {a0 * 9 / 10, a0 * 3 / 4, (a0 + smallest) / 2, smallest};
    const char* const names[] = {"default", "greedy", "chen_sqrt", "chen_budget", "revolve", "chain_dp"};
    for (std::size_t bi = 0; bi < std::size(budgets); ++bi) {
      for (std::size_t ci = 0; ci < std::size(names); ++ci) {
        // Under the sanitizer each checkpointer trains at one of the four budgets of every model, a
        // different one per checkpointer (every budget is met by one or two of them).
        if (testing::sanitizer_skips(bi, ci, std::size(budgets))) continue;
        const auto budget = budgets[bi];
        const char* const name = names[ci];
        CAPTURE(c.name);
        CAPTURE(name);
        CAPTURE(budget);
        plan_context bc = ctx;
        bc.budget = budget;
        memory_plan mp;
        try {
          mp = plan(prob, sched | checkpointers().make(name) | place::default_placer{}, bc);
        } catch (const error& e) {
          CHECK(e.code() == errc::infeasible);
          continue;
        }
        CHECK(mp.arena <= budget);
        adplanned::check_with_choices(c, prob, mp, 12, 31);  // bitwise = eager; high-water == arena
        ++plans;
        for (const auto& s : mp.steps)
          if (s.kind == step_kind::recompute) {
            ++recomputing;
            break;
          }
        for (const auto& s : mp.steps)
          if (s.kind == step_kind::recompute &&
              std::any_of(prob.outputs(s.id).begin(), prob.outputs(s.id).end(), [&](tensor_id t) { return prob.inplace_of(t) != no_id; })) {
            ++inplace_rebuilt;
            break;
          }
      }
    }
    MESSAGE(c.name << ": no-recompute arena " << a0 << " B, smallest budget met " << smallest << " B (" << 100.0 * static_cast<double>(smallest) / static_cast<double>(a0)
                   << " %); " << plans << " plans trained, " << recomputing << " of them recomputing, all bitwise equal to eager");
    CHECK(recomputing > 0);
    CHECK(smallest < a0);
  }
  MESSAGE(inplace_rebuilt << " plans recompute an in-place activation");
  CHECK(inplace_rebuilt > 0);
}

TEST_CASE("joint implementation choice and recomputation: monet_greedy plans train bitwise equal to eager with the same choices") {
  adplanned::check_joint_choice_plans({"monet_greedy"}, 0.5, false);
}
