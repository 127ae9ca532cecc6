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
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include <memplan/base/error.hpp>
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
    if (c_->is_cut(s)) return !keep_[static_cast<std::size_t>(c_->cut_index[su])];
    return true;
  }

  void begin_burst(storage_id need, std::int32_t) {
    kept_now_.assign(c_->cuts.size(), 0);
    target_ = c_->segment[static_cast<std::size_t>(need)];
    if (target_ < 0) return;
    // The nearest live cut below the target, and the free room for more.
    std::int32_t i = -1;
    std::vector<std::int32_t> live;
    for (std::int32_t k = 0; k < static_cast<std::int32_t>(c_->cuts.size()); ++k) {
      if (!e_->on_device(c_->cuts[static_cast<std::size_t>(k)])) continue;
      if (k < target_) i = k;
      live.push_back(k);
    }
    for (auto k : split_.during(i, target_, live)) kept_now_[static_cast<std::size_t>(k)] = 1;
  }

  [[nodiscard]] bool keep(storage_id s, std::int32_t, storage_id) const {
    const auto su = static_cast<std::size_t>(s);
    if (target_ < 0 || c_->segment[su] < 0) return true;
    if (c_->segment[su] == target_) return true;
    return c_->is_cut(s) && kept_now_[static_cast<std::size_t>(c_->cut_index[su])];
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

// ---- revolve: binomial checkpointing on a homogeneous chain ----
// T[l][c]: fewest segment recomputations to reverse l segments from a live checkpoint with c free
// snapshots (Griewank & Walther): T[1][c] = 0, T[l][0] = l(l-1)/2, T[l][c] = min over the advance m of
// m + T[l-m][c-1] + T[m][c]. The first forward pass advances for free (top[l][c]).
class revolve_table {
 public:
  revolve_table(std::int32_t length, std::int32_t snapshots) : L_(std::max(length, 1)), C_(std::max(snapshots, 0)) {
    const auto W = static_cast<std::size_t>(C_) + 1;
    t_.assign(static_cast<std::size_t>(L_ + 1) * W, 0);
    top_.assign(t_.size(), 0);
    arg_.assign(t_.size(), 0);
    top_arg_.assign(t_.size(), 0);
    for (std::int32_t l = 1; l <= L_; ++l)
      for (std::int32_t c = 0; c <= C_; ++c) {
        const auto at = idx(l, c);
        if (l == 1) continue;
        std::int64_t best = static_cast<std::int64_t>(l) * (l - 1) / 2, best_top = best;
        std::int32_t bm = 0, btm = 0;
        if (c > 0)
          for (std::int32_t m = 1; m < l; ++m) {
            const auto v = m + t_[idx(l - m, c - 1)] + t_[idx(m, c)];
            if (v < best) { best = v; bm = m; }
            const auto vt = top_[idx(l - m, c - 1)] + t_[idx(m, c)];
            if (vt < best_top) { best_top = vt; btm = m; }
          }
        t_[at] = best;
        arg_[at] = bm;
        top_[at] = best_top;
        top_arg_[at] = btm;
      }
  }
  [[nodiscard]] std::int64_t cost(std::int32_t l, std::int32_t c) const { return t_[idx(clamp_l(l), clamp_c(c))]; }
  [[nodiscard]] std::int64_t top_cost(std::int32_t l, std::int32_t c) const { return top_[idx(clamp_l(l), clamp_c(c))]; }
  // The advance from a checkpoint to the next one (0: none), inside a reversal / in the first pass.
  [[nodiscard]] std::int32_t advance(std::int32_t l, std::int32_t c, bool top) const {
    const auto at = idx(clamp_l(l), clamp_c(c));
    return top ? top_arg_[at] : arg_[at];
  }

 private:
  [[nodiscard]] std::size_t idx(std::int32_t l, std::int32_t c) const {
    return static_cast<std::size_t>(l) * (static_cast<std::size_t>(C_) + 1) + static_cast<std::size_t>(c);
  }
  [[nodiscard]] std::int32_t clamp_l(std::int32_t l) const { return std::clamp(l, 1, L_); }
  [[nodiscard]] std::int32_t clamp_c(std::int32_t c) const { return std::clamp(c, 0, C_); }
  std::int32_t L_, C_;
  std::vector<std::int64_t> t_, top_;
  std::vector<std::int32_t> arg_, top_arg_;
};

struct revolve_split {
  std::int32_t cuts = 0, snapshots = 0;
  std::shared_ptr<const revolve_table> table;
  [[nodiscard]] std::vector<std::int32_t> chain(std::int32_t i, std::int32_t j, std::int32_t free, bool top) const {
    std::vector<std::int32_t> r;
    for (std::int32_t a = i; free > 0;) {
      const auto m = table->advance(j - a, free, top);
      if (m <= 0 || a + m >= j || a + m >= cuts) break;
      a += m;
      r.push_back(a);
      --free;
    }
    return r;
  }
  [[nodiscard]] std::vector<std::int32_t> initial() const { return chain(-1, cuts, snapshots, true); }
  [[nodiscard]] std::vector<std::int32_t> during(std::int32_t i, std::int32_t j, const std::vector<std::int32_t>& live) const {
    return chain(i, j, snapshots - static_cast<std::int32_t>(live.size()), false);
  }
};

// ---- chain DP: heterogeneous segments, a byte budget for checkpoints ----
// Points: 0 is the chain's input (always there), 1..n candidate cuts (every `stride`-th cut, at most
// `max_points`), P-1 the end of the chain. Group g is the segments between point g-1 and point g;
// F(a, b) the forward cost of the groups after point a up to point b.
// T(i, j, b): the least recompute cost to reverse groups j, j-1, ..., i+1 from live point i with b budget
// units free: either keep nothing on the way (each group k costs F(i, k)), or advance to a point a in
// (i, j) (cost F(i, a)), keep it (w(a) units), reverse (a, j] with b - w(a), then (i, a] with b.
// Top(i, j, b): the same during the first forward pass, which advances for free and leaves the last
// group's values on the device (Top(P-2, P-1, b) = 0).
class chain_dp_table {
 public:
  chain_dp_table(const forward_chain& c, const problem& p, std::int64_t budget_bytes, std::int32_t slots, std::int32_t max_points) {
    const auto m = static_cast<std::int32_t>(c.cuts.size());
    const auto stride = std::max<std::int32_t>(1, (m + max_points - 1) / std::max(1, max_points));
    cut_of_.push_back(-1);
    for (std::int32_t k = stride - 1; k < m; k += stride) cut_of_.push_back(k);
    cut_of_.push_back(m);
    P_ = cut_of_.size();
    S_ = std::max(1, slots);
    unit_ = std::max<std::int64_t>(1, (budget_bytes + S_ - 1) / S_);
    w_.assign(P_, 0);
    for (std::size_t a = 1; a + 1 < P_; ++a)
      w_[a] = static_cast<std::int32_t>(std::min<std::int64_t>(
          S_ + 1, (p.storage_bytes(c.cuts[static_cast<std::size_t>(cut_of_[a])]) + unit_ - 1) / unit_));
    prefix_.assign(static_cast<std::size_t>(c.segments()) + 1, 0.0);
    for (std::int32_t g = 0; g < c.segments(); ++g)
      prefix_[static_cast<std::size_t>(g) + 1] = prefix_[static_cast<std::size_t>(g)] + c.segment_cost[static_cast<std::size_t>(g)];
    const auto W = static_cast<std::size_t>(S_) + 1;
    t_.assign(P_ * P_ * W, 0.0);
    top_.assign(t_.size(), 0.0);
    arg_.assign(t_.size(), -1);
    top_arg_.assign(t_.size(), -1);
    for (std::size_t len = 1; len < P_; ++len)
      for (std::size_t i = 0; i + len < P_; ++i) {
        const auto j = i + len;
        double none = 0, none_top = 0;
        for (std::size_t k = i + 1; k <= j; ++k) {
          none += F(i, k);
          if (!(k == j && j == P_ - 1)) none_top += F(i, k);
        }
        for (std::size_t b = 0; b < W; ++b) {
          double best = none, best_top = none_top;
          std::int32_t ba = -1, bta = -1;
          for (std::size_t a = i + 1; a < j; ++a) {
            const auto wa = static_cast<std::size_t>(w_[a]);
            if (wa > b) continue;
            const auto v = F(i, a) + t_[at(a, j, b - wa)] + t_[at(i, a, b)];
            if (v < best) { best = v; ba = static_cast<std::int32_t>(a); }
            const auto vt = top_[at(a, j, b - wa)] + t_[at(i, a, b)];
            if (vt < best_top) { best_top = vt; bta = static_cast<std::int32_t>(a); }
          }
          t_[at(i, j, b)] = best;
          arg_[at(i, j, b)] = ba;
          top_[at(i, j, b)] = best_top;
          top_arg_[at(i, j, b)] = bta;
        }
      }
  }

  [[nodiscard]] std::int32_t slots() const noexcept { return S_; }
  [[nodiscard]] std::int64_t unit() const noexcept { return unit_; }
  // The least recompute cost of the whole reversal (the model's claim).
  [[nodiscard]] double cost() const { return top_[at(0, P_ - 1, static_cast<std::size_t>(S_))]; }
  // Budget units a kept cut takes (0 when it is not a candidate point).
  [[nodiscard]] std::int32_t units_of_cut(std::int32_t cut) const {
    for (std::size_t a = 1; a + 1 < P_; ++a)
      if (cut_of_[a] == cut) return w_[a];
    return 0;
  }

  // The cuts to keep on the way from live cut i (-1: input) to the reversal of segment `seg`, with
  // `free_units` of budget; top: during the first forward pass.
  [[nodiscard]] std::vector<std::int32_t> chain(std::int32_t i, std::int32_t seg, std::int32_t free_units, bool top) const {
    std::vector<std::int32_t> r;
    std::size_t pi = 0, pj = P_ - 1;
    for (std::size_t a = 1; a + 1 < P_; ++a)
      if (cut_of_[a] <= i) pi = a;
    for (std::size_t a = P_ - 1; a > pi; --a)
      if (cut_of_[a] >= seg) pj = a;
    auto b = static_cast<std::size_t>(std::clamp(free_units, 0, S_));
    while (pj > pi + 1) {
      const auto a = (top ? top_arg_ : arg_)[at(pi, pj, b)];
      if (a < 0) break;
      r.push_back(cut_of_[static_cast<std::size_t>(a)]);
      b -= static_cast<std::size_t>(w_[static_cast<std::size_t>(a)]);
      pi = static_cast<std::size_t>(a);
    }
    return r;
  }

 private:
  [[nodiscard]] std::size_t at(std::size_t i, std::size_t j, std::size_t b) const { return (i * P_ + j) * (static_cast<std::size_t>(S_) + 1) + b; }
  // Forward cost of the segments after point a's cut up to point b's cut (its segment included).
  [[nodiscard]] double F(std::size_t a, std::size_t b) const {
    const auto from = static_cast<std::size_t>(cut_of_[a] + 1);
    const auto to = std::min(static_cast<std::size_t>(cut_of_[b]) + 1, prefix_.size() - 1);
    return from >= to ? 0.0 : prefix_[to] - prefix_[from];
  }

  std::vector<std::int32_t> cut_of_, w_;
  std::size_t P_ = 0;
  std::int32_t S_ = 1;
  std::int64_t unit_ = 1;
  std::vector<double> prefix_, t_, top_;
  std::vector<std::int32_t> arg_, top_arg_;
};

struct dp_split {
  std::int32_t cuts = 0;
  std::shared_ptr<const chain_dp_table> table;
  [[nodiscard]] std::vector<std::int32_t> initial() const { return table->chain(-1, cuts, table->slots(), true); }
  [[nodiscard]] std::vector<std::int32_t> during(std::int32_t i, std::int32_t seg, const std::vector<std::int32_t>& live) const {
    std::int32_t used = 0;
    for (auto k : live) used += table->units_of_cut(k);
    return table->chain(i, seg, table->slots() - used, false);
  }
};

}  // namespace memplan::remat::detail
