#pragma once
// Composes policies into a pipeline and runs it:
//   auto plan = memplan::plan(g, schedule::given{} | place::greedy_by_size{});
// Every plan returned here has passed memplan::verify (an invalid one throws errc::invalid_plan).
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include <memplan/core/analysis.hpp>
#include <memplan/core/plan.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/verify.hpp>
#include <memplan/place/buffer.hpp>

namespace memplan {

template <class T>
concept pipeline_stage = scheduler<T> || place::placer<T>;

template <scheduler S, place::placer P>
struct pipeline {
  S scheduler;
  P placer;
};

namespace detail {
template <class A, class B>
constexpr auto compose(A a, B b) {
  static_assert(!(place::placer<A> && scheduler<B>),
                "memplan pipeline: the scheduler comes before the placer -- write `schedule::X{} | place::Y{}`");
  static_assert(!(scheduler<A> && scheduler<B>),
                "memplan pipeline: a pipeline has one scheduler -- to try several, use schedule::best_of{a, b}");
  static_assert(!(place::placer<A> && place::placer<B>),
                "memplan pipeline: a pipeline has one placer -- to try several, use place::best_of{a, b}");
  if constexpr (scheduler<A> && place::placer<B>) return pipeline<A, B>{std::move(a), std::move(b)};
}
}  // namespace detail

template <pipeline_stage A, pipeline_stage B>
constexpr auto operator|(A a, B b) {
  return detail::compose(std::move(a), std::move(b));
}
// Policies live in memplan::schedule and memplan::place: make `|` visible to argument-dependent lookup there.
namespace schedule { using memplan::operator|; }
namespace place { using memplan::operator|; }

struct plan_options {
  std::int64_t alignment = 1;                                         // power of two, applies to every tensor
  std::int64_t capacity = std::numeric_limits<std::int64_t>::max();   // arena limit (errc::infeasible if unmet)
  bool compute_given_peak = true;                                     // stats.given_peak from the graph's own order
  std::int32_t lower_bound_max_ops = 30000;                           // reachability part of the bound up to this size
};

template <scheduler S, place::placer P>
memory_plan plan(const problem& p, const pipeline<S, P>& pipe, const plan_options& opt = {}) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  auto sch = pipe.scheduler.run(p);
  if (auto bad = check_topological(p, sch.order))
    throw error(errc::invalid_plan, "scheduler '" + std::string(pipe.scheduler.name()) + "' returned an invalid order: " + *bad);
  const auto t1 = clock::now();
  auto pl = place_order(p, sch.order, pipe.placer, opt.alignment, opt.capacity);
  const auto t2 = clock::now();
  auto mp = make_plan(p, sch.order, pl);
  auto& st = mp.stats;
  st.scheduler = sch.policy.empty() ? std::string(pipe.scheduler.name()) : sch.policy;
  if (!sch.note.empty()) st.notes.insert(st.notes.begin(), sch.note);
  st.schedule_seconds = std::chrono::duration<double>(t1 - t0).count();
  st.place_seconds = std::chrono::duration<double>(t2 - t1).count();
  set_lower_bound(st, std::max(lower_bound_peak(p, opt.lower_bound_max_ops).bytes, sch.lower_bound));
  if (opt.compute_given_peak) {
    std::vector<op_id> given(static_cast<std::size_t>(p.num_ops()));
    for (std::size_t i = 0; i < given.size(); ++i) given[i] = static_cast<op_id>(i);
    if (is_topological(p, given)) st.given_peak = peak_of(p, given);
  }
  verify_or_throw(p, mp);
  return mp;
}

// Any conforming graph: adapt it (sizes/costs/workspaces from the graph's CPOs) and plan.
template <op_graph G, scheduler S, place::placer P>
memory_plan plan(const G& g, const pipeline<S, P>& pipe, const plan_options& opt = {}) {
  return plan(make_problem(g), pipe, opt);
}

// Any conforming graph with lookups for sizes / costs / workspaces kept outside the graph.
template <op_graph G, class Bytes, class Cost, class Workspace, scheduler S, place::placer P>
memory_plan plan(const G& g, const lookups<Bytes, Cost, Workspace>& lk, const pipeline<S, P>& pipe, const plan_options& opt = {}) {
  return plan(make_problem(g, lk), pipe, opt);
}

}  // namespace memplan
