// The model builders: whole-model gradient checks, determinism, and real learning on the generated
// tasks with the eager runner (thresholds stated in each test).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <memplan/ad/data.hpp>
#include <memplan/ad/models/cnn.hpp>
#include <memplan/ad/models/mlp.hpp>
#include <memplan/ad/models/transformer.hpp>

#include "../support/sanitizer_scale.hpp"
#include "grad_check.hpp"

using namespace memplan::ad;
using adtest::check_program_gradients;

namespace {
// Random features and labels in range (for models whose input is not a task's sample shape).
std::function<void(eager_runner&)> random_feed(const model& m, std::uint64_t seed, bool integral_features = false,
                                               std::int64_t vocab = 0) {
  return [&m, seed, integral_features, vocab](eager_runner& r) {
    rng g(seed);
    for (auto& v : r.data(m.features))
      v = integral_features ? static_cast<float>(g.below(vocab)) : static_cast<float>(g.normal());
    for (auto& v : r.data(m.labels)) v = static_cast<float>(g.below(m.classes));
  };
}

// Under the sanitizer a tenth of the steps and test batches: the same kernels run instrumented; the
// accuracies are the default build's claim and are checked there only (learned()).
template <class Task>
double train_and_evaluate(const model& m, Task task, int steps, int test_batches, float* final_loss = nullptr) {
  steps = memplan::testing::full_or_sanitized(steps, steps / 10);
  test_batches = memplan::testing::full_or_sanitized(test_batches, std::max(1, test_batches / 8));
  eager_runner r(m.step);
  data_stream<Task> train(task, 1001), test(task, 2002);
  float loss = 0.0f;
  for (int s = 0; s < steps; ++s) loss = train_step(r, m, train);
  if (final_loss) *final_loss = loss;
  return evaluate(r, m, test, test_batches);
}

// The accuracy check of a learning test: the full run's figure, in the default build.
bool learned(double accuracy, double at_least, float final_loss) {
  if (memplan::testing::under_sanitizer) return std::isfinite(final_loss);
  return accuracy >= at_least;
}
}  // namespace

TEST_CASE("models: whole-program gradients of the MLP, the CNN and the transformer") {
  adtest::grad_check_options o;
  o.samples = 6;
  o.h = 1e-3;  // the loss is one well-conditioned scalar: small steps rarely cross a relu / max-pool kink
  {
    auto m = models::mlp({.batch = 5, .in = 2, .hidden = 6, .layers = 2, .classes = 3}, sgd{0.0f});
    CHECK(check_program_gradients(m.step, random_feed(m, 3), o) > 0);
  }
  {
    auto m = models::cnn({.batch = 3, .channels = 2, .height = 8, .width = 8, .width_mult = 2, .classes = 3}, sgd{0.0f});
    CHECK(check_program_gradients(m.step, random_feed(m, 4), o) > 0);
  }
  {
    auto m = models::transformer({.batch = 3, .length = 4, .vocab = 6, .dim = 8, .heads = 2, .mlp_hidden = 8, .classes = 2},
                                 sgd{0.0f});
    CHECK(check_program_gradients(m.step, random_feed(m, 5, true, 6), o) > 0);
  }
}

TEST_CASE("models: programs are valid, named uniquely, and the optimizer writes in place") {
  auto m = models::cnn({}, sgd{0.05f, 0.9f});
  validate(m.step);
  int updates = 0, backward = 0, forward = 0;
  for (const auto& n : m.step.nodes) {
    updates += n.phase == memplan::op_phase::update;
    backward += n.phase == memplan::op_phase::backward;
    forward += n.phase == memplan::op_phase::forward;
  }
  CHECK(updates == static_cast<int>(m.step.weight_grads.size()));
  CHECK(forward > 10);
  CHECK(backward > forward);
  for (const auto& t : m.step.tensors)
    if (t.inplace_of >= 0) {
      const auto& base = m.step.tensors[static_cast<std::size_t>(t.inplace_of)];
      CHECK((base.kind == memplan::tensor_kind::weight || base.kind == memplan::tensor_kind::optimizer_state));
      CHECK(base.shape == t.shape);
    }
  // the residual connection's two consumers give one explicit accumulation
  int acc = 0;
  for (const auto& n : m.step.nodes) acc += n.name.rfind("accumulate:", 0) == 0;
  CHECK(acc >= 1);
}

TEST_CASE("models: training is deterministic (two eager runs, poison or not, are bitwise equal)") {
  auto m = models::transformer({.batch = 8, .length = 6, .vocab = 8, .dim = 16, .heads = 2, .mlp_hidden = 16}, adam{0.01f});
  eager_runner a(m.step, {.poison = true}), b(m.step, {.poison = false});
  data_stream<repeated_token> da(repeated_token{6, 8}, 7), db(repeated_token{6, 8}, 7);
  for (int s = 0; s < 5; ++s) {
    const float la = train_step(a, m, da), lb = train_step(b, m, db);
    CHECK(std::memcmp(&la, &lb, sizeof la) == 0);
  }
  for (auto [w, g] : m.step.weight_grads) {
    auto x = a.data(w), y = b.data(w);
    CHECK(std::memcmp(x.data(), y.data(), x.size_bytes()) == 0);
  }
}

TEST_CASE("learning: MLP on two spirals reaches >= 95% test accuracy in 1500 Adam steps") {
  auto m = models::mlp({.batch = 64, .in = 2, .hidden = 64, .layers = 2, .classes = 2}, adam{0.01f});
  float loss = 0;
  const double acc = train_and_evaluate(m, two_spirals{}, 1500, 16, &loss);
  MESSAGE("two-spirals MLP: test accuracy " << acc << ", final training loss " << loss);
  CHECK(learned(acc, 0.95, loss));
}

TEST_CASE("learning: MLP with SGD + momentum on two spirals reaches >= 90% in 3000 steps") {
  auto m = models::mlp({.batch = 64, .in = 2, .hidden = 64, .layers = 2, .classes = 2}, sgd{0.1f, 0.9f});
  float loss = 0;
  const double acc = train_and_evaluate(m, two_spirals{}, 3000, 16, &loss);
  MESSAGE("two-spirals MLP (SGD momentum): test accuracy " << acc << ", final training loss " << loss);
  CHECK(learned(acc, 0.90, loss));
}

TEST_CASE("learning: residual CNN on 16x16 shapes reaches >= 90% test accuracy in 80 Adam steps") {
  auto m = models::cnn({.batch = 32}, adam{0.01f});
  float loss = 0;
  const double acc = train_and_evaluate(m, shapes16{}, 80, 8, &loss);
  MESSAGE("shapes16 CNN: test accuracy " << acc << ", final training loss " << loss);
  CHECK(learned(acc, 0.90, loss));
}

TEST_CASE("learning: transformer on repeated-token sequences reaches >= 85% test accuracy in 800 Adam steps") {
  auto m = models::transformer({.batch = 32, .length = 8, .vocab = 16, .dim = 32, .heads = 2, .mlp_hidden = 64}, adam{0.003f});
  float loss = 0;
  const double acc = train_and_evaluate(m, repeated_token{8, 16}, 800, 16, &loss);
  MESSAGE("repeated-token transformer: test accuracy " << acc << ", final training loss " << loss);
  CHECK(learned(acc, 0.85, loss));
}

namespace {
// Independent referee: the memory rule of graph-format.md evaluated on a program's given order.
std::int64_t rule_peak(const program& p) {
  const auto nt = p.tensors.size(), nn = p.nodes.size();
  std::vector<std::int64_t> first(nt, -1), last(nt, -1);
  std::vector<bool> produced(nt, false), output(nt, false);
  for (std::size_t i = 0; i < nn; ++i) {
    for (auto t : p.nodes[i].outputs) produced[static_cast<std::size_t>(t)] = true;
    for (auto list : {&p.nodes[i].inputs, &p.nodes[i].outputs})
      for (auto t : *list) {
        const auto s = static_cast<std::size_t>(p.storage_of(t));
        if (first[s] < 0) first[s] = static_cast<std::int64_t>(i);
        last[s] = static_cast<std::int64_t>(i);
      }
  }
  std::int64_t resident = 0;
  for (std::size_t t = 0; t < nt; ++t) {
    if (p.tensors[t].kind == memplan::tensor_kind::output) output[static_cast<std::size_t>(p.storage_of(static_cast<std::int32_t>(t)))] = true;
    if (!produced[t] && p.tensors[t].inplace_of < 0) resident += p.tensors[t].bytes();
  }
  std::int64_t peak = resident;
  for (std::size_t i = 0; i < nn; ++i) {
    std::int64_t live = resident + p.nodes[i].workspace_bytes;
    for (std::size_t s = 0; s < nt; ++s) {
      if (!produced[s] || p.tensors[s].inplace_of >= 0) continue;  // resident or not a storage root
      const auto end = output[s] ? static_cast<std::int64_t>(nn) : last[s];
      if (first[s] <= static_cast<std::int64_t>(i) && static_cast<std::int64_t>(i) <= end) live += p.tensors[s].bytes();
    }
    peak = std::max(peak, live);
  }
  return peak;
}
}  // namespace

TEST_CASE("eager runner: its measured peak equals the memory rule's peak of the given order") {
  for (int which = 0; which < 3; ++which) {
    CAPTURE(which);
    const model m = which == 0   ? models::mlp({.batch = 16}, sgd{0.1f, 0.9f})
                    : which == 1 ? models::cnn({.batch = 4}, adam{})
                                 : models::transformer({.batch = 4}, adam{});
    eager_runner r(m.step, {.poison = true});
    random_feed(m, 9, which == 2, 16)(r);
    r.run();
    CHECK(r.peak_bytes() == rule_peak(m.step));
    CHECK(r.peak_bytes() > r.resident_bytes());
    MESSAGE("model " << m.step.name << ": " << m.step.nodes.size() << " nodes, " << m.step.tensors.size()
                     << " tensors, eager peak " << r.peak_bytes() << " B, resident " << r.resident_bytes() << " B");
  }
}
