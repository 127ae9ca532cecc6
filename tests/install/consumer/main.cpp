// A downstream program: builds a graph, plans it, verifies the plan.
#include <memplan/core/pipeline.hpp>
#include <memplan/graph/dataflow_graph.hpp>
#include <memplan/schedule/given.hpp>
#include <cstdio>

struct stack_placer {
  std::string name() const { return "stack"; }
  memplan::place::buffer_placement place(const memplan::place::buffer_problem& bp) const {
    memplan::place::buffer_placement pl;
    for (const auto& b : bp.buffers) { pl.offsets.push_back(pl.arena); pl.arena += b.size; }
    return pl;
  }
};

int main() {
  memplan::graph::dataflow_graph g("consumer");
  auto x = g.add_tensor("x", 64, memplan::tensor_kind::input);
  auto y = g.add_tensor("y", 128);
  auto z = g.add_tensor("z", 32, memplan::tensor_kind::output);
  g.add_op("f", {x}, {y});
  g.add_op("g", {y}, {z});
  auto plan = memplan::plan(g, memplan::schedule::given{} | stack_placer{});
  std::printf("peak %lld\n", static_cast<long long>(plan.stats.peak));
  return plan.stats.peak == 64 + 128 + 32 ? 0 : 1;
}
