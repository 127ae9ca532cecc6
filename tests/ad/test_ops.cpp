// Finite-difference gradient checks for every op's backward kernels, and the kernels' memory
// contract: full writes (NaN poison never leaks) and identical bits at any 64-byte aligned address.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "grad_check.hpp"

using namespace memplan::ad;
using adtest::check_gradients;

namespace {
var w(tape& t, const std::string& name, shape_t s, double lo = -1.0, double hi = 1.0) {
  return t.weight(name, std::move(s), init::uniform(lo, hi));
}
// Moves values away from the kinks of relu / max so that central differences are smooth.
void away_from_zero(std::span<float> v, float margin = 0.05f) {
  for (auto& x : v)
    if (std::abs(x) < margin) x = x < 0 ? -margin - std::abs(x) : margin + x;
}
void distinct_values(std::span<float> v, std::uint64_t seed) {
  std::vector<float> vals(v.size());
  for (std::size_t i = 0; i < vals.size(); ++i) vals[i] = 0.1f * static_cast<float>(i) - 0.05f * static_cast<float>(vals.size());
  rng g(seed);
  for (std::size_t i = vals.size(); i > 1; --i) std::swap(vals[i - 1], vals[static_cast<std::size_t>(g.below(static_cast<std::int64_t>(i)))]);
  std::copy(vals.begin(), vals.end(), v.begin());
}
}  // namespace

TEST_CASE("grad: matmul plain, transposed views and a bias") {
  tape t;
  auto a = w(t, "a", {3, 4});
  auto b = w(t, "b", {4, 5});
  auto c = w(t, "c", {5, 4});
  auto bias = w(t, "bias", {5});
  auto y1 = t.matmul(a, b);                              // [3,5]
  auto y2 = t.matmul(t.transpose(c), t.transpose(y1));   // [4,5]x[5,3] -> [4,3], both read transposed
  auto y3 = t.linear(t.transpose(y2), b, bias);          // [3,4]x[4,5] + bias
  CHECK(check_gradients(t, y3) > 0);
}

TEST_CASE("grad: batched matmul over head-split views (attention layout)") {
  tape t;
  const std::int64_t B = 2, T = 3, H = 2, D = 4;
  auto q = w(t, "q", {B, T, H * D});
  auto k = w(t, "k", {B, T, H * D});
  auto v = w(t, "v", {B, T, H * D});
  auto heads = [&](var x) { return t.permute(t.reshape(x, {B, T, H, D}), {0, 2, 1, 3}); };  // [B,H,T,D] view
  auto s = t.matmul(heads(q), t.transpose(heads(k)), 0.5f);  // [B,H,T,T]
  auto p = t.softmax(s);
  auto o = t.matmul(p, heads(v));  // [B,H,T,D]
  auto merged = t.reshape(t.permute(o, {0, 2, 1, 3}), {B, T, H * D});  // copy (non-contiguous -> reshape)
  CHECK(check_gradients(t, merged) > 0);
}

TEST_CASE("grad: add and mul, same shape and broadcast") {
  tape t;
  auto a = w(t, "a", {4, 6});
  auto b = w(t, "b", {4, 6});
  auto c = w(t, "c", {6});
  auto y = t.add(t.mul(a, b), t.mul(t.add(a, c), c));
  y = t.add(y, t.scale(a, -0.7f));
  CHECK(check_gradients(t, y) > 0);
}

TEST_CASE("grad: relu, sigmoid, tanh") {
  tape t;
  auto a = w(t, "a", {5, 7}, -2.0, 2.0);
  auto y = t.add(t.relu(a), t.add(t.sigmoid(a), t.tanh(a)));
  CHECK(check_gradients(t, y, [](eager_runner& r) { away_from_zero(r.data("a")); }) > 0);
}

TEST_CASE("grad: conv2d with padding, stride and bias") {
  for (auto sp : {std::pair<std::int64_t, std::int64_t>{1, 1}, {2, 0}, {2, 1}}) {
    const std::int64_t stride = sp.first, pad = sp.second;  // (structured bindings cannot be captured in C++20)
    CAPTURE(stride);
    CAPTURE(pad);
    tape t;
    auto x = w(t, "x", {2, 3, 6, 5});
    auto k = w(t, "k", {4, 3, 3, 3}, -0.5, 0.5);
    auto b = w(t, "b", {4});
    auto y = t.conv2d(x, k, b, {stride, pad});
    CHECK(check_gradients(t, y) > 0);
  }
}

TEST_CASE("grad: max pooling (saved argmax) and average pooling") {
  tape t;
  auto x = w(t, "x", {2, 2, 6, 6});
  auto y = t.add(t.max_pool2d(x, 2), t.avg_pool2d(x, 2));
  auto z = t.max_pool2d(x, 3, 2);  // overlapping windows: gradients meet in one element
  auto g = t.global_avg_pool(x);
  CHECK(check_gradients(t, y, [](eager_runner& r) { distinct_values(r.data("x"), 7); }) > 0);
  tape t2;
  auto x2 = w(t2, "x", {2, 2, 7, 7});
  CHECK(check_gradients(t2, t2.max_pool2d(x2, 3, 2), [](eager_runner& r) { distinct_values(r.data("x"), 9); }) > 0);
  (void)z;
  (void)g;
  tape t3;
  auto x3 = w(t3, "x", {2, 3, 4, 4});
  CHECK(check_gradients(t3, t3.global_avg_pool(x3)) > 0);
}

TEST_CASE("grad: batch norm (4-D and 2-D) in training mode") {
  tape t;
  auto x = w(t, "x", {4, 3, 3, 3}, -2.0, 2.0);
  auto g = w(t, "gamma", {3}, 0.5, 1.5);
  auto b = w(t, "beta", {3});
  CHECK(check_gradients(t, t.batch_norm(x, g, b)) > 0);
  tape t2;
  auto x2 = w(t2, "x", {6, 4}, -2.0, 2.0);
  auto g2 = w(t2, "gamma", {4}, 0.5, 1.5);
  auto b2 = w(t2, "beta", {4});
  CHECK(check_gradients(t2, t2.batch_norm(x2, g2, b2)) > 0);
}

TEST_CASE("grad: layer norm over the last dimension") {
  tape t;
  auto x = w(t, "x", {2, 3, 6}, -2.0, 2.0);
  auto g = w(t, "gamma", {6}, 0.5, 1.5);
  auto b = w(t, "beta", {6});
  CHECK(check_gradients(t, t.layer_norm(x, g, b)) > 0);
}

TEST_CASE("grad: softmax and softmax cross-entropy") {
  tape t;
  auto x = w(t, "x", {4, 5}, -2.0, 2.0);
  CHECK(check_gradients(t, t.softmax(x)) > 0);
  tape t2;
  auto logits = w(t2, "logits", {6, 4}, -2.0, 2.0);
  auto labels = t2.input("labels", {6});
  auto r = t2.softmax_cross_entropy(logits, labels);
  CHECK(check_gradients(t2, r.loss, [](eager_runner& run) {
          auto l = run.data("labels");
          for (std::size_t i = 0; i < l.size(); ++i) l[i] = static_cast<float>((i * 3) % 4);
        }) > 0);
}

TEST_CASE("grad: embedding, mean over an axis, sum") {
  tape t;
  auto table = w(t, "table", {7, 3});
  auto ids = t.input("ids", {2, 5});
  auto e = t.embedding(table, ids);  // [2,5,3]
  auto m = t.mean(e, 1);             // [2,3]
  auto y = t.add(t.mul(m, m), t.sum(e));
  CHECK(check_gradients(t, y, [](eager_runner& r) {
          auto v = r.data("ids");
          for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 5 + 1) % 7 == 3 ? 3 : (i * 5 + 1) % 7);
        }) > 0);
}

TEST_CASE("grad: materialised views (strided copy) and reshape") {
  tape t;
  auto x = w(t, "x", {2, 3, 4});
  auto p = t.relu(t.permute(x, {2, 0, 1}));  // relu needs a contiguous operand: a strided_copy is inserted
  auto y = t.reshape(p, {4, 6});
  CHECK(check_gradients(t, y, [](eager_runner& r) { away_from_zero(r.data("x")); }) > 0);
}

// ---- kernel memory contract -----------------------------------------------------------------------

namespace {
// Runs every node of a program with each tensor at an offset (a multiple of 64 bytes) inside one
// big poison-filled block, like a planned arena would, and returns all final tensor bytes.
std::vector<std::vector<float>> run_in_block(const program& p, std::int64_t shift_floats, float garbage) {
  std::vector<std::int64_t> off(p.tensors.size());
  std::int64_t at = shift_floats;
  for (std::size_t t = 0; t < p.tensors.size(); ++t) {
    if (p.tensors[t].inplace_of >= 0) continue;
    off[t] = at;
    at += (p.tensors[t].numel() + 15) / 16 * 16 + 16 * (1 + static_cast<std::int64_t>(t % 3));
  }
  for (std::size_t t = 0; t < p.tensors.size(); ++t) off[t] = off[static_cast<std::size_t>(p.storage_of(static_cast<std::int32_t>(t)))];
  std::int64_t ws = 0;
  for (const auto& n : p.nodes) ws = std::max(ws, n.workspace_bytes);
  float_buffer block(at + 64), wsb(ws / 4 + 16);
  block.fill(garbage);
  wsb.fill(garbage);
  std::vector<bool> produced(p.tensors.size(), false);
  for (const auto& n : p.nodes)
    for (auto o : n.outputs) produced[static_cast<std::size_t>(o)] = true;
  for (std::size_t t = 0; t < p.tensors.size(); ++t)
    if (!produced[t] && p.tensors[t].inplace_of < 0)
      fill_initial(p.tensors[t].init, {block.data() + off[t], static_cast<std::size_t>(p.tensors[t].numel())});
  std::vector<const float*> ins;
  std::vector<float*> outs;
  for (const auto& n : p.nodes) {
    ins.clear();
    outs.clear();
    for (auto i : n.inputs) ins.push_back(block.data() + off[static_cast<std::size_t>(i)]);
    for (auto o : n.outputs) outs.push_back(block.data() + off[static_cast<std::size_t>(o)]);
    run_node(n, ins.data(), outs.data(), wsb.data());
  }
  std::vector<std::vector<float>> r;
  for (std::size_t t = 0; t < p.tensors.size(); ++t) {
    const float* b = block.data() + off[t];
    r.emplace_back(b, b + p.tensors[t].numel());
  }
  return r;
}

bool same_bits_all(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].size() != b[i].size() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)) != 0) return false;
  return true;
}

program every_op_program(bool use_adam) {
  tape t("every-op", 3);
  auto x = t.input("x", {4, 2, 6, 6});
  auto lab = t.input("labels", {4});
  auto ids = t.input("ids", {4, 3});
  auto k1 = t.weight("k1", {3, 2, 3, 3}, init::he_normal(18));
  auto kb = t.weight("kb", {3}, init::uniform(-0.1, 0.1));
  auto g = t.weight("g", {3}, init::uniform(0.5, 1.5));
  auto be = t.weight("be", {3}, init::zeros());
  auto h = t.relu(t.batch_norm(t.conv2d(x, k1, kb, {1, 1}), g, be));
  h = t.add(t.max_pool2d(h, 2), t.avg_pool2d(h, 2));        // [4,3,3,3]
  auto f = t.reshape(h, {4, 27});
  auto emb = t.weight("emb", {5, 27}, init::normal(0, 0.1));
  f = t.add(f, t.mean(t.embedding(emb, ids), 1));
  auto lg = t.weight("lg", {27}, init::constant(1.0));
  auto lb = t.weight("lb", {27}, init::zeros());
  f = t.layer_norm(f, lg, lb);
  auto w1 = t.weight("w1", {27, 8}, init::glorot_uniform(27, 8));
  auto b1 = t.weight("b1", {8}, init::zeros());
  auto z = t.tanh(t.linear(f, w1, b1));
  z = t.mul(t.sigmoid(z), t.softmax(z));
  auto sc = t.weight("sc", {8}, init::uniform(0.5, 1.5));
  z = t.scale(t.mul(z, sc), 0.5f);                                                    // broadcast multiplier
  z = t.add(z, t.reshape(t.relu(t.permute(t.reshape(z, {4, 2, 4}), {0, 2, 1})), {4, 8}));  // strided copy
  auto w2 = t.weight("w2", {3, 8}, init::glorot_uniform(8, 3));
  auto logits = t.matmul(z, t.transpose(w2));
  auto r = t.softmax_cross_entropy(logits, lab);
  return use_adam ? t.training_step(r.loss, adam{0.01f}) : t.training_step(r.loss, sgd{0.05f, 0.9f});
}

}  // namespace

TEST_CASE("kernels: identical bits at different addresses over NaN or garbage, all ops, one training step") {
  for (bool use_adam : {true, false}) {
  CAPTURE(use_adam);
  program p = every_op_program(use_adam);
  // Feeds get initializers here so that every run starts from the same data; labels and ids in range.
  p.tensors[static_cast<std::size_t>(p.find("x"))].init = init::normal(0, 1, 77);
  p.tensors[static_cast<std::size_t>(p.find("labels"))].init = init::constant(2.0);
  p.tensors[static_cast<std::size_t>(p.find("ids"))].init = init::constant(4.0);
  const auto a = run_in_block(p, 0, std::nanf(""));
  const auto b = run_in_block(p, 16 * 37, -1.0e30f);
  const auto c = run_in_block(p, 16 * 5, poison_value());
  CHECK(same_bits_all(a, b));
  CHECK(same_bits_all(a, c));
  // and no NaN anywhere in any final tensor (no kernel read unwritten memory)
  for (std::size_t t = 0; t < a.size(); ++t)
    for (float v : a[t]) {
      INFO("tensor " << p.tensors[t].name);
      REQUIRE(std::isfinite(v));
    }
  // the eager runner (own allocations, poison on/off) gives the same bits too
  eager_runner e1(p, {.poison = true}), e2(p, {.poison = false});
  e1.run();
  e2.run();
  for (auto [wt, gt] : p.weight_grads) {
    auto v1 = e1.data(wt), v2 = e2.data(wt);
    const auto& ref = a[static_cast<std::size_t>(wt)];
    CHECK(std::memcmp(v1.data(), v2.data(), v1.size_bytes()) == 0);
    CHECK(std::memcmp(v1.data(), ref.data(), v1.size_bytes()) == 0);
  }
  }
}

TEST_CASE("run_node: rejects misaligned pointers with a clear error") {
  tape t;
  auto a = t.weight("a", {4}, init::zeros());
  auto y = t.relu(a);
  (void)y;
  const auto& n = t.recorded().nodes.at(0);
  float_buffer buf(32);
  const float* in[] = {buf.data() + 1};
  float* out[] = {buf.data() + 16};
  CHECK_THROWS_AS(run_node(n, in, out, nullptr), memplan::error);
}

TEST_CASE("kernels: bad labels and token ids raise memplan::error") {
  softmax_attr a{2, 3};
  float_buffer x(6), lab(2), loss(1), probs(6);
  x.fill(0.0f);
  lab.data()[0] = 1.0f;
  lab.data()[1] = 3.0f;  // out of range
  CHECK_THROWS_AS(kernels::softmax_xent(a, x.data(), lab.data(), loss.data(), probs.data()), memplan::error);
  lab.data()[1] = 0.5f;  // not integral
  CHECK_THROWS_AS(kernels::softmax_xent(a, x.data(), lab.data(), loss.data(), probs.data()), memplan::error);
  embedding_attr e{1, 4, 2};
  float_buffer tab(8), id(1), out(2);
  tab.fill(0.0f);
  id.data()[0] = -1.0f;
  CHECK_THROWS_AS(kernels::embedding(e, tab.data(), id.data(), out.data()), memplan::error);
}
