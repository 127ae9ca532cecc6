#pragma once
// A graph where lower_bound_peak (201) is below the optimum (251) and the min-cut bound is tight.
// u allocates s (100) and orders v after it; v allocates a (150), read later by q, and orders z
// after it. w, independent of v, is the last reader of s and allocates t (100), read by z. While v
// runs, either w has not run (s live) or it has (t live, z comes later): every order holds a + 100
// there. lower_bound_peak sees a alone at v and s + t at w. The given order peaks at w (x, s, a, t: 351).
#include <memplan/graph/dataflow_graph.hpp>

namespace memplan::testing {

inline graph::dataflow_graph either_way_graph() {
  graph::dataflow_graph g("either-way");
  auto x = g.add_tensor("x", 1, tensor_kind::input);
  auto s = g.add_tensor("s", 100);
  auto c = g.add_tensor("c", 0);
  auto a = g.add_tensor("a", 150);
  auto t = g.add_tensor("t", 100);
  auto k = g.add_tensor("k", 0);
  auto e = g.add_tensor("e", 0);
  auto f = g.add_tensor("f", 0);
  auto y = g.add_tensor("y", 0, tensor_kind::output);
  g.add_op("u", {x}, {s, c});
  g.add_op("v", {x, c}, {a, k});
  g.add_op("w", {s}, {t});
  g.add_op("q", {a}, {e});
  g.add_op("z", {t, k}, {f});
  g.add_op("end", {e, f}, {y});
  return g;
}

}  // namespace memplan::testing
