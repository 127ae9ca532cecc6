#pragma once
// Small graphs for the checkpointer tests: training-like chains with forward/backward structure (skip
// connections, in-place activations, multi-output ops, a non-recomputable dropout, workspaces, SGD
// updates in place on resident weights) and the budgets between the least peak any plan over the order
// reaches and the peak without recomputation.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <memplan/core/adapt.hpp>
#include <memplan/core/problem_builder.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/graph/dataflow_graph.hpp>

#include "../support/random_dag.hpp"

namespace memplan::testing {

struct training_options {
  int layers = 3;
  bool costs = true;         // false: every op costs 0 (checkpointers then count recomputes)
  bool updates = true;       // SGD updates in place on the weights
  double p_relu = 0.5;       // an in-place relu after a layer
  double p_dropout = 0.3;    // a dropout (not recomputable, two outputs: mask and value)
  double p_skip = 0.3;       // a layer also reads the activation two layers back
  double p_workspace = 0.3;
};

// x -> f1 -> h1 [-> relu_ in place] [-> dropout] -> f2 -> ... -> loss; then the backward ops in reverse,
// each reading the incoming gradient, the layer's input and weight (and the relu output, the dropout
// mask, the skip input when the layer has them), producing the weight gradient and the gradient of
// the input (two outputs); then w <- w - lr * dw in place.
inline graph::dataflow_graph training_chain(std::uint64_t seed, const training_options& o = {}) {
  std::mt19937_64 rng(seed);
  auto uni = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  auto coin = [&](double q) { return std::uniform_real_distribution<double>(0, 1)(rng) < q; };
  graph::dataflow_graph g(numbered("train-", static_cast<std::int64_t>(seed)));
  auto attrs = [&](const char* type, op_phase ph, double cost, bool recomputable = true) {
    graph::op_attributes a;
    a.type = type;
    a.phase = ph;
    a.cost = o.costs ? cost : 0.0;
    a.recomputable = recomputable;
    if (coin(o.p_workspace)) a.workspace = uni(1, 8) * 4;
    return a;
  };
  struct layer {
    graph::tensor_ref in, w, out;  // out: what the next layer reads
    std::vector<graph::tensor_ref> saved;  // what the backward op reads besides its input and weight
  };
  std::vector<layer> ls;
  auto x = g.add_tensor("x", uni(2, 8) * 4, tensor_kind::input);
  graph::tensor_ref cur = x;
  std::vector<graph::tensor_ref> acts{x};
  for (int l = 0; l < o.layers; ++l) {
    layer L;
    L.in = cur;
    L.w = g.add_tensor(numbered("w", l), uni(1, 4) * 4, tensor_kind::weight);
    auto h = g.add_tensor(numbered("h", l), uni(2, 12) * 4);
    std::vector<graph::tensor_ref> ins{cur, L.w};
    if (acts.size() >= 2 && coin(o.p_skip)) {
      ins.push_back(acts[acts.size() - 2]);
      L.saved.push_back(acts[acts.size() - 2]);
    }
    g.add_op(numbered("f", l), ins, {h}, attrs("linear", op_phase::forward, static_cast<double>(uni(2, 10))));
    cur = h;
    if (coin(o.p_relu)) {
      auto r = g.add_tensor(numbered("relu", l), g.tensor_bytes(h));
      g.add_op(numbered("relu_", l), {h}, {r}, attrs("relu_", op_phase::forward, 1.0));
      g.set_inplace_of(r, h);
      L.saved.push_back(r);  // relu's backward reads its output
      cur = r;
    }
    if (coin(o.p_dropout)) {
      auto mask = g.add_tensor(numbered("mask", l), uni(1, 3) * 4);
      auto d = g.add_tensor(numbered("drop", l), g.tensor_bytes(cur));
      g.add_op(numbered("dropout", l), {cur}, {d, mask}, attrs("dropout", op_phase::forward, 1.0, false));
      L.saved.push_back(mask);
      cur = d;
    }
    L.out = cur;
    acts.push_back(cur);
    ls.push_back(L);
  }
  auto loss = g.add_tensor("loss", 4, tensor_kind::output);
  auto grad = g.add_tensor("dloss", g.tensor_bytes(cur), tensor_kind::gradient);
  g.add_op("loss", {cur}, {loss, grad}, attrs("loss", op_phase::forward, 2.0));
  for (int l = o.layers - 1; l >= 0; --l) {
    const auto& L = ls[static_cast<std::size_t>(l)];
    auto dw = g.add_tensor(numbered("dw", l), g.tensor_bytes(L.w), tensor_kind::gradient);
    std::vector<graph::tensor_ref> ins{grad, L.in, L.w};
    for (auto s : L.saved)
      if (std::find(ins.begin(), ins.end(), s) == ins.end()) ins.push_back(s);
    std::vector<graph::tensor_ref> outs{dw};
    graph::tensor_ref dx = grad;
    if (l > 0) {
      dx = g.add_tensor(numbered("dx", l), g.tensor_bytes(L.in), tensor_kind::gradient);
      outs.push_back(dx);
    }
    g.add_op(numbered("b", l), ins, outs, attrs("linear_backward", op_phase::backward, static_cast<double>(uni(4, 20))));
    if (o.updates) {
      auto w2 = g.add_tensor(numbered("w_new", l), g.tensor_bytes(L.w), tensor_kind::weight);
      g.add_op(numbered("sgd", l), {L.w, dw}, {w2}, attrs("sgd_", op_phase::update, 1.0));
      g.set_inplace_of(w2, L.w);
    }
    grad = dx;
  }
  return g;
}

// A plain chain with its mirror backward, no costs (one unit per recompute), as in Chen et al. §4.
inline graph::dataflow_graph plain_chain(int n, std::int64_t bytes = 8) {
  graph::dataflow_graph g(numbered("chain-", n));
  auto x = g.add_tensor("x", bytes, tensor_kind::input);
  std::vector<graph::tensor_ref> a{x};
  for (int i = 0; i < n; ++i) {
    auto h = g.add_tensor(numbered("a", i), bytes);
    g.add_op(numbered("f", i), {a.back()}, {h}, {.type = "f", .phase = op_phase::forward});
    a.push_back(h);
  }
  auto gr = g.add_tensor("g", bytes, tensor_kind::gradient);
  g.add_op("loss", {a.back()}, {gr}, {.type = "loss", .phase = op_phase::forward});
  for (int i = n; i >= 1; --i) {
    auto gi = g.add_tensor(numbered("g", i - 1), bytes, i == 1 ? tensor_kind::output : tensor_kind::gradient);
    g.add_op(numbered("b", i - 1), {gr, a[static_cast<std::size_t>(i - 1)]}, {gi}, {.type = "b", .phase = op_phase::backward});
    gr = gi;
  }
  return g;
}

// Budgets to try between lo (least feasible) and hi (no recomputation), both included when lo < hi.
inline std::vector<std::int64_t> budget_sweep(std::int64_t lo, std::int64_t hi, int inner = 3) {
  std::vector<std::int64_t> b;
  if (lo >= hi) return b;
  b.push_back(lo);
  for (int k = 1; k <= inner; ++k) {
    const auto x = lo + (hi - lo) * k / (inner + 1);
    if (x > b.back() && x < hi) b.push_back(x);
  }
  if (hi - 1 > b.back()) b.push_back(hi - 1);
  return b;
}

// The problem with `alternatives` (1 to 3) implementations added to every op with a cost (MONeT Fig. 7 in
// small): "fast" (cheaper than the op's own, with a workspace of one to three times its outputs'
// bytes), "lean" (costlier, no workspace), "mid" (between). Integer costs, deterministic per seed.
inline problem with_implementations(const problem& p, std::uint64_t seed, int alternatives = 2) {
  std::mt19937_64 rng(seed);
  auto uni = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  return with_ops(p, [&](const problem& q, op_id o, op_fields& f) {
    std::int64_t out_bytes = 0;
    for (auto t : q.outputs(o)) out_bytes += q.bytes(t);
    const auto c = static_cast<std::int64_t>(q.cost(o));
    f.impls.clear();
    if (c > 0) {
      const auto fast = std::max<std::int64_t>(1, c * uni(4, 8) / 10);
      f.impls.push_back({"fast", static_cast<double>(fast), std::max<std::int64_t>(4, out_bytes) * uni(1, 3)});
      if (alternatives >= 2) f.impls.push_back({"lean", static_cast<double>(c + uni(1, 3)), 0});
      if (alternatives >= 3) f.impls.push_back({"mid", static_cast<double>((fast + c) / 2 + 1), std::max<std::int64_t>(4, out_bytes / 2)});
    }
  });
}

}  // namespace memplan::testing
