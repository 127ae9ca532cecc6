#pragma once
// The offloaders: pipeline stages (stage_kind::offloader) that choose which candidate values to move
// to the host so that the peak fits the target, and return the timed timeline of the no-wait
// ordered schedule (offload/build.hpp) -- the makespan they minimise.
//
//   offload::none         offload nothing: the incoming timeline, timed (the baseline makespan)
//   offload::greedy       GREEDY (§4.2, Thm. 2): the first k values in production order, k the least
//                         that fits (Thm. 2 starts from the least k whose bytes reach peak - target)
//   offload::vdnn         the paper's VDNN baseline (§6, after VDNN++): for every threshold on the
//                         ratio u_F / |x| of the values, offload those above it, or every other of
//                         them; the best that fits
//   offload::brute_force  every subset of the candidates (small graphs only): the least makespan;
//                         the exact optimum of the no-wait ordered schedules the builder makes
//   offload::refined      greedy, then local search: drop, add or swap one value while the makespan
//                         improves (memplan's own), within a time limit (2 s; on a work clock in
//                         deterministic mode)
//   offload::dynprog      Alg. 1 (offload/dynprog.hpp)
//   offload::combined     keep / offload / recompute (offload/combined.hpp)
//   offload::default_offloader  the best of greedy, dynprog, vdnn and refined (default_offloader.hpp)
//
// Every offloader records its model lower bound (offload::makespan_lower_bound, Prop. 3) in the
// timeline. Without a memory limit, or when the incoming peak already fits, nothing is offloaded.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <memplan/base/deadline.hpp>
#include <memplan/base/error.hpp>
#include <memplan/base/format.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/offload/build.hpp>
#include <memplan/offload/model.hpp>

namespace memplan::offload {

// A choice of values to offload and the makespan the builder gives it.
struct choice {
  std::vector<std::int32_t> chosen;
  double makespan = std::numeric_limits<double>::infinity();
  [[nodiscard]] bool found() const noexcept { return makespan < std::numeric_limits<double>::infinity(); }
};

namespace detail {

// Evaluates choices against one (timeline, model, target); keeps the best (least makespan, then
// fewest bytes moved, then the first seen: deterministic).
class chooser {
 public:
  chooser(const problem& p, const timeline& tl, const tick_model& m, std::int64_t target) : p_(p), tl_(tl), m_(m), target_(target) {}
  double consider(const std::vector<std::int32_t>& chosen) {
    ++evaluated_;
    const auto r = simulate(p_, tl_, m_, chosen, target_);
    if (work_) work_->charge(r.work);
    // A choice above the host limit does not fit (the limit was only checked on the final choice
    // until stop 54: a policy could pick one above it while another choice fitted).
    if (!r.feasible || (hold_host_limit && m_.timing.host_limit >= 0 && r.host_peak > m_.timing.host_limit))
      return std::numeric_limits<double>::infinity();
    if (r.makespan < best_.makespan - 1e-12 * std::max(1.0, r.makespan) ||
        (same_time(r.makespan, best_.makespan) && r.moved < best_moved_)) {
      best_ = {chosen, r.makespan};
      best_moved_ = r.moved;
    }
    return r.makespan;
  }
  [[nodiscard]] const choice& best() const noexcept { return best_; }
  [[nodiscard]] std::int64_t evaluated() const noexcept { return evaluated_; }
  [[nodiscard]] const tick_model& model() const noexcept { return m_; }
  // A chooser of its own over the same inputs (a choice computed aside), and its simulations counted here.
  [[nodiscard]] chooser sibling() const {
    chooser c(p_, tl_, m_, target_);
    c.work_ = work_;
    return c;
  }
  // Each simulation's work is charged to this deadline (a work clock's, in deterministic mode: the
  // search's time is then its simulations' work; on the steady clock charging does nothing).
  void charge_to(const deadline& d) noexcept { work_ = &d; }
  void count_simulations(std::int64_t n) noexcept { evaluated_ += n; }
  // What the policy adds to its stage note (run_offloader appends it), e.g. that its clock stopped it.
  std::string remark;
  // false: choices above the host limit count as fitting (a start for a search that then holds it).
  bool hold_host_limit = true;

 private:
  const problem& p_;
  const timeline& tl_;
  const tick_model& m_;
  std::int64_t target_;
  choice best_;
  std::int64_t best_moved_ = std::numeric_limits<std::int64_t>::max();
  std::int64_t evaluated_ = 0;
  const deadline* work_ = nullptr;
};

inline std::vector<std::int32_t> first_k(std::int32_t k) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(k));
  for (std::int32_t i = 0; i < k; ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}

// GREEDY (Thm. 2): prefixes of the production order from the least k whose bytes reach peak - target,
// the first that fits. Twice where some values are in-place chains' last versions (model.hpp): over
// all of them, and over the values written once, the paper's x_i: the two prefix families differ, and
// on ResNet-18 b32 at 0.7x of its arena (12 GB/s, `memplan plan`) the first alone gave `refined` a
// start it could not leave (makespan 52.18 ms; with the second, 45.53 ms, as before such values moved).
inline choice greedy_choice(chooser& ch, std::int64_t target, const deadline& clock = deadline::never()) {
  const auto& m = ch.model();
  auto prefixes = [&](const std::vector<std::int32_t>& seq) {
    const auto n = static_cast<std::int32_t>(seq.size());
    std::int64_t need = m.peak - target, sum = 0;
    std::int32_t k = 0;
    while (k < n && sum < need) sum += m.candidates[static_cast<std::size_t>(seq[static_cast<std::size_t>(k++)])].bytes;
    for (const auto first = k; k <= n; ++k) {
      if (ch.consider(std::vector<std::int32_t>(seq.begin(), seq.begin() + k)) < std::numeric_limits<double>::infinity()) break;
      if (k < n && clock.expired()) {
        ch.remark += "greedy stopped by the time limit after " + std::to_string(k - first + 1) + " prefixes";
        return false;
      }
    }
    return true;
  };
  const auto all = first_k(static_cast<std::int32_t>(m.candidates.size()));
  std::vector<std::int32_t> once;
  for (auto i : all)
    if (!m.candidates[static_cast<std::size_t>(i)].rewritten) once.push_back(i);
  // A clock that runs out stops a family after the prefix it is simulating (none fitted: nothing
  // found); each family's first prefix runs whatever the clock says (one simulation).
  if (prefixes(all) && once.size() < all.size() && !once.empty()) prefixes(once);
  return ch.best();
}

// VDNN (§6): thresholds on u_F / |x|; all values above, and every other one of them.
inline choice vdnn_choice(chooser& ch, const deadline& clock = deadline::never()) {
  const auto& cs = ch.model().candidates;
  std::vector<double> ratio;
  for (const auto& c : cs) ratio.push_back(c.producer_seconds / static_cast<double>(c.bytes));
  auto th = ratio;
  std::sort(th.begin(), th.end(), std::greater<>());
  th.erase(std::unique(th.begin(), th.end()), th.end());
  for (std::size_t ti = 0; ti < th.size(); ++ti) {
    const double t = th[ti];
    if (ti > 0 && clock.expired()) {  // each threshold simulates two choices (0.32 s on a 3,197-op graph)
      ch.remark += "vdnn stopped by the time limit after " + std::to_string(ti) + " of " + std::to_string(th.size()) + " thresholds";
      break;
    }
    std::vector<std::int32_t> all, half;
    for (std::size_t i = 0; i < cs.size(); ++i)
      if (ratio[i] >= t) all.push_back(static_cast<std::int32_t>(i));
    for (std::size_t i = 0; i < all.size(); i += 2) half.push_back(all[i]);
    ch.consider(all);
    ch.consider(half);
  }
  return ch.best();
}

// Local search from a start, in rounds while the makespan strictly improves, and by at least
// `min_gain` of it per round (the round that gains less is kept, and ends the search). A round
// simulates every one-value flip (drop or add) of the current choice, takes the best, then tries the
// other improving flips on top of it one by one (each kept where it still improves); where no flip
// improves, the best swap of a value for one of its 4 neighbours either side in production order.
// Taking only the best flip, a round gave one move for n simulations: DenseNet-121 b32 at 0.6x
// gained 0.05-1.4 % a round and its 2 s ran out (offload.md, stop 56).
inline choice refine_choice(chooser& ch, const std::vector<std::int32_t>& start, std::int32_t max_rounds, const deadline& clock,
                            double min_gain = 0.0) {
  const auto n = static_cast<std::int32_t>(ch.model().candidates.size());
  double cur_ms = ch.consider(start);
  std::vector<std::uint8_t> in(static_cast<std::size_t>(n), 0);  // the current choice, kept across rounds
  for (auto i : start) in[static_cast<std::size_t>(i)] = 1;
  const auto flip = [&](std::int32_t i) { in[static_cast<std::size_t>(i)] ^= 1u; };
  const auto current = [&] {
    std::vector<std::int32_t> v;
    for (std::int32_t i = 0; i < n; ++i)
      if (in[static_cast<std::size_t>(i)]) v.push_back(i);
    return v;
  };
  const auto better = [](double ms, double than) { return ms < than - 1e-12 * std::max(1.0, ms); };
  for (std::int32_t round = 0; round < max_rounds; ++round) {
    const double round_ms = cur_ms;
    std::vector<std::pair<double, std::int32_t>> improving;  // (makespan, value flipped)
    for (std::int32_t i = 0; i < n && !clock.expired(); ++i) {
      flip(i);
      if (const double ms = ch.consider(current()); better(ms, cur_ms)) improving.push_back({ms, i});
      flip(i);
    }
    std::sort(improving.begin(), improving.end());  // the least makespan first, ties by value
    if (!improving.empty()) {
      flip(improving.front().second);
      cur_ms = improving.front().first;
      for (std::size_t k = 1; k < improving.size() && !clock.expired(); ++k) {
        flip(improving[k].second);
        if (const double ms = ch.consider(current()); better(ms, cur_ms))
          cur_ms = ms;
        else
          flip(improving[k].second);
      }
    } else {
      std::pair<std::int32_t, std::int32_t> best_swap{-1, -1};
      for (std::int32_t i = 0; i < n && !clock.expired(); ++i)
        if (in[static_cast<std::size_t>(i)])
          for (std::int32_t j = std::max<std::int32_t>(0, i - 4); j < std::min(n, i + 5) && !clock.expired(); ++j)
            if (!in[static_cast<std::size_t>(j)]) {
              flip(i);
              flip(j);
              if (const double ms = ch.consider(current()); better(ms, cur_ms)) {
                cur_ms = ms;
                best_swap = {i, j};
              }
              flip(i);
              flip(j);
            }
      if (best_swap.first < 0) break;
      flip(best_swap.first);
      flip(best_swap.second);
    }
    if (clock.expired() || round_ms - cur_ms < min_gain * round_ms) break;
  }
  return ch.best();
}

// plan_context::offload_fill: the policy's own choice at the target (none where the fill is 1, or
// where it found none), plus the first ceil(fill x r) of the r values it left out, in production
// order; the choice evaluated on a chooser of its own, so that it is the one returned.
template <class Choose>
choice filled_choice(chooser& ch, std::int64_t target, double fill, Choose&& choose) {
  const auto n = static_cast<std::int32_t>(ch.model().candidates.size());
  std::vector<bool> in(static_cast<std::size_t>(n), false);
  std::int32_t own = 0;
  if (fill < 1)
    if (const auto c = choose(ch, target); c.found())
      for (auto i : c.chosen) {
        own += !in[static_cast<std::size_t>(i)];
        in[static_cast<std::size_t>(i)] = true;
      }
  const auto left = n - own;
  auto more = static_cast<std::int32_t>(std::ceil(std::min(fill, 1.0) * static_cast<double>(left)));
  const auto added = more;
  for (std::int32_t i = 0; i < n && more > 0; ++i)
    if (!in[static_cast<std::size_t>(i)]) {
      in[static_cast<std::size_t>(i)] = true;
      --more;
    }
  std::vector<std::int32_t> chosen;
  for (std::int32_t i = 0; i < n; ++i)
    if (in[static_cast<std::size_t>(i)]) chosen.push_back(i);
  auto alone = ch.sibling();
  alone.hold_host_limit = ch.hold_host_limit;
  alone.consider(chosen);
  ch.count_simulations(1);
  if (!ch.remark.empty()) ch.remark += "; ";
  ch.remark += added == left && own == 0 ? "every value, plan()'s last resort at its least target"
                                          : "its own choice of " + std::to_string(own) + " and " + std::to_string(added) + " more of the " +
                                                std::to_string(left) + " it left out, plan()'s last resort at its least target";
  return alone.best();
}

// The frame every offloader shares: model, target, the choice, the timed timeline, the stage record.
template <class Choose>
timeline run_offloader(const problem& p, timeline tl, const plan_context& ctx, const std::string& name, Choose&& choose) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto target = ctx.peak_target();
  const auto m = make_model(p, tl, ctx.timing);
  std::vector<std::int32_t> chosen;
  std::string note;
  const bool reduce = m.peak > target;
  if (reduce && !(ctx.timing.bandwidth > 0))
    throw error(errc::invalid_argument, "offloading needs a device <-> host bandwidth, and none is set (memplan plan --bandwidth B, e.g. 12e9; "
                                        "in the library plan_context::timing.bandwidth): the peak " + std::to_string(m.peak) +
                                            " bytes exceeds the target " + std::to_string(target) + " (offloader '" + name + "')");
  double lb = m.compute_time;
  std::int64_t fit = target;
  bool none_fits = false;  // no choice the policy tried met the target (within the host limit)
  if (reduce) {
    lb = makespan_lower_bound(m, target);
    if (ctx.offload_to_beat >= 0 && lb >= ctx.offload_to_beat)
      throw error(errc::not_better, "offloader '" + name + "': no plan that meets the target of " + std::to_string(target) +
                                        " bytes beats a step of " + number_text(ctx.offload_to_beat) + " s (its makespan lower bound is " +
                                        number_text(lb) + " s)");
    chooser ch(p, tl, m, target);
    const auto c = ctx.offload_fill > 0 ? filled_choice(ch, target, ctx.offload_fill, choose) : choose(ch, target);
    if (c.found()) {
      chosen = c.chosen;
      note = name + ": offloads " + std::to_string(chosen.size()) + " of " + std::to_string(m.candidates.size()) + " values (" +
             std::to_string(ch.evaluated()) + " schedules simulated" + (ch.remark.empty() ? "" : "; " + ch.remark) + ")";
    } else {
      // Nothing fits: the least peak offloading reaches (every value, waiting for every copy), and say so
      // (the pipeline reports the overshoot).
      none_fits = true;
      chosen = first_k(static_cast<std::int32_t>(m.candidates.size()));
      fit = least_peak(m);
      lb = makespan_lower_bound(m, fit);
      note = name + ": no choice of the " + std::to_string(m.candidates.size()) + " offloadable values meets the target of " +
             std::to_string(target) + " bytes" + (ch.remark.empty() ? "" : " (" + ch.remark + ")") + "; offloaded all, peak " + std::to_string(fit);
    }
  }
  auto out = build(p, tl, m, chosen, fit);
  out.makespan_lower_bound = std::min(lb, out.makespan);
  if (ctx.timing.host_limit >= 0 && out.host_peak > ctx.timing.host_limit)
    throw error(errc::infeasible, "offloader '" + name + "': " +
                                      (none_fits
                                           ? "no choice it tried of the " + std::to_string(m.candidates.size()) + " offloadable values meets the target of " +
                                                 std::to_string(target) + " bytes within the host limit of " + std::to_string(ctx.timing.host_limit) +
                                                 " bytes (offloading all of them needs " + std::to_string(out.host_peak) + ")"
                                           : "the offloaded values need " + std::to_string(out.host_peak) + " bytes of host memory, above the host limit of " +
                                                 std::to_string(ctx.timing.host_limit)));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.stages.push_back({stage_kind::offloader, name, secs, note});
  return out;
}

}  // namespace detail

struct none {
  static constexpr stage_kind kind = stage_kind::offloader;
  [[nodiscard]] std::string name() const { return "none"; }
  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    plan_context c = ctx;
    c.memory_target = std::numeric_limits<std::int64_t>::max();
    c.budget = c.capacity = -1;
    return detail::run_offloader(p, std::move(tl), c, name(), [](detail::chooser& ch, std::int64_t) { return ch.best(); });
  }
};

struct greedy {
  static constexpr stage_kind kind = stage_kind::offloader;
  [[nodiscard]] std::string name() const { return "greedy"; }
  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    const auto clock = deadline::after(ctx.time_limit_or(-1.0));
    return detail::run_offloader(p, std::move(tl), ctx, name(), [&clock](detail::chooser& ch, std::int64_t target) { return detail::greedy_choice(ch, target, clock); });
  }
};

struct vdnn {
  static constexpr stage_kind kind = stage_kind::offloader;
  [[nodiscard]] std::string name() const { return "vdnn"; }
  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    const auto clock = deadline::after(ctx.time_limit_or(-1.0));
    return detail::run_offloader(p, std::move(tl), ctx, name(), [&clock](detail::chooser& ch, std::int64_t) { return detail::vdnn_choice(ch, clock); });
  }
};

struct brute_force {
  static constexpr stage_kind kind = stage_kind::offloader;
  std::int32_t max_candidates = 16;  // 2^16 schedules at most
  [[nodiscard]] std::string name() const { return "brute_force"; }
  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    const auto limit = max_candidates;
    const auto clock = deadline::after(ctx.time_limit_or(-1.0));
    return detail::run_offloader(p, std::move(tl), ctx, name(), [limit, &clock](detail::chooser& ch, std::int64_t) {
      const auto n = static_cast<std::int32_t>(ch.model().candidates.size());
      if (n > limit)  // (limit_exceeded, as every exact method's size guard: not an invalid input)
        throw error(errc::limit_exceeded, "offload::brute_force: " + std::to_string(n) + " offloadable values, more than its limit of " +
                                              std::to_string(limit) + "; use default, refined or greedy");
      for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << n); ++mask) {
        if (mask > 0 && clock.expired()) {  // then not the least makespan: the note says so
          ch.remark += "brute_force stopped by the time limit after " + std::to_string(mask) + " of " + std::to_string(std::uint64_t{1} << n) +
                       " subsets";
          break;
        }
        std::vector<std::int32_t> v;
        for (std::int32_t i = 0; i < n; ++i)
          if (mask >> i & 1u) v.push_back(i);
        ch.consider(v);
      }
      return ch.best();
    });
  }
};

struct refined {
  static constexpr stage_kind kind = stage_kind::offloader;
  std::int32_t max_rounds = 64;
  // For the whole search (the context's time limit overrides it). In deterministic mode this limit on
  // a work clock instead, charged by each simulation's work (build_result::work; the context's limit
  // is ignored): the search stops at the same work on any machine, near where the clock would stop
  // it here. < 0: none (the rounds alone stop it).
  double time_limit_s = 2.0;
  // A round (one move, the best of up to a few thousand simulations) that shortens the makespan by
  // less than this fraction ends the search. On the batch-32 exports at 0.6x and 0.45x of their peak
  // the rounds after the first few gained under 0.004 % each, and the search ran them to its 2 s
  // limit: Inception-v3 0.6x 0.225932 s after 2 rounds, 0.225929 s after 61; DenseNet-121 0.6x gains
  // 0.05-1.4 % a round and still runs to the limit.
  double min_round_gain = 1e-4;
  [[nodiscard]] std::string name() const { return "refined"; }
  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    const auto rounds = max_rounds;
    const auto gain = min_round_gain;
    work_clock work;
    const auto clock = ctx.deterministic ? deadline::after(time_limit_s, &work) : deadline::after(ctx.time_limit_or(time_limit_s));
    return detail::run_offloader(p, std::move(tl), ctx, name(), [rounds, gain, &clock](detail::chooser& ch, std::int64_t target) {
      ch.charge_to(clock);
      const auto g = detail::greedy_choice(ch, target, clock);
      if (g.found()) return detail::refine_choice(ch, g.chosen, rounds, clock, gain);
      // No prefix fits within the host limit: start from the one that meets the memory target alone
      // and let the moves (a value swapped for a smaller one, one dropped) bring the host bytes down.
      auto loose = ch.sibling();
      loose.hold_host_limit = false;
      const auto start = detail::greedy_choice(loose, target, clock);
      ch.count_simulations(loose.evaluated());
      return detail::refine_choice(ch, start.found() ? start.chosen : detail::first_k(static_cast<std::int32_t>(ch.model().candidates.size())),
                                   rounds, clock, gain);
    });
  }
};

static_assert(timeline_stage<none>);
static_assert(timeline_stage<greedy>);
static_assert(timeline_stage<vdnn>);
static_assert(timeline_stage<brute_force>);
static_assert(timeline_stage<refined>);

}  // namespace memplan::offload
