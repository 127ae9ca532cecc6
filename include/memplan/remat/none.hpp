#pragma once
// remat::none -- recompute nothing: the timeline as the scheduler made it. What a pipeline without a
// checkpointer does; named so that the CLI and best_of can choose it.
#include <string>

#include <memplan/core/context.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/timeline.hpp>

namespace memplan::remat {

struct none {
  static constexpr stage_kind kind = stage_kind::checkpointer;
  [[nodiscard]] std::string name() const { return "none"; }
  [[nodiscard]] timeline run(const problem&, timeline tl, const plan_context&) const { return tl; }
};

static_assert(timeline_stage<none>);

}  // namespace memplan::remat
