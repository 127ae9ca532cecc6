#pragma once
// place::default_placer -- the placer to use without thinking: zero fragmentation (arena ==
// arena_lower_bound, OLLA §4.4/§5.4) whenever it finds it within its budget, else the best arena found
// with its gap in `note`.
//
// When the problem falls apart in time (detail::split_in_time: the buffers live throughout at the
// bottom, pieces above them that no buffer crosses, e.g. the micro-batches of a gradient-accumulation
// trace), each distinct piece is placed on its own (repeated pieces once) with a share of the budget.
// Then, unless that met the bound: greedy_by_breadth (zero fragmentation on most training graphs in
// milliseconds), best_fit and first fit in allocation order if that misses the bound (each only while
// the bound is missed); then place::exact searches from their best for the
// rest of the budget (decision mode when the problem has a finite capacity: the first placement that
// fits ends it; otherwise minimisation); greedy_by_size and pyramid only if time is left after that.
// Every pass checks the deadline (a greedy pass cut short stacks its remaining buffers on top), so the
// wall time stays within time_limit_s plus a few milliseconds (plus the O(n log n) bookkeeping around
// the passes on very large problems: about 4 us per buffer is kept in reserve for it).
#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <memplan/core/context.hpp>
#include <memplan/place/best_fit.hpp>
#include <memplan/core/buffer.hpp>
#include <memplan/place/detail/support.hpp>
#include <memplan/place/exact.hpp>
#include <memplan/place/greedy_by_breadth.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/place/lower_bound.hpp>
#include <memplan/place/pyramid.hpp>

namespace memplan::place {

namespace detail {

// Time decomposition (as idealloc decomposes interval graphs): the buffers live over the whole horizon
// go to the bottom; what is left falls apart at the times no remaining buffer crosses (a training
// trace of several micro-batches: one piece per micro-batch, the weights below them all). Pieces
// never overlap in time, so each one is placed on its own above the stack of global buffers.
struct time_pieces {
  std::vector<std::size_t> global;               // live from the first step to the last
  std::vector<std::vector<std::size_t>> pieces;  // the rest, split where nothing crosses
};

inline time_pieces split_in_time(const buffer_problem& p) {
  time_pieces tp;
  std::int64_t first = std::numeric_limits<std::int64_t>::max(), last = std::numeric_limits<std::int64_t>::min();
  for (const auto& b : p.buffers) {
    if (b.fixed_offset >= 0) return {};  // pins: no decomposition
    if (b.size == 0) continue;
    first = std::min(first, b.lower);
    last = std::max(last, b.upper);
  }
  std::vector<std::size_t> rest;
  for (std::size_t i = 0; i < p.buffers.size(); ++i) {
    const auto& b = p.buffers[i];
    if (b.size == 0) continue;
    (b.lower == first && b.upper == last ? tp.global : rest).push_back(i);
  }
  // By lower end, ties by buffer shape then index: repeated pieces list their buffers in the same order.
  std::sort(rest.begin(), rest.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = p.buffers[a];
    const auto& y = p.buffers[b];
    if (x.lower != y.lower) return x.lower < y.lower;
    if (x.upper != y.upper) return x.upper < y.upper;
    if (x.size != y.size) return x.size < y.size;
    return a < b;
  });
  std::int64_t end = std::numeric_limits<std::int64_t>::min();
  for (auto i : rest) {
    if (tp.pieces.empty() || p.buffers[i].lower >= end) tp.pieces.emplace_back();
    tp.pieces.back().push_back(i);
    end = std::max(end, p.buffers[i].upper);
  }
  return tp;
}

// First fit in allocation order: buffers by lower end (larger first at equal ends), each at the lowest
// gap among the placed buffers it overlaps -- the placement of a first-fit allocator that never gives
// memory back, with pins as obstacles. The size-ordered passes put a long-lived buffer low and leave
// the short ones around it the gaps; where long-lived buffers begin among bursts of short ones, as in
// recompute plans (Inception-v3 at batch 32 and half its peak with its concatenation variants: a
// concatenation kept until the backward of its last slice, among rebuilt buffers), this order leaves
// fewer holes: 7.3 % above max load there, against 12.7 % (best_fit) and 36.5 % (greedy_by_breadth).
struct first_fit_by_allocation {
  [[nodiscard]] std::string name() const { return "first_fit_by_allocation"; }
  template <class Deadline>
  [[nodiscard]] std::vector<std::int64_t> offsets(const buffer_problem& p, const Deadline& until, bool* cut = nullptr) const {
    auto ids = free_buffers(p);
    std::sort(ids.begin(), ids.end(), [&](std::size_t a, std::size_t b) {
      const auto& x = p.buffers[a];
      const auto& y = p.buffers[b];
      if (x.lower != y.lower) return x.lower < y.lower;
      if (x.size != y.size) return x.size > y.size;
      return a < b;
    });
    return place_in_order(p, ids, fit::first, {}, &until, cut);
  }
};

}  // namespace detail

struct default_placer {
  static constexpr double default_time_limit_s = 0.8;  // plan and place stay within a second
  double time_limit_s = -1;        // seconds in all; < 0: default_time_limit_s
  std::int64_t node_limit = -1;    // for the exact search, < 0: unlimited
  std::int64_t accept = -1;        // as exact::accept (-1: the capacity when finite, else minimise)
  bool decompose = true;           // place the pieces of detail::split_in_time one by one (when >= 2)
  progress_callback progress{};    // handed to the exact search (the context's, via place(p, ctx))

  [[nodiscard]] std::string name() const { return "default"; }
  [[nodiscard]] double seconds() const { return time_limit_s < 0 ? default_time_limit_s : time_limit_s; }

  // With a context: its time limit replaces time_limit_s; in deterministic mode the search stops on
  // a node budget instead of a clock, so the same input gives the same placement on any machine.
  static constexpr std::int64_t deterministic_node_limit = 200'000;
  [[nodiscard]] buffer_placement place(const buffer_problem& p, const plan_context& ctx) const {
    return detail::with_context(*this, ctx, deterministic_node_limit).place(p);
  }

  [[nodiscard]] buffer_placement place(const buffer_problem& p) const {
    validate(p);
    const auto until = deadline::after(seconds());
    const auto relaxed = detail::without_capacity(p);
    const auto bound = arena_lower_bound(p);
    const bool capacity_given = p.capacity != std::numeric_limits<std::int64_t>::max();
    const std::int64_t level = accept >= 0 ? accept : capacity_given ? p.capacity : 0;
    const auto good = [&](const buffer_placement& pl) { return pl.arena <= bound || pl.arena <= level || pl.optimal; };
    buffer_placement best;
    std::string tried;
    auto consider = [&](buffer_placement pl) {
      tried += (tried.empty() ? "" : ", ") + pl.placer + "=" + std::to_string(pl.arena);
      if (best.offsets.empty() || pl.arena < best.arena) best = std::move(pl);
    };
    // A greedy pass's offsets (the referee checks only the placement returned, once, at the end).
    const auto pass = [&](auto policy) {
      buffer_placement pl;
      pl.offsets = policy.offsets(relaxed, until);
      pl.arena = detail::arena_of(relaxed, pl.offsets);
      pl.lower_bound = bound;
      pl.placer = policy.name();
      return pl;
    };
    // What the final check and a whole-problem greedy pass cost, roughly: kept in reserve.
    const auto reserve = 4e-6 * static_cast<double>(p.buffers.size());
    if (decompose) {
      const auto pieces_until = deadline::after(std::max(0.0, std::min(until.seconds_left(), 1e9) - reserve));
      if (auto by_pieces = place_by_pieces(relaxed, pieces_until, level)) {
        const auto note = by_pieces->note;
        consider(std::move(*by_pieces));
        tried += " (" + note + ")";
      }
    }
    // After the pieces, the whole problem only if a good part of the budget is left.
    const bool whole = best.offsets.empty() || (!good(best) && until.seconds_left() > std::max(2 * reserve, 0.25 * seconds()));
    // A pass starts only if its setup (about 1 us per buffer) fits in the time left; with no time even
    // for the first one, the first-fit sweep.
    const auto room = [&] { return until.seconds_left() > 1e-6 * static_cast<double>(p.buffers.size()); };
    if (whole && !room() && best.offsets.empty()) consider(pass(detail::first_fit_sweep{}));
    if (whole && room()) consider(pass(greedy_by_breadth{}));
    if (whole && !good(best) && room()) consider(pass(best_fit{}));
    if (whole && !good(best) && room()) consider(pass(detail::first_fit_by_allocation{}));
    if (whole && !good(best) && room()) {
      auto pl = exact{.node_limit = node_limit, .accept = accept, .progress = progress}.search_from(p, best, until);
      tried += ", exact=" + std::to_string(pl.arena) + " (" + pl.note + ")";
      if (pl.arena < best.arena || pl.optimal) best = std::move(pl);  // exact's proven bound comes along
    }
    // Whatever time is left (the search gave up early): the remaining heuristics.
    if (whole && !good(best) && room()) consider(pass(greedy_by_size{}));
    if (whole && !good(best) && room()) consider(pass(pyramid{}));
    const auto lb = std::max(bound, best.lower_bound);
    const bool optimal = best.optimal || best.arena == lb;
    return detail::finish(p, std::move(best.offsets), name() + "(" + best.placer + ")", tried, lb, optimal);
  }

 private:
  // The global buffers stacked at the bottom, each piece placed by a default_placer of its own (time
  // shared by size) above them. Nothing when the problem does not fall apart.
  // `level` > 0: any arena up to it is good enough (decision mode).
  [[nodiscard]] std::optional<buffer_placement> place_by_pieces(const buffer_problem& p, const deadline& until,
                                                               std::int64_t level) const {
    const auto tp = detail::split_in_time(p);
    if (tp.pieces.size() < 2) return std::nullopt;
    std::vector<std::int64_t> offsets(p.buffers.size(), 0);
    std::int64_t base = 0, align = p.alignment;
    auto global = tp.global;
    std::stable_sort(global.begin(), global.end(), [&](std::size_t a, std::size_t b) { return p.buffers[a].size > p.buffers[b].size; });
    for (auto i : global) {
      base = align_up(base, effective_alignment(p, p.buffers[i]));
      offsets[i] = base;
      base += p.buffers[i].size;
    }
    for (const auto& piece : tp.pieces)
      for (auto i : piece) align = std::max(align, effective_alignment(p, p.buffers[i]));
    base = align_up(base, align);  // every alignment carries over to the pieces' offsets
    int at_bound = 0;
    // Pieces that repeat (micro-batches of one model: the same buffers shifted in time) are placed
    // once; the time is shared among the distinct ones by size.
    using shape = std::vector<std::array<std::int64_t, 4>>;
    std::map<shape, std::size_t> index;  // shape -> distinct piece
    std::vector<std::size_t> kind(tp.pieces.size());
    std::vector<std::size_t> first_of;   // distinct piece -> its first occurrence
    for (std::size_t j = 0; j < tp.pieces.size(); ++j) {
      const auto& piece = tp.pieces[j];
      const auto start = p.buffers[piece.front()].lower;  // pieces are sorted by lower end
      shape key;
      key.reserve(piece.size());
      for (auto i : piece) key.push_back({p.buffers[i].lower - start, p.buffers[i].upper - start, p.buffers[i].size, p.buffers[i].alignment});
      const auto [it, fresh] = index.emplace(std::move(key), first_of.size());
      if (fresh) first_of.push_back(j);
      kind[j] = it->second;
    }
    // Every distinct piece gets a greedy pass first. The arena is the stack plus the highest piece, so
    // the target for all of them is the largest piece bound; only pieces above it are searched (worst
    // first, decision mode at that target, the time shared among them by size).
    std::vector<buffer_problem> subs(first_of.size());
    std::vector<buffer_placement> solved(first_of.size());
    std::int64_t target = 0;
    for (std::size_t d = 0; d < first_of.size(); ++d) {
      subs[d].alignment = p.alignment;
      for (auto i : tp.pieces[first_of[d]]) subs[d].buffers.push_back(p.buffers[i]);
      solved[d] = greedy_by_breadth{}.place(subs[d]);
      target = std::max(target, solved[d].lower_bound);
    }
    if (level > 0) target = std::max(target, level - base);  // decision mode: the capacity is enough
    std::vector<std::size_t> above;
    std::size_t left = 0;
    for (std::size_t d = 0; d < first_of.size(); ++d)
      if (solved[d].arena > target) { above.push_back(d); left += subs[d].buffers.size(); }
    std::sort(above.begin(), above.end(), [&](std::size_t a, std::size_t b) {
      return solved[a].arena != solved[b].arena ? solved[a].arena > solved[b].arena : a < b;
    });
    for (auto d : above) {
      const auto n = subs[d].buffers.size();
      const auto share = std::max(0.0, until.seconds_left()) * static_cast<double>(n) / static_cast<double>(left);
      left -= n;
      if (share < 4e-6 * static_cast<double>(n)) continue;  // no time for a search: the greedy pass stays
      auto pl = default_placer{.time_limit_s = share, .node_limit = node_limit, .accept = target, .decompose = false}.place(subs[d]);
      if (pl.arena < solved[d].arena) solved[d] = std::move(pl);
    }
    for (std::size_t d = 0; d < first_of.size(); ++d) at_bound += solved[d].arena <= target;
    for (std::size_t j = 0; j < tp.pieces.size(); ++j) {
      const auto& pl = solved[kind[j]];
      for (std::size_t k = 0; k < tp.pieces[j].size(); ++k) offsets[tp.pieces[j][k]] = base + pl.offsets[k];
    }
    buffer_placement pl;  // unchecked: the caller checks the placement it returns
    pl.offsets = std::move(offsets);
    pl.arena = detail::arena_of(p, pl.offsets);
    pl.placer = "pieces";
    pl.note = std::to_string(tp.pieces.size()) + " pieces in time (" + std::to_string(first_of.size()) + " distinct, " +
              std::to_string(at_bound) + " of them within the largest piece bound) above " + std::to_string(tp.global.size()) +
              " global buffers";
    return pl;
  }
};

}  // namespace memplan::place
