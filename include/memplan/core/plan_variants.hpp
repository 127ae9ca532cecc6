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
// Both are planned only when the two sets differ; a plan is made at most twice.
//
//   auto r = memplan::plan_choosing_variants(graph, [&](const memplan::problem& q) {
//     return memplan::plan(q, memplan::schedule::default_scheduler{} | memplan::remat::default_checkpointer{} |
//                                 memplan::place::default_placer{}, {.budget = B});
//   });
//   // r.variants.rewritten is the problem r.plan plans; r.variants.taken names the variants.
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/core/implementations.hpp>
#include <memplan/core/plan.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/variants.hpp>

namespace memplan {

struct variant_plan {
  variant_rewrite variants;  // what was taken; variants.rewritten is the problem `plan` plans
  memory_plan plan;
  std::string note;          // which sets were compared and why this one, in words (empty: one set)
};

namespace detail {
// Is plan a better than plan b (rules 2-4 above)?
inline bool better_variant_plan(const problem& pa, const memory_plan& a, const problem& pb, const memory_plan& b) {
  if (a.timed && b.timed && a.makespan != b.makespan) return a.makespan < b.makespan;
  const auto ca = total_step_cost(pa, a), cb = total_step_cost(pb, b);
  if (ca != cb) return ca < cb;
  return a.arena < b.arena;
}
}  // namespace detail

// `make_plan(const problem&) -> memory_plan` plans one rewrite (it runs once or twice; give each run a
// context of its own, e.g. no shared analysis cache).
template <class MakePlan>
variant_plan plan_choosing_variants(const problem& p, MakePlan&& make_plan) {
  auto strict = choose_variants(p, variant_rule::no_step_higher);
  auto loose = choose_variants(p, variant_rule::no_peak_higher);
  if (loose.taken == strict.taken) {
    auto mp = make_plan(strict.rewritten);
    return {std::move(strict), std::move(mp), {}};
  }
  std::exception_ptr strict_failed;
  std::optional<memory_plan> a, b;  // empty: that set's plan does not meet the limit
  try {
    a = make_plan(strict.rewritten);
  } catch (const error& e) {
    if (e.code() != errc::infeasible) throw;
    strict_failed = std::current_exception();
  }
  try {
    b = make_plan(loose.rewritten);
  } catch (const error& e) {
    if (e.code() != errc::infeasible) throw;
    if (!a) std::rethrow_exception(strict_failed);
  }
  const auto what = [](const variant_rewrite& v) { return std::to_string(v.taken.size()) + " variants"; };
  std::string note = "variants: planned with " + what(strict) + " (free at every step) and with " + what(loose) +
                     " (the given order's peak not higher); ";
  if (b && (!a || detail::better_variant_plan(loose.rewritten, *b, strict.rewritten, *a))) {
    note += a ? "kept the second (the better plan)" : "kept the second (the first does not meet the limit)";
    return {std::move(loose), std::move(*b), std::move(note)};
  }
  note += b ? "kept the first (the better plan)" : "kept the first (the second does not meet the limit)";
  return {std::move(strict), std::move(*a), std::move(note)};
}

}  // namespace memplan
