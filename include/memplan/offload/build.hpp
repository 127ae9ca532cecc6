#pragma once
// The makespan simulator and timeline writer every offloader drives: given WHICH candidates to
// offload, it builds the no-wait, ordered schedule of Beaumont et al. (Prop. 1: for fixed offload
// decisions and transfer order, doing every action as early as data and memory allow is best) on the
// tick model, and writes it as a timed timeline that core/verify.hpp checks.
//
// The schedule, boundary by boundary (the instant between tick k-1 and tick k):
//   1. the offloads of the chosen values produced by tick k-1 are queued on the copy engine, in
//      production order (ordered: x_0, x_1, ... as in §4.1), each starting when the engine is free;
//   2. an offload whose copy has completed by the end of tick k-1, and whose value tick k-1 no longer
//      needs, releases its device memory: its `offload` step is written here;
//   3. prefetches are issued in the order their values are needed (the reverse of the offloads on a
//      chain), each as early as its copy can start within tick k and memory allows it from this tick
//      to its reader (it allocates from the tick's start, assumption (D)); a prefetch whose reader is
//      tick k is forced;
//   4. if tick k does not fit the target, it waits for copies in flight to complete (the paper's idle
//      times epsilon^F_i, eq. (1)); when even that does not fit, the choice is infeasible;
//   5. tick k starts when the previous tick has ended, every offload written before it has completed
//      and every value it uses has arrived.
// Memory is counted per tick with copies in flight held through every tick they overlap, so the tick
// profile bounds the bytes at every instant (the invariants verify checks on times).
// The timeline build() writes then has each prefetch as late as these times allow (delay_prefetches,
// below): the same makespan, less memory held between ticks for the placer.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <memplan/core/problem.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/offload/model.hpp>

namespace memplan::offload {

struct build_result {
  bool feasible = false;
  double makespan = std::numeric_limits<double>::infinity();
  std::int64_t moved = 0;  // bytes offloaded (each also prefetched)
  std::int64_t host_peak = 0;  // most bytes on the host at once (feasible runs under a host limit; else 0)
  std::string why;         // when infeasible
  // The steps of its loops, in work_clock units (base/deadline.hpp): what a search charges for the
  // simulation in deterministic mode (policies.hpp's chooser; weights in builder::work_units).
  std::int64_t work = 0;
};

namespace detail {

class builder {
 public:
  builder(const problem& p, const timeline& in, const tick_model& m, std::int64_t target) : p_(p), in_(in), m_(m), target_(target) {}

  // Simulates the offload of the chosen candidates (indices into m.candidates). With `out`, writes
  // the timed timeline there (only when feasible).
  build_result run(std::span<const std::int32_t> chosen, timeline* out) {
    build_result r;
    const auto n = m_.ticks();
    const auto nu = static_cast<std::size_t>(n);
    const auto nc = chosen.size();
    // Bytes each tick needs when every chosen value is off the device throughout its gap.
    std::vector<std::int64_t> need(m_.live.begin(), m_.live.end());
    std::vector<std::int64_t> diff(nu + 1, 0);
    for (auto ci : chosen) {
      const auto& c = cand(ci);
      r.moved += c.bytes;
      diff[static_cast<std::size_t>(c.before) + 1] -= c.bytes;
      diff[static_cast<std::size_t>(c.after)] += c.bytes;
    }
    std::int64_t run_sum = 0;
    for (std::size_t k = 0; k < nu; ++k) need[k] += (run_sum += diff[k]);
    std::vector<std::int32_t> by_need(chosen.begin(), chosen.end());
    std::stable_sort(by_need.begin(), by_need.end(), [&](std::int32_t a, std::int32_t b) { return cand(a).after < cand(b).after; });
    std::vector<std::int32_t> by_made(chosen.begin(), chosen.end());
    std::stable_sort(by_made.begin(), by_made.end(), [&](std::int32_t a, std::int32_t b) { return cand(a).produced < cand(b).produced; });

    // Per chosen candidate (by its position j in `chosen`): offload / prefetch times, state.
    std::vector<double> off_b(nc), off_e(nc), pre_b(nc), pre_e(nc);
    std::vector<std::uint8_t> released(nc, 0), fetched(nc, 0);
    std::vector<std::int32_t> slot(m_.candidates.size(), -1);
    for (std::size_t j = 0; j < nc; ++j) slot[static_cast<std::size_t>(chosen[j])] = static_cast<std::int32_t>(j);
    std::vector<std::int32_t> holding;  // issued offloads not released yet (positions j), in issue order
    // Of those, the ones whose value no tick from here on needs before its gap (c.before < k): the
    // only ones a boundary can release. Kept in issue order too (the releases at a boundary are
    // written in that order), and filled from `unripe` (a min-heap by the boundary each becomes ripe
    // at, c.before + 1). Step 2 scanned every held offload at every boundary before, and on DenseNet-121
    // b32 most stay held through the forward pass: 16,000 looks a simulation where 2,600 are ripe.
    // (The work counters still count `holding`, so deterministic searches charge what they did.)
    std::vector<std::int32_t> ripe, issued(nc, 0);
    std::vector<std::pair<std::int32_t, std::int32_t>> unripe;  // (c.before + 1, j)
    std::int32_t issues = 0;
    std::int64_t ripe_bytes = 0;  // what the ripe offloads hold: step 4's held bytes (below)
    // Loop steps: per tick, per candidate and storage set up, per offload held that a tick looks at.
    std::int64_t per_tick = static_cast<std::int64_t>(nu) + p_.num_storages(), scanned = 0;
    // When the prefetches read by each tick arrive (the latest). A tick waits only for those: a value
    // is untouched strictly inside its gap, so of the storages a tick touches, only those prefetched
    // for it can arrive after the previous tick ended (a max over every touched storage's arrival, as
    // before, gave the same start: 10 % of the simulation's time on DenseNet-121 b32, spent in that
    // loop's dependency through memory).
    std::vector<double> due(nu, 0.0);
    // Transfer steps written at each boundary, in order: +j+1 offload, -(j+1) prefetch.
    std::vector<std::vector<std::int32_t>> at(nu + 1);
    std::vector<double> op_b(nu), op_e(nu);
    double engine = 0.0, released_end = 0.0, prev_end = 0.0;
    std::size_t made = 0, next_fetch = 0;
    auto release = [&](std::int32_t j, std::int32_t k) {
      released[static_cast<std::size_t>(j)] = 1;
      released_end = std::max(released_end, off_e[static_cast<std::size_t>(j)]);
      at[static_cast<std::size_t>(k)].push_back(j + 1);
      holding.erase(std::find(holding.begin(), holding.end(), j));
      ripe.erase(std::find(ripe.begin(), ripe.end(), j));  // (every release is of a ripe offload: c.before < k)
      ripe_bytes -= cand(chosen[static_cast<std::size_t>(j)]).bytes;
    };
    for (std::int32_t k = 0; k <= n; ++k) {
      // 1. offloads of the values produced by tick k-1
      while (made < by_made.size() && cand(by_made[made]).produced == k - 1) {
        const auto j = static_cast<std::size_t>(slot[static_cast<std::size_t>(by_made[made++])]);
        off_b[j] = std::max(engine, prev_end);
        off_e[j] = off_b[j] + m_.transfer(cand(chosen[j]));
        engine = off_e[j];
        holding.push_back(static_cast<std::int32_t>(j));
        issued[j] = issues++;
        unripe.emplace_back(cand(chosen[j]).before + 1, static_cast<std::int32_t>(j));
        std::push_heap(unripe.begin(), unripe.end(), std::greater<>{});
      }
      // 2. completed copies of values no longer needed release their memory
      scanned += static_cast<std::int64_t>(holding.size());
      while (!unripe.empty() && unripe.front().first <= k) {
        std::pop_heap(unripe.begin(), unripe.end(), std::greater<>{});
        const auto j = unripe.back().second;
        unripe.pop_back();
        ripe.insert(std::upper_bound(ripe.begin(), ripe.end(), j,
                                     [&issued](std::int32_t a, std::int32_t b) { return issued[static_cast<std::size_t>(a)] < issued[static_cast<std::size_t>(b)]; }),
                    j);
        ripe_bytes += cand(chosen[static_cast<std::size_t>(j)]).bytes;
      }
      for (std::size_t h = 0; h < ripe.size();) {
        const auto j = ripe[h];
        if (time_le(off_e[static_cast<std::size_t>(j)], prev_end)) release(j, k);
        else ++h;
      }
      if (k == n) break;
      // 3. prefetches, in the order their values are needed
      while (next_fetch < by_need.size()) {
        const auto j = static_cast<std::size_t>(slot[static_cast<std::size_t>(by_need[next_fetch])]);
        const auto& c = cand(chosen[j]);
        const bool forced = c.after == k;
        if (!forced) {
          // The copy must start within tick k (it allocates from the tick's start on).
          if (!released[j] || engine > prev_end + m_.seconds[static_cast<std::size_t>(k)]) break;
          bool fits = true;
          for (auto t = k; t < c.after && fits; ++t) {
            fits = need[static_cast<std::size_t>(t)] + c.bytes + held_bytes(holding, t, chosen) <= target_;
            scanned += 1 + static_cast<std::int64_t>(holding.size());
          }
          if (!fits) break;
        } else if (!released[j]) {
          release(static_cast<std::int32_t>(j), k);  // its copy must complete before it comes back
        }
        pre_b[j] = std::max({engine, prev_end, released_end});
        pre_e[j] = pre_b[j] + m_.transfer(c);
        engine = pre_e[j];
        fetched[j] = 1;
        for (auto t = k; t < c.after; ++t) need[static_cast<std::size_t>(t)] += c.bytes;
        scanned += c.after - k;
        due[static_cast<std::size_t>(c.after)] = std::max(due[static_cast<std::size_t>(c.after)], pre_e[j]);
        at[static_cast<std::size_t>(k)].push_back(-static_cast<std::int32_t>(j) - 1);
        ++next_fetch;
      }
      // 4. memory of tick k: wait for copies in flight when it does not fit (earliest completion first)
      // Held at tick k: the offloads with c.before < k < c.after, i.e. the ripe ones (one with
      // c.after <= k was released by its prefetch at the latest, step 3).
      auto total = need[static_cast<std::size_t>(k)] + ripe_bytes;
      scanned += static_cast<std::int64_t>(holding.size());
      while (total > target_) {
        scanned += static_cast<std::int64_t>(holding.size());
        std::int32_t best = -1;
        for (auto j : ripe)  // (the held offloads with c.before < k, in the same order)
          if (best < 0 || off_e[static_cast<std::size_t>(j)] < off_e[static_cast<std::size_t>(best)]) best = j;
        if (best < 0) break;
        total -= cand(chosen[static_cast<std::size_t>(best)]).bytes;
        release(best, k);
      }
      if (total > target_) {
        r.why = "tick " + std::to_string(k) + " needs " + std::to_string(total) + " bytes with these values offloaded, above the target of " +
                std::to_string(target_);
        r.work = work_units(per_tick, scanned, nc);
        return r;
      }
      // 5. the op
      const auto& st = in_.steps[static_cast<std::size_t>(m_.tick_step[static_cast<std::size_t>(k)])];
      const double b = std::max({prev_end, released_end, due[static_cast<std::size_t>(k)]});
      per_tick += 1 + static_cast<std::int64_t>(p_.touched(st.id).size());
      op_b[static_cast<std::size_t>(k)] = b;
      op_e[static_cast<std::size_t>(k)] = prev_end = b + m_.seconds[static_cast<std::size_t>(k)];
    }
    r.feasible = true;
    r.makespan = std::max(prev_end, engine);
    r.work = work_units(per_tick, scanned, nc);
    // Host bytes, under a host limit only (the searches simulate tens of thousands of choices): a value
    // is there from the start of its offload to the end of its prefetch (as host_peak() counts the
    // written steps), so that choosers can hold the limit.
    if (m_.timing.host_limit >= 0) {
      std::vector<std::pair<double, std::int64_t>> ev;
      ev.reserve(2 * nc);
      for (std::size_t j = 0; j < nc; ++j) {
        const auto b = p_.storage_bytes(p_.storage_of(cand(chosen[j]).tensor));
        ev.emplace_back(off_b[j], b);
        ev.emplace_back(pre_e[j], -b);
      }
      r.host_peak = most_at_once(std::move(ev));
    }
    if (out) {
      delay_prefetches(chosen, at, op_b, op_e, off_b, off_e, pre_b, pre_e);
      write(chosen, at, op_b, op_e, off_b, off_e, pre_b, pre_e, r.makespan, *out);
    }
    return r;
  }

 private:
  // Weights fitted on the simulation's wall time (140 choices: greedy's and random flips of it, on
  // seven batch-32 exports at 0.8, 0.6 and 0.45 of their peak, this project's 2-core machine): a unit
  // then took 0.26-0.71 ns, 0.51 ns the median (the other loops -- sorts, releases -- are left out).
  [[nodiscard]] static std::int64_t work_units(std::int64_t per_tick, std::int64_t scanned, std::size_t chosen) {
    return 5 * per_tick + 2 * scanned + 88 * static_cast<std::int64_t>(chosen);
  }
  [[nodiscard]] const candidate& cand(std::int32_t i) const { return m_.candidates[static_cast<std::size_t>(i)]; }
  // Bytes of issued, unreleased offloads whose value tick t would not otherwise hold.
  [[nodiscard]] std::int64_t held_bytes(const std::vector<std::int32_t>& holding, std::int32_t t, std::span<const std::int32_t> chosen) const {
    std::int64_t b = 0;
    for (auto j : holding) {
      const auto& c = cand(chosen[static_cast<std::size_t>(j)]);
      if (c.before < t && t < c.after) b += c.bytes;
    }
    return b;
  }

  // The written schedule's prefetches as late as its times allow. The simulation issues each as early
  // as memory allows (Prop. 1: early is never slower), so the device is full to the target at most
  // ticks and the placer must pack a flat profile. Once the times are known, a prefetch may start
  // later without moving anything else: walking the copy engine backwards, each ends by the start of
  // the transfer after it and of the op that reads its value, and is written at the last boundary whose
  // op before has ended and whose listed offloads have completed by its new start (the rules verify
  // checks). Op times, offloads and the makespan stay; a prefetched value's device lifetime only
  // shrinks, so every placement of the early timeline fits the late one and the tick profile only
  // falls. The host peak stays too: it is reached when an offload starts, and every prefetch before
  // that offload on the engine still ends by then.
  void delay_prefetches(std::span<const std::int32_t> chosen, std::vector<std::vector<std::int32_t>>& at, const std::vector<double>& op_b,
                        const std::vector<double>& op_e, const std::vector<double>& off_b, const std::vector<double>& off_e,
                        std::vector<double>& pre_b, std::vector<double>& pre_e) const {
    const auto nc = chosen.size();
    const auto nb = at.size();  // boundaries 0..n
    std::vector<std::size_t> pre_at(nc, nb), off_at(nc, nb);
    std::vector<std::tuple<double, double, std::int32_t>> engine;  // (begin, end, +j+1 offload / -(j+1) prefetch)
    for (std::size_t b = 0; b < nb; ++b)
      for (auto x : at[b]) {
        const auto j = static_cast<std::size_t>(x > 0 ? x - 1 : -x - 1);
        (x > 0 ? off_at : pre_at)[j] = b;
      }
    for (std::size_t j = 0; j < nc; ++j) {
      if (off_at[j] == nb || pre_at[j] == nb) return;  // not a complete round trip: leave the schedule as it is
      engine.emplace_back(off_b[j], off_e[j], static_cast<std::int32_t>(j) + 1);
      engine.emplace_back(pre_b[j], pre_e[j], -static_cast<std::int32_t>(j) - 1);
    }
    // The engine's order (copies never overlap; a copy of no bytes sorts before one it starts with).
    std::stable_sort(engine.begin(), engine.end(), [](const auto& a, const auto& b) {
      return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) < std::get<0>(b) : std::get<1>(a) < std::get<1>(b);
    });
    auto late_b = pre_b, late_e = pre_e;
    double limit = std::numeric_limits<double>::infinity();
    for (auto it = engine.rbegin(); it != engine.rend(); ++it) {
      const auto x = std::get<2>(*it);
      const auto j = static_cast<std::size_t>(x > 0 ? x - 1 : -x - 1);
      if (x > 0) {
        limit = std::min(limit, off_b[j]);
        continue;
      }
      const auto reader = static_cast<std::size_t>(cand(chosen[j]).after);
      const double end = std::min(limit, reader < op_b.size() ? op_b[reader] : limit);
      if (end > pre_e[j] && end < std::numeric_limits<double>::infinity()) {
        late_e[j] = end;
        late_b[j] = end - (pre_e[j] - pre_b[j]);
      }
      limit = std::min(limit, late_b[j]);
    }
    // The latest completion of the offloads written at boundaries 0..b (each is listed before the
    // transfers and ops that follow it).
    std::vector<double> released_by(nb, 0.0);
    for (std::size_t j = 0; j < nc; ++j) released_by[off_at[j]] = std::max(released_by[off_at[j]], off_e[j]);
    for (std::size_t b = 1; b < nb; ++b) released_by[b] = std::max(released_by[b], released_by[b - 1]);
    for (std::size_t j = 0; j < nc; ++j) {
      if (late_b[j] == pre_b[j]) continue;
      const auto last = std::min(nb - 1, static_cast<std::size_t>(cand(chosen[j]).after));
      auto b = pre_at[j];
      while (b < last && op_e[b] <= late_b[j] && released_by[b + 1] <= late_b[j]) ++b;
      pre_b[j] = late_b[j];
      pre_e[j] = late_e[j];
      if (b == pre_at[j]) continue;
      auto& from = at[pre_at[j]];
      from.erase(std::find(from.begin(), from.end(), -static_cast<std::int32_t>(j) - 1));
      at[b].push_back(-static_cast<std::int32_t>(j) - 1);
    }
  }

  void write(std::span<const std::int32_t> chosen, const std::vector<std::vector<std::int32_t>>& at, const std::vector<double>& op_b,
             const std::vector<double>& op_e, const std::vector<double>& off_b, const std::vector<double>& off_e,
             const std::vector<double>& pre_b, const std::vector<double>& pre_e, double makespan, timeline& out) const {
    timeline tl;
    tl.order_lower_bound = in_.order_lower_bound;
    tl.order_optimal = in_.order_optimal;
    tl.stages = in_.stages;
    tl.alignment = in_.alignment;
    std::int32_t k = 0;
    double now = 0.0;
    auto transfers = [&](std::int32_t b) {
      // Releases before allocations at one boundary (the replay places both at this instant).
      // Prefetches in the order they start (delay_prefetches may have moved some here).
      auto xs = at[static_cast<std::size_t>(b)];
      std::stable_partition(xs.begin(), xs.end(), [](std::int32_t x) { return x > 0; });
      std::stable_sort(std::find_if(xs.begin(), xs.end(), [](std::int32_t x) { return x < 0; }), xs.end(),
                       [&](std::int32_t x, std::int32_t y) { return pre_b[static_cast<std::size_t>(-x - 1)] < pre_b[static_cast<std::size_t>(-y - 1)]; });
      for (auto x : xs) {
        const auto j = static_cast<std::size_t>(x > 0 ? x - 1 : -x - 1);
        const auto& c = cand(chosen[j]);
        step s{x > 0 ? step_kind::offload : step_kind::prefetch, c.tensor};
        s.begin = x > 0 ? off_b[j] : pre_b[j];
        s.end = x > 0 ? off_e[j] : pre_e[j];
        tl.steps.push_back(s);
      }
    };
    for (const auto& st0 : in_.steps) {
      step st = st0;
      if (runs_op(st.kind)) {
        transfers(k);
        st.begin = op_b[static_cast<std::size_t>(k)];
        st.end = now = op_e[static_cast<std::size_t>(k)];
        ++k;
      } else {
        st.begin = st.end = now;
      }
      tl.steps.push_back(st);
    }
    transfers(k);
    relink(p_, tl);
    tl.timed = true;
    tl.timing = m_.timing;
    tl.makespan = makespan;
    tl.compute_time = m_.compute_time;
    tl.host_peak = host_peak(p_, tl);
    out = std::move(tl);
  }

  const problem& p_;
  const timeline& in_;
  const tick_model& m_;
  std::int64_t target_;

 public:
  // Most bytes on the host at once: a value is there from the start of its offload to the end of its prefetch.
  static std::int64_t host_peak(const problem& p, const timeline& tl) {
    std::vector<std::pair<double, std::int64_t>> ev;
    for (const auto& s : tl.steps) {
      if (s.kind == step_kind::offload) ev.push_back({s.begin, p.storage_bytes(p.storage_of(s.id))});
      if (s.kind == step_kind::prefetch) ev.push_back({s.end, -p.storage_bytes(p.storage_of(s.id))});
    }
    return most_at_once(std::move(ev));
  }
  // The most bytes held at once by (time, +bytes at a copy's start / -bytes at its end) events; at one
  // instant the ends come first (they sort before the starts).
  static std::int64_t most_at_once(std::vector<std::pair<double, std::int64_t>> ev) {
    std::sort(ev.begin(), ev.end());
    std::int64_t cur = 0, peak = 0;
    for (const auto& e : ev) peak = std::max(peak, cur += e.second);
    return peak;
  }
};

}  // namespace detail

// Simulates offloading `chosen` (indices into m.candidates) from timeline `in` under `target` bytes.
inline build_result simulate(const problem& p, const timeline& in, const tick_model& m, std::span<const std::int32_t> chosen,
                             std::int64_t target) {
  return detail::builder(p, in, m, target).run(chosen, nullptr);
}

// The same, writing the timed timeline (verify-ready once placed). Throws errc::infeasible with the
// reason when the choice does not fit the target.
inline timeline build(const problem& p, const timeline& in, const tick_model& m, std::span<const std::int32_t> chosen, std::int64_t target) {
  timeline out;
  const auto r = detail::builder(p, in, m, target).run(chosen, &out);
  if (!r.feasible) throw error(errc::infeasible, "offload: " + r.why);
  return out;
}

}  // namespace memplan::offload
