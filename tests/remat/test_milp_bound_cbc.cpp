// remat/milp_bound.hpp with CBC: the per-op 0-1 bound never exceeds the exact optimum of the fixed
// order (the brute force of tests/support), is often that optimum, and is tighter than
// core/recompute_bound.hpp's in-order bound where a rebuild needs inputs that are gone too; the
// default checkpointer's plans on random training graphs recompute at least it; without a backend or
// without time it is core's bound. The any-order version never exceeds the least brute-force optimum
// over the graph's orders, nor the in-order version of any order; the version for every variant choice
// never exceeds the least optimum over the choices and their orders.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <memplan/core/pipeline.hpp>
#include <memplan/core/problem_builder.hpp>
#include <memplan/core/recompute_bound.hpp>
#include <memplan/core/variants.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/remat/default_checkpointer.hpp>
#include <memplan/remat/milp_bound.hpp>
#include <memplan/schedule/given.hpp>
#include <memplan/schedule/list_scheduler.hpp>
#include <memplan/solver/cbc.hpp>

#include "../core/random_variants.hpp"
#include "../property/training_dag.hpp"
#include "../support/brute_force.hpp"
#include "../support/sanitizer_scale.hpp"
#include "remat_bound_sweep.hpp"
#include "remat_check.hpp"

using namespace memplan;

TEST_CASE("recompute_bound_milp never exceeds the brute-force optimum of the fixed order") {
  int budgets = 0, exact = 0, tighter = 0, positive = 0;
  testing::for_each_brute_force_budget(testing::sanitizer_stride(2), [&](const testing::remat_instance& inst, const timeline& tl,
                                                                         std::int64_t, std::int64_t b, const auto& opt) {
    const auto& p = inst.p;
    const auto order = tl.order();
    const auto m = remat::recompute_bound_milp(p, order, b, solver::cbc{}, {.time_limit_s = 60});
    const auto in = recompute_bound_in_order(p, order, b);
    REQUIRE(m.complete());
    CHECK(m.cost <= opt.cost * (1 + 1e-9) + 1e-9);
    CHECK(m.compute_cost == doctest::Approx(in.compute_cost));
    ++budgets;
    positive += opt.cost > 0;
    exact += opt.cost > 0 && std::abs(m.cost - opt.cost) <= 1e-9 * std::max(1.0, opt.cost);
    tighter += m.cost > in.cost * (1 + 1e-9) + 1e-12;
  });
  std::size_t index = 0;
  for (const auto& inst : testing::remat_instances()) {
    if (index++ % testing::sanitizer_stride(2) != 0) continue;
    const auto tl = given_timeline(inst.p);
    CHECK(remat::recompute_bound_milp(inst.p, tl.order(), tl.peak, solver::cbc{}).cost == 0.0);  // nothing to free
  }
  MESSAGE(budgets << " budgets: the 0-1 bound equals the optimum at " << exact << " of the " << positive
                  << " that need a recompute, and is above core's in-order bound at " << tighter);
  CHECK(exact > positive / 2);
  CHECK(tighter > 0);
}

TEST_CASE("recompute_bound_milp charges a rebuild's inputs that are gone too") {
  // f1: x -> a (cost 4), f2: a -> b (1), f3: b -> c, h: c -> t (300 B), h2: t -> s, g: s, b -> gb.
  // a's last use is f2; b waits for g. While h and h2 run, x (resident), t and c or s leave no room
  // within 320 B, so b is gone there, and rebuilding it after h2 needs a, which is gone too: every
  // plan runs f1 and f2 again (5). core/'s in-order bound charges b's own producer only (1).
  problem_builder pb("rebuild_chain");
  const auto x = pb.add_tensor("x", 10, tensor_kind::input);
  const auto a = pb.add_tensor("a", 100, tensor_kind::activation);
  const auto bt = pb.add_tensor("b", 100, tensor_kind::activation);
  const auto c = pb.add_tensor("c", 10, tensor_kind::activation);
  const auto t = pb.add_tensor("t", 300, tensor_kind::activation);
  const auto s = pb.add_tensor("s", 10, tensor_kind::activation);
  const auto gb = pb.add_tensor("gb", 10, tensor_kind::output);
  pb.add_op("f1", {x}, {a}, "op", op_phase::forward, 4.0);
  pb.add_op("f2", {a}, {bt}, "op", op_phase::forward, 1.0);
  pb.add_op("f3", {bt}, {c}, "op", op_phase::forward, 1.0);
  pb.add_op("h", {c}, {t}, "op", op_phase::forward, 1.0);
  pb.add_op("h2", {t}, {s}, "op", op_phase::forward, 1.0);
  pb.add_op("g", {s, bt}, {gb}, "op", op_phase::backward, 1.0);
  const auto p = pb.build();
  const auto tl = given_timeline(p);
  const auto order = tl.order();
  REQUIRE(tl.peak == 420);  // at h and h2: x, b, t and c or s
  const std::int64_t budget = 320;
  const auto opt = testing::remat_brute_force(p, tl, budget, testing::remat_plans::any);
  REQUIRE(opt.feasible);
  const auto m = remat::recompute_bound_milp(p, order, budget, solver::cbc{});
  const auto in = recompute_bound_in_order(p, order, budget);
  INFO("optimum " << opt.cost << ", 0-1 bound " << m.cost << ", core's bound " << in.cost);
  CHECK(opt.cost == 5.0);
  CHECK(in.cost == 1.0);
  CHECK(m.cost == doctest::Approx(5.0));
  CHECK(m.complete());
  CHECK(m.ops_above == 2);
  CHECK(p.op_name(m.at_op) == "h");
  CHECK(m.overhead == doctest::Approx(5.0 / 9.0));
  // Core's bound passed in (as `memplan plan --bound-time` does with its report's) gives the same.
  const auto passed = remat::recompute_bound_milp(p, order, budget, solver::cbc{}, in);
  CHECK(passed.cost == m.cost);
  CHECK(passed.core_cost == in.cost);
  CHECK(passed.at_op == m.at_op);
}

TEST_CASE("training DAGs: the default checkpointer's plans recompute at least recompute_bound_milp of their order") {
  int tighter = 0;
  const auto stride = static_cast<std::uint64_t>(testing::sanitizer_stride(6));
  const int plans = testing::for_each_training_plan(stride, [&](const problem& p, const memory_plan& mp, std::int64_t budget, double spent) {
    const auto m = remat::recompute_bound_milp(p, mp.order(), budget, solver::cbc{});
    const auto in = recompute_bound_in_order(p, mp.order(), budget);
    CHECK(m.cost <= spent * (1 + 1e-9) + 1e-9);
    tighter += m.cost > in.cost * (1 + 1e-9) + 1e-12;
  });
  MESSAGE(plans << " plans checked against the 0-1 bound of their order, above core's bound on " << tighter);
  CHECK(plans > 60 / testing::sanitizer_stride(6));
}

TEST_CASE("recompute_bound_milp without a backend or without time claims no more than core's in-order bound") {
  const auto p = testing::training_dag(3);
  const auto tl = given_timeline(p);
  const auto order = tl.order();
  const auto budget = (op_local_bound(p) + tl.peak) / 2;
  const auto in = recompute_bound_in_order(p, order, budget);
  const auto none = remat::recompute_bound_milp(p, order, budget, solver::none{});
  CHECK(none.cost == in.cost);
  CHECK(none.core_cost == in.cost);
  CHECK(none.ops_solved == 0);
  CHECK(none.ops_above > 0);
  CHECK(!none.complete());
  const auto no_time = remat::recompute_bound_milp(p, order, budget, solver::cbc{}, {.time_limit_s = 0});
  CHECK(no_time.ops_examined == 0);
  CHECK(no_time.cost == in.cost);
  const auto one = remat::recompute_bound_milp(p, order, budget, solver::cbc{}, {.max_ops = 1});
  CHECK(one.ops_examined == 1);
  CHECK(one.cost >= in.cost);
  CHECK_THROWS_AS((void)remat::recompute_bound_milp(p, std::vector<op_id>{order.rbegin(), order.rend()}, budget, solver::cbc{}), error);
  // A bound passed in must be the in-order one of this problem.
  CHECK_THROWS_AS((void)remat::recompute_bound_milp(p, order, budget, solver::cbc{}, recompute_bound_any_order(p, budget)), error);
  CHECK_THROWS_AS((void)remat::recompute_bound_milp(p, order, budget, solver::cbc{}, recompute_bound_in_order(testing::training_dag(4), given_timeline(testing::training_dag(4)).order(), budget)), error);
}

// The brute force over many orders is the cost (about 45 s for every graph and 8 orders in a Release
// build): the default run takes every 4th graph; test_remat_cbc_slow (label slow) every graph and up
// to 48 orders each.
#ifdef MEMPLAN_MILP_BOUND_MANY_ORDERS
constexpr std::size_t milp_bound_orders = 48, milp_bound_graph_stride = 1;
#else
constexpr std::size_t milp_bound_orders = 8, milp_bound_graph_stride = 4;
#endif

TEST_CASE("recompute_bound_milp_any_order never exceeds the least brute-force optimum over the orders") {
  // Graphs of the sweep (above; twice as sparse under a sanitizer), at each budget of its given
  // order's sweep: the brute force over up to milp_bound_orders of its topological orders (spread
  // over all of them, the given one among them); orders that cannot meet the budget do not count.
  int budgets = 0, above_core = 0, equal = 0;
  testing::for_each_brute_force_budget(milp_bound_graph_stride * testing::sanitizer_stride(2), [&](const testing::remat_instance& inst, const timeline& tl,
                                                                         std::int64_t, std::int64_t b, const auto& opt) {
    const auto& p = inst.p;
    std::vector<std::vector<op_id>> orders;
    testing::for_each_topological_order(p, [&](const std::vector<op_id>& o) { orders.push_back(o); });
    const std::size_t step = std::max<std::size_t>(1, orders.size() / milp_bound_orders);
    double least = opt.cost;
    for (std::size_t i = 0; i < orders.size(); i += step) {
      const auto r = testing::remat_brute_force(p, make_timeline(p, orders[i]), b, testing::remat_plans::any);
      if (r.feasible) least = std::min(least, r.cost);
    }
    const auto any = remat::recompute_bound_milp_any_order(p, b, solver::cbc{}, {.time_limit_s = 60});
    const auto in = remat::recompute_bound_milp(p, tl.order(), b, solver::cbc{}, {.time_limit_s = 60});
    const auto core = recompute_bound_any_order(p, b);
    INFO("budget " << b << ": least optimum over the orders " << least << ", any-order 0-1 bound " << any.cost << ", core's " << core.cost
                   << ", the given order's 0-1 bound " << in.cost);
    CHECK(any.any_order);
    CHECK(any.complete());
    CHECK(any.cost <= least + 1e-9);
    CHECK(any.cost >= core.cost - 1e-9);
    if (in.complete()) CHECK(any.cost <= in.cost + 1e-9);
    above_core += any.cost > core.cost + 1e-9;
    equal += least > 0 && std::abs(any.cost - least) <= 1e-9;
    ++budgets;
  });
  MESSAGE(budgets << " budgets: the any-order 0-1 bound is above core's any-order bound at " << above_core << " and equals the least optimum at "
                  << equal);
  CHECK(above_core > 0);
  CHECK(equal > 0);
}

TEST_CASE("training DAGs: plans over several orders recompute at least recompute_bound_milp_any_order") {
  // The default checkpointer over the given order (the sweep's plans), and over depth_first's order.
  const auto stride = static_cast<std::uint64_t>(testing::sanitizer_stride(6));
  const int plans = testing::for_each_training_plan(stride, [&](const problem& p, const memory_plan&, std::int64_t budget, double spent) {
    const auto any = remat::recompute_bound_milp_any_order(p, budget, solver::cbc{});
    CHECK(any.cost <= spent * (1 + 1e-9) + 1e-9);
    try {
      const auto other = plan(p, schedule::depth_first() | remat::default_checkpointer{} | place::default_placer{}, {.budget = budget});
      const bool costed = other.stats.compute_cost > 0;  // else the bounds count one per recompute
      double cost = 0;
      for (const auto& s : other.steps)
        if (s.kind == step_kind::recompute) cost += costed ? step_cost(p, s) : 1.0;
      CHECK(any.cost <= cost * (1 + 1e-9) + 1e-9);
    } catch (const error& e) {
      CHECK((e.code() == errc::infeasible || e.code() == errc::limit_exceeded));
    }
  });
  CHECK(plans > 60 / testing::sanitizer_stride(6));
}

TEST_CASE("recompute_bound_milp_any_order: a bound passed in must be core's any-order one of this problem") {
  const auto p = testing::training_dag(3);
  const auto tl = given_timeline(p);
  const auto budget = (op_local_bound(p) + tl.peak) / 2;
  const auto any = recompute_bound_any_order(p, budget);
  const auto none = remat::recompute_bound_milp_any_order(p, budget, solver::none{}, any);
  CHECK(none.cost == any.cost);
  CHECK(none.core_cost == any.cost);
  CHECK(none.ops_solved == 0);
  CHECK_THROWS_AS((void)remat::recompute_bound_milp_any_order(p, budget, solver::cbc{}, recompute_bound_in_order(p, tl.order(), budget)), error);
}

TEST_CASE("recompute_bound_milp_any_variants never exceeds the least brute-force optimum over variant choices and orders") {
  // Graphs of the sweep (every 4th; every one in test_remat_cbc_slow) with random variants on about
  // half their ops (tests/core/random_variants.hpp; new ones at each budget), at each budget of the
  // given order's sweep: the brute force over every choice of the first three
  // variants (each taken or not; the others not), each over up to 4 of its rewrite's topological
  // orders. The plain any-order bound bounds only the plans that take none: counted where a choice's
  // plan recomputes less than it (the variants matter there), and where the variant bound is above
  // core's any-order bound of the relaxed problem (the per-alternative reads count).
  int budgets = 0, beaten = 0, above_core = 0;
  std::uint64_t seed = 0;
  testing::for_each_brute_force_budget(milp_bound_graph_stride * testing::sanitizer_stride(2), [&](const testing::remat_instance& inst, const timeline&, std::int64_t,
                                                                            std::int64_t b, const auto& opt) {
    const auto pv = testing::with_random_variants(inst.p, ++seed, false);
    std::vector<variant_choice> all;
    for (op_id o = 0; o < pv.num_ops() && all.size() < 3; ++o)
      if (!pv.variants(o).empty()) all.push_back({pv.op_name(o), pv.variants(o)[0].name});
    double least = opt.cost, least_with = std::numeric_limits<double>::infinity();
    for (std::size_t mask = 1; mask < (std::size_t{1} << all.size()); ++mask) {
      std::vector<variant_choice> taken;
      for (std::size_t i = 0; i < all.size(); ++i)
        if (mask >> i & 1) taken.push_back(all[i]);
      problem q;
      try {
        q = apply_variants(pv, taken);
      } catch (const error& e) {
        CHECK(e.code() == errc::invalid_graph);  // these variants together make a cycle
        continue;
      }
      std::vector<std::vector<op_id>> orders;
      testing::for_each_topological_order(q, [&](const std::vector<op_id>& o) { orders.push_back(o); });
      const std::size_t step = std::max<std::size_t>(1, orders.size() / 4);
      for (std::size_t i = 0; i < orders.size(); i += step) {
        const auto r = testing::remat_brute_force(q, make_timeline(q, orders[i]), b, testing::remat_plans::any);
        if (r.feasible) least_with = std::min(least_with, r.cost);
      }
    }
    least = std::min(least, least_with);
    const auto var = remat::recompute_bound_milp_any_variants(pv, b, solver::cbc{}, {.time_limit_s = 60});
    const auto plain = remat::recompute_bound_milp_any_order(pv, b, solver::cbc{}, {.time_limit_s = 60});
    INFO("budget " << b << ": " << all.size() << " variants chosen from; least optimum " << least << ", with a variant " << least_with
                    << "; variant bound " << var.cost << " (core's of the relaxed problem " << var.core_cost << "), plain any-order bound " << plain.cost);
    CHECK(var.variants);
    CHECK(var.any_order);
    CHECK(var.complete());
    CHECK(var.cost >= var.core_cost - 1e-9);
    CHECK(var.cost <= least + 1e-9);
    if (all.empty()) CHECK(var.cost == doctest::Approx(plain.cost));  // no variants: the same program
    beaten += least_with < plain.cost - 1e-9;
    above_core += var.cost > var.core_cost + 1e-9;
    ++budgets;
  });
  MESSAGE(budgets << " budgets: a variant's plan recomputes less than the plain any-order bound at " << beaten
                  << "; the variant bound is above core's of the relaxed problem at " << above_core);
  CHECK(beaten > 0);
  CHECK(above_core > 0);
}

namespace {
// The ReLU6 block of tests/core/random_variants.hpp, its variant reading `variant_input`: at each budget
// of the sweep from the least peak either choice reaches to the peak without recomputation, the least
// brute-force recompute cost over both choices and every order of each (and with the variant alone),
// and the two any-order bounds.
struct relu6_budget {
  std::int64_t budget;
  double least, least_with, variant_bound, plain_bound;
};
std::vector<relu6_budget> relu6_sweep(const char* variant_input) {
  const auto p = testing::relu6_block(1.0, variant_input);
  const auto with = apply_variants(p, std::vector<variant_choice>{{"relu6_bw", "output_activated"}});
  std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = 0;
  for (const auto* q : {&p, &with}) {
    const auto tl = given_timeline(*q);
    lo = std::min(lo, testing::remat_min_peak(*q, tl, testing::remat_plans::any).peak);
    hi = std::max(hi, tl.peak);
  }
  std::vector<relu6_budget> out;
  for (const auto b : testing::budget_sweep(lo, hi)) {
    double least = std::numeric_limits<double>::infinity(), least_with = least;
    for (const auto* q : {&p, &with})
      testing::for_each_topological_order(*q, [&](const std::vector<op_id>& o) {
        const auto r = testing::remat_brute_force(*q, make_timeline(*q, o), b, testing::remat_plans::any);
        if (!r.feasible) return;
        least = std::min(least, r.cost);
        if (q == &with) least_with = std::min(least_with, r.cost);
      });
    if (least == std::numeric_limits<double>::infinity()) continue;
    const auto var = remat::recompute_bound_milp_any_variants(p, b, solver::cbc{}, {.time_limit_s = 60});
    const auto plain = remat::recompute_bound_milp_any_order(p, b, solver::cbc{}, {.time_limit_s = 60});
    INFO("variant reads " << variant_input << ", budget " << b << ": least optimum " << least << " (with the variant " << least_with
                          << "), variant bound " << var.cost << ", plain any-order bound " << plain.cost);
    CHECK(var.complete());
    CHECK(var.cost <= least + 1e-9);
    out.push_back({b, least, least_with, var.cost, plain.cost});
  }
  return out;
}
}  // namespace

TEST_CASE("recompute_bound_milp_any_variants on a ReLU6 block: where the variant is taken, the clone it removes does not run") {
  // relu6_bw reads a clone of the activation's input, or (its variant) the activation's output, which
  // the convolution saves anyway, and then the clone goes. The variant's plans recompute nothing at
  // every budget of the sweep, below the plain any-order bound (1.5), and so does the bound over the
  // variants (0): it may take the variant, and then the clone neither runs nor holds anything.
  const auto sweep = relu6_sweep("y");
  int beaten = 0;
  for (const auto& r : sweep) {
    beaten += r.least_with < r.plain_bound - 1e-9;
    CHECK(r.variant_bound == 0.0);
  }
  MESSAGE(sweep.size() << " budgets: the variant's plans recompute less than the plain any-order bound at " << beaten);
  CHECK(!sweep.empty());
  CHECK(beaten == static_cast<int>(sweep.size()));
}

TEST_CASE("recompute_bound_milp_any_variants on a ReLU6 block: where the clone is kept, it holds its bytes and costs its rerun") {
  // The variant reads the convolution's output z instead, which then stays until the backward of the
  // activation: below the peak both choices recompute (least 1.5; with the variant 4). A bound that
  // gave the clone 0 bytes and its rerun 0 cost whatever the choice (stop 42's) found 0 at these
  // budgets; with the clone's own bytes, reads and cost where the choice runs it (r, y), it is 1.
  const auto sweep = relu6_sweep("z");
  int positive = 0;
  for (const auto& r : sweep) {
    positive += r.least > 0;
    if (r.least > 0) CHECK(r.variant_bound >= 1.0 - 1e-9);
  }
  MESSAGE(sweep.size() << " budgets, " << positive << " where every plan recomputes");
  CHECK(positive > 0);
}
