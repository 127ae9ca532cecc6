#pragma once
// The chains of Beaumont et al. as memplan graphs: F_1..F_L, F_i reads x_{i-1} and produces x_i;
// then B_L..B_1, B_i reads x_{i-1}, x_i and the gradient g_i, produces g_{i-1}. x_0 is the input;
// costs are seconds (the durations u_F, u_B).
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <memplan/graph/dataflow_graph.hpp>

namespace memplan::testing {

struct chain_spec {
  std::vector<std::int64_t> x;       // |x_0| .. |x_L|
  std::vector<std::int64_t> g;       // |g_0| .. |g_L| (g_L: the loss gradient B_L reads)
  std::vector<double> uf, ub;        // durations of F_1..F_L and B_1..B_L
};

inline graph::dataflow_graph offload_chain(const chain_spec& c, const std::string& name = "chain") {
  graph::dataflow_graph g(name);
  g.set_cost_unit("seconds");
  const auto L = c.uf.size();
  std::vector<graph::tensor_ref> x, gr(L + 1);
  x.push_back(g.add_tensor("x0", c.x[0], tensor_kind::input));
  for (std::size_t i = 1; i <= L; ++i) {
    x.push_back(g.add_tensor("x" + std::to_string(i), c.x[i]));
    g.add_op("F" + std::to_string(i), {x[i - 1]}, {x[i]}, {.type = "f", .phase = op_phase::forward, .cost = c.uf[i - 1]});
  }
  gr[L] = g.add_tensor("g" + std::to_string(L), c.g[L]);
  g.add_op("loss", {x[L]}, {gr[L]}, {.type = "loss", .phase = op_phase::forward, .cost = 0.0});
  for (std::size_t i = L; i >= 1; --i) {
    gr[i - 1] = g.add_tensor("g" + std::to_string(i - 1), c.g[i - 1], i == 1 ? tensor_kind::output : tensor_kind::gradient);
    g.add_op("B" + std::to_string(i), {x[i - 1], x[i], gr[i]}, {gr[i - 1]}, {.type = "b", .phase = op_phase::backward, .cost = c.ub[i - 1]});
  }
  return g;
}

inline chain_spec random_chain(std::uint64_t seed, std::size_t L) {
  std::mt19937_64 rng(seed);
  auto uni = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  chain_spec c;
  for (std::size_t i = 0; i <= L; ++i) {
    c.x.push_back(uni(1, 20) * 8);
    c.g.push_back(uni(1, 6) * 8);
  }
  for (std::size_t i = 0; i < L; ++i) {
    c.uf.push_back(static_cast<double>(uni(1, 10)));
    c.ub.push_back(static_cast<double>(uni(1, 20)));
  }
  return c;
}

}  // namespace memplan::testing
