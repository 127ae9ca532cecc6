#pragma once
// Shared machinery of the offline placers: the referee gate every policy passes through before it
// returns, an index of placed buffers by lifetime, and gap search among the placed buffers that
// overlap a new one in time.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/place/buffer.hpp>
#include <memplan/place/lower_bound.hpp>

namespace memplan::place::detail {

inline constexpr std::int64_t unplaced = -1;

// The problem with its capacity lifted: composite policies (best_of, default_placer) run their members
// on it and enforce the capacity once, on the winner.
inline buffer_problem without_capacity(const buffer_problem& p) {
  buffer_problem q = p;
  q.capacity = std::numeric_limits<std::int64_t>::max();
  return q;
}

// Every policy returns through here: arena and bound filled in, capacity enforced with a clear error,
// and the independent referee check() run; an unchecked placement never leaves a policy.
inline buffer_placement finish(const buffer_problem& p, std::vector<std::int64_t> offsets, std::string placer,
                               std::string note = {}, std::int64_t lower_bound = -1, bool proven_optimal = false) {
  buffer_placement out;
  out.offsets = std::move(offsets);
  for (std::size_t i = 0; i < p.buffers.size() && i < out.offsets.size(); ++i)
    out.arena = std::max(out.arena, out.offsets[i] + p.buffers[i].size);
  out.lower_bound = lower_bound >= 0 ? lower_bound : arena_lower_bound(p);
  out.optimal = proven_optimal || out.arena == out.lower_bound;
  out.placer = std::move(placer);
  out.note = std::move(note);
  if (out.arena > p.capacity)
    throw error(errc::infeasible, "placer " + out.placer + ": best arena reached " + std::to_string(out.arena) +
                                      " bytes exceeds the capacity " + std::to_string(p.capacity) +
                                      " (lower bound " + std::to_string(out.lower_bound) + ")");
  if (auto why = check(p, out))
    throw error(errc::invalid_plan, "placer " + out.placer + " produced an invalid placement: " + *why);
  return out;
}

// Compressed time axis: the distinct lifetime endpoints; section k is [times[k], times[k+1]).
struct time_axis {
  std::vector<std::int64_t> times;
  explicit time_axis(const buffer_problem& p) {
    times.reserve(2 * p.buffers.size());
    for (const auto& b : p.buffers) {
      times.push_back(b.lower);
      times.push_back(b.upper);
    }
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
  }
  [[nodiscard]] int index(std::int64_t t) const {
    return static_cast<int>(std::lower_bound(times.begin(), times.end(), t) - times.begin());
  }
  [[nodiscard]] int sections() const { return times.empty() ? 0 : static_cast<int>(times.size()) - 1; }
};

// Index of placed buffers by lifetime. A query [l, u) overlaps [a, b) iff a <= l < b (the buffer is
// live at l: found by a stabbing query on a segment tree over sections) or l < a < u (it starts inside:
// found in a start-ordered map). Both parts are output-sensitive: O(log T + k) for k answers.
class interval_index {
 public:
  interval_index(const buffer_problem& p, const time_axis& axis) : p_(&p), axis_(&axis) {
    size_ = std::max(1, axis.sections());
    tree_.resize(4 * static_cast<std::size_t>(size_));
  }

  void insert(std::size_t i) {
    const auto& b = p_->buffers[i];
    const int lo = axis_->index(b.lower), hi = axis_->index(b.upper);  // sections [lo, hi)
    add(1, 0, size_, lo, hi, i);
    starts_.insert({lo, i});
  }

  // Calls f(j) once for every inserted buffer j whose lifetime overlaps [lower, upper).
  template <class F>
  void for_each_overlapping(std::int64_t lower, std::int64_t upper, F&& f) const {
    const int lo = axis_->index(lower), hi = axis_->index(upper);
    if (lo < size_) {
      int node = 1, l = 0, r = size_;
      while (true) {
        for (auto j : tree_[static_cast<std::size_t>(node)]) f(j);
        if (r - l == 1) break;
        const int m = (l + r) / 2;
        if (lo < m) { node = 2 * node; r = m; } else { node = 2 * node + 1; l = m; }
      }
    }
    for (auto it = starts_.upper_bound({lo, std::numeric_limits<std::size_t>::max()});
         it != starts_.end() && it->first < hi; ++it)
      f(it->second);
  }

 private:
  void add(int node, int l, int r, int lo, int hi, std::size_t i) {
    if (hi <= l || r <= lo) return;
    if (lo <= l && r <= hi) { tree_[static_cast<std::size_t>(node)].push_back(i); return; }
    const int m = (l + r) / 2;
    add(2 * node, l, m, lo, hi, i);
    add(2 * node + 1, m, r, lo, hi, i);
  }

  const buffer_problem* p_;
  const time_axis* axis_;
  int size_ = 1;
  std::vector<std::vector<std::size_t>> tree_;
  std::set<std::pair<int, std::size_t>> starts_;
};

enum class fit { first, best };

// Offset for a buffer of `size` aligned to `align` among occupied address ranges [start, end) (any order):
// `first` = the lowest gap that fits, `best` = the smallest gap that fits (ties: lowest), else on top.
inline std::int64_t find_gap(std::vector<std::pair<std::int64_t, std::int64_t>>& occupied, std::int64_t size,
                             std::int64_t align, fit rule) {
  std::sort(occupied.begin(), occupied.end());
  std::int64_t cur = 0;  // end of the merged occupied prefix
  std::int64_t best = -1, best_gap = std::numeric_limits<std::int64_t>::max();
  for (const auto& [s, e] : occupied) {
    const auto pos = align_up(cur, align);
    if (s > pos && s - pos >= size) {
      const auto gap = s - pos;
      if (rule == fit::first) return pos;
      if (gap < best_gap) { best_gap = gap; best = pos; }
    }
    cur = std::max(cur, e);
  }
  return best >= 0 ? best : align_up(cur, align);
}

// Places buffers one at a time in `order` at the first or best gap among already placed buffers that
// overlap in time (pinned buffers are placed first, at their offsets). Buffers not in `order` and not
// pinned keep offset `unplaced`. Zero-size buffers go to offset 0: they overlap nothing.
inline std::vector<std::int64_t> place_in_order(const buffer_problem& p, const std::vector<std::size_t>& order,
                                                fit rule, std::vector<std::int64_t> offsets = {}) {
  const auto n = p.buffers.size();
  if (offsets.empty()) offsets.assign(n, unplaced);
  const time_axis axis(p);
  interval_index index(p, axis);
  for (std::size_t i = 0; i < n; ++i) {
    if (p.buffers[i].fixed_offset >= 0) offsets[i] = p.buffers[i].fixed_offset;
    if (offsets[i] != unplaced && p.buffers[i].size > 0) index.insert(i);
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> occupied;
  for (auto i : order) {
    if (offsets[i] != unplaced) continue;
    const auto& b = p.buffers[i];
    if (b.size == 0) { offsets[i] = 0; continue; }
    occupied.clear();
    index.for_each_overlapping(b.lower, b.upper, [&](std::size_t j) {
      occupied.emplace_back(offsets[j], offsets[j] + p.buffers[j].size);
    });
    offsets[i] = find_gap(occupied, b.size, effective_alignment(p, b), rule);
    index.insert(i);
  }
  return offsets;
}

// Buffers that are not pinned, in index order.
inline std::vector<std::size_t> free_buffers(const buffer_problem& p) {
  std::vector<std::size_t> v;
  for (std::size_t i = 0; i < p.buffers.size(); ++i)
    if (p.buffers[i].fixed_offset < 0) v.push_back(i);
  return v;
}

// For policies that do not model pins natively (gergov, mincost_flow): keep the policy's relative
// address order and settle every buffer, in order of its offset, at the lowest gap left by the pins
// and the buffers settled before it.
inline std::vector<std::int64_t> settle_around_pins(const buffer_problem& p, const std::vector<std::int64_t>& offsets) {
  std::vector<std::size_t> order = free_buffers(p);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return offsets[a] != offsets[b] ? offsets[a] < offsets[b] : a < b;
  });
  return place_in_order(p, order, fit::first);
}

inline bool has_pins(const buffer_problem& p) {
  return std::any_of(p.buffers.begin(), p.buffers.end(), [](const buffer& b) { return b.fixed_offset >= 0; });
}

// Wall-clock deadline; `none` never expires.
struct deadline {
  using clock = std::chrono::steady_clock;
  clock::time_point at = clock::time_point::max();
  static deadline after(double seconds) {
    deadline d;
    if (seconds < 1e9) d.at = clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(seconds));
    return d;
  }
  [[nodiscard]] bool expired() const { return at != clock::time_point::max() && clock::now() >= at; }
  [[nodiscard]] double seconds_left() const {
    if (at == clock::time_point::max()) return 1e18;
    return std::chrono::duration<double>(at - clock::now()).count();
  }
};

}  // namespace memplan::place::detail
