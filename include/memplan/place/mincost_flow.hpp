#pragma once
// place::mincost_flow -- the minimum-cost-flow strategy of Lee et al. (TFLite GPU, "On-device neural net
// inference with mobile GPUs", 2019) that MemoMalloc evaluates (§2.3, §3.2): buffers are grouped into
// *shared objects*, chains of buffers with disjoint lifetimes that reuse one block; a flow network decides
// the chains, and the blocks are laid out one after the other.
//
// Network (one unit of flow per buffer): source -> out(i) (capacity 1, cost 0): buffer i can hand its
// block on once it is dead; in(j) -> sink (capacity 1, cost 0): buffer j needs a block; source -> in(j)
// (cost size_j): j opens a new block; out(i) -> in(j) when i dies no later than j is born (cost
// max(0, size_j - size_i): the block grows to fit j). A min-cost flow of n units picks for each buffer
// either a new block or a predecessor. A block's size is the largest buffer of its chain (aligned), and
// the arena is the sum of block sizes.
//
// The network has O(n^2) edges: the policy refuses problems above max_buffers (errc::limit_exceeded),
// as MemoMalloc reports it timing out on large graphs (Fig. 3.3). Under a time limit
// (plan_context::time_limit_s) the flow stops between phases: the buffers it has not routed yet open
// blocks of their own (a valid placement, noted).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <memplan/base/deadline.hpp>
#include <memplan/base/error.hpp>
#include <memplan/core/buffer.hpp>
#include <memplan/core/context.hpp>
#include <memplan/place/detail/min_cost_flow.hpp>
#include <memplan/place/detail/support.hpp>

namespace memplan::place {

struct mincost_flow {
  std::size_t max_buffers = 1000;

  [[nodiscard]] std::string name() const { return "mincost_flow"; }

  [[nodiscard]] buffer_placement place(const buffer_problem& p) const { return place(p, plan_context{}); }

  [[nodiscard]] buffer_placement place(const buffer_problem& p, const plan_context& ctx) const {
    validate(p);
    const auto until = deadline::after(ctx.time_limit_or(-1.0));
    std::vector<std::size_t> ids;
    for (std::size_t i = 0; i < p.buffers.size(); ++i)
      if (p.buffers[i].size > 0 && p.buffers[i].fixed_offset < 0) ids.push_back(i);
    const auto m = ids.size();
    if (m > max_buffers)
      throw error(errc::limit_exceeded, "mincost_flow: " + std::to_string(m) + " buffers exceed its limit of " +
                                            std::to_string(max_buffers) + " (the flow network has O(n^2) edges)");
    // Nodes: 0 = source, 1 = sink, 2 + k = out(ids[k]), 2 + m + k = in(ids[k]).
    const int M = static_cast<int>(m);
    detail::min_cost_flow net(2 + 2 * M);
    // Buffers sorted by birth let each out(i) link only to buffers born after i dies.
    std::vector<int> by_lower(m);
    for (int k = 0; k < M; ++k) by_lower[static_cast<std::size_t>(k)] = k;
    std::sort(by_lower.begin(), by_lower.end(), [&](int a, int b) {
      return p.buffers[ids[static_cast<std::size_t>(a)]].lower < p.buffers[ids[static_cast<std::size_t>(b)]].lower ||
             (p.buffers[ids[static_cast<std::size_t>(a)]].lower == p.buffers[ids[static_cast<std::size_t>(b)]].lower && a < b);
    });
    std::vector<std::vector<std::pair<int, int>>> reuse(m);  // (edge id, k of j) per i
    for (int k = 0; k < M; ++k) {
      const auto& bi = p.buffers[ids[static_cast<std::size_t>(k)]];
      net.add_edge(0, 2 + k, 1, 0);
      net.add_edge(2 + M + k, 1, 1, 0);
      net.add_edge(0, 2 + M + k, 1, bi.size);
      auto first = std::lower_bound(by_lower.begin(), by_lower.end(), bi.upper, [&](int a, std::int64_t t) {
        return p.buffers[ids[static_cast<std::size_t>(a)]].lower < t;
      });
      for (auto it = first; it != by_lower.end(); ++it) {
        const auto& bj = p.buffers[ids[static_cast<std::size_t>(*it)]];
        const int e = net.add_edge(2 + k, 2 + M + *it, 1, std::max<std::int64_t>(0, bj.size - bi.size));
        reuse[static_cast<std::size_t>(k)].push_back({e, *it});
      }
    }
    const auto sent = net.run(0, 1, M, until).first;
    std::vector<int> succ(m, -1), pred(m, -1);
    for (int k = 0; k < M; ++k)
      for (auto [e, j] : reuse[static_cast<std::size_t>(k)])
        if (net.flow_on(e) > 0) { succ[static_cast<std::size_t>(k)] = j; pred[static_cast<std::size_t>(j)] = k; }
    // Blocks in order of their first buffer's birth; offsets are prefix sums of aligned block sizes.
    std::vector<std::int64_t> offsets(p.buffers.size(), 0);
    std::int64_t top = 0;
    for (int head : by_lower) {
      if (pred[static_cast<std::size_t>(head)] >= 0) continue;
      std::int64_t size = 0, align = p.alignment;
      for (int k = head; k >= 0; k = succ[static_cast<std::size_t>(k)]) {
        const auto& b = p.buffers[ids[static_cast<std::size_t>(k)]];
        size = std::max(size, b.size);
        align = std::max(align, effective_alignment(p, b));
      }
      const auto base = align_up(top, align);
      for (int k = head; k >= 0; k = succ[static_cast<std::size_t>(k)]) offsets[ids[static_cast<std::size_t>(k)]] = base;
      top = base + size;
    }
    std::string note;
    if (sent < M)
      note = "time limit reached after " + std::to_string(sent) + " of " + std::to_string(M) +
             " units of flow: the buffers not routed open blocks of their own";
    if (detail::has_pins(p)) {
      offsets = detail::settle_around_pins(p, offsets);
      note += std::string(note.empty() ? "" : "; ") + "pins: buffers settled around pinned ones in the blocks' address order";
    }
    return detail::finish(p, std::move(offsets), name(), note);
  }
};

}  // namespace memplan::place
