#include <doctest/doctest.h>
#include <memory>

#include <memplan/core/adapt.hpp>
#include <memplan/core/any_stage.hpp>
#include <memplan/core/best_of.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/graph/dataflow_graph.hpp>
#include <memplan/schedule/given.hpp>
#include <memplan/schedule/list_scheduler.hpp>

#include "../support/random_dag.hpp"
#include "../support/stack_placer.hpp"

using namespace memplan;

namespace {
// A timeline stage of kind checkpointer that only records that it ran (and checks what it sees).
struct recording_checkpointer {
  static constexpr stage_kind kind = stage_kind::checkpointer;
  std::shared_ptr<int> runs = std::make_shared<int>(0);
  [[nodiscard]] std::string name() const { return "recording"; }
  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    ++*runs;
    CHECK(!tl.placed());
    CHECK(tl.order().size() == static_cast<std::size_t>(p.num_ops()));
    CHECK(ctx.alignment >= 1);
    return tl;
  }
};
}  // namespace

TEST_CASE("pipeline: scheduler | placer composes and plans any graph") {
  auto g = testing::random_dag(11, {.ops = 40});
  auto pipe = schedule::given{} | testing::stack_placer{};
  auto mp = plan(g, pipe);
  CHECK(verify(make_problem(g), mp).ok);
  CHECK(mp.stats.scheduler == "given");
  CHECK(mp.stats.placer == "test-stack");
  CHECK(mp.stats.lower_bound <= mp.stats.peak);
  CHECK(mp.stats.gap >= 0.0);
  CHECK(pipe.name() == "given | test-stack");
}

TEST_CASE("pipeline: stages compose into stages, every sub-sequence is one, identity is neutral") {
  const auto p = make_problem(testing::random_dag(4, {.ops = 30}));
  const recording_checkpointer rc;
  auto sched = schedule::given{} | rc;          // a stage of two kinds
  auto full = sched | testing::stack_placer{};  // and one more
  static_assert(stage<decltype(sched)>);
  static_assert(stage<decltype(full)>);
  static_assert(std::same_as<decltype(identity_stage{} | testing::stack_placer{}), testing::stack_placer>);
  static_assert(std::same_as<decltype(schedule::given{} | identity_stage{}), schedule::given>);
  static_assert(contains_kind<decltype(full)>(stage_kind::checkpointer));
  static_assert(!contains_kind<decltype(sched)>(stage_kind::placer));
  const auto a = plan(p, full);
  const auto b = plan(p, schedule::given{} | (rc | testing::stack_placer{}));  // associative
  CHECK(*rc.runs == 2);
  CHECK(a.steps == b.steps);
  CHECK(a.mats == b.mats);
  // Without a scheduler the given order is the starting timeline.
  const auto c = plan(p, testing::stack_placer{});
  CHECK(c.order() == a.order());
  CHECK(c.stats.scheduler.empty());
  // Type-erased stages compose the same way.
  const auto erased = any_scheduler(schedule::given{}) | any_checkpointer(rc) | any_placer(testing::stack_placer{});
  CHECK(plan(p, erased).steps == a.steps);
  CHECK(*rc.runs == 3);
}

TEST_CASE("pipeline: the context reaches every stage, capacity and alignment are honoured") {
  auto g = testing::random_dag(5, {.ops = 10});
  auto mp = plan(g, schedule::given{} | testing::stack_placer{}, {.alignment = 64});
  for (const auto& m : mp.mats) CHECK(m.offset % 64 == 0);
  const auto p = make_problem(g);
  try {
    (void)plan(p, schedule::given{} | testing::stack_placer{}, {.capacity = mp.stats.peak - 1});
    FAIL("expected infeasible");
  } catch (const memplan::error& e) {
    CHECK(e.code() == errc::infeasible);
    CHECK(std::string(e.what()).find("add a checkpointer") != std::string::npos);
  }
  CHECK_THROWS_AS((void)plan(p, testing::stack_placer{}, {.alignment = 3}), memplan::error);
}

TEST_CASE("pipeline: same input and options give the same plan") {
  auto g = testing::random_dag(9, {.ops = 30});
  auto a = plan(g, schedule::given{} | testing::stack_placer{});
  auto b = plan(g, schedule::given{} | testing::stack_placer{});
  CHECK(a.steps == b.steps);
  CHECK(a.mats == b.mats);
}

TEST_CASE("pipeline: the context's stop cuts every searching stage's time limit (none in deterministic mode)") {
  plan_context ctx;
  CHECK(ctx.time_limit_or(3.0) == 3.0);   // no stop: the policy's own default
  CHECK(ctx.time_limit_or(-1.0) == -1.0);
  ctx.stop = deadline::after(1000.0);
  CHECK(ctx.time_limit_or(3.0) == 3.0);   // the stop is further away
  CHECK(ctx.time_limit_or(-1.0) > 900.0);  // "none" becomes what is left
  CHECK(ctx.time_limit_or(-1.0) <= 1000.0);
  ctx.time_limit_s = 0.0;                  // 0: the policy's first result
  CHECK(ctx.time_limit_or(3.0) == 0.0);
  ctx.time_limit_s = -1.0;
  ctx.stop = deadline::after(0.0);         // already past: a clock that has run out, not "first result"
  CHECK(ctx.time_limit_or(3.0) > 0.0);
  CHECK(ctx.time_limit_or(3.0) < 1e-6);
  CHECK(ctx.time_limit_or(-1.0) > 0.0);
  CHECK(ctx.time_limit_or(-1.0) < 1e-6);
  CHECK(deadline::after(ctx.time_limit_or(-1.0)).expired());
  ctx.time_limit_s = 5.0;
  CHECK(ctx.time_limit_or(3.0) < 1e-6);
  ctx.time_limit_s = 0.0;
  CHECK(ctx.time_limit_or(3.0) > 0.0);
  ctx.deterministic = true;                // work is counted: no clock at all
  CHECK(ctx.time_limit_or(3.0) == -1.0);
}

TEST_CASE("pipeline: the stage records carry names and times, best_of names the winner") {
  const auto p = make_problem(testing::random_dag(3, {.ops = 25}));
  const auto mp = plan(p, best_of{schedule::given{}, schedule::peak_aware()} | testing::stack_placer{});
  REQUIRE(mp.stages.size() == 2);
  CHECK(mp.stages[0].kind == stage_kind::scheduler);
  CHECK(mp.stages[1].kind == stage_kind::placer);
  CHECK(mp.stages[0].seconds >= 0.0);
  CHECK((mp.stats.scheduler == "given" || mp.stats.scheduler == "peak_aware"));
  CHECK(mp.stats.notes.front().rfind("best_of: ", 0) == 0);
}

TEST_CASE("pipeline: the bound and the timeline are computed once per plan (instrumented problem)") {
  auto p = make_problem(testing::random_dag(21, {.ops = 60}));
  analysis_counters counters;
  p.instrument(&counters);
  const auto mp = plan(p, schedule::given{} | testing::stack_placer{});
  CHECK(counters.lower_bounds == 1);
  CHECK(counters.timelines == 1);
  // given: one profile of its order; the timeline: one; given_peak: one. No re-derivation after that.
  CHECK(counters.lifetimes <= 3);
  CHECK(verify(p, mp).ok);
}

TEST_CASE("stage_memo: a key finds what was kept under it with its own type only, within its byte limit") {
  stage_memo memo;
  memo.keep<int>("a", std::make_shared<const int>(7), 4);
  REQUIRE(memo.find<int>("a"));
  CHECK(*memo.find<int>("a") == 7);
  CHECK_FALSE(memo.find<double>("a"));  // another type under the same key: not a hit
  CHECK_FALSE(memo.find<int>("b"));
  memo.keep<int>("a", std::make_shared<const int>(8), 4);  // the first stays
  CHECK(*memo.find<int>("a") == 7);
  CHECK(memo.bytes() == 4);
  memo.keep<int>("big", std::make_shared<const int>(1), stage_memo::bytes_limit);  // over the limit: not kept
  CHECK_FALSE(memo.find<int>("big"));
  CHECK(memo.size() == 1);
}

TEST_CASE("pipeline: a given order that breaks in-place order is refused by name") {
  graph::dataflow_graph g("bad-given");
  auto x = g.add_tensor("x", 4, tensor_kind::input);
  auto a = g.add_tensor("a", 4);
  auto a2 = g.add_tensor("a2", 4);
  auto r = g.add_tensor("r", 4);
  g.add_op("p", {x}, {a});
  g.add_op("relu_", {a}, {a2});
  g.set_inplace_of(a2, a);
  g.add_op("late_reader", {a}, {r});  // reads a after it was overwritten: the given order is not executable
  try {
    (void)plan(g, schedule::given{} | testing::stack_placer{});
    FAIL("expected an error");
  } catch (const memplan::error& e) {
    CHECK(std::string(e.what()).find("op 'relu_' runs before its predecessor op 'late_reader'") != std::string::npos);
  }
}

TEST_CASE("timeline: make_timeline and derive agree, relink renumbers after edits") {
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    const auto p = make_problem(testing::random_dag(seed, {.ops = 25, .p_inplace = 0.2, .p_workspace = 0.3}));
    const auto tl = make_timeline(p, given_order(p));
    auto again = tl;
    derive(p, again);
    CHECK(again.mats == tl.mats);
    CHECK(again.live == tl.live);
    CHECK(again.peak == peak_of(p, given_order(p)));
    auto re = tl;
    relink(p, re);
    CHECK(re.steps == tl.steps);
    for (std::size_t m = 0; m < re.mats.size(); ++m) {
      CHECK(re.mats[m].storage == tl.mats[m].storage);
      CHECK(re.mats[m].first == tl.mats[m].first);
      CHECK(re.mats[m].last == tl.mats[m].last);
    }
  }
}
