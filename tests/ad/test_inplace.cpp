// In-place activations (ad/inplace.hpp): which nodes qualify, bitwise equal training, less memory,
// and plans of the rewritten program train like eager.
#include <doctest/doctest.h>

#include <cstring>
#include <vector>

#include <memplan/ad/data.hpp>
#include <memplan/ad/eager.hpp>
#include <memplan/ad/graph.hpp>
#include <memplan/ad/inplace.hpp>
#include <memplan/ad/models/cnn.hpp>
#include <memplan/ad/models/mlp.hpp>
#include <memplan/ad/models/transformer.hpp>
#include <memplan/ad/run_plan.hpp>
#include <memplan/core/analysis.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/schedule/default_scheduler.hpp>
#include <memplan/schedule/given.hpp>
#include "ad_support.hpp"

using adtest::same_bits;

using namespace memplan::ad;

namespace {

// Nodes whose first output is written in place of one of their inputs (optimizer updates excluded).
int inplace_nodes(const program& p, bool backward) {
  int n = 0;
  for (const auto& nd : p.nodes)
    if (nd.phase == (backward ? memplan::op_phase::backward : memplan::op_phase::forward) &&
        p.tensors[static_cast<std::size_t>(nd.outputs[0])].inplace_of >= 0)
      ++n;
  return n;
}

template <class Runner, class Task>
std::vector<float> train(Runner& r, const model& m, Task task, int steps, std::vector<float>& losses) {
  data_stream<Task> d(task, 31);
  for (int s = 0; s < steps; ++s) losses.push_back(train_step(r, m, d));
  return read_state(m.step, r);
}
}  // namespace

TEST_CASE("inplace_activations: every relu of the CNN and its gradient, bitwise equal training, less memory while each runs") {
  auto m = models::cnn({.batch = 4}, adam{0.01f});
  auto mi = m;
  mi.step = inplace_activations(m.step);
  REQUIRE(mi.step.nodes.size() == m.step.nodes.size());
  REQUIRE(mi.step.tensors.size() == m.step.tensors.size());
  int relus = 0;
  for (const auto& nd : m.step.nodes) relus += nd.kind == kernel::relu;
  CHECK(inplace_nodes(mi.step, false) == relus);  // each relu's input is read by nobody after it
  CHECK(inplace_nodes(mi.step, true) == relus);   // each relu_grad overwrites its dy
  CHECK(inplace_nodes(m.step, false) == 0);
  for (std::size_t t = 0; t < m.step.tensors.size(); ++t) {
    const auto& a = m.step.tensors[t];
    const auto& b = mi.step.tensors[t];
    CHECK(a.name == b.name);
    if (a.inplace_of >= 0) CHECK(b.inplace_of == a.inplace_of);  // the optimizer's links stay
  }
  eager_runner e(m.step, {.poison = true}), ei(mi.step, {.poison = true});
  std::vector<float> l, li;
  const auto s = train(e, m, shapes16{}, 5, l);
  const auto si = train(ei, mi, shapes16{}, 5, li);
  CHECK(same_bits(l, li));
  CHECK(same_bits(s, si));
  // The memory saved is the output's bytes while each activation (and activation gradient) runs; this
  // CNN's peak is elsewhere (at the start of the backward pass), so the peak stays.
  CHECK(ei.peak_bytes() <= e.peak_bytes());
  MESSAGE("CNN batch 4: eager peak " << e.peak_bytes() << " B, with in-place activations " << ei.peak_bytes() << " B");
  const auto prob = make_problem(m.step), probi = make_problem(mi.step);
  const auto tl = memplan::given_timeline(prob), tli = memplan::given_timeline(probi);
  REQUIRE(tl.live.size() == m.step.nodes.size());
  int lower = 0;
  for (std::size_t i = 0; i < m.step.nodes.size(); ++i) {
    const auto& out = mi.step.tensors[static_cast<std::size_t>(mi.step.nodes[i].outputs[0])];
    if (m.step.nodes[i].phase != memplan::op_phase::update && out.inplace_of >= 0) {
      CHECK(tli.live[i] == tl.live[i] - out.bytes());
      ++lower;
    } else {
      CHECK(tli.live[i] <= tl.live[i]);
    }
  }
  CHECK(lower == 2 * relus);
  // The planners' view agrees with the eager runner's memory.
  CHECK(tli.peak == ei.peak_bytes());
}

TEST_CASE("inplace_activations: MLP and transformer train bitwise equal, planned training of the rewritten program = eager") {
  for (int which = 0; which < 2; ++which) {
    CAPTURE(which);
    auto m = which == 0 ? models::mlp({.batch = 16, .hidden = 32, .layers = 2}, adam{0.01f})
                        : models::transformer({.batch = 4}, adam{0.01f});
    auto mi = m;
    mi.step = inplace_activations(m.step);
    CHECK(inplace_nodes(mi.step, false) > 0);  // the tanh of the MLP's layers, the transformer's MLP relu
    eager_runner e(m.step, {.poison = true}), ei(mi.step, {.poison = true});
    planned_runner p(mi.step, memplan::schedule::default_scheduler{} | memplan::place::default_placer{}, {.poison = true});
    std::vector<float> l, li, lp;
    const auto s = which == 0 ? train(e, m, two_spirals{}, 5, l) : train(e, m, repeated_token{8, 16}, 5, l);
    const auto si = which == 0 ? train(ei, mi, two_spirals{}, 5, li) : train(ei, mi, repeated_token{8, 16}, 5, li);
    const auto sp = which == 0 ? train(p, mi, two_spirals{}, 5, lp) : train(p, mi, repeated_token{8, 16}, 5, lp);
    CHECK(same_bits(l, li));
    CHECK(same_bits(s, si));
    CHECK(same_bits(l, lp));
    CHECK(same_bits(s, sp));
    CHECK(ei.peak_bytes() <= e.peak_bytes());
  }
}

TEST_CASE("inplace_activations: an activation whose input is read later stays out of place") {
  tape t("skip", 2);
  auto x = t.input("features", {4, 3});
  auto y = t.input("labels", {4});
  auto w = t.weight("w", {3, 3}, init::normal(0.0, 0.5, 5));
  auto h = t.linear(x, w);
  auto a = t.tanh(h);
  auto s = t.add(a, h);  // h is read after the tanh: it must survive it
  auto r = t.softmax_cross_entropy(t.relu(s), y);
  const auto p = inplace_activations(t.training_step(r.loss, sgd{0.1f}));
  for (const auto& nd : p.nodes) {
    const auto& out = p.tensors[static_cast<std::size_t>(nd.outputs[0])];
    if (nd.kind == kernel::tanh) CHECK(out.inplace_of < 0);
    if (nd.kind == kernel::relu) CHECK(out.inplace_of == nd.inputs[0]);  // the add's output is read by the relu only
  }
  // Only the forward or only the backward half.
  const auto fwd = inplace_activations(t.training_step(r.loss, sgd{0.1f}), {.forward = true, .backward = false});
  CHECK(inplace_nodes(fwd, false) == 1);
  CHECK(inplace_nodes(fwd, true) == 0);
}
