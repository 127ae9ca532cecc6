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
// and reports the fraction it chose in its note. Its makespan lower bound is the incoming timeline's
// compute time (recomputation only adds to it; Prop. 3 holds for offloading alone).
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/offload/model.hpp>
#include <memplan/offload/policies.hpp>
#include <memplan/remat/default_checkpointer.hpp>

namespace memplan::offload {

template <class Checkpointer = remat::default_checkpointer, class Offloader = refined>
struct combined {
  static constexpr stage_kind kind = stage_kind::offloader;
  Checkpointer checkpointer{};
  Offloader offloader{};
  std::int32_t steps = 8;  // the grid: T = budget + j/steps (peak - budget), j = 0..steps
  [[nodiscard]] std::string name() const { return "combined"; }

  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    const auto t0 = std::chrono::steady_clock::now();
    const auto target = ctx.peak_target();
    if (target == std::numeric_limits<std::int64_t>::max() || tl.peak <= target || steps < 1) return offloader.run(p, std::move(tl), ctx);
    std::optional<timeline> best;
    std::string tried;
    double best_frac = 0.0;
    for (std::int32_t j = steps; j >= 0; --j) {
      const double frac = static_cast<double>(j) / static_cast<double>(steps);
      const auto mid = target + static_cast<std::int64_t>(frac * static_cast<double>(tl.peak - target));
      plan_context c = ctx;
      c.memory_target = mid;
      timeline out;
      try {
        auto r = j == steps ? tl : checkpointer.run(p, tl, c);
        c.memory_target = target;
        out = offloader.run(p, std::move(r), c);
        out.stages.pop_back();  // this stage's record replaces the inner offloader's
      } catch (const error& e) {
        if (e.code() != errc::infeasible) throw;
        continue;
      }
      tried += (tried.empty() ? "" : ", ") + std::to_string(frac).substr(0, 5) + ":" + (out.peak <= target ? std::to_string(out.makespan) : "over");
      const bool meets = out.peak <= target;
      const bool best_meets = best && best->peak <= target;
      if (!best || (meets && !best_meets) || (meets == best_meets && (meets ? out.makespan < best->makespan : out.peak < best->peak))) {
        best = std::move(out);
        best_frac = frac;
      }
    }
    if (!best) throw error(errc::infeasible, "offload::combined: no split between recomputation and offloading ran");
    auto out = std::move(*best);
    // With recomputation allowed, Prop. 3 on one timeline bounds nothing; the incoming compute time does.
    out.makespan_lower_bound = std::min(out.makespan, make_model(p, tl, ctx.timing).compute_time);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.stages.push_back({kind, name(), secs,
                          "combined: offloads from " + std::to_string(best_frac).substr(0, 5) +
                              " of the way between budget and peak, recomputes below (fraction:makespan " + tried + ")"});
    return out;
  }
};

static_assert(timeline_stage<combined<>>);

}  // namespace memplan::offload
