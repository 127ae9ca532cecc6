#pragma once
// The step timeline: the currency between the stages of a pipeline (scheduler -> checkpointer ->
// offloader -> placer) and, once placed, the body of every memory_plan.
//
//  * steps: compute / recompute an op (with the implementation chosen for it and, when it needs one,
//    its workspace's offset), offload / prefetch a storage, free a storage.
//  * materializations: one per time a storage's value exists on the device. A storage that is
//    computed, freed and recomputed has two; each has its own lifetime and its own offset, and the
//    placer sees each as a separate buffer. The first ones are the preexisting storages (inputs,
//    weights, optimizer state), in storage order; every other one is created by a step (step::mat).
//  * the memory profile: live bytes while each op step (a "tick") runs, and the peak.
//
// The scheduler builds a timeline from its order (make_timeline); later stages edit steps and call
// derive() to refresh lifetimes and the profile; the placer turns materializations and workspaces into
// a buffer_problem (to_buffers) and writes the offsets back (apply_placement).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/base/ids.hpp>
#include <memplan/base/kinds.hpp>
#include <memplan/core/analysis.hpp>
#include <memplan/core/buffer.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/timing.hpp>

namespace memplan {

struct step {
  step_kind kind = step_kind::compute;
  std::int32_t id = 0;                 // the op (compute, recompute) or the tensor (offload, prefetch, free)
  std::int32_t impl = -1;              // compute/recompute: index into problem::implementations(op); -1: the op's own
  std::int32_t mat = no_id;            // compute/recompute: the first materialization it creates (one per output
                                       // storage it allocates, in output order); prefetch: the one it creates
  std::int64_t workspace_offset = -1;  // compute/recompute with a workspace: where it lies in the arena
  double begin = 0.0, end = 0.0;       // seconds, when the plan is timed (transfers: on the copy engine)

  [[nodiscard]] op_id op() const noexcept { return id; }
  [[nodiscard]] tensor_id tensor() const noexcept { return id; }
  friend bool operator==(const step&, const step&) = default;
};

struct materialization {
  storage_id storage = no_id;
  std::int64_t offset = -1;  // in the arena; -1 until placed
  std::int32_t first = 0;    // first tick (op step) it occupies the device, inclusive   (derived)
  std::int32_t last = -1;    // last tick it occupies the device, inclusive              (derived)
  friend bool operator==(const materialization&, const materialization&) = default;
};

// What a stage did: shown in the report and the plan's notes.
struct stage_record {
  stage_kind kind = stage_kind::scheduler;
  std::string name;
  double seconds = 0.0;
  std::string note;
};

// Another order a scheduler found, left for the stage after it to choose from (timeline::alternatives).
struct order_alternative {
  std::string policy;  // the scheduler rule that produced it ("given": the graph's own order)
  std::vector<op_id> order;
  friend bool operator==(const order_alternative&, const order_alternative&) = default;
};

struct timeline {
  std::vector<step> steps;
  std::vector<materialization> mats;

  // ---- derived from steps and mats (derive) ----
  std::vector<std::int64_t> live;  // live bytes while each op step runs, its workspace included
  std::int64_t peak = 0;           // max of live (at least the resident bytes)
  std::int32_t peak_tick = -1;     // first tick reaching it (-1: no op steps)

  // ---- placement (the placer) ----
  std::int64_t arena = -1;  // -1: not placed yet
  std::int64_t alignment = 1;

  // ---- evidence, claimed by the stages ----
  std::int64_t order_lower_bound = 0;  // the scheduler's bound on the peak of any order
  bool order_optimal = false;          // the scheduler proved its order's peak minimal
  std::int64_t arena_lower_bound = 0;  // the placer's bound on the arena for these lifetimes
  bool arena_optimal = false;          // the placer proved its arena minimal
  double makespan = 0.0;               // seconds, when timed

  // ---- time (offloaders): step::begin/end hold the no-wait schedule, checked by verify ----
  bool timed = false;                  // steps carry begin/end under `timing`
  device_timing timing{};              // the device model the times were computed with
  std::int64_t host_peak = 0;          // most bytes held in host memory at once (offloaded values)
  double compute_time = 0.0;           // seconds of the op steps alone (the makespan without a memory limit)
  double makespan_lower_bound = 0.0;   // the offloader's bound on the makespan of any plan it could make
  std::vector<stage_record> stages;    // in the order they ran
  // Other orders the scheduler leaves to the checkpointer when the memory target is below every
  // order's peak: the peak then decides nothing, and which order recomputes least shows only by
  // recomputing (remat::best_solver_free tries them; schedule::default_scheduler fills them). The
  // stage that uses them clears them.
  std::vector<order_alternative> alternatives;

  [[nodiscard]] bool placed() const noexcept { return arena >= 0; }
  [[nodiscard]] std::int32_t ticks() const noexcept { return static_cast<std::int32_t>(live.size()); }
  [[nodiscard]] bool empty() const noexcept { return steps.empty(); }
  // Whether any step recomputes, offloads or prefetches (a checkpointer or offloader changed the
  // timeline): anything but compute and free steps.
  [[nodiscard]] bool has_recompute_or_transfer_steps() const noexcept {
    for (const auto& s : steps)
      if (s.kind != step_kind::compute && s.kind != step_kind::free) return true;
    return false;
  }

  // The ops in the order their compute steps appear.
  [[nodiscard]] std::vector<op_id> order() const {
    std::vector<op_id> o;
    for (const auto& s : steps)
      if (s.kind == step_kind::compute) o.push_back(s.id);
    return o;
  }
};

// ---- per-step facts ----------------------------------------------------------------------------------

// Workspace bytes of op o on implementation impl (-1: its own).
inline std::int64_t impl_workspace(const problem& p, op_id o, std::int32_t impl) {
  return impl < 0 ? p.workspace(o) : p.implementations(o)[static_cast<std::size_t>(impl)].workspace;
}

// Workspace bytes and cost of an op step under its chosen implementation.
inline std::int64_t step_workspace(const problem& p, const step& s) { return runs_op(s.kind) ? impl_workspace(p, s.id, s.impl) : 0; }
inline double step_cost(const problem& p, const step& s) {
  if (!runs_op(s.kind)) return 0.0;
  if (s.impl < 0) return p.cost(s.id);
  return p.implementations(s.id)[static_cast<std::size_t>(s.impl)].cost;
}

// The implementation of each op's compute step, by op (-1: its own, or the op has no compute step).
inline std::vector<std::int32_t> compute_impls(const problem& p, const timeline& tl) {
  std::vector<std::int32_t> impl(static_cast<std::size_t>(p.num_ops()), -1);
  for (const auto& s : tl.steps)
    if (s.kind == step_kind::compute) impl[static_cast<std::size_t>(s.op())] = s.impl;
  return impl;
}

// Non-empty storages whose first materialization exists before the first step, in storage order.
inline std::vector<storage_id> initial_storages(const problem& p) {
  std::vector<storage_id> v;
  for (storage_id s = 0; s < p.num_storages(); ++s)
    if (p.preexisting(s) && p.storage_bytes(s) > 0) v.push_back(s);
  return v;
}

// The storages step `st` materializes on the device, in order, given which storages are on the device
// before it (`on_device`, one flag per storage, updated): an op step materializes each output storage
// that is non-empty, not written in place and not already there (a recompute leaves a live output as it
// is); a prefetch materializes its storage; free and offload take theirs off the device. Calls
// f(storage, tensor) for each materialization.
template <class F>
void step_creations(const problem& p, const step& st, std::vector<std::uint8_t>& on_device, F&& f) {
  if (runs_op(st.kind)) {
    for (auto t : p.outputs(st.id)) {
      const auto s = p.storage_of(t);
      if (p.inplace_of(t) != no_id || p.storage_bytes(s) == 0 || on_device[static_cast<std::size_t>(s)]) continue;
      on_device[static_cast<std::size_t>(s)] = 1;
      f(s, t);
    }
    return;
  }
  const auto s = p.storage_of(st.id);
  if (st.kind == step_kind::prefetch) {
    if (p.storage_bytes(s) == 0) return;
    on_device[static_cast<std::size_t>(s)] = 1;
    f(s, st.tensor());
  } else {
    on_device[static_cast<std::size_t>(s)] = 0;
  }
}

// Flags of the storages on the device before the first step: the non-empty preexisting ones.
// (`initial`: initial_storages(p), where the caller has it already.)
inline std::vector<std::uint8_t> initially_on_device(const problem& p, std::span<const storage_id> initial) {
  std::vector<std::uint8_t> on(static_cast<std::size_t>(p.num_storages()), 0);
  for (auto s : initial) on[static_cast<std::size_t>(s)] = 1;
  return on;
}
inline std::vector<std::uint8_t> initially_on_device(const problem& p) { return initially_on_device(p, initial_storages(p)); }

// ---- building and deriving ---------------------------------------------------------------------------

namespace detail {
// The profile of a timeline whose materializations have their ticks: difference array over ticks.
inline void derive_profile(const problem& p, timeline& tl, std::span<const std::int32_t> tick_step) {
  const auto n = tick_step.size();
  std::vector<std::int64_t> diff(n + 1, 0);
  for (const auto& m : tl.mats) {
    const auto b = p.storage_bytes(m.storage);
    if (b == 0 || m.last < m.first || n == 0) continue;
    diff[static_cast<std::size_t>(m.first)] += b;
    diff[static_cast<std::size_t>(m.last) + 1] -= b;
  }
  tl.live.assign(n, 0);
  tl.peak_tick = -1;
  std::int64_t cur = 0;
  for (std::size_t k = 0; k < n; ++k) {
    cur += diff[k];
    tl.live[k] = cur + step_workspace(p, tl.steps[static_cast<std::size_t>(tick_step[k])]);
    if (tl.peak_tick < 0 || tl.live[k] > tl.live[static_cast<std::size_t>(tl.peak_tick)]) tl.peak_tick = static_cast<std::int32_t>(k);
  }
  tl.peak = std::max(p.resident_bytes(), tl.peak_tick < 0 ? std::int64_t{0} : tl.live[static_cast<std::size_t>(tl.peak_tick)]);
}

// make_timeline for an order the caller has already checked (core/stage.hpp's scheduler_timeline
// checks the scheduler's order with its own error): the order is not checked a second time.
inline timeline timeline_of_topological(const problem& p, std::span<const op_id> order) {
  if (auto* c = p.counters()) ++c->timelines;
  timeline tl;
  const auto lt = storage_lifetimes(p, order);
  const auto n = order.size();
  std::vector<std::vector<storage_id>> frees(n);
  std::vector<std::int32_t> first_mat(static_cast<std::size_t>(p.num_storages()), no_id);
  for (auto s : initial_storages(p)) {
    first_mat[static_cast<std::size_t>(s)] = static_cast<std::int32_t>(tl.mats.size());
    const auto& l = lt[static_cast<std::size_t>(s)];
    tl.mats.push_back({s, -1, l.first, l.last});
  }
  for (storage_id s = 0; s < p.num_storages(); ++s) {
    const auto& l = lt[static_cast<std::size_t>(s)];
    if (!l.live() || p.resident(s) || p.live_to_end(s)) continue;
    frees[static_cast<std::size_t>(l.last)].push_back(s);
  }
  tl.steps.reserve(2 * n);
  std::vector<std::int32_t> tick_step(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto o = order[i];
    step st{step_kind::compute, o};
    for (auto t : p.outputs(o)) {
      const auto s = p.storage_of(t);
      if (p.inplace_of(t) != no_id || p.storage_bytes(s) == 0) continue;
      if (st.mat == no_id) st.mat = static_cast<std::int32_t>(tl.mats.size());
      const auto& l = lt[static_cast<std::size_t>(s)];
      tl.mats.push_back({s, -1, l.first, l.last});
    }
    tick_step[i] = static_cast<std::int32_t>(tl.steps.size());
    tl.steps.push_back(st);
    for (auto s : frees[i]) tl.steps.push_back({step_kind::free, p.storage_root(s)});
  }
  detail::derive_profile(p, tl, tick_step);
  return tl;
}
}  // namespace detail

// The timeline of a topological order: compute steps, each storage freed right after the step of its
// last use (resident and output storages stay), one materialization per non-empty storage, and the
// profile -- all from one pass over the storage lifetimes. Throws errc::invalid_argument naming the
// first violation when `order` is not a topological order.
inline timeline make_timeline(const problem& p, std::span<const op_id> order) {
  if (auto bad = check_topological(p, order)) throw error(errc::invalid_argument, "not a topological order: " + *bad);
  return detail::timeline_of_topological(p, order);
}

// The timeline of the graph's given order (errc::invalid_graph naming the op when it does not run).
inline timeline given_timeline(const problem& p) {
  const auto g = given_order(p);
  if (auto bad = check_topological(p, g))
    throw error(errc::invalid_graph, "the given order of '" + p.name() + "' is not executable: " + *bad);
  return make_timeline(p, g);
}

// Re-derives the lifetimes of every materialization and the profile from the steps, after a stage
// edited them. A materialization occupies the device from the tick of the first op step at or after
// the step that creates it to the last op step before the step that frees or offloads it (to the last
// tick for resident and output storages still on the device at the end). Assumes the step/mat links
// are consistent (verify is the referee); throws errc::invalid_plan on links it cannot follow.
// (`initial`: initial_storages(p); relink passes the list it made, which it needs too.)
inline void derive(const problem& p, timeline& tl, std::span<const storage_id> initial) {
  if (auto* c = p.counters()) ++c->timelines;
  const auto ns = static_cast<std::size_t>(p.num_storages());
  std::vector<std::int32_t> cur(ns, no_id);  // current materialization of each storage on the device
  std::vector<std::int32_t> tick_step;
  tick_step.reserve(tl.steps.size());
  const auto bad = [&](std::size_t i, const std::string& why) {
    return error(errc::invalid_plan, "timeline step " + std::to_string(i) + ": " + why);
  };
  if (tl.mats.size() < initial.size()) throw bad(0, "fewer materializations than preexisting storages");
  for (std::size_t k = 0; k < initial.size(); ++k) {
    auto& m = tl.mats[k];
    if (m.storage != initial[k]) throw bad(0, "materialization " + std::to_string(k) + " is not the preexisting storage it should be");
    m.first = 0;
    m.last = -1;
    cur[static_cast<std::size_t>(m.storage)] = static_cast<std::int32_t>(k);
  }
  std::int32_t tick = 0;
  auto on_device = initially_on_device(p, initial);
  for (std::size_t i = 0; i < tl.steps.size(); ++i) {
    const auto& st = tl.steps[i];
    std::int32_t next = st.mat;
    step_creations(p, st, on_device, [&](storage_id s, tensor_id) {
      const auto m = next++;
      if (m < 0 || static_cast<std::size_t>(m) >= tl.mats.size() || tl.mats[static_cast<std::size_t>(m)].storage != s)
        throw bad(i, "materialization " + std::to_string(m) + " does not belong to storage of '" + p.tensor_name(p.storage_root(s)) + "'");
      auto& mm = tl.mats[static_cast<std::size_t>(m)];
      mm.first = tick;
      mm.last = tick - 1;
      cur[static_cast<std::size_t>(s)] = m;
    });
    if (runs_op(st.kind)) {
      for (auto s : p.touched(st.id)) {
        const auto m = cur[static_cast<std::size_t>(s)];
        if (m >= 0) tl.mats[static_cast<std::size_t>(m)].last = tick;
      }
      tick_step.push_back(static_cast<std::int32_t>(i));
      ++tick;
    } else if (st.kind != step_kind::prefetch) {
      // Held until this free or offload: through the op step before it.
      auto& c = cur[static_cast<std::size_t>(p.storage_of(st.id))];
      if (c >= 0) {
        auto& mm = tl.mats[static_cast<std::size_t>(c)];
        mm.last = std::max(mm.last, tick - 1);
      }
      c = no_id;
    }
  }
  const auto last_tick = std::max(0, tick - 1);
  for (std::size_t s = 0; s < ns; ++s) {
    const auto m = cur[s];
    if (m < 0) continue;
    const auto sid = static_cast<storage_id>(s);
    if (p.resident(sid) || p.live_to_end(sid)) tl.mats[static_cast<std::size_t>(m)].last = last_tick;
  }
  for (auto& m : tl.mats) {
    // Created after the last op step, or never used: it still occupies the tick where it appeared.
    if (m.first > last_tick) m.first = last_tick;
    if (m.last < m.first) m.last = m.first;
  }
  detail::derive_profile(p, tl, tick_step);
}
inline void derive(const problem& p, timeline& tl) { derive(p, tl, initial_storages(p)); }

// Sets the implementation of every op step to impl_of(step, tick) -- called in step order, while the
// profile still holds that tick's bytes with the step's old workspace -- and updates the profile in
// place: an implementation changes only its step's workspace, which lives at its own tick alone, so the
// lifetimes stay and each tick moves by the workspace difference (no re-derivation; O(steps)). tl's
// profile must be the one derived for its steps; when its size does not match them, derive() runs.
template <class ImplOf>
void reassign_impls(const problem& p, timeline& tl, ImplOf&& impl_of) {
  const auto ops = static_cast<std::size_t>(std::count_if(tl.steps.begin(), tl.steps.end(), [](const step& s) { return runs_op(s.kind); }));
  if (ops != tl.live.size()) {
    std::size_t tick = 0;
    for (auto& s : tl.steps)
      if (runs_op(s.kind)) s.impl = impl_of(std::as_const(s), tick++);
    derive(p, tl);
    return;
  }
  std::size_t tick = 0;
  tl.peak_tick = -1;
  for (auto& s : tl.steps) {
    if (!runs_op(s.kind)) continue;
    const auto before = step_workspace(p, s);
    s.impl = impl_of(std::as_const(s), tick);
    tl.live[tick] += step_workspace(p, s) - before;
    if (tl.peak_tick < 0 || tl.live[tick] > tl.live[static_cast<std::size_t>(tl.peak_tick)]) tl.peak_tick = static_cast<std::int32_t>(tick);
    ++tick;
  }
  tl.peak = std::max(p.resident_bytes(), tl.peak_tick < 0 ? std::int64_t{0} : tl.live[static_cast<std::size_t>(tl.peak_tick)]);
}

// Numbers the materializations again after a stage inserted or removed steps: the preexisting storages
// first, then, in step order, one per storage a step creates (a recompute creates only the outputs that
// are not on the device), with every step.mat set. Offsets: the preexisting ones keep theirs; a new one
// takes its storage's previous offset when `inherit_offsets` (for plans edited by hand: an inserted op
// step then also takes its op's workspace offset), else -1 (to be placed). Then derive().
inline void relink(const problem& p, timeline& tl, bool inherit_offsets = false) {
  const auto ns = static_cast<std::size_t>(p.num_storages());
  std::vector<std::int64_t> last_offset(ns, -1);
  for (const auto& m : tl.mats)
    if (m.storage >= 0 && static_cast<std::size_t>(m.storage) < ns && last_offset[static_cast<std::size_t>(m.storage)] < 0)
      last_offset[static_cast<std::size_t>(m.storage)] = m.offset;
  // (Written in place, field by field, into room reserved for about one per step: remat's annealing
  // relinks thousands of replays, and a materialization built on the stack and pushed was read back
  // across its narrower stores, a store-forwarding stall.)
  std::vector<materialization> mats;
  const auto initial = initial_storages(p);
  mats.reserve(initial.size() + tl.steps.size());
  const auto add = [&mats](storage_id s, std::int64_t offset) {
    auto& m = mats.emplace_back();
    m.storage = s;
    m.offset = offset;
  };
  for (auto s : initial) add(s, last_offset[static_cast<std::size_t>(s)]);
  auto on_device = initially_on_device(p, initial);
  for (auto& st : tl.steps) {
    st.mat = no_id;
    step_creations(p, st, on_device, [&](storage_id s, tensor_id) {
      add(s, inherit_offsets ? last_offset[static_cast<std::size_t>(s)] : -1);
      if (st.mat == no_id) st.mat = static_cast<std::int32_t>(mats.size() - 1);
    });
  }
  tl.mats = std::move(mats);
  if (inherit_offsets) {
    // An op step without a workspace offset takes the one its op had in another step.
    std::vector<std::int64_t> ws(static_cast<std::size_t>(p.num_ops()), -1);
    for (const auto& st : tl.steps)
      if (runs_op(st.kind) && st.workspace_offset >= 0) ws[static_cast<std::size_t>(st.id)] = st.workspace_offset;
    for (auto& st : tl.steps)
      if (runs_op(st.kind) && st.workspace_offset < 0) st.workspace_offset = ws[static_cast<std::size_t>(st.id)];
  } else {
    tl.arena = -1;
  }
  derive(p, tl, initial);
}

// ---- placement -------------------------------------------------------------------------------------------

// Which materialization or which step's workspace each buffer of a timeline's buffer_problem stands for.
struct buffer_origin {
  std::vector<std::int32_t> mat;   // buffer -> materialization, or no_id for a workspace buffer
  std::vector<std::int32_t> step;  // buffer -> step whose workspace it is, or no_id
};

// Buffer i of to_buffers, in words: "tensor 'x' (materialization m, buffer i)" or "workspace of op 'o' (buffer i)".
inline std::string buffer_text(const problem& p, const timeline& tl, const buffer_origin& origin, std::size_t i) {
  if (i < origin.mat.size() && origin.mat[i] != no_id) {
    const auto m = static_cast<std::size_t>(origin.mat[i]);
    return "tensor '" + p.tensor_name(p.storage_root(tl.mats[m].storage)) + "' (materialization " + std::to_string(m) + ", buffer " +
           std::to_string(i) + ")";
  }
  if (i < origin.step.size() && origin.step[i] != no_id)
    return "workspace of op '" + p.op_name(tl.steps[static_cast<std::size_t>(origin.step[i])].id) + "' (buffer " + std::to_string(i) + ")";
  return "buffer " + std::to_string(i);
}

// One buffer per non-empty materialization, lifetime [first, last + 1) in ticks, in storage order (then
// creation order), and one per op step workspace ([tick, tick + 1)). Placing these places the timeline.
inline buffer_problem to_buffers(const problem& p, const timeline& tl, std::int64_t alignment, buffer_origin& origin,
                                 std::int64_t capacity = std::numeric_limits<std::int64_t>::max()) {
  buffer_problem bp;
  bp.alignment = alignment;
  bp.capacity = capacity;
  origin = {};
  std::vector<std::int32_t> by_storage(tl.mats.size());
  for (std::size_t m = 0; m < by_storage.size(); ++m) by_storage[m] = static_cast<std::int32_t>(m);
  std::stable_sort(by_storage.begin(), by_storage.end(), [&](std::int32_t a, std::int32_t b) {
    return tl.mats[static_cast<std::size_t>(a)].storage < tl.mats[static_cast<std::size_t>(b)].storage;
  });
  for (auto m : by_storage) {
    const auto& mm = tl.mats[static_cast<std::size_t>(m)];
    const auto bytes = p.storage_bytes(mm.storage);
    if (bytes == 0) continue;
    bp.buffers.push_back({mm.first, mm.last + 1, bytes, 1, -1});
    origin.mat.push_back(m);
    origin.step.push_back(no_id);
  }
  std::int64_t tick = 0;
  for (std::size_t i = 0; i < tl.steps.size(); ++i) {
    const auto& st = tl.steps[i];
    if (!runs_op(st.kind)) continue;
    const auto ws = step_workspace(p, st);
    if (ws > 0) {
      bp.buffers.push_back({tick, tick + 1, ws, 1, -1});
      origin.mat.push_back(no_id);
      origin.step.push_back(static_cast<std::int32_t>(i));
    }
    ++tick;
  }
  return bp;
}

// Writes a buffer placement back: offsets of materializations and workspaces, arena, the placer's evidence.
inline void apply_placement(timeline& tl, const buffer_origin& origin, const buffer_placement& bpl, std::int64_t alignment) {
  for (auto& m : tl.mats) m.offset = 0;  // empty storages occupy nothing
  for (auto& s : tl.steps) s.workspace_offset = -1;
  for (std::size_t b = 0; b < origin.mat.size(); ++b) {
    if (origin.mat[b] != no_id) tl.mats[static_cast<std::size_t>(origin.mat[b])].offset = bpl.offsets[b];
    else tl.steps[static_cast<std::size_t>(origin.step[b])].workspace_offset = bpl.offsets[b];
  }
  tl.arena = bpl.arena;
  tl.alignment = alignment;
  tl.arena_lower_bound = bpl.lower_bound;
  tl.arena_optimal = bpl.optimal;
}

// ---- where tensors live -----------------------------------------------------------------------------------

// The materialization of each storage at the start (preexisting ones) and at the end of the steps
// (what is on the device when the plan has run: resident storages and outputs). no_id where none.
inline std::vector<std::int32_t> initial_mats(const problem& p, const timeline& tl) {
  std::vector<std::int32_t> cur(static_cast<std::size_t>(p.num_storages()), no_id);
  const auto initial = initial_storages(p);
  for (std::size_t k = 0; k < initial.size() && k < tl.mats.size(); ++k)
    cur[static_cast<std::size_t>(initial[k])] = static_cast<std::int32_t>(k);
  return cur;
}

inline std::vector<std::int32_t> final_mats(const problem& p, const timeline& tl) {
  auto cur = initial_mats(p, tl);
  auto on_device = initially_on_device(p);
  for (const auto& st : tl.steps) {
    std::int32_t next = st.mat;
    step_creations(p, st, on_device, [&](storage_id s, tensor_id) { cur[static_cast<std::size_t>(s)] = next++; });
    if (!runs_op(st.kind) && st.kind != step_kind::prefetch) cur[static_cast<std::size_t>(p.storage_of(st.id))] = no_id;
  }
  return cur;
}

// The first materialization of a storage (no_id: it has none).
inline std::int32_t first_mat(const timeline& tl, storage_id s) {
  for (std::size_t m = 0; m < tl.mats.size(); ++m)
    if (tl.mats[m].storage == s) return static_cast<std::int32_t>(m);
  return no_id;
}

// Offset of a tensor's storage at the start of the plan, or where it is first materialized (-1: never).
inline std::int64_t first_offset(const problem& p, const timeline& tl, tensor_id t) {
  const auto s = p.storage_of(t);
  if (p.storage_bytes(s) == 0) return 0;
  const auto m = first_mat(tl, s);
  return m < 0 ? -1 : tl.mats[static_cast<std::size_t>(m)].offset;
}

}  // namespace memplan
