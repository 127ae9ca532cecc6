#pragma once
// remat::monet_greedy -- a solver-free joint choice of operator implementations and recomputation
// (the heuristic counterpart of remat::monet_ilp, MONeT §4 without the solver).
//
// Each op may run its own (cost, workspace) or one of problem::implementations(op) (MONeT's
// convolution algorithms, in-place and output-activated variants). Only the Pareto front of (cost,
// workspace) matters: an alternative that is slower and needs more workspace than another is never
// chosen. The heuristic, for a memory target T (ctx.peak_target()):
//   1. for each workspace cap c in {infinity, then up to `caps` of the workspaces that occur, largest
//      first, then 0}: every op takes its fastest alternative with workspace <= c (its least-workspace
//      one when none is that small);
//   2. the inner checkpointer (default: remat::best_solver_free) recomputes over that choice to
//      meet T -- the engine runs every recompute with the op's chosen implementation;
//   3. upgrade: with the recomputation fixed, each op takes its fastest alternative whose workspace
//      fits the memory left at every tick it runs (T minus the live bytes without its workspace), the
//      least-workspace one when the plan does not fit anyway. This never raises the peak above T:
//      a workspace lives only while its own step runs;
//   4. the choices of the best plan so far feed step 2 again (`rounds` times) while it improves;
//   5. when no plan meets T yet: recomputation on demand (checkmate_ilp's low-memory staged plan) over
//      the least-workspace choice, then step 3.
// The plan returned is the one that meets T at the least total compute cost (every op step's cost:
// MONeT eq. 9's objective), the one of least peak when none meets it. Without a target every op runs
// its fastest implementation and nothing is recomputed. one_impl_per_op (default) keeps one
// implementation per op for its computation and recomputations, so that eager execution with the same
// choices reproduces the plan bit for bit (ad::implementation_choices); false lets each recompute step
// choose on its own (MONeT's delta^k).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <memplan/base/deadline.hpp>
#include <memplan/base/error.hpp>
#include <memplan/core/any_stage.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/implementations.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/remat/checkmate_ilp.hpp>
#include <memplan/remat/best_solver_free.hpp>
#include <memplan/remat/detail.hpp>

namespace memplan::remat {

// The front, counts and helpers moved to core/implementations.hpp (the pipeline's own choice uses them).
using memplan::has_implementations;
using memplan::impl_alternative;
using memplan::implementation_front;
using memplan::implementations_changed;
using memplan::total_step_cost;
namespace detail {
using memplan::detail::set_impls;
using memplan::detail::upgrade_impls;
}  // namespace detail

struct monet_greedy {
  static constexpr stage_kind kind = stage_kind::checkpointer;

  // Recomputes over a fixed choice of implementations. Without best_solver_free's annealing: each of
  // the dozen inner runs has a small share of the time, and an annealed plan sits closer to the target,
  // which a placer may then overshoot -- in examples/choose_implementations.cpp greedy_by_size did at
  // 0.5x, and plan()'s re-targeting ended 12 % costlier (1.345x against 1.196x of the ideal step).
  any_checkpointer inner = best_solver_free{.anneal = false};
  bool one_impl_per_op = true;                      // computation and recomputations of an op run one implementation
  std::int32_t caps = 6;                            // workspace caps tried in step 1 besides infinity and 0
  std::int32_t rounds = 2;                          // step 4
  double time_limit_s = 10.0;                       // for the whole search (at least one candidate runs)

  [[nodiscard]] std::string name() const { return "monet_greedy"; }

  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    tl.alternatives.clear();  // the scheduler's other orders are not tried: its implementation choice is over this order
    const auto records = tl.stages;
    const auto clock = deadline::after(ctx.time_limit_or(time_limit_s));
    if (tl.empty()) tl = given_timeline(p);
    const auto target = detail::target_of(ctx);
    const auto n = static_cast<std::size_t>(p.num_ops());
    std::vector<std::vector<impl_alternative>> front(n);
    for (op_id o = 0; o < p.num_ops(); ++o) front[static_cast<std::size_t>(o)] = implementation_front(p, o);
    auto finish = [&](timeline out, const std::string& note) {
      out.stages = records;
      out.stages.push_back({kind, name(), clock.elapsed(), "monet_greedy: " + note});
      return out;
    };
    auto fastest = [&](std::int64_t cap) {
      std::vector<std::int32_t> impl(n, -1);
      for (std::size_t o = 0; o < n; ++o) {
        impl[o] = front[o].back().impl;
        for (const auto& a : front[o])
          if (a.workspace <= cap) {
            impl[o] = a.impl;
            break;
          }
      }
      return impl;
    };
    // Recomputation from the incoming order's own timeline (the inner checkpointer starts afresh).
    timeline base = make_timeline(p, tl.order());
    base.stages = records;
    base.order_lower_bound = tl.order_lower_bound;
    base.order_optimal = tl.order_optimal;

    struct candidate {
      timeline tl;
      double cost = 0;
      std::string what;
    };
    std::vector<candidate> cs;
    std::string tried;
    bool plain_fits = false;  // the last choice considered fits without recomputation
    auto add = [&](timeline out, const std::string& what) {
      detail::upgrade_impls(p, out, front, target, one_impl_per_op);
      candidate c{std::move(out), 0.0, what};
      c.cost = total_step_cost(p, c.tl);
      std::ostringstream os;
      os << what << "=" << c.tl.peak << "/" << c.cost;
      tried += (tried.empty() ? "" : ", ") + os.str();
      cs.push_back(std::move(c));
    };
    auto best = [&]() -> std::size_t {
      std::size_t b = 0;
      for (std::size_t k = 1; k < cs.size(); ++k) {
        const bool fk = cs[k].tl.peak <= target, fb = cs[b].tl.peak <= target;
        if (fk != fb ? fk : (fk ? cs[k].cost < cs[b].cost : cs[k].tl.peak < cs[b].tl.peak)) b = k;
      }
      return b;
    };
    auto any_fits = [&] { return !cs.empty() && cs[best()].tl.peak <= target; };
    // The inner runs planned (step 1's choices and step 4's rounds; set below): each gets an even share
    // of what is left of the clock, so the whole search stays within it.
    std::int32_t planned = 2 + std::max(0, caps) + std::max(0, rounds), done = 0;
    auto consider = [&](const std::vector<std::int32_t>& impl, const std::string& what) {
      timeline t0 = base;
      detail::set_impls(p, t0, impl);
      plain_fits = t0.peak <= target;
      auto sub = ctx;
      sub.runners_up = nullptr;  // one inner search of many, over one choice of implementations
      // (while nothing fits, the last resort below counts as one more run)
      if (clock.limited()) sub.time_limit_s = clock.seconds_left() / std::max(1, planned - done + (!cs.empty() && !any_fits() ? 1 : 0));
      ++done;
      add(plain_fits ? std::move(t0) : inner.run(p, std::move(t0), sub), what);
    };

    consider(fastest(std::numeric_limits<std::int64_t>::max()), "fastest");
    if (target == std::numeric_limits<std::int64_t>::max() || plain_fits) {
      std::ostringstream os;
      os << (plain_fits && target != std::numeric_limits<std::int64_t>::max() ? "the fastest implementations meet the target" : "no memory target")
         << ": every op on its fastest implementation, nothing recomputed (optimal), peak " << cs[0].tl.peak << " bytes, cost " << cs[0].cost;
      return finish(std::move(cs[0].tl), os.str());
    }
    if (!has_implementations(p)) {
      auto out = std::move(cs[0].tl);
      return finish(out, "no implementation alternatives: " + inner.name() + ", peak " + std::to_string(out.peak) + " bytes");
    }
    // Step 1's caps: the workspaces that occur, largest first, subsampled; then 0.
    std::vector<std::int64_t> ws;
    for (const auto& fr : front)
      for (const auto& a : fr)
        if (a.workspace > 0) ws.push_back(a.workspace);
    std::sort(ws.begin(), ws.end(), std::greater<>());
    ws.erase(std::unique(ws.begin(), ws.end()), ws.end());
    std::vector<std::int64_t> capv;
    const auto k = std::min<std::size_t>(ws.size(), static_cast<std::size_t>(std::max(0, caps)));
    for (std::size_t j = 0; j < k; ++j) capv.push_back(ws[(j * ws.size()) / std::max<std::size_t>(k, 1)]);
    capv.push_back(0);
    capv.erase(std::unique(capv.begin(), capv.end()), capv.end());
    planned = 1 + static_cast<std::int32_t>(capv.size()) + std::max(0, rounds);
    // Last resort when nothing meets the target: recompute on demand (checkmate_ilp's low-memory plan:
    // every dropped value recomputed in the stage that reads it) over the least-workspace choice. It
    // takes about as long as a choice (48 ms on EfficientNet-B0 at batch 32, a choice 48 ms), so while
    // nothing fits the search leaves time for it, and runs it as soon as a further choice would not;
    // run after a search that used the whole limit, it overran a 0.2 s limit by 20 % (issue 12).
    bool resorted = false;
    auto last_resort = [&] {
      resorted = true;
      timeline t0 = base;
      detail::set_impls(p, t0, fastest(0));
      const auto f = detail::checkmate_make_facts(p, t0);
      if (auto od = detail::on_demand_plan(p, f, clock)) {  // its first attempt always runs
        try {
          detail::staged_to_timeline(p, f, *od, t0);
          add(std::move(t0), "on-demand");
        } catch (const error&) {
        }
      }
    };
    step_pacer pace(clock);  // a choice starts only while the time left covers the longest one so far
    (void)pace.next();      // (the first choice, above, is not timed: it may end early when it fits)
    auto next_choice = [&] {
      const bool pending = !resorted && !any_fits();
      if (pace.next(pending ? 1 : 0)) return true;
      if (pending) last_resort();
      return false;
    };
    for (auto c : capv) {
      if (!next_choice()) break;
      consider(fastest(c), "cap " + std::to_string(c));
    }
    // Step 4: the best choice so far, recomputed over again.
    for (std::int32_t r = 0; r < rounds && next_choice(); ++r) {
      const auto b = best();
      const auto impl = compute_impls(p, cs[b].tl);
      const auto before = cs[b].cost;
      const auto fits = cs[b].tl.peak <= target;
      consider(impl, "round " + std::to_string(r + 1));
      if (best() != cs.size() - 1 || (fits && cs.back().cost >= before)) break;
    }
    if (!resorted && !any_fits()) last_resort();
    const auto b = best();
    auto out = std::move(cs[b].tl);
    std::ostringstream os;
    os << tried << "; chose " << cs[b].what << ": peak " << out.peak << " bytes (target " << target << "), cost " << cs[b].cost << ", "
       << implementations_changed(p, out) << " ops off their fastest implementation"
       << (out.peak <= target ? "" : "; the target is not met");
    return finish(std::move(out), os.str());
  }
};

static_assert(timeline_stage<monet_greedy>);

}  // namespace memplan::remat
