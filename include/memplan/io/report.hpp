#pragma once
// io::report: the figures of one planning run, as the CLI prints them and writes them as JSON
// (io/plan_json.hpp: report_to_json). std only.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <memplan/core/implementations.hpp>
#include <memplan/core/plan.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/recompute_bound.hpp>
#include <memplan/core/variants.hpp>

namespace memplan::io {

struct report {
  std::string graph;                 // the graph's name
  std::int32_t ops = 0, tensors = 0;
  std::int64_t total_bytes = 0;      // sum of all tensor sizes
  std::int64_t resident_bytes = 0;   // storages live for the whole run
  std::int64_t given_peak = -1;      // peak of the graph's given order (-1: not known)
  std::int64_t planned_peak = 0;     // max live bytes of the plan
  std::int64_t arena_bytes = 0;      // size of the one arena (>= planned_peak)
  double fragmentation = 0.0;        // (arena - planned_peak) / arena
  std::int64_t lower_bound = 0;      // valid lower bound on the peak of any order
  std::string lower_bound_by;        // which bound (plan_stats::lower_bound_by)
  double gap = 0.0;                  // (planned_peak - lower_bound) / planned_peak
  std::int64_t impl_lower_bound = -1; // bound for the plan's implementations (plan_stats::impl_lower_bound), -1: none
  double impl_gap = 0.0;             // (planned_peak - impl_lower_bound) / planned_peak
  double reduction = 0.0;            // (given_peak - planned_peak) / given_peak; 0 when given_peak unknown
  double plan_seconds = 0.0;         // wall time of the whole planning run
  double schedule_seconds = 0.0, checkpoint_seconds = 0.0, place_seconds = 0.0;
  std::string scheduler, placer;     // the policies that produced the plan (best_of: the winner)
  std::int64_t alignment = 1;
  std::int64_t capacity = -1;        // arena limit asked for, -1: none
  std::int64_t budget = -1;          // memory budget asked for (--budget), -1: none
  std::int64_t steps = 0;            // plan steps (compute + recompute + offload + prefetch + free)
  double compute_cost = 0.0;         // one training step, each op once (graph cost units, or ops when the graph has none)
  double recompute_cost = 0.0;       // the recompute steps' cost, same units
  double overhead = 0.0;             // recompute_cost / compute_cost
  std::int64_t recomputed_ops = 0;   // recompute steps
  // With a budget and no offloading (core/recompute_bound.hpp): no plan within the budget that runs
  // the ops in this plan's order recomputes less than overhead_lower_bound; none in any order less
  // than overhead_lower_bound_any_order. -1: not computed.
  double overhead_lower_bound = -1.0, overhead_lower_bound_any_order = -1.0;
  // Implementation choice (graphs whose ops list implementations; MONeT eq. 9):
  bool has_implementations = false;
  std::int64_t implementations_changed = 0;  // ops whose compute step is not on their fastest alternative (own or listed)
  double steps_cost = 0.0;                   // every op step (compute and recompute) at its chosen implementation's cost
  double steps_overhead = 0.0;               // steps_cost / compute_cost - 1 (vs each op once on its own implementation)
  std::string checkpointer;          // the checkpointer (empty: none)
  std::string cost_unit;             // what costs measure (graph meta.cost_unit; "units" when the graph has none)
  std::int64_t transfer_bytes = 0;
  // Timed plans (an offloader ran): seconds of the no-wait schedule, of the op steps alone (the
  // makespan without a memory limit), the offloader's lower bound; bytes on the host at most.
  bool timed = false;
  double makespan = 0.0, compute_time = 0.0, makespan_lower_bound = 0.0, offload_seconds = 0.0;
  std::int64_t host_peak = 0;
  std::string offloader;             // the offloader (empty: none)
  // Variants taken before planning (core/variants.hpp): how many of each name, the ops no longer needed;
  // given_peak is then the graph's own given order, before the variants.
  std::vector<std::pair<std::string, std::int64_t>> variants;
  std::int64_t ops_removed = 0;
  std::int64_t variant_given_peak = -1;  // the given order's peak with the variants (-1: none taken)
  bool verified = false;             // memplan::verify accepted the plan
  std::vector<std::string> notes;    // fallbacks, limits hit, in words
};

// Records the variants a plan's problem took (choose_variants): the report's given peak becomes the
// graph's own, before them, so `reduction` counts what they saved too.
inline void set_variants(report& r, const variant_rewrite& v) {
  if (v.taken.empty()) return;
  for (const auto& c : v.taken) {
    auto it = std::find_if(r.variants.begin(), r.variants.end(), [&](const auto& e) { return e.first == c.implementation; });
    if (it == r.variants.end()) r.variants.emplace_back(c.implementation, 1);
    else ++it->second;
  }
  r.ops_removed = static_cast<std::int64_t>(v.removed_ops.size());
  if (r.given_peak >= 0) {
    r.variant_given_peak = r.given_peak;
    r.given_peak = v.given_peak_before;
    r.reduction = r.given_peak > 0 ? static_cast<double>(r.given_peak - r.planned_peak) / static_cast<double>(r.given_peak) : 0.0;
  }
}

// The two bounds set_budget computed (remat/milp_bound.hpp's 0-1 bounds start from them).
struct budget_bounds {
  recompute_lower_bound in_order, any_order;
};

// Records the budget asked for and, for plans that meet it by recomputation alone, the overhead
// lower bounds at that budget (core/recompute_bound.hpp), which it returns.
inline std::optional<budget_bounds> set_budget(report& r, const problem& p, const memory_plan& mp, std::int64_t budget) {
  r.budget = budget;
  if (budget < 0) return std::nullopt;
  for (const auto& s : mp.steps)
    if (s.kind == step_kind::offload || s.kind == step_kind::prefetch) return std::nullopt;
  auto in_order = recompute_bound_in_order(p, mp.order(), budget);
  const auto any = recompute_bound_any_order(p, budget);
  // The any-order bound holds for this order too; with their searches cut short either can be higher.
  if (in_order.feasible && any.feasible) r.overhead_lower_bound = std::max(in_order.overhead, any.overhead);
  if (any.feasible) r.overhead_lower_bound_any_order = any.overhead;
  // A plan that recomputes without offloading needs at least the any-order memory floor (what no
  // rerun can rebuild stays while some op runs): the report certifies against it when it is above
  // the op-local bound plan() gave.
  if (mp.stats.lower_bound_by == "op-local" && any.memory_floor > r.lower_bound) {
    r.lower_bound = any.memory_floor;
    r.lower_bound_by = "recompute floor";
    r.gap = r.planned_peak > 0 ? static_cast<double>(r.planned_peak - r.lower_bound) / static_cast<double>(r.planned_peak) : 0.0;
  }
  return budget_bounds{std::move(in_order), any};
}

inline report make_report(const problem& p, const memory_plan& mp, double plan_seconds = 0.0, bool verified = false) {
  report r;
  const auto& st = mp.stats;
  r.graph = p.name();
  r.ops = p.num_ops();
  r.tensors = p.num_tensors();
  for (tensor_id t = 0; t < p.num_tensors(); ++t) r.total_bytes += p.bytes(t);
  r.resident_bytes = p.resident_bytes();
  r.given_peak = st.given_peak;
  r.planned_peak = st.peak;
  r.arena_bytes = mp.arena;
  r.fragmentation = mp.arena > 0 ? static_cast<double>(mp.arena - st.peak) / static_cast<double>(mp.arena) : 0.0;
  r.lower_bound = st.lower_bound;
  r.lower_bound_by = st.lower_bound_by;
  r.impl_lower_bound = st.impl_lower_bound;
  if (st.impl_lower_bound >= 0 && st.peak > 0)
    r.impl_gap = static_cast<double>(st.peak - st.impl_lower_bound) / static_cast<double>(st.peak);
  r.gap = st.peak > 0 ? static_cast<double>(st.peak - st.lower_bound) / static_cast<double>(st.peak) : 0.0;
  r.reduction = st.given_peak > 0 ? static_cast<double>(st.given_peak - st.peak) / static_cast<double>(st.given_peak) : 0.0;
  r.plan_seconds = plan_seconds;
  r.schedule_seconds = st.schedule_seconds;
  r.place_seconds = st.place_seconds;
  r.checkpoint_seconds = st.checkpoint_seconds;
  r.scheduler = st.scheduler;
  r.placer = st.placer;
  r.alignment = mp.alignment;
  r.steps = static_cast<std::int64_t>(mp.steps.size());
  // Graphs without costs: one unit per op (docs/format.md).
  bool costed = false;
  for (op_id o = 0; o < p.num_ops() && !costed; ++o) costed = p.cost(o) > 0;
  r.cost_unit = costed ? (p.cost_unit().empty() ? std::string("graph units") : p.cost_unit()) : std::string("ops");
  r.compute_cost = costed ? st.compute_cost : static_cast<double>(p.num_ops());
  for (const auto& s : mp.steps)
    if (s.kind == step_kind::recompute) {
      ++r.recomputed_ops;
      if (!costed) r.recompute_cost += 1.0;
    }
  if (costed) r.recompute_cost = st.recompute_cost;
  r.overhead = r.compute_cost > 0 ? r.recompute_cost / r.compute_cost : 0.0;
  r.has_implementations = has_implementations(p);
  if (r.has_implementations) {
    for (const auto& s : mp.steps)
      if (runs_op(s.kind)) r.steps_cost += costed ? step_cost(p, s) : 1.0;
    r.implementations_changed = implementations_changed(p, mp.steps);
    r.steps_overhead = r.compute_cost > 0 ? r.steps_cost / r.compute_cost - 1.0 : 0.0;
  }
  r.checkpointer = st.checkpointer;
  r.transfer_bytes = st.transfer_bytes;
  r.timed = mp.timed;
  r.makespan = st.makespan;
  r.compute_time = st.compute_time;
  r.makespan_lower_bound = st.makespan_lower_bound;
  r.host_peak = st.host_peak;
  r.offloader = st.offloader;
  r.offload_seconds = st.offload_seconds;
  r.verified = verified;
  r.notes = st.notes;
  return r;
}

// "746.23 MiB", "512 B", "1.50 GiB".
inline std::string human_bytes(std::int64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while ((v >= 1024.0 || v <= -1024.0) && u < 4) { v /= 1024.0; ++u; }
  char buf[64];
  if (u == 0) std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  else std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

inline std::string percent(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %%", 100.0 * x);
  return buf;
}

// The human report of `memplan plan`.
inline void print_report(std::ostream& os, const report& r) {
  auto bytes = [](std::int64_t b) { return human_bytes(b) + " (" + std::to_string(b) + " B)"; };
  // Each kind of stage that ran, in pipeline order (an offloader's seconds were left out until stop 54:
  // 9.5 of DenseNet-121's 11.4 s at --offloader default did not show).
  char secs[160];
  char part[48];
  std::string stages;
  auto stage_secs = [&](const char* what, double s) {
    std::snprintf(part, sizeof part, "%s%s %.3f s", stages.empty() ? "" : ", ", what, s);
    stages += part;
  };
  stage_secs("schedule", r.schedule_seconds);
  if (r.checkpoint_seconds > 0) stage_secs("checkpoint", r.checkpoint_seconds);
  if (r.offload_seconds > 0) stage_secs("offload", r.offload_seconds);
  stage_secs("place", r.place_seconds);
  std::snprintf(secs, sizeof secs, "%.3f s (%s)", r.plan_seconds, stages.c_str());
  os << "graph          " << r.graph << ": " << r.ops << " ops, " << r.tensors << " tensors, " << human_bytes(r.total_bytes)
     << " in all, " << human_bytes(r.resident_bytes) << " resident\n";
  if (r.given_peak >= 0) os << "given order    peak " << bytes(r.given_peak) << "\n";
  else os << "given order    peak not computed (the given order does not run)\n";
  if (!r.variants.empty()) {
    std::int64_t n = 0;
    std::string names;
    for (const auto& [name, k] : r.variants) {
      n += k;
      names += (names.empty() ? "" : ", ") + name + " " + std::to_string(k);
    }
    os << "variants       " << n << " ops on a variant (" << names << "), " << r.ops_removed << " ops no longer needed";
    if (r.variant_given_peak >= 0) os << "; given order with them: peak " << bytes(r.variant_given_peak);
    os << "\n";
  }
  os << "planned        peak " << bytes(r.planned_peak);
  if (r.given_peak > 0) os << ", " << percent(r.reduction) << " below the given order";
  os << "\n";
  os << "lower bound    " << bytes(r.lower_bound) << ", gap " << percent(r.gap);
  if (!r.lower_bound_by.empty()) os << " (" << r.lower_bound_by << " bound)";
  os << "\n";
  if (r.impl_lower_bound >= 0)
    os << "impl bound     " << bytes(r.impl_lower_bound) << ", gap " << percent(r.impl_gap)
       << " for the plan's implementations (the rest of the gap needs slower ones with less workspace)\n";
  os << "arena          " << bytes(r.arena_bytes) << ", fragmentation " << percent(r.fragmentation) << ", alignment "
     << r.alignment;
  if (r.capacity >= 0) os << ", capacity " << bytes(r.capacity);
  if (r.budget >= 0) os << ", budget " << bytes(r.budget);
  os << "\n";
  if (r.recomputed_ops > 0 || !r.checkpointer.empty()) {
    char b[160];
    std::snprintf(b, sizeof b, "%lld ops recomputed, cost %.6g of %.6g %s per step: %.2f %% overhead", static_cast<long long>(r.recomputed_ops),
                  r.recompute_cost, r.compute_cost, r.cost_unit.c_str(), 100.0 * r.overhead);
    os << "recompute      " << b << "\n";
  }
  if (r.overhead_lower_bound >= 0) {
    char b[200];
    std::snprintf(b, sizeof b, "no plan within the budget recomputes less than %.2f %% in this order, %.2f %% in any order",
                  100.0 * r.overhead_lower_bound, 100.0 * std::max(0.0, r.overhead_lower_bound_any_order));
    os << "overhead bound " << b << "\n";
  }
  if (r.has_implementations) {
    char b[200];
    std::snprintf(b, sizeof b, "%lld ops off their fastest implementation; all op steps cost %.6g %s: %+.2f %% vs each op once on its own",
                  static_cast<long long>(r.implementations_changed), r.steps_cost, r.cost_unit.c_str(), 100.0 * r.steps_overhead);
    os << "implementations " << b << "\n";
  }
  if (r.transfer_bytes > 0) os << "transfers      " << bytes(r.transfer_bytes) << ", host peak " << bytes(r.host_peak) << "\n";
  if (r.timed) {
    char b[200];
    std::snprintf(b, sizeof b, "%.6g s, compute alone %.6g s (+%.2f %%), lower bound %.6g s (ratio %.4f)", r.makespan, r.compute_time,
                  r.compute_time > 0 ? 100.0 * (r.makespan / r.compute_time - 1.0) : 0.0, r.makespan_lower_bound,
                  r.makespan_lower_bound > 0 ? r.makespan / r.makespan_lower_bound : 1.0);
    os << "makespan       " << b << "\n";
  }
  os << "time           " << secs << "\n";
  os << "policies       scheduler " << r.scheduler;
  if (!r.checkpointer.empty()) os << ", checkpointer " << r.checkpointer;
  if (!r.offloader.empty()) os << ", offloader " << r.offloader;
  os << ", placer " << r.placer << "\n";
  os << "verified       " << (r.verified ? "yes (memplan::verify accepted the plan)" : "no") << "\n";
  for (const auto& n : r.notes) os << "note           " << n << "\n";
}

}  // namespace memplan::io
