#pragma once
// offload::default_offloader -- what `memplan plan --offloader default` runs: the least makespan of
// GREEDY (Thm. 2), DYNPROG (Alg. 1), VDNN and the local search from GREEDY (refined) at the target; the plain best_of
// rule for offloaders (core/best_of.hpp: meet the target first, then the least makespan).
#include <string>

#include <memplan/core/best_of.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/offload/dynprog.hpp>
#include <memplan/offload/policies.hpp>

namespace memplan::offload {

struct default_offloader {
  static constexpr stage_kind kind = stage_kind::offloader;
  [[nodiscard]] std::string name() const { return "default"; }
  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    auto out = best_of{greedy{}, dynprog{}, vdnn{}, refined{}}.run(p, std::move(tl), ctx);
    if (!out.stages.empty()) out.stages.back().name = "default(" + out.stages.back().name + ")";
    return out;
  }
};

static_assert(timeline_stage<default_offloader>);

}  // namespace memplan::offload
