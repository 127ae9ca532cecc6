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
// cannot be rebuilt (no recomputable writer, or, for a storage written in place, what it holds at v
// derives from an op that cannot run again: recompute_bound_tables::chain); and a plan within budget
// B drops storages of at least excess(v) = forced(v) + droppable(v) − B bytes. Running a writer op w
// again restores at most the storages w writes among those, and costs at least w's least
// implementation cost plus that of the writers before it in its in-place chain. The cheapest
// cover is a 0-1 knapsack; a bounded branch and bound over it (detail::min_cover: exact when it
// completes, its open nodes' fractional bounds otherwise) is a lower bound on the recompute cost of
// every plan, and the max over v is one too. When even
// dropping everything droppable does not reach B at some v (forced(v) > B), no recomputation plan
// fits: forced(v) is then a memory lower bound for such plans, above core/bounds.hpp's op-local one
// by the storages that must live across v.
//
// In one order the bound also charges one level of a recompute's own needs: when w runs again after
// v, an input of w that an in-place write destroyed at or before v's step exists only if its producer
// ran again too (at some time: not that producer's other inputs, since that rerun may have come
// early, while they were still there; but its own in-place chain, which its first run destroyed).
// Such shared producers are paid once; the relaxation then charges
// each item its ops' shares (an op needed by m items, 1/m of its cost to each) or its own op's cost,
// whichever bound is larger. Otherwise the bound ignores what a recompute needs and that a value
// may be needed again, so it is loose on deep recompute chains; it is exact when one step dominates
// and the cheapest bytes there can be rebuilt from values that stay anyway.
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
  // No recomputation plan needs less: max of forced(v) over the ops examined, those whose bytes
  // exceed the budget (so above the budget exactly when some op's is, and then feasible is false).
  std::int64_t memory_floor = 0;
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
  // In-place chains. A storage written in place holds versions t0 (its root), t1 = w1(t0, ...), ...:
  // each writer reads the version before it, which its own write destroys. So running w_j again
  // (after its first run) needs t_{j-1} again, which only running w_{j-1} again gives, and so on down
  // to w0: every writer before w_j runs again too, and none may be non-recomputable.
  // chain[s]: the writers of s in version order (w0 first, no_id when the root has no producer);
  // empty when s has one version, or versions of different sizes (then s is treated as unchained).
  std::vector<std::vector<op_id>> chain;
  std::vector<std::int32_t> rebuildable;  // per storage: how many leading chain writers exist and are recomputable
  std::vector<std::vector<std::pair<storage_id, std::int32_t>>> chain_at;  // per op: (storage, position) in each chain it writes
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
    chain.resize(static_cast<std::size_t>(p.num_storages()));
    rebuildable.assign(static_cast<std::size_t>(p.num_storages()), 0);
    chain_at.resize(n);
    // Each tensor's depth in its inplace_of chain, memoized (linear even for one chain of 100k writes).
    std::vector<std::int32_t> depth(static_cast<std::size_t>(p.num_tensors()), -1);
    std::vector<tensor_id> walk;
    const auto depth_of = [&](tensor_id t) {
      walk.clear();
      for (auto u = t; u != no_id && depth[static_cast<std::size_t>(u)] < 0; u = p.inplace_of(u)) walk.push_back(u);
      for (auto it = walk.rbegin(); it != walk.rend(); ++it) {
        const auto base = p.inplace_of(*it);
        depth[static_cast<std::size_t>(*it)] = base == no_id ? 0 : depth[static_cast<std::size_t>(base)] + 1;
      }
      return depth[static_cast<std::size_t>(t)];
    };
    std::vector<std::pair<std::int32_t, tensor_id>> by_depth;
    for (storage_id s = 0; s < p.num_storages(); ++s) {
      const auto ts = p.storage_tensors(s);
      if (ts.size() < 2 || p.resident(s)) continue;
      by_depth.clear();
      bool same_size = true;
      for (auto t : ts) {
        by_depth.emplace_back(depth_of(t), t);
        same_size = same_size && p.bytes(t) == p.bytes(ts[0]);
      }
      std::sort(by_depth.begin(), by_depth.end());
      bool linear = same_size;
      for (std::size_t j = 0; j < by_depth.size() && linear; ++j) linear = by_depth[j].first == static_cast<std::int32_t>(j);
      if (!linear) continue;
      auto& c = chain[static_cast<std::size_t>(s)];
      for (const auto& [d, t] : by_depth) c.push_back(p.producer(t));
      auto& r = rebuildable[static_cast<std::size_t>(s)];
      while (static_cast<std::size_t>(r) < c.size() && c[static_cast<std::size_t>(r)] != no_id && p.recomputable(c[static_cast<std::size_t>(r)])) ++r;
      for (std::size_t j = 1; j < c.size(); ++j) chain_at[static_cast<std::size_t>(c[j])].emplace_back(s, static_cast<std::int32_t>(j));
    }
  }
  // Appends to `also` the writers that running w again needs run again too (those before it in each
  // chain it writes); false when one of them cannot run again (or does not exist).
  bool chain_needs(op_id w, std::vector<op_id>& also) const {
    for (const auto& [s, j] : chain_at[static_cast<std::size_t>(w)]) {
      if (rebuildable[static_cast<std::size_t>(s)] < j) return false;
      const auto& c = chain[static_cast<std::size_t>(s)];
      for (std::int32_t i = 0; i < j; ++i)
        if (std::find(also.begin(), also.end(), c[static_cast<std::size_t>(i)]) == also.end()) also.push_back(c[static_cast<std::size_t>(i)]);
    }
    return true;
  }
};

// One way to restore bytes at v: run `op` again (after v), which needs the ops in `also` run again
// too (somewhere): they produce inputs of `op` that an in-place write destroyed by then.
struct cover_item {
  op_id op = no_id;
  double cost = 0.0;  // op's least cost
  std::int64_t bytes = 0;
  std::vector<op_id> also;
};

// Per-op arrays reused across the ops of one bound (each op's call touches only its items' entries
// and clears them after): sizing them per call made a 9,707-op graph quadratic.
struct recompute_bound_scratch {
  std::vector<std::int32_t> slot;  // recompute_bound_at: -1 not seen, -2 cannot run again, else an index
  std::vector<op_id> seen;         // ops whose slot is set
  std::vector<char> paid;          // min_cover: ops paid in the current branch
  std::vector<std::int32_t> uses;  // min_cover: how many items need each op
  explicit recompute_bound_scratch(const problem& p)
      : slot(static_cast<std::size_t>(p.num_ops()), -1), paid(static_cast<std::size_t>(p.num_ops()), 0), uses(static_cast<std::size_t>(p.num_ops()), 0) {}
};

// The least cost of a set of items covering `need` bytes, each op paid once however many items need
// it, from below: depth-first branch and bound over the items in cost-per-byte order (take the next
// item, or leave it), each node bounded by its fractional relaxation (Dantzig's bound over the items
// left, each costing its unpaid ops' shares (below): the cheapest bytes first, the last item in part).
// Past `nodes` nodes, an open node answers with its fractional bound, so the result is always a
// valid lower bound, and the exact optimum when the search completes.
struct min_cover {
  const std::vector<cover_item>& items;  // sorted by cost per byte
  const std::vector<double>& op_cost;
  std::int64_t nodes;
  std::vector<char>& paid;          // all 0 on entry and on return
  std::vector<std::int32_t>& uses;  // all 0 on entry and on return
  double incumbent = std::numeric_limits<double>::infinity();

  min_cover(const std::vector<cover_item>& its, const std::vector<double>& costs, std::int64_t node_limit, recompute_bound_scratch& sc)
      : items(its), op_cost(costs), nodes(node_limit), paid(sc.paid), uses(sc.uses) {
    for (const auto& it : items) {
      ++uses[static_cast<std::size_t>(it.op)];
      for (auto o : it.also) ++uses[static_cast<std::size_t>(o)];
    }
  }
  ~min_cover() {
    for (const auto& it : items) {
      uses[static_cast<std::size_t>(it.op)] = 0;
      for (auto o : it.also) uses[static_cast<std::size_t>(o)] = 0;
    }
  }
  min_cover(const min_cover&) = delete;
  min_cover& operator=(const min_cover&) = delete;

  // An op's share: its cost over the number of items that need it (as their op or in `also`).
  // Taking items T costs at least the sum of their unpaid ops' shares (an op needed by k of T adds
  // k / m of its cost, at most all of it), an additive bound the fractional relaxation can use.
  [[nodiscard]] double share(op_id o) const { return op_cost[static_cast<std::size_t>(o)] / uses[static_cast<std::size_t>(o)]; }
  [[nodiscard]] double item_share(const cover_item& it) const {
    double c = paid[static_cast<std::size_t>(it.op)] ? 0.0 : share(it.op);
    for (auto o : it.also)
      if (!paid[static_cast<std::size_t>(o)]) c += share(o);
    return c;
  }
  // Two relaxations, both valid, the larger wins: each item at its unpaid ops' shares, or at its own
  // op's cost alone (the items' ops are distinct; shares can be lower when an item's op is also
  // needed by many others).
  [[nodiscard]] double fractional(std::size_t i, std::int64_t need) const {
    std::vector<std::pair<double, std::int64_t>> rest;  // (cost, bytes) of the items left
    rest.reserve(items.size() - std::min(i, items.size()));
    for (auto j = i; j < items.size(); ++j) rest.emplace_back(item_share(items[j]), items[j].bytes);
    const double shared = dantzig(rest, need);
    rest.clear();
    for (auto j = i; j < items.size(); ++j)
      rest.emplace_back(paid[static_cast<std::size_t>(items[j].op)] ? 0.0 : items[j].cost, items[j].bytes);
    return std::max(shared, dantzig(rest, need));
  }
  // Bytes stay integers (sizes up to 2^61 lose their low bits in a double); only the part taken of
  // the last item is a fraction.
  static double dantzig(std::vector<std::pair<double, std::int64_t>>& rest, std::int64_t need) {
    std::sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) {
      const double x = a.first * static_cast<double>(b.second), y = b.first * static_cast<double>(a.second);
      return x != y ? x < y : a.second > b.second;
    });
    double c = 0;
    for (const auto& [cost, b] : rest) {
      if (need <= 0) break;
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
  // Marks item i's ops paid; returns what they add and records them in `marked` (to undo).
  double pay(const cover_item& it, std::vector<op_id>& marked) {
    double c = 0;
    auto one = [&](op_id o) {
      if (paid[static_cast<std::size_t>(o)]) return;
      paid[static_cast<std::size_t>(o)] = 1;
      marked.push_back(o);
      c += op_cost[static_cast<std::size_t>(o)];
    };
    one(it.op);
    for (auto o : it.also) one(o);
    return c;
  }
  void unpay(const std::vector<op_id>& marked) {
    for (auto o : marked) paid[static_cast<std::size_t>(o)] = 0;
  }
  // A feasible cover's cost (so at least the optimum): whole items in order until covered, or the
  // cheapest single item that covers alone.
  [[nodiscard]] double feasible_cost(std::int64_t need) {
    std::vector<op_id> marked;
    double prefix = 0, single = std::numeric_limits<double>::infinity();
    std::int64_t left = need;
    for (const auto& it : items) {
      if (left > 0) {
        prefix += pay(it, marked);
        left -= it.bytes;
      }
    }
    unpay(marked);
    for (const auto& it : items)
      if (it.bytes >= need) {
        std::vector<op_id> m;
        single = std::min(single, pay(it, m));
        unpay(m);
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
    std::vector<op_id> marked;
    const double add = pay(items[i], marked);
    const double take = search(i + 1, need - items[i].bytes, spent + add);
    unpay(marked);
    const double leave = search(i + 1, need, spent);
    return std::max(f, std::min(take, leave));
  }
};

// forced(v) + droppable(v) at one op, from its live-across storages, and the bound at v.
struct recompute_bound_step {
  std::int64_t forced = 0;
  double cost = 0.0;   // lower bound on the recompute cost at this op
  double upper = 0.0;  // the cost of one feasible cover here: the op's bound cannot exceed it
  bool feasible = true;
  std::int64_t nodes_used = 0;
};

// `writers_of(s)`: the recomputable ops one of which must run again (after v) to rebuild what s
// holds at v. `needs_of(w, also)`: false when w cannot run again after v; else the other ops that
// must then run again too, appended to `also`. `nodes`: the branch and bound's node limit (0: the
// fractional bound only).
template <class Writers, class Needs>
recompute_bound_step recompute_bound_at(const problem& p, const recompute_bound_tables& tb, recompute_bound_scratch& scratch, op_id v,
                                        std::span<const storage_id> across, std::int64_t budget, Writers&& writers_of, Needs&& needs_of,
                                        std::int64_t nodes) {
  recompute_bound_step r;
  r.forced = p.resident_bytes() + min_workspace(p, v);
  for (auto s : p.touched(v))
    if (!p.resident(s)) r.forced += p.storage_bytes(s);
  std::int64_t present = r.forced;
  for (auto s : across) present += p.storage_bytes(s);
  if (present <= budget) return r;  // fits without dropping anything
  // Items: writer op -> bytes it can restore (and what else it needs). scratch.slot[o]: -1 not seen,
  // -2 cannot run again, else o's index in `needs` (reset before returning).
  std::vector<std::pair<op_id, std::int64_t>> items;
  std::vector<std::pair<op_id, std::vector<op_id>>> needs;
  std::int64_t droppable = 0;
  for (auto s : across) {
    const auto ws = writers_of(s);
    const auto b = p.storage_bytes(s);
    bool any = false;
    for (auto o : ws) {
      auto& slot = scratch.slot[static_cast<std::size_t>(o)];
      if (slot == -1) {
        std::vector<op_id> also;
        if (needs_of(o, also)) {
          slot = static_cast<std::int32_t>(needs.size());
          needs.emplace_back(o, std::move(also));
        } else {
          slot = -2;
        }
        scratch.seen.push_back(o);
      }
      if (slot >= 0) {
        items.emplace_back(o, b);
        any = true;
      }
    }
    if (any) droppable += b;
    else r.forced += b;
  }
  const auto slot_of = [&](op_id o) { return scratch.slot[static_cast<std::size_t>(o)]; };
  struct reset_slots {
    recompute_bound_scratch& sc;
    ~reset_slots() {
      for (auto o : sc.seen) sc.slot[static_cast<std::size_t>(o)] = -1;
      sc.seen.clear();
    }
  } reset{scratch};
  const auto excess = r.forced + droppable - budget;
  if (excess <= 0) return r;
  if (r.forced > budget) {
    r.feasible = false;
    return r;
  }
  std::sort(items.begin(), items.end());
  std::vector<cover_item> merged;  // per writer op
  for (std::size_t i = 0; i < items.size();) {
    cover_item it;
    it.op = items[i].first;
    it.cost = tb.op_cost[static_cast<std::size_t>(it.op)];
    for (; i < items.size() && items[i].first == it.op; ++i) it.bytes += items[i].second;
    it.also = needs[static_cast<std::size_t>(slot_of(it.op))].second;
    merged.push_back(std::move(it));
  }
  // Cheapest bytes first (cost per byte; ties: more bytes first, then cheaper, then by op, for determinism).
  std::sort(merged.begin(), merged.end(), [](const cover_item& a, const cover_item& b) {
    const double x = a.cost * static_cast<double>(b.bytes), y = b.cost * static_cast<double>(a.bytes);
    return x != y ? x < y : a.bytes != b.bytes ? a.bytes > b.bytes : a.cost != b.cost ? a.cost < b.cost : a.op < b.op;
  });
  min_cover mc(merged, tb.op_cost, nodes, scratch);
  r.upper = mc.feasible_cost(excess);
  mc.incumbent = r.upper;
  r.cost = std::min(r.upper, mc.search(0, excess, 0.0));
  r.nodes_used = nodes - mc.nodes;
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
// costs more than the best bound so far, the most expensive covers first, `nodes_per_op` nodes at
// each and `nodes_total` in all (each node re-sorts the items left: at most 256 · 2048 item sorts,
// about 0.1 s on a 600-op export; past that the fractional bounds stand).
template <class Writers, class Needs>
void recompute_bound_over(recompute_lower_bound& out, const problem& p, const recompute_bound_tables& tb,
                          const std::vector<std::vector<storage_id>>& across, const std::vector<char>& sel, std::int64_t budget,
                          Writers&& writers_of, Needs&& needs_of, std::int64_t nodes_per_op, std::int64_t nodes_total) {
  recompute_bound_scratch scratch(p);
  std::vector<std::pair<double, op_id>> frac;  // (feasible cover's cost, op)
  for (op_id v = 0; v < p.num_ops(); ++v) {
    if (!sel[static_cast<std::size_t>(v)]) continue;
    const auto w = [&](storage_id s) { return writers_of(v, s); };
    const auto n = [&](op_id o, std::vector<op_id>& also) { return needs_of(v, o, also); };
    const auto r = recompute_bound_at(p, tb, scratch, v, across[static_cast<std::size_t>(v)], budget, w, n, 0);
    recompute_bound_fold(out, v, r);
    if (r.feasible && r.cost > 0) frac.emplace_back(r.upper, v);
  }
  if (!out.feasible) return;
  std::sort(frac.begin(), frac.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  std::int64_t left = nodes_total;
  for (const auto& fv : frac) {
    const op_id v = fv.second;  // (not a structured binding: clang 14 cannot capture one)
    if (fv.first <= out.cost || left <= 0) break;
    const auto w = [&](storage_id s) { return writers_of(v, s); };
    const auto n = [&](op_id o, std::vector<op_id>& also) { return needs_of(v, o, also); };
    const auto r = recompute_bound_at(p, tb, scratch, v, across[static_cast<std::size_t>(v)], budget, w, n, std::min(nodes_per_op, left));
    left -= std::max<std::int64_t>(1, r.nodes_used);
    recompute_bound_fold(out, v, r);
  }
}

// Which ops to examine: those where the bytes that must be present without recomputation (op-local
// plus live across) exceed the budget (elsewhere the bound is 0); all of them when their lists fit in
// `max_pairs` storage entries, else the ones with the most such bytes while their lists fit (any
// subset gives a valid bound; `exact` says whether it was all).
inline std::vector<char> recompute_bound_selection(const problem& p, const std::vector<std::int64_t>& pairs_at, const std::vector<std::int64_t>& bytes_at,
                                                   std::int64_t budget, std::int64_t max_pairs, bool& exact) {
  const auto n = pairs_at.size();
  std::vector<char> sel(n, 0);
  std::vector<std::pair<std::int64_t, std::size_t>> over;  // (bytes present, op)
  std::int64_t total = 0;
  for (std::size_t v = 0; v < n; ++v) {
    std::int64_t b = p.resident_bytes() + min_workspace(p, static_cast<op_id>(v)) + bytes_at[v];
    for (auto s : p.touched(static_cast<op_id>(v)))
      if (!p.resident(s)) b += p.storage_bytes(s);
    if (b <= budget) continue;
    over.emplace_back(b, v);
    total += pairs_at[v];
  }
  exact = total <= max_pairs;
  if (!exact) std::sort(over.begin(), over.end(), [](const auto& x, const auto& y) { return x.first != y.first ? x.first > y.first : x.second < y.second; });
  std::int64_t taken = 0;
  for (const auto& [b, v] : over) {
    if (!exact && taken > 0 && taken + pairs_at[v] > max_pairs) break;
    sel[v] = 1;
    taken += pairs_at[v];
  }
  return sel;
}

// For each selected op v and each storage s in across[v] (ascending) with an in-place chain: the
// range [a, k] of chain positions whose version s can hold while v runs in some order. Writers of one
// chain run in chain order, so a = the last that is a proper ancestor of v (-1: none) and k = the
// last that is not a proper descendant (v does not write s: s is not in its own across list).
// Reachability from every chain position (a source each; chain s holds sources off[s] ..
// off[s] + length - 1) by blocked bitsets, as detail::for_each_must_live (1024 sources per block);
// a block looks only at the positions of each chain that fall in it. Other entries are (-1, -1).
inline std::vector<std::vector<std::pair<std::int32_t, std::int32_t>>> chain_ranges(const problem& p, const recompute_bound_tables& tb,
                                                                                  const std::vector<std::vector<storage_id>>& across,
                                                                                  const std::vector<char>& sel) {
  const auto n = static_cast<std::size_t>(p.num_ops());
  std::vector<std::vector<std::pair<std::int32_t, std::int32_t>>> out(n);
  std::vector<std::size_t> off(static_cast<std::size_t>(p.num_storages()), 0);
  std::vector<std::vector<std::size_t>> src(n);  // op -> its sources
  std::size_t ns = 0;
  for (storage_id s = 0; s < p.num_storages(); ++s) {
    const auto& c = tb.chain[static_cast<std::size_t>(s)];
    off[static_cast<std::size_t>(s)] = ns;
    for (std::size_t j = 0; j < c.size(); ++j)
      if (c[j] != no_id) src[static_cast<std::size_t>(c[j])].push_back(ns + j);
    ns += c.size();
  }
  for (std::size_t v = 0; v < n; ++v) {
    if (!sel[v]) continue;
    out[v].assign(across[v].size(), {-1, -1});
    for (std::size_t i = 0; i < across[v].size(); ++i)
      out[v][i].second = static_cast<std::int32_t>(tb.chain[static_cast<std::size_t>(across[v][i])].size()) - 1;
  }
  if (ns == 0) return out;
  const auto order = topological_order(p);
  constexpr std::size_t W = 16;
  constexpr std::size_t B = 64 * W;
  std::vector<std::uint64_t> anc(n * W), desc(n * W);
  const auto bit = [](const std::uint64_t* m, std::size_t i) { return (m[i / 64] >> (i % 64)) & 1U; };
  for (std::size_t base = 0; base < ns; base += B) {
    const auto mark = [&](std::uint64_t* m, op_id o) {
      for (auto i : src[static_cast<std::size_t>(o)])
        if (i >= base && i < base + B) m[(i - base) / 64] |= std::uint64_t{1} << ((i - base) % 64);
    };
    block_reachability<W>(p, order, anc, desc, mark);
    for (std::size_t v = 0; v < n; ++v) {
      if (!sel[v]) continue;
      const auto* av = &anc[v * W];
      const auto* dv = &desc[v * W];
      for (std::size_t i = 0; i < across[v].size(); ++i) {
        const auto s = static_cast<std::size_t>(across[v][i]);
        const auto len = tb.chain[s].size();
        const auto lo = std::max(off[s], base), hi = std::min(off[s] + len, base + B);  // this block's positions of chain s
        if (lo >= hi) continue;
        auto& [a, k] = out[v][i];
        // Ancestors of v among a chain's writers are a prefix of it, descendants a suffix: binary
        // searches (a chain of L writes across L ops stays O(L log L)).
        std::size_t l = lo, r = hi;  // first position in [lo, hi) that is not an ancestor
        while (l < r) {
          const auto m = l + (r - l) / 2;
          if (bit(av, m - base)) l = m + 1;
          else r = m;
        }
        if (l > lo) a = std::max(a, static_cast<std::int32_t>(l - 1 - off[s]));
        l = lo, r = hi;  // first position in [lo, hi) that is a descendant
        while (l < r) {
          const auto m = l + (r - l) / 2;
          if (bit(dv, m - base)) r = m;
          else l = m + 1;
        }
        if (l < hi) k = std::min(k, static_cast<std::int32_t>(l - off[s]) - 1);
      }
    }
  }
  return out;
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
                                                       std::int64_t max_pairs = 1'000'000, std::int64_t nodes_per_op = 256,
                                                      std::int64_t nodes_total = 2048) {
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
  const auto sel = detail::recompute_bound_selection(p, pairs, bytes, budget, max_pairs, exact);
  out.exact_sets = reach && exact;
  std::vector<std::vector<storage_id>> across(n);
  if (reach)
    detail::for_each_must_live(p, max_ops, [&](storage_id s, std::size_t base, std::span<const std::uint64_t> mask) {
      detail::for_each_bit(base, mask, [&](op_id v) {
        if (sel[static_cast<std::size_t>(v)]) across[static_cast<std::size_t>(v)].push_back(s);
      });
    });
  // Which version s holds at v depends on the order, but only within a range of its chain: at least
  // that of the last writer that is an ancestor of v, at most that of the last that is not a
  // descendant (detail::chain_ranges). Rebuilding the version held pays its whole chain; a chain with
  // a writer that cannot run again at or before the range's start cannot be rebuilt (every version
  // held derives from that writer's output): s stays. (Tried: also charging, as
  // recompute_bound_in_order does, the producers of other inputs destroyed in place by an ancestor of
  // v; the exports' bounds did not move.)
  const auto ranges = reach ? detail::chain_ranges(p, tb, across, sel) : std::vector<std::vector<std::pair<std::int32_t, std::int32_t>>>{};
  detail::recompute_bound_over(
      out, p, tb, across, sel, budget,
      [&](op_id v, storage_id s) {
        const auto& c = tb.chain[static_cast<std::size_t>(s)];
        if (c.empty() || ranges.empty()) return std::span<const op_id>(tb.writers[static_cast<std::size_t>(s)]);
        const auto& av = across[static_cast<std::size_t>(v)];
        const auto i = static_cast<std::size_t>(std::lower_bound(av.begin(), av.end(), s) - av.begin());
        const auto [a, k] = ranges[static_cast<std::size_t>(v)][i];
        const auto hi = std::min(k, tb.rebuildable[static_cast<std::size_t>(s)] - 1);
        if (a < 0 || hi < a) return std::span<const op_id>();
        return std::span<const op_id>(c.data() + a, static_cast<std::size_t>(hi - a + 1));
      },
      [&](op_id, op_id w, std::vector<op_id>& also) { return tb.chain_needs(w, also); }, nodes_per_op, nodes_total);
  detail::recompute_bound_finish(out);
  return out;
}

// The bound for one order (a topological order of all ops, e.g. a plan's compute steps): at the
// step of v, the storages written before it and used after it (or live to the end) must stay or be
// rebuilt. Stronger than the any-order bound, and what a checkpointer over that order is held to.
inline recompute_lower_bound recompute_bound_in_order(const problem& p, std::span<const op_id> order, std::int64_t budget,
                                                      std::int64_t max_pairs = 1'000'000, std::int64_t nodes_per_op = 256,
                                                      std::int64_t nodes_total = 2048) {
  if (auto why = check_topological(p, order)) throw error(errc::invalid_argument, "recompute_bound_in_order: " + *why);
  recompute_lower_bound out;
  const detail::recompute_bound_tables tb(p);
  out.compute_cost = tb.compute_cost;
  const auto n = order.size();
  std::vector<std::int32_t> pos(n);
  for (std::size_t i = 0; i < n; ++i) pos[static_cast<std::size_t>(order[i])] = static_cast<std::int32_t>(i);
  // The step at which an in-place write destroys each tensor (n: never).
  std::vector<std::int32_t> overwritten_at(static_cast<std::size_t>(p.num_tensors()), static_cast<std::int32_t>(n));
  for (tensor_id t = 0; t < p.num_tensors(); ++t)
    if (const auto base = p.inplace_of(t); base != no_id && p.producer(t) != no_id)
      overwritten_at[static_cast<std::size_t>(base)] =
          std::min(overwritten_at[static_cast<std::size_t>(base)], pos[static_cast<std::size_t>(p.producer(t))]);
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
  const auto sel = detail::recompute_bound_selection(p, pairs, bytes, budget, max_pairs, exact);
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
      // w runs again after v; an input of w that an in-place write at or before v's step destroyed
      // exists then only if its producer ran again (at some time): that producer is paid too. (Not
      // that producer's other inputs: its rerun may have happened early, while they were still there.)
      // An in-place chain is paid whole (recompute_bound_tables::chain): w's, and that of each such producer.
      [&](op_id v, op_id w, std::vector<op_id>& also) {
        const auto at = pos[static_cast<std::size_t>(v)];
        if (!tb.chain_needs(w, also)) return false;
        for (auto u : p.inputs(w)) {
          if (overwritten_at[static_cast<std::size_t>(u)] > at) continue;
          const auto x = p.producer(u);
          if (x == no_id || !p.recomputable(x)) return false;
          if (std::find(also.begin(), also.end(), x) == also.end()) also.push_back(x);
          if (!tb.chain_needs(x, also)) return false;
        }
        return true;
      },
      nodes_per_op, nodes_total);
  detail::recompute_bound_finish(out);
  return out;
}

}  // namespace memplan
