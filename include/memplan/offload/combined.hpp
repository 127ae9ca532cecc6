#pragma once
// offload::combined -- keep, offload or recompute each activation under a memory budget, for the
// least makespan (beyond Beaumont et al., whose §7 leaves it open; in the spirit of POFO).
//
// A heuristic over the split of the work between the two mechanisms: for a grid of intermediate
// targets T between the budget and the incoming peak, a checkpointer brings the peak down to T
// (recompute steps cost their op's time on the compute engine), then an offloader brings it from T to
// the budget (copies overlap with compute). T = the budget is recompute-only, T = the peak is
// offload-only; the least makespan among the results that meet the budget wins, so the result is never
// slower than either alone (in the model, before placement). Offloading only moves values that are
// materialized once; recomputed ones stay with the checkpointer.
//
// It runs at the offloader's position of a pipeline (scheduler -> [checkpointer] -> combined -> placer)
// and reports the fraction it chose in its note. The whole search runs within one time limit
// (time_limit_s, 4 s by default; plan_context::time_limit_s overrides), both ends of the grid first. Its makespan lower bound is the incoming timeline's
// compute time (recomputation only adds to it; Prop. 3 holds for offloading alone).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <memplan/base/deadline.hpp>
#include <memplan/base/error.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/implementations.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/offload/model.hpp>
#include <memplan/offload/policies.hpp>
#include <memplan/remat/default_checkpointer.hpp>

namespace memplan::offload {

namespace detail {
// The grid's points 0..steps in the order combined tries them: both ends first (offload-only, then
// recompute-only: what the "never slower than either alone" claim rests on), then midpoints,
// coarse to fine, so that a search cut short by its deadline has still covered the range.
inline std::vector<std::int32_t> split_order(std::int32_t steps) {
  std::vector<std::int32_t> order{steps};
  if (steps == 0) return order;
  order.push_back(0);
  std::vector<std::pair<std::int32_t, std::int32_t>> level{{0, steps}}, next;
  while (!level.empty()) {
    next.clear();
    for (auto [lo, hi] : level) {
      if (hi - lo < 2) continue;
      const auto mid = lo + (hi - lo) / 2;
      order.push_back(mid);
      next.push_back({lo, mid});
      next.push_back({mid, hi});
    }
    level.swap(next);
  }
  return order;
}
// Seconds of one step with every op computed once on its fastest implementation: no plan, whatever it
// recomputes, offloads or chooses, computes in less.
inline double fastest_compute_seconds(const problem& p, const device_timing& t) {
  double cost = 0.0;
  for (op_id o = 0; o < p.num_ops(); ++o) cost += fastest_cost(p, o);
  return cost * seconds_per_cost(p, t);
}

}  // namespace detail

template <class Checkpointer = remat::default_checkpointer, class Offloader = refined>
struct combined {
  static constexpr stage_kind kind = stage_kind::offloader;
  Checkpointer checkpointer{};
  Offloader offloader{};
  std::int32_t steps = 8;     // the grid: T = budget + j/steps (peak - budget), j = 0..steps
  double time_limit_s = 4.0;  // the whole search (plan_context::time_limit_s overrides; none when deterministic)
  [[nodiscard]] std::string name() const { return "combined"; }

  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    tl.alternatives.clear();  // the scheduler's other orders are not tried: its splits are over this order
    const auto t0 = std::chrono::steady_clock::now();
    const auto target = ctx.peak_target();
    if (target == std::numeric_limits<std::int64_t>::max() || tl.peak <= target || steps < 1) return offloader.run(p, std::move(tl), ctx);
    // Each split runs a checkpointer and an offloader, each a search with its own time limit: the
    // splits share this stage's one deadline, each within an even share of what is left, and a split
    // starts only while the time left covers the quickest one so far (issue 12: wall <= limit + 10 %).
    const auto clock = deadline::after(ctx.time_limit_or(time_limit_s));
    const auto order = detail::split_order(steps);
    std::optional<timeline> best;
    std::int32_t best_j = -1;
    std::vector<std::pair<std::int32_t, std::string>> tried;
    double quickest = 1e18;
    // The most a split ran past the limit it was given (a member's work between two reads of its
    // clock: a split given a few ms takes at least that): each later split's limit is kept back by
    // it, so that the last one, given all that is left, ends in time (ResNet-18 b32 under 0.25 s:
    // 0.279 s before, all 9 splits run).
    double most_over = 0.0;
    const bool shared = !ctx.deterministic && clock.limited();  // the splits share the clock's time
    std::size_t run = 0;
    for (; run < order.size(); ++run) {
      if (run >= 2 && (clock.expired() || clock.seconds_left() < quickest)) break;
      const auto j = order[run];
      const double frac = static_cast<double>(j) / static_cast<double>(steps);
      const auto mid = target + static_cast<std::int64_t>(frac * static_cast<double>(tl.peak - target));
      plan_context c = ctx;
      c.runners_up = nullptr;  // the split's checkpointer plans only part of the reduction
      c.offload_to_beat = -1.0;  // (a split that loses is compared below, not refused)
      // The split's share of the time is for both its searches: where both have work (0 < j <
      // steps), the checkpointer gets half and the offloader what it left. Each got the whole share
      // before, so a split whose checkpointer used it took twice it (DenseNet-121 b32 under 0.25 s:
      // the last split 0.054 s of a 0.025 s share, the stage 0.275 s).
      const double share = shared ? std::max(0.0, std::min(clock.seconds_left(), 1e9) / static_cast<double>(order.size() - run) - most_over) : -1.0;
      const auto split_clock = deadline::after(share);
      if (shared) c.time_limit_s = j > 0 && j < steps ? share / 2 : share;
      c.memory_target = mid;
      const double started = clock.elapsed();
      timeline out;
      try {
        auto r = j == steps ? tl : checkpointer.run(p, tl, c);
        c.memory_target = target;
        if (shared) c.time_limit_s = std::max(0.0, split_clock.seconds_left());
        out = offloader.run(p, std::move(r), c);
        out.stages.pop_back();  // this stage's record replaces the inner offloader's
      } catch (const error& e) {
        if (e.code() != errc::infeasible) throw;
        continue;
      }
      quickest = std::min(quickest, clock.elapsed() - started);
      if (shared) most_over = std::max(most_over, clock.elapsed() - started - share);
      tried.emplace_back(j, std::to_string(frac).substr(0, 5) + ":" + (out.peak <= target ? std::to_string(out.makespan) : "over"));
      // The least makespan among splits that meet the target (else the least peak); a tie goes to
      // the larger fraction (more offloading, less recomputation).
      const bool meets = out.peak <= target;
      const bool best_meets = best && best->peak <= target;
      const bool better = !best || (meets && !best_meets) ||
                          (meets == best_meets && (meets ? out.makespan < best->makespan || (out.makespan == best->makespan && j > best_j)
                                                         : out.peak < best->peak || (out.peak == best->peak && j > best_j)));
      if (better) {
        best = std::move(out);
        best_j = j;
      }
    }
    if (!best) throw error(errc::infeasible, "offload::combined: no split between recomputation and offloading ran");
    auto out = std::move(*best);
    // With recomputation allowed, Prop. 3 on one timeline bounds nothing; every op computed once does,
    // each on its fastest implementation: the checkpointer may move ops to faster ones than the incoming
    // timeline runs (remat::best_solver_free, then monet_greedy's choice), so the incoming compute time
    // is no bound (ResNet-18 b32 at 375 MB: 0.0266 s against a plan computing in 0.0223 s).
    out.makespan_lower_bound = std::min(out.makespan, detail::fastest_compute_seconds(p, ctx.timing));
    std::sort(tried.begin(), tried.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::string list;
    for (const auto& [j, t] : tried) list += (list.empty() ? "" : ", ") + t;
    if (run < order.size())
      list += "; " + std::to_string(order.size() - run) + " of " + std::to_string(order.size()) + " splits left untried at the time limit";
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.stages.push_back({kind, name(), secs,
                          "combined: offloads from " + std::to_string(static_cast<double>(best_j) / static_cast<double>(steps)).substr(0, 5) +
                              " of the way between budget and peak, recomputes below (fraction:makespan " + list + ")"});
    return out;
  }
};

static_assert(timeline_stage<combined<>>);

}  // namespace memplan::offload
