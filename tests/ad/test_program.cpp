// ad::program and run_node: validation errors, and kernels against naive reference loops.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include <memplan/ad/program.hpp>
#include <memplan/ad/tape.hpp>
#include "ad_support.hpp"

using adtest::random_vec;
using adtest::make;

using namespace memplan::ad;

namespace {
float_buffer buf(const std::vector<float>& v) {
  float_buffer b(static_cast<std::int64_t>(v.size()));
  std::copy(v.begin(), v.end(), b.data());
  return b;
}
}  // namespace

TEST_CASE("run_node matmul == naive strided batched GEMM, all transpose combinations") {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      CAPTURE(ta);
      CAPTURE(tb);
      matmul_attr a;
      a.m = 3, a.n = 4, a.k = 5;
      a.batch[0] = 2, a.batch[1] = 3;
      a.trans_a = ta, a.trans_b = tb;
      const auto ra = ta ? a.k : a.m, ca = ta ? a.m : a.k, rb = tb ? a.n : a.k, cb = tb ? a.k : a.n;
      a.lda = ca + 2, a.ldb = cb + 1, a.ldc = a.n + 3;  // padded rows
      a.stride_a[1] = ra * a.lda, a.stride_a[0] = 3 * a.stride_a[1];
      a.stride_b[1] = rb * a.ldb, a.stride_b[0] = 3 * a.stride_b[1];
      a.stride_c[1] = a.m * a.ldc, a.stride_c[0] = 3 * a.stride_c[1];
      a.alpha = 0.5f;
      a.bias = true;
      auto A = random_vec(2 * a.stride_a[0], 1), B = random_vec(2 * a.stride_b[0], 2), bias = random_vec(a.n, 3);
      auto bA = buf(A), bB = buf(B), bb = buf(bias);
      float_buffer C(2 * a.stride_c[0]);
      C.fill(-7.0f);
      const float* in[] = {bA.data(), bB.data(), bb.data()};
      float* out[] = {C.data()};
      run_node(make(kernel::matmul, a), in, out, nullptr);
      for (int b0 = 0; b0 < 2; ++b0)
        for (int b1 = 0; b1 < 3; ++b1)
          for (int i = 0; i < a.m; ++i)
            for (int j = 0; j < a.n; ++j) {
              double s = 0;
              for (int l = 0; l < a.k; ++l) {
                const auto ai = b0 * a.stride_a[0] + b1 * a.stride_a[1] + (ta ? l * a.lda + i : i * a.lda + l);
                const auto bi = b0 * a.stride_b[0] + b1 * a.stride_b[1] + (tb ? j * a.ldb + l : l * a.ldb + j);
                s += static_cast<double>(A[static_cast<std::size_t>(ai)]) * B[static_cast<std::size_t>(bi)];
              }
              const auto ci = b0 * a.stride_c[0] + b1 * a.stride_c[1] + i * a.ldc + j;
              CHECK(C.data()[ci] == doctest::Approx(0.5 * s + bias[static_cast<std::size_t>(j)]).epsilon(1e-5));
            }
      // padding between rows is untouched
      CHECK(C.data()[a.n] == -7.0f);
    }
}

TEST_CASE("run_node conv2d == naive direct convolution") {
  conv_attr a;
  a.n = 2, a.c = 3, a.h = 7, a.w = 6, a.f = 4, a.kh = 3, a.kw = 2, a.stride_h = a.stride_w = 2, a.pad_h = a.pad_w = 1;
  a.ho = (a.h + 2 - a.kh) / 2 + 1, a.wo = (a.w + 2 - a.kw) / 2 + 1;
  a.bias = true;
  auto x = random_vec(a.n * a.c * a.h * a.w, 4), w = random_vec(a.f * a.c * a.kh * a.kw, 5), b = random_vec(a.f, 6);
  auto bx = buf(x), bw = buf(w), bb = buf(b);
  float_buffer y(a.n * a.f * a.ho * a.wo), ws(a.workspace_floats());
  y.fill(std::nanf(""));
  ws.fill(std::nanf(""));
  const float* in[] = {bx.data(), bw.data(), bb.data()};
  float* out[] = {y.data()};
  run_node(make(kernel::conv2d, a), in, out, ws.data());
  for (int s = 0; s < a.n; ++s)
    for (int f = 0; f < a.f; ++f)
      for (int oh = 0; oh < a.ho; ++oh)
        for (int ow = 0; ow < a.wo; ++ow) {
          double acc = b[static_cast<std::size_t>(f)];
          for (int c = 0; c < a.c; ++c)
            for (int i = 0; i < a.kh; ++i)
              for (int j = 0; j < a.kw; ++j) {
                const auto ih = oh * 2 - 1 + i, iw = ow * 2 - 1 + j;
                if (ih < 0 || ih >= a.h || iw < 0 || iw >= a.w) continue;
                acc += static_cast<double>(x[static_cast<std::size_t>(((s * a.c + c) * a.h + ih) * a.w + iw)]) *
                       w[static_cast<std::size_t>(((f * a.c + c) * a.kh + i) * a.kw + j)];
              }
          CHECK(y.data()[((s * a.f + f) * a.ho + oh) * a.wo + ow] == doctest::Approx(acc).epsilon(1e-5));
        }
}

TEST_CASE("run_node strided_copy: gather then scatter round-trips a permutation") {
  strided_attr g;
  g.rank = 3;
  g.shape[0] = 4, g.shape[1] = 2, g.shape[2] = 3;  // view [4,2,3] of base [2,3,4] permuted (2,0,1)
  g.stride[0] = 1, g.stride[1] = 12, g.stride[2] = 4;
  auto x = random_vec(24, 7);
  auto bx = buf(x);
  float_buffer y(24), z(24);
  y.fill(std::nanf(""));
  z.fill(std::nanf(""));
  {
    const float* in[] = {bx.data()};
    float* out[] = {y.data()};
    run_node(make(kernel::strided_copy, g), in, out, nullptr);
  }
  for (int i = 0; i < 4; ++i)
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 3; ++b) CHECK(y.data()[(i * 2 + a) * 3 + b] == x[static_cast<std::size_t>(a * 12 + b * 4 + i)]);
  g.scatter = true;
  const float* in[] = {y.data()};
  float* out[] = {z.data()};
  run_node(make(kernel::strided_copy, g), in, out, nullptr);
  for (int i = 0; i < 24; ++i) CHECK(z.data()[i] == x[static_cast<std::size_t>(i)]);
}

TEST_CASE("validate rejects malformed programs, naming the culprit") {
  tape t("v");
  auto a = t.weight("a", {4}, init::zeros());
  auto loss = t.sum(t.relu(a));
  const program good = t.training_step(loss, sgd{0.1f});
  CHECK_NOTHROW(validate(good));
  auto expect_bad = [](program p, const char* what) {
    CAPTURE(what);
    CHECK_THROWS_AS(validate(p), memplan::error);
  };
  {
    auto p = good;
    p.nodes[0].inputs.push_back(0);  // wrong arity
    expect_bad(p, "arity");
  }
  {
    auto p = good;
    p.tensors[static_cast<std::size_t>(p.nodes[0].outputs[0])].shape = {3};  // output smaller than written
    expect_bad(p, "size");
  }
  {
    auto p = good;
    p.nodes[1].outputs = p.nodes[0].outputs;  // two producers
    std::get<reduce_attr>(p.nodes[1].attr).outer = 4, std::get<reduce_attr>(p.nodes[1].attr).mid = 1;
    expect_bad(p, "double producer");
  }
  {
    auto p = good;
    std::swap(p.nodes[0], p.nodes[1]);  // consumer before producer
    expect_bad(p, "order");
  }
  {
    auto p = good;
    p.nodes[0].attr = softmax_attr{1, 4};  // attributes of another kernel
    expect_bad(p, "attr");
  }
  {
    auto p = good;
    auto upd = p.nodes.back();
    p.nodes.pop_back();
    p.nodes.insert(p.nodes.begin() + 1, upd);  // weight overwritten before its other readers ran
    expect_bad(p, "in-place");
  }
  {
    auto p = good;
    p.tensors.push_back(p.tensors[0]);  // duplicate tensor name
    expect_bad(p, "tensor name");
  }
  {
    auto p = good;
    p.nodes[1].name = p.nodes[0].name;  // duplicate node name
    expect_bad(p, "node name");
  }
  {
    auto p = good;
    p.nodes[0].inputs[0] = 999;  // dangling id
    expect_bad(p, "dangling");
  }
}
