// Operator implementations (ad/implementations.hpp, ad/impl_kernels.hpp): every implementation of
// matmul and the convolution kernels agrees with a naive reference within rounding, writes all of its
// output, stays inside the workspace it declares (the bytes past it are poisoned and must come back
// untouched, and reading them would turn results into NaN), is deterministic and independent of
// 64-byte aligned addresses; the eager runner runs the chosen implementations; calibration and the
// problem's implementation lists.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <memplan/ad/calibrate.hpp>
#include <memplan/ad/data.hpp>
#include <memplan/ad/eager.hpp>
#include <memplan/ad/graph.hpp>
#include <memplan/ad/models/cnn.hpp>
#include <memplan/ad/models/mlp.hpp>
#include <memplan/ad/models/transformer.hpp>
#include <memplan/ad/program.hpp>
#include <memplan/core/adapt.hpp>
#include <memplan/core/timeline.hpp>

#include "grad_check.hpp"
#include "ad_support.hpp"

using adtest::random_vec;
using adtest::make;
using adtest::same_bits;

using namespace memplan::ad;

namespace {



std::uint32_t bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// One run of implementation `impl` over inputs `ins` at an offset of `shift` 64-byte lines in every
// buffer: outputs prefilled with NaN, the workspace and `guard` floats past it poisoned. Checks that
// the guard is untouched and returns the outputs.
struct guarded_result {
  std::vector<std::vector<float>> out;
  bool guard_intact = true;
};

guarded_result run_guarded(const node& n, std::int32_t impl, const std::vector<std::vector<float>>& ins,
                           const std::vector<std::int64_t>& out_sizes, int shift = 0) {
  constexpr std::int64_t guard = 256;
  const std::int64_t pad = 16 * shift;  // 16 floats = 64 bytes
  std::vector<float_buffer> in_buf, out_buf;
  std::vector<const float*> in_ptr;
  std::vector<float*> out_ptr;
  for (const auto& v : ins) {
    in_buf.emplace_back(static_cast<std::int64_t>(v.size()) + pad);
    std::copy(v.begin(), v.end(), in_buf.back().data() + pad);
    in_ptr.push_back(in_buf.back().data() + pad);
  }
  for (auto s : out_sizes) {
    out_buf.emplace_back(s + pad);
    out_buf.back().fill(std::nanf(""));
    out_ptr.push_back(out_buf.back().data() + pad);
  }
  const auto ws_floats = (impl_workspace_bytes(n, impl) + 3) / 4;
  float_buffer ws(ws_floats + guard + pad);
  ws.fill(poison_value());
  run_node(n, impl, in_ptr.data(), out_ptr.data(), ws.data() + pad);
  guarded_result r;
  for (std::int64_t i = 0; i < guard; ++i) r.guard_intact &= bits(ws.data()[pad + ws_floats + i]) == bits(poison_value());
  for (std::size_t k = 0; k < out_sizes.size(); ++k) r.out.emplace_back(out_ptr[k], out_ptr[k] + out_sizes[k]);
  return r;
}


// Every implementation of n against the reference `ref` (relative to the reference's largest
// magnitude), full write, guard, determinism and address independence.
void check_all_implementations(const node& n, const std::vector<std::vector<float>>& ins, const std::vector<float>& ref,
                               std::vector<std::int64_t> out_sizes, std::vector<std::int64_t> check_only = {}) {
  double scale = 1e-6;
  for (auto v : ref) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  const auto impls = implementations(n);
  REQUIRE(impls.size() == static_cast<std::size_t>(implementation_count(n.kind)));
  for (std::int32_t k = 0; k < static_cast<std::int32_t>(impls.size()); ++k) {
    CAPTURE(impls[static_cast<std::size_t>(k)].name);
    const auto a = run_guarded(n, k, ins, out_sizes, 0);
    CHECK(a.guard_intact);
    double worst = 0.0;
    bool finite = true;
    const auto& y = a.out[0];
    for (std::size_t i = 0; i < ref.size(); ++i) {
      if (!check_only.empty() && check_only[i] == 0) {
        CHECK(std::isnan(y[i]));  // bytes the kernel must not touch (padding of a strided output)
        continue;
      }
      finite &= std::isfinite(y[i]);
      worst = std::max(worst, std::fabs(static_cast<double>(y[i]) - ref[i]));
    }
    CHECK(finite);
    CHECK(worst <= 1e-5 * scale * 10);
    const auto b = run_guarded(n, k, ins, out_sizes, 3);  // another 64-byte aligned address
    CHECK(same_bits(a.out[0], b.out[0]));
    CHECK(b.guard_intact);
  }
}

// Naive strided batched GEMM (the reference).
std::vector<float> naive_matmul(const matmul_attr& a, const std::vector<float>& A, const std::vector<float>& B,
                                const std::vector<float>& bias, std::int64_t c_size, std::vector<std::int64_t>& written) {
  std::vector<float> C(static_cast<std::size_t>(c_size), 0.0f);
  written.assign(static_cast<std::size_t>(c_size), 0);
  for (std::int64_t b0 = 0; b0 < a.batch[0]; ++b0)
    for (std::int64_t b1 = 0; b1 < a.batch[1]; ++b1)
      for (std::int64_t i = 0; i < a.m; ++i)
        for (std::int64_t j = 0; j < a.n; ++j) {
          double s = 0.0;
          for (std::int64_t p = 0; p < a.k; ++p) {
            const auto ai = b0 * a.stride_a[0] + b1 * a.stride_a[1] + (a.trans_a ? p * a.lda + i : i * a.lda + p);
            const auto bi = b0 * a.stride_b[0] + b1 * a.stride_b[1] + (a.trans_b ? j * a.ldb + p : p * a.ldb + j);
            s += static_cast<double>(A[static_cast<std::size_t>(ai)]) * B[static_cast<std::size_t>(bi)];
          }
          s *= a.alpha;
          if (a.bias) s += bias[static_cast<std::size_t>(j)];
          const auto ci = static_cast<std::size_t>(b0 * a.stride_c[0] + b1 * a.stride_c[1] + i * a.ldc + j);
          C[ci] = static_cast<float>(s);
          written[ci] = 1;
        }
  return C;
}

void check_matmul(std::int64_t m, std::int64_t n, std::int64_t k, bool ta, bool tb, std::int64_t batch0, std::int64_t batch1,
                  bool bias, float alpha, std::int64_t pad) {
  CAPTURE(m);
  CAPTURE(n);
  CAPTURE(k);
  CAPTURE(ta);
  CAPTURE(tb);
  matmul_attr a;
  a.m = m, a.n = n, a.k = k;
  a.batch[0] = batch0, a.batch[1] = batch1;
  a.trans_a = ta, a.trans_b = tb;
  const auto ra = ta ? k : m, ca = ta ? m : k, rb = tb ? n : k, cb = tb ? k : n;
  a.lda = ca + pad, a.ldb = cb + pad, a.ldc = n + pad;
  a.stride_a[1] = ra * a.lda, a.stride_a[0] = batch1 * a.stride_a[1];
  a.stride_b[1] = rb * a.ldb, a.stride_b[0] = batch1 * a.stride_b[1];
  a.stride_c[1] = m * a.ldc, a.stride_c[0] = batch1 * a.stride_c[1];
  a.alpha = alpha;
  a.bias = bias;
  const auto e = extents(make(kernel::matmul, a));
  const auto A = random_vec(std::max<std::int64_t>(e.in[0], 1), 1), B = random_vec(std::max<std::int64_t>(e.in[1], 1), 2),
             bv = random_vec(n, 3);
  std::vector<std::int64_t> written;
  const auto c_size = std::max<std::int64_t>(e.out[0], 1);
  const auto ref = naive_matmul(a, A, B, bv, c_size, written);
  std::vector<std::vector<float>> ins{A, B};
  if (bias) ins.push_back(bv);
  check_all_implementations(make(kernel::matmul, a), ins, ref, {c_size}, written);
}

// Naive direct convolution and its gradients (double accumulation).
struct conv_ref {
  std::vector<float> y, dx, dw;
};
conv_ref naive_conv(const conv_attr& a, const std::vector<float>& x, const std::vector<float>& w, const std::vector<float>& b,
                    const std::vector<float>& dy) {
  conv_ref r;
  r.y.assign(static_cast<std::size_t>(a.n * a.f * a.ho * a.wo), 0.0f);
  std::vector<double> dx(static_cast<std::size_t>(a.n * a.c * a.h * a.w), 0.0), dw(static_cast<std::size_t>(a.f * a.c * a.kh * a.kw), 0.0);
  for (std::int64_t s = 0; s < a.n; ++s)
    for (std::int64_t f = 0; f < a.f; ++f)
      for (std::int64_t oh = 0; oh < a.ho; ++oh)
        for (std::int64_t ow = 0; ow < a.wo; ++ow) {
          double acc = a.bias ? b[static_cast<std::size_t>(f)] : 0.0;
          const auto yi = static_cast<std::size_t>(((s * a.f + f) * a.ho + oh) * a.wo + ow);
          for (std::int64_t c = 0; c < a.c; ++c)
            for (std::int64_t i = 0; i < a.kh; ++i)
              for (std::int64_t j = 0; j < a.kw; ++j) {
                const auto ih = oh * a.stride_h - a.pad_h + i, iw = ow * a.stride_w - a.pad_w + j;
                if (ih < 0 || ih >= a.h || iw < 0 || iw >= a.w) continue;
                const auto xi = static_cast<std::size_t>(((s * a.c + c) * a.h + ih) * a.w + iw);
                const auto wi = static_cast<std::size_t>(((f * a.c + c) * a.kh + i) * a.kw + j);
                acc += static_cast<double>(x[xi]) * w[wi];
                dx[xi] += static_cast<double>(w[wi]) * dy[yi];
                dw[wi] += static_cast<double>(x[xi]) * dy[yi];
              }
          r.y[yi] = static_cast<float>(acc);
        }
  r.dx.assign(dx.begin(), dx.end());
  r.dw.assign(dw.begin(), dw.end());
  return r;
}

void check_conv(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, std::int64_t f, std::int64_t kh, std::int64_t kw,
                std::int64_t stride, std::int64_t pad, bool bias) {
  CAPTURE(n);
  CAPTURE(c);
  CAPTURE(h);
  CAPTURE(f);
  CAPTURE(kh);
  CAPTURE(stride);
  CAPTURE(pad);
  conv_attr a;
  a.n = n, a.c = c, a.h = h, a.w = w, a.f = f, a.kh = kh, a.kw = kw;
  a.stride_h = a.stride_w = stride;
  a.pad_h = a.pad_w = pad;
  a.ho = (h + 2 * pad - kh) / stride + 1;
  a.wo = (w + 2 * pad - kw) / stride + 1;
  a.bias = bias;
  const auto x = random_vec(n * c * h * w, 11), wt = random_vec(f * c * kh * kw, 12), b = random_vec(f, 13),
             dy = random_vec(n * f * a.ho * a.wo, 14);
  const auto ref = naive_conv(a, x, wt, b, dy);
  std::vector<std::vector<float>> fwd_ins{x, wt};
  if (bias) fwd_ins.push_back(b);
  {
    INFO("conv2d");
    check_all_implementations(make(kernel::conv2d, a), fwd_ins, ref.y, {static_cast<std::int64_t>(ref.y.size())});
  }
  {
    INFO("conv2d_grad_input");
    check_all_implementations(make(kernel::conv2d_grad_input, a), {wt, dy}, ref.dx, {static_cast<std::int64_t>(ref.dx.size())});
  }
  {
    INFO("conv2d_grad_weight");
    check_all_implementations(make(kernel::conv2d_grad_weight, a), {x, dy}, ref.dw, {static_cast<std::int64_t>(ref.dw.size())});
  }
}

}  // namespace

TEST_CASE("implementations: lists, names, exact workspaces, default first") {
  matmul_attr m;
  m.m = 70, m.n = 600, m.k = 300, m.lda = 300, m.ldb = 600, m.ldc = 600;
  const auto mn = make(kernel::matmul, m);
  const auto mi = implementations(mn);
  REQUIRE(mi.size() == 3);
  CHECK(mi[0].name == "eigen");
  CHECK(mi[0].workspace_bytes == 0);
  CHECK(mi[1].name == "packed");
  // one A block (64 rows x 256 deep) + one B panel (256 deep x 512 columns)
  CHECK(mi[1].workspace_bytes == (64 * 256 + 256 * 512) * 4);
  CHECK(mi[2].name == "loop");
  CHECK(mi[2].workspace_bytes == 0);
  conv_attr c;
  c.n = 2, c.c = 3, c.h = c.w = 10, c.f = 4, c.kh = c.kw = 3, c.pad_h = c.pad_w = 1, c.ho = c.wo = 10;
  for (auto k : {kernel::conv2d, kernel::conv2d_grad_input, kernel::conv2d_grad_weight}) {
    const auto ci = implementations(make(k, c));
    REQUIRE(ci.size() == 3);
    CHECK(ci[0].workspace_bytes == 27 * 100 * 4);  // the whole column matrix
    CHECK(ci[1].workspace_bytes == 27 * 64 * 4);   // a tile of 64 output positions
    CHECK(ci[2].name == "direct");
    CHECK(ci[2].workspace_bytes == 0);
    CHECK(find_implementation(make(k, c), "direct") == impl::conv_direct);
  }
  const auto relu = make(kernel::relu, unary_attr{10, 1.0f});
  CHECK(implementations(relu).size() == 1);
  CHECK(implementation_count(kernel::relu) == 1);
  CHECK(find_implementation(relu, "direct") == -1);
  CHECK_THROWS_AS((void)impl_workspace_bytes(relu, 1), memplan::error);
  CHECK_THROWS_AS((void)impl_workspace_bytes(mn, -2), memplan::error);
}

TEST_CASE("implementations: matmul (eigen, packed, loop) == naive GEMM, full writes, workspace never exceeded") {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      check_matmul(3, 4, 5, ta, tb, 2, 3, true, 0.5f, 2);    // small, batched, padded rows, alpha, bias
      check_matmul(9, 13, 7, ta, tb, 1, 1, false, 1.0f, 0);  // edges of the 4x8 register tile
    }
  check_matmul(70, 530, 300, false, false, 1, 1, true, 1.0f, 0);  // more than one block in every dimension
  check_matmul(70, 530, 300, true, true, 1, 1, false, 2.0f, 3);
  check_matmul(5, 6, 0, false, false, 1, 2, true, 1.0f, 0);  // k = 0: C = bias
  check_matmul(1, 1, 1, false, true, 1, 1, false, 1.0f, 0);
}

TEST_CASE("implementations: convolution (im2col_gemm, tiled, direct) and both gradients == naive loops") {
  check_conv(2, 3, 7, 6, 4, 3, 3, 1, 1, true);     // padding, bias, 42 output positions (< one tile)
  check_conv(2, 2, 12, 11, 3, 3, 3, 1, 1, false);  // 132 positions: two full tiles + a partial one
  check_conv(1, 3, 9, 9, 2, 3, 2, 2, 0, true);     // stride 2, non-square window
  check_conv(3, 1, 8, 8, 5, 5, 5, 2, 2, false);    // padding wider than some windows reach
  check_conv(2, 4, 16, 16, 8, 1, 1, 1, 0, false);  // 1x1
}

TEST_CASE("implementations: run_node refuses unknown implementations and a missing workspace") {
  matmul_attr m;
  m.m = 8, m.n = 8, m.k = 8, m.lda = m.ldb = m.ldc = 8;
  const auto n = make(kernel::matmul, m);
  float_buffer A(64), B(64), C(64);
  A.fill(1.0f);
  B.fill(1.0f);
  const float* in[] = {A.data(), B.data()};
  float* out[] = {C.data()};
  CHECK_THROWS_AS(run_node(n, 3, in, out, nullptr), memplan::error);
  CHECK_THROWS_WITH_AS(run_node(n, impl::matmul_packed, in, out, nullptr), doctest::Contains("workspace"), memplan::error);
  run_node(n, impl::matmul_loop, in, out, nullptr);  // no workspace needed
  CHECK(C.data()[0] == 8.0f);
}

namespace {
// A choice for every node of a program, drawn from `seed` (0: every node its last implementation).
std::vector<std::int32_t> random_choices(const program& p, std::uint64_t seed) {
  rng g(seed);
  std::vector<std::int32_t> c;
  for (const auto& n : p.nodes)
    c.push_back(seed == 0 ? implementation_count(n.kind) - 1 : static_cast<std::int32_t>(g.below(implementation_count(n.kind))));
  return c;
}
}  // namespace

TEST_CASE("implementations: whole-model gradients are right with non-default implementations (eager_options::impl)") {
  adtest::grad_check_options o;
  o.samples = 6;
  o.h = 1e-3;
  auto feed = [](const model& m, std::uint64_t seed, bool tokens, std::int64_t vocab) {
    return [&m, seed, tokens, vocab](eager_runner& r) {
      rng g(seed);
      for (auto& v : r.data(m.features)) v = tokens ? static_cast<float>(g.below(vocab)) : static_cast<float>(g.normal());
      for (auto& v : r.data(m.labels)) v = static_cast<float>(g.below(m.classes));
    };
  };
  auto cnn = models::cnn({.batch = 3, .channels = 2, .height = 8, .width = 8, .width_mult = 2, .classes = 3}, sgd{0.0f});
  auto tr = models::transformer({.batch = 3, .length = 4, .vocab = 6, .dim = 8, .heads = 2, .mlp_hidden = 8, .classes = 2}, sgd{0.0f});
  for (std::uint64_t seed : {0ull, 5ull}) {
    CAPTURE(seed);
    CHECK(adtest::check_program_gradients(cnn.step, feed(cnn, 4, false, 0), o, random_choices(cnn.step, seed)) > 0);
    CHECK(adtest::check_program_gradients(tr.step, feed(tr, 5, true, 6), o, random_choices(tr.step, seed)) > 0);
  }
}

TEST_CASE("implementations: the eager runner runs each node's chosen implementation and counts its workspace") {
  auto m = models::cnn({.batch = 4}, adam{0.01f});
  const auto direct = random_choices(m.step, 0);  // every convolution direct, every matmul loop: no workspace
  eager_runner def(m.step, {.poison = true}), dir(m.step, {.poison = true, .impl = direct});
  data_stream<shapes16> d1(shapes16{}, 3), d2(shapes16{}, 3);
  const float l1 = train_step(def, m, d1), l2 = train_step(dir, m, d2);
  CHECK(std::isfinite(l2));
  CHECK(std::fabs(l1 - l2) <= 1e-5f * std::fabs(l1));
  std::int64_t max_ws = 0;
  for (const auto& n : m.step.nodes) max_ws = std::max(max_ws, n.workspace_bytes);
  REQUIRE(max_ws > 0);
  CHECK(dir.peak_bytes() <= def.peak_bytes());
  // Its peak is the core's peak of the given order with these implementations' workspaces.
  const auto prob = make_problem(m.step);
  auto tl = memplan::given_timeline(prob);
  CHECK(tl.peak == def.peak_bytes());
  for (auto& st : tl.steps)
    if (memplan::runs_op(st.kind) && !prob.implementations(st.op()).empty()) st.impl = direct[static_cast<std::size_t>(st.op())];
  memplan::derive(prob, tl);
  CHECK(tl.peak == dir.peak_bytes());
  CHECK(dir.implementation(0) == direct[0]);
  CHECK_THROWS_AS(eager_runner(m.step, {.impl = {0, 1}}), memplan::error);
  auto bad = direct;
  bad[0] = 7;
  CHECK_THROWS_AS(eager_runner(m.step, {.impl = bad}), memplan::error);
}

TEST_CASE("costs: flop_costs, calibrate (seconds, every implementation timed), time-limit fallback") {
  auto m = models::cnn({.batch = 2, .width_mult = 2}, sgd{0.1f});
  const auto f = flop_costs(m.step);
  CHECK(f.in == cost_table::unit::flops);
  REQUIRE(f.cost.size() == m.step.nodes.size());
  for (std::size_t i = 0; i < m.step.nodes.size(); ++i) {
    CHECK(f.of(i, -1) == m.step.nodes[i].flops);
    CHECK(f.cost[i].size() == static_cast<std::size_t>(implementation_count(m.step.nodes[i].kind)));
  }
  const auto c = calibrate(m.step, {.repeats = 3, .min_sample_seconds = 1e-5});
  CHECK(c.in == cost_table::unit::seconds);
  REQUIRE(c.cost.size() == m.step.nodes.size());
  for (std::size_t i = 0; i < m.step.nodes.size(); ++i) {
    CHECK(c.measured[i] == 1);
    for (auto s : c.cost[i]) CHECK((s > 0.0 && std::isfinite(s)));
  }
  // A time limit that runs out during the first node: that node is measured (the limit is checked after
  // each node), the rest estimated from their FLOPs at the measured seconds per FLOP.
  const auto b = calibrate(m.step, {.repeats = 1, .min_sample_seconds = 0.0, .time_limit_s = 1e-12});
  CHECK(b.in == cost_table::unit::seconds);
  CHECK(b.measured[0] == 1);
  std::size_t estimated = 0;
  for (std::size_t i = 1; i < m.step.nodes.size(); ++i) {
    estimated += b.measured[i] == 0;
    if (b.measured[i] == 0)
      for (std::size_t k = 0; k < b.cost[i].size(); ++k) CHECK(b.cost[i][k] == doctest::Approx(f.cost[i][k] * b.cost[0][0] / f.cost[0][0]));
  }
  CHECK(estimated == m.step.nodes.size() - 1);
  // No time limit: nothing timed, the FLOP-based table.
  const auto z = calibrate(m.step, {.time_limit_s = 0.0});
  CHECK(z.in == cost_table::unit::flops);
  CHECK(z.cost == f.cost);
}

TEST_CASE("make_problem(program): the graph's problem plus every node's implementations") {
  for (int which = 0; which < 3; ++which) {
    CAPTURE(which);
    const model m = which == 0   ? models::mlp({.batch = 16}, sgd{0.1f, 0.9f})
                    : which == 1 ? models::cnn({.batch = 4}, adam{})
                                 : models::transformer({.batch = 4}, adam{});
    const auto a = memplan::make_problem(to_dataflow_graph(m.step));
    const auto b = make_problem(m.step);
    REQUIRE(a.num_ops() == b.num_ops());
    REQUIRE(a.num_tensors() == b.num_tensors());
    CHECK(a.name() == b.name());
    for (memplan::tensor_id t = 0; t < a.num_tensors(); ++t) {
      CHECK(a.tensor_name(t) == b.tensor_name(t));
      CHECK(a.bytes(t) == b.bytes(t));
      CHECK(a.kind(t) == b.kind(t));
      CHECK(a.inplace_of(t) == b.inplace_of(t));
    }
    int with_alternatives = 0;
    for (memplan::op_id o = 0; o < a.num_ops(); ++o) {
      const auto& n = m.step.nodes[static_cast<std::size_t>(o)];
      CHECK(a.op_name(o) == b.op_name(o));
      CHECK(a.op_type(o) == b.op_type(o));
      CHECK(a.phase(o) == b.phase(o));
      CHECK(a.cost(o) == b.cost(o));
      CHECK(a.workspace(o) == b.workspace(o));
      CHECK(std::equal(a.inputs(o).begin(), a.inputs(o).end(), b.inputs(o).begin(), b.inputs(o).end()));
      CHECK(std::equal(a.outputs(o).begin(), a.outputs(o).end(), b.outputs(o).begin(), b.outputs(o).end()));
      CHECK(a.implementations(o).empty());
      const auto im = b.implementations(o);
      if (implementation_count(n.kind) == 1) {
        CHECK(im.empty());
        continue;
      }
      ++with_alternatives;
      const auto ours = implementations(n);
      REQUIRE(im.size() == ours.size());
      CHECK(im[0].cost == b.cost(o));  // the op's own cost and workspace are the default's
      CHECK(im[0].workspace == b.workspace(o));
      for (std::size_t k = 0; k < ours.size(); ++k) {
        CHECK(im[k].name == ours[k].name);
        CHECK(im[k].workspace == ours[k].workspace_bytes);
        CHECK(im[k].cost == doctest::Approx(n.flops * ours[k].flop_factor));
      }
    }
    CHECK(with_alternatives > 0);
  }
  // Measured costs: seconds for every op and implementation.
  auto m = models::mlp({.batch = 8, .hidden = 16, .layers = 1}, adam{});
  const auto c = calibrate(m.step, {.repeats = 1, .min_sample_seconds = 1e-5});
  const auto p = make_problem(m.step, c);
  for (memplan::op_id o = 0; o < p.num_ops(); ++o) {
    CHECK(p.cost(o) == c.of(static_cast<std::size_t>(o), -1));
    for (std::size_t k = 0; k < p.implementations(o).size(); ++k)
      CHECK(p.implementations(o)[k].cost == c.of(static_cast<std::size_t>(o), static_cast<std::int32_t>(k)));
  }
  CHECK_THROWS_AS((void)make_problem(m.step, flop_costs(models::mlp({}, adam{}).step)), memplan::error);
}
