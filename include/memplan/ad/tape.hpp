#pragma once
// ad::tape: define-by-run recording with shapes only (no compute at record time), then
// training_step(loss, optimizer) emits the whole step as an ad::program: forward nodes, loss, backward
// nodes that each depend only on what they truly need (Chen et al. 2016 §3, "declare minimum
// dependencies"), explicit gradient accumulation (add nodes) for tensors with several consumers, and
// the optimizer update written in place into the weights and optimizer states.
//
// Views. reshape/permute/transpose return views that allocate nothing: a view is (storage, shape,
// strides) over one program tensor and is a permutation of it. matmul reads any view whose last two
// dims have unit stride on one side (a transposed operand) and whose batch dims merge into at most two
// strided dims (e.g. a head split [B,T,H,d] -> [B,H,T,d]); its gradient is written back through the
// same strides. Every other op needs a contiguous operand; given a non-contiguous view the tape first
// materialises it with an explicit strided_copy node (like PyTorch's .contiguous()), which does allocate.
#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <memplan/ad/backward.hpp>
#include <memplan/ad/initializer.hpp>
#include <memplan/ad/ops.hpp>
#include <memplan/ad/optimizers.hpp>
#include <memplan/ad/program.hpp>
#include <memplan/ad/step_builder.hpp>
#include <memplan/ad/tensor.hpp>
#include <memplan/base/error.hpp>
#include <memplan/base/kinds.hpp>

namespace memplan::ad {

// A handle to a tape value (a storage or a view of one).
struct var {
  std::int32_t id = -1;
};

struct conv2d_options {
  std::int64_t stride = 1;
  std::int64_t padding = 0;
};

class tape {
 public:
  explicit tape(std::string name = "model", std::uint64_t seed = 1) : seed_(seed) { prog_.name = std::move(name); }

  // ---- leaves ----
  // A data-feed tensor: the runner fills it before every step (labels and token ids as integral floats).
  var input(std::string name, shape_t shape) {
    auto v = leaf(std::move(name), std::move(shape), tensor_kind::input, {});
    prog_.feeds.push_back(vars_[static_cast<std::size_t>(v.id)].storage);
    return v;
  }
  // A trainable tensor. An initializer with seed 0 gets a seed derived from the tape seed and the
  // weight's position, so two tapes built alike draw the same weights.
  var weight(std::string name, shape_t shape, initializer init) {
    if (init.seed == 0) init.seed = seed_ * 0x100000001b3ull + static_cast<std::uint64_t>(prog_.tensors.size()) + 1;
    return leaf(std::move(name), std::move(shape), tensor_kind::weight, init);
  }

  // ---- queries ----
  [[nodiscard]] shape_t shape(var v) const { return at(v).shape; }  // by value: recording may grow the tape
  [[nodiscard]] std::int32_t storage_of(var v) const { return at(v).storage; }
  [[nodiscard]] bool is_contiguous(var v) const {
    const auto& x = at(v);
    std::int64_t expect = 1;
    for (std::size_t i = x.shape.size(); i > 0; --i) {
      if (x.shape[i - 1] != 1 && x.strides[i - 1] != expect) return false;
      expect *= x.shape[i - 1];
    }
    return true;
  }
  [[nodiscard]] const program& recorded() const { return prog_; }

  // ---- views (allocate nothing) ----
  var reshape(var x, shape_t shape) {
    const auto& xs = at(x);
    std::int64_t known = 1;
    int infer = -1;
    for (std::size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == -1 && infer < 0) infer = static_cast<int>(i);
      else if (shape[i] < 0) throw error(errc::invalid_argument, "ad::reshape: bad target shape " + to_string(shape));
      else known *= shape[i];
    }
    if (infer >= 0) shape[static_cast<std::size_t>(infer)] = known > 0 ? numel(xs.shape) / known : 0;
    if (numel(shape) != numel(xs.shape))
      throw error(errc::invalid_argument, "ad::reshape: cannot view " + to_string(xs.shape) + " as " + to_string(shape));
    const auto base = is_contiguous(x) ? x : contiguous(x);
    return make_view(at(base).storage, shape, contiguous_strides(shape));
  }
  var permute(var x, const std::vector<int>& perm) {
    const auto& xs = at(x);
    if (perm.size() != xs.shape.size())
      throw error(errc::invalid_argument, "ad::permute: permutation rank differs from " + to_string(xs.shape));
    std::vector<bool> seen(perm.size(), false);
    shape_t sh(perm.size()), st(perm.size());
    for (std::size_t i = 0; i < perm.size(); ++i) {
      const auto p = perm[i];
      if (p < 0 || static_cast<std::size_t>(p) >= perm.size() || seen[static_cast<std::size_t>(p)])
        throw error(errc::invalid_argument, "ad::permute: not a permutation");
      seen[static_cast<std::size_t>(p)] = true;
      sh[i] = xs.shape[static_cast<std::size_t>(p)];
      st[i] = xs.strides[static_cast<std::size_t>(p)];
    }
    return make_view(xs.storage, sh, st);
  }
  // Swaps the last two dimensions.
  var transpose(var x) {
    const auto r = static_cast<int>(shape(x).size());
    if (r < 2) throw error(errc::invalid_argument, "ad::transpose: needs rank >= 2, got " + to_string(shape(x)));
    std::vector<int> perm(static_cast<std::size_t>(r));
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[static_cast<std::size_t>(r - 2)], perm[static_cast<std::size_t>(r - 1)]);
    return permute(x, perm);
  }
  // Materialises a view (strided_copy); identity for contiguous values.
  var contiguous(var x) {
    if (is_contiguous(x)) return x;
    const auto xs = at(x);
    if (xs.shape.size() > static_cast<std::size_t>(strided_attr::max_rank))
      throw error(errc::invalid_argument, "ad::contiguous: rank above " + std::to_string(strided_attr::max_rank));
    strided_attr a;
    a.rank = static_cast<int>(xs.shape.size());
    for (int d = 0; d < a.rank; ++d) a.shape[d] = xs.shape[static_cast<std::size_t>(d)], a.stride[d] = xs.strides[static_cast<std::size_t>(d)];
    return op1(kernel::strided_copy, a, {xs.storage}, xs.shape);
  }

  // ---- ops ----
  // [..., m, k] x [..., k, n] -> [..., n] with equal batch dims; alpha scales the product.
  var matmul(var a, var b, float alpha = 1.0f) { return matmul_impl(a, b, alpha, std::nullopt); }

  // x [..., k] * w [k, n] (+ b [n]) -> [..., n]
  var linear(var x, var w, std::optional<var> b = std::nullopt) {
    const auto xs = shape(x);
    if (xs.empty() || shape(w).size() != 2 || shape(w)[0] != xs.back())
      throw error(errc::invalid_argument, "ad::linear: cannot apply weight " + to_string(shape(w)) + " to " + to_string(xs));
    const auto n = shape(w)[1];
    if (b && (shape(*b).size() != 1 || shape(*b)[0] != n))
      throw error(errc::invalid_argument, "ad::linear: bias " + to_string(shape(*b)) + " does not match " + std::to_string(n));
    const auto x2 = reshape(x, {numel(xs) / std::max<std::int64_t>(xs.back(), 1), xs.back()});
    auto y = matmul_impl(x2, w, 1.0f, b);
    auto ys = xs;
    ys.back() = n;
    return reshape(y, ys);
  }

  var add(var a, var b) { return binary(kernel::add, a, b); }
  var mul(var a, var b) { return binary(kernel::mul, a, b); }
  var scale(var x, float alpha) {
    const auto s = dense(x);
    return op1(kernel::scale, unary_attr{numel(shape(x)), alpha}, {s}, shape(x));
  }
  var relu(var x) { return unary(kernel::relu, x); }
  var sigmoid(var x) { return unary(kernel::sigmoid, x); }
  var tanh(var x) { return unary(kernel::tanh, x); }

  // x [N,C,H,W], w [F,C,KH,KW], b [F] -> [N,F,Ho,Wo]
  var conv2d(var x, var w, std::optional<var> b = std::nullopt, conv2d_options o = {}) {
    const auto xs = shape(x), ws = shape(w);
    if (xs.size() != 4 || ws.size() != 4 || ws[1] != xs[1] || o.stride < 1 || o.padding < 0)
      throw error(errc::invalid_argument, "ad::conv2d: input " + to_string(xs) + ", weight " + to_string(ws));
    conv_attr a;
    a.n = xs[0], a.c = xs[1], a.h = xs[2], a.w = xs[3];
    a.f = ws[0], a.kh = ws[2], a.kw = ws[3];
    a.stride_h = a.stride_w = o.stride;
    a.pad_h = a.pad_w = o.padding;
    if (a.h + 2 * a.pad_h < a.kh || a.w + 2 * a.pad_w < a.kw)
      throw error(errc::invalid_argument, "ad::conv2d: kernel larger than the padded input " + to_string(xs));
    a.ho = (a.h + 2 * a.pad_h - a.kh) / a.stride_h + 1;
    a.wo = (a.w + 2 * a.pad_w - a.kw) / a.stride_w + 1;
    std::vector<std::int32_t> ins{dense(x), dense(w)};
    if (b) {
      if (shape(*b) != shape_t{a.f}) throw error(errc::invalid_argument, "ad::conv2d: bias must be [" + std::to_string(a.f) + "]");
      a.bias = true;
      ins.push_back(dense(*b));
    }
    return op1(kernel::conv2d, a, ins, {a.n, a.f, a.ho, a.wo});
  }

  // Max pooling without padding. The argmax indices are a second (saved) output, so the backward pass
  // needs neither the input nor the output.
  var max_pool2d(var x, std::int64_t k, std::int64_t stride = 0) {
    const auto a = pool(x, k, k, stride ? stride : k, "max_pool2d");
    const auto s = dense(x);
    const auto n = emit_forward(kernel::max_pool2d, a, {s}, {{"y", pooled(x, a)}, {"argmax", pooled(x, a)}});
    return make_view(prog_.nodes[static_cast<std::size_t>(n)].outputs[0], pooled(x, a),
                     contiguous_strides(pooled(x, a)));
  }
  var avg_pool2d(var x, std::int64_t k, std::int64_t stride = 0) {
    const auto a = pool(x, k, k, stride ? stride : k, "avg_pool2d");
    return op1(kernel::avg_pool2d, a, {dense(x)}, pooled(x, a));
  }
  // [N,C,H,W] -> [N,C]
  var global_avg_pool(var x) {
    const auto xs = shape(x);
    if (xs.size() != 4) throw error(errc::invalid_argument, "ad::global_avg_pool: needs [N,C,H,W], got " + to_string(xs));
    const auto a = pool(x, xs[2], xs[3], 1, "global_avg_pool");
    const auto y = op1(kernel::avg_pool2d, a, {dense(x)}, pooled(x, a));
    return reshape(y, {xs[0], xs[1]});
  }

  // Training-mode batch norm over [N,C,H,W] (or [N,C]); saves mean and 1/std as extra outputs.
  var batch_norm(var x, var gamma, var beta, float eps = 1e-5f) {
    const auto xs = shape(x);
    if (xs.size() != 4 && xs.size() != 2)
      throw error(errc::invalid_argument, "ad::batch_norm: needs [N,C,H,W] or [N,C], got " + to_string(xs));
    const auto c = xs[1];
    if (shape(gamma) != shape_t{c} || shape(beta) != shape_t{c})
      throw error(errc::invalid_argument, "ad::batch_norm: gamma and beta must be [" + std::to_string(c) + "]");
    norm_attr a{xs[0], c, xs.size() == 4 ? xs[2] * xs[3] : 1, eps};
    const auto n = emit_forward(kernel::batch_norm, a, {dense(x), dense(gamma), dense(beta)},
                                {{"y", xs}, {"mean", {c}}, {"invstd", {c}}});
    return make_view(prog_.nodes[static_cast<std::size_t>(n)].outputs[0], xs, contiguous_strides(xs));
  }
  // Layer norm over the last dimension; saves per-row mean and 1/std.
  var layer_norm(var x, var gamma, var beta, float eps = 1e-5f) {
    const auto xs = shape(x);
    if (xs.empty()) throw error(errc::invalid_argument, "ad::layer_norm: scalar input");
    const auto d = xs.back(), rows = numel(xs) / std::max<std::int64_t>(d, 1);
    if (shape(gamma) != shape_t{d} || shape(beta) != shape_t{d})
      throw error(errc::invalid_argument, "ad::layer_norm: gamma and beta must be [" + std::to_string(d) + "]");
    norm_attr a{rows, d, 1, eps};
    const auto n = emit_forward(kernel::layer_norm, a, {dense(x), dense(gamma), dense(beta)},
                                {{"y", xs}, {"mean", {rows}}, {"invstd", {rows}}});
    return make_view(prog_.nodes[static_cast<std::size_t>(n)].outputs[0], xs, contiguous_strides(xs));
  }
  // Softmax over the last dimension.
  var softmax(var x) {
    const auto xs = shape(x);
    if (xs.empty()) throw error(errc::invalid_argument, "ad::softmax: scalar input");
    const auto cols = xs.back();
    return op1(kernel::softmax, softmax_attr{numel(xs) / std::max<std::int64_t>(cols, 1), cols}, {dense(x)}, xs);
  }

  struct xent_result {
    var loss;   // [1], mean over rows
    var probs;  // [rows, classes], saved for the backward pass
  };
  // logits [M, C], labels [M] (class ids as integral floats).
  xent_result softmax_cross_entropy(var logits, var labels) {
    const auto ls = shape(logits);
    if (ls.size() != 2 || shape(labels) != shape_t{ls[0]})
      throw error(errc::invalid_argument, "ad::softmax_cross_entropy: logits " + to_string(ls) + ", labels " +
                                              to_string(shape(labels)));
    const auto n = emit_forward(kernel::softmax_xent, softmax_attr{ls[0], ls[1]}, {dense(logits), dense(labels)},
                                {{"loss", {1}}, {"probs", ls}});
    const auto& nd = prog_.nodes[static_cast<std::size_t>(n)];
    prog_.tensors[static_cast<std::size_t>(nd.outputs[0])].kind = tensor_kind::output;
    prog_.tensors[static_cast<std::size_t>(nd.outputs[1])].kind = tensor_kind::output;
    return {make_view(nd.outputs[0], {1}, {1}), make_view(nd.outputs[1], ls, contiguous_strides(ls))};
  }
  // table [V, D], ids [...] (integral floats) -> [..., D]
  var embedding(var table, var ids) {
    const auto ts = shape(table);
    if (ts.size() != 2) throw error(errc::invalid_argument, "ad::embedding: table must be [V, D], got " + to_string(ts));
    auto os = shape(ids);
    const auto count = numel(os);
    os.push_back(ts[1]);
    return op1(kernel::embedding, embedding_attr{count, ts[0], ts[1]}, {dense(table), dense(ids)}, os);
  }
  // Sum of all elements -> [1].
  var sum(var x) {
    return op1(kernel::sum_mid, reduce_attr{1, numel(shape(x)), 1, 1.0f}, {dense(x)}, {1});
  }
  // Mean over one axis (the axis disappears).
  var mean(var x, int axis) {
    const auto xs = shape(x);
    if (axis < 0) axis += static_cast<int>(xs.size());
    if (axis < 0 || static_cast<std::size_t>(axis) >= xs.size())
      throw error(errc::invalid_argument, "ad::mean: axis out of range for " + to_string(xs));
    reduce_attr a;
    for (int i = 0; i < axis; ++i) a.outer *= xs[static_cast<std::size_t>(i)];
    a.mid = xs[static_cast<std::size_t>(axis)];
    for (auto i = static_cast<std::size_t>(axis) + 1; i < xs.size(); ++i) a.inner *= xs[i];
    a.scale = a.mid > 0 ? 1.0f / static_cast<float>(a.mid) : 0.0f;
    auto ys = xs;
    ys.erase(ys.begin() + axis);
    return op1(kernel::sum_mid, a, {dense(x)}, ys);
  }

  // ---- the training step ----
  // Forward + loss seed + backward + the optimizer's updates, as one validated program (backward.hpp).
  template <optimizer O>
  [[nodiscard]] program training_step(var loss, const O& opt) const {
    return build_training_step(prog_, storage_of(loss), needs_grad_, shape(loss), opt);
  }

 private:
  struct value {
    shape_t shape, strides;
    std::int32_t storage = -1;
  };

  const value& at(var v) const {
    if (v.id < 0 || static_cast<std::size_t>(v.id) >= vars_.size())
      throw error(errc::invalid_argument, "ad::tape '" + prog_.name + "': unknown var " + std::to_string(v.id));
    return vars_[static_cast<std::size_t>(v.id)];
  }

  var make_view(std::int32_t storage, shape_t shape, shape_t strides) {
    vars_.push_back({std::move(shape), std::move(strides), storage});
    return {static_cast<std::int32_t>(vars_.size() - 1)};
  }

  var leaf(std::string name, shape_t shape, tensor_kind kind, initializer init) {
    for (const auto& t : prog_.tensors)
      if (t.name == name) throw error(errc::invalid_argument, "ad::tape: duplicate tensor name '" + name + "'");
    (void)numel(shape);
    prog_.tensors.push_back({std::move(name), shape, kind, -1, init});
    needs_grad_.push_back(kind == tensor_kind::weight);
    return make_view(static_cast<std::int32_t>(prog_.tensors.size() - 1), shape, contiguous_strides(shape));
  }

  // The storage of a contiguous version of x (inserting a strided_copy when x is a permuted view).
  std::int32_t dense(var x) { return at(contiguous(x)).storage; }

  // Emits one forward node with fresh output tensors (named node:slot); returns the node index.
  std::int32_t emit_forward(kernel k, node_attr attr, std::vector<std::int32_t> ins,
                            std::vector<std::pair<std::string, shape_t>> outs) {
    const auto name = std::string(to_string(k)) + "#" + std::to_string(prog_.nodes.size());
    bool ng = false;
    for (auto t : ins) ng = ng || needs_grad_[static_cast<std::size_t>(t)];
    step_builder b(prog_);
    std::vector<std::int32_t> out_ids;
    for (auto& [slot, sh] : outs) {
      out_ids.push_back(b.add_tensor(name + ":" + slot, sh, tensor_kind::activation));
      needs_grad_.push_back(ng && out_ids.size() == 1);  // only the first output is differentiable
    }
    return b.add_node(name, k, std::move(attr), std::move(ins), std::move(out_ids), op_phase::forward);
  }
  var op1(kernel k, node_attr attr, std::vector<std::int32_t> ins, const shape_t& out_shape) {
    const auto n = emit_forward(k, std::move(attr), std::move(ins), {{"y", out_shape}});
    return make_view(prog_.nodes[static_cast<std::size_t>(n)].outputs[0], out_shape, contiguous_strides(out_shape));
  }

  var unary(kernel k, var x) { return op1(k, unary_attr{numel(shape(x)), 1.0f}, {dense(x)}, shape(x)); }

  // Same shapes, or b's shape equal to the trailing dims of a (b repeats over the leading ones).
  var binary(kernel k, var a, var b) {
    const auto as = shape(a), bs = shape(b);
    binary_attr ba;
    if (as == bs) {
      ba = {1, numel(as), false};
    } else if (numel(bs) == 1) {
      ba = {numel(as), 1, true};
    } else if (bs.size() <= as.size() && std::equal(bs.begin(), bs.end(), as.end() - static_cast<std::ptrdiff_t>(bs.size()))) {
      ba = {numel(bs) > 0 ? numel(as) / numel(bs) : 0, numel(bs), true};
    } else {
      throw error(errc::invalid_argument, "ad::" + std::string(to_string(k)) + ": shapes " + to_string(as) + " and " +
                                              to_string(bs) + " do not broadcast");
    }
    return op1(k, ba, {dense(a), dense(b)}, as);
  }

  pool_attr pool(var x, std::int64_t kh, std::int64_t kw, std::int64_t stride, const char* what) const {
    const auto xs = shape(x);
    if (xs.size() != 4 || kh < 1 || kw < 1 || stride < 1 || kh > xs[2] || kw > xs[3])
      throw error(errc::invalid_argument, std::string("ad::") + what + ": bad window for input " + to_string(xs));
    pool_attr a;
    a.planes = xs[0] * xs[1], a.h = xs[2], a.w = xs[3];
    a.kh = kh, a.kw = kw, a.stride_h = a.stride_w = stride;
    a.ho = (a.h - kh) / stride + 1;
    a.wo = (a.w - kw) / stride + 1;
    return a;
  }
  shape_t pooled(var x, const pool_attr& a) const { return {shape(x)[0], shape(x)[1], a.ho, a.wo}; }

  // Reading a view as a strided batched matrix operand (see matmul_attr).
  struct operand {
    bool ok = false, trans = false;
    std::int64_t ld = 0;
    shape_t batch_strides;  // one per batch dim of the view
  };
  static operand as_operand(const value& v) {
    operand o;
    const auto r = v.shape.size();
    const auto rows = v.shape[r - 2], cols = v.shape[r - 1];
    const auto sr = v.strides[r - 2], sc = v.strides[r - 1];
    if (cols == 1 || sc == 1) {
      o.trans = false;
      o.ld = rows == 1 ? cols : sr;
    } else if (rows == 1 || sr == 1) {
      o.trans = true;
      o.ld = cols == 1 ? rows : sc;
    } else {
      return o;
    }
    if (o.ld < (o.trans ? rows : cols)) return o;
    o.batch_strides.assign(v.strides.begin(), v.strides.end() - 2);
    o.ok = true;
    return o;
  }

  var matmul_impl(var a, var b, float alpha, std::optional<var> bias) {
    const auto as = shape(a), bs = shape(b);
    if (as.size() < 2 || bs.size() != as.size() || !std::equal(as.begin(), as.end() - 2, bs.begin()) ||
        as[as.size() - 1] != bs[bs.size() - 2])
      throw error(errc::invalid_argument, "ad::matmul: shapes " + to_string(as) + " and " + to_string(bs) + " do not multiply");
    const auto rank = as.size();
    const auto m = as[rank - 2], k = as[rank - 1], n = bs[rank - 1];
    shape_t cs = as;
    cs[rank - 1] = n;
    const auto c_strides = contiguous_strides(cs);
    // Merge batch dims into at most two strided ones; fall back to contiguous copies when impossible.
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (attempt == 1) a = contiguous(a);
      if (attempt == 2) b = contiguous(b);
      const auto oa = as_operand(at(a)), ob = as_operand(at(b));
      if (!oa.ok || !ob.ok) continue;
      std::vector<std::array<std::int64_t, 4>> dims;  // size, stride_a, stride_b, stride_c
      for (std::size_t i = 0; i + 2 < rank; ++i) {
        if (as[i] == 1) continue;
        std::array<std::int64_t, 4> d{as[i], oa.batch_strides[i], ob.batch_strides[i], c_strides[i]};
        if (!dims.empty()) {
          auto& p = dims.back();
          if (p[1] == d[1] * d[0] && p[2] == d[2] * d[0] && p[3] == d[3] * d[0]) {
            p = {p[0] * d[0], d[1], d[2], d[3]};
            continue;
          }
        }
        dims.push_back(d);
      }
      if (dims.size() > 2) continue;
      while (dims.size() < 2) dims.insert(dims.begin(), std::array<std::int64_t, 4>{1, 0, 0, 0});
      matmul_attr ma;
      ma.m = m, ma.n = n, ma.k = k;
      ma.trans_a = oa.trans, ma.trans_b = ob.trans;
      ma.lda = oa.ld, ma.ldb = ob.ld, ma.ldc = n;
      for (int i = 0; i < 2; ++i) {
        ma.batch[i] = dims[static_cast<std::size_t>(i)][0];
        ma.stride_a[i] = dims[static_cast<std::size_t>(i)][1];
        ma.stride_b[i] = dims[static_cast<std::size_t>(i)][2];
        ma.stride_c[i] = dims[static_cast<std::size_t>(i)][3];
      }
      ma.alpha = alpha;
      std::vector<std::int32_t> ins{storage_of(a), storage_of(b)};
      if (bias) {
        if (rank != 2) throw error(errc::invalid_argument, "ad::matmul: a bias needs 2-D operands");
        ma.bias = true;
        ins.push_back(dense(*bias));
      }
      return op1(kernel::matmul, ma, ins, cs);
    }
    throw error(errc::invalid_argument, "ad::matmul: operands " + to_string(as) + " cannot be read as strided matrices");
  }

  program prog_;
  std::vector<value> vars_;
  std::vector<bool> needs_grad_;  // per program tensor
  std::uint64_t seed_;
};

}  // namespace memplan::ad
