// core/implementations.hpp: the Pareto front, and the choice every pipeline makes where a timeline is
// born (plan_context::implementations): no_slower against brute force over every choice, in plan()
// with and without a scheduler, under a memory target, and `own`.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <memplan/core/adapt.hpp>
#include <memplan/core/implementations.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/core/problem_builder.hpp>
#include <memplan/core/verify.hpp>
#include <memplan/schedule/exact.hpp>
#include <memplan/schedule/given.hpp>

#include "../support/brute_force.hpp"
#include "../support/conv_head.hpp"
#include "../support/random_dag.hpp"
#include "../support/stack_placer.hpp"

using namespace memplan;

namespace {

// p with random alternatives on some ops: costs from half to one and a half times the op's own (some
// equal to it), workspaces from none to twice the op's outputs; own costs 10..20.
problem with_random_implementations(const problem& p, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uni = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  return with_ops(p, [&](const problem& q, op_id o, op_fields& f) {
    std::int64_t out_bytes = 4;
    for (auto t : q.outputs(o)) out_bytes += q.bytes(t);
    f.cost = static_cast<double>(uni(10, 20));
    f.workspace = uni(0, 1) ? uni(0, 2 * out_bytes) : 0;
    f.impls.clear();
    for (auto k = uni(0, 3); k > 0; --k) {
      const auto c = uni(0, 3) == 0 ? f.cost : static_cast<double>(uni(5, 30));
      f.impls.push_back({testing::numbered("alt", k), c, uni(0, 2 * out_bytes)});
    }
  });
}

// Every choice of implementations (one per op) no slower than each op's own, over the given order:
// the least peak, and the least total cost among the choices of that peak.
struct brute_result {
  std::int64_t peak = std::numeric_limits<std::int64_t>::max();
  double cost = 0.0;
};
brute_result brute_force_no_slower(const problem& p) {
  const auto n = static_cast<std::size_t>(p.num_ops());
  std::vector<std::vector<std::int32_t>> allowed(n);
  for (op_id o = 0; o < p.num_ops(); ++o) {
    auto& a = allowed[static_cast<std::size_t>(o)];
    a.push_back(-1);
    const auto ims = p.implementations(o);
    for (std::size_t k = 0; k < ims.size(); ++k)
      if (ims[k].cost <= p.cost(o)) a.push_back(static_cast<std::int32_t>(k));
  }
  brute_result best;
  auto tl = given_timeline(p);
  std::vector<std::size_t> pick(n, 0);
  for (;;) {
    for (auto& s : tl.steps)
      if (s.kind == step_kind::compute) s.impl = allowed[static_cast<std::size_t>(s.id)][pick[static_cast<std::size_t>(s.id)]];
    derive(p, tl);
    const auto cost = total_step_cost(p, tl);
    if (tl.peak < best.peak || (tl.peak == best.peak && cost < best.cost)) best = {tl.peak, cost};
    std::size_t i = 0;
    while (i < n && ++pick[i] == allowed[i].size()) pick[i++] = 0;
    if (i == n) break;
  }
  return best;
}

}  // namespace

TEST_CASE("implementation_front: fastest first, workspaces falling, dominated alternatives left out") {
  problem_builder b("front");
  const auto x = b.add_tensor("x", 8, tensor_kind::input);
  const auto y = b.add_tensor("y", 8, tensor_kind::output);
  b.add_op("conv", {x}, {y}, "conv", op_phase::forward, 10.0, 50,
           {{"fast", 6.0, 200}, {"slow_big", 12.0, 300}, {"lean", 14.0, 0}, {"same", 10.0, 50}, {"mid", 8.0, 100}});
  const auto p = b.build();
  const auto f = implementation_front(p, 0);
  REQUIRE(f.size() == 4);
  CHECK(f[0].impl == 0);   // fast
  CHECK(f[1].impl == 4);   // mid
  CHECK(f[2].impl == -1);  // own (before "same", its equal listed after it)
  CHECK(f[3].impl == 2);   // lean
}

TEST_CASE("reassign_impls: the profile moved in place equals the one derived afresh") {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const auto p = with_random_implementations(make_problem(testing::random_dag(seed, {.ops = 25})), seed + 500);
    std::mt19937_64 rng(seed);
    auto tl = given_timeline(p);
    for (int round = 0; round < 3; ++round) {
      std::vector<std::int32_t> impl(static_cast<std::size_t>(p.num_ops()));
      for (op_id o = 0; o < p.num_ops(); ++o) {
        const auto k = static_cast<std::int32_t>(p.implementations(o).size());
        impl[static_cast<std::size_t>(o)] = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(k + 1)) - 1;
      }
      reassign_impls(p, tl, [&](const step& s, std::size_t) { return impl[static_cast<std::size_t>(s.id)]; });
      auto fresh = tl;
      derive(p, fresh);
      CAPTURE(seed);
      CHECK(tl.live == fresh.live);
      CHECK(tl.peak == fresh.peak);
      CHECK(tl.peak_tick == fresh.peak_tick);
    }
  }
}

TEST_CASE("no_slower: the least peak of every choice no slower than each op's own, then the least cost at that peak (brute force)") {
  int changed = 0, lower_peak = 0, cheaper = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    const auto p = with_random_implementations(make_problem(testing::random_dag(seed, {.ops = 7})), seed);
    auto tl = given_timeline(p);
    const auto own_peak = tl.peak;
    const auto own_cost = total_step_cost(p, tl);
    const auto r = choose_no_slower_implementations(p, tl);
    CAPTURE(seed);
    const auto bf = brute_force_no_slower(p);
    CHECK(tl.peak == bf.peak);
    CHECK(total_step_cost(p, tl) == doctest::Approx(bf.cost));
    CHECK(r.peak_before == own_peak);
    CHECK(r.peak_after == tl.peak);
    CHECK(r.cost_before == doctest::Approx(own_cost));
    CHECK(r.cost_after <= own_cost);
    for (const auto& s : tl.steps)
      if (runs_op(s.kind)) CHECK(step_cost(p, s) <= p.cost(s.id));
    changed += r.changed();
    lower_peak += tl.peak < own_peak;
    cheaper += r.cost_after < own_cost;
  }
  MESSAGE("60 random graphs: " << changed << " changed, " << lower_peak << " with a lower peak, " << cheaper << " cheaper");
  CHECK(lower_peak > 5);  // the generator makes both kinds of gain common
  CHECK(cheaper > 5);
}

TEST_CASE("no_slower in plan() with and without a scheduler is verified and never above own, and `own` keeps every op's own") {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const auto p = with_random_implementations(make_problem(testing::random_dag(seed, {.ops = 30})), seed + 100);
    CAPTURE(seed);
    for (bool with_scheduler : {false, true}) {
      plan_context own_ctx;
      own_ctx.implementations = implementation_choice::own;
      const auto mine = with_scheduler ? plan(p, schedule::given{} | testing::stack_placer{})
                                       : plan(p, testing::stack_placer{});
      const auto own = with_scheduler ? plan(p, schedule::given{} | testing::stack_placer{}, own_ctx)
                                      : plan(p, testing::stack_placer{}, own_ctx);
      CHECK(verify(p, mine).ok);
      for (const auto& s : own.steps) CHECK(s.impl == -1);
      CHECK(mine.stats.peak <= own.stats.peak);
      CHECK(total_step_cost(p, mine) <= total_step_cost(p, own));
      CHECK(implementations_changed(p, mine) <= implementations_changed(p, own));
      for (const auto& s : mine.steps)
        if (runs_op(s.kind)) CHECK(step_cost(p, s) <= p.cost(s.id));
      // The choice is recorded in the plan's notes whenever it changed anything.
      const bool changed = std::any_of(mine.steps.begin(), mine.steps.end(), [](const step& s) { return s.impl != -1; });
      const bool noted = std::any_of(mine.stats.notes.begin(), mine.stats.notes.end(),
                                     [](const std::string& n) { return n.find("implementations (none slower") != std::string::npos; });
      CHECK(changed == noted);
    }
  }
}

TEST_CASE("no_slower: the scheduler orders with the chosen workspaces and its proven optimum holds for them") {
  // big's alternative, as fast as its own, needs no workspace. With the own workspaces the best order
  // runs big before k (1,210 bytes against 1,510); with the chosen ones, k before big (810 against 1,010).
  problem_builder b("ws");
  const auto x = b.add_tensor("x", 10, tensor_kind::input);
  const auto o = b.add_tensor("o", 200, tensor_kind::activation);
  const auto t = b.add_tensor("t", 300, tensor_kind::activation);
  const auto y = b.add_tensor("y", 4, tensor_kind::output);
  const auto big = b.add_op("big", {x}, {o}, "conv", op_phase::forward, 10.0, 1000, {{"direct", 10.0, 0}});
  const auto k = b.add_op("k", {x}, {t}, "conv", op_phase::forward, 10.0, 500);
  b.add_op("head", {o, t}, {y}, "linear", op_phase::forward, 1.0, 0);
  const auto p = b.build();

  const auto mp = plan(p, schedule::exact{} | testing::stack_placer{});
  CHECK(verify(p, mp).ok);
  CHECK(mp.stats.peak == 810);  // k's step: x, t and k's workspace
  CHECK(mp.steps.front().id == k);
  CHECK(mp.order_optimal);
  CHECK(mp.stats.lower_bound == 810);
  CHECK(std::find_if(mp.steps.begin(), mp.steps.end(), [&](const step& s) { return s.id == big; })->impl == 0);
  // The given order (big first) with the same choice: 1,010.
  CHECK(plan(p, schedule::given{} | testing::stack_placer{}).stats.peak == 1010);
  // The problem the scheduler saw: big's workspace is the chosen one's; `own`: no such problem.
  const auto view = scheduling_problem(p, plan_context{});
  REQUIRE(view.has_value());
  CHECK(view->workspace(big) == 0);
  CHECK(view->workspace(k) == 500);
  CHECK(view->implementations(big).size() == 1);
  plan_context own;
  own.implementations = implementation_choice::own;
  CHECK_FALSE(scheduling_problem(p, own).has_value());
  const auto mo = plan(p, schedule::exact{} | testing::stack_placer{}, own);
  CHECK(mo.stats.peak == 1210);  // big's step: x, o and its own workspace
  CHECK(mo.steps.front().id == big);
  CHECK(mo.steps.front().impl == -1);
  CHECK(mo.order_optimal);
}

TEST_CASE("no_slower: ordering on the chosen workspaces never loses to choosing after an order made for the own ones (exact scheduler)") {
  int lower = 0;
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    const auto p = with_random_implementations(make_problem(testing::random_dag(seed, {.ops = 9})), seed + 300);
    CAPTURE(seed);
    const auto mine = plan(p, schedule::exact{} | testing::stack_placer{});
    CHECK(verify(p, mine).ok);
    plan_context own_ctx;
    own_ctx.implementations = implementation_choice::own;
    timeline after = plan(p, schedule::exact{} | testing::stack_placer{}, own_ctx);
    choose_no_slower_implementations(p, after);
    CHECK(mine.stats.peak <= after.peak);
    lower += mine.stats.peak < after.peak;
    REQUIRE(mine.order_optimal);
    CHECK(mine.stats.lower_bound == mine.stats.peak);
  }
  MESSAGE("30 random graphs: a lower peak on " << lower);
  CHECK(lower > 0);
}

TEST_CASE("no_slower under a memory target below the peak: least workspace only, the room left to the checkpointer") {
  // conv: own (10, 50), fast (5, 80), lean (10, 0). Inputs and outputs stay live: head's step is the
  // peak, 100 + 100 + 4 + 400.
  const auto p = testing::conv_head("target", 50, {{"fast", 5.0, 80}, {"lean", 10.0, 0}}, 400);
  auto tl = given_timeline(p);
  auto free_run = tl;
  const auto r = choose_no_slower_implementations(p, free_run);
  CHECK(free_run.steps.front().impl == 0);  // fast fits under head's peak
  CHECK(r.faster == 1);
  CHECK(free_run.peak == 604);  // x, h, y and head's workspace
  const auto t = choose_no_slower_implementations(p, tl, 300);
  CHECK(tl.steps.front().impl == 1);  // lean: the least workspace, nothing upgraded above the target
  CHECK(t.less_workspace == 1);
  CHECK(t.faster == 0);
}

TEST_CASE("chosen_impls_lower_bound: the gap the order leaves under the plan's implementations") {
  // conv's own: 1000 B of workspace; its only alternative has none but is twice as slow, so no_slower
  // keeps the own. lower_bound_peak charges conv its least workspace (0): a 1000 B "gap" that only
  // the slower implementation closes. With the plan's implementations the bound is the peak.
  const auto p = testing::conv_head("lean-but-slow", 1000, {{"slow", 20.0, 0}});
  const auto mp = plan(p, schedule::given{} | testing::stack_placer{});
  CHECK(mp.steps.front().impl == -1);
  CHECK(mp.stats.peak == 1200);
  CHECK(mp.stats.lower_bound == 204);
  CHECK(mp.stats.impl_lower_bound == 1200);
  CHECK(chosen_impls_lower_bound(p, mp) == 1200);
  // Not computed when every op runs its least workspace (the two bounds agree) ...
  const auto lean = testing::conv_head("lean-and-fast", 1000, {{"lean", 10.0, 0}});
  const auto ml = plan(lean, schedule::given{} | testing::stack_placer{});
  CHECK(ml.steps.front().impl == 0);
  CHECK(!chosen_impls_lower_bound(lean, ml).has_value());
  CHECK(ml.stats.impl_lower_bound == -1);
  // ... nor on a plan that recomputes or offloads (its bound is op-local), nor without alternatives.
  CHECK(!chosen_impls_lower_bound(testing::conv_head("none", 1000, {}), mp).has_value());
  // A false claim is caught by verify.
  auto tampered = mp;
  tampered.stats.impl_lower_bound = 1201;
  CHECK(!verify(p, tampered).ok);

  // Valid on random graphs: never above the least peak of any order with those workspaces (brute force).
  int computed = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const auto q = with_random_implementations(make_problem(testing::random_dag(seed, {.ops = 8})), seed + 300);
    CAPTURE(seed);
    const auto m = plan(q, schedule::given{} | testing::stack_placer{});
    const auto b = chosen_impls_lower_bound(q, m);
    CHECK(m.stats.impl_lower_bound == (b && *b > m.stats.lower_bound ? *b : -1));
    if (!b) continue;
    ++computed;
    const auto impl = compute_impls(q, m);
    const auto fixed = with_ops(q, [&](const problem&, op_id o, op_fields& f) {
      f.workspace = impl_workspace(q, o, impl[static_cast<std::size_t>(o)]);
      f.impls.clear();
    });
    CHECK(*b <= testing::brute_force_min_peak(fixed));
    CHECK(*b >= m.stats.lower_bound);
    CHECK(*b <= m.stats.peak);
  }
  MESSAGE(computed << " of 40 random plans run some op above its least workspace");
  CHECK(computed >= 10);
}
