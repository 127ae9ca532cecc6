#pragma once
// place::gergov -- Gergov's approximation for dynamic storage allocation (J. Gergov, "Algorithms for
// compile-time memory optimization", SODA 1999), as MemoMalloc evaluates it (§2.3): first build an
// *infeasible* solution, then make it feasible with first-fit interval-graph colouring.
//
// Phase 1 keeps a skyline H of time segments with heights, starting with one segment at height 0
// covering all lifetimes. Repeatedly the lowest segment [xl, xr) at height w is taken out of H; an
// unplaced buffer whose lifetime meets [xl, xr) and meets no other segment still in H (its lifetime
// lies in [xl, xr) plus time already retired from H) is given the tentative offset w, and H gets
// [max(xl, lower), min(xr, upper)) at height w + size plus the uncovered ends of [xl, xr) at height w.
// When no buffer qualifies the segment is retired. Tentative offsets may collide where a buffer reaches
// into retired time.
// Phase 2 colours the conflict graph (buffers overlapping in time and in tentative address range) first
// fit in placement order; colour c shifts a buffer by c * (max tentative end), so colour classes occupy
// disjoint address bands and the result is feasible. Ties are broken by lower endpoint, then by index.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <memplan/core/buffer.hpp>
#include <memplan/place/detail/support.hpp>

namespace memplan::place {

struct gergov {
  [[nodiscard]] std::string name() const { return "gergov"; }

  [[nodiscard]] buffer_placement place(const buffer_problem& p) const {
    validate(p);
    const auto n = p.buffers.size();
    std::vector<std::int64_t> alpha(n, 0);
    std::vector<std::size_t> placed_order;
    std::set<std::pair<std::int64_t, std::size_t>> unplaced;  // (lower, buffer)
    std::int64_t l = std::numeric_limits<std::int64_t>::max(), r = std::numeric_limits<std::int64_t>::min();
    for (std::size_t i = 0; i < n; ++i) {
      const auto& b = p.buffers[i];
      if (b.size == 0 || b.fixed_offset >= 0) continue;  // zero-size: offset 0; pins: settled at the end
      unplaced.insert({b.lower, i});
      l = std::min(l, b.lower);
      r = std::max(r, b.upper);
    }
    // Phase 1: skyline of alive segments, start -> (end, height), and a min-heap on (height, start).
    std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> H;
    using entry = std::tuple<std::int64_t, std::int64_t, std::int64_t>;  // (height, start, end)
    std::priority_queue<entry, std::vector<entry>, std::greater<>> heap;
    auto add = [&](std::int64_t s, std::int64_t e, std::int64_t w) {
      H[s] = {e, w};
      heap.push({w, s, e});
    };
    if (!unplaced.empty()) add(l, r, 0);
    while (!unplaced.empty() && !heap.empty()) {
      const auto [w, xl, xr] = heap.top();
      heap.pop();
      auto it = H.find(xl);
      if (it == H.end() || it->second != std::pair{xr, w}) continue;  // stale heap entry
      const auto next = std::next(it);
      const std::int64_t Rg = next == H.end() ? std::numeric_limits<std::int64_t>::max() : next->first;
      const std::int64_t Lg = it == H.begin() ? std::numeric_limits<std::int64_t>::min() : std::prev(it)->second.first;
      H.erase(it);
      std::size_t pick = n;
      for (auto u = unplaced.lower_bound({Lg, 0}); u != unplaced.end() && u->first < xr; ++u) {
        const auto& b = p.buffers[u->second];
        if (b.upper > xl && b.upper <= Rg) { pick = u->second; break; }
      }
      if (pick == n) continue;  // retire the segment
      const auto& b = p.buffers[pick];
      unplaced.erase({b.lower, pick});
      const auto at = align_up(w, effective_alignment(p, b));
      alpha[pick] = at;
      placed_order.push_back(pick);
      add(std::max(xl, b.lower), std::min(xr, b.upper), at + b.size);
      if (xl < b.lower) add(xl, b.lower, w);
      if (b.upper < xr) add(b.upper, xr, w);
    }
    // Phase 2: first-fit colouring of the conflict graph in placement order.
    std::int64_t band = 1, max_align = p.alignment;
    for (auto i : placed_order) {
      band = std::max(band, alpha[i] + p.buffers[i].size);
      max_align = std::max(max_align, effective_alignment(p, p.buffers[i]));
    }
    band = align_up(band, max_align);
    const detail::time_axis axis(p);
    detail::interval_index index(p, axis);
    std::vector<std::int64_t> colour(n, 0), offsets(n, 0);
    std::vector<char> used;
    for (auto i : placed_order) {
      const auto& b = p.buffers[i];
      used.assign(used.size(), 0);
      index.for_each_overlapping(b.lower, b.upper, [&](std::size_t j) {
        if (alpha[j] < alpha[i] + b.size && alpha[i] < alpha[j] + p.buffers[j].size) {
          const auto c = static_cast<std::size_t>(colour[j]);
          if (c >= used.size()) used.resize(c + 1, 0);
          used[c] = 1;
        }
      });
      std::size_t c = 0;
      while (c < used.size() && used[c]) ++c;
      colour[i] = static_cast<std::int64_t>(c);
      offsets[i] = alpha[i] + colour[i] * band;
      index.insert(i);
    }
    std::string note;
    if (detail::has_pins(p)) {
      offsets = detail::settle_around_pins(p, offsets);
      note = "pins: buffers settled below/around pinned ones in gergov's address order";
    }
    return detail::finish(p, std::move(offsets), name(), note);
  }
};

}  // namespace memplan::place
