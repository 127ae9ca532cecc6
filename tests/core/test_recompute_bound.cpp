// core/recompute_bound.hpp: the lower bounds on the recompute overhead of any plan within a budget
// never exceed the exact optimum (the brute force of tests/support over every plan of the fixed
// order), the any-order bound never exceeds the bound of one order, the checkpointers' plans on random
// training graphs recompute at least the bound of their own order, and a budget below the memory floor
// of recomputation fails with that floor in plan()'s message.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include <memplan/core/analysis.hpp>
#include <memplan/core/bounds.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/core/recompute_bound.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/remat/default_checkpointer.hpp>
#include <memplan/schedule/given.hpp>

#include "../property/training_dag.hpp"
#include "../remat/remat_bound_sweep.hpp"
#include "../remat/remat_check.hpp"
#include "../support/brute_force.hpp"
#include "../support/remat_brute_force.hpp"
#include "../support/sanitizer_scale.hpp"

using namespace memplan;

TEST_CASE("recompute bounds never exceed the brute-force optimum of the fixed order, and the any-order bound never exceeds one order's") {
  int budgets = 0, exact = 0, positive = 0;
  // Under the sanitizer every other instance (its brute force is the cost; the bounds' code paths are
  // the same on each).
  testing::for_each_brute_force_budget(testing::sanitizer_stride(2), [&](const testing::remat_instance& inst, const timeline& tl,
                                                                         std::int64_t least, std::int64_t b, const auto& opt) {
    const auto& p = inst.p;
    const auto order = tl.order();
    const auto in = recompute_bound_in_order(p, order, b);
    const auto any = recompute_bound_any_order(p, b);
    REQUIRE(in.feasible);
    REQUIRE(any.feasible);
    CHECK(in.cost <= opt.cost + 1e-9);
    // Exact on these small graphs (the searches complete), the any-order cover at each op is a
    // relaxation of the one order's. (On large graphs, cut-short searches can end either way.)
    CHECK(any.cost <= in.cost + 1e-9);
    CHECK(in.memory_floor <= least);
    CHECK(any.memory_floor <= in.memory_floor);
    CHECK(in.overhead == doctest::Approx(in.cost / in.compute_cost));
    positive += in.cost > 0;
    exact += opt.cost > 0 && std::abs(in.cost - opt.cost) <= 1e-9;
    ++budgets;
  });
  int instances = 0;
  std::size_t index = 0;
  for (const auto& inst : testing::remat_instances()) {
    if (index++ % testing::sanitizer_stride(2) != 0) continue;
    INFO(inst.name);
    const auto tl = given_timeline(inst.p);
    CHECK(recompute_bound_in_order(inst.p, tl.order(), tl.peak).cost == 0.0);
    CHECK(recompute_bound_any_order(inst.p, tl.peak).cost == 0.0);
    ++instances;
  }
  MESSAGE(instances << " graphs, " << budgets << " budgets: the bound of the given order is positive at " << positive
                    << " and equals the optimum at " << exact);
  CHECK(positive > budgets / 2);
  CHECK(exact > 0);
}

TEST_CASE("a fixed order's bound: a 3-layer chain where one drop suffices and the cheapest value is the one to drop") {
  // x -> f1 -> a -> f2 -> b -> f3 -> c (loss), backward g3 reads c and b, g2 reads a, g1 reads x.
  // At f3 a (100 B, f1 costs 2) and b (100 B, read by f3) are live; dropping a (rebuilt by f1 from x,
  // which stays for g1) is the only way below the peak: the bound is f1's cost, and it is attained.
  // The peak (320 B) is at g3: x, a, b, c, gc. Dropping a there (excess 10 B of a's 100 B) and
  // rebuilding it before g2 is the optimum: the 0-1 bound is f1's cost (the fractional one, 0.2).
  problem_builder pb("chain3", {.inputs_resident = false});  // x is freed after g1, its last use
  const auto x = pb.add_tensor("x", 100, tensor_kind::input);
  const auto a = pb.add_tensor("a", 100, tensor_kind::activation);
  const auto bt = pb.add_tensor("b", 100, tensor_kind::activation);
  const auto c = pb.add_tensor("c", 10, tensor_kind::activation);
  const auto gc = pb.add_tensor("gc", 10, tensor_kind::gradient);
  const auto gb = pb.add_tensor("gb", 100, tensor_kind::gradient);
  const auto ga = pb.add_tensor("ga", 10, tensor_kind::output);
  const auto gx = pb.add_tensor("gx", 10, tensor_kind::output);
  pb.add_op("f1", {x}, {a}, "op", op_phase::forward, 2.0);
  pb.add_op("f2", {a}, {bt}, "op", op_phase::forward, 5.0);
  pb.add_op("f3", {bt}, {c}, "op", op_phase::forward, 1.0);
  pb.add_op("g3", {c, bt}, {gc}, "op", op_phase::backward, 1.0);
  pb.add_op("g2", {gc, a}, {gb}, "op", op_phase::backward, 1.0);
  pb.add_op("g1", {gb, x}, {ga, gx}, "op", op_phase::backward, 1.0);
  const auto p = pb.build();
  const auto tl = given_timeline(p);
  const auto order = tl.order();
  const auto lo = testing::remat_min_peak(p, tl, testing::remat_plans::any);
  REQUIRE(lo.feasible);
  REQUIRE(lo.peak < tl.peak);
  const auto opt = testing::remat_brute_force(p, tl, lo.peak, testing::remat_plans::any);
  const auto in = recompute_bound_in_order(p, order, lo.peak);
  INFO("peak " << tl.peak << ", least " << lo.peak << ", optimum " << opt.cost << ", bound " << in.cost);
  CHECK(tl.peak == 320);
  CHECK(lo.peak == 310);
  CHECK(opt.cost == 2.0);
  CHECK(in.cost == 2.0);
  CHECK(recompute_bound_in_order(p, order, lo.peak, 4'000'000, 0).cost == doctest::Approx(0.2));  // fractional only
  CHECK(in.overhead == doctest::Approx(2.0 / 11.0));
  // Below what must stay while some op runs, no recomputation plan exists: at g2, x (an input, no
  // op writes it) stays for g1 beside g2's a, gc and gb, 310 B, above the op-local bound (220 B, g1).
  // (The floor is taken over the ops whose bytes exceed the budget: at 309 B, g2 is one.)
  CHECK(op_local_bound(p) == 220);
  const auto in309 = recompute_bound_in_order(p, order, 309), any309 = recompute_bound_any_order(p, 309);
  CHECK(!in309.feasible);
  CHECK(!any309.feasible);
  CHECK(in309.memory_floor == 310);
  CHECK(any309.memory_floor == 310);
  CHECK(p.op_name(in309.floor_op) == "g2");
  CHECK_NOTHROW((void)plan(p, schedule::given{} | remat::default_checkpointer{} | place::default_placer{}, {.budget = 310}));
  try {
    (void)plan(p, schedule::given{} | remat::default_checkpointer{} | place::default_placer{}, {.budget = 309});
    FAIL("309 bytes were met");
  } catch (const error& e) {
    CHECK(e.code() == errc::infeasible);
    INFO(std::string(e.what()));
    CHECK(std::string(e.what()).find("a plan that only recomputes needs at least 310 bytes (while op 'g2'") != std::string::npos);
  }
}

TEST_CASE("a fixed order's bound charges the producer of an input destroyed in place (the saved clone before an in-place activation)") {
  // bn: x -> y; clone: y -> yc (saved for the activation's backward); act_: y -> z in place; head:
  // z -> h; head_bw reads h and z; act_bw reads the clone yc; bn_bw reads x. The peak (220 B) is at
  // head_bw; within 210 B the clone must be dropped there, and rebuilding it after head_bw needs y,
  // which act_ destroyed: bn runs again too. Optimum and bound: bn + clone = 4 (without the charge
  // for bn, the bound would be the clone's 1).
  problem_builder pb("clone_inplace");
  const auto x = pb.add_tensor("x", 100, tensor_kind::input);
  const auto y = pb.add_tensor("y", 100, tensor_kind::activation);
  const auto yc = pb.add_tensor("yc", 100, tensor_kind::activation);
  const auto z = pb.add_tensor("z", 100, tensor_kind::activation);
  pb.set_inplace_of(z, y);
  const auto h = pb.add_tensor("h", 10, tensor_kind::activation);
  const auto gh = pb.add_tensor("gh", 10, tensor_kind::gradient);
  const auto gy = pb.add_tensor("gy", 100, tensor_kind::gradient);
  const auto gx = pb.add_tensor("gx", 10, tensor_kind::output);
  pb.add_op("bn", {x}, {y}, "op", op_phase::forward, 3.0);
  pb.add_op("clone", {y}, {yc}, "op", op_phase::forward, 1.0);
  pb.add_op("act_", {y}, {z}, "op", op_phase::forward, 1.0);
  pb.add_op("head", {z}, {h}, "op", op_phase::forward, 1.0);
  pb.add_op("head_bw", {h, z}, {gh}, "op", op_phase::backward, 1.0);
  pb.add_op("act_bw", {gh, yc}, {gy}, "op", op_phase::backward, 1.0);
  pb.add_op("bn_bw", {gy, x}, {gx}, "op", op_phase::backward, 1.0);
  const auto p = pb.build();
  const auto tl = given_timeline(p);
  const auto order = tl.order();
  const auto budget = tl.peak - 10;
  const auto opt = testing::remat_brute_force(p, tl, budget, testing::remat_plans::any);
  const auto in = recompute_bound_in_order(p, order, budget);
  const auto any = recompute_bound_any_order(p, budget);
  INFO("peak " << tl.peak << ", optimum " << opt.cost << ", bound " << in.cost << ", any order " << any.cost);
  REQUIRE(opt.feasible);
  CHECK(opt.cost == 4.0);
  CHECK(in.cost == 4.0);
  CHECK(p.op_name(in.at_op) == "head_bw");
  CHECK(any.cost <= in.cost);
}

namespace {
// The least peak and the least recompute cost within `budget` (infinite: no plan) over the
// topological orders of p, all of them or up to `most` spread over them (the brute force of
// tests/support over each).
struct over_orders {
  std::int64_t least_peak = std::numeric_limits<std::int64_t>::max();
  double least_cost = std::numeric_limits<double>::infinity();
};
std::vector<std::vector<op_id>> spread_orders(const problem& p, std::size_t most) {
  std::vector<std::vector<op_id>> all, some;
  testing::for_each_topological_order(p, [&](const std::vector<op_id>& o) { all.push_back(o); });
  const std::size_t step = std::max<std::size_t>(1, all.size() / most);
  for (std::size_t i = 0; i < all.size(); i += step) some.push_back(std::move(all[i]));
  return some;
}
over_orders brute_force_over_orders(const problem& p, const std::vector<std::vector<op_id>>& orders, std::int64_t budget) {
  over_orders r;
  for (const auto& o : orders) {
    const auto tl = make_timeline(p, o);
    const auto lo = testing::remat_min_peak(p, tl, testing::remat_plans::any);
    if (lo.feasible) r.least_peak = std::min(r.least_peak, lo.peak);
    const auto opt = testing::remat_brute_force(p, tl, budget, testing::remat_plans::any);
    if (opt.feasible) r.least_cost = std::min(r.least_cost, opt.cost);
  }
  return r;
}
over_orders brute_force_over_orders(const problem& p, std::int64_t budget) {
  return brute_force_over_orders(p, spread_orders(p, std::numeric_limits<std::size_t>::max()), budget);
}
}  // namespace

TEST_CASE("the any-order bound never exceeds the least brute-force optimum over the orders, nor its floor the least peak") {
  // Every 4th graph of the sweep (every 8th under a sanitizer), at each budget of its given order's
  // sweep: the brute force over up to 8 of its topological orders (spread over all of them).
  int budgets = 0, equal = 0;
  testing::for_each_brute_force_budget(4 * testing::sanitizer_stride(2), [&](const testing::remat_instance& inst, const timeline&,
                                                                             std::int64_t, std::int64_t b, const auto& opt) {
    const auto& p = inst.p;
    const auto all = brute_force_over_orders(p, spread_orders(p, 8), b);
    const double least = std::min(opt.cost, all.least_cost);
    const auto least_peak = all.least_peak;
    const auto any = recompute_bound_any_order(p, b);
    INFO("budget " << b << ": least optimum over the orders " << least << ", any-order bound " << any.cost);
    CHECK(any.feasible);
    CHECK(any.cost <= least + 1e-9);
    CHECK(any.memory_floor <= least_peak);
    equal += least > 0 && std::abs(any.cost - least) <= 1e-9;
    ++budgets;
  });
  MESSAGE(budgets << " budgets: the any-order bound equals the least optimum over the orders tried at " << equal);
  CHECK(budgets > 0);
}

TEST_CASE("random training DAGs with in-place writes that cannot run again: both bounds and floors hold against the brute force over orders") {
  // Small training graphs (1-2 layers) whose in-place chains often start with a write that cannot
  // run again (bernoulli_), at three budgets from just below the given order's peak down to the least
  // peak a plan reaches in it: against the brute force over the given order and up to 8 orders.
  testing::training_dag_options o;
  o.max_layers = 2;
  o.max_bytes = 64;
  o.p_huge = 0;
  o.p_inplace = 0.8;
  o.p_random_inplace = 0.5;
  int pairs = 0, floors_above_op_local = 0, refused = 0;
  // (Under the sanitizer every fourth graph: the brute force over orders took 66 s there with every
  // second. Graphs 67, 71, 134 and 176 have an any-order floor above the op-local bound; 176 is kept.)
  for (std::uint64_t seed = 0; seed < 300; seed += static_cast<std::uint64_t>(testing::sanitizer_stride(4))) {
    const auto p = testing::training_dag(seed, o);
    if (p.num_ops() > 14) continue;  // the brute force over orders
    INFO(p.name());
    const auto tl = given_timeline(p);
    const auto lo = testing::remat_min_peak(p, tl, testing::remat_plans::any);
    REQUIRE(lo.feasible);
    const auto orders = spread_orders(p, 8);
    for (const auto b : {tl.peak - 1, (lo.peak + tl.peak) / 2, lo.peak - 1}) {
      if (b <= 0) continue;
      INFO("budget " << b);
      const auto all = brute_force_over_orders(p, orders, b);
      const auto least = all.least_cost;
      const auto least_peak = all.least_peak;
      const auto given = testing::remat_brute_force(p, tl, b, testing::remat_plans::any);
      const auto in = recompute_bound_in_order(p, tl.order(), b);
      const auto any = recompute_bound_any_order(p, b);
      CHECK(in.memory_floor <= lo.peak);
      CHECK(any.memory_floor <= least_peak);
      if (!in.feasible) CHECK(!given.feasible);
      if (!any.feasible) CHECK(least == std::numeric_limits<double>::infinity());
      if (given.feasible && in.feasible) CHECK(in.cost <= given.cost + 1e-9);
      if (least < std::numeric_limits<double>::infinity() && any.feasible) CHECK(any.cost <= least + 1e-9);
      floors_above_op_local += any.memory_floor > op_local_bound(p);
      refused += !any.feasible;
      ++pairs;
    }
  }
  MESSAGE(pairs << " (graph, budget) pairs: the any-order floor is above the op-local bound at " << floors_above_op_local
                << ", and says no plan fits at " << refused);
  CHECK(pairs > 20 / testing::sanitizer_stride(4));
  CHECK(floors_above_op_local > 0);
}

TEST_CASE("the versions an order can hold: detail::chain_ranges agrees with reachability on random training DAGs") {
  // For every op v and every storage with an in-place chain that every order holds across v: the
  // last writer that is an ancestor of v and the last that is not a descendant, against an ancestor
  // matrix built op by op. Graphs of up to 40 layers, and one or two of 800-900 (chain positions past 1024:
  // more than one bitset block, whose seams are the binary searches' edges).
  testing::training_dag_options o;
  o.max_layers = 40;
  o.p_inplace = 0.8;
  o.p_huge = 0;
  std::int64_t pairs = 0, mismatches = 0;
  std::size_t most_positions = 0;
  for (std::uint64_t seed = 0; seed < 42; seed += static_cast<std::uint64_t>(testing::sanitizer_stride(2))) {
    if (seed >= 40) o.min_layers = 800, o.max_layers = 900;
    const auto p = testing::training_dag(seed, o);
    INFO(p.name());
    const auto n = static_cast<std::size_t>(p.num_ops());
    const detail::recompute_bound_tables tb(p);
    std::vector<char> sel(n, 1);
    std::vector<std::vector<storage_id>> across(n);
    REQUIRE(detail::for_each_must_live(p, 30000, [&](storage_id s, std::size_t base, std::span<const std::uint64_t> mask) {
      detail::for_each_bit(base, mask, [&](op_id v) { across[static_cast<std::size_t>(v)].push_back(s); });
    }));
    const auto ranges = detail::chain_ranges(p, tb, across, sel);
    std::size_t positions = 0;
    for (const auto& c : tb.chain) positions += c.size();
    most_positions = std::max(most_positions, positions);
    std::vector<std::vector<char>> anc(n, std::vector<char>(n, 0));  // anc[x][q]: q is a proper ancestor of x
    for (auto x : topological_order(p))
      for (auto q : p.preds(x)) {
        auto& ax = anc[static_cast<std::size_t>(x)];
        ax[static_cast<std::size_t>(q)] = 1;
        for (std::size_t i = 0; i < n; ++i) ax[i] = static_cast<char>(ax[i] | anc[static_cast<std::size_t>(q)][i]);
      }
    for (std::size_t v = 0; v < n; ++v)
      for (std::size_t i = 0; i < across[v].size(); ++i) {
        const auto& c = tb.chain[static_cast<std::size_t>(across[v][i])];
        if (c.empty()) continue;
        std::int32_t a = -1, k = static_cast<std::int32_t>(c.size()) - 1;
        for (std::size_t j = 0; j < c.size(); ++j) {
          if (c[j] == no_id) continue;
          if (anc[v][static_cast<std::size_t>(c[j])]) a = std::max(a, static_cast<std::int32_t>(j));
          if (anc[static_cast<std::size_t>(c[j])][v]) k = std::min(k, static_cast<std::int32_t>(j) - 1);
        }
        if (ranges[v][i] != std::pair{a, k} && mismatches++ == 0)
          MESSAGE("op " << v << ", storage " << across[v][i] << ": (" << ranges[v][i].first << ", " << ranges[v][i].second << "), reachability says ("
                        << a << ", " << k << ")");
        ++pairs;
      }
  }
  MESSAGE(pairs << " (op, chained storage) pairs; at most " << most_positions << " chain positions in a graph");
  CHECK(mismatches == 0);
  CHECK(pairs > 100);
  CHECK(most_positions > 1024);
}

TEST_CASE("an in-place chain is rebuilt whole: a mask made by an op that cannot run again stays, in every order") {
  // Dropout as exported from PyTorch: m0 = empty_like(h), bernoulli_ fills it in place (random: it
  // cannot run again), div_ scales it in place; mul reads h and the mask, mul_bw reads the mask
  // again. The mask's storage is written by two ops that can run again (empty_like, div_), but the
  // value it holds from bernoulli_ on derives from bernoulli_'s output: no rerun rebuilds it. At head
  // (y, z and the mask, 410 B with x) nothing can be dropped, in any order.
  problem_builder pb("dropout_chain");
  const auto x = pb.add_tensor("x", 10, tensor_kind::input);
  const auto h = pb.add_tensor("h", 100, tensor_kind::activation);
  const auto m0 = pb.add_tensor("m0", 100, tensor_kind::activation);
  const auto m1 = pb.add_tensor("m1", 100, tensor_kind::activation);
  const auto m2 = pb.add_tensor("m2", 100, tensor_kind::activation);
  pb.set_inplace_of(m1, m0);
  pb.set_inplace_of(m2, m1);
  const auto y = pb.add_tensor("y", 100, tensor_kind::activation);
  const auto z = pb.add_tensor("z", 200, tensor_kind::activation);
  const auto gy = pb.add_tensor("gy", 10, tensor_kind::gradient);
  const auto gh = pb.add_tensor("gh", 10, tensor_kind::gradient);
  const auto gx = pb.add_tensor("gx", 10, tensor_kind::output);
  pb.add_op("f", {x}, {h}, "linear", op_phase::forward, 4.0);
  pb.add_op("empty_like", {h}, {m0}, "empty_like", op_phase::forward, 0.0);
  pb.add_op("bernoulli_", {m0}, {m1}, "bernoulli_", op_phase::forward, 1.0, 0, {}, false);
  pb.add_op("div_", {m1}, {m2}, "div_", op_phase::forward, 1.0);
  pb.add_op("mul", {h, m2}, {y}, "mul", op_phase::forward, 1.0);
  pb.add_op("head", {y}, {z}, "head", op_phase::forward, 1.0);
  pb.add_op("head_bw", {z}, {gy}, "head_bw", op_phase::backward, 1.0);
  pb.add_op("mul_bw", {gy, m2}, {gh}, "mul_bw", op_phase::backward, 1.0);
  pb.add_op("f_bw", {gh, x}, {gx}, "f_bw", op_phase::backward, 1.0);
  const auto p = pb.build();
  const auto tl = given_timeline(p);
  REQUIRE(tl.peak == 410);
  const auto all = brute_force_over_orders(p, 409);
  CHECK(all.least_peak == 410);
  CHECK(all.least_cost == std::numeric_limits<double>::infinity());
  const auto in = recompute_bound_in_order(p, tl.order(), 409), any = recompute_bound_any_order(p, 409);
  CHECK(!in.feasible);
  CHECK(!any.feasible);
  CHECK(in.memory_floor == 410);
  CHECK(any.memory_floor == 410);  // counting empty_like or div_ as able to rebuild the mask gave 310, the op-local bound
  CHECK(p.op_name(any.floor_op) == "head");
  CHECK(op_local_bound(p) == 310);
  try {
    (void)plan(p, schedule::given{} | remat::default_checkpointer{} | place::default_placer{}, {.budget = 409});
    FAIL("409 bytes were met");
  } catch (const error& e) {
    CHECK(e.code() == errc::infeasible);
    INFO(std::string(e.what()));
    CHECK(std::string(e.what()).find("a plan that only recomputes needs at least 410 bytes (while op 'head'") != std::string::npos);
  }
}

TEST_CASE("an in-place chain is rebuilt whole: rebuilding an activation written in place pays its producer too, in every order") {
  // conv: x -> a (cost 5); relu_ overwrites a in place (cost 1); head reads it; relu_bw reads it
  // again after head_bw, the peak (x, the activation, z and gz: 320 B). Below it the activation is
  // dropped at head_bw and rebuilt: relu_ runs again, and so does conv, since relu_'s input is the
  // version it destroyed. Every order pays 6 (with relu_ alone counted, the any-order bound said 1).
  problem_builder pb("relu_chain");
  const auto x = pb.add_tensor("x", 10, tensor_kind::input);
  const auto a = pb.add_tensor("a", 100, tensor_kind::activation);
  const auto r = pb.add_tensor("r", 100, tensor_kind::activation);
  pb.set_inplace_of(r, a);
  const auto z = pb.add_tensor("z", 200, tensor_kind::activation);
  const auto gz = pb.add_tensor("gz", 10, tensor_kind::gradient);
  const auto ga = pb.add_tensor("ga", 10, tensor_kind::gradient);
  const auto gx = pb.add_tensor("gx", 10, tensor_kind::output);
  pb.add_op("conv", {x}, {a}, "conv", op_phase::forward, 5.0);
  pb.add_op("relu_", {a}, {r}, "relu_", op_phase::forward, 1.0);
  pb.add_op("head", {r}, {z}, "head", op_phase::forward, 1.0);
  pb.add_op("head_bw", {z}, {gz}, "head_bw", op_phase::backward, 1.0);
  pb.add_op("relu_bw", {gz, r}, {ga}, "relu_bw", op_phase::backward, 1.0);
  pb.add_op("conv_bw", {ga, x}, {gx}, "conv_bw", op_phase::backward, 1.0);
  const auto p = pb.build();
  const auto tl = given_timeline(p);
  REQUIRE(tl.peak == 320);
  const auto all = brute_force_over_orders(p, 319);
  CHECK(all.least_cost == 6.0);
  const auto in = recompute_bound_in_order(p, tl.order(), 319), any = recompute_bound_any_order(p, 319);
  CHECK(in.feasible);
  CHECK(any.feasible);
  CHECK(in.cost == 6.0);
  CHECK(any.cost == 6.0);
  CHECK(p.op_name(any.at_op) == "head_bw");
}

TEST_CASE("training DAGs: the default checkpointer's plans recompute at least their order's bound and the any-order one") {
  // Under the sanitizer every third training graph of the sweep (the same code on fewer instances).
  const auto stride = static_cast<std::uint64_t>(testing::sanitizer_stride(3));
  const int plans = testing::for_each_training_plan(stride, [](const problem& p, const memory_plan& mp, std::int64_t budget, double spent) {
    const auto in = recompute_bound_in_order(p, mp.order(), budget);
    const auto any = recompute_bound_any_order(p, budget);
    REQUIRE(in.feasible);
    REQUIRE(any.feasible);
    CHECK(in.cost <= spent * (1 + 1e-12) + 1e-9);
    CHECK(any.cost <= spent * (1 + 1e-12) + 1e-9);
  });
  MESSAGE(plans << " plans checked against their bound");
  CHECK(plans > 60 / testing::sanitizer_stride(3));
}
