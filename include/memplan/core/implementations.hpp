#pragma once
// Operator implementations (MONeT §4): an op may run its own (cost, workspace) or one of
// problem::implementations(op) -- convolution algorithms, in-place or output-activated variants. Here:
// the Pareto front of an op's alternatives, the counts the report shows, and the choice every pipeline
// makes where a timeline is born from an order (plan_context::implementations):
//
//   implementation_choice::own        every op runs its own implementation, as the graph gives it.
//   implementation_choice::no_slower  (the default) a choice that costs nothing:
//     A. each op takes, among its alternatives no slower than its own (cost <= its own cost), the one
//        with the least workspace: no op step gets slower and the peak cannot rise;
//     B. when the timeline then meets the memory target (or there is none): with that profile fixed,
//        each op takes its fastest alternative, still no slower than its own, whose workspace fits the
//        room left at every tick it runs (the peak after A minus what lives beside its workspace
//        there). A workspace lives only while its own step runs, so the peak does not rise while op
//        steps get faster. Above the target, B is left out: the room is the checkpointer's (or the
//        offloader's) to use, and they start from A's least workspace.
//     Speed is the graph's cost model (problem::cost, implementation::cost): "no slower" is as good
//     as those figures. A scheduler orders the problem with A's workspaces (scheduling_problem), so
//     its order, bound and optimality are for the workspaces the ops run with; B follows the order.
//
// Checkpointers and offloaders start from the timeline's choices (remat::best_solver_free runs every
// recompute on the op's chosen implementation); remat::monet_greedy / monet_ilp choose afresh, jointly
// with what they recompute.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <memplan/core/bounds.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/problem_builder.hpp>
#include <memplan/core/timeline.hpp>

namespace memplan {

// One way to run an op: index into problem::implementations (-1: the op's own), its cost and workspace.
struct impl_alternative {
  std::int32_t impl = -1;
  double cost = 0.0;
  std::int64_t workspace = 0;
};

// The Pareto front of an op's alternatives over (cost, workspace), fastest first (then least
// workspace; ties: the one listed first, the op's own before its implementations). Along the front
// costs rise and workspaces fall.
inline std::vector<impl_alternative> implementation_front(const problem& p, op_id o) {
  std::vector<impl_alternative> all{{-1, p.cost(o), p.workspace(o)}};
  const auto ims = p.implementations(o);
  for (std::size_t k = 0; k < ims.size(); ++k) all.push_back({static_cast<std::int32_t>(k), ims[k].cost, ims[k].workspace});
  std::stable_sort(all.begin(), all.end(), [](const impl_alternative& a, const impl_alternative& b) {
    return a.cost != b.cost ? a.cost < b.cost : a.workspace < b.workspace;
  });
  std::vector<impl_alternative> front;
  for (const auto& a : all)
    if (front.empty() || a.workspace < front.back().workspace) front.push_back(a);
  return front;
}

// Whether any op of the problem has implementation alternatives.
inline bool has_implementations(const problem& p) {
  for (op_id o = 0; o < p.num_ops(); ++o)
    if (!p.implementations(o).empty()) return true;
  return false;
}

// Whether any op or implementation of the problem has a cost (graphs without costs: one unit per op).
inline bool has_costs(const problem& p) {
  for (op_id o = 0; o < p.num_ops(); ++o) {
    if (p.cost(o) > 0) return true;
    for (const auto& im : p.implementations(o))
      if (im.cost > 0) return true;
  }
  return false;
}

// Total compute cost of a timeline's op steps (MONeT eq. 9: forward, backward and recomputation), in the
// graph's cost units, or one unit per op step when the graph gives no costs.
inline double total_step_cost(const problem& p, const timeline& tl) {
  const bool any = has_costs(p);
  double c = 0;
  for (const auto& s : tl.steps)
    if (runs_op(s.kind)) c += any ? step_cost(p, s) : 1.0;
  return c;
}

// Is plan a better than plan b, both within the same memory limit? The shorter makespan when both are
// timed (an offloader's plans), else the lower total step cost (the recomputation it adds, each op
// step at its implementation's cost), else the smaller arena. plan()'s budget loop keeps the best of
// the plans that fit by these rules, and plan_choosing_variants compares its variant sets by them.
// pa and pb may differ (plans of two rewrites of one graph).
inline bool better_plan(const problem& pa, const timeline& a, const problem& pb, const timeline& b) {
  if (a.timed && b.timed && a.makespan != b.makespan) return a.makespan < b.makespan;
  const auto ca = total_step_cost(pa, a), cb = total_step_cost(pb, b);
  if (ca != cb) return ca < cb;
  return a.arena < b.arena;
}

// A plan as the plan to beat of another (plan_context::to_beat): its makespan (when timed) and its
// total step cost.
inline plan_to_beat to_beat_of(const problem& p, const timeline& tl) {
  return {tl.timed ? tl.makespan : -1.0, total_step_cost(p, tl)};
}

// Is a plan worse than `b` by more than `margin` (a fraction), by better_plan's measures?
inline bool worse_by_more_than(const problem& p, const timeline& a, const plan_to_beat& b, double margin) {
  if (a.timed && b.makespan >= 0) return a.makespan > b.makespan * (1.0 + margin);
  return b.step_cost >= 0 && total_step_cost(p, a) > b.step_cost * (1.0 + margin);
}

// The cost of an op's fastest implementation (its own or an alternative).
inline double fastest_cost(const problem& p, op_id o) {
  double c = p.cost(o);
  for (const auto& im : p.implementations(o)) c = std::min(c, im.cost);
  return c;
}

// Ops not on their fastest implementation in a timeline's compute steps (the report's implementations_changed).
inline std::int64_t implementations_changed(const problem& p, const std::vector<step>& steps) {
  std::int64_t k = 0;
  for (const auto& s : steps)
    if (s.kind == step_kind::compute) k += step_cost(p, s) > fastest_cost(p, s.id);
  return k;
}
inline std::int64_t implementations_changed(const problem& p, const timeline& tl) { return implementations_changed(p, tl.steps); }

namespace detail {

// Sets the op steps' implementations (impl[op], compute and recompute alike); the profile follows
// (reassign_impls).
inline void set_impls(const problem& p, timeline& tl, const std::vector<std::int32_t>& impl) {
  reassign_impls(p, tl, [&](const step& s, std::size_t) { return impl[static_cast<std::size_t>(s.id)]; });
}

// Room for the workspace of each op: `target` minus what lives beside its workspace, the least over
// the ticks its steps run (one entry per op; no steps: unlimited).
inline std::vector<std::int64_t> workspace_room(const problem& p, const timeline& tl, std::int64_t target) {
  constexpr auto inf = std::numeric_limits<std::int64_t>::max();
  std::vector<std::int64_t> room(static_cast<std::size_t>(p.num_ops()), inf);
  std::size_t tick = 0;
  for (const auto& s : tl.steps) {
    if (!runs_op(s.kind)) continue;
    const auto r = target == inf ? inf : target - (tl.live[tick] - step_workspace(p, s));
    auto& o = room[static_cast<std::size_t>(s.id)];
    o = std::min(o, r);
    ++tick;
  }
  return room;
}

// remat::monet_greedy's step 3: the fastest alternatives that fit the memory left where they run (the
// least-workspace one when none fits). One implementation per op, or per step (one_impl_per_op false).
inline void upgrade_impls(const problem& p, timeline& tl, const std::vector<std::vector<impl_alternative>>& front,
                          std::int64_t target, bool one_impl_per_op) {
  constexpr auto inf = std::numeric_limits<std::int64_t>::max();
  auto pick = [&](op_id o, std::int64_t r) {
    const auto& fr = front[static_cast<std::size_t>(o)];
    for (const auto& a : fr)
      if (a.workspace <= r) return a.impl;
    return fr.back().impl;  // nothing fits: the least workspace
  };
  if (one_impl_per_op) {
    const auto op_room = workspace_room(p, tl, target);
    reassign_impls(p, tl, [&](const step& s, std::size_t) { return pick(s.id, op_room[static_cast<std::size_t>(s.id)]); });
  } else {
    reassign_impls(p, tl, [&](const step& s, std::size_t tick) {
      return pick(s.id, target == inf ? inf : target - (tl.live[tick] - step_workspace(p, s)));
    });
  }
}

}  // namespace detail

// Moves ops to faster alternatives, none slower than the op's own, whose workspace fits under `limit` at
// every step the op runs (limit minus what lives beside its workspace there). A workspace lives only
// while its own step runs, so no step's live bytes rise above max(what they were, limit): with limit
// <= the peak, the peak does not rise. Ops whose steps run different implementations are left as they
// are. Returns how many ops moved.
inline std::int64_t upgrade_no_slower(const problem& p, timeline& tl, std::int64_t limit) {
  const auto n = static_cast<std::size_t>(p.num_ops());
  constexpr std::int32_t mixed = -2, unseen = -3;
  std::vector<std::int32_t> cur(n, unseen);
  for (const auto& s : tl.steps)
    if (runs_op(s.kind)) {
      auto& c = cur[static_cast<std::size_t>(s.id)];
      c = c == unseen || c == s.impl ? s.impl : mixed;
    }
  const auto room = detail::workspace_room(p, tl, limit);
  std::vector<std::int32_t> next(cur);
  std::int64_t moved = 0;
  for (op_id o = 0; o < p.num_ops(); ++o) {
    const auto i = static_cast<std::size_t>(o);
    if (cur[i] < -1 || p.implementations(o).empty()) continue;
    const auto now = cur[i] < 0 ? p.cost(o) : p.implementations(o)[static_cast<std::size_t>(cur[i])].cost;
    for (const auto& a : implementation_front(p, o)) {  // fastest first
      if (a.cost >= now) break;
      if (a.cost <= p.cost(o) && a.workspace <= room[i]) {
        next[i] = a.impl;
        ++moved;
        break;
      }
    }
  }
  if (moved == 0) return 0;
  reassign_impls(p, tl, [&](const step& s, std::size_t) { return next[static_cast<std::size_t>(s.id)]; });
  return moved;
}

// Step A of implementation_choice::no_slower, per op: among its alternatives no slower than its own,
// the one with the least workspace -- the last of the front's entries no slower than the own (costs
// rise along it, workspaces fall). -1: the own (or no alternatives). Independent of the order.
inline std::vector<std::int32_t> least_workspace_no_slower(const problem& p) {
  std::vector<std::int32_t> impl(static_cast<std::size_t>(p.num_ops()), -1);
  for (op_id o = 0; o < p.num_ops(); ++o) {
    if (p.implementations(o).empty()) continue;
    const auto front = implementation_front(p, o);
    std::size_t last = 0;
    while (last + 1 < front.size() && front[last + 1].cost <= p.cost(o)) ++last;
    impl[static_cast<std::size_t>(o)] = front[last].impl;
  }
  return impl;
}

// The problem a scheduler orders under implementation_choice::no_slower: p with each op's workspace
// the one step A gives it (costs and alternatives kept), so the order -- and the scheduler's lower
// bound and optimality -- are for the workspaces the ops will run with. nullopt when the choice is
// `own` or A lowers no op's workspace (then p itself is that problem).
inline std::optional<problem> scheduling_problem(const problem& p, const plan_context& ctx) {
  if (ctx.implementations == implementation_choice::own || !has_implementations(p)) return std::nullopt;
  const auto impl = least_workspace_no_slower(p);
  auto ws = [&](op_id o) { return impl_workspace(p, o, impl[static_cast<std::size_t>(o)]); };
  bool lower = false;
  for (op_id o = 0; o < p.num_ops() && !lower; ++o) lower = ws(o) < p.workspace(o);
  if (!lower) return std::nullopt;
  return with_ops(p, [&](const problem&, op_id o, op_fields& f) { f.workspace = ws(o); });
}

// A lower bound on the peak of any order when every op runs the implementation of its compute step
// in `tl` (lower_bound_peak of a copy with those workspaces and no alternatives). lower_bound_peak(p)
// charges each op its least workspace over all alternatives, so it also covers slower, leaner
// implementations than the plan's; this bound says how much of a gap the order leaves under the
// plan's own choice. nullopt when no op's chosen workspace is above its least (the bounds agree).
inline std::optional<std::int64_t> chosen_impls_lower_bound(const problem& p, const timeline& tl,
                                                            std::int32_t max_ops_for_reachability = 30000) {
  if (!has_implementations(p)) return std::nullopt;
  const auto impl = compute_impls(p, tl);
  bool above = false;
  for (op_id o = 0; o < p.num_ops() && !above; ++o)
    above = impl_workspace(p, o, impl[static_cast<std::size_t>(o)]) > min_workspace(p, o);
  if (!above) return std::nullopt;
  const auto fixed = with_ops(p, [&](const problem&, op_id o, op_fields& f) {
    f.workspace = impl_workspace(p, o, impl[static_cast<std::size_t>(o)]);
    f.impls.clear();
  });
  return lower_bound_peak(fixed, max_ops_for_reachability).bytes;
}

// What implementation_choice::no_slower did to a timeline.
struct no_slower_choice {
  std::int64_t less_workspace = 0;  // ops moved (step A) to an alternative with less workspace than their own
  std::int64_t faster = 0;          // ops on an alternative faster than their own (step B)
  std::int64_t peak_before = 0, peak_after = 0;
  double cost_before = 0.0, cost_after = 0.0;  // total_step_cost
  [[nodiscard]] bool changed() const noexcept { return less_workspace > 0 || faster > 0; }
};

// Steps A and B of implementation_choice::no_slower (above) on a timeline, one implementation per op
// (its computation and any recomputation), measured against every op on its own implementation.
// target < 0: no memory target.
inline no_slower_choice choose_no_slower_implementations(const problem& p, timeline& tl, std::int64_t target = -1) {
  no_slower_choice r;
  const auto n = static_cast<std::size_t>(p.num_ops());
  if (std::any_of(tl.steps.begin(), tl.steps.end(), [](const step& s) { return runs_op(s.kind) && s.impl != -1; }))
    detail::set_impls(p, tl, std::vector<std::int32_t>(n, -1));
  r.peak_before = tl.peak;
  r.cost_before = total_step_cost(p, tl);
  // A, then per op whether it lowered the workspace.
  const auto impl = least_workspace_no_slower(p);
  for (op_id o = 0; o < p.num_ops(); ++o) r.less_workspace += impl_workspace(p, o, impl[static_cast<std::size_t>(o)]) < p.workspace(o);
  detail::set_impls(p, tl, impl);
  // B: the fastest alternative of that prefix whose workspace fits the room under the peak -- only
  // when the timeline meets the target: below it, the room belongs to the checkpointer or offloader.
  if (target < 0 || tl.peak <= target) upgrade_no_slower(p, tl, tl.peak);
  for (const auto& s : tl.steps)
    r.faster += s.kind == step_kind::compute && step_cost(p, s) < p.cost(s.id);
  r.peak_after = tl.peak;
  r.cost_after = total_step_cost(p, tl);
  return r;
}

// The choice plan_context::implementations asks for, where a timeline is born (a scheduler's order, or
// the given order when the pipeline has no scheduler). Returns a note for the stage record ("" when
// nothing changed). `ordered_on_choice`: the order (and tl's bound) came from scheduling_problem(p,
// ctx), so they hold for A's workspaces and are kept. Otherwise a bound holds for the ops' own
// workspaces: when an op now runs with less, it is dropped (plan() still certifies against
// lower_bound_peak, which takes every op's least workspace).
inline std::string apply_implementation_choice(const problem& p, timeline& tl, const plan_context& ctx,
                                               bool ordered_on_choice = false) {
  if (ctx.implementations == implementation_choice::own || !has_implementations(p)) return {};
  const auto target = ctx.has_memory_limit() ? ctx.peak_target() : std::int64_t{-1};
  const auto r = choose_no_slower_implementations(p, tl, target);
  if (!r.changed()) return {};
  if (r.less_workspace > 0 && !ordered_on_choice) {
    tl.order_lower_bound = 0;
    tl.order_optimal = false;
  }
  std::ostringstream os;
  os << "implementations (none slower than the op's own): " << r.less_workspace << " ops first moved to one with less workspace, "
     << r.faster << " then run on a faster one that fits; peak " << r.peak_before << " -> " << r.peak_after << " bytes, op steps cost " << r.cost_before
     << " -> " << r.cost_after;
  return os.str();
}

}  // namespace memplan
