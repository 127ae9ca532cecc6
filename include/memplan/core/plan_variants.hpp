#pragma once
// plan_choosing_variants -- variants (core/variants.hpp) chosen by the plan they give at the budget.
//
// Variants that cost nothing at every step (choose_variants' default rule) are always taken. Those
// that only keep the given order's peak from rising (variant_rule::no_peak_higher) trade memory
// between steps: e.g. the exporter's from_concatenation variant lets a ReLU backward read its slice of
// a concatenation instead of the branch output it saved, so the branch output is freed after the
// forward concatenation but the concatenation lives until the last of those backward ops. Whether that
// helps depends on where the budget binds (GoogLeNet at batch 32: the recompute overhead at 0.4x of the
// peak falls from 11.8 to 10.2 %, at 0.5x it rises from 7.7 to 8.0 %). So, as MONeT chooses an
// implementation's dependencies together with the checkpointing schedule (§3, eq. 8), both variant sets
// are planned with the same stages and the better plan is kept:
//   1. the one that meets the context's memory limit (the other threw errc::infeasible);
//   2. with a timed plan (an offloader), the shorter makespan;
//   3. the lower cost of the whole step: its op and recompute steps, each at its implementation's cost;
//   4. the smaller arena; on a tie, the no-step-higher set (fewer rewrites).
// (Rules 2-4 are better_plan's, core/implementations.hpp.)
// Both are planned only when the two sets differ. Then, when the second set's own variants fall into
// two groups or more, a coordinate search goes finer than whole sets (MONeT chooses per op): a group is
// the variants that read the same tensor instead of their op's own (e.g. one concatenation, read by
// the ReLU backward ops of its branches), and each group in op order is switched on or off alone, its
// plan made, and the switch kept when the plan is better by the rules above; at most two passes, and
// within variant_search's limits (the time counts from the first whole set's plan; a plan starts only
// while the time left covers the longest of the search's plans so far, or at first the shorter of the
// two whole sets'). SqueezeNet-1.0 at batch 32, half the traced graph's planned peak (`memplan plan`,
// defaults): recompute overhead 12.5 -> 11.3 % (docs/monet.md).
//
//   const auto memo = std::make_shared<memplan::stage_memo>();  // shared by the sets' plans
//   auto r = memplan::plan_choosing_variants(graph, [&](const memplan::problem& q) {
//     return memplan::plan(q, memplan::schedule::default_scheduler{} | memplan::remat::default_checkpointer{} |
//                                 memplan::place::default_placer{}, {.budget = B, .memo = memo});
//   });
//   // r.variants.rewritten is the problem r.plan plans; r.variants.taken names the variants.
// With plan_context::cut_bound, plan without it and certify the kept plan afterwards
// (certify_with_cut_bound(r.variants.rewritten, r.plan, ctx), core/pipeline.hpp): one bound, not one per set.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <memplan/base/deadline.hpp>
#include <memplan/base/error.hpp>
#include <memplan/base/format.hpp>
#include <memplan/core/analysis.hpp>
#include <memplan/core/implementations.hpp>
#include <memplan/core/plan.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/variants.hpp>

namespace memplan {

// The limits of plan_choosing_variants' group search (above).
struct variant_search {
  // Wall time (seconds), counted from the first whole set's plan: a plan of the search starts only
  // while the time left covers what it may take (above). < 0: no time limit (max_plans alone bounds
  // the work, as deterministic mode needs); 0: no group search.
  double time_limit_s = 2.0;
  int max_plans = 16;  // plans the search makes at most (0: none)
  // And at most this many ops planned in all (each plan counts its problem's ops): work counted, not
  // timed, so that deterministic mode stays near the whole sets' time on large graphs. Measured with
  // --deterministic at half the traced peak (batch 32): SqueezeNet-1.0 (190 ops) gets its 16 plans,
  // 1.1 s in all; GoogLeNet (846 ops, 5-7 s a plan there) took 83-115 s with 16 plans, 4 now.
  std::int64_t max_ops_planned = 4000;
};

struct variant_plan {
  variant_rewrite variants;  // what was taken; variants.rewritten is the problem `plan` plans
  memory_plan plan;
  std::string note;          // which sets were compared and why this one, in words (empty: one set)
};

namespace detail {
// The groups of the variants in `loose` but not in `strict`: those that read the same tensor instead
// of their op's own (keyed by its name; a variant that reads none of another's is a group of its own),
// in op order of each group's first variant.
inline std::vector<std::vector<variant_choice>> variant_groups(const problem& p, const std::vector<variant_choice>& strict,
                                                               const std::vector<variant_choice>& loose) {
  std::vector<std::vector<variant_choice>> groups;
  std::map<std::string, std::size_t> group_of;
  for (const auto& c : loose) {
    if (std::find(strict.begin(), strict.end(), c) != strict.end()) continue;
    std::string key = "op " + c.op;
    if (const auto o = p.find_op(c.op))
      for (const auto& v : p.variants(*o)) {
        if (v.name != c.implementation) continue;
        for (const auto& in : v.inputs) {
          const auto own = p.inputs(*o);
          if (std::none_of(own.begin(), own.end(), [&](tensor_id t) { return p.tensor_name(t) == in; })) {
            key = "tensor " + in;
            break;
          }
        }
        break;
      }
    const auto [it, added] = group_of.try_emplace(key, groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(c);
  }
  return groups;
}

// `taken` (any order) applied to p, as choose_variants reports it: in op order, with the ops removed
// and the given order's peak after.
inline variant_rewrite rewrite_with(const problem& p, std::vector<variant_choice> taken, std::int64_t given_peak_before) {
  std::vector<std::pair<op_id, variant_choice>> by_op;
  for (auto& c : taken) by_op.emplace_back(p.find_op(c.op).value_or(no_id), std::move(c));
  std::sort(by_op.begin(), by_op.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  variant_rewrite r{p, {}, {}, given_peak_before, 0, {}};
  for (auto& [o, c] : by_op) r.taken.push_back(std::move(c));
  r.rewritten = apply_variants(p, r.taken, &r.removed_ops);
  auto order = given_order(r.rewritten);
  if (!is_topological(r.rewritten, order)) order = topological_order(r.rewritten);
  r.given_peak_after = profile(r.rewritten, order).peak;
  return r;
}
}  // namespace detail

// `make_plan(const problem&) -> memory_plan` plans one rewrite (it runs up to 2 + search.max_plans
// times; give each run a context of its own, e.g. no shared analysis cache, but one stage_memo for
// all of them, so that their stages reuse each other's tables: core/context.hpp). A make_plan that also
// takes a `const deadline&` gets the group search's deadline with each of the search's plans (never
// for the two whole sets): put it in its context's `stop` (core/context.hpp) and every searching
// stage of that plan ends by it, so the search keeps its time limit even when one plan runs much
// longer than those before it (SqueezeNet-1.0 at 0.4x: one plan of 2.6 s where the others took
// 0.1-0.3 s, the search 3.3 s for its 2 s before). One that takes `(const problem&, const deadline&,
// const plan_to_beat&)` also gets, with every plan after the first, the best plan so far: put it in
// its context's `to_beat`, and a plan whose budget loop would only rerun to lose stops early
// (plan_context::to_beat; its errc::not_better counts as a plan that lost).
template <class MakePlan>
variant_plan plan_choosing_variants(const problem& p, MakePlan&& make_plan, const variant_search& search = {}) {
  constexpr bool with_to_beat = std::is_invocable_v<MakePlan&, const problem&, const deadline&, const plan_to_beat&>;
  static_assert(std::is_invocable_v<MakePlan&, const problem&> || std::is_invocable_v<MakePlan&, const problem&, const deadline&> || with_to_beat,
                "plan_choosing_variants: make_plan must be callable as make_plan(const problem&), "
                "make_plan(const problem&, const deadline&) or make_plan(const problem&, const deadline&, const plan_to_beat&), "
                "returning a memory_plan");
  const auto plan_within = [&](const problem& q, const deadline& until, const plan_to_beat& beat) -> memory_plan {
    if constexpr (with_to_beat) return make_plan(q, until, beat);
    else if constexpr (std::is_invocable_v<MakePlan&, const problem&, const deadline&>) return make_plan(q, until);
    else return make_plan(q);
  };
  auto strict = choose_variants(p, variant_rule::no_step_higher);
  auto loose = choose_variants(p, variant_rule::no_peak_higher);
  if (loose.taken == strict.taken) {
    auto mp = plan_within(strict.rewritten, deadline::never(), {});
    return {std::move(strict), std::move(mp), {}};
  }
  const auto strict_taken = strict.taken, loose_taken = loose.taken;
  const auto began = deadline::clock::now();
  const auto since = [](deadline::clock::time_point t0) { return std::chrono::duration<double>(deadline::clock::now() - t0).count(); };
  // A plan, or nothing when it does not meet the limit (its error kept in `failed`) or, with a plan to
  // beat, was not planned to meet it (errc::not_better: why, in `not_better`, from plan()'s "not
  // planned" on, or a make_plan's own whole message).
  const auto try_plan = [&](const problem& q, const deadline& until, const plan_to_beat& beat, std::exception_ptr* failed = nullptr,
                            std::string* not_better = nullptr) -> std::optional<memory_plan> {
    try {
      return plan_within(q, until, beat);
    } catch (const error& e) {
      if (e.code() != errc::infeasible && e.code() != errc::not_better) throw;
      if (failed) *failed = std::current_exception();
      if (not_better && e.code() == errc::not_better) {
        *not_better = e.what();
        if (const auto at = not_better->find("not planned"); at != std::string::npos) not_better->erase(0, at);
        if (not_better->empty()) *not_better = to_string(errc::not_better);
      }
      return std::nullopt;
    }
  };
  std::exception_ptr strict_failed;
  auto a = try_plan(strict.rewritten, deadline::never(), {}, &strict_failed);  // empty: that set's plan does not meet the limit
  const double strict_s = since(began);
  // The second set with the first's plan to beat (when it has one): it is not placed or rerun where
  // its first run is already well behind (plan_context::to_beat).
  std::string b_not_better;
  auto b = try_plan(loose.rewritten, deadline::never(), a ? to_beat_of(strict.rewritten, *a) : plan_to_beat{}, nullptr, &b_not_better);
  if (!a && !b) std::rethrow_exception(strict_failed);
  // What the next plan of the search may take: the shorter of the two above at first (one may have
  // re-targeted its reducer, as SqueezeNet's second set does: 0.85 s against 0.05 s for every other
  // plan), then the longest of the search's own.
  double next_s = std::min(strict_s, since(began) - strict_s);
  const auto what = [](const variant_rewrite& v) { return std::to_string(v.taken.size()) + " variants"; };
  std::string note = "variants: planned with " + what(strict) + " (free at every step) and with " + what(loose) +
                     " (the given order's peak not higher); ";
  const bool second = b && (!a || better_plan(loose.rewritten, *b, strict.rewritten, *a));
  if (second) note += a ? "kept the second (the better plan)" : "kept the second (the first does not meet the limit)";
  else note += b                       ? "kept the first (the better plan)"
               : !b_not_better.empty() ? "kept the first (the second " + b_not_better + ")"
                                       : "kept the first (the second does not meet the limit)";
  variant_plan best = second ? variant_plan{std::move(loose), std::move(*b), {}} : variant_plan{std::move(strict), std::move(*a), {}};

  // The group search (see the top of this file), from the better whole set.
  const auto groups = detail::variant_groups(p, strict_taken, loose_taken);
  if (groups.size() < 2 || search.max_plans <= 0 || search.time_limit_s == 0.0) {
    best.note = std::move(note);
    return best;
  }
  std::vector<std::uint8_t> on(groups.size(), second ? 1 : 0);
  const auto set_of = [&] {
    auto t = strict_taken;  // always taken
    for (std::size_t g = 0; g < groups.size(); ++g)
      if (on[g]) t.insert(t.end(), groups[g].begin(), groups[g].end());
    return t;
  };
  const auto same_set = [](std::vector<variant_choice> x, std::vector<variant_choice> y) {
    const auto by_name = [](const variant_choice& l, const variant_choice& r) {
      return std::tie(l.op, l.implementation) < std::tie(r.op, r.implementation);
    };
    std::sort(x.begin(), x.end(), by_name);
    std::sort(y.begin(), y.end(), by_name);
    return x == y;
  };
  int plans = 0, kept = 0;
  std::int64_t ops_planned = 0;
  // The search's own deadline, counted from the first whole set's plan like its time limit.
  const auto search_until = deadline::after(search.time_limit_s > 0 ? std::max(0.0, search.time_limit_s - since(began)) : -1.0);
  std::string stopped;  // which limit stopped the search, in words (empty: none)
  for (int pass = 0; pass < 2 && stopped.empty(); ++pass) {
    bool improved = false;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (plans == search.max_plans) stopped = std::to_string(search.max_plans) + " plans";
      else if (ops_planned + p.num_ops() > search.max_ops_planned)
        stopped = std::to_string(search.max_ops_planned) + " ops planned (the graph has " + std::to_string(p.num_ops()) + ")";
      else if (search.time_limit_s > 0 && since(began) + next_s > search.time_limit_s)
        stopped = number_text(search.time_limit_s) + " s (" + number_text(since(began)) + " s spent, the next plan may take " + number_text(next_s) + " s)";
      if (!stopped.empty()) break;
      on[g] ^= 1;
      auto taken = set_of();
      if (same_set(taken, strict_taken) || same_set(taken, loose_taken)) {  // a whole set, planned above
        on[g] ^= 1;
        continue;
      }
      std::optional<variant_rewrite> r;
      try {
        r = detail::rewrite_with(p, std::move(taken), best.variants.given_peak_before);
      } catch (const error&) {  // these groups together do not run (a cycle): not a candidate
        on[g] ^= 1;
        continue;
      }
      if (plans++ == 0) next_s = 0.0;
      ops_planned += r->rewritten.num_ops();
      const auto t0 = deadline::clock::now();
      auto mp = try_plan(r->rewritten, search_until, to_beat_of(best.variants.rewritten, best.plan));
      next_s = std::max(next_s, since(t0));
      if (mp && better_plan(r->rewritten, *mp, best.variants.rewritten, best.plan)) {
        best.variants = std::move(*r);
        best.plan = std::move(*mp);
        improved = true;
        ++kept;
      } else {
        on[g] ^= 1;
      }
    }
    if (!improved) break;
  }
  std::size_t groups_on = 0;
  for (auto x : on) groups_on += x;
  if (plans == 0 && !stopped.empty()) {
    note += "; the " + std::to_string(groups.size()) + " groups of variants were not searched one at a time: the search's limit of " + stopped;
    best.note = std::move(note);
    return best;
  }
  note += "; then " + std::to_string(groups.size()) + " groups of variants switched one at a time (" + std::to_string(plans) +
          (plans == 1 ? " plan" : " plans") + (stopped.empty() ? "" : ", stopped at the search's limit of " + stopped) + "): " +
          (kept == 0 ? "none better, so " + (second ? "all " + std::to_string(groups.size()) + " groups stay taken (the second whole set)" : std::string("none taken"))
                     : std::to_string(groups_on) + " of " + std::to_string(groups.size()) + " groups taken, " +
                           std::to_string(best.variants.taken.size()) + " variants in all");
  best.note = std::move(note);
  return best;
}

}  // namespace memplan
