#pragma once
// Lower bounds on the peak of ANY order of a problem (reordering only: no recomputation, no
// offloading), and the op-local bound that holds for every plan whatever it recomputes or offloads.
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include <memplan/base/ids.hpp>
#include <memplan/core/analysis.hpp>
#include <memplan/core/problem.hpp>

namespace memplan {

// The least workspace an op can run with: its own, or an implementation's (MONeT §3).
inline std::int64_t min_workspace(const problem& p, op_id o) {
  std::int64_t ws = p.workspace(o);
  for (const auto& im : p.implementations(o)) ws = std::min(ws, im.workspace);
  return ws;
}

// ---- lower bounds on the peak of any order ----------------------------------------------------------
struct peak_lower_bound {
  std::int64_t bytes = 0;
  std::int32_t at_op = -1;      // the op where the bound is attained
  bool uses_reachability = false;  // false: the cheap "op-local" bound only (graph too large)
};

namespace detail {
// For every non-resident, non-empty storage s, the ops v at which ANY order holds s although v does
// not touch it: v runs after s's allocator (or s is preexisting) and before one of s's users (or s
// lives to the end). Computed exactly with blocked bitsets (64·W ops per block, O(E·n/64) word
// operations): `fn(s, base, mask)` is called once per (storage, block) with the block's W words
// (bit k of word w: op base + 64·w + k). Returns false, calling nothing, beyond `max_ops` ops.
// One block of blocked reachability over `order` (a topological order of p): anc[x] and desc[x] (W
// words each, per op) get the block's sources that are proper ancestors / proper descendants of x;
// `mark(words, o)` sets the bits of the sources o is (none when o is not one in this block).
template <std::size_t W, class Mark>
void block_reachability(const problem& p, std::span<const op_id> order, std::vector<std::uint64_t>& anc, std::vector<std::uint64_t>& desc,
                        Mark&& mark) {
  std::fill(anc.begin(), anc.end(), 0);
  std::fill(desc.begin(), desc.end(), 0);
  for (auto x : order) {
    auto* ax = &anc[static_cast<std::size_t>(x) * W];
    for (auto q : p.preds(x)) {
      const auto* aq = &anc[static_cast<std::size_t>(q) * W];
      for (std::size_t w = 0; w < W; ++w) ax[w] |= aq[w];
      mark(ax, q);
    }
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    auto* dx = &desc[static_cast<std::size_t>(*it) * W];
    for (auto q : p.succs(*it)) {
      const auto* dq = &desc[static_cast<std::size_t>(q) * W];
      for (std::size_t w = 0; w < W; ++w) dx[w] |= dq[w];
      mark(dx, q);
    }
  }
}

template <class Fn>
bool for_each_must_live(const problem& p, std::int32_t max_ops, Fn&& fn) {
  const auto n = static_cast<std::size_t>(p.num_ops());
  if (n == 0 || static_cast<std::int32_t>(n) > max_ops) return false;
  const auto order = topological_order(p);
  constexpr std::size_t W = 16;  // words per block: 1024 ops
  constexpr std::size_t B = 64 * W;
  std::vector<std::uint64_t> anc(n * W), desc(n * W), mask(W);
  for (std::size_t base = 0; base < n; base += B) {
    const auto in_block = [&](op_id o) { return static_cast<std::size_t>(o) >= base && static_cast<std::size_t>(o) < base + B; };
    // anc[x] = block ops that are proper ancestors of x; desc[x] = block ops that are proper descendants of x.
    block_reachability<W>(p, order, anc, desc, [&](std::uint64_t* m, op_id q) {
      if (in_block(q)) m[(static_cast<std::size_t>(q) - base) / 64] |= std::uint64_t{1} << ((static_cast<std::size_t>(q) - base) % 64);
    });
    for (storage_id s = 0; s < p.num_storages(); ++s) {
      if (p.resident(s) || p.storage_bytes(s) == 0) continue;
      // Ops that must see s live: after its allocator (or from the start) and before some user.
      std::fill(mask.begin(), mask.end(), 0);
      for (auto u : p.storage_users(s)) {
        const auto* au = &anc[static_cast<std::size_t>(u) * W];
        for (std::size_t w = 0; w < W; ++w) mask[w] |= au[w];
      }
      if (p.live_to_end(s)) std::fill(mask.begin(), mask.end(), ~std::uint64_t{0});  // live to the end
      const auto a = p.storage_allocator(s);
      if (a != no_id) {
        const auto* da = &desc[static_cast<std::size_t>(a) * W];
        for (std::size_t w = 0; w < W; ++w) mask[w] &= da[w];
      }
      for (auto u : p.storage_users(s))  // users already count s in their op-local part
        if (in_block(u)) mask[(static_cast<std::size_t>(u) - base) / 64] &= ~(std::uint64_t{1} << ((static_cast<std::size_t>(u) - base) % 64));
      if (base + B > n) {  // bits past the last op
        for (std::size_t w = 0; w < W; ++w) {
          const auto first = base + 64 * w;
          if (first >= n) mask[w] = 0;
          else if (n - first < 64) mask[w] &= (std::uint64_t{1} << (n - first)) - 1;
        }
      }
      fn(s, base, std::span<const std::uint64_t>(mask));
    }
  }
  return true;
}

// Calls f(v) for each op v whose bit is set in a block mask of for_each_must_live.
template <class F>
void for_each_bit(std::size_t base, std::span<const std::uint64_t> mask, F&& f) {
  for (std::size_t w = 0; w < mask.size(); ++w)
    for (auto m = mask[w]; m; m &= m - 1) f(static_cast<op_id>(base + 64 * w + static_cast<std::size_t>(__builtin_ctzll(m))));
}
}  // namespace detail

// At every op v, any order holds: the resident storages, the storages v reads or writes, v's least
// workspace over its implementations, and every storage allocated by a proper ancestor of v and used by a proper descendant
// of v (it must be live across v). The bound is the max over v. The ancestor/descendant part is
// exact (detail::for_each_must_live) up to `max_ops_for_reachability` ops; beyond that only the
// op-local part is used (still valid).
inline peak_lower_bound lower_bound_peak(const problem& p, std::int32_t max_ops_for_reachability = 30000) {
  if (auto* c = p.counters()) ++c->lower_bounds;
  const auto n = static_cast<std::size_t>(p.num_ops());
  peak_lower_bound lb;
  lb.bytes = p.resident_bytes();
  std::vector<std::int64_t> at(n, 0);
  for (std::size_t v = 0; v < n; ++v) {
    std::int64_t b = p.resident_bytes() + min_workspace(p, static_cast<op_id>(v));
    for (auto s : p.touched(static_cast<op_id>(v)))
      if (!p.resident(s)) b += p.storage_bytes(s);
    at[v] = b;
  }
  // Preexisting, non-resident storages (inputs freed after last use) are live from step 0 to their
  // last user: live at v whenever some user is a descendant of v (allocator = none).
  lb.uses_reachability = detail::for_each_must_live(p, max_ops_for_reachability, [&](storage_id s, std::size_t base, std::span<const std::uint64_t> mask) {
    const auto bytes = p.storage_bytes(s);
    detail::for_each_bit(base, mask, [&](op_id v) { at[static_cast<std::size_t>(v)] += bytes; });
  });
  for (std::size_t v = 0; v < n; ++v)
    if (at[v] > lb.bytes) { lb.bytes = at[v]; lb.at_op = static_cast<std::int32_t>(v); }
  return lb;
}

// A bound that no plan can beat, whatever it reorders, recomputes or offloads: while op v runs,
// the resident storages, every storage v reads or writes and v's workspace (the smallest over its
// implementations when it has alternatives) are on the device at once. The max over v.
struct op_local_floor {
  std::int64_t bytes = 0;
  op_id op = no_id;  // the first op that needs that much (no_id: the resident bytes alone)
};
inline op_local_floor op_local_bound_at(const problem& p) {
  op_local_floor best{p.resident_bytes(), no_id};
  for (op_id v = 0; v < p.num_ops(); ++v) {
    std::int64_t b = p.resident_bytes() + min_workspace(p, v);
    for (auto s : p.touched(v))
      if (!p.resident(s)) b += p.storage_bytes(s);
    if (b > best.bytes) best = {b, v};
  }
  return best;
}
inline std::int64_t op_local_bound(const problem& p) { return op_local_bound_at(p).bytes; }

}  // namespace memplan
