#pragma once
// Random dataflow graphs for property tests: layered DAGs with multi-output ops, tensors with many
// consumers, resident weights, in-place updates, control edges and workspaces. Deterministic per seed.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <memplan/graph/dataflow_graph.hpp>

namespace memplan::testing {

struct random_dag_options {
  int ops = 8;
  int max_inputs = 3;
  int max_outputs = 2;
  std::int64_t max_bytes = 64;
  double p_weight = 0.2;      // an op also reads a fresh resident weight
  double p_inplace = 0.1;     // an op writes one output in place into one of its inputs' storages
  double p_control = 0.05;    // a control edge to a later op
  double p_workspace = 0.2;
  double p_output = 0.1;      // a produced tensor is a graph output
};

// "prefix<i>" or "prefix<i>_<k>", built by appending: g++ 12 at -O3 warns falsely (-Wrestrict,
// GCC bug 105329) on `"literal" + std::string`.
inline std::string numbered(const char* prefix, std::int64_t i, std::int64_t k = -1) {
  std::string s(prefix);
  s.append(std::to_string(i));
  if (k >= 0) s.append("_").append(std::to_string(k));
  return s;
}

inline graph::dataflow_graph random_dag(std::uint64_t seed, const random_dag_options& o = {}) {
  std::mt19937_64 rng(seed);
  auto uni = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  auto coin = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  graph::dataflow_graph g(numbered("random-", static_cast<std::int64_t>(seed)));
  std::vector<graph::tensor_ref> avail;  // tensors produced so far (candidates for inputs)
  std::vector<bool> inplace_taken;       // a tensor already overwritten in place may not be again
  auto x = g.add_tensor("x", uni(1, o.max_bytes), tensor_kind::input);
  avail.push_back(x);
  inplace_taken.push_back(true);  // never overwrite the graph input
  std::vector<graph::op_ref> ops;
  for (int i = 0; i < o.ops; ++i) {
    std::vector<graph::tensor_ref> ins;
    const auto nin = uni(1, o.max_inputs);
    for (std::int64_t k = 0; k < nin; ++k) {
      // Prefer recent tensors so the graph is deep, but reach back sometimes.
      const auto n = static_cast<std::int64_t>(avail.size());
      const auto j = coin(0.7) ? uni(std::max<std::int64_t>(0, n - 3), n - 1) : uni(0, n - 1);
      auto t = avail[static_cast<std::size_t>(j)];
      bool dup = false;
      for (auto u : ins) dup |= (u == t);
      if (!dup) ins.push_back(t);
    }
    if (coin(o.p_weight)) ins.push_back(g.add_tensor(numbered("w", i), uni(1, o.max_bytes), tensor_kind::weight));
    std::vector<graph::tensor_ref> outs;
    const auto nout = uni(1, o.max_outputs);
    for (std::int64_t k = 0; k < nout; ++k) {
      // Two draws, sequenced: as arguments of one call their order would be unspecified, and g++ and
      // clang built different DAGs from one seed. This is the order g++ used (right to left).
      const auto kind = coin(o.p_output) ? tensor_kind::output : tensor_kind::activation;
      const auto bytes = uni(0, o.max_bytes);
      outs.push_back(g.add_tensor(numbered("t", i, k), bytes, kind));
    }
    graph::op_attributes attrs;
    attrs.type = "rand";
    attrs.cost = static_cast<double>(uni(1, 100));
    if (coin(o.p_workspace)) attrs.workspace = uni(1, o.max_bytes);
    auto op = g.add_op(numbered("v", i), ins, outs, attrs);
    ops.push_back(op);
    if (coin(o.p_inplace)) {
      // outs[0] overwrites the storage of an activation input that was not overwritten before.
      for (auto t : ins) {
        if (static_cast<std::size_t>(t.index) >= inplace_taken.size() || inplace_taken[static_cast<std::size_t>(t.index)]) continue;
        if (g.tensor_kind_of(t) != tensor_kind::activation || g.tensor_kind_of(outs[0]) != tensor_kind::activation) continue;
        g.set_inplace_of(outs[0], t);
        inplace_taken[static_cast<std::size_t>(t.index)] = true;
        // The overwritten value is gone: later ops may not read it.
        avail.erase(std::find(avail.begin(), avail.end(), t));
        break;
      }
    }
    for (auto t : outs) {
      avail.push_back(t);
      if (inplace_taken.size() <= static_cast<std::size_t>(t.index)) inplace_taken.resize(static_cast<std::size_t>(t.index) + 1, false);
    }
    if (i >= 2 && coin(o.p_control)) g.add_control_edge(ops[static_cast<std::size_t>(uni(0, i - 2))], op);
  }
  return g;
}

}  // namespace memplan::testing
