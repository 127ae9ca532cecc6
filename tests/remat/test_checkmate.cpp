// remat::checkmate_ilp without a MILP solver: the exact brute force itself (its plans verify), the model
// checked against it (every optimal staged plan encodes to a feasible assignment of the same cost; the
// memory rows are exact on every plan we can build), the fallback without a backend, and the cases that
// need no solve.
#include <doctest/doctest.h>

#include <memplan/core/pipeline.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/remat/checkmate_ilp.hpp>
#include <memplan/schedule/given.hpp>

#include "../support/sanitizer_scale.hpp"
#include "../support/small_stack.hpp"
#include "remat_check.hpp"

using namespace memplan;
using testing::model_cost;
using testing::violation_of;

namespace {

// A staged plan's model assignment at a target: feasible exactly when the translated plan's peak fits.
void check_memory_rows(const problem& p, const remat::detail::checkmate_facts& f, const timeline& plan, const std::string& what) {
  std::string why;
  auto sp = remat::detail::timeline_to_staged(p, f, plan, why);
  REQUIRE_MESSAGE(sp, what << ": " << why);
  remat::detail::cleanup(p, f, *sp);
  timeline back = plan;
  remat::detail::staged_to_timeline(p, f, *sp, back);
  REQUIRE_MESSAGE(violation_of(p, back) == "<valid>", what);
  CHECK_MESSAGE(back.peak <= plan.peak, what);  // cleanup and early frees never add memory
  for (const auto target : {back.peak, back.peak - 1}) {
    remat::detail::checkmate_model mm(p, f, target);
    mm.build();
    REQUIRE(mm.representable(*sp));
    const auto x = mm.encode(*sp);
    const auto bad = mm.model().violation(x);
    INFO(what << ", target " << target << " (plan peak " << back.peak << "): " << (bad ? *bad : "feasible"));
    if (target == back.peak) {
      CHECK(!bad);
      CHECK(mm.unscale(mm.model().objective_value(x)) == doctest::Approx(sp->cost(f)));
    } else {
      REQUIRE(bad);
      CHECK(bad->find("'memory'") != std::string::npos);
    }
  }
}

// A warm start that records its own stage: its note is folded into checkmate_ilp's.
struct noting {
  static constexpr stage_kind kind = stage_kind::checkpointer;
  [[nodiscard]] std::string name() const { return "noting"; }
  [[nodiscard]] timeline run(const problem&, timeline tl, const plan_context&) const {
    tl.stages.push_back({kind, name(), 0.0, "noting: did nothing"});
    return tl;
  }
};

}  // namespace

TEST_CASE("remat brute force: plans verify, meet their budget, cost what they claim, staged plans never beat any plan") {
  int instances = 0, budgets = 0, cheaper_any = 0, lower_any = 0;
  for (const auto& inst : testing::remat_instances()) {
    const auto& p = inst.p;
    INFO(inst.name);
    const auto tl = given_timeline(p);
    const auto lo_any = testing::remat_min_peak(p, tl, testing::remat_plans::any);
    const auto lo_st = testing::remat_min_peak(p, tl, testing::remat_plans::staged);
    REQUIRE(lo_any.complete);
    REQUIRE(lo_st.complete);
    REQUIRE(lo_any.feasible);
    REQUIRE(lo_st.feasible);
    CHECK(violation_of(p, lo_any.plan) == "<valid>");
    CHECK(violation_of(p, lo_st.plan) == "<valid>");
    CHECK(lo_any.plan.peak == lo_any.peak);
    CHECK(lo_st.plan.peak == lo_st.peak);
    CHECK(lo_any.peak <= lo_st.peak);
    CHECK(lo_st.peak <= tl.peak);
    lower_any += lo_any.peak < lo_st.peak;
    ++instances;
    if (lo_any.peak > 0) CHECK(!testing::remat_brute_force(p, tl, lo_any.peak - 1).feasible);
    for (const auto b : testing::budget_sweep(lo_st.peak, tl.peak)) {
      INFO("budget " << b);
      const auto st = testing::remat_brute_force(p, tl, b, testing::remat_plans::staged);
      const auto an = testing::remat_brute_force(p, tl, b, testing::remat_plans::any);
      REQUIRE(st.feasible);
      REQUIRE(an.feasible);
      CHECK(violation_of(p, st.plan) == "<valid>");
      CHECK(violation_of(p, an.plan) == "<valid>");
      CHECK(st.plan.peak <= b);
      CHECK(an.plan.peak <= b);
      CHECK(model_cost(p, st.plan) == doctest::Approx(st.cost));
      CHECK(model_cost(p, an.plan) == doctest::Approx(an.cost));
      CHECK(an.cost <= st.cost + 1e-9);
      cheaper_any += an.cost < st.cost - 1e-9;
      ++budgets;
    }
    // With the no-recompute peak as budget nothing is recomputed.
    CHECK(testing::remat_brute_force(p, tl, tl.peak).cost == 0.0);
  }
  MESSAGE(instances << " graphs, " << budgets << " budgets from the least peak over Checkmate's stages up; a plan outside the stages is cheaper at "
                    << cheaper_any << " of them; it reaches a lower peak on " << lower_any << " graphs");
  CHECK(budgets >= 100);
}

TEST_CASE("checkmate model: optimal staged plans encode to feasible assignments of their cost, memory rows are exact") {
  int plans = 0;
  for (const auto& inst : testing::remat_instances()) {
    const auto& p = inst.p;
    const auto tl = given_timeline(p);
    const auto f = remat::detail::checkmate_make_facts(p, tl);
    const auto lo = testing::remat_min_peak(p, tl, testing::remat_plans::staged);
    check_memory_rows(p, f, tl, inst.name + ", no recomputation");
    check_memory_rows(p, f, lo.plan, inst.name + ", least peak");
    ++plans;
    for (const auto b : testing::budget_sweep(lo.peak, tl.peak)) {
      const auto st = testing::remat_brute_force(p, tl, b, testing::remat_plans::staged);
      REQUIRE(st.feasible);
      check_memory_rows(p, f, st.plan, inst.name + ", optimum at budget " + std::to_string(b));
      ++plans;
    }
    if (auto od = remat::detail::on_demand_plan(p, f)) {
      timeline t2 = tl;
      remat::detail::staged_to_timeline(p, f, *od, t2);
      CHECK_MESSAGE(violation_of(p, t2) == "<valid>", inst.name);
      CHECK(t2.peak >= lo.peak);
      check_memory_rows(p, f, t2, inst.name + ", on demand");
      ++plans;
    }
  }
  MESSAGE(plans << " plans encoded");
}

TEST_CASE("checkmate's on-demand plan recomputes a 1,500-layer chain on a 128 KB thread stack (no recursion)") {
  // Each backward stage reads an activation the plan did not keep, recomputed in that stage from the
  // chain's input: the early backward stages rebuild about the whole forward chain. The recursive
  // walk this replaced took a call-stack frame per op there, overflowing a 128 KB stack (musl's
  // default) at 1,500 layers and a 256 KB one at 3,000 (-O2), and 128 KB at 600 under ASan (-O1),
  // where the plan's O(n^2) work is cut to that.
  const int n = testing::full_or_sanitized(1500, 600);
  const auto p = make_problem(testing::plain_chain(n));
  const auto tl = given_timeline(p);
  timeline out = tl;
  bool planned = false;
  REQUIRE(testing::run_on_small_stack(128 * 1024, [&] {
    const auto f = remat::detail::checkmate_make_facts(p, tl);
    if (const auto od = remat::detail::on_demand_plan(p, f)) {
      remat::detail::staged_to_timeline(p, f, *od, out);
      planned = true;
    }
  }));
  REQUIRE(planned);
  CHECK(violation_of(p, out) == "<valid>");
  CHECK(out.peak * 100 < tl.peak);
  std::int64_t burst = 0, deepest = 0;
  for (const auto& s : out.steps) {
    if (s.kind == step_kind::recompute) deepest = std::max(deepest, ++burst);
    if (s.kind == step_kind::compute) burst = 0;
  }
  CHECK(deepest >= n - 2);
}

TEST_CASE("checkmate_ilp without a backend falls back to the best warm start and says so") {
  int fell_back = 0;
  for (const auto& inst : testing::remat_instances(12, 6)) {
    const auto& p = inst.p;
    INFO(inst.name);
    const auto tl = given_timeline(p);
    const auto lo = testing::remat_min_peak(p, tl, testing::remat_plans::staged);
    if (lo.peak >= tl.peak) continue;
    const auto target = (lo.peak + tl.peak) / 2;
    const auto out = remat::checkmate_ilp{}.run(p, tl, {.memory_target = target});
    REQUIRE(!out.stages.empty());
    const auto& note = out.stages.back().note;
    INFO(note);
    CHECK(out.stages.back().name == "checkmate_ilp");
    CHECK(out.stages.back().kind == stage_kind::checkpointer);
    CHECK(note.rfind("checkmate_ilp: no MILP backend available (link memplan::cbc and pass solver::cbc{}); returned ", 0) == 0);
    CHECK(violation_of(p, out) == "<valid>");
    // Without a backend: the warm start (none: the timeline itself) unless memplan's on-demand
    // plan fits the target or, when neither fits, peaks lower.
    const bool on_demand = note.find("returned on-demand recomputation") != std::string::npos;
    CHECK(on_demand != (note.find("returned none") != std::string::npos));
    CHECK(on_demand == (out.steps != tl.steps));
    CHECK(out.peak <= tl.peak);
    ++fell_back;
  }
  CHECK(fell_back >= 5);
  // Through the pipeline the note reaches the plan's stats.
  const auto p = make_problem(testing::plain_chain(4));
  const auto mp = plan(p, schedule::given{} | remat::checkmate_ilp{} | place::default_placer{}, {.memory_target = 40});
  bool seen = false;
  for (const auto& n : mp.stats.notes) seen |= n.find("checkmate_ilp: no MILP backend") != std::string::npos;
  CHECK(seen);
  CHECK(mp.stats.checkpointer == "checkmate_ilp");
}

TEST_CASE("checkmate_ilp needs no solve without a target or when the timeline fits") {
  const auto p = make_problem(testing::training_chain(7));
  const auto tl = given_timeline(p);
  const auto none = remat::checkmate_ilp{}.run(p, tl, {});
  CHECK(none.steps == tl.steps);
  CHECK(none.stages.back().note == "checkmate_ilp: no memory target (budget, capacity or memory_target), nothing recomputed");
  const auto fits = remat::checkmate_ilp{}.run(p, tl, {.memory_target = tl.peak});
  CHECK(fits.steps == tl.steps);
  CHECK(fits.stages.back().note.find("the timeline fits") != std::string::npos);
  // An empty timeline means the given order.
  const auto from_empty = remat::checkmate_ilp{}.run(p, timeline{}, {.memory_target = tl.peak});
  CHECK(from_empty.steps == tl.steps);
  // The model's size is known without solving.
  const auto sz = remat::checkmate_ilp{}.model_size(p, tl);
  CHECK(sz.stages == p.num_ops());
  CHECK(sz.r_vars > 0);
  CHECK(sz.s_vars > 0);
}

TEST_CASE("checkmate_ilp: the warm start is any checkpointer, an in-place tree is refused by name") {
  const auto p = make_problem(testing::plain_chain(4));
  const auto tl = given_timeline(p);
  const auto out = remat::checkmate_ilp{.warm_start = noting{}}.run(p, tl, {.memory_target = tl.peak - 1});
  CHECK(out.stages.size() == tl.stages.size() + 1);  // the warm start's own record is folded into the note
  CHECK(out.stages.back().note.find("noting: did nothing") != std::string::npos);

  graph::dataflow_graph g("tree");
  auto x = g.add_tensor("x", 8, tensor_kind::input);
  auto a = g.add_tensor("a", 8);
  auto b1 = g.add_tensor("b1", 8);
  auto b2 = g.add_tensor("b2", 8);
  auto y = g.add_tensor("y", 4, tensor_kind::output);
  g.add_op("f", {x}, {a});
  g.add_op("u1", {}, {b1});
  g.add_op("u2", {}, {b2});
  g.set_inplace_of(b1, a);
  g.set_inplace_of(b2, a);
  g.add_op("h", {b1, b2}, {y});
  const auto q = make_problem(g);
  CHECK_THROWS_WITH_AS((void)remat::checkmate_ilp{}.run(q, given_timeline(q), {.memory_target = 1}),
                       doctest::Contains("overwritten in place twice"), error);
}
