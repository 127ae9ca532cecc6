#pragma once
// The checkpointers by name (the CLI's --checkpointer NAME): registry<any_checkpointer>. One line per policy.
#include <memplan/core/any_stage.hpp>
#include <memplan/core/registry.hpp>
#include <memplan/remat/chain_dp.hpp>
#include <memplan/remat/chen.hpp>
#include <memplan/remat/checkmate_ilp.hpp>
#include <memplan/remat/default_checkpointer.hpp>
#include <memplan/remat/greedy.hpp>
#include <memplan/remat/monet_greedy.hpp>
#include <memplan/remat/monet_ilp.hpp>
#include <memplan/remat/none.hpp>
#include <memplan/remat/revolve.hpp>

namespace memplan {

inline const registry<any_checkpointer>& checkpointers() {
  static const auto r = [] {
    using namespace remat;
    registry<any_checkpointer> g("checkpointer");
    g.add("none", "recompute nothing", [] { return any_checkpointer(none{}); });
    g.add("default", "best of the solver-free checkpointers that meets the budget at the least recompute cost, a greedy winner then annealing its drop set (each op on its own implementation; monet_greedy chooses them too)",
          [] { return any_checkpointer(default_checkpointer{}); });
    g.add("greedy", "evict the cheapest value per byte-step to its next use above the budget (DTR), recompute just in time",
          [] { return any_checkpointer(greedy{}); });
    g.add("chen_sqrt", "Chen §4.3: sqrt(n) segments, one extra forward pass", [] { return any_checkpointer(chen_sqrt{}); });
    g.add("chen_sqrt_cheap", "chen_sqrt dropping only cheap results inside segments (§4.2)",
          [] { return any_checkpointer(chen_sqrt{.drop_cheap = true}); });
    g.add("chen_budget", "Chen Alg. 3 with the grid search of Appendix A", [] { return any_checkpointer(chen_budget{}); });
    g.add("chen_budget_cheap", "chen_budget dropping only cheap results inside segments (§4.2)",
          [] { return any_checkpointer(chen_budget{.drop_cheap = true}); });
    g.add("chen_recursive", "Chen §4.4: recursive segments, O(log n) memory", [] { return any_checkpointer(chen_recursive{}); });
    g.add("revolve", "binomial checkpointing (Griewank & Walther), optimal on homogeneous chains",
          [] { return any_checkpointer(revolve{}); });
    g.add("chain_dp", "optimal dynamic program on the heterogeneous chain of segments (rotor)",
          [] { return any_checkpointer(chain_dp{}); });
    g.add("checkmate_ilp", "Checkmate MILP over the order with the context's solver (CBC): least recompute cost; best_solver_free's plan without one",
          [] { return any_checkpointer(checkmate_ilp{.warm_start = best_solver_free{}}); });
    g.add("monet_greedy", "operator implementations chosen with recomputation, solver-free: fastest implementation that fits the memory left, then the default checkpointer (MONeT §4 heuristic)",
          [] { return any_checkpointer(monet_greedy{}); });
    g.add("monet_ilp", "MONeT's 0-1 program: recomputation and every op's implementation jointly, least total cost, with the context's solver (CBC); monet_greedy's plan without one",
          [] { return any_checkpointer(monet_ilp{}); });
    return g;
  }();
  return r;
}

}  // namespace memplan
