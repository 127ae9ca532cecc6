#pragma once
// Small graphs from the OLLA paper, shared by tests.
#include <memplan/graph/dataflow_graph.hpp>

namespace memplan::testing {

// OLLA Figure 3: the order of two independent branches changes the peak.
// v1 produces a (20) and b (10); v2: a -> c (5); v3: b -> d (30); v4 reads c and d.
// v2 before v3: {a,b,c}=35, {b,c,d}=45, {c,d}=35 -> 45.  v3 before v2: {a,b,d}=60 -> 60.
// The given order runs the expensive branch (v3) first: peak 60; the optimum is 45.
inline graph::dataflow_graph olla_figure3_graph() {
  graph::dataflow_graph g("olla-fig3");
  auto x = g.add_tensor("x", 0, tensor_kind::input);
  auto a = g.add_tensor("a", 20);
  auto b = g.add_tensor("b", 10);
  auto c = g.add_tensor("c", 5);
  auto d = g.add_tensor("d", 30);
  auto y = g.add_tensor("y", 0, tensor_kind::output);
  g.add_op("v1", {x}, {a, b});
  g.add_op("v3", {b}, {d});
  g.add_op("v2", {a}, {c});
  g.add_op("v4", {c, d}, {y});
  return g;
}

}  // namespace memplan::testing
