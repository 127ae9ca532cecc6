// The tape: views allocate nothing, backward nodes declare minimum dependencies (Chen et al. §3),
// gradient accumulation, in-place optimizer updates and their arithmetic, and clear errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include <memplan/ad/eager.hpp>
#include <memplan/ad/models/transformer.hpp>
#include <memplan/ad/tape.hpp>

using namespace memplan::ad;

namespace {
const node& find_node(const program& p, const std::string& name) {
  for (const auto& n : p.nodes)
    if (n.name == name) return n;
  FAIL("no node " << name);
  return p.nodes.front();
}
int count_kind(const program& p, kernel k, memplan::op_phase ph) {
  return static_cast<int>(std::count_if(p.nodes.begin(), p.nodes.end(), [&](const node& n) { return n.kind == k && n.phase == ph; }));
}
bool reads(const node& n, std::int32_t t) { return std::find(n.inputs.begin(), n.inputs.end(), t) != n.inputs.end(); }
}  // namespace

TEST_CASE("views: reshape, permute and transpose allocate nothing and emit no node") {
  tape t;
  auto x = t.weight("x", {2, 3, 4}, init::zeros());
  const auto tensors = t.recorded().tensors.size(), nodes = t.recorded().nodes.size();
  auto r = t.reshape(x, {6, 4});
  auto p = t.permute(x, {2, 0, 1});
  auto tr = t.transpose(r);
  auto r2 = t.reshape(x, {-1, 12});
  CHECK(t.recorded().tensors.size() == tensors);
  CHECK(t.recorded().nodes.size() == nodes);
  for (auto v : {r, p, tr, r2}) CHECK(t.storage_of(v) == t.storage_of(x));
  CHECK(t.shape(p) == shape_t{4, 2, 3});
  CHECK(t.shape(tr) == shape_t{4, 6});
  CHECK(t.shape(r2) == shape_t{2, 12});
  CHECK(t.is_contiguous(r));
  CHECK_FALSE(t.is_contiguous(p));
  // matmul reads a transposed view in place: one node, no copy
  auto w = t.weight("w", {6, 5}, init::zeros());
  auto y = t.matmul(tr, w);  // [4,6] x [6,5]
  CHECK(t.recorded().nodes.size() == nodes + 1);
  CHECK(t.recorded().nodes.back().kind == kernel::matmul);
  CHECK(std::get<matmul_attr>(t.recorded().nodes.back().attr).trans_a);
  CHECK(t.shape(y) == shape_t{4, 5});
  // an elementwise op on a permuted view materialises it once (documented), a contiguous one does not
  auto q = t.relu(p);
  CHECK(t.recorded().nodes.size() == nodes + 3);
  CHECK(t.recorded().nodes[nodes + 1].kind == kernel::strided_copy);
  (void)t.relu(r);
  CHECK(t.recorded().nodes.size() == nodes + 4);
  (void)q;
}

TEST_CASE("views: multi-head attention splits heads without copies, only the head merge copies") {
  auto m = models::transformer({.batch = 4, .length = 5, .vocab = 7, .dim = 12, .heads = 3, .mlp_hidden = 8}, sgd{0.1f});
  CHECK(count_kind(m.step, kernel::strided_copy, memplan::op_phase::forward) == 1);
  CHECK(count_kind(m.step, kernel::strided_copy, memplan::op_phase::backward) == 1);
  // the two attention matmuls are batched over (batch, head) with strided operands
  int batched = 0;
  for (const auto& n : m.step.nodes)
    if (n.kind == kernel::matmul && n.phase == memplan::op_phase::forward) {
      const auto& a = std::get<matmul_attr>(n.attr);
      if (a.batch[0] == 4 && a.batch[1] == 3) ++batched;
    }
  CHECK(batched == 2);
}

TEST_CASE("backward: each node declares only what it needs") {
  tape t;
  auto x = t.input("x", {4, 2, 6, 6});
  auto lab = t.input("labels", {4});
  auto k = t.weight("k", {3, 2, 3, 3}, init::he_normal(18));
  auto c = t.conv2d(x, k, std::nullopt, {1, 1});
  auto r = t.relu(c);
  auto mp = t.max_pool2d(r, 2);
  auto w = t.weight("w", {27, 5}, init::glorot_uniform(27, 5));
  auto y = t.matmul(t.reshape(mp, {4, 27}), w);
  auto loss = t.softmax_cross_entropy(y, lab);
  const auto p = t.training_step(loss.loss, sgd{0.1f});
  const auto W = t.storage_of(w), K = t.storage_of(k), X = t.storage_of(x);
  const auto C = t.storage_of(c), R = t.storage_of(r), MP = t.storage_of(mp), Y = t.storage_of(y);
  // matmul: dW from X and dY only; dX from dY and W only
  const auto& mm = p.nodes[3];
  REQUIRE(mm.kind == kernel::matmul);
  const auto& dw = find_node(p, mm.name + ".grad_b");
  const auto& da = find_node(p, mm.name + ".grad_a");
  CHECK(reads(dw, MP));
  CHECK_FALSE(reads(dw, W));
  CHECK(reads(da, W));
  CHECK_FALSE(reads(da, MP));
  CHECK_FALSE(reads(dw, Y));
  // relu backward reads its output, not its input
  const auto& rg = find_node(p, p.nodes[1].name + ".grad");
  CHECK(reads(rg, R));
  CHECK_FALSE(reads(rg, C));
  // max-pool backward reads the saved argmax and dY, neither the pool's input nor its output
  const auto& pg = find_node(p, p.nodes[2].name + ".grad");
  CHECK(reads(pg, p.nodes[2].outputs[1]));
  CHECK_FALSE(reads(pg, R));
  CHECK_FALSE(reads(pg, MP));
  // conv: the weight gradient reads x and dY; no gradient is computed for the data input x
  const auto& kg = find_node(p, p.nodes[0].name + ".grad_weight");
  CHECK(reads(kg, X));
  CHECK_FALSE(reads(kg, K));
  CHECK(count_kind(p, kernel::conv2d_grad_input, memplan::op_phase::backward) == 0);
  // every weight gets exactly one update, after every other reader of the weight
  CHECK(p.weight_grads.size() == 2);
  CHECK(count_kind(p, kernel::sgd, memplan::op_phase::update) == 2);
}

TEST_CASE("backward: a tensor with several consumers gets explicit accumulation adds") {
  tape t;
  auto a = t.weight("a", {3, 4}, init::uniform(-1, 1));
  auto b = t.relu(a);
  auto c = t.add(t.mul(b, b), t.tanh(b));  // b is read 4 times (mul twice, tanh, relu grad reads it as output)
  auto loss = t.sum(c);
  const auto p = t.training_step(loss, sgd{0.1f});
  int acc = 0;
  for (const auto& n : p.nodes)
    if (n.name.rfind("accumulate:d:" + p.tensors[static_cast<std::size_t>(t.storage_of(b))].name, 0) == 0) ++acc;
  CHECK(acc == 2);  // three contributions -> two adds
}

TEST_CASE("optimizers: SGD with momentum and Adam update in place with the textbook arithmetic") {
  for (int which = 0; which < 2; ++which) {
    CAPTURE(which);
    tape t;
    auto w = t.weight("w", {5}, init::uniform(-1, 1));
    auto r = t.input("r", {5});
    auto loss = t.sum(t.mul(w, r));  // dL/dw = r
    const auto p = which == 0 ? t.training_step(loss, sgd{0.1f, 0.9f}) : t.training_step(loss, adam{0.05f});
    validate(p);
    const auto W = t.storage_of(w);
    std::int32_t w_next = -1;
    for (std::size_t i = 0; i < p.tensors.size(); ++i)
      if (p.tensors[i].inplace_of == W) w_next = static_cast<std::int32_t>(i);
    REQUIRE(w_next >= 0);
    CHECK(p.tensors[static_cast<std::size_t>(w_next)].kind == memplan::tensor_kind::weight);
    eager_runner e(p);
    std::vector<float> w0(e.data(W).begin(), e.data(W).end());
    const float rv[5] = {1.0f, -2.0f, 0.5f, 0.0f, 3.0f};
    std::copy(rv, rv + 5, e.data("r").begin());
    e.run();
    e.run();
    for (int i = 0; i < 5; ++i) {
      double expect;
      if (which == 0) {
        expect = w0[static_cast<std::size_t>(i)] - 0.1 * rv[i] - 0.1 * (0.9 * rv[i] + rv[i]);  // v1 = g, v2 = 0.9 g + g
      } else {
        // Adam with a constant gradient: mhat = g and vhat = g^2 at every step -> w -= lr * g/(|g| + eps)
        const double s = rv[i] == 0.0f ? 0.0 : (rv[i] > 0 ? 1.0 : -1.0);
        expect = w0[static_cast<std::size_t>(i)] - 2 * 0.05 * s;
      }
      CHECK(e.data(W)[static_cast<std::size_t>(i)] == doctest::Approx(expect).epsilon(1e-5));
    }
    if (which == 1) CHECK(e.data("adam.step")[0] == 2.0f);
  }
}

TEST_CASE("program facts: exact bytes, FLOPs and workspace") {
  tape t;
  auto x = t.input("x", {2, 3, 8, 8});
  auto k = t.weight("k", {4, 3, 3, 3}, init::zeros());
  auto y = t.conv2d(x, k, std::nullopt, {2, 1});
  const auto& n = t.recorded().nodes.back();
  CHECK(t.shape(y) == shape_t{2, 4, 4, 4});
  CHECK(t.recorded().tensors[static_cast<std::size_t>(t.storage_of(y))].bytes() == 2 * 4 * 4 * 4 * 4);
  CHECK(n.workspace_bytes == 3 * 3 * 3 * 4 * 4 * 4);
  CHECK(n.flops == 2.0 * 2 * 4 * 27 * 16);
  auto a = t.weight("a", {5, 7}, init::zeros());
  auto b = t.weight("b", {7, 3}, init::zeros());
  (void)t.matmul(a, b);
  CHECK(t.recorded().nodes.back().flops == 2.0 * 5 * 3 * 7);
  CHECK(t.recorded().nodes.back().workspace_bytes == 0);
}

TEST_CASE("tape errors name the culprit") {
  tape t;
  auto a = t.weight("a", {3, 4}, init::zeros());
  auto b = t.weight("b", {5, 6}, init::zeros());
  CHECK_THROWS_AS(t.matmul(a, b), memplan::error);
  CHECK_THROWS_AS(t.add(a, b), memplan::error);
  CHECK_THROWS_AS(t.reshape(a, {5, 5}), memplan::error);
  CHECK_THROWS_AS(t.permute(a, {0, 0}), memplan::error);
  CHECK_THROWS_AS(t.weight("a", {1}, init::zeros()), memplan::error);
  CHECK_THROWS_AS(t.conv2d(a, b), memplan::error);
  CHECK_THROWS_AS((void)t.training_step(a, sgd{}), memplan::error);  // not a scalar
  auto x = t.input("x", {1});
  CHECK_THROWS_AS((void)t.training_step(t.sum(x), sgd{}), memplan::error);  // depends on no weight
  CHECK_THROWS_AS((void)t.training_step(t.sum(a), sgd{-1.0f}), memplan::error);
  try {
    (void)t.matmul(a, b);
  } catch (const memplan::error& e) {
    CHECK(std::string(e.what()).find("[3,4]") != std::string::npos);
  }
}
