#pragma once
// remat::chain_dp -- the optimal checkpointing of a heterogeneous chain by dynamic programming (as in
// rotor, Beaumont, Eyraud-Dubois, Herrmann, Joly, Shilova 2019): each segment of the forward chain has
// its own forward cost and each cut its own size; under a byte budget for checkpoints (discretised
// into `slots` units), the DP (remat/chain.hpp, chain_dp_table) picks which cuts to keep during the
// forward pass and during each recomputation so that the total recompute cost is least. Applied to
// general graphs through their chain of articulation points (remat/segments.hpp); the budget is
// searched so that the real plan (every value, every workspace) meets the memory target at the least
// cost. Chains longer than `max_points` cuts use every k-th cut as a candidate.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <memplan/base/deadline.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/remat/chain.hpp>
#include <memplan/remat/chen.hpp>
#include <memplan/remat/detail.hpp>

namespace memplan::remat {

struct chain_dp {
  static constexpr stage_kind kind = stage_kind::checkpointer;
  std::int32_t slots = 64;       // budget units of the DP
  std::int32_t max_points = 64;  // candidate cuts at most
  bool evict = true;             // under a memory target, evict (DTR) what a plan still leaves above it
  [[nodiscard]] std::string name() const { return "chain_dp"; }

  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    // A target the incoming timeline already meets: recomputing anything would only cost.
    if (const auto target = detail::target_of(ctx); target != std::numeric_limits<std::int64_t>::max() && tl.peak <= target) {
      tl.stages.push_back({kind, name(), 0.0, "chain_dp: nothing recomputed: the timeline already meets the target"});
      return tl;
    }
    detail::chain_setup su(p, tl, false, 0.0);
    const auto m = static_cast<std::int32_t>(su.c.cuts.size());
    if (m == 0) {
      tl.stages.push_back({kind, name(), 0.0, "chain_dp: nothing recomputed: the forward pass has no articulation point to split at"});
      return tl;
    }
    std::int64_t cut_bytes = 0;
    for (const auto& k : su.c.cuts) cut_bytes += k.bytes;
    std::vector<detail::candidate> cs;
    const auto clock = deadline::after(ctx.time_limit_or(-1.0));  // none by default; the first budget always runs
    step_pacer pace(clock);  // a budget starts only while the time left covers the longest one so far
    // Budgets from nothing to every cut: the DP decides within each; the real plan decides among them.
    for (double f : {0.0, 1.0 / 64, 1.0 / 32, 1.0 / 16, 1.0 / 8, 3.0 / 16, 1.0 / 4, 3.0 / 8, 1.0 / 2, 3.0 / 4, 1.0}) {
      if (!pace.next()) break;
      const auto B = static_cast<std::int64_t>(f * static_cast<double>(cut_bytes));
      const auto unit = std::max<std::int64_t>(1, (B + slots - 1) / slots);
      std::vector<std::int32_t> units;
      for (const auto& k : su.c.cuts)
        units.push_back(static_cast<std::int32_t>(std::min<std::int64_t>(slots + 1, (k.bytes + unit - 1) / unit)));
      // The first budget (none: a one-column table) always completes; a later table that the clock
      // stops is dropped, and the sweep ends there.
      const auto table = detail::make_chain_table(ctx, su.c.segment_cost, std::move(units), B == 0 ? 0 : slots, max_points,
                                                  cs.empty() ? nullptr : &clock);
      if (!table->complete()) break;
      // The replay stops at the deadline too: the first budget (everything recomputed from the input)
      // replays O(cuts^2) steps, 1.8 s on ResNet-1001's 3,345 cuts, whatever the limit (it made
      // best_solver_free's 1 s search take 2.4 s there).
      auto c = detail::replay(su.e, detail::split_policy<detail::table_split>(p, su.c, su.e, detail::table_split{table}), detail::target_of(ctx),
                              "checkpoint budget " + std::to_string(B) + " bytes (model: " + std::to_string(table->cost()) + " recompute cost)", &clock);
      if (c.tl.steps.empty()) break;
      cs.push_back(std::move(c));
    }
    if (cs.empty()) {
      tl.stages.push_back({kind, name(), 0.0, "chain_dp: nothing recomputed: the time limit passed before a replay finished"});
      return tl;
    }
    detail::evict_if_needed(cs, su.e, detail::target_of(ctx), evict, 3, clock);
    const auto k = detail::choose(cs, detail::target_of(ctx));
    return detail::finish(tl, std::move(cs[k]), kind, name(), su.e, std::to_string(cs.size()) + " budgets tried");
  }
};

static_assert(timeline_stage<chain_dp>);

}  // namespace memplan::remat
