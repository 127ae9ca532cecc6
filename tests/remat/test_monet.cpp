// Operator-implementation choice with recomputation, without a solver: the Pareto front of an op's
// implementations, the engine running every recompute with its op's chosen implementation,
// remat::monet_greedy on random DAGs and training chains with 2-3 implementations per op (every plan
// verified, the target met wherever the brute force says it can be, never costlier than recomputing
// over the fastest or the least-workspace implementations alone), and monet_ilp's fallback without a
// MILP backend.
#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

#include <memplan/registry/checkpointers.hpp>
#include <memplan/remat/best_solver_free.hpp>
#include <memplan/remat/default_checkpointer.hpp>
#include <memplan/remat/greedy.hpp>
#include <memplan/remat/monet_greedy.hpp>
#include <memplan/remat/monet_ilp.hpp>

#include "remat_check.hpp"

using namespace memplan;
using testing::violation_of;

namespace {

plan_context with_target(std::int64_t target) {
  plan_context c;
  c.memory_target = target;
  return c;
}

// The given timeline with every op on implementation pick(op).
template <class Pick>
timeline choose_all(const problem& p, Pick pick) {
  auto tl = given_timeline(p);
  for (auto& s : tl.steps)
    if (s.kind == step_kind::compute) s.impl = pick(s.id);
  derive(p, tl);
  return tl;
}

std::int32_t least_workspace(const problem& p, op_id o) { return remat::implementation_front(p, o).back().impl; }
std::int32_t fastest(const problem& p, op_id o) { return remat::implementation_front(p, o).front().impl; }

std::vector<testing::remat_instance> instances_with_impls() {
  std::vector<testing::remat_instance> v;
  std::uint64_t seed = 7;
  for (auto& inst : testing::remat_instances(24, 12)) {
    bool costs = false;
    for (op_id o = 0; o < inst.p.num_ops(); ++o) costs |= inst.p.cost(o) > 0;
    if (!costs) continue;
    const int k = 2 + static_cast<int>(seed % 2);
    v.push_back({inst.name + " +" + std::to_string(k) + " impls", testing::with_implementations(inst.p, seed++, k)});
  }
  return v;
}

}  // namespace

TEST_CASE("implementation_front: Pareto front of (cost, workspace), fastest first, the op's own included") {
  problem_builder b("front");
  auto x = b.add_tensor("x", 8, tensor_kind::input);
  auto y = b.add_tensor("y", 8, tensor_kind::output);
  b.add_op("conv", {x}, {y}, "conv", op_phase::forward, 7.0, 128,
           {{"winograd", 4.0, 256}, {"fft", 6.0, 512}, {"gemm", 8.0, 32}, {"direct", 12.0, 0}, {"slow", 20.0, 16}});
  const auto p = b.build();
  const auto f = remat::implementation_front(p, 0);
  REQUIRE(f.size() == 4);
  CHECK(f[0].impl == 0);   // winograd (4, 256): fastest; fft (6, 512) is dominated by it
  CHECK(f[1].impl == -1);  // the op's own (7, 128)
  CHECK(f[2].impl == 2);   // gemm (8, 32)
  CHECK(f[3].impl == 3);   // direct (12, 0); slow (20, 16) is dominated by it
}

TEST_CASE("the remat engine runs computations and recomputations with the implementations of the incoming compute steps") {
  for (const auto& inst : instances_with_impls()) {
    INFO(inst.name);
    const auto& p = inst.p;
    const auto tl = choose_all(p, [&](op_id o) { return least_workspace(p, o); });
    const auto out = remat::greedy{}.run(p, tl, with_target(tl.peak * 3 / 4));
    CHECK(violation_of(p, out) == "<valid>");
    for (const auto& s : out.steps)
      if (runs_op(s.kind)) CHECK(s.impl == least_workspace(p, s.id));
  }
}

TEST_CASE("monet_greedy: every plan verifies, most budgets down to the least feasible are met, never costlier than a fixed choice") {
  int plans = 0, met = 0, better = 0;
  for (const auto& inst : instances_with_impls()) {
    INFO(inst.name);
    const auto& p = inst.p;
    const auto tl = given_timeline(p);
    const auto fast = choose_all(p, [&](op_id o) { return fastest(p, o); });
    const auto lean = choose_all(p, [&](op_id o) { return least_workspace(p, o); });
    // The least peak any plan over the order reaches, recomputing over the least-workspace implementations.
    const auto lo = testing::remat_min_peak(p, lean, testing::remat_plans::any);
    REQUIRE(lo.feasible);
    for (const auto b : testing::budget_sweep(lo.peak, fast.peak)) {
      INFO("budget " << b);
      const auto ctx = with_target(b);
      const auto out = remat::monet_greedy{}.run(p, tl, ctx);
      INFO(out.stages.back().note);
      CHECK(violation_of(p, out) == "<valid>");
      CHECK(out.order() == tl.order());
      ++plans;
      if (out.peak <= b) ++met;
      // Against the default checkpointer over one fixed choice: no costlier wherever that one fits.
      for (const auto& fixed : {fast, lean}) {
        const auto alone = remat::default_checkpointer{.choose_implementations = false}.run(p, fixed, ctx);
        if (alone.peak > b) continue;
        CHECK(out.peak <= b);
        CHECK(remat::total_step_cost(p, out) <= remat::total_step_cost(p, alone) + 1e-9);
        better += remat::total_step_cost(p, out) < remat::total_step_cost(p, alone) - 1e-9;
      }
      // One implementation per op: computation and recomputations agree.
      std::vector<std::int32_t> impl(static_cast<std::size_t>(p.num_ops()), -3);
      for (const auto& s : out.steps)
        if (s.kind == step_kind::compute) impl[static_cast<std::size_t>(s.id)] = s.impl;
      for (const auto& s : out.steps)
        if (s.kind == step_kind::recompute) CHECK(s.impl == impl[static_cast<std::size_t>(s.id)]);
    }
  }
  MESSAGE(plans << " monet_greedy plans verified, " << met << " meet their budget; " << better
                << " strictly cheaper than the default checkpointer over a fixed choice");
  CHECK(met > plans / 2);
  CHECK(better > 0);
}

TEST_CASE("monet_greedy without a target or without alternatives: fastest implementations, nothing recomputed / the inner checkpointer") {
  const auto p = testing::with_implementations(make_problem(testing::training_chain(3, {.layers = 3})), 5, 3);
  const auto out = remat::monet_greedy{}.run(p, given_timeline(p), plan_context{});
  CHECK(testing::recomputes(out) == 0);
  for (const auto& s : out.steps)
    if (runs_op(s.kind)) CHECK(s.impl == fastest(p, s.id));
  CHECK(remat::implementations_changed(p, out) == 0);
  const auto q = make_problem(testing::training_chain(3, {.layers = 3}));
  const auto tq = given_timeline(q);
  const auto a = remat::monet_greedy{}.run(q, tq, with_target(tq.peak * 4 / 5));
  const auto d = remat::default_checkpointer{.choose_implementations = false}.run(q, tq, with_target(tq.peak * 4 / 5));
  CHECK(a.steps == d.steps);
  CHECK(a.stages.back().note.find("no implementation alternatives") != std::string::npos);
}

TEST_CASE("default_checkpointer: with choose_implementations, monet_greedy over best_solver_free on graphs with implementations") {
  plan_context ctx = with_target(0);
  ctx.deterministic = true;  // equal searches give equal plans
  const auto p = testing::with_implementations(make_problem(testing::training_chain(11, {.layers = 4})), 9, 3);
  const auto tl = given_timeline(p);
  ctx.memory_target = tl.peak * 3 / 4;
  const auto d = remat::default_checkpointer{.choose_implementations = true}.run(p, tl, ctx);
  const auto g = remat::monet_greedy{}.run(p, tl, ctx);  // its inner checkpointer: best_solver_free
  CHECK(violation_of(p, d) == "<valid>");
  CHECK(d.steps == g.steps);
  CHECK(d.stages.back().name == "default(monet_greedy)");
  CHECK(d.stages.back().note.rfind("default: implementations chosen", 0) == 0);
  // Off (the default): best_solver_free over the implementations the timeline gives (here every op's
  // own); with implementation_choice::own, exactly its plan.
  auto own_ctx = ctx;
  own_ctx.implementations = implementation_choice::own;
  const auto k = remat::default_checkpointer{}.run(p, tl, own_ctx);
  const auto b = remat::best_solver_free{}.run(p, tl, own_ctx);
  CHECK(k.steps == b.steps);
  CHECK(remat::implementations_changed(p, k) == remat::implementations_changed(p, tl));
  CHECK(k.stages.back().name.rfind("default(", 0) == 0);
  CHECK(b.stages.back().name.rfind("best_solver_free(", 0) == 0);
  // implementation_choice::no_slower (the default): the same recomputation, then ops on faster
  // implementations (none slower than their own) where they fit under the plan's peak.
  const auto u = remat::default_checkpointer{}.run(p, tl, ctx);
  const auto bu = remat::best_solver_free{}.run(p, tl, ctx);
  CHECK(violation_of(p, u) == "<valid>");
  REQUIRE(u.steps.size() == bu.steps.size());
  int moved = 0;
  for (std::size_t i = 0; i < u.steps.size(); ++i) {
    CHECK(u.steps[i].kind == bu.steps[i].kind);
    CHECK(u.steps[i].id == bu.steps[i].id);
    if (runs_op(u.steps[i].kind)) CHECK(step_cost(p, u.steps[i]) <= std::max(p.cost(u.steps[i].id), step_cost(p, bu.steps[i])));
    moved += u.steps[i].impl != bu.steps[i].impl;
  }
  CHECK(u.peak <= bu.peak);
  CHECK(remat::total_step_cost(p, u) <= remat::total_step_cost(p, bu));
  CHECK((moved > 0) == (u.stages.back().note.find("on a faster implementation that fits") != std::string::npos));
  MESSAGE("default_checkpointer at 3/4 of the peak: " << moved << " op steps moved to faster implementations, cost "
                                                      << remat::total_step_cost(p, bu) << " -> " << remat::total_step_cost(p, u));
  // A graph without alternatives: exactly best_solver_free.
  const auto q = make_problem(testing::training_chain(3, {.layers = 3}));
  const auto tq = given_timeline(q);
  CHECK(remat::default_checkpointer{.choose_implementations = true}.run(q, tq, ctx).steps == remat::best_solver_free{}.run(q, tq, ctx).steps);
}

TEST_CASE("monet_ilp without a MILP backend returns the joint heuristic's plan and says so, registered by name") {
  const auto p = testing::with_implementations(make_problem(testing::training_chain(11, {.layers = 4})), 9, 2);
  const auto tl = given_timeline(p);
  const auto target = tl.peak * 3 / 4;
  const auto out = remat::monet_ilp{}.run(p, tl, with_target(target));
  const auto& note = out.stages.back().note;
  INFO(note);
  CHECK(note.find("no MILP backend available") != std::string::npos);
  CHECK(violation_of(p, out) == "<valid>");
  const auto g = remat::monet_greedy{}.run(p, tl, with_target(target));
  // The fallback's rule: the cheapest candidate that fits (the heuristic's plan among them), else the lowest peak.
  if (g.peak <= target) {
    CHECK(out.peak <= target);
    CHECK(remat::total_step_cost(p, out) <= remat::total_step_cost(p, g) + 1e-9);
  } else {
    CHECK(out.peak <= g.peak);
  }
  CHECK(checkpointers().contains("monet_ilp"));
  CHECK(checkpointers().contains("monet_greedy"));
  // Without a target: every op on its fastest implementation.
  const auto free = remat::monet_ilp{}.run(p, tl, plan_context{});
  CHECK(free.stages.back().note.find("optimal") != std::string::npos);
  CHECK(remat::implementations_changed(p, free) == 0);
}

TEST_CASE("a convolution with seven algorithms (MONeT Fig. 7, the cuDNN model of ResNet-18's layer1.0.conv1 at batch 32): the fastest that fits") {
  // The exporter's table for that layer (seconds, workspace bytes); the op's own is IMPLICIT_PRECOMP_GEMM.
  problem_builder b("conv7");
  auto x = b.add_tensor("x", 25690112, tensor_kind::input);
  auto w = b.add_tensor("w", 147456, tensor_kind::weight);
  auto y = b.add_tensor("y", 25690112, tensor_kind::output);
  b.add_op("conv", {x, w}, {y}, "aten.convolution", op_phase::forward, 0.000471258, 2304,
           {{"IMPLICIT_GEMM", 0.000628344, 0},
            {"IMPLICIT_PRECOMP_GEMM", 0.000471258, 2304},
            {"GEMM", 0.000571055, 231211008},
            {"FFT", 0.000335247, 114032640},
            {"FFT_TILING", 0.000357451, 89128960},
            {"WINOGRAD", 0.00037411, 262144},
            {"WINOGRAD_NONFUSED", 0.000315465, 116195328}});
  const auto p = b.build();
  // GEMM is slower than FFT and needs more workspace; IMPLICIT_PRECOMP_GEMM is the op's own.
  const auto front = remat::implementation_front(p, 0);
  std::vector<std::string> names;
  for (const auto& a : front) names.push_back(a.impl < 0 ? "own" : p.implementations(0)[static_cast<std::size_t>(a.impl)].name);
  CHECK(names == std::vector<std::string>{"WINOGRAD_NONFUSED", "FFT", "FFT_TILING", "WINOGRAD", "own", "IMPLICIT_GEMM"});
  const std::int64_t live = 25690112 * 2 + 147456;
  for (std::size_t k = 0; k < front.size(); ++k) {
    // Exactly room for alternative k's workspace: it is the one chosen, the faster ones do not fit.
    const auto out = remat::monet_greedy{}.run(p, given_timeline(p), with_target(live + front[k].workspace));
    INFO(out.stages.back().note);
    CHECK(out.steps[0].impl == front[k].impl);
    CHECK(out.peak == live + front[k].workspace);
    CHECK(violation_of(p, out) == "<valid>");
  }
}
