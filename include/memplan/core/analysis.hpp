#pragma once
// Analyses on a problem: topological check of an order, ASAP/ALAP levels (OLLA §4.1), memoized
// reachability (OLLA Function 2), storage lifetimes under an order, the live-bytes profile and peak
// (the memory rule of graph-format.md). Lower bounds on the peak of any order: core/bounds.hpp.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/base/ids.hpp>
#include <memplan/core/problem.hpp>

namespace memplan {

// ---- orders ---------------------------------------------------------------------------------------

// First violation of "order is a topological order of all ops", in words; nothing when it is one.
inline std::optional<std::string> check_topological(const problem& p, std::span<const op_id> order) {
  if (auto* c = p.counters()) ++c->topological_checks;
  const auto n = static_cast<std::size_t>(p.num_ops());
  if (order.size() != n)
    return "order has " + std::to_string(order.size()) + " ops, the graph has " + std::to_string(n);
  std::vector<std::int32_t> pos(n, -1);
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto o = order[i];
    if (o < 0 || static_cast<std::size_t>(o) >= n) return "step " + std::to_string(i) + ": op id " + std::to_string(o) + " out of range";
    if (pos[static_cast<std::size_t>(o)] >= 0)
      return "step " + std::to_string(i) + ": " + p.describe_op(o) + " already ran at step " + std::to_string(pos[static_cast<std::size_t>(o)]);
    pos[static_cast<std::size_t>(o)] = static_cast<std::int32_t>(i);
  }
  for (std::size_t i = 0; i < order.size(); ++i)
    for (auto q : p.preds(order[i]))
      if (pos[static_cast<std::size_t>(q)] > static_cast<std::int32_t>(i))
        return "step " + std::to_string(i) + ": " + p.describe_op(order[i]) + " runs before its predecessor " + p.describe_op(q) +
               " (step " + std::to_string(pos[static_cast<std::size_t>(q)]) + ")";
  return std::nullopt;
}

inline bool is_topological(const problem& p, std::span<const op_id> order) { return !check_topological(p, order); }

// The graph's given order: op 0, 1, 2, ... (what the source framework ran; may not be executable).
inline std::vector<op_id> given_order(const problem& p) {
  std::vector<op_id> o(static_cast<std::size_t>(p.num_ops()));
  for (std::size_t i = 0; i < o.size(); ++i) o[i] = static_cast<op_id>(i);
  return o;
}

// Kahn's algorithm, smallest id first: a deterministic topological order.
inline std::vector<op_id> topological_order(const problem& p) {
  const auto n = static_cast<std::size_t>(p.num_ops());
  std::vector<std::int32_t> indeg(n);
  for (std::size_t o = 0; o < n; ++o) indeg[o] = static_cast<std::int32_t>(p.preds(static_cast<op_id>(o)).size());
  std::vector<op_id> heap, order;
  order.reserve(n);
  for (std::size_t o = 0; o < n; ++o)
    if (!indeg[o]) heap.push_back(static_cast<op_id>(o));
  std::make_heap(heap.begin(), heap.end(), std::greater<>{});
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
    auto v = heap.back();
    heap.pop_back();
    order.push_back(v);
    for (auto w : p.succs(v))
      if (--indeg[static_cast<std::size_t>(w)] == 0) {
        heap.push_back(w);
        std::push_heap(heap.begin(), heap.end(), std::greater<>{});
      }
  }
  return order;
}

// ---- levels (OLLA §4.1) ---------------------------------------------------------------------------
// asap[v]: length of the longest path from a source to v (earliest level); alap[v]: latest level
// v can take without lengthening the critical path; depth = number of levels.
struct levels {
  std::vector<std::int32_t> asap, alap;
  std::int32_t depth = 0;
};

inline levels compute_levels(const problem& p) {
  const auto order = topological_order(p);
  const auto n = order.size();
  levels l;
  l.asap.assign(n, 0);
  for (auto v : order)
    for (auto q : p.preds(v)) l.asap[static_cast<std::size_t>(v)] = std::max(l.asap[static_cast<std::size_t>(v)], l.asap[static_cast<std::size_t>(q)] + 1);
  for (auto a : l.asap) l.depth = std::max(l.depth, a + 1);
  l.alap.assign(n, l.depth - 1);
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    for (auto w : p.succs(*it))
      l.alap[static_cast<std::size_t>(*it)] = std::min(l.alap[static_cast<std::size_t>(*it)], l.alap[static_cast<std::size_t>(w)] - 1);
  return l;
}

// ---- reachability (OLLA Function 2) ----------------------------------------------------------------
// reaches(u, v): is there a path u ->* v? Depth-first search pruned by ASAP levels (a path to v only
// visits ops of smaller level) and memoized per target, so that once (u, v) is answered, every op
// visited on the way answers in O(1) for v too. Scales to 100k-op graphs for sparse queries.
class reachability {
 public:
  explicit reachability(const problem& p) : p_(&p), lv_(compute_levels(p)) {}

  bool reaches(op_id u, op_id v) {
    if (u == v) return true;
    if (lv_.asap[static_cast<std::size_t>(u)] >= lv_.asap[static_cast<std::size_t>(v)]) return false;
    auto& memo = memo_[v];
    if (auto it = memo.find(u); it != memo.end()) return it->second;
    // Iterative DFS; every op finished during this search gets its answer memoized.
    std::vector<std::pair<op_id, std::size_t>> stack{{u, 0}};
    std::vector<op_id> entered{u};
    const auto target_level = lv_.asap[static_cast<std::size_t>(v)];
    bool found = false;
    while (!stack.empty() && !found) {
      auto& [x, i] = stack.back();
      auto succ = p_->succs(x);
      if (i < succ.size()) {
        auto w = succ[i++];
        if (w == v) { found = true; break; }
        if (lv_.asap[static_cast<std::size_t>(w)] >= target_level) continue;
        if (auto it = memo.find(w); it != memo.end()) {
          if (it->second) { found = true; break; }
          continue;
        }
        memo.emplace(w, false);  // provisional: finished nodes that did not reach v stay false
        entered.push_back(w);
        stack.push_back({w, 0});
      } else {
        stack.pop_back();
      }
    }
    if (found)  // every op on the current DFS stack reaches v
      for (auto& [x, i] : stack) memo[x] = true;
    memo[u] = found;
    if (!found)
      for (auto x : entered) memo[x] = false;
    return found;
  }
  [[nodiscard]] const levels& level_info() const noexcept { return lv_; }

 private:
  const problem* p_;
  levels lv_;
  std::unordered_map<op_id, std::unordered_map<op_id, bool>> memo_;
};

// ---- lifetimes and the memory profile under an order -----------------------------------------------
// Storage s is live at steps [first, last] (inclusive) of the order; never_live for empty storages.
struct lifetime {
  std::int32_t first = -1;
  std::int32_t last = -1;
  [[nodiscard]] bool live() const noexcept { return first >= 0; }
};

// Lifetimes of every storage under a topological order (graph-format.md memory rule).
inline std::vector<lifetime> storage_lifetimes(const problem& p, std::span<const op_id> order) {
  if (auto* c = p.counters()) ++c->lifetimes;
  const auto n = static_cast<std::int32_t>(order.size());
  std::vector<std::int32_t> pos(static_cast<std::size_t>(p.num_ops()), -1);
  for (std::int32_t i = 0; i < n; ++i) pos[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = i;
  std::vector<lifetime> lt(static_cast<std::size_t>(p.num_storages()));
  for (storage_id s = 0; s < p.num_storages(); ++s) {
    auto& l = lt[static_cast<std::size_t>(s)];
    if (p.storage_bytes(s) == 0) continue;
    if (p.resident(s)) { l = {0, std::max(0, n - 1)}; continue; }
    l.first = p.preexisting(s) ? 0 : pos[static_cast<std::size_t>(p.storage_allocator(s))];
    l.last = l.first;
    for (auto u : p.storage_users(s)) l.last = std::max(l.last, pos[static_cast<std::size_t>(u)]);
    if (p.live_to_end(s)) l.last = std::max(l.first, n - 1);
  }
  return lt;
}

struct memory_profile {
  std::vector<std::int64_t> live;  // live bytes while step i runs (storages + that op's workspace)
  std::int64_t peak = 0;           // max over steps, at least the resident bytes
  std::int32_t peak_step = -1;     // first step reaching the peak (-1 when the graph has no ops)
};

namespace detail {
// The profile of a topological order from its storage lifetimes (storage_lifetimes(p, order)), for
// callers that checked the order and need the lifetimes too: neither is derived a second time.
inline memory_profile profile_from_lifetimes(const problem& p, std::span<const op_id> order, const std::vector<lifetime>& lt) {
  const auto n = order.size();
  memory_profile m;
  std::vector<std::int64_t> diff(n + 1, 0);
  for (storage_id s = 0; s < p.num_storages(); ++s) {
    const auto& l = lt[static_cast<std::size_t>(s)];
    if (!l.live() || n == 0) continue;
    diff[static_cast<std::size_t>(l.first)] += p.storage_bytes(s);
    diff[static_cast<std::size_t>(l.last) + 1] -= p.storage_bytes(s);
  }
  m.live.resize(n);
  std::int64_t cur = 0;
  for (std::size_t i = 0; i < n; ++i) {
    cur += diff[i];
    m.live[i] = cur + p.workspace(order[i]);
    if (m.peak_step < 0 || m.live[i] > m.live[static_cast<std::size_t>(m.peak_step)]) m.peak_step = static_cast<std::int32_t>(i);
  }
  m.peak = std::max(p.resident_bytes(), m.peak_step < 0 ? 0 : m.live[static_cast<std::size_t>(m.peak_step)]);
  return m;
}
}  // namespace detail

// The profile of an order: O(ops + storages) with a difference array. Throws if the order is not
// topological (names the first violation).
inline memory_profile profile(const problem& p, std::span<const op_id> order) {
  if (auto bad = check_topological(p, order)) throw error(errc::invalid_argument, "not a topological order: " + *bad);
  return detail::profile_from_lifetimes(p, order, storage_lifetimes(p, order));
}

inline std::int64_t peak_of(const problem& p, std::span<const op_id> order) { return profile(p, order).peak; }

// Peak of an order, or -1 when it is not topological (one check, not a second one inside profile()).
inline std::int64_t peak_if_topological(const problem& p, std::span<const op_id> order) {
  if (check_topological(p, order)) return -1;
  return detail::profile_from_lifetimes(p, order, storage_lifetimes(p, order)).peak;
}

}  // namespace memplan
