// Teaching example: MONeT's idea, choosing each operator's implementation together with the
// recomputation schedule under a memory budget (Shah et al., ICLR 2021; docs/monet.md).
//
// An 8-layer convolutional chain at ResNet-18 scale: every layer output is 24.5 MiB, and every forward
// convolution can run one of four cuDNN algorithms (the exporter's model of layer1.0.conv1 at batch 32,
// docs/monet.md): the fastest needs a 110.8 MiB workspace while it runs, the slowest none. Three planners
// meet the same budgets:
//   fastest   every convolution on its fastest algorithm, then recomputation (Checkmate's setting: the
//             schedule is chosen, the implementations are fixed);
//   default   every convolution on PyTorch's default algorithm (small workspace, slower), then recomputation;
//   joint     remat::monet_greedy: algorithms and recomputation chosen together.
// Each cell is the step's time: every forward, backward and recomputation at its chosen algorithm's cost,
// relative to the fastest algorithms with nothing recomputed (the unconstrained ideal), or "-" when that
// planner cannot meet the budget at all. Every plan is checked by memplan::verify before it is returned.
#include <cstdio>
#include <string>
#include <vector>

#include <memplan/core/adapt.hpp>
#include <memplan/base/error.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/graph/dataflow_graph.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/remat/default_checkpointer.hpp>
#include <memplan/remat/monet_greedy.hpp>
#include <memplan/remat/none.hpp>
#include <memplan/schedule/given.hpp>

using namespace memplan;

constexpr std::int64_t KiB = 1 << 10, MiB = 1 << 20;

// The Pareto front of the convolution's algorithms (time in microseconds, workspace).
const std::vector<implementation> conv_algorithms{
    {"WINOGRAD_NONFUSED", 315.0, 110 * MiB + 819 * KiB},
    {"WINOGRAD", 374.0, 256 * KiB},
    {"IMPLICIT_PRECOMP_GEMM", 471.0, 2 * KiB + 256},
    {"IMPLICIT_GEMM", 628.0, 0},
};

enum class choice { fastest, pytorch_default, all };

// x0 -> conv1 -> x1 -> ... -> conv8 -> x8 -> loss -> g8 -> conv8_backward -> ... -> g0; the backward of
// layer k reads x(k-1) and g(k) (its weight gradient is folded in) and costs twice the default forward.
graph::dataflow_graph conv_chain(int n, choice c) {
  graph::dataflow_graph g("conv_chain");
  g.set_cost_unit("seconds");
  const std::int64_t act = 24 * MiB + 512 * KiB;
  std::vector<graph::tensor_ref> x{g.add_tensor("x0", act, tensor_kind::input)};
  for (int i = 1; i <= n; ++i) {
    x.push_back(g.add_tensor("x" + std::to_string(i), act));
    graph::op_attributes a{.type = "convolution", .phase = op_phase::forward};
    if (c == choice::fastest) a.cost = conv_algorithms[0].cost, a.workspace = conv_algorithms[0].workspace;
    else a.cost = conv_algorithms[2].cost, a.workspace = conv_algorithms[2].workspace;  // PyTorch's default
    if (c == choice::all) a.implementations = conv_algorithms;
    g.add_op("conv" + std::to_string(i), {x[static_cast<std::size_t>(i - 1)]}, {x.back()}, a);
  }
  auto gr = g.add_tensor("g" + std::to_string(n), act, tensor_kind::gradient);
  g.add_op("loss", {x.back()}, {gr}, {.type = "loss", .phase = op_phase::forward, .cost = 10.0});
  for (int i = n; i >= 1; --i) {
    auto next = g.add_tensor("g" + std::to_string(i - 1), act, i == 1 ? tensor_kind::output : tensor_kind::gradient);
    g.add_op("conv" + std::to_string(i) + "_backward", {x[static_cast<std::size_t>(i - 1)], gr}, {next},
             {.type = "convolution_backward", .phase = op_phase::backward, .cost = 2 * 471.0, .workspace = 2 * KiB + 256});
    gr = next;
  }
  return g;
}

// Every op step (compute and recompute) at its chosen implementation's cost.
double step_time(const problem& p, const memory_plan& mp) {
  double t = 0;
  for (const auto& s : mp.steps) t += step_cost(p, s);
  return t;
}

struct outcome {
  bool feasible = false;
  double time = 0;
  std::int64_t arena = 0;
  int recomputed = 0;
  std::string algorithms;  // how many forward convolutions run each algorithm
};

template <class Checkpointer>
outcome run(const problem& p, const Checkpointer& c, std::int64_t budget) {
  outcome o;
  try {
    plan_context ctx;
    ctx.budget = budget;
    ctx.deterministic = true;  // the same table on every machine
    const auto mp = plan(p, schedule::given{} | c | place::default_placer{}, ctx);
    o = {true, step_time(p, mp), mp.arena, 0, {}};
    std::vector<int> uses(conv_algorithms.size());
    for (const auto& s : mp.steps) {
      o.recomputed += s.kind == step_kind::recompute;
      if (s.kind == step_kind::compute && p.op_type(s.id) == "convolution")
        for (std::size_t a = 0; a < conv_algorithms.size(); ++a) uses[a] += step_cost(p, s) == conv_algorithms[a].cost;
    }
    for (std::size_t a = 0; a < uses.size(); ++a) o.algorithms += (a ? " " : "") + std::to_string(uses[a]);
  } catch (const error& e) {
    if (e.code() != errc::infeasible) throw;
  }
  return o;
}

int main() {
  constexpr int layers = 8;
  const auto fastest = make_problem(conv_chain(layers, choice::fastest));
  const auto pytorch = make_problem(conv_chain(layers, choice::pytorch_default));
  const auto all = make_problem(conv_chain(layers, choice::all));
  const auto ideal = run(fastest, remat::none{}, -1).time;  // no budget: nothing recomputed
  const auto top = run(fastest, remat::none{}, -1).arena;

  std::printf("An %d-layer convolutional chain, 24.5 MiB per activation; each convolution has four algorithms:\n", layers);
  for (const auto& a : conv_algorithms)
    std::printf("  %-22s %4.0f us  workspace %8.2f MiB\n", a.name.c_str(), a.cost, static_cast<double>(a.workspace) / MiB);
  std::printf("Step time relative to every convolution on its fastest algorithm with nothing recomputed (%.0f us),\n"
              "arena %.1f MiB; '-' = that planner cannot meet the budget. (r = ops recomputed)\n\n",
              ideal, static_cast<double>(top) / MiB);
  std::printf("%12s | %16s | %16s | %16s | %s\n", "budget MiB", "fastest", "PyTorch default", "joint (MONeT)", "joint: convolutions on each algorithm, in the order above");
  int joint_wins = 0, rows = 0;
  for (double frac : {1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.45, 0.4}) {
    const auto budget = static_cast<std::int64_t>(frac * static_cast<double>(top));
    const auto f = run(fastest, remat::default_checkpointer{}, budget);
    const auto d = run(pytorch, remat::default_checkpointer{}, budget);
    const auto j = run(all, remat::monet_greedy{}, budget);
    auto cell = [&](const outcome& o) {
      static char buf[4][32];
      static int k = 0;
      k = (k + 1) % 4;
      if (!o.feasible) std::snprintf(buf[k], sizeof buf[k], "%16s", "-");
      else std::snprintf(buf[k], sizeof buf[k], "%9.3fx (r %d)", o.time / ideal, o.recomputed);
      return buf[k];
    };
    std::printf("%12.1f | %s | %s | %s | %s\n", static_cast<double>(budget) / MiB, cell(f), cell(d), cell(j), j.algorithms.c_str());
    ++rows;
    // The joint choice is never worse than either fixed choice where that one fits, and it fits wherever they do.
    const bool better = j.feasible && (!f.feasible || j.time <= f.time * (1 + 1e-9)) && (!d.feasible || j.time <= d.time * (1 + 1e-9));
    if (!better && (f.feasible || d.feasible)) {
      std::printf("joint choice lost to a fixed choice at budget %.1f MiB\n", static_cast<double>(budget) / MiB);
      return 1;
    }
    joint_wins += j.feasible && ((f.feasible && j.time < f.time) || !f.feasible) && ((d.feasible && j.time < d.time) || !d.feasible);
  }
  std::printf("\nThe fastest algorithm's 110.8 MiB workspace competes with the activations kept for the backward pass:\n"
              "under a tight budget it forces recomputation (or does not fit at all), while the small-workspace\n"
              "default pays its slower convolution everywhere. Choosing per layer, together with what to recompute,\n"
              "was strictly faster than both fixed choices at %d of %d budgets.\n",
              joint_wins, rows);
  return joint_wins > 0 ? 0 : 1;
}
