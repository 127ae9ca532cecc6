#pragma once
// remat::revolve -- binomial checkpointing (Griewank & Walther, "Algorithm 799: revolve"), provably
// optimal on homogeneous chains: with c snapshots, every advance from a snapshot is the one that
// minimises the number of recomputed steps. Applied to the forward chain of a training step
// (remat/segments.hpp), one step per segment. snapshots < 0: under a memory target, the most snapshots
// whose plan meets it (bisection: more snapshots, less recomputation); without one, ceil(log2 n).
#include <algorithm>
#include <cmath>
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

struct revolve {
  static constexpr stage_kind kind = stage_kind::checkpointer;
  std::int32_t snapshots = -1;     // checkpoints besides the chain's input; < 0: chosen for the target
  std::int32_t max_snapshots = 64;  // the search's upper end
  std::int32_t max_points = 128;    // longer chains: every k-th cut is a candidate
  bool evict = true;                // under a memory target, evict (DTR) what still exceeds it
  [[nodiscard]] std::string name() const { return "revolve"; }

  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    detail::chain_setup su(p, tl, false, 0.0);
    const auto m = static_cast<std::int32_t>(su.c.cuts.size());
    if (m == 0) {
      tl.stages.push_back({kind, name(), 0.0, "revolve: nothing recomputed: the forward pass has no articulation point to split at"});
      return tl;
    }
    const auto target = detail::target_of(ctx);
    if (snapshots < 0 && target != std::numeric_limits<std::int64_t>::max() && tl.peak <= target) {
      tl.stages.push_back({kind, name(), 0.0, "revolve: nothing recomputed: the timeline already meets the target"});
      return tl;
    }
    // The context's time limit bounds the search over snapshot counts and the first replay (none by
    // default).
    const auto clock = deadline::after(ctx.time_limit_or(-1.0));
    std::vector<detail::candidate> cs;
    // Unit cost per segment, one unit per snapshot: the homogeneous chain of revolve.
    const auto table_for = [&](std::int32_t c, const deadline* until) {
      return detail::make_chain_table(ctx, std::vector<double>(su.c.segment_cost.size(), 1.0), std::vector<std::int32_t>(su.c.cuts.size(), 1),
                                      c, max_points, until);
    };
    auto attempt = [&](const std::shared_ptr<const detail::chain_table>& table, std::int32_t c, const deadline* until = nullptr) {
      cs.push_back(detail::replay(su.e, detail::split_policy<detail::table_split>(p, su.c, su.e, detail::table_split{table, c}), detail::target_of(ctx),
                                  std::to_string(c) + " snapshots over " + std::to_string(m + 1) + " segments (model: " +
                                      std::to_string(static_cast<long long>(table->cost(c))) + " segment recomputations)",
                                  until));
      return cs.back().tl.peak;
    };
    std::string how;
    if (snapshots >= 0) {
      attempt(table_for(snapshots, nullptr), snapshots);
    } else if (target == std::numeric_limits<std::int64_t>::max()) {
      // No target: the O(log n) regime of binomial checkpointing.
      const auto c = static_cast<std::int32_t>(std::ceil(std::log2(static_cast<double>(m + 1))));
      attempt(table_for(c, nullptr), c);
    } else {
      // More snapshots: less recomputation, more memory. The most snapshots whose plan meets the target,
      // by bisection over one table built for the most (each step is then one replay of the engine).
      // With a time limit, no snapshots first (a table of one column), then the full table if
      // it completes in time, then the steps while the pacer sees time for one more replay.
      // The first replay, with no snapshots, recomputes the forward from the input for every segment
      // (quadratic in the chain's length, as chain_dp's first budget), so the clock stops it too;
      // stopped, revolve returns the timeline unchanged. (The 60-74 ms revolve took under a few-ms
      // limit on ResNet-101 b32 was the table's allocation, chain.hpp; this replay took 6 ms there.)
      std::int32_t lo = 0, hi = std::min(max_snapshots, m);
      const auto first_peak = attempt(table_for(0, nullptr), 0, clock.limited() ? &clock : nullptr);
      if (cs.back().tl.steps.empty()) {
        tl.stages.push_back({kind, name(), 0.0, "revolve: nothing recomputed: the time limit ran out during its first replay (no snapshots)"});
        return tl;
      }
      if (first_peak <= target && hi > 0) {
        const auto table = table_for(hi, &clock);
        if (!table->complete()) {
          how = "; the time limit ran out while building the table for " + std::to_string(hi) + " snapshots";
        } else {
          step_pacer pace(clock);
          while (lo < hi && pace.next()) {
            const auto mid = lo + (hi - lo + 1) / 2;
            if (attempt(table, mid) <= target) lo = mid;
            else hi = mid - 1;
          }
        }
      }
    }
    detail::evict_if_needed(cs, su.e, detail::target_of(ctx), evict, 3, clock);
    const auto k = detail::choose(cs, detail::target_of(ctx));
    return detail::finish(tl, std::move(cs[k]), kind, name(), su.e, std::to_string(cs.size()) + " snapshot counts tried" + how);
  }
};

static_assert(timeline_stage<revolve>);

}  // namespace memplan::remat
