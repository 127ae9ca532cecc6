#pragma once
// Brute force references for tests: every topological order of a small problem.
#include <cstdint>
#include <functional>
#include <vector>

#include <memplan/core/analysis.hpp>

namespace memplan::testing {

// Calls f(order) for every topological order (exponential: small graphs only).
inline void for_each_topological_order(const problem& p, const std::function<void(const std::vector<op_id>&)>& f) {
  const auto n = static_cast<std::size_t>(p.num_ops());
  std::vector<std::int32_t> indeg(n);
  for (std::size_t v = 0; v < n; ++v) indeg[v] = static_cast<std::int32_t>(p.preds(static_cast<op_id>(v)).size());
  std::vector<op_id> order;
  std::vector<bool> used(n, false);
  std::function<void()> rec = [&] {
    if (order.size() == n) { f(order); return; }
    for (std::size_t v = 0; v < n; ++v) {
      if (used[v] || indeg[v] != 0) continue;
      used[v] = true;
      order.push_back(static_cast<op_id>(v));
      for (auto w : p.succs(static_cast<op_id>(v))) --indeg[static_cast<std::size_t>(w)];
      rec();
      for (auto w : p.succs(static_cast<op_id>(v))) ++indeg[static_cast<std::size_t>(w)];
      order.pop_back();
      used[v] = false;
    }
  };
  rec();
}

inline std::int64_t brute_force_min_peak(const problem& p) {
  std::int64_t best = -1;
  for_each_topological_order(p, [&](const std::vector<op_id>& o) {
    const auto pk = peak_of(p, o);
    if (best < 0 || pk < best) best = pk;
  });
  return best;
}

}  // namespace memplan::testing
