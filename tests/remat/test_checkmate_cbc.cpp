// remat::checkmate_ilp with CBC: its optimum equals the exact brute force over Checkmate's plan space
// (recomputes between two scheduled ops in order, once each) at budgets from the least feasible to the
// peak without recomputation; its plans verify and meet the target; infeasible targets fall back (and
// fail the pipeline with errc::infeasible); warm starts, size guards and time limits.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include <memplan/core/pipeline.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/remat/checkmate_ilp.hpp>
#include <memplan/schedule/given.hpp>
#include <memplan/solver/cbc.hpp>

#include "remat_check.hpp"
#include "remat_cbc.hpp"
#include "../support/sanitizer_scale.hpp"

using namespace memplan;
using testing::model_cost;
using testing::violation_of;

namespace {


// A warm start handed in from outside: a fixed timeline (here a brute-force optimum).
struct fixed_plan {
  static constexpr stage_kind kind = stage_kind::checkpointer;
  timeline plan;
  [[nodiscard]] std::string name() const { return "fixed"; }
  [[nodiscard]] timeline run(const problem&, timeline, const plan_context&) const { return plan; }
};

// The first training chain from `seed` on whose least feasible peak is below its peak without recomputation.
problem chain_with_room(std::uint64_t seed, int layers) {
  for (;; ++seed) {
    auto p = make_problem(testing::training_chain(seed, {.layers = layers}));
    const auto tl = given_timeline(p);
    if (testing::remat_min_peak(p, tl, testing::remat_plans::staged).peak < tl.peak) return p;
  }
}

}  // namespace

TEST_CASE("checkmate_ilp equals the brute force over Checkmate's stages at every budget, plans verify and fit") {
  const remat::checkmate_ilp ilp{.relative_gap = 0};
  int solved = 0, graphs = 0;
  std::vector<double> seconds;
  for (const auto& inst : testing::remat_instances()) {
    const auto& p = inst.p;
    INFO(inst.name);
    const auto tl = given_timeline(p);
    const auto lo = testing::remat_min_peak(p, tl, testing::remat_plans::staged);
    REQUIRE(lo.feasible);
    ++graphs;
    for (const auto b : testing::budget_sweep(lo.peak, tl.peak)) {
      INFO("budget " << b);
      const auto st = testing::remat_brute_force(p, tl, b, testing::remat_plans::staged);
      REQUIRE(st.feasible);
      const auto t0 = std::chrono::steady_clock::now();
      const auto out = ilp.run(p, tl, testing::with_cbc(b));
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      const auto& note = out.stages.back().note;
      INFO(note);
      CHECK(note.find("; optimal after ") != std::string::npos);
      CHECK(violation_of(p, out) == "<valid>");
      CHECK(out.peak <= b);
      CHECK(out.order() == tl.order());
      CHECK(model_cost(p, out) == doctest::Approx(st.cost));
      ++solved;
    }
  }
  std::sort(seconds.begin(), seconds.end());
  MESSAGE(graphs << " graphs, " << solved << " budgets: checkmate_ilp = staged brute force at all; stage time median " << seconds[seconds.size() / 2] << " s, max " << seconds.back() << " s");
  CHECK(solved >= 100);
}

TEST_CASE("checkmate_ilp below the least feasible peak: infeasible, falls back to its smallest plan, the pipeline fails cleanly") {
  int tried = 0;
  const auto instances = testing::remat_instances(10, 6);
  for (std::size_t i = 0; i < instances.size(); i += testing::sanitizer_stride(3)) {
    const auto& inst = instances[i];
    const auto& p = inst.p;
    INFO(inst.name);
    const auto tl = given_timeline(p);
    const auto lo = testing::remat_min_peak(p, tl, testing::remat_plans::staged);
    if (lo.peak == 0) continue;
    const auto b = lo.peak - 1;
    CHECK(!testing::remat_brute_force(p, tl, b, testing::remat_plans::staged).feasible);
    const auto out = remat::checkmate_ilp{}.run(p, tl, testing::with_cbc(b));
    const auto& note = out.stages.back().note;
    INFO(note);
    CHECK(note.find("infeasible") != std::string::npos);
    CHECK(note.find("; returned ") != std::string::npos);
    CHECK(violation_of(p, out) == "<valid>");
    CHECK(out.peak > b);
    ++tried;
  }
  CHECK(tried >= testing::full_or_sanitized(10, 3));
  const auto p = make_problem(testing::training_chain(3));
  const auto lo = testing::remat_min_peak(p, given_timeline(p), testing::remat_plans::staged);
  plan_context ctx;
  ctx.budget = lo.peak - 1;
  ctx.solver = solver::cbc{};
  CHECK_THROWS_WITH_AS(plan(p, schedule::given{} | remat::checkmate_ilp{} | place::default_placer{}, ctx),
                       doctest::Contains("no plan fits the budget"), error);
}

TEST_CASE("checkmate_ilp through the pipeline: the plan verifies, its stats carry the cost and the note") {
  for (std::uint64_t seed = 200; seed < 206; ++seed) {
    const auto p = make_problem(testing::training_chain(seed, {.layers = 3}));
    INFO("seed " << seed);
    const auto tl = given_timeline(p);
    const auto lo = testing::remat_min_peak(p, tl, testing::remat_plans::staged);
    const auto target = (lo.peak + tl.peak) / 2;
    const auto st = testing::remat_brute_force(p, tl, target, testing::remat_plans::staged);
    const auto mp = plan(p, schedule::given{} | remat::checkmate_ilp{.relative_gap = 0} | place::default_placer{}, testing::with_cbc(target));
    CHECK(verify(p, mp).ok);
    CHECK(mp.stats.peak <= target);
    CHECK(mp.stats.checkpointer == "checkmate_ilp");
    CHECK(mp.stats.recompute_cost == doctest::Approx(st.cost));
    CHECK(std::any_of(mp.stats.notes.begin(), mp.stats.notes.end(), [](const std::string& n) { return n.rfind("checkmate_ilp: ", 0) == 0; }));
  }
  // A budget (the arena must fit, not only the peak): the pipeline re-targets on overshoot.
  const auto p = chain_with_room(11, 3);
  const auto tl = given_timeline(p);
  const auto lo = testing::remat_min_peak(p, tl, testing::remat_plans::staged);
  plan_context ctx;
  ctx.budget = (lo.peak + 2 * tl.peak) / 3;
  ctx.solver = solver::cbc{};
  const auto mp = plan(p, schedule::given{} | remat::checkmate_ilp{} | place::default_placer{}, ctx);
  CHECK(verify(p, mp).ok);
  CHECK(mp.stats.arena <= ctx.budget);
}

TEST_CASE("checkmate_ilp: a fitting warm start is the first incumbent, size guards and time limits fall back with a note") {
  const auto p = chain_with_room(21, 3);
  const auto tl = given_timeline(p);
  const auto lo = testing::remat_min_peak(p, tl, testing::remat_plans::staged);
  const auto target = (lo.peak + tl.peak) / 2;
  REQUIRE(target < tl.peak);
  const auto st = testing::remat_brute_force(p, tl, target, testing::remat_plans::staged);
  REQUIRE(st.feasible);
  {
    // The optimum as warm start: the solver starts from it and proves it.
    const remat::checkmate_ilp ilp{.relative_gap = 0, .warm_start = fixed_plan{st.plan}};
    const auto out = ilp.run(p, tl, testing::with_cbc(target));
    const auto& note = out.stages.back().note;
    INFO(note);
    CHECK(note.find("warm start fixed (model cost ") != std::string::npos);
    CHECK(note.find("; optimal after ") != std::string::npos);
    CHECK(model_cost(p, out) == doctest::Approx(st.cost));
  }
  {
    // The unrestricted optimum, when it is outside the stages, is still returned if it is cheaper.
    const auto an = testing::remat_brute_force(p, tl, target, testing::remat_plans::any);
    const remat::checkmate_ilp ilp{.warm_start = fixed_plan{an.plan}};
    const auto out = ilp.run(p, tl, testing::with_cbc(target));
    CHECK(violation_of(p, out) == "<valid>");
    CHECK(model_cost(p, out) == doctest::Approx(an.cost));
  }
  {
    const auto out = remat::checkmate_ilp{.max_ops = 3}.run(p, tl, testing::with_cbc(target));
    CHECK(out.stages.back().note.find("ops > max_ops = 3") != std::string::npos);
    CHECK(violation_of(p, out) == "<valid>");
    const auto out2 = remat::checkmate_ilp{.max_binaries = 10}.run(p, tl, testing::with_cbc(target));
    CHECK(out2.stages.back().note.find("binaries > max_binaries = 10") != std::string::npos);
  }
  {
    // time_limit_s 0: no search past the root node; whatever comes back verifies.
    auto ctx = testing::with_cbc(target);
    ctx.time_limit_s = 0;
    const auto out = remat::checkmate_ilp{}.run(p, tl, ctx);
    INFO(out.stages.back().note);
    CHECK(violation_of(p, out) == "<valid>");
  }
  {
    // CBC crashing (or hanging past its limit) in an isolated child process: the policy falls back to
    // its warm start, says why, and the plan verifies.
    auto ctx = testing::with_cbc(target);
    ctx.time_limit_s = 1;
    for (const auto f : {solver::cbc::fault::crash, solver::cbc::fault::hang}) {
      ctx.solver = solver::cbc{.isolate = true, .watchdog_grace_s = 0.2, .inject_fault = f};
      const auto out = remat::checkmate_ilp{}.run(p, tl, ctx);
      const auto& note = out.stages.back().note;
      INFO(note);
      CHECK(note.find(f == solver::cbc::fault::crash ? "crashed in its child process" : "its child process was killed") !=
            std::string::npos);
      CHECK(violation_of(p, out) == "<valid>");
    }
    // The same with isolation and no fault: the optimum, as in process (the limit covers the whole
    // stage, warm start included: room for a sanitizer build).
    ctx.solver = solver::cbc{.isolate = true};
    ctx.time_limit_s = 10;
    CHECK(model_cost(p, remat::checkmate_ilp{.relative_gap = 0}.run(p, tl, ctx)) == doctest::Approx(st.cost));
  }
  {
    // Progress reaches the callback.
    int events = 0;
    auto ctx = testing::with_cbc(target);
    ctx.progress = [&](const progress_event& e) {
      CHECK(e.policy == "checkmate_ilp");
      ++events;
    };
    (void)remat::checkmate_ilp{}.run(p, tl, ctx);
    CHECK(events >= 2);
  }
}

TEST_CASE("checkmate_ilp stopped early with a warm start (node limit 0) returns a verified plan no worse than the warm start") {
  // 40 ops: CBC does not finish at the root node. (With the memory rows as equalities CBC 2.10 crashed
  // here, in CglPreProcess::postProcess, whenever a MIP start was given and a limit stopped the search.)
  const auto p = make_problem(testing::training_chain(7, {.layers = 10}));
  const auto tl = given_timeline(p);
  const auto f = remat::detail::checkmate_make_facts(p, tl);
  const auto od = remat::detail::on_demand_plan(p, f);
  REQUIRE(od);
  timeline start = tl;
  remat::detail::staged_to_timeline(p, f, *od, start);
  REQUIRE(start.peak < tl.peak);
  auto ctx = testing::with_cbc((start.peak + tl.peak) / 2);
  ctx.time_limit_s = 0;
  const auto out = remat::checkmate_ilp{}.run(p, tl, ctx);
  const auto& note = out.stages.back().note;
  INFO(note);
  CHECK(note.find("warm start on-demand recomputation (model cost ") != std::string::npos);
  CHECK(violation_of(p, out) == "<valid>");
  CHECK(out.peak <= ctx.memory_target);
  CHECK(model_cost(p, out) <= model_cost(p, start) + 1e-9);
}
