#pragma once
// The backward construction of an ad training step: given the recorded forward program, its loss and
// which tensors depend on a weight, append the loss seed, the backward nodes (walking the forward
// nodes in reverse), explicit gradient accumulation and the optimizer's update nodes.
//
// Each backward node declares only what it needs (Chen et al. 2016, §3, "declare minimum
// dependencies"): e.g. relu/sigmoid/tanh gradients read the forward output, not the input; max-pool
// reads its saved argmax; a convolution's input gradient reads the weight and dy only. A tensor with
// several consumers gets one `add` node per extra contribution (a running sum), so that each
// contribution can be freed early. The table of rules is in docs/autodiff.md.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <memplan/ad/ops.hpp>
#include <memplan/ad/optimizers.hpp>
#include <memplan/ad/program_types.hpp>
#include <memplan/ad/step_builder.hpp>
#include <memplan/ad/tensor.hpp>
#include <memplan/ad/validate.hpp>
#include <memplan/base/error.hpp>
#include <memplan/base/kinds.hpp>

namespace memplan::ad {

// One backward product of a matmul: its attributes and whether dy is its first operand.
struct matmul_grad {
  matmul_attr attr;
  bool dy_first = true;  // inputs {dy, other} (else {other, dy})
};

// d op(A) = alpha * dC op(B)^T, written through A's own strides. The other operand is B.
inline matmul_grad matmul_grad_a(const matmul_attr& a) {
  matmul_attr d;
  d.batch[0] = a.batch[0], d.batch[1] = a.batch[1], d.alpha = a.alpha;
  d.ldc = a.lda, d.stride_c[0] = a.stride_a[0], d.stride_c[1] = a.stride_a[1];
  if (!a.trans_a) {  // dA[m,k] = dC[m,n] * op(B)^T
    d.m = a.m, d.n = a.k, d.k = a.n;
    d.trans_a = false, d.lda = a.ldc, d.stride_a[0] = a.stride_c[0], d.stride_a[1] = a.stride_c[1];
    d.trans_b = !a.trans_b, d.ldb = a.ldb, d.stride_b[0] = a.stride_b[0], d.stride_b[1] = a.stride_b[1];
    return {d, true};
  }
  // A stored [k,m]: dA = op(B)[k,n] * dC^T
  d.m = a.k, d.n = a.m, d.k = a.n;
  d.trans_a = a.trans_b, d.lda = a.ldb, d.stride_a[0] = a.stride_b[0], d.stride_a[1] = a.stride_b[1];
  d.trans_b = true, d.ldb = a.ldc, d.stride_b[0] = a.stride_c[0], d.stride_b[1] = a.stride_c[1];
  return {d, false};
}

// d op(B) = alpha * op(A)^T dC, written through B's own strides. The other operand is A.
inline matmul_grad matmul_grad_b(const matmul_attr& a) {
  matmul_attr d;
  d.batch[0] = a.batch[0], d.batch[1] = a.batch[1], d.alpha = a.alpha;
  d.ldc = a.ldb, d.stride_c[0] = a.stride_b[0], d.stride_c[1] = a.stride_b[1];
  if (!a.trans_b) {  // dB[k,n] = op(A)^T[k,m] * dC[m,n]
    d.m = a.k, d.n = a.n, d.k = a.m;
    d.trans_a = !a.trans_a, d.lda = a.lda, d.stride_a[0] = a.stride_a[0], d.stride_a[1] = a.stride_a[1];
    d.trans_b = false, d.ldb = a.ldc, d.stride_b[0] = a.stride_c[0], d.stride_b[1] = a.stride_c[1];
    return {d, false};
  }
  // B stored [n,k]: dB = dC^T[n,m] * op(A)[m,k]
  d.m = a.n, d.n = a.k, d.k = a.m;
  d.trans_a = true, d.lda = a.ldc, d.stride_a[0] = a.stride_c[0], d.stride_a[1] = a.stride_c[1];
  d.trans_b = a.trans_a, d.ldb = a.lda, d.stride_b[0] = a.stride_a[0], d.stride_b[1] = a.stride_a[1];
  return {d, true};
}

// Appends the backward pass of a recorded forward program, node by node in reverse.
class backward_builder {
 public:
  // needs_grad[t]: forward tensor t depends on a weight (tensors beyond its end need none).
  backward_builder(program& p, const std::vector<bool>& needs_grad)
      : p_(p), b_(p), needs_grad_(needs_grad), grad_(p.tensors.size(), -1), n_contrib_(p.tensors.size(), 0) {}

  // d(loss) = 1, by a fill node.
  void seed(std::int32_t loss) {
    const auto seed = b_.add_tensor("d:" + name(loss), {1}, tensor_kind::gradient);
    b_.add_node("seed:" + name(loss), kernel::fill, fill_attr{1, 1.0f}, {}, {seed}, op_phase::backward);
    grad_[static_cast<std::size_t>(loss)] = seed;
  }

  // The backward nodes of forward node `fwd` (none when no gradient reaches its first output).
  void differentiate(const node& fwd) {
    const auto dy = grad_[static_cast<std::size_t>(fwd.outputs[0])];
    if (dy < 0) return;
    const auto& in = fwd.inputs;
    const auto& out = fwd.outputs;
    switch (fwd.kind) {
      case kernel::fill: return;
      case kernel::strided_copy: {
        auto a = std::get<strided_attr>(fwd.attr);
        a.scatter = true;
        if (needs(in[0])) emit(fwd, "grad", in[0], kernel::strided_copy, a, {dy});
        return;
      }
      case kernel::matmul: return matmul_grads(fwd, dy);
      case kernel::add: return add_grads(fwd, dy);
      case kernel::mul: return mul_grads(fwd, dy);
      case kernel::scale:
        if (needs(in[0])) emit(fwd, "grad", in[0], kernel::scale, fwd.attr, {dy});
        return;
      case kernel::relu:
      case kernel::sigmoid:
      case kernel::tanh: {  // these gradients need the output, not the input
        const auto k = fwd.kind == kernel::relu      ? kernel::relu_grad
                       : fwd.kind == kernel::sigmoid ? kernel::sigmoid_grad
                                                     : kernel::tanh_grad;
        if (needs(in[0])) emit(fwd, "grad", in[0], k, fwd.attr, {out[0], dy});
        return;
      }
      case kernel::sum_mid:
        if (needs(in[0])) emit(fwd, "grad", in[0], kernel::broadcast_mid, fwd.attr, {dy});
        return;
      case kernel::conv2d: return conv_grads(fwd, dy);
      case kernel::max_pool2d:
        if (needs(in[0])) emit(fwd, "grad", in[0], kernel::max_pool2d_grad, fwd.attr, {out[1], dy});
        return;
      case kernel::avg_pool2d:
        if (needs(in[0])) emit(fwd, "grad", in[0], kernel::avg_pool2d_grad, fwd.attr, {dy});
        return;
      case kernel::batch_norm:
      case kernel::layer_norm: return norm_grads(fwd, dy);
      case kernel::softmax:
        if (needs(in[0])) emit(fwd, "grad", in[0], kernel::softmax_grad, fwd.attr, {out[0], dy});
        return;
      case kernel::softmax_xent:
        if (needs(in[0])) emit(fwd, "grad", in[0], kernel::softmax_xent_grad, fwd.attr, {out[1], in[1], dy});
        return;
      case kernel::embedding:
        if (needs(in[0])) emit(fwd, "grad", in[0], kernel::embedding_grad, fwd.attr, {in[1], dy});
        return;
      default:
        throw error(errc::invalid_graph, "ad::training_step: node '" + fwd.name + "' (" + std::string(to_string(fwd.kind)) +
                                             ") has no backward rule");
    }
  }

  // (weight, its final gradient) for every weight among the first `n_forward_tensors` tensors that
  // received a gradient, in tensor order.
  [[nodiscard]] std::vector<std::pair<std::int32_t, std::int32_t>> weight_grads(std::size_t n_forward_tensors) const {
    std::vector<std::pair<std::int32_t, std::int32_t>> wg;
    for (std::size_t t = 0; t < n_forward_tensors; ++t)
      if (p_.tensors[t].kind == tensor_kind::weight && grad_[t] >= 0) wg.emplace_back(static_cast<std::int32_t>(t), grad_[t]);
    return wg;
  }

 private:
  [[nodiscard]] bool needs(std::int32_t t) const {
    return static_cast<std::size_t>(t) < needs_grad_.size() && needs_grad_[static_cast<std::size_t>(t)];
  }
  [[nodiscard]] const std::string& name(std::int32_t t) const { return p_.tensors[static_cast<std::size_t>(t)].name; }
  [[nodiscard]] shape_t shape(std::int32_t t) const { return p_.tensors[static_cast<std::size_t>(t)].shape; }

  // Gradient accumulation: the first contribution is the gradient; each further one is summed into a
  // new tensor by an explicit add node (a running sum).
  void contribute(std::int32_t t, std::int32_t g) {
    auto& acc = grad_[static_cast<std::size_t>(t)];
    if (acc < 0) {
      acc = g;
      return;
    }
    const auto nm = "d:" + name(t) + "#" + std::to_string(++n_contrib_[static_cast<std::size_t>(t)]);
    const auto sum = b_.add_tensor(nm, shape(t), tensor_kind::gradient);
    b_.add_node("accumulate:" + nm, kernel::add, binary_attr{1, p_.tensors[static_cast<std::size_t>(t)].numel(), false},
                {acc, g}, {sum}, op_phase::backward);
    acc = sum;
  }

  // One backward node producing a contribution to the gradient of `to`.
  void emit(const node& fwd, const char* what, std::int32_t to, kernel k, node_attr attr, std::vector<std::int32_t> ins) {
    const auto nm = "d:" + name(to) + "@" + fwd.name + "." + what;
    const auto g = b_.add_tensor(nm, shape(to), tensor_kind::gradient);
    b_.add_node(fwd.name + "." + what, k, std::move(attr), std::move(ins), {g}, op_phase::backward);
    contribute(to, g);
  }

  void matmul_grads(const node& fwd, std::int32_t dy) {
    const auto& in = fwd.inputs;
    const auto a = std::get<matmul_attr>(fwd.attr);
    if (needs(in[0])) {
      const auto d = matmul_grad_a(a);
      emit(fwd, "grad_a", in[0], kernel::matmul, d.attr, d.dy_first ? std::vector{dy, in[1]} : std::vector{in[1], dy});
    }
    if (needs(in[1])) {
      const auto d = matmul_grad_b(a);
      emit(fwd, "grad_b", in[1], kernel::matmul, d.attr, d.dy_first ? std::vector{dy, in[0]} : std::vector{in[0], dy});
    }
    if (a.bias && needs(in[2]))
      emit(fwd, "grad_bias", in[2], kernel::sum_keep_mid, reduce_attr{a.batch[0] * a.batch[1] * a.m, a.n, 1, 1.0f}, {dy});
  }

  void add_grads(const node& fwd, std::int32_t dy) {
    const auto& in = fwd.inputs;
    const auto a = std::get<binary_attr>(fwd.attr);
    if (needs(in[0])) contribute(in[0], dy);  // the gradient passes through unchanged: no node, no memory
    if (!needs(in[1])) return;
    if (a.broadcast_b) emit(fwd, "grad_b", in[1], kernel::sum_keep_mid, reduce_attr{a.outer, a.inner, 1, 1.0f}, {dy});
    else contribute(in[1], dy);
  }

  void mul_grads(const node& fwd, std::int32_t dy) {
    const auto& in = fwd.inputs;
    const auto a = std::get<binary_attr>(fwd.attr);
    if (needs(in[0])) emit(fwd, "grad_a", in[0], kernel::mul, a, {dy, in[1]});
    if (needs(in[1])) emit(fwd, "grad_b", in[1], a.broadcast_b ? kernel::mul_grad_broadcast : kernel::mul, a, {dy, in[0]});
  }

  void conv_grads(const node& fwd, std::int32_t dy) {
    const auto& in = fwd.inputs;
    const auto a = std::get<conv_attr>(fwd.attr);
    if (needs(in[0])) emit(fwd, "grad_input", in[0], kernel::conv2d_grad_input, a, {in[1], dy});
    if (needs(in[1])) emit(fwd, "grad_weight", in[1], kernel::conv2d_grad_weight, a, {in[0], dy});
    if (a.bias && needs(in[2]))
      emit(fwd, "grad_bias", in[2], kernel::sum_keep_mid, reduce_attr{a.n, a.f, a.ho * a.wo, 1.0f}, {dy});
  }

  // batch_norm / layer_norm (x, gamma, beta) -> (y, mean, invstd).
  void norm_grads(const node& fwd, std::int32_t dy) {
    const auto& in = fwd.inputs;
    const auto& out = fwd.outputs;
    const auto a = std::get<norm_attr>(fwd.attr);
    const bool bn = fwd.kind == kernel::batch_norm;
    if (needs(in[0]))
      emit(fwd, "grad_input", in[0], bn ? kernel::batch_norm_grad_input : kernel::layer_norm_grad_input, a,
           {in[0], in[1], out[1], out[2], dy});
    if (needs(in[1]))
      emit(fwd, "grad_gamma", in[1], bn ? kernel::batch_norm_grad_gamma : kernel::layer_norm_grad_gamma, a,
           {in[0], out[1], out[2], dy});
    if (needs(in[2]))
      emit(fwd, "grad_beta", in[2], kernel::sum_keep_mid,
           bn ? reduce_attr{a.outer, a.channels, a.inner, 1.0f} : reduce_attr{a.outer, a.channels, 1, 1.0f}, {dy});
  }

  program& p_;
  step_builder b_;
  const std::vector<bool>& needs_grad_;
  std::vector<std::int32_t> grad_;  // per forward tensor: its gradient so far (-1: none yet)
  std::vector<int> n_contrib_;      // per forward tensor: accumulation nodes emitted
};

// The checks on the loss of a training step; marks it as the program's loss and an output.
inline void set_loss(program& p, std::int32_t loss, const std::vector<bool>& needs_grad, const shape_t& loss_view_shape) {
  const auto& lt = p.tensors[static_cast<std::size_t>(loss)];
  if (lt.numel() != 1)
    throw error(errc::invalid_argument, "ad::training_step: the loss '" + lt.name + "' must hold one element, it is " +
                                            to_string(loss_view_shape));
  if (!needs_grad[static_cast<std::size_t>(loss)])
    throw error(errc::invalid_argument, "ad::training_step: the loss does not depend on any weight");
  p.loss = loss;
  p.tensors[static_cast<std::size_t>(loss)].kind = tensor_kind::output;
}

// The whole training step from a recorded forward program: loss seed, backward nodes in reverse
// forward order, the optimizer's updates; validated.
template <optimizer O>
program build_training_step(program p, std::int32_t loss, const std::vector<bool>& needs_grad, const shape_t& loss_view_shape,
                            const O& opt) {
  set_loss(p, loss, needs_grad, loss_view_shape);
  const auto n_forward = p.nodes.size();
  const auto n_forward_tensors = p.tensors.size();
  backward_builder bw(p, needs_grad);
  bw.seed(loss);
  for (std::size_t i = n_forward; i-- > 0;) {
    const node fwd = p.nodes[i];  // a copy: p.nodes grows
    bw.differentiate(fwd);
  }
  p.weight_grads = bw.weight_grads(n_forward_tensors);
  step_builder b(p);
  opt.emit(b, p.weight_grads);
  validate(p);
  return p;
}

}  // namespace memplan::ad
