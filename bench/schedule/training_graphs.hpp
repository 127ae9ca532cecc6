#pragma once
// Training-like graphs for the scheduling benchmark (and tests): a forward chain of blocks with
// residual connections and parallel branches (CNN / inception-like), its backward mirror, and
// in-place SGD-with-momentum weight updates. Activations scale with the batch, weights do not.
// The given order is the framework's: all of forward, all of backward (weight gradients kept),
// then every update (optimizer.step()) -- the order OLLA §4.3's early updates improve on.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <memplan/graph/dataflow_graph.hpp>

namespace memplan::bench {

struct training_graph_options {
  std::string name = "resnet-like";
  int blocks = 16;              // forward blocks
  int branches = 1;             // parallel branches per block (>1: inception-like, merged by concat)
  int residual_every = 2;       // a skip connection every k blocks (0: none)
  std::int64_t batch = 1;
  std::int64_t act_bytes = 1 << 16;    // per sample, first block; shrinks with depth
  std::int64_t weight_bytes = 1 << 14; // first block; grows with depth
  bool inplace_relu = true;
  bool workspace = true;
};

inline graph::dataflow_graph training_graph(const training_graph_options& o) {
  using graph::tensor_ref;
  using graph::op_ref;
  graph::dataflow_graph g(o.name + "-b" + std::to_string(o.batch));
  auto attrs = [&](const char* type, op_phase ph, std::int64_t ws) {
    graph::op_attributes a;
    a.type = type;
    a.phase = ph;
    a.cost = 1.0;
    a.workspace = o.workspace ? ws : 0;
    return a;
  };
  struct layer { tensor_ref in, w, mom, pre, out; int branch_of = -1; };
  std::vector<layer> layers;  // every weighted layer (branches included)
  auto act = [&](int b) {
    const int stage = std::min(b * 4 / std::max(o.blocks, 1), 3);
    return o.batch * std::max<std::int64_t>(o.act_bytes >> stage, 64);
  };
  auto wbytes = [&](int b) {
    const int stage = std::min(b * 4 / std::max(o.blocks, 1), 3);
    return o.weight_bytes << stage;
  };
  auto x = g.add_tensor("x", o.batch * o.act_bytes / 4, tensor_kind::input);
  tensor_ref h = x;
  std::vector<tensor_ref> block_out{h};
  // ---- forward ----
  std::vector<std::vector<std::size_t>> block_layers(static_cast<std::size_t>(o.blocks));
  std::vector<tensor_ref> block_in(static_cast<std::size_t>(o.blocks));
  std::vector<tensor_ref> concat_out(static_cast<std::size_t>(o.blocks));
  std::vector<int> skip_from(static_cast<std::size_t>(o.blocks), -1);
  std::vector<tensor_ref> merged(static_cast<std::size_t>(o.blocks));
  for (int b = 0; b < o.blocks; ++b) {
    const auto B = static_cast<std::size_t>(b);
    block_in[B] = h;
    std::vector<tensor_ref> outs;
    for (int k = 0; k < o.branches; ++k) {
      const std::string id = std::to_string(b) + "_" + std::to_string(k);
      const auto bytes = o.branches > 1 ? act(b) / o.branches : act(b);
      layer L;
      L.in = h;
      L.w = g.add_tensor("W" + id, wbytes(b), tensor_kind::weight);
      L.mom = g.add_tensor("M" + id, wbytes(b), tensor_kind::optimizer_state);
      L.pre = g.add_tensor("conv" + id, bytes);
      g.add_op("fwd_conv" + id, {h, L.w}, {L.pre}, attrs("conv", op_phase::forward, bytes / 2));
      L.out = g.add_tensor("relu" + id, bytes);
      g.add_op("fwd_relu" + id, {L.pre}, {L.out}, attrs("relu", op_phase::forward, 0));
      if (o.inplace_relu) g.set_inplace_of(L.out, L.pre);
      L.branch_of = b;
      block_layers[B].push_back(layers.size());
      layers.push_back(L);
      outs.push_back(L.out);
    }
    tensor_ref y = outs[0];
    if (o.branches > 1) {
      y = g.add_tensor("cat" + std::to_string(b), act(b));
      g.add_op("fwd_cat" + std::to_string(b), outs, {y}, attrs("cat", op_phase::forward, 0));
    }
    concat_out[B] = y;
    if (o.residual_every > 0 && b >= o.residual_every && b % o.residual_every == 0 && act(b) == act(b - o.residual_every)) {
      skip_from[B] = b - o.residual_every;
      auto s = g.add_tensor("res" + std::to_string(b), act(b));
      g.add_op("fwd_add" + std::to_string(b), {y, block_out[static_cast<std::size_t>(b - o.residual_every + 1)]}, {s},
               attrs("add", op_phase::forward, 0));
      y = s;
    }
    merged[B] = y;
    block_out.push_back(y);
    h = y;
  }
  auto loss = g.add_tensor("loss", 4, tensor_kind::output);
  g.add_op("loss", {h}, {loss}, attrs("loss", op_phase::forward, 0));
  auto gh = g.add_tensor("d_out", act(o.blocks - 1), tensor_kind::gradient);
  g.add_op("bwd_loss", {loss, h}, {gh}, attrs("loss_bwd", op_phase::backward, 0));
  // ---- backward: the gradient of every block output, accumulated over its consumers ----
  std::vector<std::vector<tensor_ref>> grad_parts(static_cast<std::size_t>(o.blocks + 1));
  grad_parts[static_cast<std::size_t>(o.blocks)].push_back(gh);
  std::vector<std::pair<tensor_ref, tensor_ref>> updates;  // (dW, layer index as tensor W) pairs
  std::vector<std::size_t> update_layer;
  auto grad_of = [&](int idx) {  // the (summed) gradient of block_out[idx]
    auto& parts = grad_parts[static_cast<std::size_t>(idx)];
    if (parts.size() == 1) return parts[0];
    auto s = g.add_tensor("d_sum" + std::to_string(idx), g.tensor_bytes(parts[0]), tensor_kind::gradient);
    g.add_op("bwd_sum" + std::to_string(idx), parts, {s}, attrs("add", op_phase::backward, 0));
    return s;
  };
  for (int b = o.blocks - 1; b >= 0; --b) {
    const auto B = static_cast<std::size_t>(b);
    auto gy = grad_of(b + 1);
    if (skip_from[B] >= 0) grad_parts[static_cast<std::size_t>(skip_from[B] + 1)].push_back(gy);  // add: gradient flows to both
    std::vector<tensor_ref> gins;
    for (std::size_t k = 0; k < block_layers[B].size(); ++k) {
      const auto li = block_layers[B][k];
      auto& L = layers[li];
      const std::string id = std::to_string(b) + "_" + std::to_string(k);
      tensor_ref gout = gy;
      if (o.branches > 1) {
        gout = g.add_tensor("d_split" + id, g.tensor_bytes(L.out), tensor_kind::gradient);
        g.add_op("bwd_split" + id, {gy}, {gout}, attrs("slice", op_phase::backward, 0));
      }
      auto gpre = g.add_tensor("d_conv" + id, g.tensor_bytes(L.pre), tensor_kind::gradient);
      g.add_op("bwd_relu" + id, {gout, L.out}, {gpre}, attrs("relu_bwd", op_phase::backward, 0));
      auto dW = g.add_tensor("dW" + id, g.tensor_bytes(L.w), tensor_kind::gradient);
      g.add_op("bwd_wgrad" + id, {gpre, L.in}, {dW}, attrs("conv_wgrad", op_phase::backward, g.tensor_bytes(L.pre) / 2));
      if (b > 0 || L.in != x) {
        auto gin = g.add_tensor("d_in" + id, g.tensor_bytes(L.in), tensor_kind::gradient);
        g.add_op("bwd_dgrad" + id, {gpre, L.w}, {gin}, attrs("conv_dgrad", op_phase::backward, g.tensor_bytes(L.pre) / 2));
        gins.push_back(gin);
      }
      updates.push_back({dW, L.w});
      update_layer.push_back(li);
    }
    for (auto t : gins) grad_parts[B].push_back(t);
  }
  // ---- optimizer.step(): SGD with momentum, in place ----
  for (std::size_t u = 0; u < updates.size(); ++u) {
    const auto& L = layers[update_layer[u]];
    const auto nm = g.tensor_name(L.w).value_or("W");
    auto m2 = g.add_tensor(nm + "_mom'", g.tensor_bytes(L.mom), tensor_kind::optimizer_state);
    auto w2 = g.add_tensor(nm + "'", g.tensor_bytes(L.w), tensor_kind::weight);
    graph::op_attributes a = attrs("sgd_momentum_", op_phase::update, 0);
    g.add_op("update_" + nm, {updates[u].first, L.mom, L.w}, {m2, w2}, a);
    g.set_inplace_of(m2, L.mom);
    g.set_inplace_of(w2, L.w);
  }
  return g;
}

// The model graphs of the benchmark.
inline std::vector<training_graph_options> benchmark_models() {
  std::vector<training_graph_options> m;
  m.push_back({"mlp", 8, 1, 0, 1, 1 << 14, 1 << 16, false, false});
  m.push_back({"resnet-like", 24, 1, 2, 1, 1 << 16, 1 << 13, true, true});
  m.push_back({"inception-like", 12, 3, 3, 1, 1 << 16, 1 << 13, true, true});
  m.push_back({"deep-resnet", 64, 1, 2, 1, 1 << 15, 1 << 12, true, true});
  return m;
}

}  // namespace memplan::bench
