// Tests of the zoo builders: op/tensor counts against hand-derived formulas, every graph is a valid
// problem whose given order is topological and plans/verifies, peaks of tiny instances computed by hand.
#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <map>
#include <vector>
#include <string>

#include <memplan/core/analysis.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/schedule/given.hpp>
#include <zoo/zoo.hpp>

using namespace memplan;

namespace {

// Builds the problem, checks the given order, plans it (given | greedy_by_size, verified by plan()).
problem check_valid(const graph::dataflow_graph& g) {
  auto p = make_problem(g);
  CHECK(p.num_ops() == static_cast<std::int32_t>(g.num_ops()));
  CHECK(is_topological(p, given_order(p)));
  auto mp = plan(p, schedule::given{} | place::greedy_by_size{});
  CHECK(mp.stats.peak == peak_of(p, given_order(p)));
  CHECK(mp.stats.peak >= mp.stats.lower_bound);
  CHECK(mp.arena >= mp.stats.peak);
  return p;
}

std::map<std::string, std::int64_t> ops_by_type(const graph::dataflow_graph& g) {
  std::map<std::string, std::int64_t> m;
  for (auto o : g.ops()) ++m[g.op_type(o)];
  return m;
}
std::map<op_phase, std::int64_t> ops_by_phase(const graph::dataflow_graph& g) {
  std::map<op_phase, std::int64_t> m;
  for (auto o : g.ops()) ++m[g.op_phase_of(o)];
  return m;
}
std::int64_t tensors_of_kind(const graph::dataflow_graph& g, tensor_kind k) {
  std::int64_t n = 0;
  for (auto t : g.tensors()) n += g.tensor_kind_of(t) == k;
  return n;
}

}  // namespace

TEST_CASE("zoo mlp: hand-computed tiny training step (ops, sizes, peak)") {
  auto g = zoo::mlp(2, {3, 2});
  // fc1, log_softmax, nll | seed, nll_bw, log_softmax_bw, fc1_bw | sgd W, sgd b
  REQUIRE(g.num_ops() == 9);
  CHECK(g.num_tensors() == 2 + 2 + 4 + 1 + 1 + 1 + 2 + 2);  // in, weights, fwd outs, seed, d lsm, d out, d b + d W, updates
  auto p = check_valid(g);
  CHECK(p.resident_bytes() == 24 + 16 + 24 + 8);
  // Non-resident live bytes per step (see the derivation in docs/benchmarks.md, "tiny MLP"):
  // 16, 32, 24, 28, 40, 48, 48, 32, 8 -> peak 72 + 48.
  const auto prof = profile(p, given_order(p));
  const std::vector<std::int64_t> live{16, 32, 24, 28, 40, 48, 48, 32, 8};
  for (std::size_t i = 0; i < live.size(); ++i) CHECK(prof.live[i] == 72 + live[i]);
  CHECK(prof.peak == 120);
  // The update writes into the weight's storage.
  auto upd = *g.find_tensor("fc1.weight:updated");
  CHECK(g.inplace_of(upd) == g.find_tensor("fc1.weight"));
  CHECK(p.storage_of(*p.find_tensor("fc1.weight:updated")) == p.storage_of(*p.find_tensor("fc1.weight")));
  // Minimal dependencies: fc1's backward reads d(out), x and W -- not the bias.
  auto bw = *g.find_op("fc1_bw");
  CHECK(g.inputs(bw).size() == 3);
  CHECK(g.outputs(bw).size() == 2);  // d bias, d W (x needs no gradient)
}

TEST_CASE("zoo chain: Beaumont chain structure and hand-computed peak") {
  zoo::chain_params c;
  c.u_f = {1, 2};
  c.u_b = {2, 4};
  c.x_bytes = {10, 20, 30};
  c.y_bytes = {1, 2, 3};
  c.ex_f = {100, 0};
  c.ex_b = {0, 200};
  auto g = zoo::chain(c);
  CHECK(g.num_ops() == 2 * 2 + 1);
  CHECK(g.num_tensors() == 2 * 2 + 2);
  auto p = check_valid(g);
  // Order F0 F1 loss B1 B0. x0 resident (10).
  // F0: x0 x1 + ex 100 = 130; F1: x0 x1 x2 = 60; loss: x0 x1 x2 y2 = 63;
  // B1 (reads x2 x1 y2, writes y1, ex 200): 10+20+30+3+2+200 = 265; B0: x0 x1 y1 y0 = 10+20+2+1 = 33.
  const auto prof = profile(p, given_order(p));
  CHECK(prof.live == std::vector<std::int64_t>{130, 60, 63, 265, 33});
  CHECK(prof.peak == 265);
  auto b0 = *g.find_op("B0");
  CHECK(g.inputs(b0).size() == 3);
  CHECK(g.tensor_kind_of(g.outputs(b0)[0]) == tensor_kind::output);
  CHECK_THROWS_AS(zoo::chain(zoo::chain_params{}), memplan::error);
  auto bad = c;
  bad.x_bytes.pop_back();
  CHECK_THROWS_AS(zoo::chain(bad), memplan::error);
}

TEST_CASE("zoo chain: from_resnet gives one virtual layer per stem / block / head") {
  auto cfg = zoo::resnet_config::from_depth(50);
  auto c = zoo::chain_params::from_resnet(cfg);
  CHECK(c.layers() == static_cast<std::size_t>(cfg.blocks() + 2));
  CHECK(c.x_bytes.front() == 32LL * 3 * 224 * 224 * 4);
  CHECK(c.x_bytes[1] == 32LL * 64 * 56 * 56 * 4);           // after the stem's max pool
  CHECK(c.x_bytes[c.layers() - 1] == 32LL * 2048 * 7 * 7 * 4);  // last block
  CHECK(c.x_bytes.back() == 32LL * 1000 * 4);                // logits
  for (std::size_t i = 0; i < c.layers(); ++i) CHECK(c.u_b[i] == doctest::Approx(2 * c.u_f[i]));
  check_valid(zoo::chain(c));
}

namespace {
struct resnet_counts {
  std::int64_t fwd, ops, tensors, weights;
};
// Hand-derived formulas (see zoo/resnet.hpp): C convs (= bns), R relus, B adds.
resnet_counts expected(const zoo::resnet_config& c) {
  const std::int64_t B = c.blocks();
  const std::int64_t nconv = c.bottleneck ? 3 : 2;
  const std::int64_t P = c.bottleneck ? 4 : 3;  // projection shortcuts: first block of each stage (basic: not stage 1)
  const std::int64_t C = 1 + B * nconv + P;
  const std::int64_t R = 1 + B * nconv;
  const std::int64_t F = 2 * C + R + 1 + B + 4;   // + maxpool, adds, avgpool, fc, log_softmax, nll
  const std::int64_t U = 3 * C + 2;               // conv weights, bn gamma/beta, fc weight/bias
  const std::int64_t ops = F + 1 + (F - B) + B + U;  // forward, seed, backward (adds have none), accumulations, updates
  const std::int64_t fwd_out = C + 3 * C + R + 2 + B + 1 + 1 + 1 + 2;
  const std::int64_t grads = 1 + (2 * C - 1) + 3 * C + R + 1 + 1 + 3 + 1 + 1 + B;
  return {F, ops, 2 + U + fwd_out + grads + U, U};
}
}  // namespace

TEST_CASE("zoo resnet: counts match the formulas for basic and bottleneck nets of several depths") {
  for (std::int64_t depth : {18, 34, 50, 101, 26, 98}) {
    CAPTURE(depth);
    auto cfg = zoo::resnet_config::from_depth(depth, 2, 64);
    CHECK(cfg.depth() == depth);
    auto g = zoo::resnet(cfg);
    const auto e = expected(cfg);
    CHECK(static_cast<std::int64_t>(g.num_ops()) == e.ops);
    CHECK(static_cast<std::int64_t>(g.num_tensors()) == e.tensors);
    auto ph = ops_by_phase(g);
    CHECK(ph[op_phase::forward] == e.fwd);
    CHECK(ph[op_phase::update] == e.weights);
    CHECK(tensors_of_kind(g, tensor_kind::weight) == 2 * e.weights);  // weights + their updated versions
    auto ty = ops_by_type(g);
    const std::int64_t P = cfg.bottleneck ? 4 : 3;
    CHECK(ty["aten.add"] == cfg.blocks() + (cfg.blocks() - P));  // residual adds + out-of-place accumulations (identity shortcut)
    CHECK(ty["aten.add_"] == P + e.weights);                     // in-place accumulations (projection) + SGD updates
    check_valid(g);
  }
}

TEST_CASE("zoo resnet: Chen's configuration (batch 32, 224x224) and 1000+ layers") {
  auto g50 = zoo::resnet(50);
  auto p50 = make_problem(g50);
  // Input images 32x3x224x224 float32; ResNet-50 has 25,557,032 parameters (torchvision).
  CHECK(g50.tensor_bytes(*g50.find_tensor("images")) == 32LL * 3 * 224 * 224 * 4);
  std::int64_t params = 0;
  for (auto t : g50.tensors())
    if (g50.tensor_kind_of(t) == tensor_kind::weight && !g50.inplace_of(t)) params += g50.tensor_bytes(t) / 4;
  CHECK(params == 25557032);
  // The stem conv: 2 * 32 * 64 * 112 * 112 * 3 * 7 * 7 FLOPs.
  CHECK(g50.op_cost(*g50.find_op("stem.conv")) == doctest::Approx(2.0 * 32 * 64 * 112 * 112 * 3 * 49));
  auto cfg = zoo::resnet_config::from_depth(1001);
  CHECK(cfg.units == std::vector<std::int64_t>{84, 83, 83, 83});
  auto g = zoo::resnet(cfg);
  CHECK(static_cast<std::int64_t>(g.num_ops()) == expected(cfg).ops);
  auto p = make_problem(g);
  CHECK(is_topological(p, given_order(p)));
  CHECK_THROWS_AS(zoo::resnet_config::from_depth(1000), memplan::error);
  CHECK_THROWS_AS(zoo::resnet_config::from_depth(8), memplan::error);
}

TEST_CASE("zoo resnet: ResNet-18 parameter count matches torchvision") {
  auto g = zoo::resnet(18, 1);
  std::int64_t params = 0;
  for (auto t : g.tensors())
    if (g.tensor_kind_of(t) == tensor_kind::weight && !g.inplace_of(t)) params += g.tensor_bytes(t) / 4;
  CHECK(params == 11689512);
}

TEST_CASE("zoo lstm: counts match the formulas, weight gradients accumulate in place") {
  for (std::int64_t T : {1, 3, 8}) {
    for (std::int64_t L : {1, 2}) {
      CAPTURE(T);
      CAPTURE(L);
      zoo::lstm_config c{.layers = L, .hidden = 8, .batch = 2, .input = 5, .classes = 7, .steps = T};
      auto g = zoo::lstm(c);
      const std::int64_t fwd = T * (3 * L + 3) + (T > 1 ? 1 : 0);
      const std::int64_t acc = (4 * L + 2) * (T - 1);
      const std::int64_t W = 3 * L + 2;
      CHECK(static_cast<std::int64_t>(g.num_ops()) == fwd + 1 + T * (3 * L + 3) + acc + W);
      const std::int64_t inputs = 2 * L + 2 * T;
      const std::int64_t fwd_out = T * (5 * L + 4) + (T > 1 ? 1 : 0);
      // backward outputs: per step: ih (b, W, + x for l > 0), hh (W + h when t > 0), cell (gates + c when t > 0),
      // fc (b, x, W), log_softmax 1, nll 1.
      const std::int64_t ih = T * (2 * L + (L - 1));
      const std::int64_t hh = T * L + (T - 1) * L;
      const std::int64_t cell = T * L + (T - 1) * L;
      const std::int64_t grads = 1 + ih + hh + cell + T * 5 + acc;
      CHECK(static_cast<std::int64_t>(g.num_tensors()) == inputs + W + fwd_out + grads + W);
      auto ty = ops_by_type(g);
      CHECK(ty["aten.add_"] == (3 * L + 2) * (T - 1) + L * (T - 1) + W);  // in-place accumulations + SGD updates
      check_valid(g);
    }
  }
  auto chen = zoo::lstm(zoo::lstm_config{});
  CHECK(chen.num_ops() > 64 * 4 * 3 * 2);
  CHECK(chen.tensor_bytes(*chen.find_tensor("lstm0.weight_hh")) == 4LL * 1024 * 1024 * 4);
  CHECK(chen.tensor_bytes(*chen.find_tensor("t0.fc.out")) == 64LL * 5000 * 4);
  auto p = make_problem(chen);
  CHECK(is_topological(p, given_order(p)));
}

TEST_CASE("zoo random_dag: deterministic per seed, valid, forward-only counts") {
  zoo::random_dag_config c{.layers = 6, .width = 5, .fan_in = 3, .skip_probability = 0.3, .min_bytes = 64,
                           .max_bytes = 1 << 16, .weight_ratio = 8, .training = false, .seed = 7};
  auto a = zoo::random_dag(c), b = zoo::random_dag(c);
  CHECK(a.num_ops() == 30);
  CHECK(a.num_tensors() == 31);
  bool same = true;
  for (auto t : a.tensors()) same = same && a.tensor_bytes(t) == b.tensor_bytes(t);
  for (auto o : a.ops()) {
    same = same && a.inputs(o).size() == b.inputs(o).size();
    for (std::size_t k = 0; same && k < a.inputs(o).size(); ++k) same = a.inputs(o)[k] == b.inputs(o)[k];
  }
  CHECK(same);
  for (auto o : a.ops()) {
    if (o.index >= 5) CHECK(a.inputs(o).size() == 3);  // fan-in
    for (auto t : a.inputs(o)) {
      auto pr = a.producer(t);
      if (pr) CHECK(pr->index / 5 < o.index / 5);  // layered: sources come from earlier layers
    }
  }
  for (auto t : a.tensors()) {
    CHECK(a.tensor_bytes(t) >= 64);
    CHECK(a.tensor_bytes(t) <= 1 << 16);
    CHECK(a.tensor_bytes(t) % 4 == 0);
  }
  check_valid(a);
  auto c2 = c;
  c2.seed = 8;
  auto d = zoo::random_dag(c2);
  bool differs = false;
  for (auto t : a.tensors()) differs = differs || a.tensor_bytes(t) != d.tensor_bytes(t);
  CHECK(differs);
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    CAPTURE(seed);
    auto t = c;
    t.training = true;
    t.seed = seed;
    auto g = zoo::random_dag(t);
    auto ph = ops_by_phase(g);
    CHECK(ph[op_phase::forward] == 31);  // 30 nodes + the loss
    CHECK(ph[op_phase::update] == 30);   // one weight per node
    check_valid(g);
  }
  auto bad = c;
  bad.fan_in = 0;
  CHECK_THROWS_AS(zoo::random_dag(bad), memplan::error);
}

TEST_CASE("zoo cnn: small CNN training graph is valid and its backward mirrors its forward") {
  auto g = zoo::cnn(zoo::cnn_config{});
  auto ph = ops_by_phase(g);
  // conv bn relu pool x2, fc1 relu fc2, log_softmax nll
  CHECK(ph[op_phase::forward] == 4 * 2 + 3 + 2);
  CHECK(ph[op_phase::backward] == 1 + ph[op_phase::forward]);
  CHECK(ph[op_phase::update] == 3 * 2 + 4);
  check_valid(g);
}

TEST_CASE("zoo training_builder: bad input names the culprit") {
  zoo::training_builder b("bad");
  auto x = b.input("x", {2, 3});
  CHECK_THROWS_AS(b.finish(x), memplan::error);  // the loss depends on no weight
  zoo::training_builder b2("bad2");
  auto y = b2.input("y", {2, 3});
  CHECK_THROWS_AS(zoo::linear(b2, "fc", b2.input("s", {}), 3), memplan::error);
  CHECK_THROWS_AS(b2.forward({.name = "op", .type = "t", .inputs = {y}, .outputs = {{"o", {2, 3}}}, .save_inputs = {4},
                              .save_outputs = {}, .passthrough = {}, .flops = 0, .backward_flops = 0, .workspace = 0,
                              .backward_workspace = 0, .backward_type = {}}),
                  memplan::error);
  CHECK_THROWS_AS(zoo::conv2d(b2, "conv", y, 4, 3), memplan::error);  // not N x C x H x W
}

namespace {
// An independent, naive simulation of graph-format.md's memory rule straight from the graph (no
// memplan::problem): storages by following inplace_of, alive from the first producer of any of its
// tensors to the last op touching any of them; resident when the root has no producer.
std::int64_t naive_given_peak(const graph::dataflow_graph& g) {
  const auto nt = g.num_tensors(), no = g.num_ops();
  auto root = [&](graph::tensor_ref t) {
    while (auto b = g.inplace_of(t)) t = *b;
    return t.index;
  };
  std::map<std::int32_t, std::int64_t> bytes, first, last;
  std::map<std::int32_t, bool> to_end;
  for (std::size_t i = 0; i < nt; ++i) {
    graph::tensor_ref t{static_cast<std::int32_t>(i)};
    const auto r = root(t);
    bytes[r] = std::max(bytes[r], g.tensor_bytes(t));
    if (g.tensor_kind_of(t) == tensor_kind::output) to_end[r] = true;
    if (!first.count(r)) first[r] = std::numeric_limits<std::int64_t>::max();
    if (!last.count(r)) last[r] = -1;
    if (auto p = g.producer(t)) first[r] = std::min<std::int64_t>(first[r], p->index);
    for (auto c : g.consumers(t)) last[r] = std::max<std::int64_t>(last[r], c.index);
    if (auto p = g.producer(t)) last[r] = std::max<std::int64_t>(last[r], p->index);
  }
  std::int64_t resident = 0, peak = 0;
  std::vector<std::int64_t> live(no, 0);
  for (const auto& [r, b] : bytes) {
    if (b == 0) continue;
    if (!g.producer(graph::tensor_ref{r})) {  // no producer: input / weight / optimizer state
      resident += b;
      continue;
    }
    const auto hi = to_end[r] ? static_cast<std::int64_t>(no) - 1 : last[r];
    for (auto i = first[r]; i <= hi; ++i) live[static_cast<std::size_t>(i)] += b;
  }
  peak = resident;
  for (std::size_t i = 0; i < no; ++i)
    peak = std::max(peak, resident + live[i] + g.op_workspace(graph::op_ref{static_cast<std::int32_t>(i)}));
  return peak;
}
}  // namespace

TEST_CASE("zoo graphs: given-order peak equals an independent simulation of the memory rule") {
  std::vector<graph::dataflow_graph> gs;
  gs.push_back(zoo::mlp(4, {16, 32, 8}));
  gs.push_back(zoo::cnn(zoo::cnn_config{}));
  gs.push_back(zoo::resnet(zoo::resnet_config::from_depth(26, 2, 64)));
  gs.push_back(zoo::resnet(zoo::resnet_config::from_depth(18, 2, 64)));
  gs.push_back(zoo::lstm({.layers = 2, .hidden = 8, .batch = 2, .input = 5, .classes = 7, .steps = 5}));
  gs.push_back(zoo::chain(zoo::chain_params::uniform(6, 100, 10, 1.0, 2.0, 7, 13)));
  for (std::uint64_t seed = 1; seed <= 30; ++seed)
    gs.push_back(zoo::random_dag({.layers = 1 + static_cast<std::int64_t>(seed % 7), .width = 1 + static_cast<std::int64_t>(seed % 5),
                                  .fan_in = 1 + static_cast<std::int64_t>(seed % 3), .skip_probability = 0.25, .min_bytes = 16,
                                  .max_bytes = 4096, .weight_ratio = 4, .training = seed % 2 == 0, .seed = seed}));
  for (const auto& g : gs) {
    CAPTURE(g.name());
    auto p = make_problem(g);
    CHECK(peak_of(p, given_order(p)) == naive_given_peak(g));
  }
}

TEST_CASE("zoo training graphs: every weight is updated once, in place, after its last reader") {
  for (const auto& g : {zoo::resnet(zoo::resnet_config::from_depth(18, 2, 64)),
                        zoo::lstm({.layers = 2, .hidden = 8, .batch = 2, .input = 5, .classes = 7, .steps = 4}),
                        zoo::random_dag({.layers = 5, .width = 3, .fan_in = 2, .skip_probability = 0.3, .min_bytes = 16,
                                         .max_bytes = 4096, .weight_ratio = 4, .training = true, .seed = 3})}) {
    CAPTURE(g.name());
    for (auto t : g.tensors()) {
      if (g.tensor_kind_of(t) != tensor_kind::weight || g.producer(t)) continue;
      std::int64_t updates = 0;
      std::int32_t upd_op = -1, last_reader = -1;
      for (auto c : g.consumers(t)) {
        bool writes = false;
        for (auto o : g.outputs(c)) writes = writes || g.inplace_of(o) == t;
        if (writes) { ++updates; upd_op = c.index; }
        else last_reader = std::max(last_reader, c.index);
      }
      CHECK(updates == 1);
      CHECK(upd_op > last_reader);
      CHECK(g.op_phase_of(graph::op_ref{upd_op}) == op_phase::update);
    }
    // Every gradient tensor is read by someone (no dangling gradients).
    for (auto t : g.tensors())
      if (g.tensor_kind_of(t) == tensor_kind::gradient) CHECK(!g.consumers(t).empty());
  }
}
