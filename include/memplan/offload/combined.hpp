#pragma once
// offload::combined -- keep, offload or recompute each activation under a memory budget, for the
// least makespan (beyond Beaumont et al., whose §7 leaves it open; in the spirit of POFO).
//
// A heuristic over the split of the work between the two mechanisms: for a grid of intermediate
// targets T between the budget and the incoming peak, a checkpointer brings the peak down to T
// (recompute steps cost their op's time on the compute engine), then an offloader brings it from T to
// the budget (copies overlap with compute). T = the budget is recompute-only, T = the peak is
// offload-only; the least makespan among the results that meet the budget wins, so the result is never
// slower than either alone (in the model, before placement). Offloading only moves values that are
// materialized once; recomputed ones stay with the checkpointer.
//
// On a chain (values read back in reverse production order: offload::chain_order_breaks = 0, a
// timeline of compute steps) it also runs the chain program, right after the grid's two ends: dynamic
// programming over keep / offload / recompute for each value (dynprog.hpp, chain_program: Algorithm 1
// with a third choice, a value freed after its forward use and rebuilt from the one before it), then a
// local search over the three choices in the simulator from its decisions. Its plan is one more
// candidate: the grid stays the heuristic for DAGs, and on chains the faster of the two goes on.
//
// It runs at the offloader's position of a pipeline (scheduler -> [checkpointer] -> combined -> placer)
// and reports the fraction it chose in its note (or the chain program's decisions). The whole search runs within one time limit
// (time_limit_s, 4 s by default; plan_context::time_limit_s overrides), both ends of the grid first. Its makespan lower bound is the incoming timeline's
// compute time (recomputation only adds to it; Prop. 3 holds for offloading alone).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <memplan/base/deadline.hpp>
#include <memplan/base/error.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/implementations.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/offload/dynprog.hpp>
#include <memplan/offload/model.hpp>
#include <memplan/offload/policies.hpp>
#include <memplan/remat/default_checkpointer.hpp>
#include <memplan/remat/detail.hpp>
#include <memplan/remat/engine.hpp>

namespace memplan::offload {

namespace detail {
// The grid's points 0..steps in the order combined tries them: both ends first (offload-only, then
// recompute-only: what the "never slower than either alone" claim rests on), then midpoints,
// coarse to fine, so that a search cut short by its deadline has still covered the range.
inline std::vector<std::int32_t> split_order(std::int32_t steps) {
  std::vector<std::int32_t> order{steps};
  if (steps == 0) return order;
  order.push_back(0);
  std::vector<std::pair<std::int32_t, std::int32_t>> level{{0, steps}}, next;
  while (!level.empty()) {
    next.clear();
    for (auto [lo, hi] : level) {
      if (hi - lo < 2) continue;
      const auto mid = lo + (hi - lo) / 2;
      order.push_back(mid);
      next.push_back({lo, mid});
      next.push_back({mid, hi});
    }
    level.swap(next);
  }
  return order;
}
// Seconds of one step with every op computed once on its fastest implementation: no plan, whatever it
// recomputes, offloads or chooses, computes in less.
inline double fastest_compute_seconds(const problem& p, const device_timing& t) {
  double cost = 0.0;
  for (op_id o = 0; o < p.num_ops(); ++o) cost += fastest_cost(p, o);
  return cost * seconds_per_cost(p, t);
}

// The chain program (dynprog.hpp, chain_program): keep, offload or recompute each value by dynamic
// programming, where the timeline is a chain (its values read back in reverse production order,
// offload::chain_order_breaks = 0). Applies to a timeline of compute steps only (no recomputation or
// transfers yet), so that its ticks are the engine's positions.
//
// A value may be recomputed where rebuilding it (its producer, and an in-place chain's writes) reads
// nothing but x_{i-1} -- which must then have been kept -- and storages on the device anyway at that
// time (not candidates, live across it); rec[i] is the rebuild's seconds.
inline bool fill_rebuilds(const problem& p, const tick_model& m, const remat::detail::engine& e, chain_view& c) {
  const auto L = m.candidates.size();
  c.rec.assign(L, -1.0);
  c.rec_needs_prev.assign(L, 0);
  std::vector<std::int32_t> index(static_cast<std::size_t>(p.num_storages()), -1);
  for (std::size_t i = 0; i < L; ++i) index[static_cast<std::size_t>(m.candidates[i].storage)] = static_cast<std::int32_t>(i);
  const double spc = seconds_per_cost(p, m.timing);
  bool any = false;
  for (std::size_t i = 0; i < L; ++i) {
    const auto& k = m.candidates[i];
    if (!e.recreatable(k.tensor, k.after)) continue;
    bool ok = true, prev = false;
    for (tensor_id v = k.tensor; ok && v != no_id && p.producer(v) != no_id; v = p.inplace_of(v))
      for (auto r : p.inputs(p.producer(v))) {
        if (r == p.inplace_of(v)) continue;
        const auto rs = p.storage_of(r);
        const auto j = index[static_cast<std::size_t>(rs)];
        if (j >= 0) {
          prev = prev || j + 1 == static_cast<std::int32_t>(i);
          ok = ok && j + 1 == static_cast<std::int32_t>(i);
          continue;
        }
        // Not a candidate: on the device at the rebuild only where it is live across it.
        const auto& u = e.uses(rs);
        const bool always = p.resident(rs) || p.live_to_end(rs);
        ok = ok && (always || (!u.empty() && u.front() <= k.before && u.back() >= k.after));
      }
    if (!ok) continue;
    c.rec[i] = e.rebuild_cost(k.tensor, [](tensor_id) { return false; }) * spc;
    c.rec_needs_prev[i] = prev ? 1 : 0;
    any = true;
  }
  return any;
}

// Drops the chosen storages after their last use before the gap; the engine rebuilds them just in
// time and keeps them until their next use.
struct drop_chosen {
  std::vector<std::int32_t> at;  // per storage: the position after which it is freed (-1: never)
  [[nodiscard]] bool drop(storage_id s, std::int32_t pos) const { return at[static_cast<std::size_t>(s)] == pos; }
  [[nodiscard]] bool keep(storage_id, std::int32_t, storage_id) const { return true; }
};

// The plan of one decision per candidate of `m` (the model of `tl`): the recomputed values dropped
// and rebuilt by the engine, then the offloaded ones moved by the builder, with `refined`'s local
// search from them (within `clock`) where `refine` (the program's model is Algorithm 1's relaxation --
// fractional copies, whole-tick memory -- and the simulator is the referee). The builder's record is
// popped, as a split's. *fits (where given) says whether these offloads themselves meet the target:
// where they do not, the builder's fallback (every value offloaded) is what comes back.
inline timeline chain_decisions_plan(const problem& p, const timeline& tl, const plan_context& ctx, const tick_model& m, remat::detail::engine& e,
                                     const std::vector<chain_decision>& d, bool refine, const deadline& clock, std::string& what,
                                     bool* fits = nullptr) {
  drop_chosen pol;
  pol.at.assign(static_cast<std::size_t>(p.num_storages()), -1);
  std::vector<std::uint8_t> moved(static_cast<std::size_t>(p.num_storages()), 0);  // per storage: offloaded
  std::size_t kept = 0, rebuilt = 0, offloaded = 0;
  for (std::size_t i = 0; i < d.size(); ++i) {
    const auto& k = m.candidates[i];
    if (d[i] == chain_decision::recompute) {
      pol.at[static_cast<std::size_t>(k.storage)] = k.before;
      ++rebuilt;
    } else if (d[i] == chain_decision::offload) {
      moved[static_cast<std::size_t>(k.storage)] = 1;
      ++offloaded;
    } else {
      ++kept;
    }
  }
  // (The replay is not stopped by the clock: on a chain it is one pass over the steps and a burst per
  // rebuilt value, and a plan cut short by it would lose a search's result.)
  timeline r = rebuilt > 0 ? remat::detail::carry(tl, e.run(pol, std::numeric_limits<std::int64_t>::max(), false)) : tl;
  std::size_t final_moved = offloaded;
  bool met = true;  // (no choice to make: the rebuilds alone meet the target)
  auto out = run_offloader(p, std::move(r), ctx, "combined", [&moved, &clock, refine, &final_moved, &met](chooser& ch, std::int64_t) {
    ch.charge_to(clock);  // (on a work clock: its simulations are the search's work)
    std::vector<std::int32_t> chosen;
    const auto& cs = ch.model().candidates;
    for (std::size_t i = 0; i < cs.size(); ++i)
      if (moved[static_cast<std::size_t>(cs[i].storage)]) chosen.push_back(static_cast<std::int32_t>(i));
    if (refine) {
      auto best = refine_choice(ch, chosen, 64, clock, 1e-4);
      final_moved = best.chosen.size();
      met = best.found();
      return best;
    }
    met = ch.consider(chosen) < std::numeric_limits<double>::infinity();
    return ch.best();
  });
  out.stages.pop_back();
  if (fits) *fits = met && out.peak <= ctx.peak_target();
  what = "the chain program: " + std::to_string(kept) + " kept, " + std::to_string(offloaded) + " offloaded, " + std::to_string(rebuilt) +
         " recomputed of " + std::to_string(d.size()) + " values" +
         (final_moved != offloaded ? " (" + std::to_string(final_moved) + " offloaded after refined's local search)" : "");
  return out;
}

// Whether the chain program applies: a timeline of compute steps (and frees) whose values are read
// back in reverse production order, with a link to move them. (The model, where it does.)
inline std::optional<tick_model> chain_program_model(const problem& p, const timeline& tl, const device_timing& timing) {
  if (!(timing.bandwidth > 0)) return std::nullopt;
  for (const auto& st : tl.steps)
    if (runs_op(st.kind) ? st.kind != step_kind::compute : st.kind != step_kind::free) return std::nullopt;
  auto m = make_model(p, tl, timing);
  if (m.candidates.empty() || chain_order_breaks(m) != 0) return std::nullopt;
  return m;
}

// The chain program's plan on the model chain_program_model gave, memory in `slots` slots. Nothing
// where no value can be rebuilt, or the program finds no decisions within `clock`.
inline std::optional<timeline> chain_program_plan(const problem& p, const timeline& tl, const tick_model& m, const plan_context& ctx, std::int32_t slots,
                                                  const deadline& clock, std::string& what) {
  remat::detail::engine e(p, tl);  // (one for every replay below)
  auto c = make_chain_view(m);
  if (!fill_rebuilds(p, m, e, c)) return std::nullopt;
  auto d = chain_program(c, ctx.peak_target(), ctx.timing.bandwidth, slots, clock);
  if (!d) return std::nullopt;
  // The searches below stop at `clock`; without one (deterministic mode) at refined's limit on a work
  // clock charged by their simulations, as `refined` does: the same plan on any machine, and an end
  // on long chains (a round simulates every other choice of every value).
  work_clock work;
  const auto search = clock.limited() ? clock : deadline::after(refined{}.time_limit_s, &work);
  // Then a local search over the three choices in the simulator, from the program's decisions: each
  // round simulates every other allowed choice for every value and takes the best that meets the
  // target and shortens the step (any that meets it, where the program's decisions do not). The
  // program's decisions alone were the best of this family (brute force in the simulator) on 106 of
  // 160 random chains at 6 B/s, after this search on 137 (docs/offload.md, the chain program).
  const auto allowed = [&c](const std::vector<chain_decision>& a) {
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i] == chain_decision::recompute && !c.rebuildable(i, i > 0 && a[i - 1] == chain_decision::keep)) return false;
    return true;
  };
  constexpr double never_fits = std::numeric_limits<double>::infinity();
  const auto score = [&](const std::vector<chain_decision>& a) {  // the makespan where the decisions meet the target
    std::string w;
    bool fits = false;
    try {
      const auto r = chain_decisions_plan(p, tl, ctx, m, e, a, false, search, w, &fits);
      return fits ? r.makespan : never_fits;
    } catch (const error& e) {  // (above the host limit)
      if (e.code() != errc::infeasible) throw;
      return never_fits;
    }
  };
  auto cur = score(*d);
  for (std::int32_t round = 0; round < 64 && !search.expired(); ++round) {
    auto best = cur;
    std::vector<chain_decision> best_d;
    for (std::size_t i = 0; i < d->size() && !search.expired(); ++i)
      for (std::uint8_t k = 0; k < 3; ++k) {
        auto a = *d;
        a[i] = static_cast<chain_decision>(k);
        if (a[i] == (*d)[i] || !allowed(a)) continue;
        if (const auto sc = score(a); sc < best - 1e-12 * std::max(1.0, sc)) {
          best = sc;
          best_d = std::move(a);
        }
      }
    if (best_d.empty()) break;
    *d = std::move(best_d);
    cur = best;
  }
  return chain_decisions_plan(p, tl, ctx, m, e, *d, true, search, what);
}

}  // namespace detail

template <class Checkpointer = remat::default_checkpointer, class Offloader = refined>
struct combined {
  static constexpr stage_kind kind = stage_kind::offloader;
  Checkpointer checkpointer{};
  Offloader offloader{};
  std::int32_t steps = 8;     // the grid: T = budget + j/steps (peak - budget), j = 0..steps
  double time_limit_s = 4.0;  // the whole search (plan_context::time_limit_s overrides; none when deterministic)
  bool chain_program = true;  // on a chain, also the keep / offload / recompute program (detail::chain_program_plan)
  // Its memory slots. The third choice multiplies Algorithm 1's states: with 500 slots (the paper's S)
  // a 50-value random chain took 36 s; with 100, 0.2 s (500 values: 0.9 s), and on 160 random chains
  // at 2 and 6 B/s it was faster than every grid split on 10 and 9 (13 and 10 with 500).
  std::int32_t program_slots = 100;
  [[nodiscard]] std::string name() const { return "combined"; }

  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    tl.alternatives.clear();  // the scheduler's other orders are not tried: its splits are over this order
    const auto t0 = std::chrono::steady_clock::now();
    const auto target = ctx.peak_target();
    if (target == std::numeric_limits<std::int64_t>::max() || tl.peak <= target || steps < 1) return offloader.run(p, std::move(tl), ctx);
    // Each split runs a checkpointer and an offloader, each a search with its own time limit: the
    // splits share this stage's one deadline, each within an even share of what is left, and a split
    // starts only while the time left covers the quickest one so far (issue 12: wall <= limit + 10 %).
    const auto clock = deadline::after(ctx.time_limit_or(time_limit_s));
    // On a chain, the chain program (keep / offload / recompute by dynamic programming) is tried
    // right after the two ends, as one more split (-1): the grid is the heuristic for DAGs.
    auto order = detail::split_order(steps);
    const auto chain = chain_program ? detail::chain_program_model(p, tl, ctx.timing) : std::nullopt;
    if (chain) order.insert(order.begin() + std::min<std::ptrdiff_t>(2, static_cast<std::ptrdiff_t>(order.size())), -1);
    std::string program;  // what the chain program chose (empty: it did not run, or found nothing)
    std::optional<timeline> best;
    std::int32_t best_j = -1;
    std::vector<std::pair<std::int32_t, std::string>> tried;
    double quickest = 1e18;
    // The most a split ran past the limit it was given (a member's work between two reads of its
    // clock: a split given a few ms takes at least that): each later split's limit is kept back by
    // it, so that the last one, given all that is left, ends in time (ResNet-18 b32 under 0.25 s:
    // 0.279 s before, all 9 splits run).
    double most_over = 0.0;
    const bool shared = !ctx.deterministic && clock.limited();  // the splits share the clock's time
    std::size_t run = 0;
    for (; run < order.size(); ++run) {
      if (run >= 2 && (clock.expired() || clock.seconds_left() < quickest)) break;
      const auto j = order[run];
      const double frac = j < 0 ? 0.0 : static_cast<double>(j) / static_cast<double>(steps);
      const auto mid = j < 0 ? target : target + static_cast<std::int64_t>(frac * static_cast<double>(tl.peak - target));
      plan_context c = ctx;
      c.runners_up = nullptr;  // the split's checkpointer plans only part of the reduction
      c.offload_to_beat = -1.0;  // (a split that loses is compared below, not refused)
      // The split's share of the time is for both its searches: where both have work (0 < j <
      // steps), the checkpointer gets half and the offloader what it left. Each got the whole share
      // before, so a split whose checkpointer used it took twice it (DenseNet-121 b32 under 0.25 s:
      // the last split 0.054 s of a 0.025 s share, the stage 0.275 s).
      const double share = shared ? std::max(0.0, std::min(clock.seconds_left(), 1e9) / static_cast<double>(order.size() - run) - most_over) : -1.0;
      const auto split_clock = deadline::after(share);
      if (shared) c.time_limit_s = j > 0 && j < steps ? share / 2 : share;
      c.memory_target = mid;
      const double started = clock.elapsed();
      timeline out;
      if (j < 0) {
        std::string what;
        std::optional<timeline> dp;
        try {
          dp = detail::chain_program_plan(p, tl, *chain, c, program_slots, split_clock, what);
        } catch (const error& e) {
          if (e.code() != errc::infeasible) throw;
        }
        if (!dp) continue;
        out = std::move(*dp);
        program = what;
      } else {
        try {
          auto r = j == steps ? tl : checkpointer.run(p, tl, c);
          c.memory_target = target;
          if (shared) c.time_limit_s = std::max(0.0, split_clock.seconds_left());
          out = offloader.run(p, std::move(r), c);
          out.stages.pop_back();  // this stage's record replaces the inner offloader's
        } catch (const error& e) {
          if (e.code() != errc::infeasible) throw;
          continue;
        }
      }
      quickest = std::min(quickest, clock.elapsed() - started);
      if (shared) most_over = std::max(most_over, clock.elapsed() - started - share);
      tried.emplace_back(j, (j < 0 ? std::string("program") : std::to_string(frac).substr(0, 5)) + ":" +
                                (out.peak <= target ? std::to_string(out.makespan) : "over"));
      // The least makespan among splits that meet the target (else the least peak); a tie goes to
      // the larger fraction (more offloading, less recomputation).
      const bool meets = out.peak <= target;
      const bool best_meets = best && best->peak <= target;
      const bool better = !best || (meets && !best_meets) ||
                          (meets == best_meets && (meets ? out.makespan < best->makespan || (out.makespan == best->makespan && j > best_j)
                                                         : out.peak < best->peak || (out.peak == best->peak && j > best_j)));
      if (better) {
        best = std::move(out);
        best_j = j;
      }
    }
    if (!best) throw error(errc::infeasible, "offload::combined: no split between recomputation and offloading ran");
    auto out = std::move(*best);
    // With recomputation allowed, Prop. 3 on one timeline bounds nothing; every op computed once does,
    // each on its fastest implementation: the checkpointer may move ops to faster ones than the incoming
    // timeline runs (remat::best_solver_free, then monet_greedy's choice), so the incoming compute time
    // is no bound (ResNet-18 b32 at 375 MB: 0.0266 s against a plan computing in 0.0223 s).
    out.makespan_lower_bound = std::min(out.makespan, detail::fastest_compute_seconds(p, ctx.timing));
    std::sort(tried.begin(), tried.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::string list;
    for (const auto& [j, t] : tried) list += (list.empty() ? "" : ", ") + t;
    if (run < order.size())
      list += "; " + std::to_string(order.size() - run) + " of " + std::to_string(order.size()) + " splits left untried at the time limit";
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.stages.push_back({kind, name(), secs,
                          (best_j < 0 ? "combined: " + program
                                      : "combined: offloads from " + std::to_string(static_cast<double>(best_j) / static_cast<double>(steps)).substr(0, 5) +
                                            " of the way between budget and peak, recomputes below") +
                              " (fraction:makespan " + list + ")"});
    return out;
  }
};

static_assert(timeline_stage<combined<>>);

}  // namespace memplan::offload
