#pragma once
// A replaying resource straight from a memory plan: a framework that allocates one buffer per tensor
// (and one per op workspace) while it walks the plan's order gets memplan's offsets without adopting
// the executor (runtime/executor.hpp). MemoMalloc §3.3 does the same from TorchScript's IR: the plan
// decides the offset, the operator's own allocation call receives it.
//
// The allocation sequence the plan implies, per step of the plan:
//   compute / recompute op:  allocate each storage it creates (problem::outputs order; in-place and empty
//                            outputs allocate nothing), then its workspace; the op runs; free the
//                            workspace, then every materialization whose last use was this op (by index);
//   prefetch:                allocate the storage it brings back;
//   free / offload:          nothing (the storage was freed after its last op).
// Storages on the device before the first step (weights, inputs, optimizer state) are the framework's
// and are not allocated; materializations still on the device after the last step (outputs, updated
// state) escape and are left to the upstream resource. Frees may come in any order as long as each
// happens before the next allocation (replay.hpp).
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/core/buffer.hpp>
#include <memplan/core/plan.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/runtime/replay.hpp>
#include <memplan/runtime/trace.hpp>

namespace memplan::runtime {

// The allocations a framework makes when it runs a placed timeline, with the timeline's offsets.
struct plan_allocations {
  allocation_trace trace;                  // sizes, alignments, lifetimes in events, tags (tensor or "<op>.workspace")
  std::vector<std::int64_t> offsets;       // per allocation: the plan's offset, -1 for escaping ones
  std::vector<std::int32_t> mat;           // per allocation: the materialization, or no_id for a workspace
  std::vector<std::int32_t> step;          // per allocation: the plan step that allocates it
};

inline plan_allocations allocations_of(const problem& p, const timeline& tl) {
  plan_allocations out;
  auto& tr = out.trace;
  const auto alignment = tl.alignment > 0 ? tl.alignment : 1;
  const auto final_ = final_mats(p, tl);
  std::vector<std::uint8_t> escapes(tl.mats.size(), 0);
  for (auto m : final_)
    if (m != no_id) escapes[static_cast<std::size_t>(m)] = 1;
  auto on_device = initially_on_device(p);
  std::vector<std::int32_t> alloc_of_mat(tl.mats.size(), -1);
  std::vector<std::int32_t> pending;  // allocated materializations not freed yet (and not escaping)
  auto allocate = [&](std::int64_t size, std::int64_t offset, std::int32_t mat, std::int32_t step, std::string tag) {
    const auto id = static_cast<std::int32_t>(tr.allocations.size());
    tr.allocations.push_back({size, alignment, tr.events++, never_freed, std::move(tag), static_cast<std::int32_t>(tr.scopes.size()) - 1, -1});
    out.offsets.push_back(offset);
    out.mat.push_back(mat);
    out.step.push_back(step);
    return id;
  };
  std::int32_t tick = 0;
  for (std::size_t si = 0; si < tl.steps.size(); ++si) {
    const auto& st = tl.steps[si];
    const auto step = static_cast<std::int32_t>(si);
    std::int32_t next = st.mat;
    if (runs_op(st.kind)) tr.scopes.push_back(p.op_name(st.op()));  // each op step is one scope
    step_creations(p, st, on_device, [&](storage_id s, tensor_id t) {
      const auto m = next++;
      const auto& mm = tl.mats[static_cast<std::size_t>(m)];
      const bool esc = escapes[static_cast<std::size_t>(m)] != 0;
      alloc_of_mat[static_cast<std::size_t>(m)] = allocate(p.storage_bytes(s), esc ? -1 : mm.offset, m, step, p.tensor_name(t));
      if (!esc) pending.push_back(m);
    });
    if (!runs_op(st.kind)) continue;
    const auto ws = step_workspace(p, st);
    if (ws > 0) {
      const auto w = allocate(ws, st.workspace_offset, no_id, step, p.op_name(st.op()) + ".workspace");
      tr.allocations[static_cast<std::size_t>(w)].end = tr.events++;
      tr.allocations[static_cast<std::size_t>(w)].free_scope = static_cast<std::int32_t>(tr.scopes.size()) - 1;
    }
    // Free what this op used last (materializations whose last tick is this one, or earlier for an
    // output nothing reads), lowest index first.
    std::sort(pending.begin(), pending.end());
    std::erase_if(pending, [&](std::int32_t m) {
      if (tl.mats[static_cast<std::size_t>(m)].last > tick) return false;
      auto& r = tr.allocations[static_cast<std::size_t>(alloc_of_mat[static_cast<std::size_t>(m)])];
      r.end = tr.events++;
      r.free_scope = static_cast<std::int32_t>(tr.scopes.size()) - 1;
      return true;
    });
    ++tick;
  }
  if (!pending.empty())
    throw error(errc::invalid_plan, "plan replay: materialization " + std::to_string(pending.front()) +
                                        " outlives the last op but is not on the device at the end");
  return out;
}

// The replay plan of a placed timeline (a memory_plan): the slab is the plan's arena, the i-th
// allocation of allocations_of(p, plan) is served at the plan's offset. The offsets are checked by the
// buffer referee against the event lifetimes before the plan is returned.
inline replay_plan replay_plan_of(const problem& p, const timeline& plan) {
  if (!plan.placed()) throw error(errc::invalid_argument, "plan replay: the plan is not placed");
  const auto pa = allocations_of(p, plan);
  const auto tp = to_buffer_problem(pa.trace, plan.alignment > 0 ? plan.alignment : 1);
  buffer_placement pl;
  pl.placer = "memory_plan";
  pl.offsets.reserve(tp.allocation.size());
  for (auto a : tp.allocation) {
    const auto off = pa.offsets[static_cast<std::size_t>(a)];
    pl.offsets.push_back(off);
    pl.arena = std::max(pl.arena, off + pa.trace.allocations[static_cast<std::size_t>(a)].size);
  }
  auto rp = make_replay_plan(pa.trace, tp, pl);
  rp.arena = std::max(rp.arena, plan.arena);  // the slab is the whole arena (resident storages included)
  return rp;
}

}  // namespace memplan::runtime
