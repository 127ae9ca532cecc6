#pragma once
// schedule::default_scheduler -- what `memplan plan` uses without --scheduler: the best order
// found without a solver. Every list-scheduler rule (with DFS and given-order tie-breaks, and
// under OLLA §4.3 early weight-update edges when the graph has update ops) runs, the lowest peak
// wins (first on ties), then local_search improves it within the remaining time budget. It fills
// lower_bound (lower_bound_peak) and sets optimal when the peak reaches it.
// Cost: 9 list schedules, O((V + E) log V) each (plus the early-update transform, O(updates *
// 4096)), the lower bound, and the local search: at most max_iterations moves and time_limit_s
// seconds (the list schedulers are not counted against it: they always run to completion).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <memplan/core/analysis.hpp>
#include <memplan/core/plan.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/schedule/list_scheduler.hpp>
#include <memplan/schedule/local_search.hpp>
#include <memplan/schedule/options.hpp>

namespace memplan::schedule {

// The list schedulers the default (and by_name("best_of")) tries, in tie-break order.
inline std::vector<list_scheduler> default_heuristics(bool with_early_updates = true) {
  std::vector<list_scheduler> h{peak_aware(), lookahead(), min_net_growth(), max_free(), depth_first()};
  h.push_back({priority::lookahead, true, tie_break::dfs, false});
  h.push_back({priority::min_net_growth, true, tie_break::given, false});
  h.push_back({priority::min_net_growth, false, tie_break::given, false});
  if (with_early_updates) h.push_back({priority::min_net_growth, true, tie_break::dfs, true});
  return h;
}

struct default_scheduler {
  double time_limit_s = 1.0;             // local-search budget (< 0: iterations only, fully deterministic)
  std::int64_t max_iterations = 200000;  // local-search moves (deterministic budget)
  std::uint64_t seed = 1;
  progress_callback progress{};

  [[nodiscard]] std::string name() const { return "default"; }

  [[nodiscard]] schedule_result run(const problem& p) const {
    const detail::deadline clock(-1.0);
    schedule_result best;
    const auto lb = lower_bound_peak(p).bytes;
    bool has_updates = false;
    for (op_id o = 0; o < p.num_ops() && !has_updates; ++o) has_updates = p.phase(o) == op_phase::update;
    std::string tried;
    bool have = false;
    for (const auto& h : default_heuristics(has_updates)) {
      auto r = h.run(p);
      tried += (tried.empty() ? "" : ", ") + r.policy + "=" + std::to_string(r.peak);
      detail::report(progress, "default", r.policy, clock.elapsed(), r.peak, lb);
      if (!have || r.peak < best.peak) { best = std::move(r); have = true; }
      if (best.peak <= lb) break;  // cannot do better
    }
    const auto winner = best.policy;
    std::string note = "default: " + tried;
    if (best.peak > lb && p.num_ops() > 1) {
      local_search_options lo;
      lo.time_limit_s = time_limit_s;
      lo.max_iterations = max_iterations;
      lo.seed = seed;
      lo.progress = progress;
      const auto before = best.peak;
      auto im = detail::improve_order(p, std::move(best.order), lo, lb, "default");
      best.order = std::move(im.order);
      best.peak = im.peak;
      best.policy = "default(" + winner + "+local_search)";
      note += "; local_search: " + std::to_string(before) + " -> " + std::to_string(best.peak) + " in " +
              std::to_string(im.iterations) + " moves";
      if (im.time_limit_hit) note += " (time budget ended it)";
    } else {
      best.policy = "default(" + winner + ")";
    }
    best.lower_bound = lb;
    best.optimal = best.peak == lb;
    best.note = note;
    return best;
  }
};

static_assert(scheduler<default_scheduler>);

}  // namespace memplan::schedule
