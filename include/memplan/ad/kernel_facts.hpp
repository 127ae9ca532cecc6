#pragma once
// Per-kernel facts of an ad::node, derived from its kind and attributes: how many floats each input /
// output slot spans (extents), the scratch bytes of its default implementation (workspace_bytes) and
// its floating-point operations (flops, the op cost handed to the planners without calibration).
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <memplan/ad/ops.hpp>
#include <memplan/ad/program_types.hpp>
#include <memplan/base/error.hpp>

namespace memplan::ad {

namespace detail {
template <class A>
const A& attr_as(const node& n) {
  if (auto* p = std::get_if<A>(&n.attr)) return *p;
  throw error(errc::invalid_graph, "ad: node '" + n.name + "' (" + std::string(to_string(n.kind)) +
                                       ") carries attributes of the wrong kind");
}
inline std::int64_t extent(std::initializer_list<std::pair<std::int64_t, std::int64_t>> dims_strides) {
  std::int64_t e = 1;
  for (auto [d, s] : dims_strides) {
    if (d == 0) return 0;
    e += (d - 1) * s;
  }
  return e;
}
}  // namespace detail

// Number of floats each input / output slot of a node spans (reads may use fewer elements than the
// tensor holds only for strided operands; outputs must be covered exactly).
struct io_extents {
  std::vector<std::int64_t> in, out;
};

inline io_extents extents(const node& n) {
  using detail::attr_as;
  switch (n.kind) {
    case kernel::fill: return {{}, {attr_as<fill_attr>(n).n}};
    case kernel::strided_copy: {
      const auto& a = attr_as<strided_attr>(n);
      std::int64_t total = 1, span = 1;
      for (int d = 0; d < a.rank; ++d) {
        total *= a.shape[d];
        span += (a.shape[d] - 1) * a.stride[d];
      }
      if (total == 0) span = 0;
      return a.scatter ? io_extents{{total}, {span}} : io_extents{{span}, {total}};
    }
    case kernel::matmul: {
      const auto& a = attr_as<matmul_attr>(n);
      const auto ra = a.trans_a ? a.k : a.m, ca = a.trans_a ? a.m : a.k;
      const auto rb = a.trans_b ? a.n : a.k, cb = a.trans_b ? a.k : a.n;
      io_extents e;
      e.in = {detail::extent({{a.batch[0], a.stride_a[0]}, {a.batch[1], a.stride_a[1]}, {ra, a.lda}, {ca, 1}}),
              detail::extent({{a.batch[0], a.stride_b[0]}, {a.batch[1], a.stride_b[1]}, {rb, a.ldb}, {cb, 1}})};
      if (a.bias) e.in.push_back(a.n);
      e.out = {detail::extent({{a.batch[0], a.stride_c[0]}, {a.batch[1], a.stride_c[1]}, {a.m, a.ldc}, {a.n, 1}})};
      return e;
    }
    case kernel::add:
    case kernel::mul: {
      const auto& a = attr_as<binary_attr>(n);
      return {{a.outer * a.inner, a.broadcast_b ? a.inner : a.outer * a.inner}, {a.outer * a.inner}};
    }
    case kernel::mul_grad_broadcast: {
      const auto& a = attr_as<binary_attr>(n);
      return {{a.outer * a.inner, a.outer * a.inner}, {a.inner}};
    }
    case kernel::scale:
    case kernel::relu:
    case kernel::sigmoid:
    case kernel::tanh: {
      const auto k = attr_as<unary_attr>(n).n;
      return {{k}, {k}};
    }
    case kernel::relu_grad:
    case kernel::sigmoid_grad:
    case kernel::tanh_grad: {
      const auto k = attr_as<unary_attr>(n).n;
      return {{k, k}, {k}};
    }
    case kernel::sum_keep_mid: {
      const auto& a = attr_as<reduce_attr>(n);
      return {{a.outer * a.mid * a.inner}, {a.mid}};
    }
    case kernel::sum_mid: {
      const auto& a = attr_as<reduce_attr>(n);
      return {{a.outer * a.mid * a.inner}, {a.outer * a.inner}};
    }
    case kernel::broadcast_mid: {
      const auto& a = attr_as<reduce_attr>(n);
      return {{a.outer * a.inner}, {a.outer * a.mid * a.inner}};
    }
    case kernel::conv2d:
    case kernel::conv2d_grad_input:
    case kernel::conv2d_grad_weight: {
      const auto& a = attr_as<conv_attr>(n);
      const auto x = a.n * a.c * a.h * a.w, w = a.f * a.c * a.kh * a.kw, y = a.n * a.f * a.ho * a.wo;
      if (n.kind == kernel::conv2d) {
        io_extents e{{x, w}, {y}};
        if (a.bias) e.in.push_back(a.f);
        return e;
      }
      if (n.kind == kernel::conv2d_grad_input) return {{w, y}, {x}};
      return {{x, y}, {w}};
    }
    case kernel::max_pool2d:
    case kernel::max_pool2d_grad:
    case kernel::avg_pool2d:
    case kernel::avg_pool2d_grad: {
      const auto& a = attr_as<pool_attr>(n);
      const auto x = a.planes * a.h * a.w, y = a.planes * a.ho * a.wo;
      if (n.kind == kernel::max_pool2d) return {{x}, {y, y}};
      if (n.kind == kernel::max_pool2d_grad) return {{y, y}, {x}};
      if (n.kind == kernel::avg_pool2d) return {{x}, {y}};
      return {{y}, {x}};
    }
    case kernel::batch_norm:
    case kernel::batch_norm_grad_input:
    case kernel::batch_norm_grad_gamma: {
      const auto& a = attr_as<norm_attr>(n);
      const auto x = a.outer * a.channels * a.inner, c = a.channels;
      if (n.kind == kernel::batch_norm) return {{x, c, c}, {x, c, c}};
      if (n.kind == kernel::batch_norm_grad_input) return {{x, c, c, c, x}, {x}};
      return {{x, c, c, x}, {c}};
    }
    case kernel::layer_norm:
    case kernel::layer_norm_grad_input:
    case kernel::layer_norm_grad_gamma: {
      const auto& a = attr_as<norm_attr>(n);
      const auto x = a.outer * a.channels, r = a.outer, d = a.channels;
      if (n.kind == kernel::layer_norm) return {{x, d, d}, {x, r, r}};
      if (n.kind == kernel::layer_norm_grad_input) return {{x, d, r, r, x}, {x}};
      return {{x, r, r, x}, {d}};
    }
    case kernel::softmax:
    case kernel::softmax_grad:
    case kernel::softmax_xent:
    case kernel::softmax_xent_grad: {
      const auto& a = attr_as<softmax_attr>(n);
      const auto x = a.rows * a.cols;
      if (n.kind == kernel::softmax) return {{x}, {x}};
      if (n.kind == kernel::softmax_grad) return {{x, x}, {x}};
      if (n.kind == kernel::softmax_xent) return {{x, a.rows}, {1, x}};
      return {{x, a.rows, 1}, {x}};
    }
    case kernel::embedding:
    case kernel::embedding_grad: {
      const auto& a = attr_as<embedding_attr>(n);
      if (n.kind == kernel::embedding) return {{a.vocab * a.dim, a.count}, {a.count * a.dim}};
      return {{a.count, a.count * a.dim}, {a.vocab * a.dim}};
    }
    case kernel::sgd: {
      const auto& a = attr_as<sgd_attr>(n);
      if (a.momentum != 0.0f) return {{a.n, a.n, a.n}, {a.n, a.n}};
      return {{a.n, a.n}, {a.n}};
    }
    case kernel::adam: {
      const auto k = attr_as<adam_attr>(n).n;
      return {{k, k, k, k, 1}, {k, k, k}};
    }
    case kernel::step_increment: return {{1}, {1}};
  }
  throw error(errc::invalid_graph, "ad: node '" + n.name + "' has an unknown kernel");
}

// Scratch bytes the kernel needs (the im2col column matrix for convolutions).
inline std::int64_t workspace_bytes(kernel k, const node_attr& attr) {
  if (k == kernel::conv2d || k == kernel::conv2d_grad_input || k == kernel::conv2d_grad_weight)
    return std::get<conv_attr>(attr).workspace_floats() * static_cast<std::int64_t>(sizeof(float));
  return 0;
}

// Floating-point operations of one call (multiply-add = 2), the op cost handed to the planners.
inline double flops(kernel k, const node_attr& attr) {
  auto d = [](std::int64_t v) { return static_cast<double>(v); };
  switch (k) {
    case kernel::fill: return d(std::get<fill_attr>(attr).n);
    case kernel::strided_copy: {
      const auto& a = std::get<strided_attr>(attr);
      double t = 1;
      for (int i = 0; i < a.rank; ++i) t *= d(a.shape[i]);
      return t;
    }
    case kernel::matmul: {
      const auto& a = std::get<matmul_attr>(attr);
      return 2.0 * d(a.batch[0]) * d(a.batch[1]) * d(a.m) * d(a.n) * d(a.k) + (a.bias ? d(a.m * a.n) : 0.0);
    }
    case kernel::add:
    case kernel::mul: {
      const auto& a = std::get<binary_attr>(attr);
      return d(a.outer * a.inner);
    }
    case kernel::mul_grad_broadcast: {
      const auto& a = std::get<binary_attr>(attr);
      return 2.0 * d(a.outer * a.inner);
    }
    case kernel::scale:
    case kernel::relu:
    case kernel::relu_grad: return d(std::get<unary_attr>(attr).n);
    case kernel::sigmoid:
    case kernel::tanh: return 4.0 * d(std::get<unary_attr>(attr).n);
    case kernel::sigmoid_grad:
    case kernel::tanh_grad: return 3.0 * d(std::get<unary_attr>(attr).n);
    case kernel::sum_keep_mid:
    case kernel::sum_mid:
    case kernel::broadcast_mid: {
      const auto& a = std::get<reduce_attr>(attr);
      return d(a.outer * a.mid * a.inner);
    }
    case kernel::conv2d:
    case kernel::conv2d_grad_input:
    case kernel::conv2d_grad_weight: {
      const auto& a = std::get<conv_attr>(attr);
      return 2.0 * d(a.n) * d(a.f) * d(a.col_rows()) * d(a.col_cols());
    }
    case kernel::max_pool2d:
    case kernel::avg_pool2d: {
      const auto& a = std::get<pool_attr>(attr);
      return d(a.planes * a.ho * a.wo * a.kh * a.kw);
    }
    case kernel::max_pool2d_grad:
    case kernel::avg_pool2d_grad: {
      const auto& a = std::get<pool_attr>(attr);
      return d(a.planes * a.h * a.w);
    }
    case kernel::batch_norm:
    case kernel::batch_norm_grad_input:
    case kernel::layer_norm:
    case kernel::layer_norm_grad_input: {
      const auto& a = std::get<norm_attr>(attr);
      return 8.0 * d(a.outer * a.channels * a.inner);
    }
    case kernel::batch_norm_grad_gamma:
    case kernel::layer_norm_grad_gamma: {
      const auto& a = std::get<norm_attr>(attr);
      return 4.0 * d(a.outer * a.channels * a.inner);
    }
    case kernel::softmax:
    case kernel::softmax_grad:
    case kernel::softmax_xent:
    case kernel::softmax_xent_grad: {
      const auto& a = std::get<softmax_attr>(attr);
      return 5.0 * d(a.rows * a.cols);
    }
    case kernel::embedding:
    case kernel::embedding_grad: {
      const auto& a = std::get<embedding_attr>(attr);
      return d(a.count * a.dim);
    }
    case kernel::sgd: return 3.0 * d(std::get<sgd_attr>(attr).n);
    case kernel::adam: return 12.0 * d(std::get<adam_attr>(attr).n);
    case kernel::step_increment: return 1.0;
  }
  return 0.0;
}

}  // namespace memplan::ad
