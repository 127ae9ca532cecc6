#pragma once
// schedule::by_name -- the scheduler of a given name, type-erased (for the CLI's --scheduler NAME):
//   auto s = schedule::by_name("exact", {.time_limit_s = 5, .progress = cb});
// The registry is one table: one line adds a policy (e.g. olla_ilp once schedule/olla_ilp.hpp lands).
#include <functional>
#include <string>
#include <vector>

#include <memplan/core/error.hpp>
#include <memplan/schedule/any_scheduler.hpp>
#include <memplan/schedule/best_of.hpp>
#include <memplan/schedule/default_scheduler.hpp>
#include <memplan/schedule/exact.hpp>
#include <memplan/schedule/given.hpp>
#include <memplan/schedule/list_scheduler.hpp>
#include <memplan/schedule/local_search.hpp>
#include <memplan/schedule/olla_ilp.hpp>
#include <memplan/schedule/options.hpp>
#include <memplan/solver/cbc.hpp>

namespace memplan::schedule {

struct registry_entry {
  std::string name;
  std::string description;
  std::function<any_scheduler(const options&)> make;
};

namespace detail {
inline auto heuristics_best_of() { return best_of{peak_aware(), lookahead(), min_net_growth(), max_free(), depth_first()}; }
inline local_search_options ls_options(const options& o) {
  local_search_options l;
  if (o.time_limit_s >= 0) l.time_limit_s = o.time_limit_s;
  l.progress = o.progress;
  return l;
}
}  // namespace detail

inline const std::vector<registry_entry>& registry() {
  static const std::vector<registry_entry> r{
      {"given", "the graph's own order", [](const options&) { return any_scheduler(given{}); }},
      {"depth_first", "DFS post-order from the sinks", [](const options&) { return any_scheduler(depth_first()); }},
      {"min_net_growth", "list scheduler: smallest allocated - freed", [](const options&) { return any_scheduler(min_net_growth()); }},
      {"max_free", "list scheduler: most bytes freed", [](const options&) { return any_scheduler(max_free()); }},
      {"lookahead", "list scheduler: net growth + what the unblocked consumers free", [](const options&) { return any_scheduler(lookahead()); }},
      {"peak_aware", "list scheduler: never raise the running peak if avoidable", [](const options&) { return any_scheduler(peak_aware()); }},
      {"reverse_min_net_growth", "list scheduler from the end: producers as late as their consumers allow",
       [](const options&) { return any_scheduler(reverse_min_net_growth()); }},
      {"best_of", "lowest peak of the list schedulers", [](const options&) { return any_scheduler(detail::heuristics_best_of()); }},
      {"local_search", "best_of, then precedence-preserving moves",
       [](const options& o) { return any_scheduler(local_search(detail::heuristics_best_of(), detail::ls_options(o))); }},
      {"exact", "proven minimum peak, graphs up to 64 ops",
       [](const options& o) {
         exact e;
         if (o.time_limit_s >= 0) e.time_limit_s = o.time_limit_s;
         e.progress = o.progress;
         return any_scheduler(e);
       }},
      {"default", "best_of the list schedulers + local search within ~1 s",
       [](const options& o) {
         default_scheduler d;
         if (o.time_limit_s >= 0) d.time_limit_s = o.time_limit_s;
         d.progress = o.progress;
         return any_scheduler(d);
       }},
      {"olla_ilp", "OLLA eq. 14 MILP with CBC (when linked), warm start default; falls back to default without CBC",
       [](const options& o) { return any_scheduler(make_olla_ilp(o, solver::cbc{})); }},
  };
  return r;
}

inline std::vector<std::string> scheduler_names() {
  std::vector<std::string> n;
  for (const auto& e : registry()) n.push_back(e.name);
  return n;
}

inline any_scheduler by_name(const std::string& name, const options& opt = {}) {
  for (const auto& e : registry())
    if (e.name == name) return e.make(opt);
  std::string valid;
  for (const auto& e : registry()) valid += (valid.empty() ? "" : ", ") + e.name;
  throw error(errc::invalid_argument, "unknown scheduler '" + name + "'; valid names: " + valid);
}

}  // namespace memplan::schedule
