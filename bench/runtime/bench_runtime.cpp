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
              "eager cache = the given order through a simulated PyTorch caching allocator; arena = olla::optimize's plan\n");
  return 0;
}
