// Step time and memory of training under a memory plan vs eager training, on this CPU.
//
//   bench_runtime [steps]        (default 40 timed steps after 5 warm-up steps)
//
// For each model (CNN batch 32 first: the target case), one process runs, interleaved step by step
// so that machine noise hits both alike:
//   eager    ad::eager_runner: one fresh aligned allocation per tensor, freed after its last use
//   planned  ad::planned_runner under olla::optimize's plan: one arena, runtime::executor + ad::plan_kernel
// and prints the median step time of each, the ratio planned / eager (target <= 1.02), and the
// memory: eager peak (exact bytes of live tensors), the same order through a simulated caching
// allocator (what an eager framework reserves), and the planned arena.
//
// Then, per model, the operator implementations (ad/implementations.hpp) at the scale of a whole
// step: eager training with every matmul and convolution on its default (Eigen GEMM, im2col + GEMM),
// on alternative 1 (packed GEMM, tiled im2col) and on alternative 2 (plain loops, direct
// convolution), interleaved the same way: median step time and eager peak (which counts each node's
// workspace).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <memplan/ad/data.hpp>
#include <memplan/ad/models/cnn.hpp>
#include <memplan/ad/models/mlp.hpp>
#include <memplan/ad/models/transformer.hpp>
#include <memplan/ad/run_plan.hpp>
#include <memplan/olla.hpp>
#include <memplan/place/online/caching_allocator.hpp>
#include <memplan/schedule/given.hpp>

namespace {
using clock_type = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

template <class Task>
void row(const char* name, const memplan::ad::model& m, Task task, int warmup, int steps) {
  using namespace memplan;
  auto prob = make_problem(ad::to_dataflow_graph(m.step));
  auto plan = olla::optimize(prob, {.alignment = ad::plan_alignment});
  const auto caching = memplan::plan(prob, schedule::given{} | place::online::caching_allocator{}, {.alignment = ad::plan_alignment});
  ad::eager_runner eager(m.step);
  ad::planned_runner planned(m.step, prob, plan);
  ad::data_stream<Task> de(task, 1), dp(task, 1);
  std::vector<double> te, tp;
  for (int s = 0; s < warmup + steps; ++s) {
    // Alternate which runs first so neither always follows the other's cache footprint.
    auto time_eager = [&] {
      const auto t0 = clock_type::now();
      ad::train_step(eager, m, de);
      return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
    };
    auto time_planned = [&] {
      const auto t0 = clock_type::now();
      ad::train_step(planned, m, dp);
      return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
    };
    double a = 0, b = 0;
    if (s % 2) { a = time_eager(); b = time_planned(); } else { b = time_planned(); a = time_eager(); }
    if (s >= warmup) { te.push_back(a); tp.push_back(b); }
  }
  const double me = median(te), mp = median(tp);
  const auto peak = eager.peak_bytes();
  std::printf("%-16s %6zu %10.3f %10.3f %8.4f %12lld %12lld %12lld\n", name, m.step.nodes.size(), me, mp, mp / me,
              static_cast<long long>(peak), static_cast<long long>(caching.arena), static_cast<long long>(plan.arena));
}

// Eager training with every node on implementation min(k, its count - 1), k = 0, 1, 2, interleaved.
template <class Task>
void impl_row(const char* name, const memplan::ad::model& m, Task task, int warmup, int steps) {
  using namespace memplan;
  std::vector<ad::eager_runner> runners;
  std::vector<ad::data_stream<Task>> data;
  for (std::int32_t k = 0; k < 3; ++k) {
    std::vector<std::int32_t> choice;
    for (const auto& n : m.step.nodes) choice.push_back(std::min(k, ad::implementation_count(n.kind) - 1));
    runners.emplace_back(m.step, ad::eager_options{.poison = false, .impl = choice});
    data.emplace_back(task, 1);
  }
  std::vector<std::vector<double>> t(3);
  for (int s = 0; s < warmup + steps; ++s)
    for (int j = 0; j < 3; ++j) {
      const auto k = static_cast<std::size_t>((j + s) % 3);  // rotate who runs first
      const auto t0 = clock_type::now();
      ad::train_step(runners[k], m, data[k]);
      if (s >= warmup) t[k].push_back(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
    }
  std::printf("%-16s %10.3f %10.3f %10.3f %12lld %12lld %12lld\n", name, median(t[0]), median(t[1]), median(t[2]),
              static_cast<long long>(runners[0].peak_bytes()), static_cast<long long>(runners[1].peak_bytes()),
              static_cast<long long>(runners[2].peak_bytes()));
}
}  // namespace

int main(int argc, char** argv) {
  using namespace memplan::ad;
  const int steps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 40;
  const int warmup = 5;
  std::printf("training step time, median of %d steps after %d warm-up steps (ms), and memory per step (bytes)\n",
              steps, warmup);
  std::printf("%-16s %6s %10s %10s %8s %12s %12s %12s\n", "model", "nodes", "eager", "planned", "ratio", "eager peak",
              "eager cache", "arena");
  row("cnn b32", models::cnn({.batch = 32}, adam{0.01f}), shapes16{}, warmup, steps);
  row("mlp b64", models::mlp({.batch = 64}, adam{0.01f}), two_spirals{}, warmup, steps);
  row("transformer b32", models::transformer({.batch = 32}, adam{0.003f}), repeated_token{8, 16}, warmup, steps);
  std::printf("ratio = planned / eager (target <= 1.02); eager peak = exact bytes of live tensors in the given order;\n"
              "eager cache = the given order through a simulated PyTorch caching allocator; arena = olla::optimize's plan\n\n");
  std::printf("operator implementations, eager step: median of %d steps (ms) and peak (bytes), every matmul/convolution on\n"
              "default (eigen, im2col_gemm) | alternative 1 (packed, tiled) | alternative 2 (loop, direct)\n", steps);
  std::printf("%-16s %10s %10s %10s %12s %12s %12s\n", "model", "default", "alt 1", "alt 2", "peak", "peak 1", "peak 2");
  impl_row("cnn b32", models::cnn({.batch = 32}, adam{0.01f}), shapes16{}, warmup, steps);
  impl_row("mlp b64", models::mlp({.batch = 64}, adam{0.01f}), two_spirals{}, warmup, steps);
  impl_row("transformer b32", models::transformer({.batch = 32}, adam{0.003f}), repeated_token{8, 16}, warmup, steps);
  return 0;
}
