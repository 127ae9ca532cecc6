#pragma once
// schedule::local_search{base, options} -- improves the order of any scheduler by precedence-
// preserving moves: an op moves to another position inside its window (after its latest
// predecessor, before its earliest successor; moving by one swaps two adjacent independent ops).
// A move is kept when the peak drops, or when the peak stays and the area under the profile
// shrinks (to walk across plateaus). Half of the moves start near the current peak step.
//
// Evaluation is incremental: moving op o from position i to j only changes the liveness of the
// storages o touches and shifts the ops in [min(i,j), max(i,j)] by one, so a move costs
// O(|j - i| + users of o's storages + log V) (a max segment tree keeps the peak outside the
// window), never a full profile. Deterministic for a given seed and iteration limit; the time
// limit is a safety cap (when it ends the search, the note says so, and the result then depends on
// the machine's speed).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <memplan/core/analysis.hpp>
#include <memplan/base/error.hpp>
#include <memplan/base/deadline.hpp>
#include <memplan/base/progress.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/schedule/detail/memory_facts.hpp>

namespace memplan::schedule {

struct local_search_options {
  double time_limit_s = 1.0;           // safety cap (< 0: none)
  std::int64_t max_iterations = 200000;
  std::uint64_t seed = 1;
  std::int32_t max_distance = 512;     // farthest a single move goes
  bool verify_incremental = false;     // tests: recompute the full profile after every kept move
};

namespace detail {

struct improved_order {
  std::vector<op_id> order;
  std::int64_t peak = 0;
  std::int64_t iterations = 0, accepted = 0;
  bool time_limit_hit = false;
};

// Max segment tree over step values with the leftmost arg-max.
class max_tree {
 public:
  explicit max_tree(const std::vector<std::int64_t>& v) {
    size_ = 1;
    while (size_ < std::max<std::size_t>(v.size(), 1)) size_ *= 2;
    val_.assign(2 * size_, std::numeric_limits<std::int64_t>::min());
    arg_.assign(2 * size_, -1);
    for (std::size_t i = 0; i < v.size(); ++i) { val_[size_ + i] = v[i]; arg_[size_ + i] = static_cast<std::int32_t>(i); }
    for (std::size_t i = size_ - 1; i >= 1; --i) pull_one(i);
  }
  void set(std::size_t i, std::int64_t x) {
    i += size_;
    val_[i] = x;
    for (i /= 2; i >= 1; i /= 2) pull_one(i);
  }
  // Max over [lo, hi) (min() when empty).
  [[nodiscard]] std::int64_t max(std::size_t lo, std::size_t hi) const {
    std::int64_t m = std::numeric_limits<std::int64_t>::min();
    for (lo += size_, hi += size_; lo < hi; lo /= 2, hi /= 2) {
      if (lo & 1) m = std::max(m, val_[lo++]);
      if (hi & 1) m = std::max(m, val_[--hi]);
    }
    return m;
  }
  [[nodiscard]] std::int64_t top() const { return val_[1]; }
  [[nodiscard]] std::int32_t arg_top() const { return arg_[1]; }

 private:
  void pull_one(std::size_t i) {
    const bool right = val_[2 * i + 1] > val_[2 * i];
    val_[i] = right ? val_[2 * i + 1] : val_[2 * i];
    arg_[i] = right ? arg_[2 * i + 1] : arg_[2 * i];
  }
  std::size_t size_ = 1;
  std::vector<std::int64_t> val_;
  std::vector<std::int32_t> arg_;
};

inline improved_order improve_order(const problem& p, std::vector<op_id> order, const local_search_options& opt,
                                    std::int64_t lower_bound, const plan_context& ctx, std::string_view who = "local_search") {
  improved_order res;
  const auto n = static_cast<std::int32_t>(order.size());
  if (auto bad = check_topological(p, order)) throw error(errc::invalid_argument, "local_search: base order is not topological: " + *bad);
  const auto clock = deadline::after(ctx.deterministic ? -1.0 : opt.time_limit_s);
  const memory_facts mf(p);
  const auto lts = storage_lifetimes(p, order);  // the order is checked: its profile from these lifetimes
  const auto prof = memplan::detail::profile_from_lifetimes(p, order, lts);
  if (n <= 1) { res.order = std::move(order); res.peak = prof.peak; return res; }

  const auto ns = static_cast<std::size_t>(p.num_storages());
  // Tracked storages: non-empty, not resident, not "step 0 only". Their lifetimes in positions.
  std::vector<std::uint8_t> tracked(ns, 0), pre(ns, 0), to_end(ns, 0);
  std::int64_t to_end_total = 0;
  for (storage_id s = 0; s < p.num_storages(); ++s) {
    const auto si = static_cast<std::size_t>(s);
    if (p.storage_bytes(s) == 0 || p.resident(s)) continue;
    if (p.live_at_start_only(s)) continue;
    tracked[si] = 1;
    pre[si] = p.preexisting(s) ? 1 : 0;
    to_end[si] = p.live_to_end(s) ? 1 : 0;
    if (to_end[si]) to_end_total += p.storage_bytes(s);
  }
  std::vector<std::int32_t> first(ns, 0), last(ns, 0);
  for (std::size_t s = 0; s < ns; ++s) { first[s] = lts[s].first; last[s] = lts[s].last; }
  std::vector<std::int32_t> pos(static_cast<std::size_t>(n));
  for (std::int32_t k = 0; k < n; ++k) pos[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])] = k;
  // live[k]: bytes while step k runs, without the step-0-only storages (added in `val`).
  std::vector<std::int64_t> live = prof.live;
  live[0] -= mf.step0_only;
  auto val = [&](std::int32_t k, std::int64_t l) { return l + (k == 0 ? mf.step0_only : 0); };
  std::vector<std::int64_t> vals(live.size());
  for (std::int32_t k = 0; k < n; ++k) vals[static_cast<std::size_t>(k)] = val(k, live[static_cast<std::size_t>(k)]);
  max_tree tree(vals);
  const auto resident = p.resident_bytes();
  auto peak_now = [&] { return std::max(resident, tree.top()); };
  std::int64_t peak = peak_now();

  std::mt19937_64 rng(opt.seed);
  std::vector<std::int64_t> nl, diff;  // window scratch
  struct change { storage_id s; std::int32_t f, l; };
  std::vector<change> changes;
  std::vector<std::uint64_t> seen(ns, 0);
  std::uint64_t stamp = 0;

  for (; res.iterations < opt.max_iterations; ++res.iterations) {
    if (peak <= lower_bound) break;
    if ((res.iterations & 255) == 0 && clock.expired()) { res.time_limit_hit = true; break; }
    // ---- pick a move ----
    std::int32_t i;
    if (rng() & 1) {
      const auto c = tree.arg_top();
      const auto d = static_cast<std::int32_t>(rng() % 129) - 64;
      i = std::clamp(c + d, 0, n - 1);
    } else {
      i = static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(n));
    }
    const auto o = order[static_cast<std::size_t>(i)];
    std::int32_t lo = 0, hi = n - 1;
    for (auto q : p.preds(o)) lo = std::max(lo, pos[static_cast<std::size_t>(q)] + 1);
    for (auto w : p.succs(o)) hi = std::min(hi, pos[static_cast<std::size_t>(w)] - 1);
    lo = std::max(lo, i - opt.max_distance);
    hi = std::min(hi, i + opt.max_distance);
    if (lo >= hi) continue;
    auto j = lo + static_cast<std::int32_t>(rng() % static_cast<std::uint64_t>(hi - lo));
    if (j >= i) ++j;  // uniform over [lo, hi] without i
    const auto a = std::min(i, j), b = std::max(i, j);
    const std::int32_t delta = j > i ? 1 : -1;  // new position k (k != j) held old position k + delta
    const auto w = static_cast<std::size_t>(b - a + 1);
    auto newpos = [&](op_id x) {
      const auto px = pos[static_cast<std::size_t>(x)];
      if (x == o) return j;
      if (px < a || px > b) return px;
      return px - delta;
    };
    // ---- new window profile ----
    nl.assign(w, 0);
    diff.assign(w + 1, 0);
    for (std::int32_t k = a; k <= b; ++k)
      if (k != j) nl[static_cast<std::size_t>(k - a)] = live[static_cast<std::size_t>(k + delta)];
    auto add = [&](std::int32_t from, std::int32_t to, std::int64_t x) {  // positions, clipped to the window
      from = std::max(from, a);
      to = std::min(to, b);
      if (from > to) return;
      diff[static_cast<std::size_t>(from - a)] += x;
      diff[static_cast<std::size_t>(to - a + 1)] -= x;
    };
    changes.clear();
    std::int64_t touched_bytes = 0, touched_at_z = 0, touched_to_end = 0;
    for (auto s : p.touched(o)) {
      const auto si = static_cast<std::size_t>(s);
      if (!tracked[si]) continue;
      const auto B = p.storage_bytes(s);
      const auto f = first[si], l = last[si];
      const auto f2 = pre[si] ? 0 : newpos(p.storage_allocator(s));
      std::int32_t l2 = f2;
      if (to_end[si]) l2 = n - 1;
      else
        for (auto u : p.storage_users(s)) l2 = std::max(l2, newpos(u));
      add(f2, l2, B);
      add(f - delta, l - delta, -B);
      changes.push_back({s, f2, l2});
      touched_bytes += B;
      if (to_end[si]) touched_to_end += B;
      if (f2 <= j + 1 && j + 1 <= l2) touched_at_z += B;
    }
    std::int64_t run = 0;
    for (std::size_t k = 0; k < w; ++k) { run += diff[k]; nl[k] += run; }
    // o's own step: the storages live across its slot are those live at the next op z and not
    // allocated by z (o touches none that z allocates), plus everything o touches.
    std::int64_t at_o;
    if (j < n - 1) {
      const auto z = j + 1 <= b ? order[static_cast<std::size_t>(j + 1 + delta)] : order[static_cast<std::size_t>(j + 1)];
      const auto live_z = j + 1 <= b ? nl[static_cast<std::size_t>(j + 1 - a)] : live[static_cast<std::size_t>(j + 1)];
      at_o = live_z - p.workspace(z) - mf.alloc[static_cast<std::size_t>(z)] - touched_at_z + touched_bytes + p.workspace(o);
    } else {
      at_o = resident + to_end_total - touched_to_end + touched_bytes + p.workspace(o);
    }
    nl[static_cast<std::size_t>(j - a)] = at_o;
    std::int64_t wmax = std::numeric_limits<std::int64_t>::min(), darea = 0;
    for (std::int32_t k = a; k <= b; ++k) {
      wmax = std::max(wmax, val(k, nl[static_cast<std::size_t>(k - a)]));
      darea += nl[static_cast<std::size_t>(k - a)] - live[static_cast<std::size_t>(k)];
    }
    const auto new_peak = std::max({resident, wmax, tree.max(0, static_cast<std::size_t>(a)),
                                    tree.max(static_cast<std::size_t>(b) + 1, static_cast<std::size_t>(n))});
    if (!(new_peak < peak || (new_peak == peak && darea < 0))) continue;
    // ---- apply ----
    if (j > i) std::rotate(order.begin() + i, order.begin() + i + 1, order.begin() + j + 1);
    else std::rotate(order.begin() + j, order.begin() + i, order.begin() + i + 1);
    for (std::int32_t k = a; k <= b; ++k) {
      pos[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])] = k;
      live[static_cast<std::size_t>(k)] = nl[static_cast<std::size_t>(k - a)];
      tree.set(static_cast<std::size_t>(k), val(k, live[static_cast<std::size_t>(k)]));
    }
    // Lifetimes: o's storages as computed; every other storage keeps its allocator and users, and
    // an endpoint held by a shifted op (old positions [a, b] except i) shifts with it.
    ++stamp;
    for (const auto& c : changes) {
      first[static_cast<std::size_t>(c.s)] = c.f;
      last[static_cast<std::size_t>(c.s)] = c.l;
      seen[static_cast<std::size_t>(c.s)] = stamp;
    }
    for (std::int32_t k = a; k <= b; ++k) {
      const auto x = order[static_cast<std::size_t>(k)];
      if (x == o) continue;
      for (auto s : p.touched(x)) {
        const auto si = static_cast<std::size_t>(s);
        if (!tracked[si] || seen[si] == stamp) continue;
        seen[si] = stamp;
        if (!pre[si] && first[si] >= a && first[si] <= b) first[si] -= delta;
        if (!to_end[si] && last[si] >= a && last[si] <= b) last[si] -= delta;
      }
    }
    peak = new_peak;
    ++res.accepted;
    if (opt.verify_incremental) {
      const auto full = profile(p, order);
      auto expect = full.live;
      expect[0] -= mf.step0_only;
      if (expect != live || full.peak != peak)
        throw error(errc::runtime_error, "local_search: incremental profile diverged after move " + std::to_string(res.iterations) +
                                             " (op " + p.op_name(o) + " " + std::to_string(i) + " -> " + std::to_string(j) + ")");
      const auto lt = storage_lifetimes(p, order);
      for (std::size_t s = 0; s < ns; ++s)
        if (tracked[s] && (lt[s].first != first[s] || lt[s].last != last[s]))
          throw error(errc::runtime_error, "local_search: lifetime of storage " + std::to_string(s) + " diverged after move " +
                                               std::to_string(res.iterations));
    }
    report(ctx.progress, who, "improved", clock.elapsed(), peak, lower_bound);
  }
  res.order = std::move(order);
  res.peak = peak;
  return res;
}

}  // namespace detail

template <scheduler Base>
class local_search {
 public:
  explicit local_search(Base base, local_search_options opt = {}) : base_(std::move(base)), opt_(std::move(opt)) {}

  [[nodiscard]] std::string name() const { return "local_search(" + std::string(base_.name()) + ")"; }
  [[nodiscard]] const local_search_options& options() const noexcept { return opt_; }
  [[nodiscard]] const Base& base() const noexcept { return base_; }

  [[nodiscard]] schedule_result run(const problem& p, const plan_context& ctx = {}) const {
    auto r = run_scheduler(base_, p, ctx);
    const auto lb = std::max(r.lower_bound, ctx.order_bound(p));
    const auto before = r.peak;
    auto o = opt_;
    o.time_limit_s = ctx.time_limit_or(opt_.time_limit_s);
    auto im = detail::improve_order(p, std::move(r.order), o, lb, ctx);
    r.order = std::move(im.order);
    r.peak = im.peak;
    r.lower_bound = lb;
    r.optimal = r.optimal || r.peak == lb;
    r.policy = "local_search(" + (r.policy.empty() ? std::string(base_.name()) : r.policy) + ")";
    std::string note = "local_search: peak " + std::to_string(before) + " -> " + std::to_string(r.peak) + " in " +
                       std::to_string(im.iterations) + " moves (" + std::to_string(im.accepted) + " kept)";
    if (im.time_limit_hit) note += "; time limit " + std::to_string(o.time_limit_s) + " s ended the search (result depends on machine speed)";
    r.note = r.note.empty() ? note : r.note + "; " + note;
    return r;
  }

 private:
  Base base_;
  local_search_options opt_;
};

template <class B>
local_search(B) -> local_search<B>;
template <class B>
local_search(B, local_search_options) -> local_search<B>;

}  // namespace memplan::schedule
