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
//
// Last, offloading executed (docs/offload.md, "Executing offload plans"): per model, the node costs
// are measured on this CPU (ad::calibrate, seconds), and the default offloader plans the step at
// 0.7x and 0.5x of its no-offload arena for a device-host link of a given bandwidth: this machine's
// memcpy rate, and an emulated 2 GB/s link (runtime::paced_host_backend: a memcpy, then whoever
// copies waits until bytes / bandwidth has passed). The executor runs each plan with its copies on
// the copy thread (runtime::executor's default) and inline (each copy at its step, compute
// waiting), interleaved with the no-offload plan. Not the MLP: its weights and one layer's working
// set leave no offload plan within 0.7x of its arena. Printed: the plan's simulated compute time and
// makespan, the measured medians, and the ratios measured / simulated, so that the simulator's
// prediction of what overlapping saves is checked against a real run.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <memplan/ad/data.hpp>
#include <memplan/ad/models/cnn.hpp>
#include <memplan/ad/models/mlp.hpp>
#include <memplan/ad/models/transformer.hpp>
#include <memplan/ad/run_plan.hpp>
#include <memplan/ad/calibrate.hpp>
#include <memplan/offload/default_offloader.hpp>
#include <memplan/runtime/paced_backend.hpp>
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
// memcpy bytes per second on this machine (median of 9 copies of 64 MiB).
double memcpy_rate() {
  const std::size_t n = std::size_t{64} << 20;
  std::vector<std::byte> a(n, std::byte{1}), b(n);
  std::vector<double> r;
  for (int i = 0; i < 9; ++i) {
    const auto t0 = clock_type::now();
    std::memcpy(b.data(), a.data(), n);
    r.push_back(static_cast<double>(n) / std::chrono::duration<double>(clock_type::now() - t0).count());
  }
  return median(r);
}

// One training step's program executed under three plans, interleaved: no offload; offload with the
// copy thread; offload with inline copies.
void offload_rows(const char* name, const memplan::ad::model& m, double memcpy_bw, int warmup, int steps) {
  using namespace memplan;
  const auto costs = ad::calibrate(m.step, {.time_limit_s = 10.0});
  const auto prob = ad::make_problem(m.step, costs);
  const auto sched = schedule::default_scheduler{};
  for (const double link : {0.0, 2e9}) {
    plan_context ctx;
    ctx.alignment = ad::plan_alignment;
    ctx.timing.bandwidth = link > 0 ? link : memcpy_bw;
    const auto base = plan(prob, sched | place::default_placer{}, ctx);
    for (const double frac : {0.7, 0.5}) {
      auto bc = ctx;
      bc.budget = static_cast<std::int64_t>(static_cast<double>(base.arena) * frac);
      memory_plan mp;
      try {
        mp = plan(prob, sched | offload::default_offloader{} | place::default_placer{}, bc);
      } catch (const error& e) {
        std::printf("%-16s %6.2f %5.2f  infeasible: %s\n", name, ctx.timing.bandwidth / 1e9, frac, e.what());
        continue;
      }
      runtime::paced_host_backend lb;
      lb.bandwidth = link;
      ad::plan_kernel k0(m.step, prob), k1(m.step, prob), k2(m.step, prob);
      runtime::executor<runtime::paced_host_backend> e0(prob, base, {}, lb), e1(prob, mp, {.copy_thread = true}, lb),
          e2(prob, mp, {.copy_thread = false}, lb);
      // Resident values as eager training starts them (inputs: zeros, a valid class label).
      for (auto* e : {&e0, &e1, &e2}) {
        struct view {
          runtime::executor<runtime::paced_host_backend>* e;
          const ad::program* p;
          std::span<float> data(std::int32_t t) const {
            const auto n = p->tensors[static_cast<std::size_t>(t)].numel();
            if (n == 0) return {};
            return {reinterpret_cast<float*>(e->tensor_data(t)), static_cast<std::size_t>(n)};
          }
        } v{e, &m.step};
        ad::initialize_resident(m.step, v);
      }
      std::vector<double> t0, t1, t2, wait1;
      for (int s = 0; s < warmup + steps; ++s) {
        auto timed = [&](auto& e, auto& k, std::vector<double>& out, std::vector<double>* w) {
          const auto a = clock_type::now();
          const auto rs = e.run(k);
          if (s >= warmup) {
            out.push_back(std::chrono::duration<double, std::milli>(clock_type::now() - a).count());
            if (w) w->push_back(1e3 * rs.copy_wait_seconds);
          }
        };
        const int r = s % 3;  // rotate who runs first
        for (int j = 0; j < 3; ++j) {
          const int q = (r + j) % 3;
          if (q == 0) timed(e0, k0, t0, nullptr);
          if (q == 1) timed(e1, k1, t1, &wait1);
          if (q == 2) timed(e2, k2, t2, nullptr);
        }
      }
      const double sim_c = 1e3 * mp.stats.compute_time, sim_m = 1e3 * mp.stats.makespan;
      const auto offloads = std::count_if(mp.steps.begin(), mp.steps.end(), [](const step& st) { return st.kind == step_kind::offload; });
      const double m0 = median(t0), m1 = median(t1), m2 = median(t2);
      std::printf("%-16s %6.2f %5.2f %4lld %8.2f %9.3f %9.3f %9.3f %9.3f %9.3f %7.3f %7.3f %7.3f %7.3f %8.3f\n", name,
                  ctx.timing.bandwidth / 1e9, frac, static_cast<long long>(offloads), static_cast<double>(mp.stats.transfer_bytes) / 2 / 1e6, sim_c, sim_m, m0,
                  m1, m2, sim_m / sim_c, m1 / m0, m2 / m0, m1 / sim_m * (sim_c / m0), median(wait1));
    }
  }
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

  const double bw = memcpy_rate();
  std::printf("\noffloading executed: the default offloader's plan at 0.7x / 0.5x of the no-offload arena, run with copies on\n"
              "the copy thread and inline; link = this machine's memcpy rate (%.2f GB/s) or an emulated 2 GB/s link; median\n"
              "of %d steps (ms). sim = the plan's simulated compute time and makespan from the calibrated node costs\n", bw / 1e9, steps);
  std::printf("%-16s %6s %5s %4s %8s %9s %9s %9s %9s %9s %7s %7s %7s %7s %8s\n", "model", "GB/s", "x", "offl", "MB moved", "sim comp",
              "sim mksp", "no offl", "thread", "inline", "sim r", "thr r", "inl r", "thr/sim", "wait ms");
  offload_rows("cnn b32", models::cnn({.batch = 32}, adam{0.01f}), bw, warmup, steps);
  offload_rows("transformer b32", models::transformer({.batch = 32}, adam{0.003f}), bw, warmup, steps);
  std::printf("offl = values offloaded (each also prefetched); sim r = simulated makespan / compute time (what offloading\n"
              "costs in the model); thr r, inl r = measured step with the copy thread / inline copies over the measured\n"
              "no-offload step; thr/sim = thr r / sim r (1: the model's prediction held); wait ms = time the computing\n"
              "thread waited for copies (copy thread)\n");
  return 0;
}
