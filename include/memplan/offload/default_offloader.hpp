#pragma once
// offload::default_offloader -- what `memplan plan --offloader default` runs: the least makespan of
// GREEDY (Thm. 2), VDNN, the local search from GREEDY (refined) and, where the timeline is the
// paper's chain, DYNPROG (Alg. 1) at the target; the plain best_of rule for offloaders
// (core/best_of.hpp: meet the target first, then the least makespan).
//
// DYNPROG runs only on chains (offload::chain_order_breaks == 0): its backward phase assumes the
// values are read back in reverse production order. On the training exports they are not (30-52 % of
// adjacent pairs), and there it never gave the least makespan alone (84 instances at stop 55; 36 at
// stop 56, tied on 9 where every member chose alike) while it took the most time of the four (up to
// 1.24 s a run at batch 32, the other three 0.26 s; docs/offload.md). On the chains of test_offload it
// gives the optimum where no other member does (2 of 48 instances).
#include <algorithm>
#include <cstdint>
#include <string>

#include <memplan/core/best_of.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/offload/dynprog.hpp>
#include <memplan/offload/model.hpp>
#include <memplan/offload/policies.hpp>

namespace memplan::offload {

struct default_offloader {
  static constexpr stage_kind kind = stage_kind::offloader;
  [[nodiscard]] std::string name() const { return "default"; }
  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    std::int64_t breaks = 0, pairs = 0;
    if (tl.peak > ctx.peak_target()) {
      const auto m = make_model(p, tl, ctx.timing);
      breaks = chain_order_breaks(m);
      pairs = std::max<std::int64_t>(0, static_cast<std::int64_t>(m.candidates.size()) - 1);
    }
    auto out = breaks == 0 ? best_of{greedy{}, dynprog{}, vdnn{}, refined{}}.run(p, std::move(tl), ctx)
                           : best_of{greedy{}, vdnn{}, refined{}}.run(p, std::move(tl), ctx);
    if (!out.stages.empty()) {
      auto& r = out.stages.back();
      r.name = "default(" + r.name + ")";
      if (breaks > 0)
        r.note += "; dynprog not run: not a chain (" + std::to_string(breaks) + " of " + std::to_string(pairs) +
                  " adjacent values read back in production order)";
    }
    return out;
  }
};

static_assert(timeline_stage<default_offloader>);

}  // namespace memplan::offload
