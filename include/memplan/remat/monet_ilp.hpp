#pragma once
// remat::monet_ilp -- MONeT's 0-1 program (Shah et al., "Memory Optimization for Deep Networks", ICLR
// 2021, §3-4): the checkpointing schedule and every operator's implementation chosen jointly, at the
// least total compute cost under a peak target, over the FIXED order of the incoming timeline.
//
// The schedule part is the staged R/S program of remat::checkmate_ilp (docs/checkmate.md), which MONeT
// §3 restates with its r^k_i (recompute forward_i before backward_k) and s^k_i (keep x_i into stage
// k); its constraints are MONeT eq. 7 (a recompute needs its inputs kept or recomputed; only kept or
// recomputed values can be kept on) and eq. 8 (backward_k's dependencies are kept or recomputed).
// monet_ilp adds, as MONeT §4 does:
//   delta[t][i][l]  run (t, i) -- the computation of op i in stage t (i = t: its forward or backward
//                   pass, i < t: a recomputation) -- uses alternative l of op i: its own (cost,
//                   workspace) or one of problem::implementations(op), Pareto-pruned;
//   sum_l delta[t][i][l] = R[t][i]                  (MONeT: sum_l delta_{i,l} = 1, sum_l delta^k_{i,l} = r^k_i)
//   workspace of run (t, k) = sum_l c^l delta[t][k][l]  in the memory constraint of every op step
//                   (MONeT eq. 1, 5, 6: c_i = sum_l c^l_i delta_{i,l}; the "local memory" of an op is
//                   the live set while it runs, counted as in checkmate_ilp, i.e. exactly at an
//                   optimum rather than MONeT's upper bound L-bar of Appendix B);
//   objective       minimize sum_{t, i<=t} sum_l tau^l_i delta[t][i][l]  (MONeT eq. 9: forward,
//                   backward and recomputation, each at its implementation's cost);
//   one_impl_per_op delta[t][i][l] <= delta[i][i][l] (default): a recompute runs the implementation of
//                   the op's first computation, so that eager execution with the same choices
//                   reproduces the plan bit for bit; false: MONeT's free delta^k per recomputation.
// MONeT's smaller program (Table 7: fewer variables than Checkmate's): with backward_only, as in
// MONeT's Alg. 2, only forward ops are recomputed and only in the stages of backward (and update) ops
// -- no R variables in forward stages, none for backward ops -- whenever the graph marks phases. Off by
// default: on the exports, CBC reaches lower memory within a time limit over Checkmate's full stages
// (AlexNet at <= 10 % overhead: 0.84 of the given peak, against 0.98 with backward_only; docs/monet.md).
// Not modelled: backward implementations whose dependencies differ (MONeT's D^l_k, eq. 5 and 8) --
// memplan's implementations share the op's inputs and outputs; in-place and output-activated variants
// enter as graph structure (inplace_of), not as alternatives.
//
// Warm starts: the plugged checkpointer (default remat::monet_greedy, the joint heuristic), then
// checkmate_ilp's on-demand recomputation with every op on its fastest and on its least-workspace
// alternative; the cheapest that fits and the model can represent is the solver's first incumbent.
// Without a memory target, or when every op's fastest alternative fits without recomputation, that is
// the optimum and no model is built. Without a MILP backend (link memplan::cbc and pass solver::cbc{}),
// beyond the size guards, or when the solver finds nothing, the best warm start is returned with a note
// saying why. Notes carry the model's size, the solver's status, time, bound and MIP gap.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <memplan/base/deadline.hpp>
#include <memplan/base/error.hpp>
#include <memplan/base/format.hpp>
#include <memplan/base/progress.hpp>
#include <memplan/core/any_stage.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/remat/checkmate_ilp.hpp>
#include <memplan/remat/monet_greedy.hpp>
#include <memplan/solver/milp.hpp>
#include <memplan/solver/stage_time.hpp>

namespace memplan::remat {

namespace detail {

// The facts of monet_ilp's model over a timeline's order.
inline checkmate_facts monet_make_facts(const problem& p, const timeline& tl, bool one_impl_per_op, bool backward_only) {
  auto f = checkmate_make_facts(p, tl);
  monet_choices(p, f, one_impl_per_op);
  if (backward_only) monet_stages(p, f);
  return f;
}

}  // namespace detail

struct monet_ilp {
  static constexpr stage_kind kind = stage_kind::checkpointer;

  solver::any_backend backend{};       // none: plan_context::solver; neither: falls back to the warm start (with a note)
  double time_limit_s = 30.0;          // wall clock for the stage: warm starts and MILP solve (ctx.time_limit_s overrides)
  double relative_gap = 1e-4;          // stop when (incumbent - bound) / incumbent <= this
  int threads = 1;                     // > 1: CBC's parallel search, results may depend on timing
  int verbosity = 0;                   // the backend's log level
  std::int32_t max_ops = 400;          // size guard: beyond, fall back with a note
  std::int64_t max_binaries = 200000;  // size guard on R, S and delta variables
  bool one_impl_per_op = true;         // a recompute runs the op's first computation's implementation
  bool backward_only = false;          // true: MONeT Alg. 2's smaller program, forward ops recomputed in backward stages only
  any_checkpointer warm_start = monet_greedy{};  // its timeline is the solver's first incumbent when it fits

  [[nodiscard]] std::string name() const { return "monet_ilp"; }

  // The model's size over a timeline's order (variables; constraints are counted when built).
  [[nodiscard]] checkmate_ilp_size model_size(const problem& p, const timeline& tl) const {
    const auto f = detail::monet_make_facts(p, tl.empty() ? given_timeline(p) : tl, one_impl_per_op, backward_only);
    return detail::checkmate_model(p, f, 0).size();
  }

  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    tl.alternatives.clear();  // the scheduler's other orders are not tried: the model and its warm start are over this order
    const auto limit = ctx.time_limit_or(time_limit_s);  // the whole stage: warm starts and solve
    const auto clock = deadline::after(limit > 0 ? limit : -1.0);
    const auto records = tl.stages;
    auto finish = [&](timeline out, const std::string& note) {
      out.stages = records;
      out.stages.push_back({kind, name(), 0.0, "monet_ilp: " + note});
      return out;
    };
    if (p.num_ops() == 0) return finish(std::move(tl), "no ops");
    if (tl.empty()) tl = given_timeline(p);
    const auto f = detail::monet_make_facts(p, tl, one_impl_per_op, backward_only);
    const auto target = ctx.has_memory_limit() ? ctx.peak_target() : std::numeric_limits<std::int64_t>::max();
    // Every op on its fastest alternative, nothing recomputed: the least cost of all plans.
    std::vector<std::int32_t> fastest(static_cast<std::size_t>(p.num_ops()), -1), least(fastest.size(), -1);
    for (std::int32_t i = 0; i < f.n; ++i) {
      const auto& as = f.alts[static_cast<std::size_t>(i)];
      fastest[static_cast<std::size_t>(f.order[static_cast<std::size_t>(i)])] = as.front().impl;
      least[static_cast<std::size_t>(f.order[static_cast<std::size_t>(i)])] = as.back().impl;
    }
    auto quick = detail::with_impls(p, tl, fastest);
    if (quick.peak <= target)
      return finish(std::move(quick), std::string(target == std::numeric_limits<std::int64_t>::max() ? "no memory target" : "it fits") +
                                          ": every op on its fastest implementation, nothing recomputed (optimal), peak " +
                                          std::to_string(quick.peak) + " bytes, cost " + number_text(total_step_cost(p, quick)));
    report(ctx.progress, name(), "warm start: " + warm_start.name(), clock.elapsed(), tl.peak, 0);

    // ---- warm starts ----
    using candidate = detail::ilp_candidate;
    std::vector<candidate> cands;
    const auto& solver = backend.available() ? backend : ctx.solver;
    const bool will_solve = solver.available() && f.n <= max_ops;
    const std::string warm_summary = detail::add_warm_start(p, tl, warm_start, ctx, limit, will_solve, clock, cands, [&](const timeline& w) {
      return "cost " + number_text(total_step_cost(p, w));
    });
    const bool warm_ok = !cands.empty();  // the warm start is the first candidate when it replays
    const bool fits_already = std::any_of(cands.begin(), cands.end(), [&](const candidate& c) { return c.tl.peak <= target; });
    if (auto od = detail::start_on_demand(clock, limit, will_solve, fits_already) ? detail::on_demand_plan(p, f, clock) : std::nullopt) {
      for (int variant = 0; variant < 2; ++variant) {
        auto sp = *od;
        for (std::int32_t t = 0; t < f.n; ++t)
          for (std::int32_t i = 0; i <= t; ++i)
            sp.set_impl(t, i, variant == 0 ? f.alts[static_cast<std::size_t>(i)].front().impl : f.alts[static_cast<std::size_t>(i)].back().impl);
        timeline t2 = tl;
        try {
          detail::staged_to_timeline(p, f, sp, t2);
          if (!detail::replay_violation(p, t2))
            cands.push_back({variant == 0 ? "on-demand recomputation (fastest)" : "on-demand recomputation (least workspace)", std::move(t2), 0});
        } catch (const error&) {
        }
      }
    }
    for (auto& c : cands) c.cost = total_step_cost(p, c.tl);
    auto best_candidate = [&] { return detail::best_candidate(cands, target); };
    auto fallback = [&](const std::string& why) {
      const auto* c = best_candidate();
      if (!c) return finish(quick, why + "; returned every op on its fastest implementation, nothing recomputed");
      return finish(c->tl, why + "; returned " + c->who + ": peak " + std::to_string(c->tl.peak) + " bytes (target " + std::to_string(target) +
                               "), " + std::to_string(detail::recompute_count(c->tl)) + " recomputes, cost " + number_text(c->cost) + ", " +
                               std::to_string(implementations_changed(p, c->tl)) + " ops off their fastest implementation" +
                               (warm_ok && c == &cands.front() ? "" : "; " + warm_summary));
    };

    auto solved = detail::solve_staged(
        p, f, target, tl, solver, clock, limit, {max_ops, max_binaries, relative_gap, threads, verbosity}, cands,
        "the model cannot represent it (a recompute outside MONeT's stages, or of a value nothing needs)",
        std::string("recomputing each op at most once between two scheduled ops") + (backward_only ? ", forward ops in backward stages only" : ""),
        ctx.progress, name());
    if (!solved.plan) return fallback(solved.note);
    auto& out = *solved.plan;
    auto& note = solved.note;
    const auto cost = total_step_cost(p, out);
    if (const auto* c = best_candidate(); c && c->tl.peak <= target && c->cost < cost)
      return finish(c->tl, note + "; incumbent costlier than the warm start, returned " + c->who);
    note += "; peak " + std::to_string(tl.peak) + " -> " + std::to_string(out.peak) + " bytes (target " + std::to_string(target) + "), " +
            std::to_string(detail::recompute_count(out)) + " recomputes, cost " + number_text(cost) + ", " +
            std::to_string(implementations_changed(p, out)) + " ops off their fastest implementation" +
            (f.unit_costs ? " (the graph has no costs: the model counted one unit per op step)" : "");
    return finish(std::move(out), note);
  }
};

static_assert(timeline_stage<monet_ilp>);

}  // namespace memplan::remat
