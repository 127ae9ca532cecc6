#pragma once
// Lower bounds on the recompute overhead of ANY plan that fits a memory budget by recomputation
// (no offloading), and on the least budget such a plan can meet. Two versions: over every order of
// the graph (the must-live sets of core/bounds.hpp), and for one fixed order (the checkpointers'
// setting: Checkmate, Chen, greedy).
//
// The argument, at one op v. Take v's first execution in a plan. Every storage s that is written
// before v (by a proper ancestor of v; or preexisting) and used after v (by a proper descendant; or
// live to the end) either sits in memory while v runs, or the value it holds there is rebuilt later
// by running again one of the ops that write s (their first runs are over). So the bytes on the
// device while v runs are at least
//     forced(v) + Σ over the storages not dropped,
// forced(v) = resident bytes + the storages v touches + v's least workspace + the storages that
// cannot be rebuilt (no recomputable writer); and a plan within budget B drops storages of at least
// excess(v) = forced(v) + droppable(v) − B bytes. Running a writer op w again restores at most the
// storages w writes among those, and costs at least w's least implementation cost. The cheapest
// cover is a 0-1 knapsack; a bounded branch and bound over it (detail::min_cover: exact when it
// completes, its open nodes' fractional bounds otherwise) is a lower bound on the recompute cost of
// every plan, and the max over v is one too. When even
// dropping everything droppable does not reach B at some v (forced(v) > B), no recomputation plan
// fits: forced(v) is then a memory lower bound for such plans, above core/bounds.hpp's op-local one
// by the storages that must live across v.
//
// The bound ignores that a recompute needs its own inputs in memory and may be needed more than once,
// so it is far from tight on graphs whose cheap values sit deep in a chain; it is exact when one step
// dominates and the cheapest bytes there can be rebuilt from values that stay anyway.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/base/ids.hpp>
#include <memplan/core/analysis.hpp>
#include <memplan/core/bounds.hpp>
#include <memplan/core/problem.hpp>

namespace memplan {

struct recompute_lower_bound {
  double cost = 0.0;            // no plan within the budget recomputes for less (graph cost units; ops when the graph has none)
  double compute_cost = 0.0;    // one step, each op once at its own cost (the report's compute_cost)
  double overhead = 0.0;        // cost / compute_cost
  op_id at_op = no_id;          // the op where the cost bound is attained (no_id: 0, the budget holds everywhere)
  bool feasible = true;         // false: at some op even dropping every rebuildable storage exceeds the budget
  std::int64_t memory_floor = 0;  // no recomputation plan needs less: max over the ops examined of forced(v)
  op_id floor_op = no_id;       // where memory_floor is attained
  bool any_order = false;       // true: holds for every order (must-live sets); false: for the order given
  bool exact_sets = true;       // false: only some ops were examined (graph too large), still a valid bound
};

namespace detail {

// One step's working set: its forced bytes and the storages that can be dropped and rebuilt.
struct recompute_bound_tables {
  std::vector<double> op_cost;                     // each op's least cost (1 per op when the graph has no costs)
  std::vector<std::vector<op_id>> writers;         // per storage: recomputable ops that write it
  std::vector<std::vector<op_id>> writers_all;     // per storage: every op that writes it
  std::vector<op_id> self;                         // self[o] == o (one-op spans)
  double compute_cost = 0.0;
  explicit recompute_bound_tables(const problem& p) {
    const auto n = static_cast<std::size_t>(p.num_ops());
    bool costed = false;
    for (op_id o = 0; o < p.num_ops() && !costed; ++o) costed = p.cost(o) > 0;
    op_cost.resize(n, 1.0);
    for (op_id o = 0; o < p.num_ops(); ++o) {
      auto& c = op_cost[static_cast<std::size_t>(o)];
      if (costed) {
        c = p.cost(o);
        for (const auto& im : p.implementations(o)) c = std::min(c, im.cost);
      }
      compute_cost += costed ? p.cost(o) : 1.0;
    }
    writers.resize(static_cast<std::size_t>(p.num_storages()));
    writers_all.resize(static_cast<std::size_t>(p.num_storages()));
    self.resize(n);
    for (op_id o = 0; o < p.num_ops(); ++o) {
      self[static_cast<std::size_t>(o)] = o;
      for (auto t : p.outputs(o)) {
        const auto s = static_cast<std::size_t>(p.storage_of(t));
        if (writers_all[s].empty() || writers_all[s].back() != o) writers_all[s].push_back(o);
        if (p.recomputable(o) && (writers[s].empty() || writers[s].back() != o)) writers[s].push_back(o);
      }
    }
  }
};

// The least cost of a set of items (cost, bytes) covering `need` bytes, from below: depth-first
// branch and bound over the items in cost-per-byte order (take the next item, or leave it), each
// node bounded by its fractional relaxation (Dantzig's bound: the cheapest bytes first, the last item
// in part). Past `nodes` nodes, an open node answers with its fractional bound, so the result is
// always a valid lower bound, and the exact 0-1 optimum when the search completes.
struct min_cover {
  const std::vector<std::pair<double, std::int64_t>>& items;  // sorted by cost per byte
  std::int64_t nodes;
  double incumbent = std::numeric_limits<double>::infinity();

  // Bytes stay integers (sizes up to 2^61 lose their low bits in a double); only the part taken
  // of the last item is a fraction.
  [[nodiscard]] double fractional(std::size_t i, std::int64_t need) const {
    double c = 0;
    for (; i < items.size() && need > 0; ++i) {
      const auto [cost, b] = items[i];
      if (b <= need) {
        c += cost;
        need -= b;
      } else {
        c += cost * (static_cast<double>(need) / static_cast<double>(b));
        need = 0;
      }
    }
    return need > 0 ? std::numeric_limits<double>::infinity() : c;
  }
  // A feasible cover's cost (so at least the 0-1 optimum): whole items in order until covered, or
  // the cheapest single item that covers alone.
  [[nodiscard]] double feasible_cost(std::int64_t need) const {
    double prefix = 0, single = std::numeric_limits<double>::infinity();
    std::int64_t left = need;
    for (const auto& [cost, b] : items) {
      if (left > 0) {
        prefix += cost;
        left -= b;
      }
      if (b >= need) single = std::min(single, cost);
    }
    return std::min(left > 0 ? std::numeric_limits<double>::infinity() : prefix, single);
  }
  double search(std::size_t i, std::int64_t need, double spent) {
    if (need <= 0) {
      incumbent = std::min(incumbent, spent);
      return spent;
    }
    const double f = spent + fractional(i, need);
    if (nodes <= 0 || f >= incumbent || i >= items.size()) return f;
    nodes -= 1;
    const double take = search(i + 1, need - items[i].second, spent + items[i].first);
    const double leave = search(i + 1, need, spent);
    return std::max(f, std::min(take, leave));
  }
};

// forced(v) + droppable(v) at one op, from its live-across storages, and the bound at v.
struct recompute_bound_step {
  std::int64_t forced = 0;
  double cost = 0.0;   // lower bound on the recompute cost at this op
  double upper = 0.0;  // the cost of one feasible cover here: the op's 0-1 bound cannot exceed it
  bool feasible = true;
};

// `writers_of(s)`: the recomputable ops one of which must run again to rebuild what s holds at v.
// `nodes`: the branch-and-bound's node budget (0: the fractional bound only).
template <class Writers>
recompute_bound_step recompute_bound_at(const problem& p, const recompute_bound_tables& tb, op_id v, std::span<const storage_id> across,
                                        std::int64_t budget, Writers&& writers_of, std::int64_t nodes) {
  recompute_bound_step r;
  r.forced = p.resident_bytes() + min_workspace(p, v);
  for (auto s : p.touched(v))
    if (!p.resident(s)) r.forced += p.storage_bytes(s);
  // Items: writer op -> bytes it can restore.
  std::vector<std::pair<op_id, std::int64_t>> items;
  std::int64_t droppable = 0;
  for (auto s : across) {
    const auto w = writers_of(s);
    const auto b = p.storage_bytes(s);
    if (w.empty()) {
      r.forced += b;
      continue;
    }
    droppable += b;
    for (auto o : w) items.emplace_back(o, b);
  }
  const auto excess = r.forced + droppable - budget;
  if (excess <= 0) return r;
  if (r.forced > budget) {
    r.feasible = false;
    return r;
  }
  std::sort(items.begin(), items.end());
  std::vector<std::pair<double, std::int64_t>> merged;  // (cost, bytes) per writer op
  for (std::size_t i = 0; i < items.size();) {
    std::int64_t b = 0;
    const auto o = items[i].first;
    for (; i < items.size() && items[i].first == o; ++i) b += items[i].second;
    merged.emplace_back(tb.op_cost[static_cast<std::size_t>(o)], b);
  }
  // Cheapest bytes first (cost per byte; ties: more bytes first, then cheaper, for determinism).
  std::sort(merged.begin(), merged.end(), [](const auto& a, const auto& b) {
    const double x = a.first * static_cast<double>(b.second), y = b.first * static_cast<double>(a.second);
    return x != y ? x < y : a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  min_cover mc{merged, nodes};
  r.upper = mc.feasible_cost(excess);
  mc.incumbent = r.upper;
  r.cost = std::min(r.upper, mc.search(0, excess, 0.0));
  return r;
}

inline void recompute_bound_fold(recompute_lower_bound& out, op_id v, const recompute_bound_step& r) {
  if (r.forced > out.memory_floor) {
    out.memory_floor = r.forced;
    out.floor_op = v;
  }
  if (!r.feasible) {
    if (out.feasible) out.at_op = v;
    out.feasible = false;
  } else if (out.feasible && r.cost > out.cost) {
    out.cost = r.cost;
    out.at_op = v;
  }
}

// Both versions: the fractional bound at every op examined, then the branch and bound (which can
// only raise an op's bound, never above the op's feasible cover) at the ops whose feasible cover
// costs more than the best bound so far, the most expensive covers first.
template <class Writers>
void recompute_bound_over(recompute_lower_bound& out, const problem& p, const recompute_bound_tables& tb,
                          const std::vector<std::vector<storage_id>>& across, const std::vector<char>& sel, std::int64_t budget,
                          Writers&& writers_of, std::int64_t nodes_per_op) {
  std::vector<std::pair<double, op_id>> frac;  // (feasible cover's cost, op)
  for (op_id v = 0; v < p.num_ops(); ++v) {
    if (!sel[static_cast<std::size_t>(v)]) continue;
    const auto w = [&](storage_id s) { return writers_of(v, s); };
    const auto r = recompute_bound_at(p, tb, v, across[static_cast<std::size_t>(v)], budget, w, 0);
    if (r.forced > out.memory_floor) {
      out.memory_floor = r.forced;
      out.floor_op = v;
    }
    if (!r.feasible) {
      if (out.feasible) out.at_op = v;
      out.feasible = false;
    } else if (r.cost > 0) {
      recompute_bound_fold(out, v, r);
      frac.emplace_back(r.upper, v);
    }
  }
  if (!out.feasible) return;
  std::sort(frac.begin(), frac.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  for (const auto& [f, v] : frac) {
    if (f <= out.cost) break;
    const auto w = [&](storage_id s) { return writers_of(v, s); };
    recompute_bound_fold(out, v, recompute_bound_at(p, tb, v, across[static_cast<std::size_t>(v)], budget, w, nodes_per_op));
  }
}

// Which ops to examine: all when the lists fit in `max_pairs` storage entries, else the `keep` ops
// with the most bytes that must live there (any subset gives a valid bound).
inline std::vector<char> recompute_bound_selection(const std::vector<std::int64_t>& pairs_at, const std::vector<std::int64_t>& bytes_at,
                                                   std::int64_t max_pairs, std::size_t keep, bool& exact) {
  const auto n = pairs_at.size();
  std::vector<char> sel(n, 1);
  std::int64_t total = 0;
  for (auto c : pairs_at) total += c;
  exact = total <= max_pairs;
  if (exact) return sel;
  std::vector<std::size_t> idx(n);
  for (std::size_t i = 0; i < n; ++i) idx[i] = i;
  const auto k = std::min(keep, n);
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                    [&](std::size_t a, std::size_t b) { return bytes_at[a] != bytes_at[b] ? bytes_at[a] > bytes_at[b] : a < b; });
  std::fill(sel.begin(), sel.end(), 0);
  for (std::size_t i = 0; i < k; ++i) sel[idx[i]] = 1;
  return sel;
}

inline void recompute_bound_finish(recompute_lower_bound& out) {
  if (!out.feasible) out.cost = 0.0;
  out.overhead = out.compute_cost > 0 ? out.cost / out.compute_cost : 0.0;
}

}  // namespace detail

// The bound for every order of the graph (see the top of this file). Exact must-live sets up to
// `max_ops` ops (core/bounds.hpp's reachability); beyond that, the op-local part only (forced bytes
// = op-local bound, cost 0 unless that alone exceeds the budget).
inline recompute_lower_bound recompute_bound_any_order(const problem& p, std::int64_t budget, std::int32_t max_ops = 30000,
                                                       std::int64_t max_pairs = 4'000'000, std::int64_t nodes_per_op = 4096) {
  recompute_lower_bound out;
  out.any_order = true;
  const detail::recompute_bound_tables tb(p);
  out.compute_cost = tb.compute_cost;
  const auto n = static_cast<std::size_t>(p.num_ops());
  std::vector<std::int64_t> pairs(n, 0), bytes(n, 0);
  const bool reach = detail::for_each_must_live(p, max_ops, [&](storage_id s, std::size_t base, std::span<const std::uint64_t> mask) {
    const auto b = p.storage_bytes(s);
    detail::for_each_bit(base, mask, [&](op_id v) {
      ++pairs[static_cast<std::size_t>(v)];
      bytes[static_cast<std::size_t>(v)] += b;
    });
  });
  bool exact = true;
  const auto sel = detail::recompute_bound_selection(pairs, bytes, max_pairs, 4096, exact);
  out.exact_sets = reach && exact;
  std::vector<std::vector<storage_id>> across(n);
  if (reach)
    detail::for_each_must_live(p, max_ops, [&](storage_id s, std::size_t base, std::span<const std::uint64_t> mask) {
      detail::for_each_bit(base, mask, [&](op_id v) {
        if (sel[static_cast<std::size_t>(v)]) across[static_cast<std::size_t>(v)].push_back(s);
      });
    });
  // Which version s holds at v depends on the order: any recomputable writer may be the one to run again.
  detail::recompute_bound_over(
      out, p, tb, across, sel, budget, [&](op_id, storage_id s) { return std::span<const op_id>(tb.writers[static_cast<std::size_t>(s)]); },
      nodes_per_op);
  detail::recompute_bound_finish(out);
  return out;
}

// The bound for one order (a topological order of all ops, e.g. a plan's compute steps): at the
// step of v, the storages written before it and used after it (or live to the end) must stay or be
// rebuilt. Stronger than the any-order bound, and what a checkpointer over that order is held to.
inline recompute_lower_bound recompute_bound_in_order(const problem& p, std::span<const op_id> order, std::int64_t budget,
                                                      std::int64_t max_pairs = 4'000'000, std::int64_t nodes_per_op = 4096) {
  if (auto why = check_topological(p, order)) throw error(errc::invalid_argument, "recompute_bound_in_order: " + *why);
  recompute_lower_bound out;
  const detail::recompute_bound_tables tb(p);
  out.compute_cost = tb.compute_cost;
  const auto n = order.size();
  std::vector<std::int32_t> pos(n);
  for (std::size_t i = 0; i < n; ++i) pos[static_cast<std::size_t>(order[i])] = static_cast<std::int32_t>(i);
  // Each non-resident storage is live strictly between its first write (or the start, -1) and its
  // last use (or the end, n): positions first+1 .. last-1 that do not touch it.
  const auto S = static_cast<std::size_t>(p.num_storages());
  std::vector<std::int32_t> first(S, -1), last(S, -1);
  for (storage_id s = 0; s < p.num_storages(); ++s) {
    if (p.resident(s) || p.storage_bytes(s) == 0) continue;
    const auto a = p.storage_allocator(s);
    first[static_cast<std::size_t>(s)] = a == no_id ? -1 : pos[static_cast<std::size_t>(a)];
    std::int32_t l = -1;
    for (auto u : p.storage_users(s)) l = std::max(l, pos[static_cast<std::size_t>(u)]);
    last[static_cast<std::size_t>(s)] = p.live_to_end(s) ? static_cast<std::int32_t>(n) : l;
  }
  std::vector<std::int64_t> dpairs(n + 1, 0), dbytes(n + 1, 0);
  for (std::size_t s = 0; s < S; ++s) {
    const auto lo = first[s] + 1, hi = last[s];  // [lo, hi)
    if (p.resident(static_cast<storage_id>(s)) || p.storage_bytes(static_cast<storage_id>(s)) == 0 || lo >= hi) continue;
    dpairs[static_cast<std::size_t>(lo)] += 1;
    dpairs[static_cast<std::size_t>(hi)] -= 1;
    dbytes[static_cast<std::size_t>(lo)] += p.storage_bytes(static_cast<storage_id>(s));
    dbytes[static_cast<std::size_t>(hi)] -= p.storage_bytes(static_cast<storage_id>(s));
  }
  std::vector<std::int64_t> pairs(n, 0), bytes(n, 0);  // indexed by op id
  std::int64_t cp = 0, cb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    cp += dpairs[i];
    cb += dbytes[i];
    pairs[static_cast<std::size_t>(order[i])] = cp;
    bytes[static_cast<std::size_t>(order[i])] = cb;
  }
  bool exact = true;
  const auto sel = detail::recompute_bound_selection(pairs, bytes, max_pairs, 4096, exact);
  out.exact_sets = exact;
  std::vector<std::int32_t> sel_pos;  // selected positions, ascending
  for (std::size_t i = 0; i < n; ++i)
    if (sel[static_cast<std::size_t>(order[i])]) sel_pos.push_back(static_cast<std::int32_t>(i));
  std::vector<std::vector<storage_id>> across(n);
  for (std::size_t s = 0; s < S; ++s) {
    const auto lo = first[s] + 1, hi = last[s];
    if (p.resident(static_cast<storage_id>(s)) || p.storage_bytes(static_cast<storage_id>(s)) == 0) continue;
    for (auto it = std::lower_bound(sel_pos.begin(), sel_pos.end(), lo); it != sel_pos.end() && *it < hi; ++it)
      across[static_cast<std::size_t>(order[static_cast<std::size_t>(*it)])].push_back(static_cast<storage_id>(s));
  }
  for (std::size_t i = 0; i < n; ++i) {
    const auto v = order[i];
    if (!sel[static_cast<std::size_t>(v)]) continue;
    // Storages v touches are in its forced part already.
    const auto t = p.touched(v);
    std::erase_if(across[static_cast<std::size_t>(v)], [&](storage_id s) { return std::find(t.begin(), t.end(), s) != t.end(); });
  }
  // In a fixed order s holds, at v, the version of its last writer before v: only that version's
  // producer can rebuild it (the next version's writer reads it).
  detail::recompute_bound_over(
      out, p, tb, across, sel, budget,
      [&](op_id v, storage_id s) {
        const auto at = pos[static_cast<std::size_t>(v)];
        op_id w = no_id;
        std::int32_t wp = -1;
        for (auto o : tb.writers_all[static_cast<std::size_t>(s)])
          if (pos[static_cast<std::size_t>(o)] < at && pos[static_cast<std::size_t>(o)] > wp) {
            wp = pos[static_cast<std::size_t>(o)];
            w = o;
          }
        if (w == no_id || !p.recomputable(w)) return std::span<const op_id>();
        return std::span<const op_id>(&tb.self[static_cast<std::size_t>(w)], 1);
      },
      nodes_per_op);
  detail::recompute_bound_finish(out);
  return out;
}

}  // namespace memplan
