#pragma once
// remat::greedy -- a solver-free checkpointer for arbitrary DAGs, in two moves:
//  1. drop, after their last forward use, the forward values that are cheapest to recompute per byte
//     (producer cost / bytes, Chen §4.2's "drop the results of low cost operations" made quantitative,
//     as MONeT's and Checkmate's solutions do for batch norm and activations): the shortest prefix of
//     that ranking whose plan meets the memory target, found by bisection;
//  2. whatever still exceeds the target, evict under pressure: before an op (or a recompute) would
//     push the live bytes above it, free the live value that is cheapest to bring back per byte-step it
//     frees -- recompute cost / (bytes x steps to its next use), DTR's score (Kirisame et al. 2021)
//     with the exact next use, since the order is fixed.
// Values come back just in time, recursively, from whatever is still on the device. The plan with the
// least recompute cost that meets the target is returned (the lowest peak when none does). Without a
// target, the timeline is returned unchanged. About a dozen O(steps) replays; fast on 100k-op graphs.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <memplan/base/deadline.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/problem_builder.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/remat/chen.hpp>
#include <memplan/remat/detail.hpp>
#include <memplan/remat/engine.hpp>
#include <memplan/remat/segments.hpp>

namespace memplan::remat {

namespace detail {
// Drops the chosen forward values after their last forward use. A value rebuilt in a burst for
// another one is kept until its next use, unless free_after[s] (when given) says to free it then.
struct drop_set_policy {
  const forward_chain* c;
  std::vector<std::uint8_t> drop_it;
  std::vector<std::uint8_t> free_after = {};
  bool siblings = false;  // the engine's sibling rebuilds (engine::add_siblings)
  [[nodiscard]] bool rebuild_siblings() const { return siblings; }
  [[nodiscard]] bool drop(storage_id s, std::int32_t pos) const {
    return drop_it[static_cast<std::size_t>(s)] && c->drop_point[static_cast<std::size_t>(s)] == pos;
  }
  [[nodiscard]] bool keep(storage_id s, std::int32_t, storage_id need) const {
    return free_after.empty() || s == need || !free_after[static_cast<std::size_t>(s)];
  }
};
}  // namespace detail

struct greedy {
  static constexpr stage_kind kind = stage_kind::checkpointer;
  bool evict = true;       // move 2 (DTR eviction under the target)
  bool drop_cheap = true;  // move 1 (the ranked drops)
  // Move 1 may drop values that end an in-place chain (a block's output after its add_ and relu_,
  // rebuilt by replaying the chain). false: only values no in-place write has touched by their drop
  // point -- the ReLU outputs then stay as natural checkpoints, which is the cheaper plan on some
  // graphs (MobileNet-V2, MnasNet and Inception-v3 at batch 32: 0.2-1.0 points of overhead less), so
  // remat::best_solver_free runs both.
  bool inplace_chains = true;
  // Move 1 rebuilds a dropped value from its producer's inputs, recursively from what is on the
  // device: when those inputs were freed after their last forward use, the rebuild cascades back
  // through their producers. true: the search runs on a copy of the problem in which every backward
  // reader of a forward value also reads its producer's forward inputs (those no in-place write
  // touches), so they stay on the device until then or are dropped in their own right --
  // memory-efficient DenseNet's recipe (Pleiss et al. 2017): keep a concatenation's small inputs,
  // rebuild the large concatenation. The copy reads a superset, so its steps plan the problem itself.
  // DenseNet-121 at half its peak (batch 32): 36.8 % overhead -> 11.3 %. remat::best_solver_free runs it.
  bool keep_rebuild_inputs = false;
  // After the shortest prefix that meets the target: keep dropped values again, costliest first,
  // while the plan still meets it (one replay each, at most max_restores).
  bool restore = true;
  int max_restores = 128;
  // 3. Then search which values to drop by simulated annealing, from the best drop set so far: each
  // step flips one ranked value (dropped or kept) and replays, then a second phase also flips a second
  // bit per value (when a burst rebuilds it as another value's input: freed right after that burst,
  // or kept to its next use); a step is taken when it lowers
  // recompute cost + a penalty per byte above the target, or else with the Metropolis probability at a
  // temperature that cools from 1 % to 0.1 % of the step's compute cost. It finds what the ranking
  // cannot see: when a value and the input it is rebuilt from are both dropped, the rebuild cascades,
  // so good sets drop one of each such pair (SqueezeNet at half its peak: 12.5 -> 10.2 %). The second
  // bit trades a rebuilt input's bytes until its next use for rebuilding it again then (the
  // transformer at half its peak: 23.2 -> 22.5 %, where no order allows less than 22.4 %). Its steps
  // are counted, not timed, from a fixed seed, so the plan repeats: anneal_steps per phase, or by default
  // 100 per ranked value when that is at most anneal_work op replays (above, none: the replays of the
  // large batch-32 exports take 0.5 ms, and there it found nothing in the time a plan has). A time
  // limit that still runs out (a loaded machine) stops it with the best plan so far.
  // remat::best_solver_free anneals the greedy variant that won.
  bool anneal = false;
  int anneal_steps = 0;
  // A burst that overwrites a version in place also rebuilds the dropped values made from it
  // (engine::add_siblings).
  bool siblings = true;
  std::int64_t anneal_work = 1'000'000;
  [[nodiscard]] std::string name() const {
    return std::string(inplace_chains ? "greedy" : "greedy+keep_inplace_chains") + (keep_rebuild_inputs ? "+keep_rebuild_inputs" : "") +
           (anneal ? "+anneal" : "");
  }

  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    const auto target = detail::target_of(ctx);
    if (tl.peak <= target) {
      tl.stages.push_back({kind, name(), 0.0, "greedy: the peak already meets the target, nothing recomputed"});
      return tl;
    }
    if (keep_rebuild_inputs) return run_keeping_rebuild_inputs(p, std::move(tl), ctx);
    detail::engine e(p, tl);
    const auto c = chain_of(p, e.order(), [&](op_id o) { return e.cost(o); });
    // The ranking: droppable forward values, cheapest to recompute per byte first.
    // The cost of bringing a value back counts, besides its producer, the in-place writes that made
    // the version dropped (batch norm, add_, relu_) and the producers of what it reads that an in-place
    // write has overwritten by then (the old value is rebuilt too): a clone of a pre-activation costs
    // the clone plus the batch norm that made it.
    std::vector<std::pair<double, storage_id>> rank;
    std::vector<std::uint8_t> chain_end(static_cast<std::size_t>(p.num_storages()), 0);  // holds an in-place version when dropped
    if (drop_cheap)
      for (auto s : c.produced) {
        if (!c.droppable(s)) continue;
        const auto h = e.held_at(s, c.drop_point[static_cast<std::size_t>(s)]);
        if (!e.ever_recreatable(h) || (!inplace_chains && h != p.storage_root(s))) continue;
        chain_end[static_cast<std::size_t>(s)] = h != p.storage_root(s);
        const auto cost = e.rebuild_cost(h, [&](tensor_id r) { return e.overwritten_in_place(r); });
        rank.push_back({cost / static_cast<double>(p.storage_bytes(s)), s});
      }
    std::stable_sort(rank.begin(), rank.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    // Each attempt is one engine replay; an attempt starts only while the time left covers the longest
    // one so far (step_pacer), except the first and, when nothing met the target yet, one eviction run
    // (the safety net that reaches it).
    const auto clock = deadline::after(ctx.time_limit_or(-1.0));
    step_pacer pace(clock);
    bool cut = false;
    std::vector<detail::candidate> cs;
    std::vector<std::vector<std::uint8_t>> sets;  // with anneal, per candidate: its drop set (empty: an eviction run)
    std::vector<std::uint8_t> kept(rank.size(), 0);  // prefix entries kept after all (the restore pass)
    auto attempt = [&](std::size_t k, bool with_eviction, bool keep_chain_ends = false) {
      detail::drop_set_policy pol{&c, std::vector<std::uint8_t>(static_cast<std::size_t>(p.num_storages()), 0), {}, siblings};
      for (std::size_t i = 0; i < k; ++i)
        pol.drop_it[static_cast<std::size_t>(rank[i].second)] = !kept[i] && !(keep_chain_ends && chain_end[static_cast<std::size_t>(rank[i].second)]);
      engine_stats st;
      // Eviction runs stop at the deadline (and then give no plan); plain ones always finish.
      detail::candidate cand{e.run(pol, target, with_eviction, &st, with_eviction ? &clock : nullptr), 0.0, {}};
      if (st.aborted) {  // the deadline passed during the replay: no plan (only eviction runs stop)
        cut = true;
        return std::numeric_limits<std::int64_t>::max();
      }
      if (anneal) sets.push_back(with_eviction ? std::vector<std::uint8_t>{} : pol.drop_it);
      cand.cost = detail::recompute_cost(e, cand.tl);
      cand.what = std::to_string(k) + " cheapest values dropped" + (keep_chain_ends ? " but those ending in-place chains" : "") +
                  (with_eviction ? ", " + std::to_string(st.evictions) + " evictions" : std::string());
      cs.push_back(std::move(cand));
      return cs.back().tl.peak;
    };
    // The shortest prefix that meets the target by drops alone. The peak mostly falls as the prefix
    // grows, but not always: once the values that end in-place chains (a block's output after its
    // add_ and relu_) are dropped too, rebuilding one needs the one before it, and so on back to the
    // input, and the whole forward pass comes back at once. So when every drop together misses the
    // target, the same drops but those ending in-place chains run at once (they do not cascade: the
    // ReLU outputs stay as checkpoints; a policy stopped at its first results still has this one), then
    // a grid of prefixes finds the first that meets it (the bisection then runs below it), or else the
    // prefix with the lowest peak, where eviction starts.
    std::size_t lo = 0, hi = rank.size();
    (void)pace.next();
    bool bisect = false;
    if (!rank.empty()) {
      auto least = attempt(hi, false);
      bisect = least <= target;
      if (!bisect && std::any_of(chain_end.begin(), chain_end.end(), [](std::uint8_t x) { return x != 0; })) attempt(hi, false, true);
      if (!bisect) {
        std::size_t lowest = hi, prev = 0;
        constexpr std::size_t grid = 8;
        for (std::size_t j = 1; j < grid && !(cut = !pace.next()); ++j) {
          const auto k = hi * j / grid;
          if (k <= prev) continue;
          const auto pk = attempt(k, false);
          if (pk <= target) {
            lo = prev + 1;
            hi = k;
            bisect = true;
            break;
          }
          if (pk < least) {
            least = pk;
            lowest = k;
          }
          prev = k;
        }
        if (!bisect) lo = lowest;
      }
    }
    if (bisect) {
      while (lo < hi && !(cut = !pace.next())) {
        const auto mid = lo + (hi - lo) / 2;
        if (attempt(mid, false) <= target) hi = mid;
        else lo = mid + 1;
      }
    }
    if (bisect && restore) {
      // The shortest prefix meeting the target usually leaves room under it (the last drop freed more
      // than was missing). Keep its drops again, the costliest first, while the plan still meets the
      // target: each a replay, at most max_restores of them. At half the peak of the batch-32 exports:
      // SqueezeNet 14.5 -> 12.5 %, DenseNet-121 11.3 -> 10.8 %, RegNet 11.5 -> 11.2 % overhead.
      std::vector<std::size_t> order(hi);
      for (std::size_t i = 0; i < hi; ++i) order[i] = i;
      const auto cost_of = [&](std::size_t i) { return rank[i].first * static_cast<double>(p.storage_bytes(rank[i].second)); };
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return cost_of(a) > cost_of(b); });
      int tried = 0;
      for (auto i : order) {
        if (tried == max_restores || !pace.next()) {
          cut |= tried < max_restores;
          break;
        }
        ++tried;
        kept[i] = 1;
        if (attempt(hi, false) > target) {
          kept[i] = 0;
          cs.pop_back();  // the plan that missed: not a candidate
          if (anneal) sets.pop_back();
        }
      }
      std::fill(kept.begin(), kept.end(), 0);
    }
    std::string annealing;
    if (anneal && !cs.empty() && !cut) cut = !anneal_drops(e, c, rank, target, clock, sets[detail::choose(cs, target)], cs, sets, annealing);
    if (evict) {
      // Eviction from there and from shorter prefixes: drops it need not make.
      const bool fits = std::any_of(cs.begin(), cs.end(), [&](const detail::candidate& c) { return c.tl.peak <= target; });
      step_pacer pace_evict(clock);  // eviction runs cost more than plain ones: paced on their own
      bool first = !fits;
      for (std::size_t k : {std::size_t{0}, lo / 4, lo / 2, 3 * lo / 4, lo}) {
        const bool go = pace_evict.next();  // (also times the previous run)
        if (!first && (!go || clock.expired())) {
          cut = true;
          break;
        }
        first = false;
        attempt(k, true);
      }
    }
    if (cs.empty()) {  // only when every run was an eviction run the deadline cut short
      tl.stages.push_back({kind, name(), 0.0, "greedy: nothing recomputed: the time limit passed before a replay finished"});
      return tl;
    }
    const auto best = detail::choose(cs, target);
    const bool missed = cs[best].tl.peak > target;
    return detail::finish(tl, std::move(cs[best]), kind, name(), e,
                          std::to_string(cs.size()) + " plans tried" + (cut ? " (time limit reached)" : "") + annealing +
                              (missed ? "; the target was not reached" : ""));
  }

 private:
  // Phase 3 (see `anneal`): adds the best plan it replays that meets the target (or, when none of cs
  // does, the one with the lowest peak) to cs; says in `note` when it did not run in full. False when
  // the clock stopped it.
  bool anneal_drops(detail::engine& e, const forward_chain& c, const std::vector<std::pair<double, storage_id>>& rank, std::int64_t target,
                    const deadline& clock, std::vector<std::uint8_t> drop, std::vector<detail::candidate>& cs,
                    std::vector<std::vector<std::uint8_t>>& sets, std::string& note) const {
    const double total = detail::compute_cost(e);
    if (rank.empty() || drop.empty() || !(total > 0) || target == std::numeric_limits<std::int64_t>::max()) return true;
    const auto ops = static_cast<std::int64_t>(std::max<std::size_t>(1, e.order().size()));
    const std::int64_t steps = anneal_steps > 0 ? static_cast<std::int64_t>(anneal_steps) : 100 * static_cast<std::int64_t>(rank.size());
    if (anneal_steps <= 0 && steps > anneal_work / ops) {
      note += "; not annealed: " + std::to_string(steps) + " steps of " + std::to_string(ops) + " ops are more than anneal_work = " +
              std::to_string(anneal_work) + " op replays";
      return true;
    }
    const double per_byte = 2.0 * total / static_cast<double>(std::max<std::int64_t>(target, 1));  // 1 % over: 2 % of a step
    const double hot = 0.01 * total, cold = 0.001 * total;
    // Second bit per ranked value: free it right after a burst that rebuilt it as another value's
    // input, instead of keeping it until its next use. A second phase, from the best plan of the
    // first, flips either bit (as many steps again); the first flips drop bits only, as before the
    // second bit existed. Flipping either bit from the start left fewer steps for the drop set, and
    // plans got costlier (SqueezeNet at half its peak 5.8 -> 6.3 %, the transformer at 0.7x 8.2 ->
    // 11.2 %); a second phase over the free bits alone did not find the transformer's 22.5 %.
    std::vector<std::uint8_t> freed(drop.size(), 0);
    auto replay = [&](double& cost) {
      detail::drop_set_policy pol{&c, drop, freed, siblings};
      auto tl = e.run(pol, std::numeric_limits<std::int64_t>::max(), false);
      cost = detail::recompute_cost(e, tl);
      return tl;
    };
    auto score = [&](std::int64_t peak, double cost) { return cost + per_byte * static_cast<double>(std::max<std::int64_t>(0, peak - target)); };
    double cost = 0;
    auto best = replay(cost);
    double best_cost = cost, current = score(best.peak, cost);
    std::vector<std::uint8_t> best_drop = drop, best_freed = freed;
    // A fixed generator and seed, and integer draws: the same steps on every run and standard library.
    std::mt19937 rng(0x6d656d70u);
    std::int64_t improved = 0, k = 0, total_steps = 0;
    for (const int phase : {0, 1}) {
      const std::int64_t n = steps;
      total_steps += n;
      if (phase == 1) {  // from the best plan so far
        drop = best_drop;
        freed = best_freed;
        current = score(best.peak, best_cost);
      }
      for (std::int64_t j = 0; j < n && !clock.expired(); ++j, ++k) {
        const double temperature = hot * std::pow(cold / hot, static_cast<double>(j) / static_cast<double>(n));
        const auto r = rng() % ((phase + 1) * rank.size());
        auto& x = (r < rank.size() ? drop : freed)[static_cast<std::size_t>(rank[r % rank.size()].second)];
        x ^= 1;
        double c2 = 0;
        auto tl = replay(c2);
        const double s2 = score(tl.peak, c2);
        const double draw = static_cast<double>(rng()) / 4294967296.0;
        if (s2 <= current || draw < std::exp((current - s2) / temperature)) {
          current = s2;
          const bool fits = tl.peak <= target, best_fits = best.peak <= target;
          if (fits ? (!best_fits || c2 < best_cost) : (!best_fits && tl.peak < best.peak)) {
            best = std::move(tl);
            best_cost = c2;
            best_drop = drop;
            best_freed = freed;
            ++improved;
          }
        } else {
          x ^= 1;
        }
      }
    }
    if (k < total_steps) note += "; annealing stopped by the time limit after " + std::to_string(k) + " of " + std::to_string(total_steps) + " steps";
    if (improved > 0) {
      cs.push_back({std::move(best), best_cost, "annealed drop set (" + std::to_string(k) + " steps, " + std::to_string(improved) + " improvements)"});
      sets.push_back(std::move(best_drop));
    }
    return k == total_steps;
  }

  [[nodiscard]] timeline run_keeping_rebuild_inputs(const problem& p, timeline tl, const plan_context& ctx) const {
    std::int64_t extra = 0;
    const auto q = with_ops(p, [&](const problem& g, op_id o, op_fields& f) {
      if (g.phase(o) != op_phase::backward) return;
      for (auto t : g.inputs(o)) {
        const auto w = g.producer(t);
        if (w == no_id || g.phase(w) != op_phase::forward || !g.recomputable(w)) continue;
        for (auto u : g.inputs(w)) {
          const auto su = g.storage_of(u);
          const auto pu = g.producer(u);
          if (g.resident(su) || g.storage_bytes(su) == 0 || g.storage_tensors(su).size() != 1 || pu == no_id ||
              g.phase(pu) != op_phase::forward || std::find(f.inputs.begin(), f.inputs.end(), u) != f.inputs.end())
            continue;
          f.inputs.push_back(u);
          ++extra;
        }
      }
    });
    auto plain = *this;
    plain.keep_rebuild_inputs = false;
    if (extra == 0) return plain.run(p, std::move(tl), ctx);
    // The same steps and materializations on q (the same tensors, so the same storages), then back.
    auto tq = make_timeline(q, tl.order());
    const auto impl = compute_impls(p, tl);
    reassign_impls(q, tq, [&](const step& s, std::size_t) { return impl[static_cast<std::size_t>(s.id)]; });
    tq.order_lower_bound = tl.order_lower_bound;
    tq.order_optimal = tl.order_optimal;
    tq.stages = std::move(tl.stages);
    auto out = plain.run(q, std::move(tq), ctx);
    auto& stage = out.stages.back();
    if (stage.note.rfind(plain.name(), 0) == 0) stage.note.replace(0, plain.name().size(), name());
    stage.name = name();
    stage.note += "; " + std::to_string(extra) + " inputs of rebuilt values read again by backward ops";
    derive(p, out);
    return out;
  }
};

static_assert(timeline_stage<greedy>);

}  // namespace memplan::remat
