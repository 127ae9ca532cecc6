#pragma once
// ad::program: the executor-facing form of one training step. Tensors are storages (views never
// appear: a view is resolved onto its base when recorded), nodes are kernel calls with every
// dimension in their attributes, and run_node() executes one node given the float* of each input and
// output and a workspace pointer — which is all an arena executor needs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

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

// How a resident tensor (input, weight, optimizer state) gets its first value.
struct initializer {
  enum class method : std::uint8_t { none, zeros, constant, uniform, normal };
  method how = method::none;
  double a = 0.0, b = 0.0;  // constant: a; uniform: [a, b); normal: mean a, std b
  std::uint64_t seed = 0;
};

namespace init {
inline initializer zeros() { return {initializer::method::zeros, 0, 0, 0}; }
inline initializer constant(double v) { return {initializer::method::constant, v, 0, 0}; }
inline initializer uniform(double lo, double hi, std::uint64_t seed = 0) { return {initializer::method::uniform, lo, hi, seed}; }
inline initializer normal(double mean, double stddev, std::uint64_t seed = 0) {
  return {initializer::method::normal, mean, stddev, seed};
}
// He et al. 2015 (ReLU nets): N(0, 2/fan_in).
inline initializer he_normal(std::int64_t fan_in, std::uint64_t seed = 0) {
  return normal(0.0, std::sqrt(2.0 / static_cast<double>(fan_in > 0 ? fan_in : 1)), seed);
}
// Glorot & Bengio 2010: U(-sqrt(6/(in+out)), +sqrt(6/(in+out))).
inline initializer glorot_uniform(std::int64_t fan_in, std::int64_t fan_out, std::uint64_t seed = 0) {
  const double r = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out > 0 ? fan_in + fan_out : 1));
  return uniform(-r, r, seed);
}
}  // namespace init

inline void fill_initial(const initializer& in, std::span<float> out) {
  rng g(in.seed);
  for (auto& v : out) {
    switch (in.how) {
      case initializer::method::none:
      case initializer::method::zeros: v = 0.0f; break;
      case initializer::method::constant: v = static_cast<float>(in.a); break;
      case initializer::method::uniform: v = static_cast<float>(g.uniform(in.a, in.b)); break;
      case initializer::method::normal: v = static_cast<float>(in.a + in.b * g.normal()); break;
    }
  }
}

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

// ---- per-kernel facts: arity, extents, workspace, FLOPs --------------------------------------------

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

// ---- validation ------------------------------------------------------------------------------------

// Checks everything an executor relies on; throws memplan::error(invalid_graph) naming the culprit:
// ids in range, unique names, one producer per non-resident tensor, producers before consumers in the
// given order, in-place outputs written after every other reader of their storage, attributes of the
// right kind, and every tensor as large as the kernel reads (outputs: exactly as large as it writes).
inline void validate(const program& p) {
  const auto nt = static_cast<std::int32_t>(p.tensors.size());
  auto tname = [&](std::int32_t t) { return "tensor '" + p.tensors[static_cast<std::size_t>(t)].name + "'"; };
  std::vector<std::int32_t> producer(static_cast<std::size_t>(nt), -1), last_reader(static_cast<std::size_t>(nt), -1);
  {
    std::vector<std::string> names;
    for (const auto& t : p.tensors) names.push_back(t.name);
    std::sort(names.begin(), names.end());
    if (auto it = std::adjacent_find(names.begin(), names.end()); it != names.end())
      throw error(errc::invalid_graph, "ad::program '" + p.name + "': duplicate tensor name '" + *it + "'");
    names.clear();
    for (const auto& n : p.nodes) names.push_back(n.name);
    std::sort(names.begin(), names.end());
    if (auto it = std::adjacent_find(names.begin(), names.end()); it != names.end())
      throw error(errc::invalid_graph, "ad::program '" + p.name + "': duplicate node name '" + *it + "'");
  }
  for (std::int32_t t = 0; t < nt; ++t) {
    const auto& ti = p.tensors[static_cast<std::size_t>(t)];
    for (auto d : ti.shape)
      if (d < 0) throw error(errc::invalid_graph, "ad::program: " + tname(t) + " has a negative dimension");
    if (ti.inplace_of >= nt || ti.inplace_of == t)
      throw error(errc::invalid_graph, "ad::program: " + tname(t) + " is inplace_of an invalid tensor");
    if (ti.inplace_of >= 0 && p.tensors[static_cast<std::size_t>(ti.inplace_of)].numel() != ti.numel())
      throw error(errc::invalid_graph, "ad::program: " + tname(t) + " is in place of a tensor of another size");
  }
  for (std::size_t i = 0; i < p.nodes.size(); ++i) {
    const auto& n = p.nodes[i];
    const auto who = "ad::program '" + p.name + "': node '" + n.name + "' (" + std::string(to_string(n.kind)) + ")";
    const auto e = extents(n);
    if (e.in.size() != n.inputs.size() || e.out.size() != n.outputs.size())
      throw error(errc::invalid_graph, who + " has " + std::to_string(n.inputs.size()) + " inputs and " +
                                           std::to_string(n.outputs.size()) + " outputs, its kernel takes " +
                                           std::to_string(e.in.size()) + " and " + std::to_string(e.out.size()));
    if (n.workspace_bytes < workspace_bytes(n.kind, n.attr))
      throw error(errc::invalid_graph, who + " declares less workspace than its kernel needs");
    for (std::size_t k = 0; k < n.inputs.size(); ++k) {
      const auto t = n.inputs[k];
      if (t < 0 || t >= nt) throw error(errc::invalid_graph, who + ": input " + std::to_string(k) + " is not a tensor id");
      const auto& ti = p.tensors[static_cast<std::size_t>(t)];
      if (producer[static_cast<std::size_t>(t)] < 0 && !may_be_resident(ti.kind))
        throw error(errc::invalid_graph, who + " reads " + tname(t) + " before any node produced it");
      if (e.in[k] > ti.numel())
        throw error(errc::invalid_graph, who + " reads " + std::to_string(e.in[k]) + " floats of " + tname(t) + " which has " +
                                             std::to_string(ti.numel()));
      last_reader[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(i);
    }
    for (std::size_t k = 0; k < n.outputs.size(); ++k) {
      const auto t = n.outputs[k];
      if (t < 0 || t >= nt) throw error(errc::invalid_graph, who + ": output " + std::to_string(k) + " is not a tensor id");
      const auto& ti = p.tensors[static_cast<std::size_t>(t)];
      if (producer[static_cast<std::size_t>(t)] >= 0)
        throw error(errc::invalid_graph, who + " produces " + tname(t) + " which node '" +
                                             p.nodes[static_cast<std::size_t>(producer[static_cast<std::size_t>(t)])].name +
                                             "' already produced");
      if (e.out[k] != ti.numel())
        throw error(errc::invalid_graph, who + " writes " + std::to_string(e.out[k]) + " floats into " + tname(t) +
                                             " which has " + std::to_string(ti.numel()));
      producer[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(i);
    }
  }
  // In-place rule (graph-format.md): the writer of an in-place tensor runs after every other reader of
  // the tensor it overwrites.
  for (std::int32_t t = 0; t < nt; ++t) {
    const auto base = p.tensors[static_cast<std::size_t>(t)].inplace_of;
    if (base < 0) continue;
    const auto w = producer[static_cast<std::size_t>(t)];
    if (w < 0) throw error(errc::invalid_graph, "ad::program: in-place " + tname(t) + " has no producer");
    for (std::size_t i = static_cast<std::size_t>(w) + 1; i < p.nodes.size(); ++i)
      for (auto in : p.nodes[i].inputs)
        if (in == base)
          throw error(errc::invalid_graph, "ad::program: node '" + p.nodes[i].name + "' reads " + tname(base) +
                                               " after node '" + p.nodes[static_cast<std::size_t>(w)].name +
                                               "' overwrote it in place");
  }
  for (std::int32_t t = 0; t < nt; ++t) {
    const auto& ti = p.tensors[static_cast<std::size_t>(t)];
    if (producer[static_cast<std::size_t>(t)] < 0 && !may_be_resident(ti.kind) && last_reader[static_cast<std::size_t>(t)] < 0 &&
        ti.kind != tensor_kind::control)
      throw error(errc::invalid_graph, "ad::program: " + tname(t) + " is neither resident nor produced");
  }
  if (p.loss >= nt) throw error(errc::invalid_graph, "ad::program: loss is not a tensor id");
}

// ---- dispatch --------------------------------------------------------------------------------------

// Runs one node. inputs[k] / outputs[k] point at the storage of node.inputs[k] / node.outputs[k]
// (an in-place output may point at the same address as the input it replaces); workspace holds at
// least node.workspace_bytes. Every non-null pointer must be 64-byte aligned (tensor.hpp).
inline void run_node(const node& n, const float* const* inputs, float* const* outputs, void* workspace) {
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
  if (workspace_bytes(n.kind, n.attr) > 0 && (!ws || !is_aligned(ws)))
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
      return k::matmul(a, in[0], in[1], a.bias ? in[2] : nullptr, out[0]);
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
      return k::conv2d(a, in[0], in[1], a.bias ? in[2] : nullptr, out[0], ws);
    }
    case kernel::conv2d_grad_input: return k::conv2d_grad_input(attr_as<conv_attr>(n), in[0], in[1], out[0], ws);
    case kernel::conv2d_grad_weight: return k::conv2d_grad_weight(attr_as<conv_attr>(n), in[0], in[1], out[0], ws);
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

}  // namespace memplan::ad
