#include <doctest/doctest.h>

#include <memplan/graph/dataflow_graph.hpp>

using namespace memplan;

TEST_CASE("dataflow_graph: multi-output ops, many consumers, control edges") {
  graph::dataflow_graph g("g");
  auto x = g.add_tensor("x", 4, tensor_kind::input);
  auto y = g.add_tensor("y", 8, tensor_kind::activation, {.shape = {2}, .dtype = "float32"});
  auto idx = g.add_tensor("idx", 8);
  auto pool = g.add_op("pool", {x}, {y, idx});
  auto u1 = g.add_op("u1", {y}, {});
  auto u2 = g.add_op("u2", {y, idx}, {});
  auto ctl = g.add_control_edge(u1, u2);
  CHECK(g.num_ops() == 3);
  CHECK(memplan::outputs(g, pool).size() == 2);
  CHECK(memplan::consumers(g, y).size() == 2);
  CHECK(memplan::producer(g, y) == std::optional<graph::op_ref>(pool));
  CHECK(memplan::tensor_bytes(g, ctl) == 0);
  CHECK(memplan::tensor_kind_of(g, ctl) == tensor_kind::control);
  CHECK(memplan::inputs(g, u2).size() == 3);
  CHECK(g.tensor_attrs(y).shape == std::vector<std::int64_t>{2});
  CHECK(g.find_tensor("idx") == std::optional<graph::tensor_ref>(idx));
  CHECK_THROWS_AS(g.add_tensor("x", 1), memplan::error);
  CHECK_THROWS_AS(g.add_op("bad", {graph::tensor_ref{99}}, {}), memplan::error);
}
