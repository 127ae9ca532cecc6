#pragma once
// place::greedy_by_breadth -- "Greedy by Breadth" (Pisarchyk & Lee 2020; MemoMalloc §5 related work):
// operators (here: steps) are visited in order of decreasing breadth, the total bytes of the tensors
// live at that step; at each step its still unplaced buffers are placed, largest first, in the best gap
// among the placed buffers that overlap them in time.
//
// A buffer is placed at the first visited step it is live at, i.e. the step of maximum breadth over its
// lifetime (ties: earlier step). Breadth is constant between lifetime endpoints, so steps are the
// sections of the compressed time axis and the key is a range-minimum over the visiting ranks
// (sparse table): O(n log n) overall instead of walking every step's live set.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <memplan/core/buffer.hpp>
#include <memplan/place/detail/support.hpp>

namespace memplan::place {

struct greedy_by_breadth {
  [[nodiscard]] std::string name() const { return "greedy_by_breadth"; }

  [[nodiscard]] buffer_placement place(const buffer_problem& p) const { return place(p, deadline::never()); }

  // With a deadline: if it passes before every buffer is placed, the rest is stacked on top (valid,
  // said in `note`); the pass checks it every 256 buffers.
  [[nodiscard]] buffer_placement place(const buffer_problem& p, const deadline& until) const { return detail::place_one_pass(*this, p, until); }

  // The offsets of the pass alone (validated input assumed; not yet checked by the referee: the
  // composite placers check the one placement they return).
  [[nodiscard]] std::vector<std::int64_t> offsets(const buffer_problem& p, const deadline& until, bool* cut = nullptr) const {
    const detail::time_axis axis(p);
    const int S = axis.sections();
    std::vector<std::int64_t> breadth(static_cast<std::size_t>(S) + 1, 0);
    for (const auto& b : p.buffers) {
      breadth[static_cast<std::size_t>(axis.index(b.lower))] += b.size;
      breadth[static_cast<std::size_t>(axis.index(b.upper))] -= b.size;
    }
    for (int s = 1; s <= S; ++s) breadth[static_cast<std::size_t>(s)] += breadth[static_cast<std::size_t>(s - 1)];
    std::vector<int> steps(static_cast<std::size_t>(S));
    for (int s = 0; s < S; ++s) steps[static_cast<std::size_t>(s)] = s;
    std::stable_sort(steps.begin(), steps.end(), [&](int a, int b) {
      return breadth[static_cast<std::size_t>(a)] > breadth[static_cast<std::size_t>(b)];
    });
    std::vector<int> rank(static_cast<std::size_t>(S));
    for (int r = 0; r < S; ++r) rank[static_cast<std::size_t>(steps[static_cast<std::size_t>(r)])] = r;
    // Sparse table of range minima over rank.
    std::vector<std::vector<int>> table{rank};
    for (int w = 1; 2 * w <= S; w *= 2) {
      const auto& prev = table.back();
      std::vector<int> next(static_cast<std::size_t>(S - 2 * w + 1));
      for (int s = 0; s + 2 * w <= S; ++s)
        next[static_cast<std::size_t>(s)] = std::min(prev[static_cast<std::size_t>(s)], prev[static_cast<std::size_t>(s + w)]);
      table.push_back(std::move(next));
    }
    auto range_min = [&](int lo, int hi) {  // [lo, hi), lo < hi
      int k = 0;
      while ((2 << k) <= hi - lo) ++k;
      return std::min(table[static_cast<std::size_t>(k)][static_cast<std::size_t>(lo)],
                      table[static_cast<std::size_t>(k)][static_cast<std::size_t>(hi - (1 << k))]);
    };
    auto ids = detail::free_buffers(p);
    std::vector<int> key(p.buffers.size(), 0);
    for (auto i : ids) key[i] = range_min(axis.index(p.buffers[i].lower), axis.index(p.buffers[i].upper));
    std::sort(ids.begin(), ids.end(), [&](std::size_t a, std::size_t b) {
      if (key[a] != key[b]) return key[a] < key[b];
      if (p.buffers[a].size != p.buffers[b].size) return p.buffers[a].size > p.buffers[b].size;
      return a < b;
    });
    return detail::place_in_order(p, ids, detail::fit::best, {}, &until, cut);
  }
};

}  // namespace memplan::place
