#pragma once
// The forward chain of a training step under a fixed order: the storages made by the forward pass,
// in the order they are produced, cut into segments where few values connect what came before to what
// comes after -- a "cut" is the set of forward values that, right after some forward op, later forward
// ops still read (Chen §4.3: the candidate stage splitting points; in a chain every layer's output, in a
// ResNet the block outputs and, inside blocks, the pair of branch and shortcut, in a stacked LSTM the
// states of every layer at a time step). Recomputation policies (Chen's segments, recursion, revolve, the chain DP) decide
// which cuts to keep; every other forward storage that the backward pass reads again is dropped after
// its last forward use and recomputed from the nearest kept cut.
#include <algorithm>
#include <cstdint>
#include <set>
#include <span>
#include <vector>

#include <memplan/base/ids.hpp>
#include <memplan/base/kinds.hpp>
#include <memplan/core/problem.hpp>

namespace memplan::remat {

struct forward_chain {
  // A cut: a point of the forward order where every forward value a later forward op still reads is
  // in `storages` (few of them): keeping those is enough to resume the forward pass from there.
  struct cut {
    std::int32_t position = 0;           // after the forward op at this position of the order
    std::vector<storage_id> storages;    // the values open there
    std::int64_t bytes = 0;
    std::int64_t produced_before = 0;    // bytes of forward values produced up to here (Alg. 3's running total)
  };
  std::vector<storage_id> produced;      // forward storages in production order (non-empty, not resident)
  std::vector<cut> cuts;                 // in order
  std::vector<std::int32_t> segment;     // per storage: its segment (the cuts recorded before it was produced), -1: not forward
  std::vector<std::vector<std::int32_t>> cuts_of;  // per storage: the cuts that hold it
  std::vector<std::int32_t> drop_point;  // per storage: the position of its last forward use when it is read again
                                         // after the forward pass (a candidate to drop), -1 otherwise
  std::vector<std::int64_t> segment_bytes;  // per segment: bytes of its forward storages
  std::vector<double> segment_cost;         // per segment: cost of its forward ops
  std::int64_t forward_bytes = 0;        // all forward storages
  bool has_phases = true;                // false: the graph gives no forward phase; every op counts as forward

  [[nodiscard]] std::int32_t segments() const { return static_cast<std::int32_t>(segment_bytes.size()); }
  [[nodiscard]] bool is_cut(storage_id s) const { return !cuts_of[static_cast<std::size_t>(s)].empty(); }
  [[nodiscard]] bool droppable(storage_id s) const { return drop_point[static_cast<std::size_t>(s)] >= 0; }
  // Is s held by a cut marked in `flags` (one per cut)?
  [[nodiscard]] bool held(storage_id s, const std::vector<std::uint8_t>& flags) const {
    for (auto k : cuts_of[static_cast<std::size_t>(s)])
      if (flags[static_cast<std::size_t>(k)]) return true;
    return false;
  }
};

// The chain of `order` (a topological order of all ops). `cost(o)` is the op cost to charge. A cut is
// recorded where the open forward values change and number at most `max_cut_storages` (one for a
// chain or a ResNet's block boundary; all layers' states for a stacked LSTM's time step).
template <class Cost>
forward_chain chain_of(const problem& p, std::span<const op_id> order, Cost&& cost, std::size_t max_cut_storages = 16) {
  forward_chain c;
  const auto n = static_cast<std::int32_t>(order.size());
  const auto ns = static_cast<std::size_t>(p.num_storages());
  c.segment.assign(ns, -1);
  c.cuts_of.assign(ns, {});
  c.drop_point.assign(ns, -1);
  bool any_forward = false;
  for (auto o : order) any_forward |= p.phase(o) == op_phase::forward;
  c.has_phases = any_forward;
  auto forward = [&](op_id o) { return !any_forward || p.phase(o) == op_phase::forward; };
  std::vector<std::vector<std::int32_t>> uses(ns);
  for (std::int32_t i = 0; i < n; ++i)
    for (auto s : p.touched(order[static_cast<std::size_t>(i)])) uses[static_cast<std::size_t>(s)].push_back(i);
  // Forward storages and where they are dropped.
  for (std::int32_t i = 0; i < n; ++i) {
    const auto o = order[static_cast<std::size_t>(i)];
    if (!forward(o)) continue;
    for (auto t : p.outputs(o)) {
      const auto s = p.storage_of(t);
      if (p.inplace_of(t) != no_id || p.storage_bytes(s) == 0 || p.resident(s) || p.live_to_end(s)) continue;
      c.produced.push_back(s);
      c.forward_bytes += p.storage_bytes(s);
    }
  }
  for (auto s : c.produced) {
    const auto& u = uses[static_cast<std::size_t>(s)];
    if (any_forward) {
      std::int32_t lf = -1;
      bool later = false;
      for (auto i : u) {
        if (forward(order[static_cast<std::size_t>(i)])) lf = std::max(lf, i);
        else later = true;
      }
      if (later && lf >= 0) c.drop_point[static_cast<std::size_t>(s)] = lf;
    } else if (u.size() >= 2) {
      // No phases: drop across the largest gap between two uses.
      std::int32_t best = -1, gap = 1;
      for (std::size_t k = 0; k + 1 < u.size(); ++k)
        if (u[k + 1] - u[k] > gap) { gap = u[k + 1] - u[k]; best = u[k]; }
      c.drop_point[static_cast<std::size_t>(s)] = best;
    }
  }
  // Cuts: the forward values still read by a later forward op, after each forward op.
  std::vector<std::int32_t> last_forward_use(ns, -1);
  for (std::size_t s = 0; s < ns; ++s)
    for (auto i : uses[s])
      if (forward(order[static_cast<std::size_t>(i)])) last_forward_use[s] = std::max(last_forward_use[s], i);
  std::vector<std::uint8_t> is_fwd(ns, 0);
  for (auto s : c.produced) is_fwd[static_cast<std::size_t>(s)] = 1;
  std::set<storage_id> open;
  std::vector<std::vector<storage_id>> closes(static_cast<std::size_t>(std::max(n, 1)));
  // Values below 1/1000 of the largest forward value (a per-step loss, statistics) do not count
  // against max_cut_storages: keeping them costs nothing.
  std::int64_t largest = 0;
  for (auto s : c.produced) largest = std::max(largest, p.storage_bytes(s));
  const auto small = largest / 1000;
  std::size_t open_large = 0;
  std::int32_t seg = 0;
  std::int64_t seg_bytes = 0, produced_bytes = 0;
  double seg_cost = 0;
  bool changed = false;
  for (std::int32_t i = 0; i < n; ++i) {
    const auto o = order[static_cast<std::size_t>(i)];
    if (!forward(o)) continue;
    seg_cost += cost(o);
    for (auto t : p.outputs(o)) {
      const auto s = p.storage_of(t);
      const auto su = static_cast<std::size_t>(s);
      if (!is_fwd[su] || c.segment[su] >= 0) continue;
      c.segment[su] = seg;
      seg_bytes += p.storage_bytes(s);
      produced_bytes += p.storage_bytes(s);
      if (last_forward_use[su] > i) {
        open.insert(s);
        open_large += p.storage_bytes(s) > small ? 1 : 0;
        changed = true;
      }
      if (last_forward_use[su] > i) closes[static_cast<std::size_t>(last_forward_use[su])].push_back(s);
    }
    for (auto s : closes[static_cast<std::size_t>(i)])
      if (open.erase(s) > 0) {
        changed = true;
        open_large -= p.storage_bytes(s) > small ? 1 : 0;
      }
    if (changed && !open.empty() && open_large <= max_cut_storages) {
      forward_chain::cut k;
      k.position = i;
      k.storages.assign(open.begin(), open.end());
      for (auto s : k.storages) {
        k.bytes += p.storage_bytes(s);
        c.cuts_of[static_cast<std::size_t>(s)].push_back(static_cast<std::int32_t>(c.cuts.size()));
      }
      k.produced_before = produced_bytes;
      c.cuts.push_back(std::move(k));
      c.segment_bytes.push_back(seg_bytes);
      c.segment_cost.push_back(seg_cost);
      seg_bytes = 0;
      seg_cost = 0;
      ++seg;
      changed = false;
    }
  }
  c.segment_bytes.push_back(seg_bytes);
  c.segment_cost.push_back(seg_cost);
  return c;
}

}  // namespace memplan::remat
