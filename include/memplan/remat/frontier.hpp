#pragma once
// remat::frontier -- the memory / recompute-overhead trade-off curve of a graph: verified plans at
// budgets from the no-recompute arena down to the smallest budget the pipeline can meet (found by
// bisection after the first budget it cannot), each point a memplan::plan with that budget, with
// the lower bounds on the overhead of any plan as small (core/recompute_bound.hpp). Only the points
// no other beats are kept (undominated): a budget's plan that recomputes more than a smaller one's,
// or repeats it, is left out.
//
//   auto pts = remat::frontier(p, schedule::default_scheduler{}, remat::default_checkpointer{},
//                              place::default_placer{}, {.points = 12});
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/base/progress.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/core/recompute_bound.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/remat/none.hpp>

namespace memplan::remat {

struct frontier_point {
  std::int64_t budget = -1;       // -1: the no-recompute plan
  std::int64_t arena = 0, peak = 0;
  double compute_cost = 0, recompute_cost = 0, overhead = 0;  // overhead = recompute / compute cost
  std::int64_t recomputed_ops = 0;
  // No plan with this point's arena or less recomputes less, in this point's order / in any order
  // (core/recompute_bound.hpp; -1: even recomputing everything does not reach it).
  double overhead_lower_bound = 0, overhead_lower_bound_any_order = 0;
  std::string checkpointer;
  double seconds = 0;
};

// The points no other point beats (in arena and overhead together; of equal points the first), as
// indices in their order. A heuristic is not monotone in the budget: a budget's plan can recompute
// more than one found for a smaller budget, which meets the larger budget too.
inline std::vector<std::size_t> undominated(const std::vector<frontier_point>& pts) {
  std::vector<std::size_t> keep;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    bool beaten = false;
    for (std::size_t j = 0; j < pts.size() && !beaten; ++j) {
      const auto &a = pts[j], &b = pts[i];
      beaten = j != i && a.arena <= b.arena && a.overhead <= b.overhead && (a.arena < b.arena || a.overhead < b.overhead || j < i);
    }
    if (!beaten) keep.push_back(i);
  }
  return keep;
}

struct frontier_options {
  std::int32_t points = 12;     // budgets between the no-recompute arena and the op-local bound
  std::int32_t bisections = 6;  // refining the smallest feasible budget
};

template <stage Scheduler, stage Checkpointer, stage Placer>
std::vector<frontier_point> frontier(const problem& p, const Scheduler& sched, const Checkpointer& ckpt, const Placer& placer,
                                     const frontier_options& fo = {}, plan_context ctx = {}) {
  if (fo.points < 2) throw error(errc::invalid_argument, "remat::frontier: at least 2 points");
  ctx.cache = ctx.cache_for(p);
  if (!ctx.memo) ctx.memo = std::make_shared<stage_memo>();  // the budgets' plans share their chain tables
  const auto progress = ctx.progress;
  const auto t_start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count(); };
  bool any_cost = false;
  for (op_id o = 0; o < p.num_ops() && !any_cost; ++o) any_cost = p.cost(o) > 0;
  auto point_of = [&](const memory_plan& mp, std::int64_t budget, double secs) {
    frontier_point f;
    f.budget = budget;
    f.arena = mp.arena;
    f.peak = mp.peak;
    f.compute_cost = any_cost ? mp.stats.compute_cost : static_cast<double>(p.num_ops());
    for (const auto& s : mp.steps)
      if (s.kind == step_kind::recompute) ++f.recomputed_ops;
    f.recompute_cost = any_cost ? mp.stats.recompute_cost : static_cast<double>(f.recomputed_ops);
    f.overhead = f.compute_cost > 0 ? f.recompute_cost / f.compute_cost : 0.0;
    f.checkpointer = mp.stats.checkpointer;
    const auto in_order = recompute_bound_in_order(p, mp.order(), mp.arena);
    const auto any = recompute_bound_any_order(p, mp.arena);
    // The any-order bound holds for this order too; with their searches cut short either can be higher.
    f.overhead_lower_bound = in_order.feasible && any.feasible ? std::max(in_order.overhead, any.overhead) : -1.0;
    f.overhead_lower_bound_any_order = any.feasible ? any.overhead : -1.0;
    f.seconds = secs;
    return f;
  };
  auto timed_plan = [&](std::int64_t budget) {
    plan_context c = ctx;
    c.budget = budget;
    const auto t0 = std::chrono::steady_clock::now();
    auto mp = plan(p, sched | ckpt | placer, c);
    return point_of(mp, budget, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  };
  std::vector<frontier_point> out;
  {
    const auto t0 = std::chrono::steady_clock::now();
    auto mp = plan(p, sched | none{} | placer, ctx);
    out.push_back(point_of(mp, -1, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
  }
  const double top = static_cast<double>(out.front().arena);
  const double floor = static_cast<double>(std::max<std::int64_t>(1, ctx.cache->op_local()));
  report(progress, "frontier", "no-recompute plan", elapsed(), out.front().arena, static_cast<std::int64_t>(floor));
  std::int64_t last_ok = out.front().arena, first_bad = -1;
  for (std::int32_t k = 1; k < fo.points; ++k) {
    const auto b = static_cast<std::int64_t>(top * std::pow(floor / top, static_cast<double>(k) / (fo.points - 1)));
    if (b >= last_ok) continue;
    try {
      out.push_back(timed_plan(b));
      last_ok = b;
      report(progress, "frontier", "budget met", elapsed(), out.back().arena, static_cast<std::int64_t>(floor));
    } catch (const error& e) {
      if (e.code() != errc::infeasible) throw;
      first_bad = b;
      break;
    }
  }
  // The smallest budget met: bisection between the last met and the first missed.
  for (std::int32_t i = 0; first_bad >= 0 && i < fo.bisections && last_ok - first_bad > 1; ++i) {
    const auto mid = first_bad + (last_ok - first_bad) / 2;
    try {
      out.push_back(timed_plan(mid));
      last_ok = mid;
    } catch (const error& e) {
      if (e.code() != errc::infeasible) throw;
      first_bad = mid;
    }
    report(progress, "frontier", "bisecting the smallest budget", elapsed(), last_ok, static_cast<std::int64_t>(floor));
  }
  // The curve: the points no other beats, the no-recompute plan always first, then by arena, largest
  // first (so overhead rises along it).
  auto keep = undominated(out);
  if (keep.empty() || keep.front() != 0) keep.insert(keep.begin(), 0);
  std::stable_sort(keep.begin() + 1, keep.end(), [&](std::size_t a, std::size_t b) { return out[a].arena > out[b].arena; });
  std::vector<frontier_point> curve;
  for (auto i : keep) curve.push_back(std::move(out[i]));
  return curve;
}

}  // namespace memplan::remat
