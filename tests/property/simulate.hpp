#pragma once
// An independent, deliberately simple simulator of memory plans, the second referee of the property
// tests (the first is memplan::verify). It shares no code with verify or the planners beyond the
// problem's accessors: it walks the steps keeping, per storage, whether it is on the device and where,
// with the address ranges in use in a map ordered by offset (a new range is checked against its two
// neighbours), and at every op step adds the op's workspace the same way and takes the peak of the
// live bytes. Returns the first problem in words, or nothing.
#include <algorithm>
#include <iterator>
#include <map>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <memplan/core/plan.hpp>
#include <memplan/core/problem.hpp>

namespace memplan::testing {

inline std::optional<std::string> simulate_plan(const problem& p, const memory_plan& mp) {
  const auto ns = static_cast<std::size_t>(p.num_storages());
  std::vector<char> on_device(ns, 0), computed(static_cast<std::size_t>(p.num_ops()), 0);
  std::vector<std::int64_t> where(ns, -1);
  std::size_t next_mat = 0;
  std::map<std::int64_t, std::int64_t> used;  // offset -> end of the address ranges in use
  std::int64_t live = 0;
  auto occupy = [&](std::int64_t off, std::int64_t bytes) -> std::optional<std::string> {
    const auto end = off + bytes;
    if (off < 0 || off % mp.alignment != 0 || off > mp.arena - bytes)
      return "range [" + std::to_string(off) + ", +" + std::to_string(bytes) + ") misplaced in arena " + std::to_string(mp.arena) +
             " (alignment " + std::to_string(mp.alignment) + ")";
    auto next = used.lower_bound(off);
    if (next != used.end() && next->first < end)
      return "ranges at " + std::to_string(off) + " and " + std::to_string(next->first) + " overlap";
    if (next != used.begin() && std::prev(next)->second > off)
      return "ranges at " + std::to_string(std::prev(next)->first) + " and " + std::to_string(off) + " overlap";
    used.emplace(off, end);
    live += bytes;
    return std::nullopt;
  };
  auto vacate = [&](std::int64_t off, std::int64_t bytes) {
    used.erase(off);
    live -= bytes;
  };
  auto take_mat = [&](std::size_t s, std::int32_t from) -> std::optional<std::string> {
    // The step's own materializations are consecutive from step.mat; preexisting ones come first.
    const auto m = static_cast<std::size_t>(from);
    if (from < 0 || m >= mp.mats.size()) return "a step creates storage " + std::to_string(s) + " with no materialization";
    if (mp.mats[m].storage != static_cast<storage_id>(s)) return "materialization " + std::to_string(m) + " is of another storage";
    where[s] = mp.mats[m].offset;
    on_device[s] = 1;
    next_mat = std::max(next_mat, m + 1);
    return occupy(where[s], p.storage_bytes(static_cast<storage_id>(s)));
  };
  // Preexisting storages: the first materializations, in storage order (the non-empty ones).
  for (std::size_t s = 0; s < ns; ++s) {
    if (!p.preexisting(static_cast<storage_id>(s))) continue;
    if (p.storage_bytes(static_cast<storage_id>(s)) == 0) { on_device[s] = 1; continue; }
    if (auto bad = take_mat(s, static_cast<std::int32_t>(next_mat))) return "initial: " + *bad;
  }
  std::int64_t peak = live;
  for (std::size_t i = 0; i < mp.steps.size(); ++i) {
    const auto& st = mp.steps[i];
    const auto at = "step " + std::to_string(i) + ": ";
    if (st.kind == step_kind::compute || st.kind == step_kind::recompute) {
      const auto o = st.id;
      if (o < 0 || o >= p.num_ops()) return at + "op out of range";
      if (st.kind == step_kind::compute) {
        if (computed[static_cast<std::size_t>(o)]) return at + "op computed twice";
        computed[static_cast<std::size_t>(o)] = 1;
      } else if (!computed[static_cast<std::size_t>(o)]) {
        return at + "recompute before compute";
      }
      for (auto t : p.inputs(o))
        if (!on_device[static_cast<std::size_t>(p.storage_of(t))]) return at + "reads '" + p.tensor_name(t) + "', not on the device";
      auto mat = st.mat;
      for (auto t : p.outputs(o)) {
        const auto s = static_cast<std::size_t>(p.storage_of(t));
        if (p.inplace_of(t) != no_id) {
          if (!on_device[s]) return at + "writes in place into a storage not on the device";
          continue;
        }
        if (on_device[s]) continue;  // a recompute of a value still there
        if (p.storage_bytes(static_cast<storage_id>(s)) == 0) { on_device[s] = 1; continue; }
        if (auto bad = take_mat(s, mat++)) return at + *bad;
      }
      // The op's workspace joins the ranges in use while it runs.
      const auto ws = st.impl < 0 ? p.workspace(o) : p.implementations(o)[static_cast<std::size_t>(st.impl)].workspace;
      if (ws > 0)
        if (auto bad = occupy(st.workspace_offset, ws)) return at + "workspace: " + *bad;
      peak = std::max(peak, live);
      if (ws > 0) vacate(st.workspace_offset, ws);
    } else {
      if (st.id < 0 || st.id >= p.num_tensors()) return at + "tensor out of range";
      const auto s = static_cast<std::size_t>(p.storage_of(st.id));
      if (st.kind == step_kind::prefetch) {
        if (on_device[s]) return at + "prefetch of a storage on the device";
        if (p.storage_bytes(static_cast<storage_id>(s)) == 0) on_device[s] = 1;
        else if (auto bad = take_mat(s, st.mat)) return at + *bad;
        peak = std::max(peak, live);
      } else {
        if (!on_device[s]) return at + "frees or offloads a storage not on the device";
        on_device[s] = 0;
        if (p.storage_bytes(static_cast<storage_id>(s)) > 0) vacate(where[s], p.storage_bytes(static_cast<storage_id>(s)));
      }
    }
  }
  for (std::size_t o = 0; o < computed.size(); ++o)
    if (!computed[o]) return "op '" + p.op_name(static_cast<op_id>(o)) + "' never computed";
  if (next_mat != mp.mats.size()) return std::to_string(mp.mats.size() - next_mat) + " materializations created by no step";
  if (peak != mp.stats.peak) return "peak " + std::to_string(peak) + " simulated, " + std::to_string(mp.stats.peak) + " claimed";
  return std::nullopt;
}

}  // namespace memplan::testing
