#pragma once
// remat::default_checkpointer -- what `memplan plan --budget B` runs when no checkpointer is named.
// remat::best_solver_free (the best plan of the solver-free checkpointers within the time limit,
// least recompute cost, each op on the implementation the timeline gives it; then, under
// implementation_choice::no_slower, faster implementations where they fit under the plan's peak). With
// choose_implementations = true, on a graph whose ops list implementation alternatives (MONeT's
// algorithms): remat::monet_greedy over best_solver_free, which chooses every op's implementation
// together with the recomputation (least total step cost) -- about a dozen best_solver_free runs, so
// opt-in (`memplan plan --checkpointer monet_greedy` on the command line).
#include <algorithm>
#include <sstream>
#include <string>

#include <memplan/core/context.hpp>
#include <memplan/core/implementations.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/remat/best_solver_free.hpp>
#include <memplan/remat/monet_greedy.hpp>

namespace memplan::remat {

struct default_checkpointer {
  static constexpr stage_kind kind = stage_kind::checkpointer;
  double time_limit_s = 1.0;                // the search over fixed implementations
  double implementations_time_limit_s = 2.0;  // the joint search on graphs with implementation alternatives
  bool choose_implementations = false;      // true: monet_greedy over best_solver_free on graphs with alternatives
  [[nodiscard]] std::string name() const { return "default"; }

  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    if (!choose_implementations || !has_implementations(p)) {
      const auto from = ctx.runners_up ? ctx.runners_up->size() : 0;
      auto out = best_solver_free{.time_limit_s = time_limit_s}.run_as(p, std::move(tl), ctx, name());
      // With the recomputation fixed, ops move to faster implementations (none slower than their own)
      // where their workspace fits under the plan's peak (and the target): the step after
      // implementation_choice::no_slower's, which leaves the room to the checkpointer above the target.
      // The runners-up too: each is what this stage would have returned in the winner's place.
      auto upgrade = [&](timeline& t) {
        if (ctx.implementations != implementation_choice::no_slower || !has_implementations(p) || t.stages.empty()) return;
        const auto before = total_step_cost(p, t);
        if (const auto moved = upgrade_no_slower(p, t, std::min(t.peak, ctx.peak_target())); moved > 0) {
          std::ostringstream os;
          os << "; then " << moved << " ops on a faster implementation that fits under the peak (op steps cost " << before << " -> "
             << total_step_cost(p, t) << ")";
          t.stages.back().note += os.str();
        }
      };
      upgrade(out);
      if (ctx.runners_up)
        for (auto i = from; i < ctx.runners_up->size(); ++i) upgrade((*ctx.runners_up)[i]);
      return out;
    }
    const auto records = tl.stages.size();
    auto out = monet_greedy{.inner = best_solver_free{.time_limit_s = time_limit_s, .anneal = false}, .time_limit_s = implementations_time_limit_s}.run(p, std::move(tl), ctx);
    if (out.stages.size() > records) {
      auto& r = out.stages.back();
      r.name = name() + "(" + r.name + ")";
      r.note = name() + ": implementations chosen with the recomputation; " + r.note;
    }
    return out;
  }
};

static_assert(timeline_stage<default_checkpointer>);

}  // namespace memplan::remat
