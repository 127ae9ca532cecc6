#pragma once
// Finite-difference gradient checking for memplan::ad tests: loss = sum(y * r) for a random fixed r,
// analytic gradients from the program's backward nodes, numerical ones by central differences.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <memplan/ad/eager.hpp>
#include <memplan/ad/tape.hpp>

namespace adtest {

using namespace memplan::ad;

struct grad_check_options {
  double h = 1e-2;
  double abs_tol = 5e-3;
  double rel_tol = 3e-2;
  int samples = 24;  // elements checked per weight (evenly spread)
};

inline double loss_value(eager_runner& r) {
  r.run_forward();
  return r.data(r.prog().loss)[0];
}

inline int check_program_gradients(const program& p, const std::function<void(eager_runner&)>& prepare,
                                   grad_check_options o, std::vector<std::int32_t> impl = {});

// Returns the number of elements compared.
inline int check_gradients(tape& t, var y, const std::function<void(eager_runner&)>& prepare = {},
                           grad_check_options o = {}) {
  auto r_in = t.input("gc.r", t.shape(y));
  auto loss = t.sum(t.mul(y, r_in));
  const program p = t.training_step(loss, sgd{0.0f, 0.0f});
  return check_program_gradients(p, [&](eager_runner& run) {
    rng g(12345);
    for (auto& v : run.data("gc.r")) v = static_cast<float>(g.uniform(-1.0, 1.0));
    if (prepare) prepare(run);
  }, o);
}

// Gradient check of a whole training-step program with respect to every weight, each node running
// the implementation `impl` chooses (eager_options::impl; empty: the defaults).
inline int check_program_gradients(const program& p, const std::function<void(eager_runner&)>& prepare,
                                   grad_check_options o, std::vector<std::int32_t> impl) {
  eager_runner run(p, {.poison = true, .impl = std::move(impl)});
  prepare(run);
  for (auto [w, gt] : p.weight_grads) run.keep(gt);
  run.run(true, true, false);
  REQUIRE(!p.weight_grads.empty());
  std::vector<std::vector<float>> grads;
  for (auto [w, gt] : p.weight_grads) grads.emplace_back(run.data(gt).begin(), run.data(gt).end());
  int compared = 0;
  for (std::size_t wi = 0; wi < p.weight_grads.size(); ++wi) {
    const auto w = p.weight_grads[wi].first;
    const auto& analytic = grads[wi];
    auto wv = run.data(w);
    const auto n = static_cast<std::int64_t>(wv.size());
    const auto step = std::max<std::int64_t>(1, n / o.samples);
    for (std::int64_t i = 0; i < n; i += step) {
      const float saved = wv[static_cast<std::size_t>(i)];
      wv[static_cast<std::size_t>(i)] = static_cast<float>(saved + o.h);
      const double lp = loss_value(run);
      wv[static_cast<std::size_t>(i)] = static_cast<float>(saved - o.h);
      const double lm = loss_value(run);
      wv[static_cast<std::size_t>(i)] = saved;
      const double numeric = (lp - lm) / (2.0 * o.h);
      const double a = analytic[static_cast<std::size_t>(i)];
      INFO("weight '" << p.tensors[static_cast<std::size_t>(w)].name << "' element " << i << ": analytic " << a
                      << ", numeric " << numeric);
      CHECK(std::abs(a - numeric) <= o.abs_tol + o.rel_tol * std::abs(numeric));
      ++compared;
    }
  }
  return compared;
}

}  // namespace adtest
