#pragma once
// The data model of ad::program, the executor-facing form of one training step: the kernel kinds,
// tensors (storages: a view is resolved onto its base when recorded, so views never appear), nodes
// (kernel calls with every dimension in their attributes) and the program itself.
// <memplan/ad/program.hpp> includes this plus the kernel facts, validation and dispatch.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <memplan/ad/initializer.hpp>
#include <memplan/ad/ops.hpp>
#include <memplan/ad/tensor.hpp>
#include <memplan/base/error.hpp>
#include <memplan/base/kinds.hpp>

namespace memplan::ad {

enum class kernel : std::uint8_t {
  fill, strided_copy, matmul, add, mul, mul_grad_broadcast, scale,
  relu, relu_grad, sigmoid, sigmoid_grad, tanh, tanh_grad,
  sum_keep_mid, sum_mid, broadcast_mid,
  conv2d, conv2d_grad_input, conv2d_grad_weight,
  max_pool2d, max_pool2d_grad, avg_pool2d, avg_pool2d_grad,
  batch_norm, batch_norm_grad_input, batch_norm_grad_gamma,
  layer_norm, layer_norm_grad_input, layer_norm_grad_gamma,
  softmax, softmax_grad, softmax_xent, softmax_xent_grad,
  embedding, embedding_grad,
  sgd, adam, step_increment,
};

inline constexpr std::string_view to_string(kernel k) noexcept {
  constexpr std::string_view names[] = {
      "fill", "strided_copy", "matmul", "add", "mul", "mul_grad_broadcast", "scale",
      "relu", "relu_grad", "sigmoid", "sigmoid_grad", "tanh", "tanh_grad",
      "sum_keep_mid", "sum_mid", "broadcast_mid",
      "conv2d", "conv2d_grad_input", "conv2d_grad_weight",
      "max_pool2d", "max_pool2d_grad", "avg_pool2d", "avg_pool2d_grad",
      "batch_norm", "batch_norm_grad_input", "batch_norm_grad_gamma",
      "layer_norm", "layer_norm_grad_input", "layer_norm_grad_gamma",
      "softmax", "softmax_grad", "softmax_xent", "softmax_xent_grad",
      "embedding", "embedding_grad",
      "sgd", "adam", "step_increment"};
  return names[static_cast<std::size_t>(k)];
}

using node_attr = std::variant<std::monostate, fill_attr, strided_attr, matmul_attr, binary_attr, unary_attr, reduce_attr,
                               conv_attr, pool_attr, norm_attr, softmax_attr, embedding_attr, sgd_attr, adam_attr>;

struct tensor_info {
  std::string name;
  shape_t shape;
  tensor_kind kind = tensor_kind::activation;
  std::int32_t inplace_of = -1;  // written into the storage of this tensor (optimizer updates)
  initializer init;              // resident tensors only
  [[nodiscard]] std::int64_t numel() const { return ad::numel(shape); }
  [[nodiscard]] std::int64_t bytes() const { return byte_size(shape); }
};

struct node {
  std::string name;
  kernel kind = kernel::fill;
  node_attr attr;
  std::vector<std::int32_t> inputs, outputs;  // tensor ids, in the kernel's argument order
  op_phase phase = op_phase::forward;
  std::int64_t workspace_bytes = 0;
  double flops = 0.0;
};

struct program {
  std::string name;
  std::vector<tensor_info> tensors;  // id = index
  std::vector<node> nodes;           // the given (eager) order, topological
  std::int32_t loss = -1;
  std::vector<std::int32_t> feeds;                                   // input tensors filled each step
  std::vector<std::pair<std::int32_t, std::int32_t>> weight_grads;   // (weight, its final gradient)

  [[nodiscard]] std::int32_t find(std::string_view tensor_name) const {
    for (std::size_t i = 0; i < tensors.size(); ++i)
      if (tensors[i].name == tensor_name) return static_cast<std::int32_t>(i);
    throw error(errc::invalid_argument, "ad::program '" + name + "': no tensor named '" + std::string(tensor_name) + "'");
  }
  // The storage a tensor lives in (follows inplace_of).
  [[nodiscard]] std::int32_t storage_of(std::int32_t t) const {
    while (tensors.at(static_cast<std::size_t>(t)).inplace_of >= 0) t = tensors[static_cast<std::size_t>(t)].inplace_of;
    return t;
  }
};

}  // namespace memplan::ad
