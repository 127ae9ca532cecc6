#pragma once
// zoo::lstm -- the training step of a stacked LSTM unrolled over time, Chen et al. 2016 §5.3: 4 layers,
// hidden 1024, batch 64, a 50-dimensional input per time step, a softmax over 5000 classes at every
// step; 64 or more steps.
//
// Per layer l and step t (PyTorch's LSTMCell on CUDA):
//   gates  = aten.addmm(b_ih, x_t, W_ih^T)           [B, 4H]
//   gates' = aten.addmm(gates, h_{t-1}, W_hh^T)      [B, 4H]  (gates passes its gradient through)
//   h_t, c_t, workspace = aten._thnn_fused_lstm_cell(gates', c_{t-1})
// and per step the output layer fc (shared) + cross entropy; the per-step losses are summed.
// Weights are shared over time, so their gradients accumulate in place into one buffer (Chen §5.3:
// "direct addition of weight gradient to a single memory cell"). h_0 and c_0 are zero inputs.
#include <cstdint>
#include <string>
#include <vector>

#include <memplan/base/error.hpp>
#include <zoo/layers.hpp>

namespace memplan::zoo {

struct lstm_config {
  std::int64_t layers = 4;
  std::int64_t hidden = 1024;
  std::int64_t batch = 64;
  std::int64_t input = 50;
  std::int64_t classes = 5000;
  std::int64_t steps = 64;
};

inline graph::dataflow_graph lstm(const lstm_config& c) {
  if (c.layers < 1 || c.hidden < 1 || c.batch < 1 || c.input < 1 || c.classes < 1 || c.steps < 1)
    throw error(errc::invalid_argument, "zoo::lstm: every dimension must be positive");
  training_builder b(std::string("lstm").append(std::to_string(c.layers)) + std::string("x").append(std::to_string(c.hidden)) + std::string("-t").append(std::to_string(c.steps)) +
                     std::string("-train-b").append(std::to_string(c.batch)));
  const auto B = c.batch, H = c.hidden;
  struct layer_weights { tensor_ref w_ih, w_hh, b_ih; };
  std::vector<layer_weights> lw;
  for (std::int64_t l = 0; l < c.layers; ++l) {
    const auto n = std::string("lstm").append(std::to_string(l));
    const auto in = l == 0 ? c.input : H;
    lw.push_back({b.weight(n + ".weight_ih", {4 * H, in}), b.weight(n + ".weight_hh", {4 * H, H}),
                  b.weight(n + ".bias", {4 * H})});
  }
  auto fc_w = b.weight("fc.weight", {c.classes, H});
  auto fc_b = b.weight("fc.bias", {c.classes});
  std::vector<tensor_ref> h, cell;
  for (std::int64_t l = 0; l < c.layers; ++l) {
    h.push_back(b.input(std::string("h0.").append(std::to_string(l)), {B, H}));
    cell.push_back(b.input(std::string("c0.").append(std::to_string(l)), {B, H}));
  }
  std::vector<tensor_ref> losses;
  const double pointwise = 10.0 * static_cast<double>(B * 4 * H);
  for (std::int64_t t = 0; t < c.steps; ++t) {
    const auto ts = std::to_string(t);
    auto x = b.input("x." + ts, {B, c.input});
    for (std::int64_t l = 0; l < c.layers; ++l) {
      const auto n = "t" + ts + std::string(".l").append(std::to_string(l));
      const auto& w = lw[static_cast<std::size_t>(l)];
      const auto in = l == 0 ? c.input : H;
      const double mm_ih = 2.0 * static_cast<double>(B * in) * static_cast<double>(4 * H);
      auto gates = b.forward({.name = n + ".ih", .type = "aten.addmm", .inputs = {w.b_ih, x, w.w_ih},
                              .outputs = {{n + ".ih.out", {B, 4 * H}}}, .save_inputs = {1, 2}, .save_outputs = {},
                              .passthrough = {}, .flops = mm_ih, .backward_flops = 2.0 * mm_ih, .workspace = 0,
                              .backward_workspace = 0, .backward_type = "aten.addmm_backward"})[0];
      gates = addmm_into(b, n + ".hh", gates, h[static_cast<std::size_t>(l)], w.w_hh);
      auto outs = b.forward({.name = n + ".cell", .type = "aten._thnn_fused_lstm_cell",
                             .inputs = {gates, cell[static_cast<std::size_t>(l)]},
                             .outputs = {{n + ".h", {B, H}}, {n + ".c", {B, H}},
                                         {n + ".workspace", {B, 4 * H}, float32_bytes, false}},
                             .save_inputs = {1}, .save_outputs = {1, 2}, .passthrough = {}, .flops = pointwise,
                             .backward_flops = 2.0 * pointwise, .workspace = 0, .backward_workspace = 0,
                             .backward_type = "aten._thnn_fused_lstm_cell_backward"});
      h[static_cast<std::size_t>(l)] = outs[0];
      cell[static_cast<std::size_t>(l)] = outs[1];
      x = outs[0];
    }
    const auto n = "t" + ts + ".fc";
    const double mm = 2.0 * static_cast<double>(B * H) * static_cast<double>(c.classes);
    auto logits = b.forward({.name = n, .type = "aten.addmm", .inputs = {fc_b, x, fc_w},
                             .outputs = {{n + ".out", {B, c.classes}}}, .save_inputs = {1, 2}, .save_outputs = {},
                             .passthrough = {}, .flops = mm, .backward_flops = 2.0 * mm, .workspace = 0,
                             .backward_workspace = 0, .backward_type = "aten.addmm_backward"})[0];
    losses.push_back(cross_entropy(b, "t" + ts + ".loss", logits, b.input("labels." + ts, {B}, int64_bytes)));
  }
  return b.finish(losses.size() == 1 ? losses[0] : add(b, "loss_sum", losses));
}

}  // namespace memplan::zoo
