#pragma once
// The schedulers by name (the CLI's --scheduler NAME): registry<any_scheduler>. One line per policy.
#include <memplan/core/any_stage.hpp>
#include <memplan/core/best_of.hpp>
#include <memplan/core/registry.hpp>
#include <memplan/schedule/default_scheduler.hpp>
#include <memplan/schedule/exact.hpp>
#include <memplan/schedule/given.hpp>
#include <memplan/schedule/list_scheduler.hpp>
#include <memplan/schedule/local_search.hpp>
#include <memplan/schedule/olla_ilp.hpp>

namespace memplan {

namespace detail {
inline auto heuristics_best_of() {
  using namespace schedule;
  return best_of{peak_aware(), lookahead(), min_net_growth(), max_free(), depth_first()};
}
}  // namespace detail

inline const registry<any_scheduler>& schedulers() {
  static const auto r = [] {
    using namespace schedule;
    registry<any_scheduler> g("scheduler");
    g.add("given", "the graph's own order", [] { return any_scheduler(given{}); });
    g.add("depth_first", "DFS post-order from the sinks", [] { return any_scheduler(depth_first()); });
    g.add("min_net_growth", "list scheduler: smallest allocated - freed", [] { return any_scheduler(min_net_growth()); });
    g.add("max_free", "list scheduler: most bytes freed", [] { return any_scheduler(max_free()); });
    g.add("lookahead", "list scheduler: net growth + what the unblocked consumers free", [] { return any_scheduler(lookahead()); });
    g.add("peak_aware", "list scheduler: never raise the running peak if avoidable", [] { return any_scheduler(peak_aware()); });
    g.add("reverse_min_net_growth", "list scheduler from the end: producers as late as their consumers allow",
          [] { return any_scheduler(reverse_min_net_growth()); });
    g.add("best_of", "lowest peak of the list schedulers", [] { return any_scheduler(memplan::detail::heuristics_best_of()); });
    g.add("local_search", "best_of, then precedence-preserving moves", [] { return any_scheduler(local_search(memplan::detail::heuristics_best_of())); });
    g.add("exact", "proven minimum peak, graphs up to 64 ops", [] { return any_scheduler(exact{}); });
    g.add("default", "best_of the list schedulers + local search within ~1 s", [] { return any_scheduler(default_scheduler{}); });
    g.add("olla_ilp", "OLLA eq. 14 MILP with the context's solver (CBC), warm start default; falls back to default without one",
          [] { return any_scheduler(olla_ilp{}); });
    return g;
  }();
  return r;
}

}  // namespace memplan
