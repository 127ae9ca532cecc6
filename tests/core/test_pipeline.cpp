#include <doctest/doctest.h>

#include <memplan/core/pipeline.hpp>
#include <memplan/graph/dataflow_graph.hpp>
#include <memplan/schedule/given.hpp>

#include "../support/random_dag.hpp"
#include "../support/stack_placer.hpp"

using namespace memplan;

TEST_CASE("pipeline: scheduler | placer composes and plans any graph") {
  auto g = testing::random_dag(11, {.ops = 40});
  auto pipe = schedule::given{} | testing::stack_placer{};
  auto mp = plan(g, pipe);
  CHECK(verify(make_problem(g), mp).ok);
  CHECK(mp.stats.scheduler == "given");
  CHECK(mp.stats.placer == "test-stack");
  CHECK(mp.stats.lower_bound <= mp.stats.peak);
  CHECK(mp.stats.gap >= 0.0);
}

TEST_CASE("pipeline: capacity and alignment are honoured") {
  auto g = testing::random_dag(5, {.ops = 10});
  auto mp = plan(g, schedule::given{} | testing::stack_placer{}, {.alignment = 64});
  for (auto off : mp.offsets) CHECK(off % 64 == 0);
}

TEST_CASE("pipeline: same input and options give the same plan") {
  auto g = testing::random_dag(9, {.ops = 30});
  auto a = plan(g, schedule::given{} | testing::stack_placer{});
  auto b = plan(g, schedule::given{} | testing::stack_placer{});
  CHECK(a.steps == b.steps);
  CHECK(a.offsets == b.offsets);
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
