#pragma once
// Batch-size-symbolic plans. MemoMalloc plans one input shape and lists dynamic shapes as future work
// (§7); here a tensor's bytes are affine in the batch size, `size = a + b·batch`, and one placement
// gives every buffer an offset that is affine in the batch too, `offset = c + d·batch`, valid for every
// batch in a declared range [min, max]: a server keeps one plan (and one slab of the largest arena)
// for all batch sizes instead of a plan per size.
//
// Why checking the ends is a proof. For two buffers live at the same time, "i lies below j" is
// off_i + size_i <= off_j, an affine inequality in the batch: if it holds at min and at max it holds
// at every batch in between. `prove` checks it for every pair live together; `check_at` instantiates the
// plan at one batch and runs the buffer referee (core/buffer.hpp).
//
// Placement (`place_symbolic`). A concrete placer solves the problem at one batch (the largest, then
// also the smallest); its offsets give every buffer a rank (address order). Buffers are then stacked
// in that order: buffer i must lie above every earlier-ranked buffer j live with it, at both ends of
// the range: off_i(min) >= max_j end_j(min) and off_i(max) >= max_j end_j(max). The smallest affine
// offset through those two lower limits whose coefficients are multiples of i's alignment (then it is
// aligned at every integer batch) is i's offset. Every pair live together is ordered, so the result
// is valid on the whole range. At one batch it is the concrete placement pushed down; over a range the
// price is (i) one order for every batch and (ii) rounding the slope to the alignment.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/core/buffer.hpp>
#include <memplan/runtime/replay.hpp>
#include <memplan/runtime/trace.hpp>

namespace memplan::runtime {

// a + b·batch bytes (or an offset).
struct affine {
  std::int64_t a = 0;
  std::int64_t b = 0;
  [[nodiscard]] constexpr std::int64_t at(std::int64_t batch) const noexcept { return a + b * batch; }
  friend constexpr bool operator==(const affine&, const affine&) = default;
};

struct batch_range {
  std::int64_t min = 1;
  std::int64_t max = 1;
};

struct symbolic_buffer {
  std::int64_t lower = 0, upper = 0;  // lifetime [lower, upper), the same at every batch
  affine size;
  std::int64_t alignment = 1;
};

struct symbolic_problem {
  std::vector<symbolic_buffer> buffers;
  std::int64_t alignment = 1;
  batch_range range;
};

struct symbolic_placement {
  std::vector<affine> offsets;  // one per buffer
  std::string placer;           // the concrete placer whose order was used, and at which batch
  std::string note;
};

namespace detail {
inline std::int64_t floor_div(std::int64_t x, std::int64_t y) { return x / y - ((x % y != 0) && ((x < 0) != (y < 0))); }
inline std::int64_t ceil_div(std::int64_t x, std::int64_t y) { return -floor_div(-x, y); }
// Smallest multiple of a (> 0) that is >= x, for any sign of x.
inline std::int64_t round_up(std::int64_t x, std::int64_t a) { return ceil_div(x, a) * a; }
}  // namespace detail

inline void validate(const symbolic_problem& sp) {
  if (sp.range.min < 0 || sp.range.min > sp.range.max)
    throw error(errc::invalid_argument, "symbolic problem: bad batch range [" + std::to_string(sp.range.min) + ", " +
                                            std::to_string(sp.range.max) + "]");
  for (std::size_t i = 0; i < sp.buffers.size(); ++i) {
    const auto& b = sp.buffers[i];
    if (b.size.at(sp.range.min) < 0 || b.size.at(sp.range.max) < 0)
      throw error(errc::invalid_argument, "symbolic problem: buffer " + std::to_string(i) + " has a negative size in the batch range");
  }
}

// The concrete problem at one batch.
inline buffer_problem instantiate(const symbolic_problem& sp, std::int64_t batch) {
  buffer_problem bp;
  bp.alignment = sp.alignment;
  bp.buffers.reserve(sp.buffers.size());
  for (const auto& b : sp.buffers) bp.buffers.push_back({b.lower, b.upper, b.size.at(batch), b.alignment, -1});
  return bp;
}

// The concrete placement at one batch (arena = the highest end).
inline buffer_placement instantiate(const symbolic_problem& sp, const symbolic_placement& pl, std::int64_t batch) {
  buffer_placement out;
  out.placer = pl.placer;
  out.offsets.reserve(pl.offsets.size());
  for (std::size_t i = 0; i < pl.offsets.size(); ++i) {
    out.offsets.push_back(pl.offsets[i].at(batch));
    out.arena = std::max(out.arena, out.offsets.back() + sp.buffers[i].size.at(batch));
  }
  return out;
}

inline std::int64_t arena_at(const symbolic_problem& sp, const symbolic_placement& pl, std::int64_t batch) {
  return instantiate(sp, pl, batch).arena;
}

// The referee at one batch: the first violation in words, or nothing.
inline std::optional<std::string> check_at(const symbolic_problem& sp, const symbolic_placement& pl, std::int64_t batch) {
  if (pl.offsets.size() != sp.buffers.size()) return "symbolic placement has " + std::to_string(pl.offsets.size()) + " offsets for " +
                                                    std::to_string(sp.buffers.size()) + " buffers";
  if (auto bad = check(instantiate(sp, batch), instantiate(sp, pl, batch))) return "at batch " + std::to_string(batch) + ": " + *bad;
  return std::nullopt;
}

// A proof for the whole range (see the top): offsets aligned at every batch (coefficients multiples of
// the alignment), non-negative at both ends, and every pair of buffers live together, non-empty
// somewhere in the range, in the same address order at both ends. O(n^2) pairs at worst.
inline std::optional<std::string> prove(const symbolic_problem& sp, const symbolic_placement& pl) {
  validate(sp);
  const auto n = sp.buffers.size();
  if (pl.offsets.size() != n) return "symbolic placement has " + std::to_string(pl.offsets.size()) + " offsets for " + std::to_string(n) + " buffers";
  const auto lo = sp.range.min, hi = sp.range.max;
  for (std::size_t i = 0; i < n; ++i) {
    const auto al = std::max(sp.alignment, sp.buffers[i].alignment);
    const auto& o = pl.offsets[i];
    if ((lo != hi && o.b % al != 0) || o.at(lo) % al != 0)
      return "buffer " + std::to_string(i) + ": offset " + std::to_string(o.a) + " + " + std::to_string(o.b) + "·batch is not aligned to " + std::to_string(al) + " at every batch";
    if (o.at(lo) < 0 || o.at(hi) < 0) return "buffer " + std::to_string(i) + ": negative offset in the range";
  }
  std::vector<std::size_t> by_lower(n);
  for (std::size_t i = 0; i < n; ++i) by_lower[i] = i;
  std::sort(by_lower.begin(), by_lower.end(), [&](auto x, auto y) { return sp.buffers[x].lower < sp.buffers[y].lower; });
  auto below = [&](std::size_t i, std::size_t j, std::int64_t batch) {
    return pl.offsets[i].at(batch) + sp.buffers[i].size.at(batch) <= pl.offsets[j].at(batch);
  };
  auto empty = [&](std::size_t i) { return sp.buffers[i].size.at(lo) == 0 && sp.buffers[i].size.at(hi) == 0; };
  for (std::size_t x = 0; x < n; ++x) {
    const auto i = by_lower[x];
    if (empty(i)) continue;
    for (std::size_t y = x + 1; y < n && sp.buffers[by_lower[y]].lower < sp.buffers[i].upper; ++y) {
      const auto j = by_lower[y];
      if (empty(j)) continue;
      if ((below(i, j, lo) && below(i, j, hi)) || (below(j, i, lo) && below(j, i, hi))) continue;
      return "buffers " + std::to_string(i) + " and " + std::to_string(j) + " are live together and not in one address order at batches " +
             std::to_string(lo) + " and " + std::to_string(hi);
    }
  }
  return std::nullopt;
}

// Stacks the buffers in the given address order (a permutation of the buffer indices); see the top.
inline symbolic_placement stack_in_order(const symbolic_problem& sp, const std::vector<std::size_t>& order) {
  validate(sp);
  const auto lo = sp.range.min, hi = sp.range.max, span = hi - lo;
  symbolic_placement pl;
  pl.offsets.assign(sp.buffers.size(), affine{});
  std::vector<std::size_t> done;
  done.reserve(order.size());
  for (auto i : order) {
    const auto& bi = sp.buffers[i];
    const auto al = std::max(sp.alignment, bi.alignment);
    std::int64_t need_lo = 0, need_hi = 0;  // the offset must be at least these at min and at max
    for (auto j : done) {
      const auto& bj = sp.buffers[j];
      if (bj.lower >= bi.upper || bi.lower >= bj.upper) continue;
      need_lo = std::max(need_lo, pl.offsets[j].at(lo) + bj.size.at(lo));
      need_hi = std::max(need_hi, pl.offsets[j].at(hi) + bj.size.at(hi));
    }
    need_lo = detail::round_up(need_lo, al);
    need_hi = detail::round_up(need_hi, al);
    if (span == 0) {
      pl.offsets[i] = {need_lo, 0};
    } else {
      const auto d = detail::round_up(detail::ceil_div(need_hi - need_lo, span), al);
      const auto c = detail::round_up(std::max(need_lo - d * lo, need_hi - d * hi), al);
      pl.offsets[i] = {c, d};
    }
    done.push_back(i);
  }
  return pl;
}

// The buffer indices in address order of a concrete placement (ties: index).
inline std::vector<std::size_t> address_order(const buffer_placement& pl) {
  std::vector<std::size_t> o(pl.offsets.size());
  for (std::size_t i = 0; i < o.size(); ++i) o[i] = i;
  std::stable_sort(o.begin(), o.end(), [&](auto x, auto y) { return pl.offsets[x] < pl.offsets[y]; });
  return o;
}

// One plan for the whole batch range: the address orders of `placer` at the largest and at the smallest
// batch are both stacked; the one with the smaller arenas (at max, then at min) is kept.
template <buffer_placer Placer>
symbolic_placement place_symbolic(const symbolic_problem& sp, const Placer& placer) {
  validate(sp);
  symbolic_placement best;
  std::int64_t best_hi = -1, best_lo = -1;
  for (const auto batch : {sp.range.max, sp.range.min}) {
    auto pl = stack_in_order(sp, address_order(placer.place(instantiate(sp, batch))));
    const auto a_hi = arena_at(sp, pl, sp.range.max), a_lo = arena_at(sp, pl, sp.range.min);
    if (best_hi < 0 || a_hi < best_hi || (a_hi == best_hi && a_lo < best_lo)) {
      best = std::move(pl);
      best.placer = placer.name() + " order at batch " + std::to_string(batch);
      best_hi = a_hi;
      best_lo = a_lo;
    }
    if (sp.range.min == sp.range.max) break;
  }
  if (auto bad = prove(sp, best)) throw error(errc::invalid_plan, "place_symbolic: " + *bad);
  return best;
}

// Affine sizes from the same buffer problem at two batch sizes (the exporter traces the program at two
// batches): b = (s2 - s1) / (batch2 - batch1), rounded up when it does not divide (then the size is
// exact at batch1 and an over-estimate elsewhere in the range; `rounded` counts them). Lifetimes and
// alignments must agree buffer by buffer.
struct affine_fit {
  symbolic_problem problem;
  std::int64_t exact = 0;    // buffers whose two sizes lie on one affine function with integer slope
  std::int64_t rounded = 0;  // buffers whose slope was rounded up
};

inline affine_fit fit_affine(const buffer_problem& p1, std::int64_t batch1, const buffer_problem& p2, std::int64_t batch2, batch_range range) {
  if (batch1 == batch2) throw error(errc::invalid_argument, "fit_affine: the two batch sizes are equal");
  if (p1.buffers.size() != p2.buffers.size())
    throw error(errc::invalid_argument, "fit_affine: " + std::to_string(p1.buffers.size()) + " buffers at batch " + std::to_string(batch1) +
                                            " but " + std::to_string(p2.buffers.size()) + " at batch " + std::to_string(batch2));
  if (batch1 > batch2) return fit_affine(p2, batch2, p1, batch1, range);
  affine_fit f;
  f.problem.alignment = std::max(p1.alignment, p2.alignment);
  f.problem.range = range;
  for (std::size_t i = 0; i < p1.buffers.size(); ++i) {
    const auto &x = p1.buffers[i], &y = p2.buffers[i];
    if (x.lower != y.lower || x.upper != y.upper || x.alignment != y.alignment)
      throw error(errc::invalid_argument, "fit_affine: buffer " + std::to_string(i) + " has another lifetime or alignment at batch " + std::to_string(batch2));
    const auto slope = detail::ceil_div(y.size - x.size, batch2 - batch1);
    (slope * (batch2 - batch1) == y.size - x.size ? f.exact : f.rounded) += 1;
    f.problem.buffers.push_back({x.lower, x.upper, affine{x.size - slope * batch1, slope}, x.alignment});
  }
  validate(f.problem);
  return f;
}

// ---- traces with affine sizes: record at two batches, replay at any batch of the range ----------------

// An allocation trace whose sizes are affine in the batch: the same sequence of allocations and frees
// (and alignments) at every batch, as a framework running one graph at several batch sizes does.
struct symbolic_trace {
  allocation_trace shape;     // the trace at one batch (sizes there); events, lifetimes, tags, views
  std::vector<affine> sizes;  // per allocation
  batch_range range;
};

// The trace at one batch.
inline allocation_trace instantiate(const symbolic_trace& st, std::int64_t batch) {
  auto t = st.shape;
  for (std::size_t i = 0; i < t.allocations.size(); ++i) t.allocations[i].size = st.sizes[i].at(batch);
  return t;
}

// Affine sizes from two recordings of one program at two batches (same events, lifetimes, alignments).
// An allocation planned at one batch and empty at the other keeps its slot (planned() is judged at batch2).
inline symbolic_trace fit_traces(const allocation_trace& t1, std::int64_t batch1, const allocation_trace& t2, std::int64_t batch2, batch_range range) {
  if (t1.allocations.size() != t2.allocations.size() || t1.events != t2.events)
    throw error(errc::invalid_argument, "fit_traces: the traces at batch " + std::to_string(batch1) + " and " + std::to_string(batch2) +
                                            " have different allocations (" + std::to_string(t1.allocations.size()) + " vs " +
                                            std::to_string(t2.allocations.size()) + ")");
  buffer_problem p1, p2;
  for (std::size_t i = 0; i < t1.allocations.size(); ++i) {
    const auto &x = t1.allocations[i], &y = t2.allocations[i];
    if (x.begin != y.begin || x.end != y.end || x.alignment != y.alignment)
      throw error(errc::invalid_argument, "fit_traces: allocation " + std::to_string(i) + " differs in order, lifetime or alignment");
    const auto end = x.freed() ? x.end : t1.events;
    p1.buffers.push_back({x.begin, end + 1, x.size, x.alignment, -1});
    p2.buffers.push_back({y.begin, end + 1, y.size, y.alignment, -1});
  }
  const auto f = fit_affine(p1, batch1, p2, batch2, range);
  symbolic_trace st{batch1 < batch2 ? t2 : t1, {}, range};
  for (const auto& b : f.problem.buffers) st.sizes.push_back(b.size);
  return st;
}

// A symbolic trace with its symbolic placement: replay plans for any batch of the range.
struct symbolic_replay {
  symbolic_trace trace;
  symbolic_problem problem;              // the planned allocations (non-empty somewhere, freed)
  std::vector<std::int32_t> allocation;  // problem buffer -> allocation index
  symbolic_placement placement;
  std::int64_t slab = 0;                 // the largest arena over the range (at one of its ends)
};

template <buffer_placer Placer>
symbolic_replay plan_symbolic(const symbolic_trace& st, const Placer& placer, std::int64_t alignment = 64) {
  symbolic_replay sr;
  sr.trace = st;
  sr.problem.alignment = alignment;
  sr.problem.range = st.range;
  for (std::size_t i = 0; i < st.shape.allocations.size(); ++i) {
    const auto& r = st.shape.allocations[i];
    const auto& s = st.sizes[i];
    if (!r.freed() || (s.at(st.range.min) == 0 && s.at(st.range.max) == 0)) continue;
    sr.problem.buffers.push_back({r.begin, r.end, s, r.alignment});
    sr.allocation.push_back(static_cast<std::int32_t>(i));
  }
  sr.placement = place_symbolic(sr.problem, placer);
  sr.slab = std::max(arena_at(sr.problem, sr.placement, st.range.min), arena_at(sr.problem, sr.placement, st.range.max));
  return sr;
}

// The replay plan at one batch of the range (what `--batch N` instantiates): the offsets of the
// symbolic placement at that batch, checked by the referee, and a slab large enough for every batch.
inline replay_plan replay_plan_at(const symbolic_replay& sr, std::int64_t batch) {
  if (batch < sr.trace.range.min || batch > sr.trace.range.max)
    throw error(errc::invalid_argument, "symbolic replay: batch " + std::to_string(batch) + " is outside [" +
                                            std::to_string(sr.trace.range.min) + ", " + std::to_string(sr.trace.range.max) + "]");
  const auto t = instantiate(sr.trace, batch);
  trace_problem tp;
  tp.problem = instantiate(sr.problem, batch);
  tp.allocation = sr.allocation;
  // Allocations empty at this batch stay in the problem (size 0): make_replay_plan serves them from
  // the slab like any other; to_buffer_problem would drop them and shift the indices.
  auto rp = make_replay_plan(t, tp, instantiate(sr.problem, sr.placement, batch));
  rp.arena = std::max(rp.arena, sr.slab);
  return rp;
}

}  // namespace memplan::runtime
