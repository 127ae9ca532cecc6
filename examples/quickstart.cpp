// The README's "Use it" section, compiled: build a graph, optimize it, compose policies.
#include <cstdio>

#include <memplan/olla.hpp>
#include <memplan/place/best_fit.hpp>
#include <memplan/core/best_of.hpp>
#include <memplan/schedule/given.hpp>
#include <memplan/schedule/local_search.hpp>

int main() {
  memplan::graph::dataflow_graph g("mlp");  // or YOUR graph type, see docs/adapting.md
  auto x = g.add_tensor("x", 4096, memplan::tensor_kind::input);
  auto w = g.add_tensor("w", 65536, memplan::tensor_kind::weight);
  auto h = g.add_tensor("h", 8192);
  auto y = g.add_tensor("y", 4, memplan::tensor_kind::output);
  g.add_op("fc", {x, w}, {h}, {.type = "linear", .phase = memplan::op_phase::forward});
  g.add_op("loss", {h}, {y});

  memplan::memory_plan plan = memplan::olla::optimize(g);  // reorder + place, verified
  std::printf("peak %lld B, arena %lld B, lower bound %lld B, scheduler %s, placer %s\n",
              static_cast<long long>(plan.stats.peak), static_cast<long long>(plan.arena),
              static_cast<long long>(plan.stats.lower_bound), plan.stats.scheduler.c_str(), plan.stats.placer.c_str());

  // Or compose policies yourself (scheduler | placer); every plan returned has passed memplan::verify:
  auto p2 = memplan::plan(g, memplan::schedule::best_of{memplan::schedule::given{}, memplan::schedule::local_search{memplan::schedule::given{}}} |
                                 memplan::place::best_fit{},
                          {.alignment = 256});
  std::printf("composed: peak %lld B, arena %lld B (alignment 256)\n", static_cast<long long>(p2.stats.peak),
              static_cast<long long>(p2.arena));
  return 0;
}
