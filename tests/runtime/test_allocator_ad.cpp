// Trace -> plan -> replay round trips on real training steps of the autodiff engine: a framework-style
// runner allocates every tensor through a memory resource; under the replaying resource (from a
// recorded trace, or straight from a memory plan) the weights after each step are bitwise those of
// ad::eager_runner, every planned allocation comes from the slab, and a run at another batch size
// diverges, falls back, and still computes the right numbers.
#include <doctest/doctest.h>

#include <memory>
#include <numeric>
#include <vector>

#include <memplan/ad/eager.hpp>
#include <memplan/ad/models/cnn.hpp>
#include <memplan/ad/models/mlp.hpp>
#include <memplan/ad/optimizers.hpp>
#include <memplan/ad/run_plan.hpp>
#include <memplan/core/adapt.hpp>
#include <memplan/core/analysis.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/runtime/plan_replay.hpp>
#include <memplan/runtime/replay.hpp>
#include <memplan/runtime/symbolic.hpp>
#include <memplan/runtime/trace_graph.hpp>
#include <memplan/runtime/trace.hpp>
#include <memplan/schedule/default_scheduler.hpp>
#include <memplan/schedule/given.hpp>

#include "pmr_runner.hpp"

using namespace memplan;
using namespace memplan::runtime;

namespace {
std::vector<ad::model> allocator_models() {
  std::vector<ad::model> m;
  m.push_back(ad::models::mlp({.batch = 16, .hidden = 32}, ad::sgd{0.1f, 0.9f}));
  m.push_back(ad::models::mlp({.batch = 8, .hidden = 16, .layers = 1}, ad::adam{}));
  m.push_back(ad::models::cnn({.batch = 4}, ad::sgd{0.05f, 0.9f}));
  return m;
}
std::vector<std::int32_t> program_order(const ad::program& p) {
  std::vector<std::int32_t> o(p.nodes.size());
  std::iota(o.begin(), o.end(), 0);
  return o;
}
}  // namespace

TEST_CASE("record -> plan -> replay trains bitwise like the eager runner") {
  for (const auto& m : allocator_models()) {
    CAPTURE(m.step.name);
    const auto order = program_order(m.step);
    ad::eager_runner eager(m.step);
    test::pmr_runner rec_run(m.step), rep_run(m.step);
    recording_resource rec;
    rec_run.run(rec, order);
    (void)rec_run.release_outputs(rec);
    const auto trace = rec.take();
    REQUIRE(!trace.allocations.empty());
    CHECK(!trace.allocations[0].tag.empty());  // tagged with the node that allocated it
    auto plan = std::make_shared<const replay_plan>(plan_trace(trace, place::greedy_by_size{}));
    replaying_resource<> mem(plan);
    eager.run();  // the recorded step, for the reference
    for (int step = 0; step < 3; ++step) {
      if (step > 0) eager.run();
      mem.begin_run();
      if (step == 0) {  // the replay runner starts from the same state the recorder had after its step
        rep_run.run(*std::pmr::new_delete_resource(), order);
        (void)rep_run.release_outputs(*std::pmr::new_delete_resource());
        continue;
      }
      rep_run.run(mem, order);
      (void)rep_run.release_outputs(mem);
      CHECK(ad::read_state(m.step, rep_run) == ad::read_state(m.step, eager));
    }
    CHECK(mem.stats().misses == 0);
    CHECK(mem.stats().divergent_runs == 0);
    CHECK(mem.stats().hits == 2 * plan->planned);
  }
}

TEST_CASE("a replaying resource built from a memory plan serves the framework's allocations at the plan's offsets") {
  for (const auto& m : allocator_models()) {
    CAPTURE(m.step.name);
    for (int which = 0; which < 2; ++which) {
      const auto pp = which == 0 ? ad::plan_program(m.step, schedule::given{} | place::greedy_by_size{})
                                 : ad::plan_program(m.step, schedule::default_scheduler{} | place::greedy_by_size{});
      std::vector<std::int32_t> order;
      for (auto o : pp.plan.order()) order.push_back(o.value());
      auto plan = std::make_shared<const replay_plan>(replay_plan_of(pp.prob, pp.plan));
      CHECK(plan->arena == pp.plan.arena);
      CHECK(plan->planned > 0);
      ad::eager_runner eager(m.step);
      test::pmr_runner run(m.step);
      replaying_resource<> mem(plan);
      for (int step = 0; step < 2; ++step) {
        eager.run();
        mem.begin_run();
        run.run(mem, order);
        (void)run.release_outputs(mem);
        CHECK(ad::read_state(m.step, run) == ad::read_state(m.step, eager));
      }
      CHECK(mem.stats().divergent_runs == 0);
      CHECK(mem.stats().misses == 0);
      CHECK(mem.stats().hits == 2 * plan->planned);
      // The slab addresses are the plan's offsets: allocation i of the run is at slab + offset.
      const auto pa = allocations_of(pp.prob, pp.plan);
      CHECK(pa.trace.allocations.size() == plan->entries.size());
    }
  }
}

TEST_CASE("a run at another batch size diverges, falls back to upstream, and computes the same numbers") {
  const auto small = ad::models::mlp({.batch = 8, .hidden = 32}, ad::sgd{0.1f, 0.9f});
  const auto big = ad::models::mlp({.batch = 16, .hidden = 32}, ad::sgd{0.1f, 0.9f});
  test::pmr_runner rec_run(small.step);
  recording_resource rec;
  rec_run.run(rec, program_order(small.step));
  (void)rec_run.release_outputs(rec);
  replaying_resource<> mem(std::make_shared<const replay_plan>(plan_trace(rec.take(), place::greedy_by_size{})));
  ad::eager_runner eager(big.step);
  test::pmr_runner run(big.step);
  eager.run();
  run.run(mem, program_order(big.step));
  (void)run.release_outputs(mem);
  CHECK(mem.stats().divergent_runs == 1);
  CHECK(mem.stats().misses > 0);
  CHECK(mem.live_slab_allocations() == 0);
  CHECK(ad::read_state(big.step, run) == ad::read_state(big.step, eager));
  MESSAGE("divergence: " << mem.stats().reason);
}

TEST_CASE("recorded at batches 8 and 16, one symbolic plan replays a training step at any batch in [2, 32]") {
  auto model_at = [](std::int64_t batch) { return ad::models::mlp({.batch = batch, .hidden = 32}, ad::sgd{0.1f, 0.9f}); };
  auto record_at = [&](std::int64_t batch) {
    const auto m = model_at(batch);
    test::pmr_runner run(m.step);
    recording_resource rec;
    run.run(rec, program_order(m.step));
    (void)run.release_outputs(rec);
    return rec.take();
  };
  const auto st = fit_traces(record_at(8), 8, record_at(16), 16, {2, 32});
  const auto sr = plan_symbolic(st, place::greedy_by_size{});
  REQUIRE_FALSE(prove(sr.problem, sr.placement).has_value());
  for (std::int64_t batch : {2, 5, 12, 31, 32}) {
    CAPTURE(batch);
    const auto m = model_at(batch);
    auto plan = std::make_shared<const replay_plan>(replay_plan_at(sr, batch));
    CHECK(plan->arena == sr.slab);
    replaying_resource<> mem(plan);
    ad::eager_runner eager(m.step);
    test::pmr_runner run(m.step);
    for (int step = 0; step < 2; ++step) {
      eager.run();
      mem.begin_run();
      run.run(mem, program_order(m.step));
      (void)run.release_outputs(mem);
      CHECK(ad::read_state(m.step, run) == ad::read_state(m.step, eager));
    }
    CHECK(mem.stats().divergent_runs == 0);
    CHECK(mem.stats().hits == 2 * plan->planned);
    const auto per_batch = plan_trace(instantiate(st, batch), place::greedy_by_size{});
    MESSAGE("batch " << batch << ": symbolic arena " << arena_at(sr.problem, sr.placement, batch) << " B, per-batch plan " << per_batch.arena << " B");
  }
}

TEST_CASE("a scoped trace becomes a dataflow graph whose given order has the trace's live peak") {
  for (const auto& m : allocator_models()) {
    CAPTURE(m.step.name);
    test::pmr_runner run(m.step);
    recording_resource rec;
    run.run(rec, program_order(m.step));
    (void)run.release_outputs(rec);
    const auto trace = rec.take();
    CHECK(trace.scopes.size() == m.step.nodes.size());
    const auto g = to_dataflow_graph(trace, m.step.name);
    const auto prob = make_problem(g);
    CHECK(prob.num_ops() == static_cast<std::int32_t>(m.step.nodes.size()));
    CHECK(peak_of(prob, given_order(prob)) == live_peak(trace));
    // The graph is a planning problem like any other: its plan's arena is at least the bound.
    const auto plan = memplan::plan(prob, schedule::given{} | place::greedy_by_size{}, {.alignment = 64});
    CHECK(plan.arena >= plan.stats.lower_bound);
    // And the trace of running that plan is the recorded one, allocation for allocation.
    const auto again = allocations_of(prob, plan).trace;
    REQUIRE(again.allocations.size() == trace.allocations.size());
    for (std::size_t i = 0; i < trace.allocations.size(); ++i) CHECK(again.allocations[i].size == trace.allocations[i].size);
  }
}
