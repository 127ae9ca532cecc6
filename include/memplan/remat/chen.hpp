#pragma once
// Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost":
//   remat::chen_sqrt       -- §4.3: split the forward chain into about sqrt(n) segments, keep only the
//                             segment boundaries, drop every other result and recompute each segment
//                             once, just before its backward (Alg. 1, generalised by Alg. 2's mirror
//                             function m(v) = 1 inside segments, 0 at their outputs): one extra forward.
//   remat::chen_budget     -- Alg. 3: walk the forward results, and cut a segment at a candidate
//                             splitting point once its results exceed a budget B; B by the grid search of
//                             Appendix A (B = sqrt(x y) from the B = 0 run, a grid on [B/sqrt2, sqrt2 B]),
//                             widened to reach a memory target at the least recompute cost.
//   remat::chen_recursive  -- §4.4: the same idea applied inside each segment, recursively (mirror
//                             counts > 1): O(log n) boundaries live, O(n log n) recomputation.
// Option drop_cheap (§4.2): inside segments drop only the results of cheap ops (batch norm,
// activations, pooling: cost below `cheap_fraction` of the average forward op) and keep the expensive
// ones (convolutions), trading a little memory for much less recomputation.
// The candidate splitting points are the articulation points of the forward chain (remat/segments.hpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <memplan/base/deadline.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/remat/chain.hpp>
#include <memplan/remat/detail.hpp>
#include <memplan/remat/engine.hpp>
#include <memplan/remat/segments.hpp>

namespace memplan::remat {

namespace detail {

// Keeps the chosen cuts; drops every other forward result the backward reads again (optionally only
// the results of cheap ops), except the last segment's.
class segment_policy {
 public:
  segment_policy(const forward_chain& c, std::vector<std::uint8_t> keep_cut, const std::vector<std::uint8_t>* cheap)
      : c_(&c), keep_(std::move(keep_cut)), cheap_(cheap) {}
  [[nodiscard]] bool drop(storage_id s, std::int32_t pos) const {
    const auto su = static_cast<std::size_t>(s);
    if (c_->drop_point[su] != pos || c_->segment[su] == c_->segments() - 1) return false;
    if (c_->is_cut(s) && c_->held(s, keep_)) return false;
    return !cheap_ || (*cheap_)[su];
  }
  [[nodiscard]] bool keep(storage_id, std::int32_t, storage_id) const { return true; }

 private:
  const forward_chain* c_;
  std::vector<std::uint8_t> keep_;
  const std::vector<std::uint8_t>* cheap_;
};

// Every `stride`-th cut kept: about (cuts + 1) / stride segments of equal numbers of cut intervals.
inline std::vector<std::uint8_t> every_kth_cut(const forward_chain& c, std::int32_t stride) {
  std::vector<std::uint8_t> keep(c.cuts.size(), 0);
  for (auto k = static_cast<std::size_t>(std::max(1, stride)) - 1; k < keep.size(); k += static_cast<std::size_t>(std::max(1, stride))) keep[k] = 1;
  return keep;
}

// Storages made by cheap forward ops (cost below `fraction` of the average forward op's).
inline std::vector<std::uint8_t> cheap_results(const problem& p, const engine& e, const forward_chain& c, double fraction) {
  std::vector<std::uint8_t> cheap(static_cast<std::size_t>(p.num_storages()), 0);
  double total = 0;
  std::int64_t n = 0;
  for (auto o : e.order())
    if (!c.has_phases || p.phase(o) == op_phase::forward) { total += e.cost(o); ++n; }
  const double avg = n > 0 ? total / static_cast<double>(n) : 0.0;
  for (auto s : c.produced) {
    const auto a = p.storage_allocator(s);
    cheap[static_cast<std::size_t>(s)] = a != no_id && e.cost(a) < fraction * avg ? 1 : 0;
  }
  return cheap;
}

// Alg. 3: cuts where the running total of results exceeds B become boundaries.
struct alg3_result {
  std::vector<std::uint8_t> keep;
  std::int64_t x = 0, y = 0;  // bytes of the kept boundaries; the largest segment
};
inline alg3_result chen_alg3(const forward_chain& c, double B) {
  alg3_result r;
  r.keep.assign(c.cuts.size(), 0);
  std::int64_t last = 0;  // the running total at the last boundary
  for (std::size_t k = 0; k < c.cuts.size(); ++k) {
    const auto temp = c.cuts[k].produced_before - last;
    if (static_cast<double>(temp) > B) {
      r.keep[k] = 1;
      r.x += c.cuts[k].bytes;
      r.y = std::max(r.y, temp);
      last = c.cuts[k].produced_before;
    }
  }
  r.y = std::max(r.y, c.forward_bytes - last);
  return r;
}

// A candidate plan and what it costs.
struct candidate {
  timeline tl;
  double cost = 0;
  std::string what;
  std::function<timeline(const deadline&)> rerun{};  // the same policy again, evicting under the target until the deadline
};

// The candidate of one plain replay of `pol` (no eviction), with the rerun that adds eviction.
template <class Policy>
// With `until`, a replay that the deadline stops gives an empty timeline (no steps).
candidate replay(engine& e, Policy pol, std::int64_t target, std::string what = {}, const deadline* until = nullptr) {
  candidate c{e.run(pol, target, false, nullptr, until), 0.0, std::move(what), {}};
  c.rerun = [&e, pol, target](const deadline& until) mutable { return e.run(pol, target, true, nullptr, &until); };
  c.cost = recompute_cost(e, c.tl);
  return c;
}

// When no candidate meets the target on its own, the few with the lowest peaks run again with DTR
// eviction above the target (remat/engine.hpp) -- a safety net for the last bytes, tried on few
// candidates because eviction under a tight target is the expensive part.
// With a deadline, reruns start only while time is left, and a rerun that it interrupts gives no
// candidate. Callers that sweep keep time for it (chen_budget: half its limit while no plan meets the
// target).
inline void evict_if_needed(std::vector<candidate>& cs, const engine& e, std::int64_t target, bool evict, std::size_t tries = 3,
                            const deadline& clock = deadline::never());

// The plan to return among candidates: the cheapest that meets the target; without one that does, or
// without a target, the lowest peak (then the cheapest).
inline std::size_t choose(const std::vector<candidate>& cs, std::int64_t target) {
  if (target == std::numeric_limits<std::int64_t>::max()) target = -1;  // no target: least memory
  std::size_t best = 0;
  for (std::size_t k = 1; k < cs.size(); ++k) {
    const auto& a = cs[k];
    const auto& b = cs[best];
    const bool fa = a.tl.peak <= target, fb = b.tl.peak <= target;
    if (fa != fb) { if (fa) best = k; continue; }
    if (fa ? (a.cost < b.cost || (a.cost == b.cost && a.tl.peak < b.tl.peak))
           : (a.tl.peak < b.tl.peak || (a.tl.peak == b.tl.peak && a.cost < b.cost)))
      best = k;
  }
  return best;
}

inline void evict_if_needed(std::vector<candidate>& cs, const engine& e, std::int64_t target, bool evict, std::size_t tries,
                            const deadline& clock) {
  if (!evict || target == std::numeric_limits<std::int64_t>::max()) return;
  for (const auto& c : cs)
    if (c.tl.peak <= target) return;
  std::vector<std::size_t> idx(cs.size());
  for (std::size_t k = 0; k < idx.size(); ++k) idx[k] = k;
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return cs[a].tl.peak < cs[b].tl.peak; });
  const auto n = std::min(tries, idx.size());
  for (std::size_t k = 0; k < n && !clock.expired(); ++k) {
    const auto& base = cs[idx[k]];
    if (!base.rerun) continue;
    candidate c{base.rerun(clock), 0.0, base.what + ", then eviction under the target", {}};
    if (c.tl.steps.empty()) continue;  // the deadline passed during the replay
    c.cost = recompute_cost(e, c.tl);
    cs.push_back(std::move(c));
  }
}

// Shared front matter: the engine, the chain, the cheap results when asked for.
struct chain_setup {
  engine e;
  forward_chain c;
  std::vector<std::uint8_t> cheap;
  chain_setup(const problem& p, const timeline& tl, bool drop_cheap, double fraction)
      : e(p, tl), c(chain_of(p, e.order(), [this](op_id o) { return e.cost(o); })) {
    if (drop_cheap) cheap = cheap_results(p, e, c, fraction);
  }
  [[nodiscard]] const std::vector<std::uint8_t>* cheap_or_null() const { return cheap.empty() ? nullptr : &cheap; }
};

inline timeline finish(const timeline& in, candidate best, stage_kind kind, const std::string& name, const engine& e,
                       const std::string& extra) {
  auto out = carry(in, std::move(best.tl));
  out.stages.push_back({kind, name, 0.0, name + ": " + best.what + ", " + overhead_text(e, out) + (extra.empty() ? "" : "; " + extra)});
  return out;
}

}  // namespace detail

struct chen_sqrt {
  static constexpr stage_kind kind = stage_kind::checkpointer;
  bool drop_cheap = false;       // §4.2: inside segments, drop only cheap ops' results
  bool evict = true;             // under a memory target, evict (DTR, remat/engine.hpp) what still exceeds it
  double cheap_fraction = 0.5;   // "cheap": cost below this fraction of the average forward op
  [[nodiscard]] std::string name() const { return drop_cheap ? "chen_sqrt+drop_cheap" : "chen_sqrt"; }

  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    detail::chain_setup su(p, tl, drop_cheap, cheap_fraction);
    const auto m = static_cast<std::int32_t>(su.c.cuts.size());
    if (m == 0) return unchanged(tl, "the forward pass has no articulation point to split at");
    // About sqrt(n) segments of equal numbers of cut intervals.
    const auto stride = std::max<std::int32_t>(1, static_cast<std::int32_t>(std::lround(std::sqrt(static_cast<double>(m + 1)))));
    const auto keep = detail::every_kth_cut(su.c, stride);
    std::int32_t kept = 0;
    for (auto k : keep) kept += k;
    std::vector<detail::candidate> cs{detail::replay(su.e, detail::segment_policy(su.c, keep, su.cheap_or_null()), detail::target_of(ctx),
                                                     std::to_string(kept + 1) + " segments over " + std::to_string(m) + " split points")};
    detail::evict_if_needed(cs, su.e, detail::target_of(ctx), evict);
    const auto k = detail::choose(cs, detail::target_of(ctx));
    return detail::finish(tl, std::move(cs[k]), kind, name(), su.e, {});
  }

 private:
  [[nodiscard]] timeline unchanged(timeline tl, const std::string& why) const {
    tl.stages.push_back({kind, name(), 0.0, name() + ": nothing recomputed: " + why});
    return tl;
  }
};

struct chen_budget {
  static constexpr stage_kind kind = stage_kind::checkpointer;
  bool drop_cheap = false;
  bool evict = true;  // under a memory target, evict (DTR) what a plan still leaves above it
  double cheap_fraction = 0.5;
  std::int32_t grid = 6;    // points on [B/sqrt2, sqrt2 B] (Appendix A)
  std::int32_t sweep = 32;  // and a geometric sweep of B over [smallest result, all results]
  [[nodiscard]] std::string name() const { return drop_cheap ? "chen_budget+drop_cheap" : "chen_budget"; }

  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    detail::chain_setup su(p, tl, drop_cheap, cheap_fraction);
    if (su.c.cuts.empty()) {
      tl.stages.push_back({kind, name(), 0.0, name() + ": nothing recomputed: the forward pass has no articulation point to split at"});
      return tl;
    }
    const auto target = detail::target_of(ctx);
    // Each attempt is one engine replay; past the deadline no new one starts (the first always runs).
    const double limit = ctx.time_limit_or(-1.0);
    const auto clock = deadline::after(limit);
    step_pacer pace(clock);  // an attempt starts only while the time left covers the longest one so far
    std::vector<detail::candidate> cs;
    // While no plan meets the target, the second half of the limit is kept for the eviction rerun
    // that follows (one eviction replay costs tens of plain ones: 0.15 s against 4 ms on the 800-layer
    // adversarial training graph, where the sweep used to take the whole limit first).
    auto go_on = [&] {
      if (!pace.next()) return false;
      if (!evict || limit <= 0 || target == std::numeric_limits<std::int64_t>::max()) return true;
      return std::any_of(cs.begin(), cs.end(), [&](const detail::candidate& c) { return c.tl.peak <= target; }) ||
             clock.elapsed() < 0.5 * limit;
    };
    auto attempt = [&](double B) {
      auto a = detail::chen_alg3(su.c, B);
      std::int32_t kept = 0;
      for (auto k : a.keep) kept += k;
      cs.push_back(detail::replay(su.e, detail::segment_policy(su.c, a.keep, su.cheap_or_null()), target,
                                  "B = " + std::to_string(static_cast<long long>(B)) + " bytes: " + std::to_string(kept + 1) + " segments"));
      return a;
    };
    (void)pace.next();  // the first attempt always runs
    const auto a0 = attempt(0.0);
    const double B = std::sqrt(static_cast<double>(a0.x) * static_cast<double>(a0.y));
    bool more = true;
    for (std::int32_t g = 0; g < grid && (more = go_on()); ++g)
      attempt(B / std::sqrt(2.0) * std::pow(2.0, static_cast<double>(g) / std::max(1, grid - 1)));
    // Beyond Appendix A's grid: a sweep over B from one result to all of them (the exact peak of each
    // plan decides, so the estimate behind B = sqrt(x y) need not be right).
    double lo = std::numeric_limits<double>::max();
    for (auto s : su.c.produced) lo = std::min(lo, static_cast<double>(p.storage_bytes(s)));
    const double hi = static_cast<double>(su.c.forward_bytes);
    if (lo < hi)
      for (std::int32_t g = 0; g <= sweep && more && (more = go_on()); ++g) attempt(lo * std::pow(hi / lo, static_cast<double>(g) / std::max(1, sweep)));
    // And evenly spaced boundaries around sqrt(n) segments (chen_sqrt's choice among them).
    const auto m = static_cast<std::int32_t>(su.c.cuts.size());
    const auto root = std::max(1.0, std::sqrt(static_cast<double>(m + 1)));
    for (double f : {0.25, 0.35, 0.5, 0.7, 1.0, 1.4, 2.0, 2.8, 4.0}) {
      if (!more || !(more = go_on())) break;
      const auto stride = std::max<std::int32_t>(1, static_cast<std::int32_t>(std::lround(root * f)));
      cs.push_back(detail::replay(su.e, detail::segment_policy(su.c, detail::every_kth_cut(su.c, stride), su.cheap_or_null()), target,
                                  "every " + std::to_string(stride) + " split points a boundary"));
    }
    detail::evict_if_needed(cs, su.e, target, evict, 3, clock);
    const auto k = detail::choose(cs, target);
    return detail::finish(tl, std::move(cs[k]), kind, name(), su.e,
                          std::to_string(cs.size()) + " budgets tried" + (more ? "" : " (time limit reached)"));
  }
};

struct chen_recursive {
  static constexpr stage_kind kind = stage_kind::checkpointer;
  bool evict = true;  // under a memory target, evict (DTR) what still exceeds it
  [[nodiscard]] std::string name() const { return "chen_recursive"; }

  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    detail::chain_setup su(p, tl, false, 0.0);
    const auto m = static_cast<std::int32_t>(su.c.cuts.size());
    if (m == 0) {
      tl.stages.push_back({kind, name(), 0.0, name() + ": nothing recomputed: the forward pass has no articulation point to split at"});
      return tl;
    }
    std::vector<detail::candidate> cs{detail::replay(su.e, detail::split_policy<detail::bisection>(p, su.c, su.e, detail::bisection{m}),
                                                     detail::target_of(ctx), "bisection over " + std::to_string(m) + " split points")};
    detail::evict_if_needed(cs, su.e, detail::target_of(ctx), evict);
    const auto k = detail::choose(cs, detail::target_of(ctx));
    return detail::finish(tl, std::move(cs[k]), kind, name(), su.e, {});
  }
};

static_assert(timeline_stage<chen_sqrt>);
static_assert(timeline_stage<chen_budget>);
static_assert(timeline_stage<chen_recursive>);

}  // namespace memplan::remat
