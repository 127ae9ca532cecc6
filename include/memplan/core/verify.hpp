#pragma once
// memplan::verify: the one referee. It re-derives every invariant of a memory_plan from the steps
// alone (it does not trust lifetimes, schedules or stats computed elsewhere) and reports the first
// violation precisely: step, op, tensor, offsets.
//
// Invariants: every op computed exactly once, after all its predecessors; every tensor an op reads
// is resident on the device and still holds that tensor's value (not freed, not offloaded, not
// overwritten in place); recomputed values derive from resident inputs; offloaded tensors are back
// before use; resident and output storages are on the device at the end; no two live storages (or
// a live storage and the running op's workspace) overlap in the arena; offsets aligned and inside
// the arena; tensors of one storage share one offset; the claimed peak, arena and transfer/recompute
// figures equal the re-derived ones; the claimed lower bound does not exceed the peak.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <memplan/core/error.hpp>
#include <memplan/core/plan.hpp>
#include <memplan/core/problem.hpp>

namespace memplan {

struct verify_result {
  bool ok = true;
  std::string violation;    // the first violation, in words
  std::int32_t step = -1;   // index into plan.steps, -1 when not about one step
  explicit operator bool() const noexcept { return ok; }
};

inline verify_result verify(const problem& p, const memory_plan& plan) {
  const auto nt = static_cast<std::size_t>(p.num_tensors());
  const auto no = static_cast<std::size_t>(p.num_ops());
  const auto ns = static_cast<std::size_t>(p.num_storages());
  auto fail = [](std::string msg, std::int32_t step = -1) { return verify_result{false, std::move(msg), step}; };
  auto at_step = [&](std::size_t i) {
    const auto& s = plan.steps[i];
    std::string w = "step " + std::to_string(i) + " (" + std::string(to_string(s.kind)) + " ";
    if (s.kind == step_kind::compute || s.kind == step_kind::recompute)
      w += (s.id >= 0 && static_cast<std::size_t>(s.id) < no) ? "'" + p.op_name(s.id) + "'" : std::to_string(s.id);
    else
      w += (s.id >= 0 && static_cast<std::size_t>(s.id) < nt) ? "'" + p.tensor_name(s.id) + "'" : std::to_string(s.id);
    return w + "): ";
  };

  // ---- static checks: offsets, alignment, arena ----
  if (plan.offsets.size() != nt)
    return fail("plan has " + std::to_string(plan.offsets.size()) + " tensor offsets for " + std::to_string(nt) + " tensors");
  if (plan.workspace_offsets.size() != no)
    return fail("plan has " + std::to_string(plan.workspace_offsets.size()) + " workspace offsets for " + std::to_string(no) + " ops");
  if (plan.alignment <= 0 || (plan.alignment & (plan.alignment - 1)) != 0)
    return fail("plan alignment " + std::to_string(plan.alignment) + " is not a power of two");
  if (plan.arena < 0) return fail("negative arena size");
  std::vector<std::int64_t> soff(ns, -1);
  for (std::size_t t = 0; t < nt; ++t) {
    const auto s = static_cast<std::size_t>(p.storage_of(static_cast<tensor_id>(t)));
    const auto bytes = p.storage_bytes(static_cast<storage_id>(s));
    if (bytes == 0) continue;
    const auto off = plan.offsets[t];
    const auto tn = "tensor '" + p.tensor_name(static_cast<tensor_id>(t)) + "'";
    if (off < 0) return fail(tn + " has negative offset " + std::to_string(off));
    if (off % plan.alignment != 0)
      return fail(tn + " at offset " + std::to_string(off) + " is not aligned to " + std::to_string(plan.alignment));
    if (off > plan.arena - bytes)
      return fail(tn + " at [" + std::to_string(off) + ", " + std::to_string(off + bytes) + ") lies outside the arena of " +
                  std::to_string(plan.arena) + " bytes");
    if (soff[s] >= 0 && soff[s] != off)
      return fail(tn + " shares storage with '" + p.tensor_name(p.storage_root(static_cast<storage_id>(s))) + "' but has offset " +
                  std::to_string(off) + " instead of " + std::to_string(soff[s]));
    soff[s] = off;
  }
  for (std::size_t o = 0; o < no; ++o) {
    const auto ws = p.workspace(static_cast<op_id>(o));
    const auto off = plan.workspace_offsets[o];
    if (ws == 0) continue;
    const auto on = "workspace of op '" + p.op_name(static_cast<op_id>(o)) + "'";
    if (off < 0) return fail(on + " (" + std::to_string(ws) + " bytes) has no offset");
    if (off % plan.alignment != 0) return fail(on + " at " + std::to_string(off) + " is not aligned to " + std::to_string(plan.alignment));
    if (off > plan.arena - ws)
      return fail(on + " at [" + std::to_string(off) + ", " + std::to_string(off + ws) + ") lies outside the arena of " +
                  std::to_string(plan.arena) + " bytes");
  }

  // ---- replay ----
  enum : std::uint8_t { absent = 0, live = 1, on_host = 2, freed = 3 };
  std::vector<std::uint8_t> state(ns, absent);
  std::vector<tensor_id> holds(ns, no_id), host_holds(ns, no_id);
  std::vector<std::int32_t> computed_at(no, -1);
  std::vector<std::int32_t> gone_at(ns, -1);
  // Live address ranges, kept pairwise disjoint: (offset, key) with key = storage or ns + op for workspaces.
  std::set<std::pair<std::int64_t, std::size_t>> ranges;
  auto range_bytes = [&](std::size_t key) {
    return key < ns ? p.storage_bytes(static_cast<storage_id>(key)) : p.workspace(static_cast<op_id>(key - ns));
  };
  auto range_name = [&](std::size_t key) {
    return key < ns ? "tensor '" + p.tensor_name(holds[key] != no_id ? holds[key] : p.storage_root(static_cast<storage_id>(key))) + "'"
                    : "workspace of '" + p.op_name(static_cast<op_id>(key - ns)) + "'";
  };
  std::int64_t live_bytes = 0;
  auto occupy = [&](std::size_t key, std::int64_t off) -> std::optional<std::string> {
    const auto bytes = range_bytes(key);
    if (bytes == 0) return std::nullopt;
    const auto end = off + bytes;
    auto it = ranges.lower_bound({off, 0});
    if (it != ranges.end() && it->first < end)
      return range_name(key) + " at [" + std::to_string(off) + ", " + std::to_string(end) + ") overlaps live " + range_name(it->second) +
             " at [" + std::to_string(it->first) + ", " + std::to_string(it->first + range_bytes(it->second)) + ")";
    if (it != ranges.begin()) {
      auto pv = std::prev(it);
      if (pv->first + range_bytes(pv->second) > off)
        return range_name(key) + " at [" + std::to_string(off) + ", " + std::to_string(end) + ") overlaps live " + range_name(pv->second) +
               " at [" + std::to_string(pv->first) + ", " + std::to_string(pv->first + range_bytes(pv->second)) + ")";
    }
    ranges.insert({off, key});
    live_bytes += bytes;
    return std::nullopt;
  };
  auto release = [&](std::size_t key, std::int64_t off) {
    if (range_bytes(key) == 0) return;
    ranges.erase({off, key});
    live_bytes -= range_bytes(key);
  };
  for (std::size_t s = 0; s < ns; ++s)
    if (p.preexisting(static_cast<storage_id>(s))) {
      state[s] = live;
      holds[s] = p.storage_root(static_cast<storage_id>(s));
      if (auto bad = occupy(s, soff[s] < 0 ? 0 : soff[s])) return fail("before the first step: " + *bad);
    }
  std::int64_t peak = live_bytes;
  std::int64_t transfer = 0;
  double recompute_cost = 0.0;

  auto why_not_readable = [&](tensor_id t) -> std::optional<std::string> {
    const auto s = static_cast<std::size_t>(p.storage_of(t));
    const auto tn = "tensor '" + p.tensor_name(t) + "'";
    switch (state[s]) {
      case absent: return tn + " has not been produced yet";
      case on_host: return tn + " is offloaded to the host and was not prefetched";
      case freed: return tn + " was freed at step " + std::to_string(gone_at[s]);
      default: break;
    }
    if (holds[s] != t) return tn + " was overwritten in place by '" + p.tensor_name(holds[s]) + "'";
    return std::nullopt;
  };

  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const auto& st = plan.steps[i];
    const auto si = static_cast<std::int32_t>(i);
    if (st.kind == step_kind::compute || st.kind == step_kind::recompute) {
      if (st.id < 0 || static_cast<std::size_t>(st.id) >= no) return fail(at_step(i) + "op id out of range", si);
      const auto o = st.id;
      const auto ou = static_cast<std::size_t>(o);
      if (st.kind == step_kind::compute) {
        if (computed_at[ou] >= 0) return fail(at_step(i) + "op already computed at step " + std::to_string(computed_at[ou]), si);
        for (auto q : p.preds(o))
          if (computed_at[static_cast<std::size_t>(q)] < 0)
            return fail(at_step(i) + "runs before its predecessor '" + p.op_name(q) + "'", si);
      } else {
        if (computed_at[ou] < 0) return fail(at_step(i) + "recomputes an op that was never computed", si);
        recompute_cost += p.cost(o);
      }
      for (auto t : p.inputs(o))
        if (auto bad = why_not_readable(t)) return fail(at_step(i) + "reads " + *bad, si);
      for (auto t : p.outputs(o)) {
        const auto s = static_cast<std::size_t>(p.storage_of(t));
        if (p.inplace_of(t) != no_id) {
          if (st.kind == step_kind::recompute)
            return fail(at_step(i) + "recomputes an in-place op (writes '" + p.tensor_name(t) + "' into '" +
                            p.tensor_name(p.inplace_of(t)) + "')", si);
          if (auto bad = why_not_readable(p.inplace_of(t))) return fail(at_step(i) + "writes in place into " + *bad, si);
          holds[s] = t;
          continue;
        }
        if (state[s] == live) return fail(at_step(i) + "produces '" + p.tensor_name(t) + "' whose storage is already live", si);
        if (st.kind == step_kind::compute && state[s] != absent)
          return fail(at_step(i) + "produces '" + p.tensor_name(t) + "' twice", si);
        if (auto bad = occupy(s, soff[s] < 0 ? 0 : soff[s])) return fail(at_step(i) + *bad, si);
        state[s] = live;
        holds[s] = t;
      }
      const auto ws_key = ns + ou;
      if (p.workspace(o) > 0)
        if (auto bad = occupy(ws_key, plan.workspace_offsets[ou])) return fail(at_step(i) + *bad, si);
      peak = std::max(peak, live_bytes);
      if (p.workspace(o) > 0) release(ws_key, plan.workspace_offsets[ou]);
      if (st.kind == step_kind::compute) computed_at[ou] = si;
      continue;
    }
    if (st.id < 0 || static_cast<std::size_t>(st.id) >= nt) return fail(at_step(i) + "tensor id out of range", si);
    const auto t = st.id;
    const auto s = static_cast<std::size_t>(p.storage_of(t));
    const auto off = soff[s] < 0 ? 0 : soff[s];
    switch (st.kind) {
      case step_kind::free:
        if (p.resident(static_cast<storage_id>(s))) return fail(at_step(i) + "frees a resident tensor (inputs, weights, optimizer state stay)", si);
        if (p.live_to_end(static_cast<storage_id>(s))) return fail(at_step(i) + "frees a storage that holds an output", si);
        if (state[s] != live) return fail(at_step(i) + "frees a storage that is not live", si);
        release(s, off);
        state[s] = freed;
        gone_at[s] = si;
        break;
      case step_kind::offload:
        if (auto bad = why_not_readable(t)) return fail(at_step(i) + "offloads " + *bad, si);
        release(s, off);
        state[s] = on_host;
        host_holds[s] = t;
        gone_at[s] = si;
        transfer += p.storage_bytes(static_cast<storage_id>(s));
        break;
      case step_kind::prefetch:
        if (state[s] != on_host || host_holds[s] != t)
          return fail(at_step(i) + "prefetches tensor '" + p.tensor_name(t) + "' that is not on the host", si);
        if (auto bad = occupy(s, off)) return fail(at_step(i) + *bad, si);
        state[s] = live;
        holds[s] = t;
        transfer += p.storage_bytes(static_cast<storage_id>(s));
        peak = std::max(peak, live_bytes);
        break;
      default: break;
    }
  }
  for (std::size_t o = 0; o < no; ++o)
    if (computed_at[o] < 0) return fail("op '" + p.op_name(static_cast<op_id>(o)) + "' is never computed");
  for (std::size_t s = 0; s < ns; ++s) {
    const auto sid = static_cast<storage_id>(s);
    if ((p.resident(sid) || p.live_to_end(sid)) && state[s] != live && p.storage_bytes(sid) > 0)
      return fail("tensor '" + p.tensor_name(p.storage_root(sid)) + "' must be on the device at the end (resident or output) but is not");
  }
  peak = std::max(peak, p.resident_bytes());
  const auto& st = plan.stats;
  if (st.peak != peak) return fail("plan claims a peak of " + std::to_string(st.peak) + " bytes, the steps give " + std::to_string(peak));
  if (st.arena != plan.arena) return fail("stats claim an arena of " + std::to_string(st.arena) + " bytes, the plan has " + std::to_string(plan.arena));
  if (st.lower_bound > peak)
    return fail("plan claims a lower bound of " + std::to_string(st.lower_bound) + " bytes above its own peak " + std::to_string(peak));
  if (st.transfer_bytes != transfer)
    return fail("plan claims " + std::to_string(st.transfer_bytes) + " transfer bytes, the steps move " + std::to_string(transfer));
  if (st.recompute_cost != recompute_cost)
    return fail("plan claims a recompute cost of " + std::to_string(st.recompute_cost) + ", the steps give " + std::to_string(recompute_cost));
  return {};
}

// Throws memplan::error(errc::invalid_plan) with the violation when the plan is not valid.
inline void verify_or_throw(const problem& p, const memory_plan& plan) {
  if (auto r = verify(p, plan); !r) throw error(errc::invalid_plan, "invalid plan: " + r.violation);
}

}  // namespace memplan
