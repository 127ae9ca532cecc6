#pragma once
// best_of{a, b, ...}: runs several stages of one kind on the same input and keeps the best result
// (ties: the first listed). It has the shape of its members, so it is a stage of their kind:
//   * schedulers   -> a scheduler: the lowest peak; the largest lower bound of all members;
//   * placers      -> a buffer placer: the smallest arena (members run without the capacity, which
//                     is enforced once on the winner; members that refuse the size of the problem,
//                     errc::limit_exceeded, are skipped and listed);
//   * checkpointers / offloaders -> a timeline stage: first the results whose peak meets the target,
//                     then the least added cost (recompute cost; makespan for offloaders), then the
//                     lowest peak.
// The winner's name is reported as the policy; the note lists every member's figure.
// Available as schedule::best_of, place::best_of, remat::best_of, offload::best_of (one template).
#include <algorithm>
#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include <memplan/base/deadline.hpp>
#include <memplan/base/error.hpp>
#include <memplan/core/buffer.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/plan.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/timeline.hpp>

namespace memplan {

template <stage... S>
  requires(sizeof...(S) >= 1)
class best_of {
  using first = std::tuple_element_t<0, std::tuple<S...>>;

 public:
  static constexpr stage_kind kind = detail::kind_of<first>();
  static_assert(((detail::kind_of<S>() == kind) && ...), "memplan::best_of: all members must be stages of one kind");
  static_assert((!detail::is_pipeline<S> && ...), "memplan::best_of: members are single stages, not pipelines");

  explicit best_of(S... s) : members_(std::move(s)...) {}

  [[nodiscard]] std::string name() const {
    std::string n = "best_of(";
    std::apply([&](const auto&... s) { ((n += std::string(s.name()) + ","), ...); }, members_);
    n.back() = ')';
    return n;
  }
  [[nodiscard]] const std::tuple<S...>& members() const noexcept { return members_; }

  // ---- schedulers ----
  [[nodiscard]] schedule_result run(const problem& p, const plan_context& ctx = {}) const
    requires(scheduler<S> && ...)
  {
    schedule_result best;
    bool have = false;
    std::string note;
    std::int64_t lb = 0;
    const auto clock = deadline::after(ctx.time_limit_or(-1.0));
    step_pacer pace(clock);
    std::apply([&](const auto&... s) { (consider_order(p, within(ctx, clock, pace, have, note, s), s, best, have, note, lb), ...); }, members_);
    best.lower_bound = std::max(best.lower_bound, lb);
    if (best.lower_bound > 0 && best.peak == best.lower_bound) best.optimal = true;
    best.note = "best_of: " + note + (best.note.empty() ? "" : "; winner: " + best.note);
    return best;
  }

  // ---- placers ----
  [[nodiscard]] buffer_placement place(const buffer_problem& bp) const
    requires(buffer_placer<S> && ...)
  {
    return place(bp, plan_context{});
  }
  [[nodiscard]] buffer_placement place(const buffer_problem& bp, const plan_context& ctx) const
    requires(buffer_placer<S> && ...)
  {
    validate(bp);
    auto relaxed = bp;
    relaxed.capacity = std::numeric_limits<std::int64_t>::max();
    buffer_placement best;
    bool have = false;
    std::int64_t bound = 0;
    std::string note;
    const auto clock = deadline::after(ctx.time_limit_or(-1.0));
    step_pacer pace(clock);
    std::apply([&](const auto&... s) { (consider_placement(relaxed, within(ctx, clock, pace, have, note, s), s, best, have, bound, note), ...); }, members_);
    if (!have) throw error(errc::limit_exceeded, "best_of: every member refused the problem: " + note);
    best.lower_bound = std::max(bound, best.lower_bound);
    best.optimal = best.optimal || best.arena == best.lower_bound;
    best.note = "best of: " + note;
    if (best.arena > bp.capacity)
      throw error(errc::infeasible, "placer " + best.placer + ": best arena reached " + std::to_string(best.arena) +
                                        " bytes exceeds the capacity " + std::to_string(bp.capacity) + " (lower bound " +
                                        std::to_string(best.lower_bound) + ")");
    if (auto why = check(bp, best)) throw error(errc::invalid_plan, "best_of: " + best.placer + " produced an invalid placement: " + *why);
    return best;
  }

  // ---- checkpointers, offloaders ----
  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const
    requires(timeline_stage<S> && ...)
  {
    timeline best;
    bool have = false;
    std::string note, winner;
    std::optional<error> refused;  // the first member's refusal, thrown when no member gives a timeline
    const auto target = ctx.peak_target();
    const auto clock = deadline::after(ctx.time_limit_or(-1.0));
    step_pacer pace(clock);
    std::apply([&](const auto&... s) { (consider_timeline(p, tl, within(ctx, clock, pace, have, note, s), target, s, best, have, note, winner, refused), ...); }, members_);
    if (!have) {
      if (refused) throw *refused;
      throw error(errc::invalid_argument, "best_of: no member ran");
    }
    best.stages.back().name = winner;
    best.stages.back().note = "best_of: " + note + (best.stages.back().note.empty() ? "" : "; winner: " + best.stages.back().note);
    return best;
  }

 private:
  // The time limit covers the whole best_of: a member after the first starts only while time is left
  // and searches within what is left (nullopt: skipped, with a note).
  // (Paced: a member starts only while the time left covers the longest member so far.)
  template <class P>
  static std::optional<plan_context> within(const plan_context& ctx, const deadline& clock, step_pacer& pace, bool have, std::string& note,
                                            const P& s) {
    auto sub = ctx;
    sub.runners_up = nullptr;  // a member's other plans are not best_of's
    if (!clock.limited()) return sub;
    if (!pace.next() && have) {
      note += (note.empty() ? "" : ", ") + std::string(s.name()) + " skipped (time limit)";
      return std::nullopt;
    }
    sub.time_limit_s = clock.seconds_left();
    return sub;
  }

  template <class P>
  static void consider_order(const problem& p, const std::optional<plan_context>& ctx, const P& s, schedule_result& best, bool& have,
                             std::string& note, std::int64_t& lb) {
    if (!ctx) return;
    auto r = run_scheduler(s, p, *ctx);
    if (r.policy.empty()) r.policy = s.name();
    note += (note.empty() ? "" : ", ") + r.policy + "=" + std::to_string(r.peak);
    lb = std::max(lb, r.lower_bound);
    if (!have || r.peak < best.peak) {
      best = std::move(r);
      have = true;
    }
  }

  template <class P>
  static void consider_placement(const buffer_problem& bp, const std::optional<plan_context>& ctx, const P& s, buffer_placement& best,
                                 bool& have, std::int64_t& bound, std::string& note) {
    if (!ctx) return;
    if (!note.empty()) note += ", ";
    try {
      buffer_placement pl;
      if constexpr (context_placer<P>) pl = s.place(bp, *ctx);
      else pl = s.place(bp);
      if (pl.placer.empty()) pl.placer = s.name();
      note += pl.placer + "=" + std::to_string(pl.arena);
      bound = std::max(bound, pl.lower_bound);
      if (!have || pl.arena < best.arena) {
        best = std::move(pl);
        have = true;
      }
    } catch (const error& e) {
      if (e.code() != errc::limit_exceeded) throw;
      note += std::string(s.name()) + " skipped (" + e.what() + ")";
    }
  }

  // Lexicographic: meets the target, then the added cost, then the peak.
  static bool better_timeline(const problem& p, const timeline& a, const timeline& b, std::int64_t target) {
    const bool fa = a.peak <= target, fb = b.peak <= target;
    if (fa != fb) return fa;
    const auto ca = added_cost(p, a), cb = added_cost(p, b);
    if (ca != cb) return ca < cb;
    return a.peak < b.peak;
  }
  static double added_cost(const problem& p, const timeline& t) {
    if constexpr (kind == stage_kind::offloader) return t.makespan;
    double c = 0.0;
    for (const auto& s : t.steps)
      if (s.kind == step_kind::recompute) c += step_cost(p, s);
    return c;
  }

  template <class P>
  static void consider_timeline(const problem& p, const timeline& in, const std::optional<plan_context>& ctx, std::int64_t target, const P& s,
                                timeline& best, bool& have, std::string& note, std::string& winner, std::optional<error>& refused) {
    if (!ctx) return;
    // A member that refuses (an offloader whose every choice needs more host memory than the host
    // limit) leaves the others their chance: the default offloader failed with its first member's
    // refusal until stop 54.
    timeline r;
    try {
      r = run_stage(s, p, in, *ctx);
    } catch (const error& e) {
      if (e.code() != errc::infeasible) throw;
      note += (note.empty() ? "" : ", ") + std::string(s.name()) + " refused (" + e.what() + ")";
      if (!refused) refused = e;
      return;
    }
    const auto who = r.stages.empty() ? std::string(s.name()) : r.stages.back().name;
    note += (note.empty() ? "" : ", ") + who + "=" + std::to_string(r.peak) + "/" + std::to_string(added_cost(p, r));
    if (!have || better_timeline(p, r, best, target)) {
      best = std::move(r);
      winner = who;
      have = true;
    }
  }

  std::tuple<S...> members_;
};

template <class... S>
best_of(S...) -> best_of<S...>;

namespace schedule { using memplan::best_of; }
namespace remat { using memplan::best_of; }
namespace offload { using memplan::best_of; }
namespace place { using memplan::best_of; }

}  // namespace memplan
