#pragma once
// Random graphs shaped like training steps, for the property tests at volume: a forward pass of
// layers (weights, skip connections, multi-output ops that save masks, in-place chains such as
// relu_ after a layer, zero-byte tensors, workspaces), a loss, a backward pass that reads the saved
// activations and produces activation and weight gradients, and optimizer updates written in place
// into weights and optimizer state (some right after their gradient, some at the end), plus control
// edges from earlier to later ops. Optionally tensors near memplan's limits (2^61 - 1 bytes per
// tensor, 2^62 - 1 per graph). The given order
// (forward, loss, backward, updates) always runs. Deterministic per seed; built straight into a
// memplan::problem.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <memplan/core/problem.hpp>
#include <memplan/core/problem_builder.hpp>

namespace memplan::testing {

struct training_dag_options {
  int min_layers = 1, max_layers = 8;
  std::int64_t max_bytes = 4096;
  double p_huge = 0.05;       // the input is near 2^61 bytes, maybe a mask near 2^60
  double p_zero = 0.08;       // an activation or gradient has 0 bytes
  double p_skip = 0.25;       // a layer also reads an earlier activation
  double p_inplace = 0.3;     // a layer is followed by an in-place op (a chain of 1-3 in-place writes)
  double p_mask = 0.3;        // a layer also outputs a saved mask (multi-output)
  double p_workspace = 0.2;
  double p_control = 0.15;    // a control edge between two ops
  double p_momentum = 0.4;    // a weight has optimizer state updated in place
  double p_early_update = 0.5;
  // An in-place write that cannot run again (bernoulli_ filling a dropout mask): the rest of its
  // chain derives from a value no rerun gives back. 0 (the default) draws nothing, so the graphs of
  // every seed stay as they were.
  double p_random_inplace = 0.0;
};

inline std::string numbered_name(const char* prefix, std::int64_t i, std::int64_t k = -1) {
  std::string s(prefix);
  s.append(std::to_string(i));
  if (k >= 0) s.append("_").append(std::to_string(k));
  return s;
}

inline problem training_dag(std::uint64_t seed, const training_dag_options& o = {}) {
  std::mt19937_64 rng(seed);
  auto uni = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  auto coin = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  problem_builder b(numbered_name("training-", static_cast<std::int64_t>(seed)));
  // memplan's limits: a tensor of at most 2^61 - 1 bytes, a graph of at most 2^62 - 1 (in-place
  // tensors count again). A huge graph has its input just below 2^61 and maybe a saved mask near 2^60.
  const bool huge = coin(o.p_huge);
  auto size = [&](bool may_be_zero) -> std::int64_t {
    if (may_be_zero && coin(o.p_zero)) return 0;
    return uni(1, o.max_bytes);
  };
  auto huge_size = [&](int shift) { return (std::int64_t{1} << shift) - 1 - uni(0, 1 << 20); };
  struct layer {
    tensor_id in, out, mask = no_id, weight, weight_grad = no_id;
    tensor_id state = no_id;
  };
  std::vector<layer> layers;
  std::vector<op_id> ops;
  std::vector<std::int64_t> bytes_of;  // per tensor id
  auto tensor = [&](std::string name, std::int64_t bytes, tensor_kind kind) {
    bytes_of.push_back(bytes);
    return b.add_tensor(std::move(name), bytes, kind);
  };
  // An in-place write: a new tensor in the storage of `base`, of the same size.
  auto inplace = [&](std::string name, tensor_id base, tensor_kind kind) {
    const auto t = tensor(std::move(name), bytes_of[static_cast<std::size_t>(base)], kind);
    b.set_inplace_of(t, base);
    return t;
  };
  auto op = [&](std::string name, std::vector<tensor_id> ins, std::vector<tensor_id> outs, op_phase ph, bool recomputable = true) {
    const auto ws = coin(o.p_workspace) ? uni(1, o.max_bytes) : 0;
    ops.push_back(b.add_op(std::move(name), std::move(ins), std::move(outs), "layer", ph, static_cast<double>(uni(1, 100)), ws, {},
                           recomputable));
    return ops.back();
  };
  std::vector<std::pair<op_id, tensor_id>> controls;  // control tensors produced so far (op, tensor)
  auto maybe_control_out = [&](std::vector<tensor_id>& outs, std::int64_t i) {
    if (!coin(o.p_control)) return;
    const auto c = tensor(numbered_name("ctl", i, static_cast<std::int64_t>(controls.size())), 0, tensor_kind::control);
    outs.push_back(c);
    controls.push_back({static_cast<op_id>(ops.size()), c});
  };
  auto maybe_control_in = [&](std::vector<tensor_id>& ins) {
    if (controls.empty() || !coin(0.5)) return;
    ins.push_back(controls[static_cast<std::size_t>(uni(0, static_cast<std::int64_t>(controls.size()) - 1))].second);
  };

  const auto x = tensor("x", huge ? huge_size(61) : size(false), tensor_kind::input);
  bool huge_mask = huge && coin(0.5);
  const auto labels = tensor("labels", uni(1, 64), tensor_kind::input);
  const auto n = static_cast<int>(uni(o.min_layers, o.max_layers));
  tensor_id cur = x;
  std::vector<tensor_id> acts{x};
  for (int i = 0; i < n; ++i) {
    layer L;
    L.in = cur;
    L.weight = tensor(numbered_name("w", i), size(false), tensor_kind::weight);
    std::vector<tensor_id> ins{cur, L.weight};
    if (acts.size() > 1 && coin(o.p_skip)) {
      const auto skip = acts[static_cast<std::size_t>(uni(0, static_cast<std::int64_t>(acts.size()) - 2))];
      if (skip != cur) ins.push_back(skip);
    }
    maybe_control_in(ins);
    L.out = tensor(numbered_name("a", i), size(true), tensor_kind::activation);
    std::vector<tensor_id> outs{L.out};
    if (coin(o.p_mask)) {
      L.mask = tensor(numbered_name("mask", i), huge_mask ? huge_size(60) : size(true), tensor_kind::activation);
      huge_mask = false;
      outs.push_back(L.mask);
    }
    maybe_control_out(outs, i);
    op(numbered_name("fwd", i), ins, outs, op_phase::forward);
    cur = L.out;
    if (coin(o.p_inplace)) {
      // relu_ and friends: each writes a new tensor into the same storage; the old value is gone.
      const auto chain = uni(1, 3);
      for (std::int64_t k = 0; k < chain; ++k) {
        const auto next = inplace(numbered_name("a", i, k), cur, tensor_kind::activation);
        const bool random = o.p_random_inplace > 0 && coin(o.p_random_inplace);
        op(numbered_name("inplace", i, k), {cur}, {next}, op_phase::forward, !random);
        cur = next;
      }
    }
    L.out = cur;
    acts.push_back(cur);
    layers.push_back(L);
  }
  std::vector<tensor_id> outs{tensor("loss", uni(1, 16), tensor_kind::output)};
  maybe_control_out(outs, n);
  std::vector<tensor_id> loss_ins{cur, labels};
  op("loss", loss_ins, outs, op_phase::forward);
  tensor_id grad = tensor("g_out", size(true), tensor_kind::gradient);
  {
    std::vector<tensor_id> ins{cur, labels};
    maybe_control_in(ins);
    op("loss_bw", ins, {grad}, op_phase::backward);
  }
  std::vector<std::size_t> late_updates;
  auto update = [&](std::size_t i) {
    auto& L = layers[i];
    std::vector<tensor_id> ins{L.weight, L.weight_grad};
    if (coin(o.p_momentum)) {
      const auto m = tensor(numbered_name("m", static_cast<std::int64_t>(i)), std::min(bytes_of[static_cast<std::size_t>(L.weight)], o.max_bytes),
                            tensor_kind::optimizer_state);
      L.state = m;
      const auto m2 = inplace(numbered_name("m_new", static_cast<std::int64_t>(i)), m, tensor_kind::optimizer_state);
      op(numbered_name("momentum", static_cast<std::int64_t>(i)), {m, L.weight_grad}, {m2}, op_phase::update);
      ins.push_back(m2);
    }
    const auto w2 = inplace(numbered_name("w_new", static_cast<std::int64_t>(i)), L.weight, tensor_kind::weight);
    op(numbered_name("sgd", static_cast<std::int64_t>(i)), ins, {w2}, op_phase::update);
  };
  for (auto i = static_cast<std::ptrdiff_t>(layers.size()) - 1; i >= 0; --i) {
    auto& L = layers[static_cast<std::size_t>(i)];
    std::vector<tensor_id> ins{grad, L.in, L.weight};
    if (L.mask != no_id) ins.push_back(L.mask);
    maybe_control_in(ins);
    const auto g_in = tensor(numbered_name("g_a", i), size(true), tensor_kind::gradient);
    L.weight_grad = tensor(numbered_name("g_w", i), size(true), tensor_kind::gradient);
    std::vector<tensor_id> bw_outs{g_in, L.weight_grad};
    maybe_control_out(bw_outs, 1000 + i);
    op(numbered_name("bwd", i), ins, bw_outs, op_phase::backward);
    grad = g_in;
    if (coin(o.p_early_update)) update(static_cast<std::size_t>(i));
    else late_updates.push_back(static_cast<std::size_t>(i));
  }
  for (auto i : late_updates) update(i);
  return b.build();
}

}  // namespace memplan::testing
