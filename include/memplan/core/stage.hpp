#pragma once
// One stage model. A stage is a small copyable value with a name() and a kind -- scheduler,
// checkpointer, offloader or placer -- that turns (problem, timeline, plan_context) into a timeline:
//
//   run_stage(s, p, tl, ctx) -> timeline
//
// Three shapes of policy are stages, so that each is written in the shape natural to it:
//   * a scheduler:  s.run(p, ctx) -> schedule_result        (an order; the timeline is built from it)
//   * a placer:     s.place(bp[, ctx]) -> buffer_placement    (a buffer_problem; offsets written back)
//   * any kind:     s.run(p, tl, ctx) -> timeline, with `static constexpr stage_kind kind = ...`
//                   (checkpointers and offloaders edit the timeline itself)
//
// Stages compose, range-v3-style, into stages: `schedule::X{} | remat::Y{} | offload::Z{} | place::W{}`
// and every sub-sequence of it is a stage too (pipeline<...>, flattened); identity_stage{} is the
// neutral element. Kinds must come in that order, each at most once; misuse fails with a readable
// static_assert. memplan::plan (core/pipeline.hpp) runs a stage and returns a verified memory_plan.
#include <chrono>
#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/base/kinds.hpp>
#include <memplan/core/buffer.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/implementations.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/timeline.hpp>

namespace memplan {

// ---- the three shapes ------------------------------------------------------------------------------

// What a scheduler returns: an order with its peak and evidence.
struct schedule_result {
  std::vector<op_id> order;        // every op once, topological
  std::int64_t peak = 0;           // peak of this order (memory rule)
  std::int64_t lower_bound = 0;    // a valid lower bound on the peak of ANY order (0: none known)
  bool optimal = false;            // peak == proven minimum
  std::string policy;              // the scheduler that produced it (best_of: the winner)
  std::string note;                // fallbacks, limits hit, ... in words
  std::vector<order_alternative> alternatives;  // other orders for the next stage (timeline::alternatives)
};

// A scheduler: s.run(p, ctx) -> schedule_result, or s.run(p) when it needs nothing from the context.
template <class S>
concept context_scheduler = requires(const S& s, const problem& p, const plan_context& c) {
  { s.run(p, c) } -> std::same_as<schedule_result>;
};
template <class S>
concept scheduler = (context_scheduler<S> || requires(const S& s, const problem& p) {
                      { s.run(p) } -> std::same_as<schedule_result>;
                    }) && requires(const S& s) {
  { s.name() } -> std::convertible_to<std::string>;
} && std::copyable<S>;

// Runs a scheduler with the context when it takes one.
template <scheduler S>
schedule_result run_scheduler(const S& s, const problem& p, const plan_context& ctx) {
  if constexpr (context_scheduler<S>) return s.run(p, ctx);
  else return s.run(p);
}

// A buffer placer that also takes the context (time limit, deterministic mode, progress).
template <class P>
concept context_placer = buffer_placer<P> && requires(const P& p, const buffer_problem& bp, const plan_context& c) {
  { p.place(bp, c) } -> std::same_as<buffer_placement>;
};

template <class S>
concept timeline_stage = requires(const S& s, const problem& p, timeline tl, const plan_context& c) {
  { S::kind } -> std::convertible_to<stage_kind>;
  { s.run(p, std::move(tl), c) } -> std::same_as<timeline>;
  { s.name() } -> std::convertible_to<std::string>;
} && std::copyable<S>;

// The neutral stage: returns its timeline unchanged. `identity_stage{} | s` is `s`.
struct identity_stage {
  [[nodiscard]] std::string name() const { return "identity"; }
};

template <class... S>
struct pipeline;

namespace detail {
template <class T>
inline constexpr bool is_pipeline = false;
template <class... S>
inline constexpr bool is_pipeline<pipeline<S...>> = true;
}  // namespace detail

template <class S>
concept stage = scheduler<S> || buffer_placer<S> || timeline_stage<S> || std::same_as<S, identity_stage> || detail::is_pipeline<S>;

// ---- kinds ---------------------------------------------------------------------------------------------

namespace detail {
template <class S>
constexpr stage_kind kind_of() {
  if constexpr (timeline_stage<S>) return S::kind;
  else if constexpr (scheduler<S>) return stage_kind::scheduler;
  else return stage_kind::placer;
}
// Bit set of the kinds a stage contains (pipelines: all of theirs).
template <class S>
struct kind_bits {
  static constexpr unsigned value = 1u << static_cast<unsigned>(kind_of<S>());
};
template <>
struct kind_bits<identity_stage> {
  static constexpr unsigned value = 0;
};
template <class... S>
struct kind_bits<pipeline<S...>> {
  static constexpr unsigned value = (kind_bits<S>::value | ... | 0u);
};
constexpr unsigned lowest_bit(unsigned b) { return b & (~b + 1); }
constexpr unsigned highest_bit(unsigned b) {
  unsigned h = 0;
  for (unsigned x = b; x; x &= x - 1) h = x & (~x + 1);
  return h;
}
}  // namespace detail

// The kinds a stage contains, as bits (1 << stage_kind).
template <stage S>
inline constexpr unsigned stage_kinds = detail::kind_bits<S>::value;

template <stage S>
inline constexpr bool contains_kind(stage_kind k) {
  return (stage_kinds<S> & (1u << static_cast<unsigned>(k))) != 0;
}

// ---- running one stage ---------------------------------------------------------------------------------

namespace detail {
template <class S>
std::string stage_name(const S& s) {
  return std::string(s.name());
}

// A scheduler's order becomes the timeline (built once from the order's lifetimes), its ops on the
// implementations ctx.implementations chooses. The scheduler orders the ops with the workspaces that
// choice gives them (scheduling_problem): ordering with workspaces the ops will not run with would
// make the order, and the scheduler's bound, answer another problem.
template <scheduler S>
timeline scheduler_timeline(const S& s, const problem& p, const plan_context& ctx) {
  const auto view = scheduling_problem(p, ctx);
  schedule_result r;
  if (view) {
    // The view's analyses: its bounds are p's (each op's least workspace is unchanged), computed once.
    auto vctx = ctx;
    auto own = ctx.cache_for(p);
    vctx.cache = std::make_shared<analysis_cache>(*view, *own);
    r = memplan::run_scheduler(s, *view, vctx);
  } else {
    r = memplan::run_scheduler(s, p, ctx);
  }
  if (auto bad = check_topological(p, r.order))
    throw error(errc::invalid_plan, "scheduler '" + stage_name(s) + "' returned an invalid order: " + *bad);
  auto tl = timeline_of_topological(p, r.order);  // (checked just above)
  tl.order_lower_bound = r.lower_bound;
  tl.order_optimal = r.optimal;
  for (auto& a : r.alternatives)
    if (!check_topological(p, a.order) && a.order != r.order) tl.alternatives.push_back(std::move(a));
  // The ops' implementations (ctx.implementations), chosen on this order.
  const auto chosen = apply_implementation_choice(p, tl, ctx, view.has_value());
  tl.stages.push_back({stage_kind::scheduler, r.policy.empty() ? stage_name(s) : r.policy, 0.0,
                       r.note.empty() ? chosen : chosen.empty() ? r.note : r.note + "; " + chosen});
  return tl;
}

// The timeline of one of tl's alternative orders (timeline::alternatives), built as the scheduler's own
// was: its ops on the implementations ctx.implementations chooses, the scheduler's bound (a bound on
// every order), the stage records so far. No alternatives of its own.
inline timeline alternative_timeline(const problem& p, const timeline& tl, const order_alternative& a, const plan_context& ctx) {
  auto alt = make_timeline(p, a.order);
  alt.order_lower_bound = tl.order_lower_bound;
  (void)apply_implementation_choice(p, alt, ctx, scheduling_problem(p, ctx).has_value());
  alt.stages = tl.stages;
  return alt;
}

// A placer places the timeline's materializations and workspaces.
template <buffer_placer P>
timeline run_placer(const P& pl, const problem& p, timeline tl, const plan_context& ctx) {
  buffer_origin origin;
  const auto bp = to_buffers(p, tl, ctx.alignment, origin, ctx.arena_limit());
  // Validated here first so that an error names what the buffer holds (the placer validates again).
  validate(bp, [&](std::size_t i) { return buffer_text(p, tl, origin, i); });
  buffer_placement bpl;
  if constexpr (context_placer<P>) bpl = pl.place(bp, ctx);
  else bpl = pl.place(bp);
  if (bpl.arena > bp.capacity)
    throw error(errc::infeasible, "placer '" + stage_name(pl) + "' reached an arena of " + std::to_string(bpl.arena) +
                                      " bytes, above the limit of " + std::to_string(bp.capacity) + " bytes");
  if (auto bad = check(bp, bpl))
    throw error(errc::invalid_plan, "placer '" + stage_name(pl) + "' returned an invalid placement: " + *bad);
  apply_placement(tl, origin, bpl, ctx.alignment);
  tl.stages.push_back({stage_kind::placer, bpl.placer.empty() ? stage_name(pl) : bpl.placer, 0.0, bpl.note});
  return tl;
}
}  // namespace detail

// Runs one stage: its kind's shape, timed; the time lands in the stage's record.
template <stage S>
timeline run_stage(const S& s, const problem& p, timeline tl, const plan_context& ctx) {
  if constexpr (std::same_as<S, identity_stage>) {
    return tl;
  } else if constexpr (detail::is_pipeline<S>) {
    return s.run(p, std::move(tl), ctx);
  } else {
    const auto t0 = std::chrono::steady_clock::now();
    const auto records = tl.stages.size();
    timeline out;
    if constexpr (timeline_stage<S>) {
      out = s.run(p, std::move(tl), ctx);
      if (out.stages.size() == records) out.stages.push_back({S::kind, detail::stage_name(s), 0.0, {}});
    } else if constexpr (scheduler<S>) {
      auto prev = std::move(tl.stages);
      out = detail::scheduler_timeline(s, p, ctx);
      prev.insert(prev.end(), out.stages.begin(), out.stages.end());
      out.stages = std::move(prev);
    } else {
      out = detail::run_placer(s, p, std::move(tl), ctx);
    }
    if (out.stages.size() > records)
      out.stages.back().seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
  }
}

// ---- composition -----------------------------------------------------------------------------------------

// A sequence of stages, itself a stage; kinds strictly in pipeline order.
template <class... S>
struct pipeline {
  std::tuple<S...> stages;

  [[nodiscard]] std::string name() const {
    std::string n;
    std::apply([&](const auto&... s) { ((n += (n.empty() ? "" : " | ") + detail::stage_name(s)), ...); }, stages);
    return n;
  }
  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    std::apply([&](const auto&... s) { ((tl = run_stage(s, p, std::move(tl), ctx)), ...); }, stages);
    return tl;
  }
};

namespace detail {
template <class S>
auto as_tuple(S s) {
  if constexpr (is_pipeline<S>) return std::move(s.stages);
  else if constexpr (std::same_as<S, identity_stage>) return std::tuple<>{};
  else return std::tuple<S>{std::move(s)};
}
template <class... S>
auto from_tuple(std::tuple<S...> t) {
  if constexpr (sizeof...(S) == 0) return identity_stage{};
  else if constexpr (sizeof...(S) == 1) return std::get<0>(std::move(t));
  else return pipeline<S...>{std::move(t)};
}
}  // namespace detail

template <stage A, stage B>
constexpr auto operator|(A a, B b) {
  constexpr unsigned ka = stage_kinds<A>, kb = stage_kinds<B>;
  static_assert((ka & kb & (1u << static_cast<unsigned>(stage_kind::scheduler))) == 0,
                "memplan pipeline: a pipeline has one scheduler -- to try several, use best_of{a, b}");
  static_assert((ka & kb & (1u << static_cast<unsigned>(stage_kind::checkpointer))) == 0,
                "memplan pipeline: a pipeline has one checkpointer -- to try several, use best_of{a, b}");
  static_assert((ka & kb & (1u << static_cast<unsigned>(stage_kind::offloader))) == 0,
                "memplan pipeline: a pipeline has one offloader -- to try several, use best_of{a, b}");
  static_assert((ka & kb & (1u << static_cast<unsigned>(stage_kind::placer))) == 0,
                "memplan pipeline: a pipeline has one placer -- to try several, use best_of{a, b}");
  static_assert(ka == 0 || kb == 0 || detail::highest_bit(ka) < detail::lowest_bit(kb),
                "memplan pipeline: stages run in the order scheduler | checkpointer | offloader | placer -- "
                "e.g. write `schedule::X{} | remat::Y{} | place::Z{}`");
  return detail::from_tuple(std::tuple_cat(detail::as_tuple(std::move(a)), detail::as_tuple(std::move(b))));
}

// Policies live in their own namespaces: make `|` visible to argument-dependent lookup there.
namespace schedule { using memplan::operator|; }
namespace remat { using memplan::operator|; }
namespace offload { using memplan::operator|; }
namespace place { using memplan::operator|; }

}  // namespace memplan
