// Implementation choice under plans: the planned runner runs, for every step, the implementation the
// plan chose (step.impl); eager training with the same choices gives the same bits; the CNN learns
// with non-default implementations; problems whose implementations do not match the program are
// refused.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include <memplan/ad/calibrate.hpp>
#include <memplan/ad/run_plan.hpp>
#include <memplan/core/problem_builder.hpp>
#include <memplan/place/best_fit.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/schedule/default_scheduler.hpp>
#include <memplan/schedule/given.hpp>

#include "planned_support.hpp"

using namespace memplan;
using adplanned::choose_implementations;

namespace {
template <class Pipeline>
memory_plan plan_with(const problem& prob, const Pipeline& pipe) {
  plan_context ctx;
  ctx.alignment = ad::plan_alignment;
  return plan(prob, pipe, ctx);
}
template <class S, class P>
memory_plan plan_with(const problem& prob, const S& sched, choose_implementations pick, const P& placer) {
  return adplanned::plan_choosing(prob, sched, pick, placer, {});
}
}  // namespace

TEST_CASE("implementation choice: MLP, CNN, transformer under plans with chosen implementations, 20 steps bitwise = eager with the same choices") {
  for (const auto& c : {adplanned::small_mlp(), adplanned::small_cnn(), adplanned::small_transformer()}) {
    const auto prob = ad::make_problem(c.m.step);
    int plans = 0, chosen = 0;
    for (std::uint64_t seed : {1ull, 2ull, 3ull}) {
      const choose_implementations pick{choose_implementations::mode::random, seed};
      for (const auto& mp : {plan_with(prob, schedule::given{}, pick, place::greedy_by_size{}),
                             plan_with(prob, schedule::default_scheduler{}, pick, place::best_fit{}),
                             plan_with(prob, schedule::default_scheduler{}, pick, place::default_placer{})}) {
        adplanned::check_with_choices(c, prob, mp, 20, 100 + seed);
        chosen += adplanned::non_default_steps(mp);
        ++plans;
      }
    }
    const choose_implementations least{choose_implementations::mode::least_workspace, 0};
    const auto mp = plan_with(prob, schedule::default_scheduler{}, least, place::default_placer{});
    adplanned::check_with_choices(c, prob, mp, 20, 7);
    chosen += adplanned::non_default_steps(mp);
    ++plans;
    MESSAGE(c.name << ": " << plans << " plans, " << chosen << " steps with a non-default implementation, all bitwise equal to eager");
    CHECK(chosen > 0);
  }
}

TEST_CASE("implementation choice: the plan's choice changes what runs (and the arena), not the plan's validity") {
  const auto c = adplanned::small_cnn();
  const auto prob = ad::make_problem(c.m.step);
  const auto def = plan_with(prob, schedule::given{} | place::greedy_by_size{});
  const auto least =
      plan_with(prob, schedule::given{}, choose_implementations{choose_implementations::mode::least_workspace, 0}, place::greedy_by_size{});
  // Direct convolutions need no workspace: this CNN's peak is at a convolution with its column matrix.
  CHECK(least.stats.peak <= def.stats.peak);
  MESSAGE("small CNN, given order: peak " << def.stats.peak << " B with the default implementations, " << least.stats.peak
                                          << " B with the least-workspace ones");
  for (const auto& st : least.steps)
    if (runs_op(st.kind) && !prob.implementations(st.op()).empty()) CHECK(step_workspace(prob, st) == 0);
  // Defaults everywhere: the choices are all -1 and eager needs none.
  for (auto k : ad::implementation_choices(c.m.step, prob, def)) CHECK(k == -1);
}

TEST_CASE("implementation choice: calibrated costs (seconds) plan and train like FLOP costs") {
  const auto c = adplanned::small_transformer();
  const auto costs = ad::calibrate(c.m.step, {.repeats = 1, .min_sample_seconds = 1e-5});
  plan_context ctx;
  auto pp = ad::plan_program(c.m.step, schedule::default_scheduler{} | choose_implementations{choose_implementations::mode::random, 9} |
                                           place::default_placer{},
                             ctx, costs);
  CHECK(pp.prob.cost(0) == costs.of(0, -1));
  CHECK(pp.plan.alignment == ad::plan_alignment);
  CHECK(pp.plan.stats.compute_cost > 0.0);
  CHECK(pp.plan.stats.compute_cost < 10.0);  // seconds of one step, not FLOPs
  adplanned::check_with_choices(c, pp.prob, pp.plan, 10, 11);
}

TEST_CASE("implementation choice: the residual CNN learns shapes16 (>= 90%) with non-default implementations, bitwise = eager") {
  // Phase 1's setting (batch 32, Adam 0.01, 80 steps, train stream 1001, 8 test batches of stream
  // 2002), every convolution and matmul on a non-default implementation (tiled / direct, packed /
  // loop, in turn).
  adplanned::case_model c{"cnn-b32", ad::models::cnn({.batch = 32}, ad::adam{0.01f}), 1};
  const auto prob = ad::make_problem(c.m.step);
  const auto mp = plan_with(prob, schedule::default_scheduler{}, choose_implementations{choose_implementations::mode::every_alternative, 0},
                            place::default_placer{});
  const auto choices = ad::implementation_choices(c.m.step, prob, mp);
  int non_default = 0, with_alternatives = 0;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    non_default += choices[i] > 0;
    with_alternatives += ad::implementation_count(c.m.step.nodes[i].kind) > 1;
  }
  CHECK(non_default == with_alternatives);
  CHECK(non_default >= 10);
  ad::eager_runner e(c.m.step, {.impl = choices});
  ad::planned_runner p(c.m.step, prob, mp, {.poison = true});
  ad::data_stream<ad::shapes16> de(ad::shapes16{}, 1001), dp(ad::shapes16{}, 1001);
  int equal_losses = 0;
  float loss = 0;
  // Under the sanitizer fewer steps and test batches: the bitwise equalities still hold step by step
  // and the code paths are the same; the accuracy is the default build's claim.
  const int steps = testing::full_or_sanitized(80, 12), test_batches = testing::full_or_sanitized(8, 2);
  for (int s = 0; s < steps; ++s) {
    const float le = ad::train_step(e, c.m, de), lp = ad::train_step(p, c.m, dp);
    equal_losses += std::memcmp(&le, &lp, sizeof le) == 0;
    loss = lp;
  }
  CHECK(equal_losses == steps);
  CHECK(adplanned::same_bits(ad::read_state(c.m.step, e), ad::read_state(c.m.step, p)));
  ad::data_stream<ad::shapes16> te(ad::shapes16{}, 2002), tp(ad::shapes16{}, 2002);
  const double acc_e = ad::evaluate(e, c.m, te, test_batches), acc_p = ad::evaluate(p, c.m, tp, test_batches);
  MESSAGE("shapes16 CNN, " << non_default << " of " << choices.size() << " nodes on a non-default implementation: test accuracy "
                           << acc_p << " (eager " << acc_e << "), final loss " << loss << ", arena " << mp.arena << " B");
  CHECK(acc_p == acc_e);
  if (!testing::under_sanitizer) {
    CHECK(acc_p >= 0.90);
  }
}

namespace {
// prob with implementation `k` of the first op that has alternatives renamed or its workspace shrunk.
problem tampered(const problem& p, const std::string& new_name, std::int64_t workspace_delta) {
  problem_builder b(p.name(), p.options());
  for (tensor_id t = 0; t < p.num_tensors(); ++t) b.add_tensor(p.tensor_name(t), p.bytes(t), p.kind(t));
  for (tensor_id t = 0; t < p.num_tensors(); ++t)
    if (p.inplace_of(t) != no_id) b.set_inplace_of(t, p.inplace_of(t));
  bool done = false;
  for (op_id o = 0; o < p.num_ops(); ++o) {
    auto in = p.inputs(o);
    auto out = p.outputs(o);
    auto im = p.implementations(o);
    std::vector<implementation> impls(im.begin(), im.end());
    if (!done && impls.size() > 1) {
      if (!new_name.empty()) impls[1].name = new_name;
      impls[1].workspace += workspace_delta;
      done = true;
    }
    b.add_op(p.op_name(o), {in.begin(), in.end()}, {out.begin(), out.end()}, p.op_type(o), p.phase(o), p.cost(o), p.workspace(o),
             std::move(impls));
  }
  return b.build();
}
}  // namespace

TEST_CASE("implementation choice: a problem whose implementations the program does not have is refused") {
  const auto c = adplanned::small_cnn();
  const auto prob = ad::make_problem(c.m.step);
  const auto renamed = tampered(prob, "winograd", 0);
  const auto mp = plan_with(renamed, schedule::given{} | place::greedy_by_size{});
  CHECK_THROWS_WITH_AS(ad::planned_runner(c.m.step, renamed, mp), doctest::Contains("winograd"), memplan::error);
  const auto small = tampered(prob, "", -64);  // the tiled convolution's workspace, 64 bytes short
  const auto mp2 = plan_with(small, schedule::given{} | place::greedy_by_size{});
  CHECK_THROWS_WITH_AS(ad::planned_runner(c.m.step, small, mp2), doctest::Contains("workspace"), memplan::error);
  // The graph's problem lists no alternatives: its plans run the defaults.
  const auto plain = make_problem(ad::to_dataflow_graph(c.m.step));
  const auto mp3 = plan_with(plain, schedule::given{} | place::greedy_by_size{});
  for (auto k : ad::implementation_choices(c.m.step, plain, mp3)) CHECK(k == -1);
}
