#pragma once
// zoo::random_dag -- seeded random layered DAGs: `layers` layers of `width` ops; an op of layer l >= 1
// reads the outputs of `fan_in` distinct ops of layer l - 1, each replaced with probability
// `skip_probability` by an op of an earlier layer (long-lived skip connections); layer 0 reads the
// input. Output sizes are log-uniform in [min_bytes, max_bytes] (multiples of 4). As a training graph
// (the default) every op also owns a weight (output bytes / weight_ratio) and the sinks feed one loss;
// backward, gradient accumulation and updates come from zoo::training_builder. Without training it is
// a plain forward DAG whose sinks are outputs.
// The generator is splitmix64 with integer arithmetic only: the same seed gives the same graph on
// every platform and standard library.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/graph/dataflow_graph.hpp>
#include <zoo/training.hpp>

namespace memplan::zoo {

struct random_dag_config {
  std::int64_t layers = 8;
  std::int64_t width = 4;
  std::int64_t fan_in = 2;
  double skip_probability = 0.1;
  std::int64_t min_bytes = std::int64_t{1} << 10;
  std::int64_t max_bytes = std::int64_t{1} << 20;
  std::int64_t weight_ratio = 16;
  bool training = true;
  std::uint64_t seed = 1;
};

class splitmix64 {
 public:
  explicit splitmix64(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) (n > 0), by rejection: no modulo bias.
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % n);
    for (;;) {
      const auto v = next();
      if (v < limit) return v % n;
    }
  }
  // Bernoulli(p) with p resolved to 1/2^20.
  bool chance(double p) { return below(std::uint64_t{1} << 20) < static_cast<std::uint64_t>(p * static_cast<double>(1 << 20)); }
  // Log-uniform integer in [lo, hi] rounded down to a multiple of 4 (at least 4): 2^k steps of
  // 1/256 octave, computed from integers.
  std::int64_t log_uniform_bytes(std::int64_t lo, std::int64_t hi) {
    const auto r = static_cast<double>(below(std::uint64_t{1} << 20)) / static_cast<double>(1 << 20);
    const auto v = static_cast<std::int64_t>(std::floor(static_cast<double>(lo) * std::pow(static_cast<double>(hi) / static_cast<double>(lo), r)));
    const auto c = std::max(lo, std::min(hi, v));
    return std::max<std::int64_t>(4, c / 4 * 4);
  }

 private:
  std::uint64_t s_;
};

inline graph::dataflow_graph random_dag(const random_dag_config& c) {
  if (c.layers < 1 || c.width < 1 || c.fan_in < 1 || c.min_bytes < 4 || c.max_bytes < c.min_bytes || c.weight_ratio < 1 ||
      !(c.skip_probability >= 0 && c.skip_probability <= 1))
    throw error(errc::invalid_argument, "zoo::random_dag: need layers, width, fan_in >= 1, 4 <= min_bytes <= max_bytes, "
                                        "weight_ratio >= 1, 0 <= skip_probability <= 1");
  splitmix64 rng(c.seed);
  const auto name = std::string("random-dag-l").append(std::to_string(c.layers)) + std::string("-w").append(std::to_string(c.width)) + "-f" +
                    std::to_string(c.fan_in) + std::string("-s").append(std::to_string(c.seed)) + (c.training ? "-train" : "");
  // Draw the structure first: sources and sizes per node, layer by layer.
  struct node { std::vector<std::int64_t> srcs; std::int64_t bytes; };
  std::vector<node> nodes;
  const auto input_bytes = rng.log_uniform_bytes(c.min_bytes, c.max_bytes);
  for (std::int64_t l = 0; l < c.layers; ++l)
    for (std::int64_t w = 0; w < c.width; ++w) {
      node n;
      n.bytes = rng.log_uniform_bytes(c.min_bytes, c.max_bytes);
      if (l > 0) {
        const auto k = std::min(c.fan_in, c.width);
        while (static_cast<std::int64_t>(n.srcs.size()) < k) {
          std::int64_t src = (l - 1) * c.width + static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(c.width)));
          if (l > 1 && rng.chance(c.skip_probability))
            src = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>((l - 1) * c.width)));
          bool dup = false;
          for (auto s : n.srcs) dup = dup || s == src;
          if (!dup) n.srcs.push_back(src);
        }
      }
      nodes.push_back(std::move(n));
    }
  std::vector<bool> consumed(nodes.size(), false);
  for (const auto& n : nodes)
    for (auto s : n.srcs) consumed[static_cast<std::size_t>(s)] = true;
  auto op_name = [&](std::size_t i) {
    return std::string("n").append(std::to_string(static_cast<std::int64_t>(i) / c.width)) + std::string("_").append(std::to_string(static_cast<std::int64_t>(i) % c.width));
  };
  auto flops_of = [](std::int64_t out_bytes, std::size_t ins) {
    return 2.0 * static_cast<double>(out_bytes / float32_bytes) * static_cast<double>(ins);
  };
  if (!c.training) {
    graph::dataflow_graph g(name);
    auto x = g.add_tensor("input", input_bytes, tensor_kind::input);
    std::vector<graph::tensor_ref> out;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      auto t = g.add_tensor(op_name(i) + ".out", nodes[i].bytes, consumed[i] ? tensor_kind::activation : tensor_kind::output);
      std::vector<graph::tensor_ref> ins;
      if (nodes[i].srcs.empty()) ins.push_back(x);
      for (auto s : nodes[i].srcs) ins.push_back(out[static_cast<std::size_t>(s)]);
      g.add_op(op_name(i), ins, {t}, {"random", op_phase::forward, flops_of(nodes[i].bytes, ins.size()), 0});
      out.push_back(t);
    }
    return g;
  }
  training_builder b(name);
  auto x = b.input("input", {input_bytes / float32_bytes});
  std::vector<graph::tensor_ref> out;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const auto n = op_name(i);
    auto w = b.weight(n + ".weight", {std::max<std::int64_t>(1, nodes[i].bytes / float32_bytes / c.weight_ratio)});
    std::vector<graph::tensor_ref> ins;
    if (nodes[i].srcs.empty()) ins.push_back(x);
    for (auto s : nodes[i].srcs) ins.push_back(out[static_cast<std::size_t>(s)]);
    ins.push_back(w);
    std::vector<std::size_t> saved;
    for (std::size_t k = 0; k < ins.size(); ++k) saved.push_back(k);
    out.push_back(b.forward({.name = n, .type = "random", .inputs = ins, .outputs = {{n + ".out", {nodes[i].bytes / float32_bytes}}},
                             .save_inputs = saved, .save_outputs = {}, .passthrough = {},
                             .flops = flops_of(nodes[i].bytes, ins.size()), .backward_flops = -1, .workspace = 0,
                             .backward_workspace = 0, .backward_type = "random_backward"})[0]);
  }
  std::vector<graph::tensor_ref> sinks;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    if (!consumed[i]) sinks.push_back(out[i]);
  std::vector<std::size_t> saved;
  for (std::size_t k = 0; k < sinks.size(); ++k) saved.push_back(k);
  auto loss = b.forward({.name = "loss", .type = "loss", .inputs = sinks, .outputs = {{"loss.out", {}}}, .save_inputs = saved,
                         .save_outputs = {}, .passthrough = {}, .flops = 0, .backward_flops = 0, .workspace = 0,
                         .backward_workspace = 0, .backward_type = "loss_backward"})[0];
  return b.finish(loss);
}

}  // namespace memplan::zoo
