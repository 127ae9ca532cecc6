#pragma once
// zoo layers: the PyTorch operators (aten names) a training trace of CNNs / MLPs / LSTMs is made of,
// recorded on a zoo::training_builder with float32 sizes, FLOP costs and what each autograd node saves.
// Views (flatten, reshape) allocate nothing and are not ops (graph-format.md: views map onto the
// tensor they view); the shape passed to the next layer is just the viewed one.
#include <cstdint>
#include <string>
#include <vector>

#include <memplan/base/error.hpp>
#include <zoo/training.hpp>

namespace memplan::zoo {

using graph::tensor_ref;

namespace detail {
inline std::int64_t conv_out(std::int64_t in, std::int64_t k, std::int64_t stride, std::int64_t pad) {
  const auto o = (in + 2 * pad - k) / stride + 1;
  if (o <= 0) throw error(errc::invalid_argument, "zoo: a convolution or pooling window is larger than its input");
  return o;
}
inline shape_t nchw(const training_builder& b, tensor_ref x, const std::string& who) {
  const shape_t s = b.shape(x);
  if (s.size() != 4) throw error(errc::invalid_argument, "zoo: " + who + " needs an N x C x H x W input");
  return s;
}
}  // namespace detail

// aten.convolution (no bias, as in ResNets): 2*N*Cout*Ho*Wo*Cin*k*k FLOPs; backward
// (aten.convolution_backward) reads the input and the weight, writes d input and d weight.
inline tensor_ref conv2d(training_builder& b, const std::string& name, tensor_ref x, std::int64_t cout, std::int64_t k,
                         std::int64_t stride = 1, std::int64_t pad = 0) {
  const auto s = detail::nchw(b, x, "conv2d '" + name + "'");
  auto w = b.weight(name + ".weight", {cout, s[1], k, k});
  const auto ho = detail::conv_out(s[2], k, stride, pad), wo = detail::conv_out(s[3], k, stride, pad);
  const double flops = 2.0 * static_cast<double>(s[0] * cout * ho * wo) * static_cast<double>(s[1] * k * k);
  return b.forward({.name = name, .type = "aten.convolution", .inputs = {x, w},
                    .outputs = {{name + ".out", {s[0], cout, ho, wo}}}, .save_inputs = {0, 1}, .save_outputs = {},
                    .passthrough = {}, .flops = flops, .backward_flops = 2.0 * flops, .workspace = 0,
                    .backward_workspace = 0, .backward_type = "aten.convolution_backward"})[0];
}

// aten.native_batch_norm (training): y plus saved mean / inverse std per channel; backward reads x,
// gamma and the statistics.
inline tensor_ref batch_norm(training_builder& b, const std::string& name, tensor_ref x) {
  const auto s = detail::nchw(b, x, "batch_norm '" + name + "'");
  auto gamma = b.weight(name + ".weight", {s[1]});
  auto beta = b.weight(name + ".bias", {s[1]});
  const double n = static_cast<double>(elements(s));
  return b.forward({.name = name, .type = "aten.native_batch_norm", .inputs = {x, gamma, beta},
                    .outputs = {{name + ".out", s}, {name + ".save_mean", {s[1]}, float32_bytes, false},
                                {name + ".save_invstd", {s[1]}, float32_bytes, false}},
                    .save_inputs = {0, 1}, .save_outputs = {1, 2}, .passthrough = {}, .flops = 4.0 * n,
                    .backward_flops = 6.0 * n, .workspace = 0, .backward_workspace = 0,
                    .backward_type = "aten.native_batch_norm_backward"})[0];
}

// aten.relu; backward (aten.threshold_backward) reads the output.
inline tensor_ref relu(training_builder& b, const std::string& name, tensor_ref x) {
  const shape_t s = b.shape(x);
  const double n = static_cast<double>(elements(s));
  return b.forward({.name = name, .type = "aten.relu", .inputs = {x}, .outputs = {{name + ".out", s}},
                    .save_inputs = {}, .save_outputs = {0}, .passthrough = {}, .flops = n, .backward_flops = n,
                    .workspace = 0, .backward_workspace = 0, .backward_type = "aten.threshold_backward"})[0];
}

// aten.max_pool2d_with_indices: output plus int64 indices; backward reads the input and the indices.
inline tensor_ref max_pool2d(training_builder& b, const std::string& name, tensor_ref x, std::int64_t k,
                             std::int64_t stride, std::int64_t pad = 0) {
  const auto s = detail::nchw(b, x, "max_pool2d '" + name + "'");
  const shape_t o{s[0], s[1], detail::conv_out(s[2], k, stride, pad), detail::conv_out(s[3], k, stride, pad)};
  const double n = static_cast<double>(elements(o));
  return b.forward({.name = name, .type = "aten.max_pool2d_with_indices", .inputs = {x},
                    .outputs = {{name + ".out", o}, {name + ".indices", o, int64_bytes, false}}, .save_inputs = {0},
                    .save_outputs = {1}, .passthrough = {}, .flops = n * static_cast<double>(k * k),
                    .backward_flops = static_cast<double>(elements(s)), .workspace = 0, .backward_workspace = 0,
                    .backward_type = "aten.max_pool2d_with_indices_backward"})[0];
}

// aten._adaptive_avg_pool2d to 1x1 (global average pool); backward needs only the gradient.
inline tensor_ref global_avg_pool(training_builder& b, const std::string& name, tensor_ref x) {
  const auto s = detail::nchw(b, x, "global_avg_pool '" + name + "'");
  const double n = static_cast<double>(elements(s));
  return b.forward({.name = name, .type = "aten._adaptive_avg_pool2d", .inputs = {x},
                    .outputs = {{name + ".out", {s[0], s[1], 1, 1}}}, .save_inputs = {}, .save_outputs = {},
                    .passthrough = {}, .flops = n, .backward_flops = n, .workspace = 0, .backward_workspace = 0,
                    .backward_type = "aten._adaptive_avg_pool2d_backward"})[0];
}

// aten.addmm(bias, x, W^T): a fully connected layer on x viewed as [N, features]; backward
// (AddmmBackward0) reads x and W, writes d x (when x needs one), d W and d bias.
inline tensor_ref linear(training_builder& b, const std::string& name, tensor_ref x, std::int64_t out_features) {
  const shape_t s = b.shape(x);
  if (s.empty()) throw error(errc::invalid_argument, "zoo: linear '" + name + "' needs a batched input");
  const auto n = s[0], in = elements(s) / s[0];
  auto w = b.weight(name + ".weight", {out_features, in});
  auto bias = b.weight(name + ".bias", {out_features});
  const double flops = 2.0 * static_cast<double>(n * in) * static_cast<double>(out_features);
  return b.forward({.name = name, .type = "aten.addmm", .inputs = {bias, x, w},
                    .outputs = {{name + ".out", {n, out_features}}}, .save_inputs = {1, 2}, .save_outputs = {},
                    .passthrough = {}, .flops = flops, .backward_flops = 2.0 * flops, .workspace = 0,
                    .backward_workspace = 0, .backward_type = "aten.addmm_backward"})[0];
}

// aten.addmm(acc, x, W^T) with an existing accumulator (no bias): the accumulator's gradient is the
// output's gradient itself (pass-through), x and W get computed gradients.
inline tensor_ref addmm_into(training_builder& b, const std::string& name, tensor_ref acc, tensor_ref x, tensor_ref w) {
  const shape_t sa = b.shape(acc);
  const shape_t sx = b.shape(x);
  const shape_t sw = b.shape(w);
  if (sa.size() != 2 || sx.size() != 2 || sw.size() != 2 || sx[0] != sa[0] || sw[0] != sa[1] || sw[1] != sx[1])
    throw error(errc::invalid_argument, "zoo: addmm '" + name + "': shapes do not match");
  const double flops = 2.0 * static_cast<double>(sx[0] * sx[1]) * static_cast<double>(sw[0]);
  return b.forward({.name = name, .type = "aten.addmm", .inputs = {acc, x, w}, .outputs = {{name + ".out", sa}},
                    .save_inputs = {1, 2}, .save_outputs = {}, .passthrough = {0}, .flops = flops,
                    .backward_flops = 2.0 * flops, .workspace = 0, .backward_workspace = 0,
                    .backward_type = "aten.addmm_backward"})[0];
}

// aten.add (residual connections, summing losses): gradients pass through to every operand; no
// autograd node allocates anything.
inline tensor_ref add(training_builder& b, const std::string& name, const std::vector<tensor_ref>& xs) {
  if (xs.empty()) throw error(errc::invalid_argument, "zoo: add '" + name + "' has no operands");
  const shape_t s = b.shape(xs[0]);
  for (auto x : xs)
    if (b.bytes(x) != b.bytes(xs[0])) throw error(errc::invalid_argument, "zoo: add '" + name + "': operand sizes differ");
  std::vector<std::size_t> pass;
  for (std::size_t i = 0; i < xs.size(); ++i) pass.push_back(i);
  const double n = static_cast<double>(elements(s));
  return b.forward({.name = name, .type = "aten.add", .inputs = xs, .outputs = {{name + ".out", s}}, .save_inputs = {},
                    .save_outputs = {}, .passthrough = pass, .flops = n * static_cast<double>(xs.size() - 1),
                    .backward_flops = 0, .workspace = 0, .backward_workspace = 0, .backward_type = {}})[0];
}

// Cross entropy as PyTorch runs it: aten._log_softmax then aten.nll_loss_forward (scalar loss and
// total weight); targets are int64 class indices (an input).
inline tensor_ref cross_entropy(training_builder& b, const std::string& name, tensor_ref logits, tensor_ref target) {
  const shape_t s = b.shape(logits);
  if (s.size() != 2) throw error(errc::invalid_argument, "zoo: cross_entropy '" + name + "' needs [N, classes] logits");
  const double n = static_cast<double>(elements(s));
  auto lsm = b.forward({.name = name + ".log_softmax", .type = "aten._log_softmax", .inputs = {logits},
                        .outputs = {{name + ".log_softmax.out", s}}, .save_inputs = {}, .save_outputs = {0},
                        .passthrough = {}, .flops = 4.0 * n, .backward_flops = 3.0 * n, .workspace = 0,
                        .backward_workspace = 0, .backward_type = "aten._log_softmax_backward_data"})[0];
  return b.forward({.name = name + ".nll", .type = "aten.nll_loss_forward", .inputs = {lsm, target},
                    .outputs = {{name + ".loss", {}}, {name + ".total_weight", {}, float32_bytes, false}},
                    .save_inputs = {0, 1}, .save_outputs = {1}, .passthrough = {},
                    .flops = static_cast<double>(s[0]), .backward_flops = n, .workspace = 0, .backward_workspace = 0,
                    .backward_type = "aten.nll_loss_backward"})[0];
}

}  // namespace memplan::zoo
