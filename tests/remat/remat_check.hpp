#pragma once
// Checks shared by the checkpointer tests: place a timeline with the test stack placer and run verify on
// it (the referee, not an assertion inside the stage), and the instance families.
#include <cstdint>
#include <string>
#include <vector>

#include <memplan/core/adapt.hpp>
#include <memplan/core/plan.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/verify.hpp>

#include "../support/random_dag.hpp"
#include "../support/remat_brute_force.hpp"
#include "../support/stack_placer.hpp"
#include "remat_graphs.hpp"

namespace memplan::testing {

// verify()'s verdict on a timeline once placed without memory reuse ("<valid>" when it passes).
inline std::string violation_of(const problem& p, const timeline& tl) {
  auto placed = memplan::detail::run_placer(stack_placer{}, p, tl, plan_context{});
  memory_plan mp{std::move(placed), {}};
  mp.stats = timeline_stats(p, mp);
  const auto r = verify(p, mp);
  return r.ok ? "<valid>" : r.violation;
}

inline std::int64_t recomputes(const timeline& tl) {
  std::int64_t k = 0;
  for (const auto& s : tl.steps) k += s.kind == step_kind::recompute;
  return k;
}

// Recompute cost in the checkpointers' model units: the steps' costs, or one per recompute when the
// graph has no costs.
inline double model_cost(const problem& p, const timeline& tl) {
  bool any = false;
  for (op_id o = 0; o < p.num_ops(); ++o) any |= p.cost(o) > 0;
  if (!any) return static_cast<double>(recomputes(tl));
  double c = 0;
  for (const auto& s : tl.steps)
    if (s.kind == step_kind::recompute) c += step_cost(p, s);
  return c;
}

struct remat_instance {
  std::string name;
  problem p;
};

// Small training-like graphs: random DAGs, training chains (with and without costs), plain chains.
inline std::vector<remat_instance> remat_instances(int random_dags = 40, int chains = 16) {
  std::vector<remat_instance> v;
  for (int s = 0; s < random_dags; ++s) {
    const auto seed = static_cast<std::uint64_t>(s);
    const int ops = 5 + s % 4;
    v.push_back({"random_dag seed " + std::to_string(s) + " ops " + std::to_string(ops),
                 make_problem(random_dag(seed, {.ops = ops, .p_inplace = 0.3, .p_output = 0.05}))});
  }
  for (int s = 0; s < chains; ++s) {
    const auto seed = static_cast<std::uint64_t>(100 + s);
    const int layers = 3 + s % 2;
    v.push_back({"training_chain seed " + std::to_string(100 + s) + " layers " + std::to_string(layers),
                 make_problem(training_chain(seed, {.layers = layers, .costs = s % 4 != 3}))});
  }
  for (int n = 3; n <= 5; ++n) v.push_back({"plain_chain " + std::to_string(n), make_problem(plain_chain(n))});
  return v;
}

}  // namespace memplan::testing
