// Teaching example: Chen et al.'s idea on a chain. A 6-layer network whose every layer output is
// 1 MiB: without recomputation the backward pass needs all six outputs at once; dropping some and
// recomputing them from a kept one (a checkpoint) just before the backward needs them trades compute
// for memory. Prints both plans step by step, then memory vs depth for no recomputation, Chen's
// sqrt(n) segments and the recursive O(log n) scheme.
#include <cstdio>
#include <string>

#include <memplan/core/adapt.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/graph/dataflow_graph.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/remat/chen.hpp>
#include <memplan/remat/none.hpp>
#include <memplan/remat/revolve.hpp>
#include <memplan/schedule/given.hpp>

using namespace memplan;

// x0 -> F0 -> x1 -> ... -> F(n-1) -> xn -> loss -> yn -> B(n-1) -> ... -> B0 -> y0; B_k reads x_k, x_{k+1}, y_{k+1}.
graph::dataflow_graph chain(int n, std::int64_t bytes) {
  graph::dataflow_graph g("chain" + std::to_string(n));
  std::vector<graph::tensor_ref> x{g.add_tensor("x0", bytes, tensor_kind::input)}, y(static_cast<std::size_t>(n) + 1);
  for (int i = 0; i < n; ++i) {
    x.push_back(g.add_tensor("x" + std::to_string(i + 1), bytes));
    g.add_op("F" + std::to_string(i), {x[static_cast<std::size_t>(i)]}, {x.back()}, {.type = "layer", .phase = op_phase::forward, .cost = 1.0});
  }
  y[static_cast<std::size_t>(n)] = g.add_tensor("y" + std::to_string(n), bytes, tensor_kind::gradient);
  g.add_op("loss", {x.back()}, {y[static_cast<std::size_t>(n)]}, {.type = "loss", .phase = op_phase::backward});
  for (int k = n - 1; k >= 0; --k) {
    const auto ku = static_cast<std::size_t>(k);
    y[ku] = g.add_tensor("y" + std::to_string(k), bytes, k == 0 ? tensor_kind::output : tensor_kind::gradient);
    g.add_op("B" + std::to_string(k), {x[ku + 1], x[ku], y[ku + 1]}, {y[ku]}, {.type = "layer_backward", .phase = op_phase::backward, .cost = 2.0});
  }
  return g;
}

template <class Ckpt>
memory_plan plan_chain(const problem& p, const Ckpt& c) {
  return plan(p, schedule::given{} | c | place::greedy_by_size{});
}

void show(const char* title, const problem& p, const memory_plan& mp) {
  std::printf("%s: peak %.0f MiB, %lld steps recomputed\n  ", title, static_cast<double>(mp.stats.peak) / 1048576.0,
              static_cast<long long>(mp.stats.recompute_cost));
  for (const auto& s : mp.steps) {
    if (s.kind == step_kind::compute) std::printf("%s ", p.op_name(s.id).c_str());
    else if (s.kind == step_kind::recompute) std::printf("[%s] ", p.op_name(s.id).c_str());
    else if (s.kind == step_kind::free) std::printf("-%s ", p.tensor_name(s.id).c_str());
  }
  std::printf("\n");
}

int main() {
  constexpr std::int64_t MiB = 1 << 20;
  const auto p = make_problem(chain(6, MiB));
  std::printf("A 6-layer chain, 1 MiB per layer output; [op] = a recomputation, -x = x freed.\n\n");
  const auto none = plan_chain(p, remat::none{});
  show("no recomputation", p, none);
  const auto one = plan_chain(p, remat::revolve{.snapshots = 1});
  show("\none checkpoint (revolve, 1 snapshot)", p, one);
  const auto sq = plan_chain(p, remat::chen_sqrt{});
  show("\nChen sqrt(n) segments", p, sq);
  std::printf("\nMemory vs depth (MiB; forward recomputations per layer in parentheses):\n%6s %10s %22s %22s\n", "layers", "none",
              "chen_sqrt", "chen_recursive");
  for (int n : {4, 16, 64, 256}) {
    const auto q = make_problem(chain(n, MiB));
    const auto a = plan_chain(q, remat::none{}), b = plan_chain(q, remat::chen_sqrt{}), c = plan_chain(q, remat::chen_recursive{});
    std::printf("%6d %10.0f %14.0f (%4.2f) %14.0f (%4.2f)\n", n, static_cast<double>(a.stats.peak) / MiB, static_cast<double>(b.stats.peak) / MiB,
                b.stats.recompute_cost / n, static_cast<double>(c.stats.peak) / MiB, c.stats.recompute_cost / n);
  }
  std::printf("\nWithout recomputation memory grows with n; sqrt(n) segments cost one extra forward pass;\n"
              "the recursion keeps O(log n) checkpoints at O(n log n) recomputation (Chen et al. 2016, §4).\n");
  return none.stats.peak > sq.stats.peak ? 0 : 1;
}
