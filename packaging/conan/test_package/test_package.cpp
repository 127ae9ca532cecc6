// Consumes the installed memplan: plan a small training-like graph, check the plan, print it.
#include <cstdio>

#include <memplan/olla.hpp>

int main() {
  memplan::graph::dataflow_graph g("mlp");
  auto x = g.add_tensor("x", 4096, memplan::tensor_kind::input);
  auto w = g.add_tensor("w", 65536, memplan::tensor_kind::weight);
  auto h = g.add_tensor("h", 8192);
  auto y = g.add_tensor("y", 4, memplan::tensor_kind::output);
  g.add_op("fc", {x, w}, {h}, {.type = "linear", .phase = memplan::op_phase::forward});
  g.add_op("loss", {h}, {y});
  const memplan::memory_plan plan = memplan::olla::optimize(g);
  const auto p = memplan::make_problem(g);
  if (!memplan::verify(p, plan).ok) {
    std::puts("memplan test_package: the plan did not verify");
    return 1;
  }
  std::printf("memplan test_package: %zu steps, arena %lld bytes, verified\n", plan.steps.size(),
              static_cast<long long>(plan.arena));
  return 0;
}
