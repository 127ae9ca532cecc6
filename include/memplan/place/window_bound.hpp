#pragma once
// place::window_lower_bound -- a lower bound on the arena beyond max load, proven by exhaustive search
// on short windows of the time axis.
//
// Take a window [a, b) of time, the buffers live in it, and clip their lifetimes to it. Every placement
// of the whole problem is, restricted to those buffers, a placement of the clipped instance (clipping
// only removes conflicts), so the clipped instance's optimum is a lower bound on the whole arena. A
// window around a step of maximum load holds few buffers, and the canonical search
// (detail/canonical_search.hpp) can refute targets there completely: binary search between the
// window's own max load and a placement the greedy heuristics find for it; a refuted target raises the
// window's bound, a probe that runs out of nodes ends that window. Windows grow (1, 2, 4, ... sections
// each side) around the steps of highest load while the searches finish. Where max load is reachable
// (the usual case) this proves nothing new and costs little; where it is not (MiniMalloc's D and J),
// it certifies part of the gap.
#include <algorithm>
#include <cstdlib>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <memplan/core/buffer.hpp>
#include <memplan/place/detail/canonical_search.hpp>
#include <memplan/place/detail/support.hpp>
#include <memplan/place/greedy_by_breadth.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/place/lower_bound.hpp>

namespace memplan::place {

struct window_bound_options {
  const deadline* until = nullptr;      // stop when it passes (nullptr: never)
  std::int64_t cap = std::numeric_limits<std::int64_t>::max();  // no need to prove more than this
  int peaks = 4;                                // windows around this many steps of highest load
  std::int64_t nodes_per_probe = 200000;        // a probe that needs more ends its window's growth
  std::size_t max_window_buffers = 400;         // windows with more buffers are not searched
};

struct window_bound {
  std::int64_t bytes = 0;   // proven lower bound on the arena (at least arena_lower_bound)
  std::int64_t from = 0, to = 0;  // the window that proved it (time steps [from, to)); from == to: none
  std::string how;          // in words
};

namespace detail {
// Removes from the window instance w (lifetimes clipped to [from, to)) the buffers live throughout it
// and returns their bytes, when that keeps every bound valid: no pins in w, and each size set aside a
// multiple of every alignment in w (else that buffer stays).
inline std::int64_t set_aside_spanning(buffer_problem& w, std::int64_t from, std::int64_t to) {
  std::int64_t align = 1;
  for (const auto& b : w.buffers) {
    if (b.fixed_offset >= 0) return 0;
    align = std::max(align, effective_alignment(w, b));
  }
  std::int64_t bytes = 0;
  std::vector<buffer> rest;
  for (const auto& b : w.buffers) {
    if (b.lower == from && b.upper == to && b.size % align == 0) bytes += b.size;
    else rest.push_back(b);
  }
  w.buffers = std::move(rest);
  return bytes;
}
}  // namespace detail

inline window_bound window_lower_bound(const buffer_problem& p, const window_bound_options& o = {}) {
  window_bound wb;
  wb.bytes = arena_lower_bound(p);
  const auto never = deadline::never();
  const auto& until = o.until ? *o.until : never;
  const detail::time_axis axis(p);
  const int S = axis.sections();
  if (S <= 0 || wb.bytes >= o.cap) return wb;
  // Load per elementary section.
  std::vector<std::int64_t> load(static_cast<std::size_t>(S) + 1, 0);
  for (const auto& b : p.buffers) {
    if (b.size == 0) continue;
    load[static_cast<std::size_t>(axis.index(b.lower))] += b.size;
    load[static_cast<std::size_t>(axis.index(b.upper))] -= b.size;
  }
  for (int s = 1; s <= S; ++s) load[static_cast<std::size_t>(s)] += load[static_cast<std::size_t>(s - 1)];
  // Peaks: sections by decreasing load, skipping neighbours of a peak already taken.
  std::vector<int> order(static_cast<std::size_t>(S));
  for (int s = 0; s < S; ++s) order[static_cast<std::size_t>(s)] = s;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return load[static_cast<std::size_t>(a)] > load[static_cast<std::size_t>(b)]; });
  std::vector<int> peaks;
  for (int s : order) {
    if (static_cast<int>(peaks.size()) >= o.peaks) break;
    bool near = false;
    for (int q : peaks) near = near || std::abs(q - s) <= 2;
    if (!near) peaks.push_back(s);
  }
  using outcome = detail::canonical_search::outcome;
  for (int peak : peaks) {
    for (int half = 1; half < 2 * S; half *= 2) {
      if (until.expired() || wb.bytes >= o.cap) return wb;
      const int lo_s = std::max(0, peak - half), hi_s = std::min(S, peak + half + 1);
      const auto from = axis.times[static_cast<std::size_t>(lo_s)], to = axis.times[static_cast<std::size_t>(hi_s)];
      buffer_problem w;
      w.alignment = p.alignment;
      for (const auto& b : p.buffers) {
        if (b.size == 0 || b.upper <= from || to <= b.lower) continue;
        auto c = b;
        c.lower = std::max(b.lower, from);
        c.upper = std::min(b.upper, to);
        w.buffers.push_back(c);
      }
      // Buffers live through the whole window conflict with every other one there. Squeezing their
      // addresses out of any placement of the window places the rest in that many bytes less (with no
      // pins, and their sizes multiples of every other buffer's alignment, no offset loses its
      // alignment): the rest's optimum plus their bytes bounds the window's, and only the rest is
      // searched. On training lists the weights and optimizer state span every window (GoogLeNet b32,
      // 1,209 buffers: the windows around its peak held 900 and more, over max_window_buffers; without
      // the spanning ones, 63-255, each searched to the end).
      const auto spanning = detail::set_aside_spanning(w, from, to);
      if (w.buffers.size() > o.max_window_buffers) break;
      std::int64_t lo = arena_lower_bound(w);
      std::int64_t hi = w.buffers.empty() ? 0 : std::min(greedy_by_breadth{}.place(w).arena, greedy_by_size{}.place(w).arena);
      bool gave_up = false;
      std::vector<std::int64_t> found;
      std::optional<detail::canonical_search> search;  // only when there is something to decide
      if (lo < hi) {
        search.emplace(w, until);
        if (!search->ready()) return wb;
      }
      // Max load first (the common case: a window that packs perfectly ends at once), then bisection.
      for (bool first = true; lo < hi && !until.expired(); first = false) {
        const auto target = first ? lo : lo + (hi - lo) / 2;
        auto r = outcome::aborted;
        for (const char* keys : {"TWA", "WAT"}) {
          r = search->decide(target, keys, o.nodes_per_probe, until, found);
          if (r != outcome::aborted) break;
        }
        if (r == outcome::found) hi = std::min(hi, detail::arena_of(w, found));
        else if (r == outcome::infeasible) lo = target + 1;
        else { gave_up = true; break; }
      }
      lo += spanning;
      if (lo > wb.bytes) {
        wb.bytes = lo;
        wb.from = from;
        wb.to = to;
        wb.how = "exhaustive search on the window [" + std::to_string(from) + ", " + std::to_string(to) + ") (" +
                 std::to_string(w.buffers.size()) + " buffers, above " + std::to_string(spanning) + " bytes live throughout it)";
      }
      if (gave_up || hi_s - lo_s >= S) break;
    }
  }
  return wb;
}

}  // namespace memplan::place
