#pragma once
// Random variants for the variants tests (core/variants.hpp, core/plan_variants.hpp): on about half
// the backward ops of a graph (of all its ops with backward_only = false), one input swapped for a
// tensor computed earlier in the given order (or resident), at the op's cost or a little more (a graph
// without costs: at none); in-place bases are kept. And relu6_block: a small graph with one variant that makes an op go.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <memplan/core/problem.hpp>
#include <memplan/core/problem_builder.hpp>

namespace memplan::testing {

inline problem with_random_variants(const problem& base, std::uint64_t seed, bool backward_only = true) {
  std::mt19937_64 rng(seed * 7919);
  auto pick = [&](std::int64_t n) { return std::uniform_int_distribution<std::int64_t>(0, n - 1)(rng); };
  bool costed = false;  // a graph without costs gets variants without costs (it counts reruns)
  for (op_id o = 0; o < base.num_ops(); ++o) costed |= base.cost(o) > 0;
  return with_ops(base, [&](const problem& g, op_id o, op_fields& f) {
    if ((backward_only && g.phase(o) != op_phase::backward) || g.inputs(o).empty() || pick(2) == 0) return;
    std::vector<tensor_id> earlier;
    for (tensor_id t = 0; t < g.num_tensors(); ++t)
      if ((g.producer(t) == no_id || g.producer(t) < o) && g.bytes(t) > 0) earlier.push_back(t);
    if (earlier.empty()) return;
    std::vector<std::string> ins;
    for (auto t : g.inputs(o)) ins.push_back(g.tensor_name(t));
    auto& slot = ins[static_cast<std::size_t>(pick(static_cast<std::int64_t>(ins.size())))];
    bool base_of_output = false;
    for (auto t : g.outputs(o))
      if (g.inplace_of(t) != no_id && g.tensor_name(g.inplace_of(t)) == slot) base_of_output = true;
    if (base_of_output) return;
    slot = g.tensor_name(earlier[static_cast<std::size_t>(pick(static_cast<std::int64_t>(earlier.size())))]);
    const bool slower = pick(3) == 0;
    f.impls.push_back(implementation{"v", slower && costed ? f.cost * 1.5 + 1 : f.cost, f.workspace, ins});
  });
}

// A ReLU6 block as PyTorch traces it: the backward of the in-place activation reads a clone of its
// input (c); the variant reads the activation's output y, which the layer after it saves anyway.
inline problem relu6_block(double variant_cost = 1.0, const char* variant_input = "y") {
  problem_builder b("relu6-block");
  auto t = [&](const char* n, std::int64_t bytes, tensor_kind k) { return b.add_tensor(n, bytes, k); };
  const auto x = t("x", 100, tensor_kind::input);
  const auto w = t("w", 10, tensor_kind::weight);
  const auto a = t("a", 100, tensor_kind::activation);
  const auto c = t("c", 100, tensor_kind::activation);
  const auto y = t("y", 100, tensor_kind::activation);
  b.set_inplace_of(y, a);
  const auto z = t("z", 100, tensor_kind::activation);
  const auto loss = t("loss", 1, tensor_kind::output);
  const auto gz = t("gz", 100, tensor_kind::gradient);
  const auto gy = t("gy", 100, tensor_kind::gradient);
  const auto gw = t("gw", 10, tensor_kind::gradient);
  const auto ga = t("ga", 100, tensor_kind::gradient);
  const auto gx = t("gx", 100, tensor_kind::output);
  b.add_op("bn", {x}, {a}, "bn", op_phase::forward, 1.0);
  b.add_op("clone", {a}, {c}, "clone", op_phase::forward, 0.5);
  b.add_op("relu6_", {a}, {y}, "hardtanh_", op_phase::forward, 1.0);
  b.add_op("conv", {y, w}, {z}, "conv", op_phase::forward, 4.0);
  b.add_op("loss", {z}, {loss}, "loss", op_phase::forward, 1.0);
  b.add_op("loss_bw", {loss}, {gz}, "loss_bw", op_phase::backward, 1.0);
  b.add_op("conv_bw", {gz, y, w}, {gy, gw}, "conv_bw", op_phase::backward, 8.0);
  b.add_op("relu6_bw", {gy, c}, {ga}, "hardtanh_backward", op_phase::backward, 1.0, 0,
           {implementation{"output_activated", variant_cost, 0, {"gy", variant_input}}});
  b.add_op("bn_bw", {ga}, {gx}, "bn_bw", op_phase::backward, 1.0);
  return b.build();
}

}  // namespace memplan::testing
