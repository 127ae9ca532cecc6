// core/variants.hpp: implementations that read other tensors (MONeT's output-activated backward).
// The builder keeps them apart from the op's implementations and rejects bad ones by name;
// apply_variants rewrites the graph and drops the ops left without a use; choose_variants takes only
// variants that cost nothing, checked here against an independent profile of the given order on a
// MobileNet-like block and on random training graphs with random variants, and every rewritten
// graph's plan passes verify.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include <memplan/core/analysis.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/core/problem_builder.hpp>
#include <memplan/core/variants.hpp>
#include <memplan/core/verify.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/schedule/default_scheduler.hpp>
#include <memplan/schedule/given.hpp>

#include "../property/training_dag.hpp"
#include "random_variants.hpp"

using namespace memplan;

namespace {

using testing::relu6_block;

// Live bytes of q in ref's given order (a topological one when that does not run), by position
// (ops q no longer has: -1).
std::vector<std::int64_t> live_by_name(const problem& ref, const problem& q) {
  auto ref_order = given_order(ref);
  if (!is_topological(ref, ref_order)) ref_order = topological_order(ref);
  std::vector<op_id> order;
  std::vector<std::size_t> at;
  for (std::size_t i = 0; i < ref_order.size(); ++i)
    if (auto k = q.find_op(ref.op_name(ref_order[i]))) {
      order.push_back(*k);
      at.push_back(i);
    }
  std::vector<std::int64_t> live(static_cast<std::size_t>(ref.num_ops()), -1);
  const auto m = profile(q, order);
  for (std::size_t i = 0; i < order.size(); ++i) live[at[i]] = m.live[i];
  return live;
}

}  // namespace

TEST_CASE("variants are kept apart from implementations and checked by name") {
  const auto p = relu6_block();
  const auto bw = *p.find_op("relu6_bw");
  CHECK(p.implementations(bw).empty());
  REQUIRE(p.variants(bw).size() == 1);
  CHECK(p.variants(bw)[0].inputs == std::vector<std::string>{"gy", "y"});
  CHECK(has_variants(p));
  CHECK(has_variants(with_ops(p, [](const problem&, op_id, op_fields& f) { f.impls.clear(); })));  // variants travel

  auto build_error = [](auto&& make) -> std::string {
    try {
      make();
    } catch (const error& e) {
      CHECK(e.code() == errc::invalid_graph);
      return e.what();
    }
    return "";
  };
  // an unknown tensor
  CHECK(build_error([] { relu6_block(1.0, "nope"); }).find("op 'relu6_bw': variant 'output_activated' reads unknown tensor 'nope'") !=
        std::string::npos);
  // the op's own output
  CHECK(build_error([] { relu6_block(1.0, "ga"); }).find("reads the op's own output 'ga'") != std::string::npos);
  // an in-place op's variant must still read what it overwrites
  const auto msg = build_error([] {
    problem_builder b;
    const auto x = b.add_tensor("x", 8, tensor_kind::input);
    const auto a = b.add_tensor("a", 8, tensor_kind::activation);
    const auto y = b.add_tensor("y", 8, tensor_kind::activation);
    b.set_inplace_of(y, a);
    b.add_op("f", {x}, {a});
    b.add_op("g_", {a}, {y}, "op", op_phase::other, 1.0, 0, {implementation{"v", 1.0, 0, {"x"}}});
    (void)b.build();
  });
  CHECK(msg.find("op 'g_': variant 'v' does not read 'a', which the op overwrites in place") != std::string::npos);
}

TEST_CASE("apply_variants: the op reads its variant's inputs, the clone nobody reads any more goes, names are checked") {
  const auto p = relu6_block();
  std::vector<std::string> removed;
  const std::vector<variant_choice> take{{"relu6_bw", "output_activated"}};
  const auto q = apply_variants(p, take, &removed);
  CHECK(removed == std::vector<std::string>{"clone"});
  CHECK(q.num_ops() == p.num_ops() - 1);
  CHECK(!q.find_tensor("c"));
  const auto bw = *q.find_op("relu6_bw");
  std::vector<std::string> ins;
  for (auto t : q.inputs(bw)) ins.push_back(q.tensor_name(t));
  CHECK(ins == std::vector<std::string>{"gy", "y"});
  CHECK(q.variants(bw).empty());
  CHECK(q.cost(bw) == 1.0);
  // The given order's peak falls by the clone: 100 bytes.
  CHECK(peak_of(q, given_order(q)) == peak_of(p, given_order(p)) - 100);

  auto arg_error = [&](std::vector<variant_choice> v) -> std::string {
    try {
      (void)apply_variants(p, v);
    } catch (const error& e) {
      CHECK(e.code() == errc::invalid_argument);
      return e.what();
    }
    return "";
  };
  CHECK(arg_error({{"nope", "output_activated"}}).find("no op 'nope'") != std::string::npos);
  CHECK(arg_error({{"relu6_bw", "fast"}}).find("op 'relu6_bw' has no variant 'fast' (it has: output_activated)") != std::string::npos);
  CHECK(arg_error({{"conv", "fast"}}).find("(it has none)") != std::string::npos);

  // A variant that reads what is computed after its op: named, not a cycle deep in the builder.
  problem_builder b;
  const auto x = b.add_tensor("x", 8, tensor_kind::input);
  const auto a = b.add_tensor("a", 8, tensor_kind::activation);
  const auto z = b.add_tensor("z", 8, tensor_kind::output);
  b.add_op("f", {x}, {a}, "op", op_phase::other, 1.0, 0, {implementation{"late", 1.0, 0, {"z"}}});
  b.add_op("g", {a}, {z});
  const auto cyc = b.build();
  try {
    (void)apply_variants(cyc, std::vector<variant_choice>{{"f", "late"}});
    FAIL("no error");
  } catch (const error& e) {
    CHECK(e.code() == errc::invalid_graph);
    CHECK(std::string(e.what()).find("op 'f': variant 'late' reads tensor 'z', which op 'g' computes after it") != std::string::npos);
  }
}

TEST_CASE("choose_variants takes the free variant, not a slower one or one that keeps more memory") {
  const auto p = relu6_block();
  const auto r = choose_variants(p);
  REQUIRE(r.taken.size() == 1);
  CHECK(r.taken[0] == variant_choice{"relu6_bw", "output_activated"});
  CHECK(r.removed_ops == std::vector<std::string>{"clone"});
  CHECK(r.given_peak_after == r.given_peak_before - 100);
  CHECK(r.rewritten.num_ops() == p.num_ops() - 1);
  // Plans of the rewritten graph verify and are lower than the original's.
  const auto mine = plan(r.rewritten, schedule::default_scheduler{} | place::default_placer{});
  const auto theirs = plan(p, schedule::default_scheduler{} | place::default_placer{});
  CHECK(verify(r.rewritten, mine).ok);
  CHECK(mine.stats.peak < theirs.stats.peak);
  // Slower than the op's own: kept off.
  CHECK(choose_variants(relu6_block(1.5)).taken.empty());
  // Reading the input x (resident, 100 B) instead of the clone saves the clone: taken. Reading `a`
  // (which relu6_ overwrites) would run before the overwrite: a cycle, not taken.
  CHECK(choose_variants(relu6_block(1.0, "x")).taken.size() == 1);
  CHECK(choose_variants(relu6_block(1.0, "a")).taken.empty());
  // Determinism.
  CHECK(choose_variants(p).taken == r.taken);
}

TEST_CASE("choose_variants on random training graphs with random variants: the given order never holds more, plans verify") {
  int graphs = 0, with_taken = 0, taken = 0, removed = 0;
  for (std::uint64_t seed = 1; seed <= 80; ++seed) {
    const auto base = testing::training_dag(seed, {.p_huge = 0.0});
    const auto p = testing::with_random_variants(base, seed);
    INFO("seed " << seed);
    ++graphs;
    const auto r = choose_variants(p);
    CHECK(choose_variants(p).taken == r.taken);  // deterministic
    if (r.taken.empty()) {
      CHECK(r.rewritten.num_ops() == p.num_ops());
      continue;
    }
    ++with_taken;
    taken += static_cast<int>(r.taken.size());
    removed += static_cast<int>(r.removed_ops.size());
    for (const auto& c : r.taken) {
      const auto o = *p.find_op(c.op);
      CHECK(p.variants(o)[0].cost <= p.cost(o));
    }
    // The rewrite is apply_variants of what was taken.
    std::vector<std::string> gone;
    const auto q = apply_variants(p, r.taken, &gone);
    CHECK(gone == r.removed_ops);
    CHECK(q.num_ops() == r.rewritten.num_ops());
    // No step of the given order holds more; the sum is lower.
    const auto before = live_by_name(p, p), after = live_by_name(p, q);
    std::int64_t sb = 0, sa = 0;
    for (std::size_t i = 0; i < before.size(); ++i) {
      if (after[i] >= 0) CHECK(after[i] <= before[i]);
      sb += before[i];
      sa += std::max<std::int64_t>(after[i], 0);
    }
    CHECK(sa < sb);
    const auto mp = plan(r.rewritten, schedule::given{} | place::default_placer{});
    CHECK(verify(r.rewritten, mp).ok);
  }
  MESSAGE(graphs << " graphs: variants taken in " << with_taken << " (" << taken << " variants, " << removed << " ops removed)");
  CHECK(with_taken > 5);
}

TEST_CASE("relax_variants: what every alternative reads, what each reads beyond, and the clone a choice may remove") {
  const auto p = relu6_block(1.5);  // the variant costs more than the op's own 1.0
  const auto r = relax_variants(p);
  const auto& q = r.relaxed;
  REQUIRE(q.num_ops() == p.num_ops());
  REQUIRE(q.num_tensors() == p.num_tensors());
  const auto names = [&](std::span<const tensor_id> ts) {
    std::vector<std::string> n;
    for (auto t : ts) n.push_back(p.tensor_name(t));
    return n;
  };
  const auto bw = *p.find_op("relu6_bw");
  const auto at = [](op_id o) { return static_cast<std::size_t>(o); };
  CHECK(names(q.inputs(bw)) == std::vector<std::string>{"gy"});
  REQUIRE(r.alternatives[at(bw)].size() == 2);
  CHECK(names(r.alternatives[at(bw)][0]) == std::vector<std::string>{"c"});  // its own
  CHECK(names(r.alternatives[at(bw)][1]) == std::vector<std::string>{"y"});  // output_activated
  CHECK(q.cost(bw) == 1.0);
  // The clone goes when relu6_bw takes its variant: in the relaxation it reads nothing, costs nothing,
  // and its output takes no bytes; what it has where a choice keeps it is kept beside (go_*).
  const auto clone = *p.find_op("clone");
  CHECK(r.may_go[at(clone)] == 1);
  CHECK(std::count(r.may_go.begin(), r.may_go.end(), std::uint8_t{1}) == 1);
  CHECK(q.inputs(clone).empty());
  CHECK(q.cost(clone) == 0.0);
  CHECK(q.bytes(*p.find_tensor("c")) == 0);
  CHECK(q.bytes(*p.find_tensor("y")) == 100);
  CHECK(names(r.go_reads[at(clone)]) == std::vector<std::string>{"a"});
  CHECK(r.go_cost[at(clone)] == 0.5);
  CHECK(r.go_bytes[static_cast<std::size_t>(*p.find_tensor("c"))] == 100);
  for (op_id o = 0; o < p.num_ops(); ++o)
    if (o != clone) CHECK((r.go_reads[at(o)].empty() && r.go_cost[at(o)] == 0.0));
  CHECK(std::accumulate(r.go_bytes.begin(), r.go_bytes.end(), std::int64_t{0}) == 100);
  // Every op at its costliest alternative: the own costs (18.5) with relu6_bw at 1.5.
  CHECK(r.compute_cost_max == doctest::Approx(19.0));
  for (op_id o = 0; o < p.num_ops(); ++o)
    if (o != bw && o != clone) CHECK(names(q.inputs(o)) == names(p.inputs(o)));

  // Random training graphs with random variants: the relaxed inputs are shared by every alternative
  // (an in-place base always), and no choice's compute cost exceeds compute_cost_max.
  int with_variants = 0;
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const auto g = testing::with_random_variants(testing::training_dag(seed), seed);
    const auto rg = relax_variants(g);
    std::vector<variant_choice> all;
    double own = 0;
    for (op_id o = 0; o < g.num_ops(); ++o) {
      own += g.cost(o);
      if (rg.may_go[at(o)]) {
        CHECK(rg.relaxed.inputs(o).empty());
        for (auto t : rg.go_reads[at(o)]) CHECK(std::find(g.inputs(o).begin(), g.inputs(o).end(), t) != g.inputs(o).end());
        for (auto t : g.outputs(o)) CHECK(rg.go_bytes[static_cast<std::size_t>(t)] == g.bytes(t));
        continue;
      }
      const auto in = rg.relaxed.inputs(o);
      for (auto t : in) CHECK(std::find(g.inputs(o).begin(), g.inputs(o).end(), t) != g.inputs(o).end());
      if (g.variants(o).empty()) {
        CHECK(rg.alternatives[at(o)].empty());
        CHECK(in.size() == g.inputs(o).size());
        continue;
      }
      CHECK(rg.alternatives[at(o)].size() == g.variants(o).size() + 1);
      all.push_back({g.op_name(o), g.variants(o)[0].name});
    }
    if (all.empty()) continue;
    ++with_variants;
    bool costed = false;
    for (op_id o = 0; o < g.num_ops(); ++o) costed |= g.cost(o) > 0;
    if (!costed) continue;
    CHECK(own <= rg.compute_cost_max + 1e-9);
    try {
      const auto q2 = apply_variants(g, all);
      double c = 0;
      for (op_id o = 0; o < q2.num_ops(); ++o) c += q2.cost(o);
      CHECK(c <= rg.compute_cost_max + 1e-9);
    } catch (const error& e) {
      CHECK(e.code() == errc::invalid_graph);  // these variants together make a cycle
    }
  }
  CHECK(with_variants > 5);
}
