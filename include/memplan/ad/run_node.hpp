#pragma once
// ad::run_node: runs one node of an ad::program over caller-provided memory -- the float* of each
// input and output and a workspace pointer, which is all an arena executor needs -- with the
// implementation chosen for it (implementations.hpp; the default when none is given).
#include <cstddef>
#include <cstdint>
#include <string>

#include <memplan/ad/impl_kernels.hpp>
#include <memplan/ad/implementations.hpp>
#include <memplan/ad/kernel_facts.hpp>
#include <memplan/ad/ops.hpp>
#include <memplan/ad/program_types.hpp>
#include <memplan/ad/tensor.hpp>
#include <memplan/base/error.hpp>

namespace memplan::ad {

// Runs one node with implementation `impl` (an index into implementations(n); -1: the default).
// inputs[k] / outputs[k] point at the storage of node.inputs[k] / node.outputs[k] (an in-place output
// may point at the same address as the input it replaces); workspace holds at least
// impl_workspace_bytes(n, impl). Every non-null pointer must be 64-byte aligned (tensor.hpp).
inline void run_node(const node& n, std::int32_t impl, const float* const* inputs, float* const* outputs, void* workspace) {
  const auto declared = impl_workspace_bytes(n, impl);  // throws for an implementation the node does not have
  const auto ws_needed = impl <= impl::standard ? workspace_bytes(n.kind, n.attr) : declared;
  const auto e = extents(n);
  for (std::size_t k = 0; k < e.in.size(); ++k)
    if (e.in[k] > 0 && (!inputs[k] || !is_aligned(inputs[k])))
      throw error(errc::runtime_error, "ad::run_node '" + n.name + "': input " + std::to_string(k) + " is null or not " +
                                           std::to_string(tensor_alignment) + "-byte aligned");
  for (std::size_t k = 0; k < e.out.size(); ++k)
    if (e.out[k] > 0 && (!outputs[k] || !is_aligned(outputs[k])))
      throw error(errc::runtime_error, "ad::run_node '" + n.name + "': output " + std::to_string(k) + " is null or not " +
                                           std::to_string(tensor_alignment) + "-byte aligned");
  auto* ws = static_cast<float*>(workspace);
  if (ws_needed > 0 && (!ws || !is_aligned(ws)))
    throw error(errc::runtime_error, "ad::run_node '" + n.name + "': workspace is null or not aligned");
  using detail::attr_as;
  const float* const* in = inputs;
  float* const* out = outputs;
  namespace k = kernels;
  switch (n.kind) {
    case kernel::fill: return k::fill(attr_as<fill_attr>(n), out[0]);
    case kernel::strided_copy: return k::strided_copy(attr_as<strided_attr>(n), in[0], out[0]);
    case kernel::matmul: {
      const auto& a = attr_as<matmul_attr>(n);
      const float* bias = a.bias ? in[2] : nullptr;
      if (impl == impl::matmul_packed) return k::matmul_packed(a, in[0], in[1], bias, out[0], ws);
      if (impl == impl::matmul_loop) return k::matmul_loop(a, in[0], in[1], bias, out[0]);
      return k::matmul(a, in[0], in[1], bias, out[0]);
    }
    case kernel::add: return k::add(attr_as<binary_attr>(n), in[0], in[1], out[0]);
    case kernel::mul: return k::mul(attr_as<binary_attr>(n), in[0], in[1], out[0]);
    case kernel::mul_grad_broadcast: return k::mul_grad_broadcast(attr_as<binary_attr>(n), in[0], in[1], out[0]);
    case kernel::scale: return k::scale(attr_as<unary_attr>(n), in[0], out[0]);
    case kernel::relu: return k::relu(attr_as<unary_attr>(n), in[0], out[0]);
    case kernel::relu_grad: return k::relu_grad(attr_as<unary_attr>(n), in[0], in[1], out[0]);
    case kernel::sigmoid: return k::sigmoid(attr_as<unary_attr>(n), in[0], out[0]);
    case kernel::sigmoid_grad: return k::sigmoid_grad(attr_as<unary_attr>(n), in[0], in[1], out[0]);
    case kernel::tanh: return k::tanh(attr_as<unary_attr>(n), in[0], out[0]);
    case kernel::tanh_grad: return k::tanh_grad(attr_as<unary_attr>(n), in[0], in[1], out[0]);
    case kernel::sum_keep_mid: return k::sum_keep_mid(attr_as<reduce_attr>(n), in[0], out[0]);
    case kernel::sum_mid: return k::sum_mid(attr_as<reduce_attr>(n), in[0], out[0]);
    case kernel::broadcast_mid: return k::broadcast_mid(attr_as<reduce_attr>(n), in[0], out[0]);
    case kernel::conv2d: {
      const auto& a = attr_as<conv_attr>(n);
      const float* bias = a.bias ? in[2] : nullptr;
      if (impl == impl::conv_tiled) return k::conv2d_tiled(a, in[0], in[1], bias, out[0], ws);
      if (impl == impl::conv_direct) return k::conv2d_direct(a, in[0], in[1], bias, out[0]);
      return k::conv2d(a, in[0], in[1], bias, out[0], ws);
    }
    case kernel::conv2d_grad_input: {
      const auto& a = attr_as<conv_attr>(n);
      if (impl == impl::conv_tiled) return k::conv2d_grad_input_tiled(a, in[0], in[1], out[0], ws);
      if (impl == impl::conv_direct) return k::conv2d_grad_input_direct(a, in[0], in[1], out[0]);
      return k::conv2d_grad_input(a, in[0], in[1], out[0], ws);
    }
    case kernel::conv2d_grad_weight: {
      const auto& a = attr_as<conv_attr>(n);
      if (impl == impl::conv_tiled) return k::conv2d_grad_weight_tiled(a, in[0], in[1], out[0], ws);
      if (impl == impl::conv_direct) return k::conv2d_grad_weight_direct(a, in[0], in[1], out[0]);
      return k::conv2d_grad_weight(a, in[0], in[1], out[0], ws);
    }
    case kernel::max_pool2d: return k::max_pool2d(attr_as<pool_attr>(n), in[0], out[0], out[1]);
    case kernel::max_pool2d_grad: return k::max_pool2d_grad(attr_as<pool_attr>(n), in[0], in[1], out[0]);
    case kernel::avg_pool2d: return k::avg_pool2d(attr_as<pool_attr>(n), in[0], out[0]);
    case kernel::avg_pool2d_grad: return k::avg_pool2d_grad(attr_as<pool_attr>(n), in[0], out[0]);
    case kernel::batch_norm: return k::batch_norm(attr_as<norm_attr>(n), in[0], in[1], in[2], out[0], out[1], out[2]);
    case kernel::batch_norm_grad_input:
      return k::batch_norm_grad_input(attr_as<norm_attr>(n), in[0], in[1], in[2], in[3], in[4], out[0]);
    case kernel::batch_norm_grad_gamma:
      return k::batch_norm_grad_gamma(attr_as<norm_attr>(n), in[0], in[1], in[2], in[3], out[0]);
    case kernel::layer_norm: return k::layer_norm(attr_as<norm_attr>(n), in[0], in[1], in[2], out[0], out[1], out[2]);
    case kernel::layer_norm_grad_input:
      return k::layer_norm_grad_input(attr_as<norm_attr>(n), in[0], in[1], in[2], in[3], in[4], out[0]);
    case kernel::layer_norm_grad_gamma:
      return k::layer_norm_grad_gamma(attr_as<norm_attr>(n), in[0], in[1], in[2], in[3], out[0]);
    case kernel::softmax: return k::softmax(attr_as<softmax_attr>(n), in[0], out[0]);
    case kernel::softmax_grad: return k::softmax_grad(attr_as<softmax_attr>(n), in[0], in[1], out[0]);
    case kernel::softmax_xent: return k::softmax_xent(attr_as<softmax_attr>(n), in[0], in[1], out[0], out[1]);
    case kernel::softmax_xent_grad: return k::softmax_xent_grad(attr_as<softmax_attr>(n), in[0], in[1], in[2], out[0]);
    case kernel::embedding: return k::embedding(attr_as<embedding_attr>(n), in[0], in[1], out[0]);
    case kernel::embedding_grad: return k::embedding_grad(attr_as<embedding_attr>(n), in[0], in[1], out[0]);
    case kernel::sgd: {
      const auto& a = attr_as<sgd_attr>(n);
      if (a.momentum != 0.0f) return k::sgd(a, in[0], in[1], in[2], out[0], out[1]);
      return k::sgd(a, in[0], nullptr, in[1], out[0], nullptr);
    }
    case kernel::adam: return k::adam(attr_as<adam_attr>(n), in[0], in[1], in[2], in[3], in[4], out[0], out[1], out[2]);
    case kernel::step_increment: return k::step_increment(in[0], out[0]);
  }
  throw error(errc::invalid_graph, "ad::run_node: node '" + n.name + "' has an unknown kernel");
}

// The default implementation.
inline void run_node(const node& n, const float* const* inputs, float* const* outputs, void* workspace) {
  run_node(n, impl::standard, inputs, outputs, workspace);
}

}  // namespace memplan::ad
