#pragma once
// memplan::plan: runs a stage (usually a pipeline of them) and returns a verified memory_plan.
//
//   auto plan = memplan::plan(g, schedule::default_scheduler{} | remat::chen_budget{} | place::best_fit{},
//                             {.budget = 8_GiB});
//
// Without a scheduler the graph's given order is the starting timeline; a pipeline must end placed.
// Where the timeline is born, ops that list implementations get the ones ctx.implementations chooses
// (default: no slower than their own, least workspace first; core/implementations.hpp).
// Budget semantics: the final arena fits min(budget, capacity). When the placed arena overshoots and
// the pipeline has a checkpointer or offloader, their target is lowered by the overshoot and they run
// again (with the stages after them); when that cannot succeed, errc::infeasible says the smallest
// arena memplan reached and the bound below which no plan exists. Every plan returned here has passed
// memplan::verify (an invalid one throws errc::invalid_plan).
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <memplan/base/deadline.hpp>
#include <memplan/base/error.hpp>
#include <memplan/base/format.hpp>
#include <memplan/core/adapt.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/cut_bound.hpp>
#include <memplan/core/implementations.hpp>
#include <memplan/core/plan.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/recompute_bound.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/core/verify.hpp>

namespace memplan {

namespace detail {

inline void validate_context(const plan_context& c) {
  if (c.alignment <= 0 || (c.alignment & (c.alignment - 1)) != 0)
    throw error(errc::invalid_argument, "alignment " + std::to_string(c.alignment) + " is not a power of two");
  if (c.budget < -1) throw error(errc::invalid_argument, "budget " + std::to_string(c.budget) + " bytes is negative");
  if (!(c.to_beat_margin >= 0.0) || c.to_beat_margin > 1e6)
    throw error(errc::invalid_argument, "to_beat_margin " + std::to_string(c.to_beat_margin) + " is not a fraction >= 0");
  if (!(c.placement_work_share > 0.0) || !std::isfinite(c.placement_work_share))
    throw error(errc::invalid_argument, "placement_work_share " + std::to_string(c.placement_work_share) + " is not a finite share > 0");
  if (c.capacity < -1) throw error(errc::invalid_argument, "capacity " + std::to_string(c.capacity) + " bytes is negative");
  if (c.arena_target < -1) throw error(errc::invalid_argument, "arena target " + std::to_string(c.arena_target) + " bytes is negative");
  if (!(c.offload_fill >= 0.0 && c.offload_fill <= 1.0))
    throw error(errc::invalid_argument, "offload_fill " + std::to_string(c.offload_fill) + " is not a share in [0, 1]");
}

// A stage's refusal to meet its target (none of its choices fits, an exact method's size guard, or
// nothing it can reach beats the step to beat), as opposed to bad input: where the pipeline tries a
// stage once more on its own, such a refusal leaves the result it already has.
inline bool is_refusal(const error& e) {
  return e.code() == errc::infeasible || e.code() == errc::limit_exceeded || e.code() == errc::not_better;
}

// The bisection over plan_context::offload_fill after a run that moved every value (plan()'s last
// resort, and the end of a checkpointer-then-offloader composition's aimed-lower search): up to three
// runs between the offloader's own choice (0) and every value (1), each at the middle of the fills
// not yet known to place within and those known to; fits(f) runs at fill f and says whether its plan
// placed within, more() whether another run may start.
template <class Fits, class More>
void bisect_offload_fill(Fits&& fits, More&& more) {
  double lo = 0.0, hi = 1.0;
  for (int k = 0; k < 3 && more(); ++k) {
    const double mid = 0.5 * (lo + hi);
    (fits(mid) ? hi : lo) = mid;
  }
}

inline constexpr unsigned reducer_bits =
    (1u << static_cast<unsigned>(stage_kind::checkpointer)) | (1u << static_cast<unsigned>(stage_kind::offloader));

// Where the last checkpointer or offloader of tuple `t` is, when only placers follow it (the plan's
// costs, its makespan and step costs, are then known before it is placed); else npos.
template <class Tuple>
constexpr std::size_t last_reducer_before_placers() {
  constexpr unsigned placer_bit = 1u << static_cast<unsigned>(stage_kind::placer);
  std::size_t last = std::numeric_limits<std::size_t>::max();
  bool only_placers_after = true;
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((stage_kinds<std::tuple_element_t<I, Tuple>> & reducer_bits
          ? (last = I, only_placers_after = (stage_kinds<std::tuple_element_t<I, Tuple>> & placer_bit) == 0)
          : (only_placers_after = only_placers_after && stage_kinds<std::tuple_element_t<I, Tuple>> == placer_bit)),
     ...);
  }(std::make_index_sequence<std::tuple_size_v<Tuple>>{});
  return only_placers_after ? last : std::numeric_limits<std::size_t>::max();
}

// Whether stage I of tuple `t` is a checkpointer and stage I + 1 an offloader (run_from).
template <class Tuple, std::size_t I>
constexpr bool checkpointer_then_offloader() {
  if constexpr (I + 1 >= std::tuple_size_v<Tuple>) {
    return false;
  } else {
    return stage_kinds<std::tuple_element_t<I, Tuple>> == (1u << static_cast<unsigned>(stage_kind::checkpointer)) &&
           stage_kinds<std::tuple_element_t<I + 1, Tuple>> == (1u << static_cast<unsigned>(stage_kind::offloader));
  }
}

// How many checkpointers and offloaders tuple `t` holds.
template <class Tuple>
constexpr std::size_t reducer_count() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return ((stage_kinds<std::tuple_element_t<I, Tuple>> & reducer_bits ? std::size_t{1} : std::size_t{0}) + ... + std::size_t{0});
  }(std::make_index_sequence<std::tuple_size_v<Tuple>>{});
}

// Runs the stages of tuple `t` from index I on; the timeline before the first checkpointer or
// offloader is kept in `before_reduce` (with its index in `reduce_at`) for the budget loop. The
// checkpointers and offloaders from `start` on run with `*start_ctx` when one is given (the budget
// loop's reruns: the reducers' stop). With `place_if`, the timeline the last reducer returns is
// placed only if place_if says so (last_reducer_before_placers); else it is returned unplaced.
template <std::size_t I = 0, class Tuple>
timeline run_from(const Tuple& t, std::size_t start, const problem& p, timeline tl, const plan_context& ctx,
                  timeline* before_reduce, std::size_t* reduce_at, const plan_context* start_ctx = nullptr,
                  const std::function<bool(const timeline&)>* place_if = nullptr) {
  if constexpr (I == std::tuple_size_v<Tuple>) {
    return tl;
  } else {
    using S = std::tuple_element_t<I, Tuple>;
    if (I >= start) {
      if (before_reduce && *reduce_at == std::numeric_limits<std::size_t>::max() && (stage_kinds<S> & reducer_bits) != 0) {
        *before_reduce = tl;
        *reduce_at = I;
      }
      const plan_context& sctx = start_ctx && (stage_kinds<S> & reducer_bits) != 0 ? *start_ctx : ctx;
      if constexpr (checkpointer_then_offloader<Tuple, I>()) {
        // A checkpointer, then an offloader. Where the checkpointer does not reach its target, the
        // offloader also runs on the timeline the checkpointer got, and the result that meets the
        // target (else the lower peak) goes on; where the plan then places above the arena target,
        // the other result is placed too (below). Recomputing first can leave the offloader fewer
        // values to move: on random training graphs the composition met fewer budgets than the
        // offloader alone (the property volume test, stop 75: a checkpointer stuck at 41,947 B,
        // offloading after it at 41,236 B, offloading alone at 36,480 B).
        timeline given = tl;
        tl = run_stage(std::get<I>(t), p, std::move(tl), sctx);
        {
          const bool ck_met = tl.peak <= sctx.peak_target();
          auto ck = tl.stages.back();
          const auto ck_peak = tl.peak;
          // (Only where the checkpointer changed something: the CLI puts `none` before a lone offloader.)
          const bool changed = !(given.steps == tl.steps);
          timeline after = run_stage(std::get<I + 1>(t), p, std::move(tl), sctx);
          const auto after_peak = after.peak;
          const auto after_makespan = after.makespan;
          double offload_s = after.stages.back().seconds;  // the offloader's seconds over its runs
          bool ran_alone = false;
          // (A refusal there, e.g. no choice within the host limit, leaves the result after the
          // checkpointer: it is no reason to fail the plan.)
          // (to_beat: seconds its step must beat, where it runs only to be faster; see below. aim: a
          // target of its own, where it runs again aimed lower, below; the checkpointer's record
          // then already says why it was not used.)
          // (fill: plan_context::offload_fill for this run, where above 0.)
          auto run_alone = [&](double to_beat = -1.0, std::int64_t aim = -1, double fill = 0.0) {
            ran_alone = true;
            timeline alone;
            try {
              plan_context c = sctx;
              c.offload_to_beat = to_beat;
              if (fill > 0.0) c.offload_fill = fill;
              if (aim >= 0) c.memory_target = aim;
              alone = run_stage(std::get<I + 1>(t), p, given, c);
            } catch (const error& e) {
              if (!detail::is_refusal(e)) throw;
              return timeline{};
            }
            offload_s += alone.stages.back().seconds;
            if (aim < 0)
              ck.note += "; not used: its peak " + std::to_string(ck_peak) + (ck_met ? " met" : " missed") + " the target " +
                         std::to_string(sctx.peak_target()) + ", and the " + std::string(to_string(stage_kind::offloader)) + " reached " +
                         std::to_string(alone.peak) + " bytes without it (" + std::to_string(after_peak) + " after it)" +
                         (alone.timed ? ", a step of " + number_text(alone.makespan) + " s (" + number_text(after_makespan) + " after it)" : "");
            alone.stages.insert(alone.stages.end() - 1, ck);
            return alone;
          };
          timeline other;      // the offloader's other result, where it ran twice (unplaced: none)
          bool slower_met = false;  // `other` met the target too, and `after` is faster
          timeline other_from;  // where that result is on the scheduler's alternative order: the timeline it began from
          std::string other_order;  // (and that order's policy)
          if (after.peak > sctx.peak_target() && changed) {
            timeline alone = run_alone();
            // The lower peak goes on first; at equal peaks the faster (better_plan).
            if (!alone.stages.empty() && (alone.peak < after.peak || (alone.peak == after.peak && better_plan(p, alone, p, after))))
              std::swap(after, alone);
            other = std::move(alone);
          } else if (changed && after.timed) {
            // Both may meet the target, and the offloader alone may be faster: with a copy engine fast
            // against the ops, moving a value out and back costs less than recomputing it. The faster
            // result that meets the target goes on first (better_plan). On the volume test's random
            // training graphs (first results) the composition was slower than the better of the two
            // alone on 2,594 of the 4,726 budgets one of them met, by up to 36 %; 470 after this (stop 78),
            // 31 since the faster is also aimed lower where it overshoots (below), each within 0.005 %.
            // Where the offloader's makespan bound (Prop. 3) shows that it cannot be faster, it stops
            // there (errc::not_better): on the batch-32 exports at 12 GB/s offloading alone is 2-9x
            // slower than recomputing, and the bound says so before any search.
            // Where the faster one then places above the arena target, the other (which met the target
            // too) is placed and goes on instead, as it did before this (random training graph 8808:
            // offloading alone placed 22,770 B, the checkpointer's plan 21,641 B for a budget of
            // 22,021 B, and the reruns from the first found nothing that fitted).
            timeline alone = run_alone(after_makespan);
            if (!alone.stages.empty() && alone.peak <= sctx.peak_target() && better_plan(p, alone, p, after)) {
              std::swap(after, alone);
              slower_met = true;
            }
            other = std::move(alone);
          }
          // (The offloader's record of the result kept counts both runs' seconds.)
          const auto with_offload_s = [&](timeline r, std::size_t records) {
            r.stages[records - 1].seconds = offload_s;
            return r;
          };
          constexpr bool only_placers_follow = I + 1 == last_reducer_before_placers<Tuple>();
          const auto first_records = after.stages.size();
          if (place_if && *place_if && only_placers_follow && !(*place_if)(after)) return with_offload_s(std::move(after), first_records);
          // A placement refused for its size (buffer sums beyond 2^62: more buffers after recomputation)
          // is tried with the other result too before it stands.
          std::optional<error> first_refusal;
          timeline placed;
          try {
            placed = run_from<I + 2>(t, start, p, std::move(after), ctx, before_reduce, reduce_at, start_ctx, place_if);
          } catch (const error& e) {
            if (!only_placers_follow || e.code() != errc::limit_exceeded) throw;
            first_refusal = e;
          }
          // Where only placers follow and the placed arena is above the arena the placers aim at (plan()'s
          // limit), the other result is placed too: a peak as low or a little higher can place lower.
          // Where the first met the target, the offloader runs alone only in plan()'s first run (the one
          // that keeps `before_reduce`) and at the least target: run in every rerun, it made plans with
          // both stages 1.4-2x longer for the same plans (EfficientNet-B0 b32 at 0.3x, deterministic).
          // On random training graphs offloading alone placed within budgets the composition missed
          // (seed 276: the composition's peak of 42,208 B placed at 46,893 B, offloading alone's
          // 42,209 B at 43,912 B; seed 459, first results: the checkpointer missed its target, the
          // offloader after it met it with 35,619 B that placed at 40,809 B, above the budget of
          // 40,175 B, and alone it placed 38,923 B).
          const bool over = first_refusal || (only_placers_follow && ctx.arena_target >= 0 && placed.placed() && placed.arena > ctx.arena_target);
          const bool least_target = ctx.cache && sctx.memory_target >= 0 && sctx.memory_target <= ctx.cache->op_local();
          if (over && other.stages.empty() && !ran_alone && (least_target || first_refusal || before_reduce != nullptr)) {
            if (changed) {
              other = run_alone();
            } else if (!given.alternatives.empty()) {
              // The checkpointer changed nothing (`none`, which the CLI puts before an offloader named
              // alone): the other result is the one on the scheduler's alternative order, the graph's
              // own where it is one (timeline::alternatives). Equal peaks can place far apart: on
              // random training graphs the default scheduler's order missed 104 of 10,000 budgets that
              // offloading in the given order met (seed 141: both offload every value, peak 27,109 B,
              // placed at 31,504 B and 28,432 B).
              auto a = given.alternatives.front();
              for (const auto& x : given.alternatives)
                if (x.policy == "given") a = x;
              try {
                auto alt = ::memplan::detail::alternative_timeline(p, given, a, ctx);
                alt.alternatives.clear();
                if (before_reduce && *reduce_at == I) {  // (the timeline the reruns start from is this stage's input)
                  other_from = alt;
                  other_order = a.policy;
                  other_from.alternatives.push_back({"scheduler's", given.order()});
                }
                alt = run_stage(std::get<I>(t), p, std::move(alt), sctx);
                alt = run_stage(std::get<I + 1>(t), p, std::move(alt), sctx);
                offload_s += alt.stages.back().seconds;
                alt.stages.back().note += "; on the " + a.policy + " order (the scheduler's alternative)";
                other = std::move(alt);
              } catch (const error& e) {
                if (e.code() != errc::infeasible && e.code() != errc::limit_exceeded) throw;
              }
            }
          }
          // (Outside the least target's run, a result slower than the first is not placed: it would not be kept.)
          if (!over || other.stages.empty() || (place_if && *place_if && !(*place_if)(other)) ||
              (!least_target && !first_refusal && !slower_met && worse_by_more_than(p, other, to_beat_of(p, placed), 0.0))) {
            if (first_refusal) throw *first_refusal;
            return with_offload_s(std::move(placed), first_records);
          }
          const auto records = other.stages.size();
          timeline second;
          try {
            second = run_from<I + 2>(t, start, p, std::move(other), ctx, before_reduce, reduce_at, start_ctx, place_if);
          } catch (const error& e) {
            if (first_refusal || e.code() != errc::limit_exceeded) throw;
            return with_offload_s(std::move(placed), first_records);
          }
          if (first_refusal) return with_offload_s(std::move(second), records);
          // The other result is kept where it fits and is not slower (better_plan), or fits at all in
          // the budget loop's run at the least target, whose refusal would end the plan. Not where it
          // merely fits: the reruns aim lower and may find a faster plan that fits (ResNet-50 b32 at 0.3x
          // of its arena: recomputation placed 931 MB for a budget of 863 MB, offloading alone 899 MB;
          // keeping the offload plan that fitted after a rerun made the step 4.5x slower, 0.080 ->
          // 0.361 s, where the reruns found a recompute plan that fitted).
          // Where the faster of two results that met the target (slower_met) overshot, the other is kept,
          // fitting or not: the reruns then aim from it, as they did before the faster one was tried
          // (random training graph 9636: offloading alone peaked at 32,338 B for a target of 34,222 B
          // and placed 37 B above it, the checkpointer's plan 800 B above it; from the first the reruns
          // went to the least target and missed, from the second they aimed at 32,422 B and fitted).
          const bool keep_second =
              second.placed() && (slower_met || (second.arena <= ctx.arena_target && (least_target || !better_plan(p, placed, p, second))));
          // In plan()'s first run, where neither fits and the alternative order's result placed lower,
          // the budget loop's reruns go on that order (the first order is then its alternative, tried
          // at the least target): they aim lower from the start that placed lower. Random training
          // graph 2041: the first placed 31,497 B, the given order's 30,473 B, for a budget of
          // 29,790 B; the reruns on the first order ended at 30,729 B, on the given one at 28,169 B.
          if (!keep_second && !other_from.stages.empty() && second.placed() && placed.placed() && second.arena < placed.arena &&
              second.arena > ctx.arena_target) {
            other_from.stages.back().note += std::string(other_from.stages.back().note.empty() ? "" : "; ") +
                                             "the budget loop's reruns on the " + other_order +
                                             " order (the scheduler's alternative: in the first run it placed " + std::to_string(second.arena) +
                                             " bytes, the scheduler's order " + std::to_string(placed.arena) + ")";
            *before_reduce = std::move(other_from);
          }
          // Where the faster of two results that met the target (the offloader alone) overshot and the
          // slower fits, the offloader alone runs up to four times more, aimed lower as the budget
          // loop aims its reruns, and the first plan that fits and is faster goes on: the budget loop
          // does not run again once a plan fits, and its reruns do not run the offloader alone. On
          // the volume test's random training graphs the slower fitting plan was kept on
          // 384 of the 470 budgets where the composition was slower than the better of the two alone
          // (seed 46: offloading alone took 944 s a step and placed 34,492 B for a budget of 32,178 B,
          // the checkpointer's plan 1,034 s and 30,531 B; aimed lower, offloading alone placed 27,578 B).
          timeline lower;  // the offloader alone, aimed lower, placed within the arena target (none: not found)
          std::size_t lower_records = 0;
          double lower_place_s = 0.0;  // the placers' seconds over those runs that overshot or were not kept
          // (A placed run not kept counts its placers' records, from `from` on, in the plan's seconds.)
          const auto count_place_s = [&](const timeline& r, std::size_t from) {
            for (std::size_t i = from; i < r.stages.size(); ++i) lower_place_s += r.stages[i].seconds;
          };
          std::string lower_note;
          if (keep_second && slower_met && only_placers_follow && placed.placed() && second.arena <= ctx.arena_target &&
              placed.arena > ctx.arena_target) {
            // over_at: a target known to overshoot. The aims: below it by the overshoot (the secant
            // step), then twice the largest overshoot lower, then the least target; where the plan
            // aimed at one is no faster than the slower plan, halfway back up to over_at.
            // Where the plan aimed at the least target overshoots too, one more run there moves every
            // value (plan_context::offload_fill = 1, plan()'s last resort): random training graph
            // 3526, where offloading alone meets the budget only so, at 908 s a step against the
            // checkpointer's 975 s. Where that one fits, up to three more bisect the fill between the
            // offloader's own choice (0, which overshot) and every value, as plan()'s last resort does,
            // and the fastest plan that fits is kept.
            auto over_at = std::min(sctx.peak_target(), placed.peak);
            auto most_over = placed.arena - ctx.arena_target;
            auto aim = over_at - most_over;
            bool everything = false;
            for (int k = 0; k < 5; ++k) {
              if (ctx.cache) aim = std::max(aim, ctx.cache->op_local());  // (the least target: no plan peaks below it)
              if ((k == 4 && !everything) || (!sctx.deterministic && sctx.stop.expired())) break;
              if (!everything && (aim < 0 || aim >= over_at)) break;
              auto again = run_alone(-1.0, aim, everything ? 1.0 : 0.0);
              if (again.stages.empty() || !better_plan(p, again, p, second)) {  // (refused, or no faster)
                if (everything) break;
                aim += (over_at - aim) / 2;
                continue;
              }
              const auto again_records = again.stages.size();
              try {
                again = run_from<I + 2>(t, start, p, std::move(again), ctx, nullptr, nullptr, start_ctx, nullptr);
              } catch (const error& e) {
                // (Refused for its size, or above a limit the context's placers keep: the slower plan stands.)
                if (e.code() != errc::limit_exceeded && e.code() != errc::infeasible) throw;
                break;
              }
              lower_note += std::string(lower_note.empty() ? "" : ", ") + "aimed at " + std::to_string(aim) + " bytes" +
                            (everything ? " moving every value" : "") + " it placed " + std::to_string(again.arena);
              if (again.arena <= ctx.arena_target) {
                lower = std::move(again);
                lower_records = again_records;
                if (everything) {
                  bisect_offload_fill(
                      [&](double fill) {
                        auto some = run_alone(-1.0, aim, fill);
                        if (some.stages.empty() || !better_plan(p, some, p, second)) return false;
                        const auto some_records = some.stages.size();
                        try {
                          some = run_from<I + 2>(t, start, p, std::move(some), ctx, nullptr, nullptr, start_ctx, nullptr);
                        } catch (const error& e) {
                          if (e.code() != errc::limit_exceeded && e.code() != errc::infeasible) throw;
                          return false;
                        }
                        const bool fits = some.arena <= ctx.arena_target;
                        lower_note += ", moving " + number_text(100.0 * fill) + " % of the values it had left it placed " + std::to_string(some.arena);
                        if (fits && better_plan(p, some, p, lower)) {
                          count_place_s(lower, lower_records);
                          lower = std::move(some);
                          lower_records = some_records;
                        } else {
                          count_place_s(some, some_records);
                        }
                        return fits;
                      },
                      [&] { return sctx.deterministic || !sctx.stop.expired(); });
                }
                break;
              }
              count_place_s(again, again_records);
              if (everything) break;
              everything = ctx.cache && aim == ctx.cache->op_local();
              most_over = std::max(most_over, again.arena - ctx.arena_target);
              over_at = aim;
              aim = k == 0 ? aim - 2 * most_over : 0;
            }
          }
          auto& kept = keep_second ? second : placed;
          const auto& dropped = keep_second ? placed : second;
          // (The kept plan's last placer record counts both placements' seconds.)
          for (std::size_t k = keep_second ? first_records : records; k < dropped.stages.size(); ++k)
            kept.stages.back().seconds += dropped.stages[k].seconds;
          kept.stages.back().note += std::string(kept.stages.back().note.empty() ? "" : "; ") + "the " +
                                     std::string(to_string(stage_kind::offloader)) + "'s other result (" +
                                     (keep_second ? "the one kept" : "not kept") + ") placed " + std::to_string(second.arena) +
                                     " bytes, the first " + std::to_string(placed.arena) + " bytes";
          if (!lower_note.empty()) {
            const bool found = lower.placed();
            auto& out = found ? lower : kept;
            out.stages.back().seconds += lower_place_s;
            if (found)
              for (std::size_t k = keep_second ? records : first_records; k < kept.stages.size(); ++k)
                out.stages.back().seconds += kept.stages[k].seconds;
            out.stages.back().note += std::string(out.stages.back().note.empty() ? "" : "; ") + "the " +
                                      std::string(to_string(stage_kind::offloader)) + " alone, faster, placed " + std::to_string(placed.arena) +
                                      " bytes and the slower result " + std::to_string(second.arena) + "; the " +
                                      std::string(to_string(stage_kind::offloader)) + " alone " + lower_note + (found ? " (the one kept)" : " (not kept)");
            if (found) return with_offload_s(std::move(lower), lower_records);
          }
          return with_offload_s(std::move(kept), keep_second ? records : first_records);
        }
      } else {
        tl = run_stage(std::get<I>(t), p, std::move(tl), sctx);
      }
      if (place_if && *place_if && I == last_reducer_before_placers<Tuple>() && !(*place_if)(tl)) return tl;
    }
    return run_from<I + 1>(t, start, p, std::move(tl), ctx, before_reduce, reduce_at, start_ctx, place_if);
  }
}

inline std::string bytes_text(std::int64_t b) { return std::to_string(b) + " bytes"; }
// The arena limit by its name: the budget when it is the budget, else the capacity (`--capacity`
// alone still runs the budget loop through a `none` checkpointer, and its refusal named a budget the
// user never gave).
inline std::string limit_text(const plan_context& ctx, std::int64_t limit) {
  return (ctx.budget >= 0 && ctx.budget == limit ? "the budget of " : "the capacity of ") + bytes_text(limit);
}

// The min-cut bound (core/cut_bound.hpp) on any order of p, as plan_context::cut_bound runs it for a
// plan of peak `peak` whose bound is `lb`: nothing when lb already meets the peak, stopped where it
// reaches the peak (that proves the order optimal), within ctx's cut_bound_time_limit_s (none in
// deterministic mode, which caps the exact part's ops instead). Returns lb when the cut is not above.
inline std::int64_t cut_bound_above(const problem& p, std::int64_t peak, std::int64_t lb, const plan_context& ctx) {
  if (lb >= peak) return lb;
  cut_bound_options co;
  co.stop_at = peak;
  co.time_limit_s = ctx.within_stop(ctx.cut_bound_time_limit_s);
  if (ctx.deterministic) co.max_ops_exact = std::min(co.max_ops_exact, 1500);
  return std::max(lb, cut_lower_bound(p, co).bytes);
}

// Adds the seconds of the stage records from index `from` on to `secs`, by stage kind.
inline void add_stage_seconds(std::array<double, 4>& secs, const std::vector<stage_record>& records, std::size_t from) {
  for (std::size_t i = from; i < records.size(); ++i) secs[static_cast<std::size_t>(records[i].kind)] += records[i].seconds;
}

// For pipelines that reduce memory by recomputation alone: the least memory any such plan needs
// (core/recompute_bound.hpp), when it is above the op-local bound.
inline std::string recompute_floor_text(const problem& p, std::int64_t budget, bool offloads) {
  if (offloads) return {};
  const auto b = recompute_bound_any_order(p, budget);
  if (b.floor_op == no_id || b.memory_floor <= op_local_bound(p)) return {};
  return "; a plan that only recomputes needs at least " + bytes_text(b.memory_floor) + " (while " + p.describe_op(b.floor_op) +
         " runs, the storages written before it and read after it that no rerun can rebuild stay in memory: no recomputable op writes them, "
         "or what they hold derives from an op that cannot run again)";
}

// What plan() needs to know of a pipeline's type, as values, so that its budget loop (below) is
// compiled once for every pipeline instead of once per pipeline type: the tests compose 65 pipeline
// types in one translation unit, and plan()'s instantiations were the largest name in its optimiser's
// time (docs/reliability.md, "Stop 84").
struct pipeline_shape {
  bool has_scheduler = false;
  bool has_checkpointer = false;
  bool has_offloader = false;
  bool one_reducer_then_placers = false;  // one checkpointer or offloader, and only placers after it
  [[nodiscard]] bool has_reducer() const { return has_checkpointer || has_offloader; }
};

template <class S>
constexpr pipeline_shape shape_of() {
  using tuple_type = std::decay_t<decltype(as_tuple(std::declval<const S&>()))>;
  return {.has_scheduler = contains_kind<S>(stage_kind::scheduler),
          .has_checkpointer = contains_kind<S>(stage_kind::checkpointer),
          .has_offloader = contains_kind<S>(stage_kind::offloader),
          .one_reducer_then_placers = reducer_count<tuple_type>() == 1 &&
                                      last_reducer_before_placers<tuple_type>() != std::numeric_limits<std::size_t>::max()};
}

// The pipeline's stages from index `from` on (run_from over its tuple), for plan_stages.
using stages_runner = std::function<timeline(std::size_t from, timeline tl, const plan_context& ctx, timeline* before_reduce,
                                             std::size_t* reduce_at, const plan_context* start_ctx,
                                             const std::function<bool(const timeline&)>* place_if)>;

// plan() for any pipeline: its shape, its name and a way to run its stages.
inline memory_plan plan_stages(const problem& p, const pipeline_shape& shape, const std::string& pipeline_name,
                               const stages_runner& run_stages, plan_context ctx) {
  detail::validate_context(ctx);
  ctx.cache = ctx.cache_for(p);
  if (!ctx.memo) ctx.memo = std::make_shared<stage_memo>();
  const bool has_reducer = shape.has_reducer();
  const auto limit = ctx.arena_limit();
  const bool limited = limit != std::numeric_limits<std::int64_t>::max();

  // A budget below the op-local bound is refused before any stage runs: no plan of any kind fits it,
  // and finding the smallest arena reachable took the whole budget loop (googlenet-train-b1 at half
  // its arena: 3.1 s of default stages, then the same refusal).
  if (has_reducer && limited && limit < ctx.cache->op_local()) {
    const auto f = op_local_bound_at(p);
    throw error(errc::infeasible, "'" + p.name() + "': no plan fits " + detail::limit_text(ctx, limit) +
                                      ": no plan of any kind needs less than " + detail::bytes_text(f.bytes) +
                                      (f.op == no_id ? std::string(" (the resident bytes)")
                                                     : " (resident bytes plus the inputs, outputs and workspace of " + p.describe_op(f.op) +
                                                           ", which must all be in memory while it runs)"));
  }
  timeline before_reduce;
  std::size_t reduce_at = std::numeric_limits<std::size_t>::max();
  timeline tl;
  // With a checkpointer or offloader, the placer runs without the limit so that the overshoot is known.
  plan_context run_ctx = ctx;
  if (has_reducer && limited) run_ctx.budget = run_ctx.capacity = -1;
  // ... and stops improving the arena once it fits the limit (googlenet-train-b32 at 400 MiB: the
  // default placer searched its whole 0.8 s in each of the 6 runs for arenas below the budget).
  if (has_reducer && limited && ctx.arena_target < 0) run_ctx.arena_target = limit;
  if (has_reducer && limited && ctx.memory_target < 0) run_ctx.memory_target = limit;
  // Without a scheduler, the given order's timeline, its ops' implementations chosen as a scheduler's
  // would be (the choice is then recorded as the given order's).
  timeline start;
  if (!shape.has_scheduler) {
    start = given_timeline(p);
    if (auto chosen = apply_implementation_choice(p, start, run_ctx); !chosen.empty())
      start.stages.push_back({stage_kind::scheduler, "given", 0.0, std::move(chosen)});
  }
  const auto run_began = deadline::clock::now();
  // With a stop for the whole plan, a reducer and an arena limit, the first run's reducer gets 0.4
  // of what is left on it: the reruns that follow an overshoot need the rest, and the last of them
  // says whether the budget can be met at all (given the whole stop, the default checkpointer
  // searched to it and the reruns had none: DenseNet-121 b32 at a 0.25 s stop ended "no plan fits").
  // Not half: the placers after it do not look at the clock, and on adversarial-training-800 at a
  // 0.25 s stop greedy_by_size's 0.04-0.05 s after a reducer that searched to its half left the one
  // rerun too little (`offloader combined` 0.295 s, `greedy` 0.277 s; with 0.4: 0.250 s and 0.264 s,
  // the same refusals over bench_reliability's 38 graphs).
  const bool whole_stop = has_reducer && limited && ctx.stop.limited() && !ctx.deterministic;
  if (whole_stop) run_ctx.stop = ctx.stop.slice(ctx.stop.seconds_left() * 0.4);
  std::array<double, 4> run_seconds{};  // by stage kind, over every run (when the budget loop reran)
  std::vector<std::pair<std::int64_t, std::int64_t>> reruns;  // the budget loop's: (target, arena; < 0: not placed, why)
  std::int64_t first_arena = 0, first_target = 0, kept_target = 0;
  std::vector<std::pair<std::string, std::int64_t>> runner_up_tries;  // the runners-up placed: (stage record's name, arena)
  bool kept_runner_up = false;
  // With a plan to beat, the first run's plan is placed only if it costs no more than the margin
  // above it (better_plan's measures, known before the placers run): else it could neither be kept by
  // the caller nor rerun (below), and its placement is the run's longest part where the budget is
  // tight (GoogLeNet b32 at 0.4x of its arena: the second variant set's plan, 3.2 % behind, had
  // 0.6 s of exact search before it was refused). Where the last checkpointer or offloader is a stage
  // that also places, the plan comes back placed and is refused only if it overshoots, as before.
  const bool has_to_beat = has_reducer && limited && (ctx.to_beat.step_cost >= 0 || ctx.to_beat.makespan >= 0);
  const auto behind = [&](const timeline& r) { return worse_by_more_than(p, r, ctx.to_beat, ctx.to_beat_margin); };
  std::function<bool(const timeline&)> first_place_if;
  if (has_to_beat) first_place_if = [&](const timeline& r) { return !behind(r); };
  // The first run's reducer leaves its runners-up (plan_context::runners_up) when it is the
  // pipeline's one checkpointer or offloader and only placers follow it: they are placed from the
  // stage after it.
  std::vector<timeline> runners_up;
  plan_context first_reducer_ctx = run_ctx;
  if (shape.one_reducer_then_placers && limited) first_reducer_ctx.runners_up = &runners_up;
  try {
    tl = run_stages(0, std::move(start), run_ctx, &before_reduce, &reduce_at, &first_reducer_ctx, &first_place_if);
  } catch (const error& e) {
    if (e.code() != errc::infeasible || has_reducer) throw;
    throw error(errc::infeasible, "'" + p.name() + "': " + e.what() + "; no order needs less than " +
                                      detail::bytes_text(ctx.cache->order_bound(ctx.lower_bound_max_ops).bytes) +
                                      " (add a checkpointer to recompute activations)");
  }
  if (has_reducer) {
    if (has_to_beat && (!tl.placed() || tl.arena > limit) && behind(tl)) {
      // It costs more than the margin above the plan to beat, and the reruns, which aim lower,
      // recompute / offload more.
      const bool by_time = tl.timed && ctx.to_beat.makespan >= 0;
      throw error(errc::not_better, "'" + p.name() + "': not planned to " + detail::limit_text(ctx, limit) + ": the plan aimed at it" +
                                        (tl.placed() ? " placed " + detail::bytes_text(tl.arena) + " and" : ", before it was placed,") +
                                        " already " + (by_time ? "takes " : "costs ") +
                                        number_text(by_time ? tl.makespan : total_step_cost(p, tl)) + (by_time ? " s" : "") +
                                        " a step, more than " + number_text(100.0 * ctx.to_beat_margin) + " % above the plan to beat's " +
                                        number_text(by_time ? ctx.to_beat.makespan : ctx.to_beat.step_cost) + (by_time ? " s" : ""));
    }
    // The reducer's runners-up meet the same target, and one may place at its peak where the chosen
    // plan did not (the placers' arena depends on the lifetimes' shapes, not only on the peak): each
    // that costs no more than the margin above the chosen plan (to_beat_margin) is placed, in the
    // reducer's order, until one fits. That one is the plan to beat for the reruns below: a try aimed
    // lower that costs more is not placed and ends the tries (the targets below it recompute more),
    // the bisection then looks above it, and the cheaper plan is kept. Inception-v3 b32 at 0.6x of its arena: greedy placed at its peak and
    // recomputes 5.41 %, where the plan aimed lower after greedy+keep_inplace_chains overshot
    // recomputed 5.68 %; on ResNet-18 and ShuffleNet-V2 the runner-up that fitted cost more than the
    // plans aimed lower (7.88 against 7.12 %, 8.71 against 8.30 %).
    timeline runner_up;  // the runner-up that fitted (unplaced: none)
    if (limited && tl.arena > limit && !runners_up.empty()) {
      const auto chosen = to_beat_of(p, tl);
      // Their placements share a quarter of the first run's placing time (with the clock; in
      // deterministic mode each gets a quarter of the searching placers' work limit,
      // placement_work_share): one that fits is usually found early (Inception-v3 b32 at 0.6x:
      // greedy's at its peak, in 1,836 search nodes), and one that does not would run the exact
      // search to its limit (two runners-up that overshot on Inception-v3 b32 at 0.7x: 3.5 -> 5.5 s
      // for the plan).
      double first_place_s = 0.0;
      for (const auto& r : tl.stages)
        if (r.kind == stage_kind::placer) first_place_s += r.seconds;
      plan_context place_ctx = run_ctx;
      if (ctx.deterministic)
        place_ctx.placement_work_share = 0.25 * run_ctx.placement_work_share;
      else
        place_ctx.stop = run_ctx.stop.slice(std::max(0.05, 0.25 * first_place_s));
      for (auto& alt : runners_up) {
        if (worse_by_more_than(p, alt, chosen, ctx.to_beat_margin) || (has_to_beat && behind(alt))) continue;
        if (run_ctx.stop.expired()) break;
        const auto records = alt.stages.size();
        runner_up_tries.push_back({alt.stages.back().name, -1});
        auto placed = run_stages(reduce_at + 1, std::move(alt), place_ctx, nullptr, nullptr, nullptr, nullptr);
        detail::add_stage_seconds(run_seconds, placed.stages, records);
        runner_up_tries.back().second = placed.arena;
        if (placed.arena <= limit) {
          runner_up = std::move(placed);
          break;
        }
      }
    }
    if (limited && tl.arena > limit) {
      // The placed arena overshoots (fragmentation, alignment): aim the reducer lower and run it
      // again with the stages after it. Between close targets the fragmentation changes little, so
      // the first tries lower the target by what the placer added above the peak (a secant step);
      // when none fits, one more with a margin of twice the largest overshoot, and then the reducer's
      // least target says whether the budget can be met at all. Then bisection for the highest target
      // that fits, which usually recomputes / offloads least; of all the plans that fit, the best
      // (better_plan: the shorter makespan, else the cheaper step) is kept.
      const auto floor = ctx.cache->op_local();
      // Each rerun's stage times count in the plan's (the time spent in each kind of stage over all
      // runs), and the note says what each aimed at and what it placed.
      const auto kept_records = before_reduce.stages.size();
      detail::add_stage_seconds(run_seconds, tl.stages, 0);
      first_arena = tl.arena;
      first_target = run_ctx.memory_target;
      // Each rerun's searching stages stop at `rerun_stop` (their limits are cut to what is left on
      // it, time_limit_or), set below to the reruns' shared period.
      // The reducer's own stop is kept back by what the stages after it took in the first run (at
      // most half of what is left), so that they still end by `rerun_stop`: a placer that does not
      // search does not look at the clock (greedy after greedy_by_size on adversarial-training-800:
      // greedy used the 0.012 s left on a 0.25 s whole-plan stop, then the placer took 0.026 s).
      deadline rerun_stop = ctx.stop;
      // With a checkpointer and an offloader, both are kept back, by what followed the last of them
      // (the CLI's pipeline has checkpointer `none` before the offloader: kept back by the
      // offloader's own time before, the offloader itself not at all).
      // (The first run's reducers and placers: their whole time and whether one offloads pace the
      // first try under a whole-plan stop, below.)
      std::size_t last_reducer = kept_records;
      double first_rerun_s = 0.0;
      bool offloads = false;
      for (std::size_t k = kept_records; k < tl.stages.size(); ++k) {
        if (tl.stages[k].kind == stage_kind::checkpointer || tl.stages[k].kind == stage_kind::offloader) last_reducer = k;
        first_rerun_s += tl.stages[k].seconds;
        offloads |= tl.stages[k].kind == stage_kind::offloader;
      }
      double after_reducer_s = 0.0;
      for (std::size_t k = last_reducer + 1; k < tl.stages.size(); ++k) after_reducer_s += tl.stages[k].seconds;
      // With `to_beat` (the plan kept so far), the run is placed only if the reducer's plan costs no
      // more than it (better_plan's measures, the arena aside: nothing after the reducer but placers
      // changes them), nor more than the context's plan to beat, which it could not beat either (the
      // second variant set of Inception-v3 b32 at 0.6x and 0.7x of its arena, deterministic: one step
      // each); else it comes back unplaced (arena -1).
      auto rerun = [&](std::int64_t target, const timeline* to_beat = nullptr) {
        run_ctx.memory_target = target;
        run_ctx.stop = rerun_stop;
        plan_context reducer_ctx = run_ctx;
        if (rerun_stop.limited()) reducer_ctx.stop = rerun_stop.kept_back(std::min(after_reducer_s, 0.5 * rerun_stop.seconds_left()));
        std::function<bool(const timeline&)> place_if;
        std::int64_t not_placed = -1;  // the note's code: -1 costlier than the plan kept, -2 than the plan to beat
        if (to_beat)
          place_if = [&p, &ctx, to_beat, &not_placed](const timeline& r) {
            const bool behind_kept = worse_by_more_than(p, r, to_beat_of(p, *to_beat), 0.0);
            const bool behind_beat = worse_by_more_than(p, r, ctx.to_beat, 0.0);
            not_placed = behind_kept ? -1 : -2;
            return !behind_kept && !behind_beat;
          };
        auto out = run_stages(reduce_at, before_reduce, run_ctx, nullptr, nullptr, &reducer_ctx, &place_if);
        detail::add_stage_seconds(run_seconds, out.stages, kept_records);
        reruns.push_back({target, out.placed() ? out.arena : not_placed});
        return out;
      };
      // The reruns (each a whole run of the reducer and what follows) are paced: a run starts while
      // the time left covers one like the longest so far. With a time limit, all of them share one
      // more period of it (before, plan() ran the reducer 8 times: 1.8 s under a 0.2 s limit on
      // DenseNet-121). Without one, the tries run until one fits and the bisection then gets the
      // first run's time, so plan() takes a few runs' time, not eight (10-35 s for an offloader on
      // the batch-32 exports before). Deterministic mode counts runs: 3 tries, the margin, and 4
      // bisection steps up from the least target but 1 up from a try that fitted, as the clock's
      // share (the first run's time, and a rerun skips the scheduler) allows on the batch-32 exports.
      const double steps_limit = ctx.time_limit_or(-1.0);
      const bool timed = steps_limit > 0;
      const double first_run_s = std::chrono::duration<double>(deadline::clock::now() - run_began).count();
      // Under a whole-plan stop, the tries end early enough to leave the least target's run the first
      // run's time (at most half of what is left).
      const auto tries_until = whole_stop ? deadline::after(steps_limit).kept_back(std::min(first_run_s, 0.5 * ctx.stop.seconds_left()))
                                          : deadline::after(timed ? steps_limit : -1.0);
      // Timed, the reruns' stages get what is left of that one period, not a whole limit each: the
      // pacer alone let a run that started in time take its whole limit, and the margin's run was
      // not paced, so a searching checkpointer's runs summed to three periods and more (monet_greedy
      // on SqueezeNet-1.0 b32 at 0.25 s: 4 runs, 0.72 s).
      if (timed) rerun_stop = tries_until;
      // Under a whole-plan stop the first try too starts only where the tries' window covers what a
      // rerun cannot cut short: the placers' time in the first run (a greedy placement does not look
      // at the clock), and with an offloader its time too (its simulations -- the choice and the
      // final build -- run whatever its clock says). A try that starts short of that ends past the
      // window and leaves the margin's run no time: on adversarial-training-800 at a 0.25 s stop,
      // `refined` made 3 runs of about 0.1 s (0.317 s; now the margin's run at once, 0.247 s). For a
      // checkpointer only the placers' part counts: its search is cut to the window (seeded with its
      // whole first run, the default checkpointer on RegNet-Y-400MF b32 at that stop went to the
      // margin, whose plan overshot, and the least target's run took plan() to 0.30 s). The later
      // tries are paced by the tries.
      step_pacer pace(tries_until, !whole_stop ? 0.0 : offloads ? first_rerun_s : after_reducer_s);
      std::int64_t bad = std::min(limit, tl.peak);  // a target known to overshoot
      std::int64_t ok = -1;                         // the highest target known to fit
      timeline fits;
      std::int64_t best_arena = tl.arena;
      auto guess = std::max(floor, bad - (tl.arena - limit));
      std::int64_t most_over = tl.arena - limit;  // the largest overshoot seen
      for (int i = 0; i < 3 && guess > floor && guess < bad && pace.next(); ++i) {
        auto again = rerun(guess, runner_up.placed() ? &runner_up : nullptr);
        if (!again.placed()) {
          // It costs more than the runner-up that fitted, which is kept for now; the lower targets
          // recompute more, and the bisection looks above this one, as above a try that fitted
          // (ShuffleNet-V2 b32 at 0.7x: a plan aimed between it and the budget, 8.30 %, beat the
          // runner-up's 8.71 %).
          ok = guess;
          fits = std::move(runner_up);
          kept_runner_up = true;
          break;
        }
        best_arena = std::min(best_arena, again.arena);
        if (again.arena <= limit) {
          ok = guess;
          fits = std::move(again);
          break;
        }
        most_over = std::max(most_over, again.arena - limit);
        // From the peak the reducer reached, not the target it was given: a reducer stops below its
        // target by up to a step's bytes, and the target less the overshoot then asked for the same plan
        // (monet_greedy on SqueezeNet-1.0 b32, greedy_by_size adding 5 %: aimed at 780 and 766 MB,
        // reached 763 MB and placed 804 MB both times for an 803 MB budget, then fell to the least target).
        bad = std::min(guess, again.peak);
        guess = std::max(floor, bad - (again.arena - limit));
      }
      // No try fitted (the clock or the three tries ran out): the margin before the least target,
      // which recomputes / offloads nearly everything. When the clock stopped the tries after one,
      // plan() went straight there: ShuffleNet-V2 b32 at 0.7x with --time-limit 4 (each placement
      // 4 s) recomputed 44 % of a step; the margin's target fits and recomputes 8.3 %, in the same 12 s.
      // (Compared before doubling: sizes near 2^62 must not overflow.)
      const auto margin = most_over < (bad - floor) / 2 ? std::min(guess, bad - 2 * most_over) : floor;
      if (ok < 0 && runner_up.placed()) {
        // No try fitted, or one cost more than the runner-up that fitted: it is the plan that fits.
        ok = first_target;
        fits = std::move(runner_up);
        kept_runner_up = true;
      }
      // Timed, the margin's run and the least target's share one window of their own, at least the
      // first run's time (at most one limit), the margin the first half of it: the least target says
      // whether the budget can be met at all, and a searching checkpointer cut to its first result
      // may miss a target it can reach. Run in what was left of the tries' period, the margin got
      // nothing and placed far above the budget (EfficientNet-B0 b1 at a 0.25 s stop: 99 MB for a
      // 88 MB budget), so plan() fell to the least target. That makes three periods at most, and the
      // third only where no try fitted.
      // Under a whole-plan stop, the window is all that is left on it.
      deadline last_window = ctx.stop;
      if (ok < 0 && timed && !whole_stop)
        last_window = ctx.stop.slice(std::max(tries_until.seconds_left(), std::min(steps_limit, first_run_s)));
      if (ok < 0 && margin > floor) {
        if (timed) rerun_stop = last_window.slice(0.5 * last_window.seconds_left());
        auto again = rerun(margin);
        best_arena = std::min(best_arena, again.arena);
        if (again.arena <= limit) {
          ok = margin;
          fits = std::move(again);
        } else {
          bad = std::min(margin, again.peak);
        }
      }
      if (ok < 0) {
        double least_seconds = -1.0;
        if (timed) {
          rerun_stop = last_window;
          least_seconds = rerun_stop.seconds_left();
        }
        auto least = rerun(floor);
        if (least.arena > limit && offloads) {
          // The last resort: the offloaders offload every value (plan_context::offload_fill = 1).
          // Their fastest choice that meets the least target in the model may not place within it,
          // where the choice that moves most does (tests/io/data/chain6.json at its floor). Then up to
          // three runs bisect the fill between their own choice (0, placed above) and every value, for
          // the least that still places within: a faster plan, moving less (the first fill known to
          // place within, else 1, is the upper end; the fastest plan that fits is kept).
          // (A refusal there, e.g. above the host limit, leaves the least target's refusal to stand.)
          const double fill_was = run_ctx.offload_fill;
          auto at_fill = [&](double fill) {
            run_ctx.offload_fill = fill;
            timeline out;
            try {
              out = rerun(floor);
            } catch (const error& e) {
              if (!detail::is_refusal(e)) throw;
            }
            run_ctx.offload_fill = fill_was;
            if (out.placed()) best_arena = std::min(best_arena, out.arena);
            return out;
          };
          if (auto all = at_fill(1.0); all.placed() && all.arena <= limit) least = std::move(all);
          detail::bisect_offload_fill(
              [&](double fill) {
                auto some = at_fill(fill);
                const bool fits = some.placed() && some.arena <= limit;
                if (fits && (least.arena > limit || better_plan(p, some, p, least))) least = std::move(some);
                return fits;
              },
              [&] { return ctx.deterministic || !rerun_stop.expired(); });
        }
        if (least.arena > limit) {
          std::string clock_note;
          if (timed && least_seconds < first_run_s)
            clock_note = "; the clock left the last run " + number_text(least_seconds) + " s, less than the first run's " +
                         number_text(first_run_s) + " s (a longer time limit or a later stop may find a plan)";
          // Where the stages recomputed and offloaded nothing even at the least target (e.g. `none`,
          // which `--capacity` alone runs), the bound that binds is the one for plans that do not:
          // lower_bound_peak, valid for every order.
          std::string order_note;
          if (!least.has_recompute_or_transfer_steps())
            if (const auto ob = ctx.cache->order_bound(ctx.lower_bound_max_ops).bytes; ob > limit)
              order_note = "; the stages recomputed and offloaded nothing, and without that no order needs less than " + detail::bytes_text(ob) +
                           " (lower_bound_peak)";
          throw error(errc::infeasible, "'" + p.name() + "': no plan fits " + detail::limit_text(ctx, limit) +
                                            ": the smallest arena memplan reached is " +
                                            detail::bytes_text(std::min(best_arena, least.arena)) +
                                            ", and no plan of any kind needs less than " + detail::bytes_text(floor) +
                                            " (resident bytes plus the largest single op's inputs, outputs and workspace)" +
                                            detail::recompute_floor_text(p, limit, shape.has_offloader) + order_note + clock_note);
        }
        ok = floor;
        fits = std::move(least);
      }
      if (timed) rerun_stop = tries_until;  // the bisection's steps: what is left of the period
      tl = std::move(fits);
      kept_target = ok;
      // Untimed, a bisection up from the least target (which recomputes / offloads most) runs its
      // steps whatever they take; one up from a try that fitted gets the first run's time.
      const bool from_floor = ok == floor;
      const auto bisect_until = timed || ctx.deterministic || from_floor ? tries_until
                                                                         : deadline::after(std::max(first_run_s, 0.05));
      step_pacer bisect_pace = timed ? pace : step_pacer(bisect_until);
      // (Deterministic, 4 steps from a try that fitted made Inception-v3 b32 under an offload budget of
      // 0.6x its arena six runs and 18 s, against the clock's three and 6 s.)
      const int bisect_steps = ctx.deterministic && !from_floor ? 1 : 4;
      for (int i = 0; i < bisect_steps && bad - ok > std::max<std::int64_t>(1, limit / 1000) && bisect_pace.next(); ++i) {
        const auto mid = ok + (bad - ok) / 2;
        // Placed only if it may beat the plan kept: a plan that costs more would not be kept even if
        // it fitted, and its placement is the run's longest part where the arena is tight (Inception-v3
        // b32 at 0.6x of its arena: 0.42 s of exact search for a plan aimed 1.5 % higher that fitted
        // and cost more). The bisection then goes on above it, as above a target that fitted (the three
        // it skipped on the batch-32 exports had all fitted when they were placed); below it, as below
        // one that overshot, it missed the cheaper plans aimed higher (ResNet-18 b32 at 0.6x: 7.22 %
        // recompute overhead, not 7.12 %).
        auto again = rerun(mid, &tl);
        if (!again.placed() || again.arena <= limit) {
          ok = mid;
          // The cheapest plan that fits is kept, not the one aimed highest: a reducer's cost is not
          // monotone in its target (the default checkpointer picks among its members' plans): at 0.4x
          // of ResNet-50 b32's arena the plan aimed highest made a step 0.7 % slower than one aimed
          // 2 % lower (core/implementations.hpp: better_plan; docs/recompute.md).
          if (again.placed() && better_plan(p, again, p, tl)) {
            tl = std::move(again);
            kept_target = mid;
            kept_runner_up = false;
          }
        } else {
          bad = again.peak > ok ? std::min(mid, again.peak) : mid;  // as in the tries: from the peak reached
        }
      }
    }
  } else {
    if (limited && tl.arena > limit)
      throw error(errc::infeasible, "'" + p.name() + "': the plan needs an arena of " + detail::bytes_text(tl.arena) +
                                        ", above the limit of " + detail::bytes_text(limit) +
                                        " (no order needs less than " + detail::bytes_text(ctx.cache->order_bound(ctx.lower_bound_max_ops).bytes) +
                                        "; add a checkpointer to recompute activations)");
  }
  if (!tl.placed()) throw error(errc::invalid_plan, "the pipeline '" + pipeline_name + "' did not place the timeline");

  memory_plan mp{std::move(tl), {}};
  mp.alternatives.clear();  // the scheduler's other orders, where no stage took them up (an offloader)
  mp.stats = timeline_stats(p, mp);
  if (!reruns.empty() || !runner_up_tries.empty()) {
    // The stage seconds are the time spent in each kind of stage over all the runs, and a note says
    // why they reran and what each placed.
    mp.stats.schedule_seconds = run_seconds[static_cast<std::size_t>(stage_kind::scheduler)];
    mp.stats.checkpoint_seconds = run_seconds[static_cast<std::size_t>(stage_kind::checkpointer)];
    mp.stats.offload_seconds = run_seconds[static_cast<std::size_t>(stage_kind::offloader)];
    mp.stats.place_seconds = run_seconds[static_cast<std::size_t>(stage_kind::placer)];
    std::string note = "budget: aimed at " + detail::bytes_text(first_target) + ", the placed arena was " + detail::bytes_text(first_arena) +
                       ", above the limit of " + detail::bytes_text(limit);
    if (!runner_up_tries.empty()) {
      note += "; the reducer's runners-up at that target placed:";
      for (std::size_t i = 0; i < runner_up_tries.size(); ++i)
        note += (i ? ", " : " ") + runner_up_tries[i].first + " (arena " + std::to_string(runner_up_tries[i].second) + ")";
    }
    if (!reruns.empty()) {
      note += std::string("; the ") +
              (!shape.has_offloader ? "checkpointer and the stages after it"
               : shape.has_checkpointer ? "checkpointer, the offloader and the stages after them"
                                                           : "offloader and the stages after it") +
              " ran " + std::to_string(reruns.size()) + " more time" + (reruns.size() > 1 ? "s" : "") + ", aimed at";
      for (std::size_t i = 0; i < reruns.size(); ++i)
        note += (i ? ", " : " ") + std::to_string(reruns[i].first) +
                (reruns[i].second >= 0   ? " (arena " + std::to_string(reruns[i].second) + ")"
                 : reruns[i].second == -1 ? " (not placed: it cost more than the plan kept)"
                                          : " (not placed: it cost more than the plan to beat)");
    }
    note += (kept_runner_up ? "; kept the runner-up " + runner_up_tries.back().first : "; kept the plan aimed at " + std::to_string(kept_target)) +
            " (stage seconds are over all " + std::to_string(reruns.size() + 1) + " runs" + (runner_up_tries.empty() ? "" : " and the runners' placements") +
            ")";
    mp.stats.notes.push_back(std::move(note));
  }
  const bool reduced = has_reducer && mp.has_recompute_or_transfer_steps();
  // The bound the report certifies against: any order (no recomputation), or any plan at all.
  std::int64_t lb = 0;
  if (reduced) {
    lb = ctx.cache->op_local();
    mp.stats.lower_bound_by = "op-local";
  } else {
    lb = ctx.cache->order_bound(ctx.lower_bound_max_ops).bytes;
    mp.stats.lower_bound_by = "lower_bound_peak";
    if (mp.order_lower_bound > lb) {
      lb = mp.order_lower_bound;
      mp.stats.lower_bound_by = "scheduler";
    }
    if (ctx.cut_bound)
      if (const auto cut = detail::cut_bound_above(p, mp.stats.peak, lb, ctx); cut > lb) {
        lb = cut;
        mp.stats.lower_bound_by = "min-cut";
      }
  }
  set_lower_bound(mp.stats, lb);
  if (!reduced)
    if (const auto fixed = chosen_impls_lower_bound(p, mp, ctx.lower_bound_max_ops); fixed && *fixed > lb)
      mp.stats.impl_lower_bound = *fixed;  // verify checks it is not above the peak
  if (ctx.compute_given_peak) mp.stats.given_peak = ctx.cache->given_peak();
  if (ctx.deterministic) {
    // Wall-clock figures are the one part of a plan that differs between runs: leave them out so
    // that equal inputs give equal plans (operator==) and byte-identical plan files.
    mp.stats.schedule_seconds = mp.stats.checkpoint_seconds = mp.stats.offload_seconds = mp.stats.place_seconds = 0.0;
  }
  verify_or_throw(p, mp);
  return mp;
}

}  // namespace detail

template <stage S>
memory_plan plan(const problem& p, const S& s, plan_context ctx = {}) {
  static_assert(contains_kind<S>(stage_kind::placer),
                "memplan::plan: the pipeline has no placer -- end it with `| place::default_placer{}` (or call olla::optimize)");
  const auto stages = detail::as_tuple(s);
  const detail::stages_runner run = [&stages, &p](std::size_t from, timeline tl, const plan_context& c, timeline* before_reduce,
                                                  std::size_t* reduce_at, const plan_context* start_ctx,
                                                  const std::function<bool(const timeline&)>* place_if) {
    return detail::run_from(stages, from, p, std::move(tl), c, before_reduce, reduce_at, start_ctx, place_if);
  };
  return detail::plan_stages(p, detail::shape_of<S>(), s.name(), run, std::move(ctx));
}

// Certifies mp's lower bound with the min-cut bound afterwards, as plan() does with
// plan_context::cut_bound (ctx's limits; its cut_bound flag is not read): for callers that plan
// several problems and keep one, so that only the kept plan pays for the bound.
// plan_choosing_variants' two variant sets are such a case: `memplan plan` plans both without it and
// certifies the one it keeps (googlenet-train-b32 with defaults: 2.0-2.2 -> 1.5-1.8 s, the same report).
// Nothing changes for a plan that recomputes or offloads (its bound is the op-local one) or whose
// bound meets its peak; a bound for the plan's implementations (stats.impl_lower_bound) that the cut
// reaches is dropped, as plan() reports it only when above the plan's bound. Verified again.
inline void certify_with_cut_bound(const problem& p, memory_plan& mp, const plan_context& ctx = {}) {
  if (mp.has_recompute_or_transfer_steps()) return;
  const auto cut = detail::cut_bound_above(p, mp.stats.peak, mp.stats.lower_bound, ctx);
  if (cut <= mp.stats.lower_bound) return;
  set_lower_bound(mp.stats, cut);
  mp.stats.lower_bound_by = "min-cut";
  if (mp.stats.impl_lower_bound >= 0 && mp.stats.impl_lower_bound <= cut) mp.stats.impl_lower_bound = -1;
  verify_or_throw(p, mp);
}

// Any conforming graph: adapt it (sizes/costs/workspaces from the graph's CPOs) and plan.
template <op_graph G, stage S>
memory_plan plan(const G& g, const S& s, const plan_context& ctx = {}) {
  return plan(make_problem(g), s, ctx);
}

// Any conforming graph with lookups for sizes / costs / workspaces kept outside the graph.
template <op_graph G, class Bytes, class Cost, class Workspace, stage S>
memory_plan plan(const G& g, const lookups<Bytes, Cost, Workspace>& lk, const S& s, const plan_context& ctx = {}) {
  return plan(make_problem(g, lk), s, ctx);
}

}  // namespace memplan
