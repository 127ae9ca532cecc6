#pragma once
// remat::greedy -- a solver-free checkpointer for arbitrary DAGs: replays the order and, whenever an
// op (or a recompute) would push the live bytes above the target, frees the live value that is
// cheapest to bring back per byte-step it frees -- recompute cost / (bytes x steps to its next use),
// DTR's eviction score (Kirisame et al. 2021) with the exact next use, since the order is fixed --
// and recomputes values just in time (recursively, from whatever is still on the device).
// Without a memory target it returns the timeline unchanged. O(steps · live) at worst; fast on 100k ops.
#include <string>

#include <memplan/core/context.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/remat/detail.hpp>
#include <memplan/remat/engine.hpp>

namespace memplan::remat {

struct greedy {
  static constexpr stage_kind kind = stage_kind::checkpointer;
  [[nodiscard]] std::string name() const { return "greedy"; }

  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    const auto target = detail::target_of(ctx);
    if (tl.peak <= target) {
      tl.stages.push_back({kind, name(), 0.0, "greedy: the peak already meets the target, nothing recomputed"});
      return tl;
    }
    ::memplan::remat::detail::engine e(p, tl);
    keep_all pol;
    engine_stats st;
    auto out = detail::carry(tl, e.run(pol, target, /*evict=*/true, &st));
    std::string note = "greedy: " + std::to_string(st.recomputed_ops) + " recomputes, " + std::to_string(st.evictions) +
                       " evictions, " + detail::overhead_text(e, out);
    if (st.target_missed) note += "; some op needs more than the target on its own";
    out.stages.push_back({kind, name(), 0.0, note});
    return out;
  }
};

static_assert(timeline_stage<greedy>);

}  // namespace memplan::remat
