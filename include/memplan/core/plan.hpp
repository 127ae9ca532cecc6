#pragma once
// memory_plan: what memplan returns and every consumer reads (verify, the executor, the plan JSON,
// the SVG heap map): a placed timeline (core/timeline.hpp) -- steps, materializations with their
// offsets, workspace offsets, the arena -- plus the stats that carry the plan's evidence.
#include <cstdint>
#include <string>
#include <vector>

#include <memplan/core/timeline.hpp>

namespace memplan {

struct plan_stats {
  std::int64_t peak = 0;              // max live bytes over the op steps (verify re-derives it)
  std::int64_t lower_bound = 0;       // valid lower bound on the peak of any plan the pipeline could make
  std::string lower_bound_by;         // which bound that is: "lower_bound_peak", "scheduler", "min-cut", "op-local" ("": not said)
  double gap = 0.0;                   // (peak - lower_bound) / peak
  // A bound on the peak of any order with the plan's implementations (chosen_impls_lower_bound), when
  // it is above lower_bound: the rest of the gap needs slower, leaner implementations. -1: not computed
  // (no op runs above its least workspace, or the plan recomputes or offloads).
  std::int64_t impl_lower_bound = -1;
  std::int64_t arena = 0;             // bytes of the one arena
  std::int64_t arena_lower_bound = 0; // the placer's bound on the arena for this timeline
  double fragmentation = 0.0;         // (arena - peak) / arena (OLLA §5.4)
  std::int64_t given_peak = -1;       // peak of the graph's given order (-1: not computed)
  double compute_cost = 0.0;          // sum of the op costs of one step (each op once)
  double recompute_cost = 0.0;        // sum of cost over recompute steps
  std::int64_t transfer_bytes = 0;    // bytes moved by offload + prefetch
  // Timed plans (offloaders): seconds of the no-wait schedule, of the op steps alone, the bound; host bytes.
  double makespan = 0.0, compute_time = 0.0, makespan_lower_bound = 0.0;
  std::int64_t host_peak = 0;
  double schedule_seconds = 0.0, checkpoint_seconds = 0.0, offload_seconds = 0.0, place_seconds = 0.0;
  std::string scheduler, checkpointer, offloader, placer;  // the policies (best_of: the winner)
  std::vector<std::string> notes;     // fallbacks (e.g. "olla_ilp: no MILP backend, used default"), limits hit
};

struct memory_plan : timeline {
  plan_stats stats;
};

// Fills lower_bound and gap from a bound.
inline void set_lower_bound(plan_stats& st, std::int64_t lb) {
  st.lower_bound = lb;
  st.gap = st.peak > 0 ? static_cast<double>(st.peak - lb) / static_cast<double>(st.peak) : 0.0;
}

// The stats a placed timeline supports by itself (the pipeline adds bounds, given peak, notes).
inline plan_stats timeline_stats(const problem& p, const timeline& tl) {
  plan_stats st;
  st.peak = tl.peak;
  st.arena = tl.arena;
  st.arena_lower_bound = tl.arena_lower_bound;
  st.makespan = tl.makespan;
  st.compute_time = tl.compute_time;
  st.makespan_lower_bound = tl.makespan_lower_bound;
  st.host_peak = tl.host_peak;
  st.fragmentation = tl.arena > 0 ? static_cast<double>(tl.arena - tl.peak) / static_cast<double>(tl.arena) : 0.0;
  for (op_id o = 0; o < p.num_ops(); ++o) st.compute_cost += p.cost(o);
  for (const auto& s : tl.steps) {
    if (s.kind == step_kind::recompute) st.recompute_cost += step_cost(p, s);
    if (s.kind == step_kind::offload || s.kind == step_kind::prefetch) st.transfer_bytes += p.storage_bytes(p.storage_of(s.id));
  }
  for (const auto& r : tl.stages) {
    auto& secs = r.kind == stage_kind::scheduler      ? st.schedule_seconds
                 : r.kind == stage_kind::checkpointer ? st.checkpoint_seconds
                 : r.kind == stage_kind::offloader    ? st.offload_seconds
                                                      : st.place_seconds;
    auto& who = r.kind == stage_kind::scheduler      ? st.scheduler
                : r.kind == stage_kind::checkpointer ? st.checkpointer
                : r.kind == stage_kind::offloader    ? st.offloader
                                                     : st.placer;
    secs += r.seconds;
    who = r.name;
    if (!r.note.empty()) st.notes.push_back(r.note);
  }
  return st;
}

}  // namespace memplan
