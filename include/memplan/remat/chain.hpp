#pragma once
// Chain checkpointing on the forward chain of a training step (remat/segments.hpp): the backward
// pass reverses the chain of segments, and a policy decides which cut storages to keep as
// checkpoints -- during the forward pass and again during every recomputation burst -- so that the
// values of each segment are recomputed from the nearest kept cut just before its backward runs.
//
// A split rule answers: with cut i live (-1: the chain's input) and segment j about to be reversed,
// which cuts between them to keep on the way (in order). Rules here:
//   * bisection (Chen §4.4, mirror counts > 1): keep the middle cut, then the middle of what is left:
//     O(log n) cuts live at a time for O(n log n) recomputation;
//   * revolve (Griewank & Walther, binomial checkpointing): with c free snapshots, the advance that
//     minimises the number of recomputed segments -- optimal for homogeneous chains;
//   * chain_dp: the same recursion with each segment's own cost and each cut's own size, under a byte
//     budget for checkpoints (discretised), minimising the recompute cost (rotor, Beaumont et al. 2019).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <memplan/base/deadline.hpp>

#include <memplan/base/error.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/remat/engine.hpp>
#include <memplan/remat/segments.hpp>

namespace memplan::remat::detail {

// Drops every forward value the backward pass reads again after its last forward use (but the
// last segment's, reversed first), and keeps the cuts a split rule chooses.
template <class Split>
class split_policy {
 public:
  split_policy(const problem& p, const forward_chain& c, const engine& e, Split split)
      : p_(&p), c_(&c), e_(&e), split_(std::move(split)) {
    keep_.assign(c.cuts.size(), 0);
    for (auto k : split_.initial()) keep_[static_cast<std::size_t>(k)] = 1;
  }

  [[nodiscard]] bool drop(storage_id s, std::int32_t pos) const {
    const auto su = static_cast<std::size_t>(s);
    if (c_->drop_point[su] != pos) return false;
    if (c_->segment[su] == c_->segments() - 1) return false;  // reversed first: keep it
    if (c_->is_cut(s)) return !c_->held(s, keep_);
    return true;
  }

  void begin_burst(storage_id need, std::int32_t) {
    kept_now_.assign(c_->cuts.size(), 0);
    target_ = c_->segment[static_cast<std::size_t>(need)];
    if (target_ < 0) return;
    // The nearest live cut below the target, and the free room for more.
    std::int32_t i = -1;
    std::vector<std::int32_t> live;
    // Live cuts at or above the target are what its backward reads; the ones below hold snapshots.
    for (std::int32_t k = 0; k < std::min<std::int32_t>(target_, static_cast<std::int32_t>(c_->cuts.size())); ++k) {
      bool on = true;
      for (auto s : c_->cuts[static_cast<std::size_t>(k)].storages) on = on && e_->on_device(s);
      if (!on) continue;
      i = k;
      live.push_back(k);
    }
    for (auto k : split_.during(i, target_, live)) kept_now_[static_cast<std::size_t>(k)] = 1;
  }

  [[nodiscard]] bool keep(storage_id s, std::int32_t, storage_id) const {
    const auto su = static_cast<std::size_t>(s);
    if (target_ < 0 || c_->segment[su] < 0) return true;
    if (c_->segment[su] == target_) return true;
    return c_->held(s, kept_now_);
  }

 private:
  const problem* p_;
  const forward_chain* c_;
  const engine* e_;
  Split split_;
  std::vector<std::uint8_t> keep_, kept_now_;
  std::int32_t target_ = -1;
};

// ---- bisection ----
struct bisection {
  std::int32_t cuts = 0;
  [[nodiscard]] std::vector<std::int32_t> chain(std::int32_t i, std::int32_t j) const {
    std::vector<std::int32_t> r;
    for (std::int32_t a = i;;) {
      const auto mid = a + (j - a) / 2;
      if (mid <= a || mid >= j || mid >= cuts) break;
      r.push_back(mid);
      a = mid;
    }
    return r;
  }
  [[nodiscard]] std::vector<std::int32_t> initial() const { return chain(-1, cuts); }
  [[nodiscard]] std::vector<std::int32_t> during(std::int32_t i, std::int32_t j, const std::vector<std::int32_t>&) const {
    return chain(i, j);
  }
};

// ---- the chain DP (revolve and chain_dp) ----
// The backward pass meets the chain's cuts in reverse: each cut t must be on the device once (it is
// read by the backward of its own segment and of the next one, and then stays until both ran). With
// cut a live (-1: the input) and b budget units free for snapshots, R(a, t, b) is the least cost of
// bringing back cuts t, t-1, ..., a+1 in that order:
//   materialise t from a without keeping anything on the way:  F(a, t) + R(a, t-1, b)
//   advance to a cut m in (a, t) and keep it (w(m) units):     F(a, m) + R(m, t, b - w(m)) + R(a, m-1, b)
// with F(a, t) the forward cost of segments a+1..t, R(a, a, b) = 0. The first forward pass advances
// for free: Top(a, t, b) = min(R(a, t, b), min over m in (a, t] of Top(m, t, b - w(m)) + R(a, m-1, b))
// (keeping t itself: Top(t, t, .) = 0). revolve is this DP with unit costs and one unit per
// snapshot: binomial checkpointing for a homogeneous chain whose backward reads each step's input and
// output (the engine counts exactly these recomputations on such chains). chain_dp uses each
// segment's cost and each cut's bytes. Chains with more than `max_points` cuts are grouped: every
// k-th cut is a candidate (targets and snapshots), an approximation the real plan then measures.
// Entries with b units depend only on entries with b or fewer, so a table built for B units answers
// every budget up to B exactly as a table built for that budget would (initial(b), during(), cost(b)):
// revolve's search over snapshot counts builds one table, not one per count.
// With a deadline the build stops between chain lengths when it expires; complete() then says false
// and the table must not be used.
class chain_table {
 public:
  chain_table(std::vector<double> seg_cost, std::vector<std::int32_t> cut_units, std::int32_t budget_units, std::int32_t max_points,
              const deadline* until = nullptr) {
    const auto m = static_cast<std::int32_t>(cut_units.size());
    const auto stride = std::max<std::int32_t>(1, (m + max_points - 1) / std::max(1, max_points));
    // Points: candidate cuts; point costs accumulate the segments between them.
    for (std::int32_t k = stride - 1; k < m; k += stride) cut_of_.push_back(k);
    if (!cut_of_.empty() && cut_of_.back() != m - 1 && m > 0) cut_of_.push_back(m - 1);
    n_ = static_cast<std::int32_t>(cut_of_.size());
    B_ = std::max(0, budget_units);
    prefix_.assign(static_cast<std::size_t>(n_) + 1, 0.0);  // prefix_[i]: cost of segments up to point i-1's cut
    std::int32_t seg = 0;
    for (std::int32_t i = 0; i < n_; ++i) {
      double c = 0;
      for (; seg <= cut_of_[static_cast<std::size_t>(i)] && static_cast<std::size_t>(seg) < seg_cost.size(); ++seg)
        c += seg_cost[static_cast<std::size_t>(seg)];
      prefix_[static_cast<std::size_t>(i) + 1] = prefix_[static_cast<std::size_t>(i)] + c;
    }
    w_.assign(static_cast<std::size_t>(n_), 0);
    for (std::int32_t i = 0; i < n_; ++i) w_[static_cast<std::size_t>(i)] = cut_units[static_cast<std::size_t>(cut_of_[static_cast<std::size_t>(i)])];
    // Indices: a in [0, n] (0 = the input, i = point i-1), t in [0, n] (t = a: nothing to bring back).
    const auto N = static_cast<std::size_t>(n_) + 1, W = static_cast<std::size_t>(B_) + 1;
    // Only a <= t is stored (at()), and left uninitialized but for the diagonal: every other entry is
    // written before it is read, and the pages are touched chain length by chain length, between the
    // deadline's checks. Zero-filling the whole square up front (22 MB for revolve on ResNet-101 b32)
    // took 35-53 ms on the 2-core machine before the first check, and revolve ran 40 ms past a 20 ms limit.
    const auto cells = N * (N + 1) / 2 * W;
    bytes_ = cells * (2 * sizeof(double) + 2 * sizeof(std::int32_t));
    r_.reset(new double[cells]);
    top_.reset(new double[cells]);
    r_arg_.reset(new std::int32_t[cells]);
    top_arg_.reset(new std::int32_t[cells]);
    for (std::size_t a = 0; a < N; ++a)
      for (std::size_t b = 0; b < W; ++b) {
        const auto k = at(a, a, b);
        r_[k] = top_[k] = 0.0;  // R(a, a, .) and Top(a, a, .): nothing to bring back
        r_arg_[k] = top_arg_[k] = -1;
      }
    // For each (a, t), the candidates m run in the outer loop and the budgets b in the inner one: the
    // rows R(m, t, .), R(a, m-1, .) and Top(m, t, .) are then read in order, where a loop over m for
    // each b jumped a whole (a, t) plane per read (Inception-v3 at batch 32: chain_table took 22 % of
    // `memplan plan --budget`'s time). The same sums in the same order and the same strict
    // comparisons in increasing m: the same table.
    for (std::size_t len = 1; len < N; ++len) {
      if (until && len > 1 && until->expired()) return;  // complete_ stays false
      for (std::size_t a = 0; a + len < N; ++a) {
        const auto t = a + len;
        double* const r = &r_[at(a, t, 0)];
        std::int32_t* const r_arg = &r_arg_[at(a, t, 0)];
        // R: materialise t from a, or advance to m and keep it.
        const double* const r_prev = &r_[at(a, t - 1, 0)];
        for (std::size_t b = 0; b < W; ++b) {
          r[b] = F(a, t) + r_prev[b];
          r_arg[b] = static_cast<std::int32_t>(t);
        }
        for (std::size_t m = a + 1; m < t; ++m) {
          const auto wm = static_cast<std::size_t>(w_[m - 1]);
          const double f = F(a, m);
          const double* const rm = &r_[at(m, t, 0)];
          const double* const ra = &r_[at(a, m - 1, 0)];
          for (std::size_t b = wm; b < W; ++b) {
            const auto v = f + rm[b - wm] + ra[b];
            const bool better = v < r[b];  // (no branch: the comparisons are unpredictable)
            r[b] = better ? v : r[b];
            r_arg[b] = better ? static_cast<std::int32_t>(m) : r_arg[b];
          }
        }
        // Top: the first pass keeps m (or nothing: R decides).
        double* const top = &top_[at(a, t, 0)];
        std::int32_t* const top_arg = &top_arg_[at(a, t, 0)];
        for (std::size_t b = 0; b < W; ++b) {
          top[b] = r[b];
          top_arg[b] = -1;
        }
        for (std::size_t m = a + 1; m <= t; ++m) {
          const auto wm = static_cast<std::size_t>(w_[m - 1]);
          const double* const tm = &top_[at(m, t, 0)];  // Top(t, t, .) = 0 (keeping t itself)
          const double* const ra = &r_[at(a, m - 1, 0)];
          for (std::size_t b = wm; b < W; ++b) {
            const auto v = tm[b - wm] + ra[b];
            const bool better = v < top[b];
            top[b] = better ? v : top[b];
            top_arg[b] = better ? static_cast<std::int32_t>(m) : top_arg[b];
          }
        }
      }
    }
    complete_ = true;
  }

  [[nodiscard]] bool complete() const noexcept { return complete_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }  // what its four tables hold
  [[nodiscard]] std::int32_t budget() const noexcept { return B_; }
  // The units a query with `budget` uses: the table's own when < 0 or above it.
  [[nodiscard]] std::int32_t within(std::int32_t budget) const noexcept { return budget < 0 || budget > B_ ? B_ : budget; }
  [[nodiscard]] std::int32_t points() const noexcept { return n_; }
  // The model's cost of the whole reversal (the first pass keeping the best snapshots) with `budget`
  // units (< 0 or above the table's: the table's budget).
  [[nodiscard]] double cost(std::int32_t budget = -1) const {
    return n_ == 0 ? 0.0 : top_[at(0, static_cast<std::size_t>(n_), static_cast<std::size_t>(within(budget)))];
  }

  // Cuts to keep during the first forward pass with `budget` units (< 0: the table's budget).
  [[nodiscard]] std::vector<std::int32_t> initial(std::int32_t budget = -1) const {
    std::vector<std::int32_t> r;
    if (n_ == 0) return r;
    std::size_t a = 0;
    const auto t = static_cast<std::size_t>(n_);
    auto b = static_cast<std::size_t>(within(budget));
    while (a < t) {
      const auto m = top_arg_[at(a, t, b)];
      if (m < 0) {  // nothing more during the pass
        break;
      }
      r.push_back(cut_of_[static_cast<std::size_t>(m) - 1]);
      b -= static_cast<std::size_t>(w_[static_cast<std::size_t>(m) - 1]);
      a = static_cast<std::size_t>(m);
    }
    return r;
  }

  // Cuts to keep while bringing back cut `target` from live cut `live` (-1: input) with `free_units`.
  [[nodiscard]] std::vector<std::int32_t> during(std::int32_t live, std::int32_t target, std::int32_t free_units) const {
    std::vector<std::int32_t> r;
    std::size_t a = 0, t = 0;
    for (std::int32_t i = 0; i < n_; ++i) {
      if (cut_of_[static_cast<std::size_t>(i)] <= live) a = static_cast<std::size_t>(i) + 1;
      if (cut_of_[static_cast<std::size_t>(i)] <= target) t = static_cast<std::size_t>(i) + 1;
    }
    auto b = static_cast<std::size_t>(std::clamp(free_units, 0, B_));
    while (t > a) {
      const auto m = r_arg_[at(a, t, b)];
      if (m < 0 || static_cast<std::size_t>(m) >= t) break;  // materialise the target itself: nothing kept
      r.push_back(cut_of_[static_cast<std::size_t>(m) - 1]);
      b -= static_cast<std::size_t>(w_[static_cast<std::size_t>(m) - 1]);
      a = static_cast<std::size_t>(m);
    }
    return r;
  }
  [[nodiscard]] std::int32_t units_of_cut(std::int32_t cut) const {
    for (std::int32_t i = 0; i < n_; ++i)
      if (cut_of_[static_cast<std::size_t>(i)] == cut) return w_[static_cast<std::size_t>(i)];
    return 0;
  }

 private:
  // (a, t, b) for a <= t: the rows of a, each t = a..n, each with its B + 1 budgets.
  [[nodiscard]] std::size_t at(std::size_t a, std::size_t t, std::size_t b) const {
    const auto N = static_cast<std::size_t>(n_) + 1;
    return (a * (2 * N - a + 1) / 2 + (t - a)) * (static_cast<std::size_t>(B_) + 1) + b;
  }
  [[nodiscard]] double F(std::size_t a, std::size_t t) const { return prefix_[t] - prefix_[a]; }

  std::vector<std::int32_t> cut_of_, w_;
  std::int32_t n_ = 0, B_ = 0;
  bool complete_ = false;
  std::size_t bytes_ = 0;
  std::vector<double> prefix_;
  std::unique_ptr<double[]> r_, top_;
  std::unique_ptr<std::int32_t[]> r_arg_, top_arg_;
};

// chain_table(seg_cost, cut_units, budget_units, max_points, until), or the one built from the same
// inputs before, from the context's stage_memo: every rerun of plan()'s budget loop starts from the
// same timeline, and chain_dp's tables and revolve's do not depend on the memory target, so each
// rerun rebuilt the same tables (12-27 % of `memplan plan --budget`'s time on the batch-32 exports).
// A table the clock stopped is not kept. The key holds every input, so a hit is the table the build
// would give.
inline std::shared_ptr<const chain_table> make_chain_table(const plan_context& ctx, std::vector<double> seg_cost, std::vector<std::int32_t> cut_units,
                                                           std::int32_t budget_units, std::int32_t max_points, const deadline* until = nullptr) {
  std::string key;
  if (ctx.memo) {
    const auto put = [&key](const void* data, std::size_t n) { key.append(static_cast<const char*>(data), n); };
    const auto cuts = cut_units.size();
    key = "remat::chain_table";
    put(&budget_units, sizeof budget_units);
    put(&max_points, sizeof max_points);
    put(&cuts, sizeof cuts);
    put(cut_units.data(), cuts * sizeof(std::int32_t));
    put(seg_cost.data(), seg_cost.size() * sizeof(double));
    if (auto hit = ctx.memo->find<chain_table>(key)) return hit;
  }
  auto table = std::make_shared<const chain_table>(std::move(seg_cost), std::move(cut_units), budget_units, max_points, until);
  if (ctx.memo && table->complete()) ctx.memo->keep<chain_table>(std::move(key), table, table->bytes());
  return table;
}

// The split rule of a chain_table for split_policy.
// `budget` < 0: the table's own; else at most that many units (a table answers every smaller budget).
struct table_split {
  std::shared_ptr<const chain_table> table;
  std::int32_t budget = -1;
  [[nodiscard]] std::int32_t units() const { return table->within(budget); }
  [[nodiscard]] std::vector<std::int32_t> initial() const { return table->initial(units()); }
  [[nodiscard]] std::vector<std::int32_t> during(std::int32_t i, std::int32_t t, const std::vector<std::int32_t>& live) const {
    std::int32_t used = 0;
    for (auto k : live) used += table->units_of_cut(k);
    return table->during(i, t, units() - used);
  }
};

}  // namespace memplan::remat::detail
