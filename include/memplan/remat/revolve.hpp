#pragma once
// remat::revolve -- binomial checkpointing (Griewank & Walther, "Algorithm 799: revolve"), provably
// optimal on homogeneous chains: with c snapshots, every advance from a snapshot is the one that
// minimises the number of recomputed steps. Applied to the forward chain of a training step
// (remat/segments.hpp), one step per segment. snapshots < 0: the fewest recomputations that meet the
// memory target (every c is tried); without a target, the fewest snapshots that keep the peak lowest.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

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
  [[nodiscard]] std::string name() const { return "revolve"; }

  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    detail::chain_setup su(p, tl, false, 0.0);
    const auto m = static_cast<std::int32_t>(su.c.cuts.size());
    if (m == 0) {
      tl.stages.push_back({kind, name(), 0.0, "revolve: nothing recomputed: the forward pass has no articulation point to split at"});
      return tl;
    }
    const auto cmax = snapshots >= 0 ? snapshots : std::min(max_snapshots, m);
    const auto table = std::make_shared<const detail::revolve_table>(m + 1, cmax);
    std::vector<detail::candidate> cs;
    for (std::int32_t c = snapshots >= 0 ? snapshots : 0; c <= cmax; ++c) {
      detail::split_policy<detail::revolve_split> pol(p, su.c, su.e, detail::revolve_split{m, c, table});
      detail::candidate cand{su.e.run(pol, std::numeric_limits<std::int64_t>::max(), false), 0.0, {}};
      cand.cost = detail::recompute_cost(su.e, cand.tl);
      cand.what = std::to_string(c) + " snapshots over " + std::to_string(m + 1) + " segments (binomial model: " +
                  std::to_string(table->top_cost(m + 1, c)) + " segment recomputations)";
      cs.push_back(std::move(cand));
    }
    const auto k = detail::choose(cs, detail::target_of(ctx));
    return detail::finish(tl, std::move(cs[k]), kind, name(), su.e, std::to_string(cs.size()) + " snapshot counts tried");
  }
};

static_assert(timeline_stage<revolve>);

}  // namespace memplan::remat
