#pragma once
// place::default_placer -- the placer to use without thinking: zero fragmentation (arena ==
// arena_lower_bound, OLLA §4.4/§5.4) whenever it finds it within its time limit, else the best arena found
// with its gap in `note`.
//
// When the problem falls apart in time (detail::split_in_time: the buffers live throughout at the
// bottom, pieces above them that no buffer crosses, e.g. the micro-batches of a gradient-accumulation
// trace), each distinct piece is placed on its own (repeated pieces once; pieces with the same
// lifetimes take one model's arrangement) with a share of the time limit, minimising down to the largest
// piece bound. With global buffers and one piece, the piece is the whole search (the passes below run
// on it, not again on the whole problem).
// Then, unless that met the bound: greedy_by_breadth (zero fragmentation on most training graphs in
// milliseconds), best_fit and first fit in allocation order if that misses the bound (each only while
// the bound is missed); then place::exact searches from their best for the rest of the time limit
// (decision mode when the problem has a finite capacity: the first placement that fits ends it; in
// minimisation from a start more than 1 % above the bound, three quarters of it); greedy_by_size and
// pyramid only if time is left after that; in minimisation, the order search
// (detail::improve_insertion_order) for the rest.
// Every pass checks the deadline (a greedy pass cut short stacks its remaining buffers on top), so the
// wall time stays within time_limit_s plus a few milliseconds (plus the O(n log n) bookkeeping around
// the passes on very large problems: about 4 us per buffer is kept in reserve for it, 1.5 us after
// the pieces).
#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <memplan/base/error.hpp>
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
  // Whether the rest falls apart at all, first: a sweep (O(n) on compact steps) instead of the sort
  // that lines the pieces up (at 100k buffers that sort was a tenth of a 50 ms time limit, for one piece).
  std::size_t apart = 0, live = 0;
  for (const auto& e : memplan::detail::lifetime_events(p, [&](std::size_t i) {
         const auto& b = p.buffers[i];
         return b.size > 0 && !(b.lower == first && b.upper == last);
       })) {
    if (e.kind == 0) { --live; continue; }
    apart += live == 0;
    ++live;
  }
  if (apart < 2) {
    if (!rest.empty()) tp.pieces.push_back(std::move(rest));
    return tp;
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
// Without pins the same placement comes from the first-fit sweep (allocator_sweep, support.hpp: the
// lowest gap among the buffers live at a buffer's start is the lowest free block of a first-fit
// allocator then), O(n log n) and not cut by the deadline, where the greedy pass searches the live
// buffers: 10x faster on idealloc's pangu set (0.118 -> 0.012 s), 6x at 100k dnn_like buffers, 67x on
// the 60k nested set (4.0 -> 0.06 s). With pins, the greedy pass (they are obstacles it places around).
struct first_fit_by_allocation {
  [[nodiscard]] std::string name() const { return "first_fit_by_allocation"; }
  template <class Deadline>
  [[nodiscard]] std::vector<std::int64_t> offsets(const buffer_problem& p, const Deadline& until, bool* cut = nullptr) const {
    if (std::none_of(p.buffers.begin(), p.buffers.end(), [](const buffer& b) { return b.fixed_offset >= 0; }))
      return allocator_sweep{.rule = fit::first, .ties = sweep_ties::larger_first}.offsets(p, until);
    return by_greedy_pass(p, until, cut);
  }
  // The greedy pass itself (also what the sweep is tested against).
  template <class Deadline>
  [[nodiscard]] std::vector<std::int64_t> by_greedy_pass(const buffer_problem& p, const Deadline& until, bool* cut = nullptr) const {
    return place_in_order(p, order(p), fit::first, {}, &until, cut);
  }
  // The free buffers by lower end, larger first at equal ends.
  [[nodiscard]] static std::vector<std::size_t> order(const buffer_problem& p) {
    auto ids = free_buffers(p);
    std::sort(ids.begin(), ids.end(), [&](std::size_t a, std::size_t b) {
      const auto& x = p.buffers[a];
      const auto& y = p.buffers[b];
      if (x.lower != y.lower) return x.lower < y.lower;
      if (x.size != y.size) return x.size > y.size;
      return a < b;
    });
    return ids;
  }
};

// Iterated greedy over the insertion order (a ruin-and-recreate local search; "promote the buffer on
// top"): place_in_order leaves a buffer high when, at its turn, the buffers placed before it and live
// with it left no gap low enough. So: take a buffer that reaches the top of the arena, move it to a
// random earlier place in the order, re-place everything from there on (the buffers before that place
// keep their offsets) and keep the new order when the arena is not higher (equal arenas move on across
// plateaus). A full pass costs O(n log n) index work, so this pays where the exact search's nodes are
// expensive: Inception-v3's recompute plan with its concatenation variants (1,855 buffers, long-lived
// concatenations among short rebuilt buffers), 11.0 % above max load after the greedy passes.
// Stops at `target`, at the deadline (a pass cut short is discarded), after `max_iterations` passes,
// or after `stall` passes in a row without a lower arena. The generator is seeded and mt19937_64's
// sequence is fixed by the standard: with an iteration limit instead of the clock (deterministic
// mode) the same input gives the same placement everywhere.
struct order_search_result {
  std::vector<std::int64_t> offsets;
  std::int64_t arena = 0;
  std::int64_t passes = 0;
};

inline order_search_result improve_insertion_order(const buffer_problem& p, std::vector<std::size_t> order, fit rule,
                                                   std::int64_t target, const deadline& until,
                                                   std::int64_t max_iterations, std::int64_t stall) {
  order_search_result r;
  r.offsets = place_in_order(p, order, rule, {}, &until);
  const time_axis axis(p);
  r.arena = arena_of(p, r.offsets);
  std::mt19937_64 rng(0x6d656d706c616eULL);
  // A pass re-places the order from `to` on; the buffers before `to` keep their offsets, and inserting
  // them into an empty index cost about half of each pass. So copies of the index are kept at
  // checkpoints every `stride` positions of the order (snap[k]: the pins and order[0, k * stride) at
  // their current offsets): a pass starts from the last valid one at or before `to`. Accepting a pass
  // invalidates the checkpoints after `to`; a later pass that inserts through one refreshes it.
  const std::size_t stride = std::max<std::size_t>(64, (order.size() + 7) / 8);
  const std::size_t checkpoints = order.size() / stride + 1;
  std::vector<occupancy_index> snap(checkpoints, occupancy_index(axis));
  std::vector<std::uint8_t> valid(checkpoints, 0);
  for (std::size_t i = 0; i < p.buffers.size(); ++i)
    if (p.buffers[i].fixed_offset >= 0 && p.buffers[i].size > 0)
      snap[0].insert(p.buffers[i].lower, p.buffers[i].upper, p.buffers[i].fixed_offset, p.buffers[i].fixed_offset + p.buffers[i].size);
  valid[0] = 1;
  std::vector<std::size_t> pos(p.buffers.size()), top, moved;
  std::vector<std::int64_t> offsets;
  std::int64_t since_better = 0;
  for (; r.passes < max_iterations && since_better < stall && r.arena > target && !until.expired(); ++r.passes) {
    until.charge(4 * static_cast<std::int64_t>(order.size()));  // the scan for the top, the copies of the order and offsets
    top.clear();
    for (std::size_t k = 0; k < order.size(); ++k) {
      const auto i = order[k];
      pos[i] = k;
      if (r.offsets[i] + p.buffers[i].size == r.arena && p.buffers[i].size > 0) top.push_back(i);
    }
    if (top.empty()) break;  // only pinned buffers reach the top: no order moves it
    const auto v = top[static_cast<std::size_t>(rng() % top.size())];
    const auto at = pos[v];
    const auto to = static_cast<std::size_t>(rng() % (at + 1));
    moved = order;
    moved.erase(moved.begin() + static_cast<std::ptrdiff_t>(at));
    moved.insert(moved.begin() + static_cast<std::ptrdiff_t>(to), v);
    // The prefix [0, to): from the last valid checkpoint, refreshing the ones passed on the way.
    std::size_t k = to / stride;
    while (!valid[k]) --k;
    occupancy_index index = snap[k];
    (void)index.take_work();  // (charged when it was done)
    for (std::size_t q = k * stride; q <= to; ++q) {
      if (q % stride == 0 && !valid[q / stride]) {
        snap[q / stride] = index;
        valid[q / stride] = 1;
      }
      if (q == to) break;
      const auto& b = p.buffers[order[q]];
      index.insert(b.lower, b.upper, r.offsets[order[q]], r.offsets[order[q]] + b.size);
    }
    // The rest in the new order. Ceiling: the best arena so far. A pass that would end higher is
    // rejected anyway, so it stops at the first buffer above it (most passes are rejected).
    offsets = r.offsets;
    for (std::size_t q = to; q < moved.size(); ++q) offsets[moved[q]] = unplaced;
    bool cut = false, over = false;
    place_rest(index, p, moved, to, rule, offsets, &until, &cut, r.arena, &over);
    if (cut) break;  // a pass cut short is discarded
    ++since_better;
    if (over) continue;
    const auto arena = arena_of(p, offsets);
    if (arena < r.arena) since_better = 0;
    order.swap(moved);
    r.offsets.swap(offsets);
    r.arena = arena;
    for (std::size_t c = to / stride + 1; c < checkpoints; ++c) valid[c] = 0;  // positions after `to` changed
  }
  return r;
}

}  // namespace detail

struct default_placer {
  static constexpr double default_time_limit_s = 0.8;  // plan and place stay within a second
  double time_limit_s = -1;        // seconds in all; < 0: default_time_limit_s
  std::int64_t node_limit = -1;    // for the exact search, < 0: unlimited
  bool count_work = false;         // the time limit counts work, not the clock (deterministic mode: as exact's)
  std::int64_t accept = -1;        // as exact::accept (-1: the capacity when finite, else minimise)
  bool minimise_to_accept = false; // as exact::minimise_to_accept (the order search runs too, down to accept)
  bool decompose = true;           // place the pieces of detail::split_in_time one by one (when >= 2)
  std::int64_t order_search_passes = -1;  // the order search's passes at most; < 0: node_limit / 1000 with a node limit
  progress_callback progress{};    // handed to the exact search (the context's, via place(p, ctx))

  [[nodiscard]] std::string name() const { return "default"; }
  [[nodiscard]] double seconds() const { return time_limit_s < 0 ? default_time_limit_s : time_limit_s; }

  // With a context: its time limit replaces time_limit_s; in deterministic mode the placer's own
  // limit counts work instead (count_work), so the same input gives the same placement on any machine.
  // The order search stops after this many passes in a row without a lower arena.
  static constexpr std::int64_t order_search_stall = 64;
  // Minimisation from a start more than order_search_gap above the bound: the share of the time left
  // after the greedy passes that the exact search leaves to the order search. Below that gap the
  // exact search keeps it all: it proves inception_v3-train-b32's peak from best_fit's 0.46 % in about
  // 0.6-0.7 s of the 0.8 s (5,365 nodes), where the order search does not help.
  static constexpr double order_search_gap = 0.01;
  static constexpr double order_search_share = 0.25;
  [[nodiscard]] buffer_placement place(const buffer_problem& p, const plan_context& ctx) const {
    return detail::with_context(*this, ctx).place(p);
  }

  [[nodiscard]] buffer_placement place(const buffer_problem& p) const {
    work_clock work;
    return place(p, deadline::after(seconds(), count_work ? &work : nullptr));
  }

  // Within `until` (its clock: the steady clock or a work clock); seconds() still sets the shares
  // (whether a whole-problem pass follows the pieces).
  [[nodiscard]] buffer_placement place(const buffer_problem& p, const deadline& until) const {
    validate(p);
    const auto relaxed = detail::without_capacity(p);
    const auto bound = arena_lower_bound(p);
    const bool capacity_given = p.capacity != std::numeric_limits<std::int64_t>::max();
    const std::int64_t level = accept >= 0 ? accept : capacity_given ? p.capacity : 0;
    const bool minimising = level == 0 || minimise_to_accept;  // (else decision mode: the first fit under level ends it)
    const auto good = [&](const buffer_placement& pl) { return pl.arena <= bound || pl.arena <= level || pl.optimal; };
    buffer_placement best;
    std::string tried;
    auto consider = [&](buffer_placement pl) {
      tried += (tried.empty() ? "" : ", ") + pl.placer + "=" + std::to_string(pl.arena);
      if (best.offsets.empty() || pl.arena < best.arena) best = std::move(pl);
    };
    // The passes stop early enough to stack a cut pass's rest and run the final check in time; the
    // searches, to run the check.
    const auto n = p.buffers.size();
    const auto pass_until = until.kept_back(detail::wrap_up_seconds(n));
    const auto search_until = until.kept_back(detail::check_seconds(n));
    // A greedy pass's offsets (the referee checks only the placement returned, once, at the end).
    const auto pass = [&](auto policy) {
      buffer_placement pl;
      pl.offsets = policy.offsets(relaxed, pass_until);
      pl.arena = detail::arena_of(relaxed, pl.offsets);
      pl.lower_bound = bound;
      pl.placer = policy.name();
      return pl;
    };
    // What the final check and a whole-problem greedy pass cost, roughly: kept in reserve.
    const auto reserve = 4e-6 * static_cast<double>(n);
    bool one_piece = false;  // the problem fell apart into the global buffers and one piece
    if (decompose) {
      // The pieces keep back the final check's time (with a margin: GoogLeNet b32 x 82, 69,492 buffers:
      // 100 ms): after them a whole-problem pass runs only if a quarter of the time limit is left.
      if (auto by_pieces = place_by_pieces(relaxed, pass_until, level, &one_piece)) {
        const auto note = by_pieces->note;
        consider(std::move(*by_pieces));
        tried += " (" + note + ")";
      }
    }
    // After the pieces, the whole problem only if a good part of the time limit is left; not after
    // one piece above the global buffers: its placer ran every pass and search of the whole problem's
    // on the rest, and the global buffers below lose nothing (see place_by_pieces).
    const bool whole =
        best.offsets.empty() || (!one_piece && !good(best) && until.seconds_left() > std::max(2 * reserve, 0.25 * seconds()));
    // A pass starts only if its setup (about 1 us per buffer) fits in the time left; with too little
    // time for a whole greedy pass, the best-fit sweep first (a cut pass is usually worse).
    const auto room = [&] { return pass_until.seconds_left() > 1e-6 * static_cast<double>(n); };
    // Without pins the first-fit sweep (larger first) is first_fit_by_allocation's placement: not twice.
    const bool pinned = std::any_of(p.buffers.begin(), p.buffers.end(), [](const buffer& b) { return b.fixed_offset >= 0; });
    bool first_fit_placed = false;
    if (whole && best.offsets.empty() && pass_until.seconds_left() < detail::greedy_pass_seconds(n))
      detail::sweeps(search_until, [&](const detail::allocator_sweep& sweep) {  // complete: only the check follows
        consider(pass(sweep));
        first_fit_placed |= !pinned && sweep.rule == detail::fit::first && sweep.ties == detail::sweep_ties::larger_first;
      });
    if (whole && room()) consider(pass(greedy_by_breadth{}));
    if (whole && !good(best) && room()) consider(pass(best_fit{}));
    if (whole && !good(best) && room() && !first_fit_placed) consider(pass(detail::first_fit_by_allocation{}));
    if (whole && !good(best) && room()) {
      // Minimisation from a start more than order_search_gap above the bound keeps a share of the time
      // for the order search below (the search closes small gaps, seldom large ones on big sets).
      const bool far = minimising && static_cast<double>(best.arena - bound) > order_search_gap * static_cast<double>(bound);
      const auto exact_until = far ? search_until.slice((1 - order_search_share) * search_until.seconds_left()) : search_until;
      // On the problem without its capacity, stopping at the same level: on p itself exact enforces the
      // capacity when it returns, so a search that found nothing under it threw before the passes
      // below could (idealloc's pangu set, 18,692 buffers, the search skipped for its size, at a
      // capacity of 5,560,000,000: "infeasible" with greedy_by_breadth's 5,572,042,815, where pyramid
      // places 5,551,071,295). What the capacity rules out is then decided once, by finish().
      auto pl = exact{.node_limit = node_limit, .accept = level > 0 ? level : accept, .minimise_to_accept = minimise_to_accept,
                      .progress = progress}
                    .search_from(relaxed, best, exact_until);
      tried += ", exact=" + std::to_string(pl.arena) + " (" + pl.note + ")";
      if (capacity_given && pl.lower_bound > p.capacity)  // proven out of reach: no other pass can fit it either
        throw detail::capacity_refuted(name(), p.capacity, pl.lower_bound, std::min(best.arena, pl.arena),
                                       pl.lower_bound > bound ? "exact: " + pl.note : std::string());
      if (pl.arena < best.arena || pl.optimal) best = std::move(pl);  // exact's proven bound comes along
    }
    // Whatever time is left (the search gave up early or was skipped): the remaining heuristics, cheap
    // passes, before the order search takes the rest.
    if (whole && !good(best) && room()) consider(pass(greedy_by_size{}));
    if (whole && !good(best) && room()) consider(pass(pyramid{}));
    // Minimisation only (in decision mode the exact search's first fit under the capacity ends it):
    // the order search from the allocation order, best fit, for the rest of the time (deterministic
    // mode: node_limit / 1000 passes at most), if that pays for about eight passes at their cost before
    // the checkpoints (up to about 5 us per buffer, now 1-3; idealloc's pangu set, 18,692 buffers, gets
    // none in its 0.2 s).
    if (whole && !good(best) && minimising && search_until.seconds_left() > 40e-6 * static_cast<double>(n)) {
      const auto passes = order_search_passes >= 0 ? order_search_passes
                          : node_limit < 0         ? std::numeric_limits<std::int64_t>::max()
                                                   : node_limit / 1000;
      auto r = detail::improve_insertion_order(relaxed, detail::first_fit_by_allocation::order(relaxed), detail::fit::best, std::max(bound, level),
                                               search_until, passes, order_search_stall);
      tried += ", order_search=" + std::to_string(r.arena) + " (" + std::to_string(r.passes) + " passes)";
      if (r.arena < best.arena) {
        best.offsets = std::move(r.offsets);
        best.arena = r.arena;
        best.placer = "order_search";
        best.optimal = false;
      }
    }
    const auto lb = std::max(bound, best.lower_bound);
    const bool optimal = best.optimal || best.arena == lb;
    return detail::finish(p, std::move(best.offsets), name() + "(" + best.placer + ")", tried, lb, optimal);
  }

 private:
  // The global buffers stacked at the bottom, each piece placed by a default_placer of its own (time
  // shared by size) above them. Nothing when the problem does not fall apart: no global buffers and
  // one piece. With global buffers and one piece (*one_piece set), the rest alone is searched: any
  // placement of the whole problem, with the global buffers' addresses squeezed out, places the rest
  // that many bytes lower (they are live with every buffer), so nothing is lost where their sizes are
  // multiples of every alignment (else it is not done: the padding could be lost), and the search gets
  // a smaller problem. On the flat-load sets of data/benchmarks/memplan (the budget plans'
  // placement problems, 568-729 global buffers) `memplan place` went from 2.90 / 2.93 / 1.45 % above
  // max load to 2.17 / 2.93 / 1.36 %.
  // `level` > 0: any arena up to it is good enough (decision mode).
  [[nodiscard]] std::optional<buffer_placement> place_by_pieces(const buffer_problem& p, const deadline& until,
                                                               std::int64_t level, bool* one_piece) const {
    const auto tp = detail::split_in_time(p);
    if (tp.pieces.empty() || (tp.pieces.size() < 2 && tp.global.empty())) return std::nullopt;
    if (tp.pieces.size() == 1) {
      // Only where nothing is lost: with padding below the piece, the whole problem's search can do
      // better (exports at --alignment 512: 56-504 bytes more on 5 of 19 at batch 32).
      std::int64_t all = p.alignment;
      for (const auto& b : p.buffers) all = std::max(all, effective_alignment(p, b));
      for (auto i : tp.global)
        if (p.buffers[i].size % all != 0) return std::nullopt;
      *one_piece = true;
    }
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
    // The arena is the stack plus the highest piece, so the target for every piece is the largest
    // piece bound (in decision mode at least the capacity left above the stack).
    std::vector<buffer_problem> subs(first_of.size());
    std::vector<buffer_placement> solved(first_of.size());
    std::int64_t target = 0;
    for (std::size_t d = 0; d < first_of.size(); ++d) {
      subs[d].alignment = p.alignment;
      for (auto i : tp.pieces[first_of[d]]) subs[d].buffers.push_back(p.buffers[i]);
      solved[d].lower_bound = arena_lower_bound(subs[d]);
      target = std::max(target, solved[d].lower_bound);
    }
    if (level > 0) target = std::max(target, level - base);  // decision mode: the capacity is enough
    // Pieces with the same lifetimes and other sizes (micro-batches of different sequence lengths:
    // jittered sizes) form a family. Its member with the highest bound is its model: a greedy pass,
    // then, above the target, a search. The other members take the model's arrangement (its order by
    // offsets, pushed down: O(n log n), where a greedy pass costs 5 ms per 843 buffers of GoogLeNet
    // b32; with sizes no larger than the model's no offset rises), then first fit in that order, then
    // a greedy pass; only members still above the target are searched, with the time the models left.
    using lifetimes = std::vector<std::array<std::int64_t, 3>>;
    std::map<lifetimes, std::size_t> family_index;
    std::vector<std::size_t> family(first_of.size());
    for (std::size_t d = 0; d < first_of.size(); ++d) {
      const auto start = subs[d].buffers.front().lower;
      lifetimes key;
      key.reserve(subs[d].buffers.size());
      for (const auto& b : subs[d].buffers) key.push_back({b.lower - start, b.upper - start, b.alignment});
      family[d] = family_index.emplace(std::move(key), family_index.size()).first->second;
    }
    constexpr auto none = std::numeric_limits<std::size_t>::max();
    std::vector<std::size_t> model(family_index.size(), none);
    for (std::size_t d = 0; d < first_of.size(); ++d)
      if (auto& m = model[family[d]]; m == none || solved[d].lower_bound > solved[m].lower_bound) m = d;
    const auto never = deadline::never();
    // Offsets only: the whole placement is checked once, at the end.
    const auto keep = [&](std::size_t d, std::vector<std::int64_t> offs) {
      if (const auto arena = detail::arena_of(subs[d], offs); solved[d].offsets.empty() || arena < solved[d].arena) {
        solved[d].offsets = std::move(offs);
        solved[d].arena = arena;
      }
    };
    // (One piece: its own placer starts with that pass.)
    if (tp.pieces.size() > 1)
      for (auto d : model) keep(d, greedy_by_breadth{}.offsets(subs[d], never));  // run to the end, as a start
    // Searches pieces above the target, worst first, the time shared among them by size.
    const auto search = [&](std::vector<std::size_t> above) {
      std::sort(above.begin(), above.end(), [&](std::size_t a, std::size_t b) {
        return solved[a].arena != solved[b].arena ? solved[a].arena > solved[b].arena : a < b;
      });
      std::size_t left = 0;
      for (auto d : above) left += subs[d].buffers.size();
      for (auto d : above) {
        const auto n = subs[d].buffers.size();
        const auto share = std::max(0.0, until.seconds_left()) * static_cast<double>(n) / static_cast<double>(left);
        left -= n;
        if (share < 4e-6 * static_cast<double>(n) && !solved[d].offsets.empty()) continue;  // no time for a search: the start stays
        // Minimising down to the target, not deciding it: a piece a little above the target still
        // lowers the arena, and at a target equal to the piece's bound the decision search often finds
        // nothing where the descent gets within bytes of it (GoogLeNet b32 x 82 jittered: a piece 0.405 %
        // above after 0.8 s of decision search, 0.0005 % after 0.2 s of descent).
        auto pl = default_placer{.time_limit_s = share, .node_limit = node_limit, .accept = target, .minimise_to_accept = true,
                                 .decompose = false, .order_search_passes = order_search_passes}.place(subs[d], until.slice(share));
        if (solved[d].offsets.empty() || pl.arena < solved[d].arena) solved[d] = std::move(pl);
      }
    };
    std::vector<std::size_t> above;
    for (auto d : model)
      if (solved[d].offsets.empty() || solved[d].arena > target) above.push_back(d);
    search(above);
    above.clear();
    int reused = 0;  // members within the target by their model's arrangement
    std::vector<std::vector<std::size_t>> by_offset(model.size());  // per family: its model's buffers by offset, once
    for (std::size_t d = 0; d < first_of.size(); ++d) {
      const auto m = model[family[d]];
      if (m == d) continue;
      auto& order = by_offset[family[d]];
      if (order.empty()) {
        order.resize(subs[m].buffers.size());
        std::iota(order.begin(), order.end(), std::size_t{0});
        std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
          return solved[m].offsets[a] != solved[m].offsets[b] ? solved[m].offsets[a] < solved[m].offsets[b] : a < b;
        });
      }
      keep(d, detail::push_down(subs[d], order));
      if (solved[d].arena > target) keep(d, detail::settle_around_pins(subs[d], solved[m].offsets, &until));
      if (solved[d].arena <= target) { ++reused; continue; }
      keep(d, greedy_by_breadth{}.offsets(subs[d], until));
      if (solved[d].arena > target) above.push_back(d);
    }
    search(above);
    for (std::size_t d = 0; d < first_of.size(); ++d) at_bound += solved[d].arena <= target;
    for (std::size_t j = 0; j < tp.pieces.size(); ++j) {
      const auto& pl = solved[kind[j]];
      for (std::size_t k = 0; k < tp.pieces[j].size(); ++k) offsets[tp.pieces[j][k]] = base + pl.offsets[k];
    }
    buffer_placement pl;  // unchecked: the caller checks the placement it returns
    pl.offsets = std::move(offsets);
    pl.arena = detail::arena_of(p, pl.offsets);
    pl.placer = "pieces";
    pl.note = tp.pieces.size() == 1
                  ? "the rest placed alone above " + std::to_string(tp.global.size()) + " global buffers (" + solved.front().placer +
                        (solved.front().note.empty() ? "" : ": " + solved.front().note) + ")"
                  : std::to_string(tp.pieces.size()) + " pieces in time (" + std::to_string(first_of.size()) + " distinct in " +
                        std::to_string(family_index.size()) + " families of lifetimes, " + std::to_string(at_bound) +
                        " of them within the largest piece bound, " + std::to_string(reused) + " by another member's layout) above " +
                        std::to_string(tp.global.size()) + " global buffers";
    return pl;
  }
};

}  // namespace memplan::place
