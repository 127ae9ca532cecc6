// Teaching example: offloading activations to host memory (Beaumont et al.) on a 5-layer chain.
// Every layer output is 1 MiB and takes 1 ms to compute (the backward 2 ms); the copy engine moves
// 1 GiB/s, so one activation travels in about 1 ms, in parallel with compute. Without a memory limit
// the step takes 15 ms. Under a budget the offloader sends the first activations to the host during
// the forward pass and brings them back just before the backward needs them; when the copies cannot
// hide behind compute, the compute engine waits (the makespan grows). Prints the timed plans step by
// step for three budgets and writes the timeline of the tightest one as offload_chain.svg (compute
// and copy lanes, device bytes below).
//
// Then it runs every plan for real (runtime::executor): each op's kernel keeps a core busy for its
// cost, and the copies go through an emulated 1 GiB/s link (runtime::paced_host_backend). With the
// executor's copy thread the copies overlap compute and the measured step follows the simulated
// makespan; with copy_thread = false each copy stalls compute for its whole duration.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <memplan/core/adapt.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/graph/dataflow_graph.hpp>
#include <memplan/io/timeline_svg.hpp>
#include <memplan/offload/policies.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/runtime/executor.hpp>
#include <memplan/runtime/paced_backend.hpp>
#include <memplan/schedule/given.hpp>

using namespace memplan;

// x0 -> F1 -> x1 -> ... -> F5 -> x5 -> loss -> g5 -> B5 -> ... -> B1 -> g0; B_i reads x_{i-1}, x_i, g_i.
graph::dataflow_graph chain(int n, std::int64_t bytes) {
  graph::dataflow_graph g("chain" + std::to_string(n));
  g.set_cost_unit("seconds");
  std::vector<graph::tensor_ref> x{g.add_tensor("x0", bytes, tensor_kind::input)};
  for (int i = 1; i <= n; ++i) {
    x.push_back(g.add_tensor("x" + std::to_string(i), bytes));
    g.add_op("F" + std::to_string(i), {x[static_cast<std::size_t>(i - 1)]}, {x.back()}, {.type = "layer", .phase = op_phase::forward, .cost = 1e-3});
  }
  auto gr = g.add_tensor("g" + std::to_string(n), bytes / 4, tensor_kind::gradient);
  g.add_op("loss", {x.back()}, {gr}, {.type = "loss", .phase = op_phase::forward, .cost = 0.0});
  for (int i = n; i >= 1; --i) {
    auto next = g.add_tensor("g" + std::to_string(i - 1), bytes / 4, i == 1 ? tensor_kind::output : tensor_kind::gradient);
    g.add_op("B" + std::to_string(i), {x[static_cast<std::size_t>(i - 1)], x[static_cast<std::size_t>(i)], gr}, {next},
             {.type = "layer_backward", .phase = op_phase::backward, .cost = 2e-3});
    gr = next;
  }
  return g;
}

// Milliseconds of one run of the plan, the median of 5: each kernel busy for its op's cost, the copies
// through a 1 GiB/s link, on the copy thread or inline.
double measured_ms(const problem& p, const memory_plan& mp, bool copy_thread) {
  using clock = std::chrono::steady_clock;
  runtime::paced_host_backend link;
  link.bandwidth = 1024.0 * 1024.0 * 1024.0;
  runtime::executor<runtime::paced_host_backend> ex(p, mp, {.copy_thread = copy_thread}, link);
  auto kernel = [&](op_id o, std::span<std::byte* const>, std::span<std::byte* const>, std::byte*) {
    const auto until = clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(p.cost(o)));
    while (clock::now() < until) {
    }
  };
  std::vector<double> t;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = clock::now();
    ex.run(kernel);
    t.push_back(std::chrono::duration<double, std::milli>(clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[2];
}

int main() {
  const std::int64_t MiB = 1 << 20;
  const auto p = make_problem(chain(5, MiB));
  plan_context ctx;
  ctx.timing.bandwidth = 1024.0 * 1024.0 * 1024.0;  // 1 GiB/s: 1 MiB in ~0.98 ms
  ctx.deterministic = true;  // work limits, not time limits: the same plans on every machine
  const auto free_run = plan(p, schedule::given{} | offload::none{} | place::greedy_by_size{}, ctx);
  std::printf("no limit: arena %.2f MiB, makespan %.2f ms\n", static_cast<double>(free_run.arena) / MiB, 1e3 * free_run.makespan);
  memory_plan last;
  std::vector<memory_plan> plans{free_run};
  for (std::int64_t budget : {free_run.arena - MiB, free_run.arena - 2 * MiB, free_run.arena - 3 * MiB}) {
    ctx.budget = budget;
    const auto mp = plan(p, schedule::given{} | offload::refined{} | place::greedy_by_size{}, ctx);
    std::printf("\nbudget %.2f MiB: arena %.2f MiB, makespan %.2f ms (lower bound %.2f ms), %lld bytes moved each way, host peak %.2f MiB\n",
                static_cast<double>(budget) / MiB, static_cast<double>(mp.arena) / MiB, 1e3 * mp.makespan, 1e3 * mp.makespan_lower_bound,
                static_cast<long long>(mp.stats.transfer_bytes / 2), static_cast<double>(mp.host_peak) / MiB);
    for (const auto& s : mp.steps) {
      if (s.kind == step_kind::free) continue;
      const auto name = runs_op(s.kind) ? p.op_name(s.id) : p.tensor_name(s.id);
      std::printf("  %-8s %-4s %7.3f .. %7.3f ms%s\n", std::string(to_string(s.kind)).c_str(), name.c_str(), 1e3 * s.begin, 1e3 * s.end,
                  runs_op(s.kind) ? "" : "   (copy engine)");
    }
    last = mp;
    plans.push_back(mp);
  }
  io::write_timeline_svg("offload_chain.svg", p, last);
  std::printf("\nwrote offload_chain.svg (the last plan's compute and copy lanes)\n");

  std::printf("\nrun for real (kernels busy for their cost, copies through an emulated 1 GiB/s link, median of 5 runs):\n");
  std::printf("%12s %14s %18s %14s\n", "arena MiB", "simulated ms", "copy thread ms", "inline ms");
  for (const auto& mp : plans)
    std::printf("%12.2f %14.2f %18.2f %14.2f\n", static_cast<double>(mp.arena) / MiB, 1e3 * mp.makespan, measured_ms(p, mp, true),
                measured_ms(p, mp, false));
  return 0;
}
