#pragma once
// Plans are data: a schedule (op order), a placement (tensor -> offset in one arena), and the
// memory_plan every consumer reads (verifier, executor, exporters): a list of steps
// (compute, recompute, offload, prefetch, free) plus offsets plus stats with their evidence.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <memplan/core/analysis.hpp>
#include <memplan/core/error.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/place/buffer.hpp>

namespace memplan {

// ---- schedule ---------------------------------------------------------------------------------------
struct schedule_result {
  std::vector<op_id> order;        // every op once, topological
  std::int64_t peak = 0;           // peak of this order (memory rule)
  std::int64_t lower_bound = 0;    // a valid lower bound on the peak of ANY order (0: none known)
  bool optimal = false;            // peak == proven minimum
  std::string policy;              // the scheduler that produced it (best_of: the winner)
  std::string note;                // fallbacks, limits hit, ... in words
};

// A scheduler is a small copyable value: s.run(problem) -> schedule_result, s.name().
// (The type is schedule_result because memplan::schedule is the namespace of the policies.)
template <class S>
concept scheduler = std::copyable<S> && requires(const S& s, const problem& p) {
  { s.run(p) } -> std::same_as<schedule_result>;
  { s.name() } -> std::convertible_to<std::string>;
};

// ---- placement --------------------------------------------------------------------------------------
struct placement {
  std::vector<std::int64_t> tensor_offset;     // per tensor; tensors of one storage share it; 0 for empty ones
  std::vector<std::int64_t> workspace_offset;  // per op; -1 when the op needs no workspace
  std::int64_t arena = 0;
  std::int64_t alignment = 1;
  std::int64_t lower_bound = 0;  // lower bound on the arena for this schedule (max live bytes)
  bool optimal = false;
  std::string policy, note;
};

// ---- memory plan ------------------------------------------------------------------------------------
enum class step_kind : std::uint8_t { compute, recompute, offload, prefetch, free };

inline constexpr std::string_view to_string(step_kind k) noexcept {
  switch (k) {
    case step_kind::compute: return "compute";
    case step_kind::recompute: return "recompute";
    case step_kind::offload: return "offload";
    case step_kind::prefetch: return "prefetch";
    case step_kind::free: return "free";
  }
  return "compute";
}

// compute/recompute name an op; offload/prefetch/free name a tensor (and act on its storage).
struct step {
  step_kind kind = step_kind::compute;
  std::int32_t id = 0;
  friend bool operator==(const step&, const step&) = default;
};

struct plan_stats {
  std::int64_t peak = 0;            // max live bytes over the steps (verify re-derives it)
  std::int64_t lower_bound = 0;     // valid lower bound on the peak of any order of this graph
  double gap = 0.0;                 // (peak - lower_bound) / peak
  std::int64_t arena = 0;           // bytes of the one arena
  double fragmentation = 0.0;       // (arena - peak) / arena (OLLA §5.4)
  std::int64_t given_peak = -1;     // peak of the graph's given order (-1: not computed)
  double recompute_cost = 0.0;      // sum of cost over recompute steps
  std::int64_t transfer_bytes = 0;  // bytes moved by offload + prefetch
  double schedule_seconds = 0.0, place_seconds = 0.0;
  std::string scheduler, placer;
  std::vector<std::string> notes;   // fallbacks (e.g. "olla_ilp: CBC missing, used best_of"), limits hit
};

struct memory_plan {
  std::vector<step> steps;
  std::vector<std::int64_t> offsets;            // per tensor id
  std::vector<std::int64_t> workspace_offsets;  // per op id, -1 when none
  std::int64_t arena = 0;
  std::int64_t alignment = 1;
  plan_stats stats;

  // The ops in the order their compute steps appear.
  [[nodiscard]] std::vector<op_id> order() const {
    std::vector<op_id> o;
    for (const auto& s : steps)
      if (s.kind == step_kind::compute) o.push_back(s.id);
    return o;
  }
};

// ---- schedule -> buffers -> placement -------------------------------------------------------------------
// Which storage / op workspace each buffer of a buffer_problem stands for.
struct buffer_origin {
  std::vector<storage_id> storage;  // buffer -> storage, or no_id for a workspace buffer
  std::vector<op_id> workspace_of;  // buffer -> op whose workspace it is, or no_id
};

// One buffer per non-empty storage (lifetime [first, last + 1) in steps of `order`) and one per op
// workspace ([i, i + 1)). Placing these buffers places the plan.
inline place::buffer_problem to_buffer_problem(const problem& p, std::span<const op_id> order, std::int64_t alignment,
                                               buffer_origin* origin = nullptr,
                                               std::int64_t capacity = std::numeric_limits<std::int64_t>::max()) {
  place::buffer_problem bp;
  bp.alignment = alignment;
  bp.capacity = capacity;
  if (origin) *origin = {};
  const auto lt = storage_lifetimes(p, order);
  for (storage_id s = 0; s < p.num_storages(); ++s) {
    const auto& l = lt[static_cast<std::size_t>(s)];
    if (!l.live()) continue;
    bp.buffers.push_back({l.first, l.last + 1, p.storage_bytes(s), 1, -1});
    if (origin) { origin->storage.push_back(s); origin->workspace_of.push_back(no_id); }
  }
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto ws = p.workspace(order[i]);
    if (ws <= 0) continue;
    bp.buffers.push_back({static_cast<std::int64_t>(i), static_cast<std::int64_t>(i) + 1, ws, 1, -1});
    if (origin) { origin->storage.push_back(no_id); origin->workspace_of.push_back(order[i]); }
  }
  return bp;
}

// Maps a buffer placement back onto tensors and workspaces.
inline placement to_placement(const problem& p, const buffer_origin& origin, const place::buffer_placement& bpl,
                              std::int64_t alignment) {
  placement pl;
  pl.tensor_offset.assign(static_cast<std::size_t>(p.num_tensors()), 0);
  pl.workspace_offset.assign(static_cast<std::size_t>(p.num_ops()), -1);
  for (std::size_t b = 0; b < origin.storage.size(); ++b) {
    if (origin.storage[b] != no_id)
      for (auto t : p.storage_tensors(origin.storage[b])) pl.tensor_offset[static_cast<std::size_t>(t)] = bpl.offsets[b];
    else
      pl.workspace_offset[static_cast<std::size_t>(origin.workspace_of[b])] = bpl.offsets[b];
  }
  pl.arena = bpl.arena;
  pl.alignment = alignment;
  pl.lower_bound = bpl.lower_bound;
  pl.optimal = bpl.optimal;
  pl.policy = bpl.placer;
  pl.note = bpl.note;
  return pl;
}

// Places an order with any placer.
template <place::placer P>
placement place_order(const problem& p, std::span<const op_id> order, const P& placer, std::int64_t alignment = 1,
                      std::int64_t capacity = std::numeric_limits<std::int64_t>::max()) {
  buffer_origin origin;
  auto bp = to_buffer_problem(p, order, alignment, &origin, capacity);
  auto bpl = placer.place(bp);
  if (auto bad = place::check(bp, bpl))
    throw error(errc::invalid_plan, "placer '" + std::string(placer.name()) + "' returned an invalid placement: " + *bad);
  if (bpl.placer.empty()) bpl.placer = placer.name();
  return to_placement(p, origin, bpl, alignment);
}

// The plan of an order and a placement: compute steps in order, each storage freed right after the
// step of its last use (resident and output storages stay), offsets from the placement, stats.
inline memory_plan make_plan(const problem& p, std::span<const op_id> order, const placement& pl) {
  if (auto bad = check_topological(p, order)) throw error(errc::invalid_argument, "not a topological order: " + *bad);
  memory_plan mp;
  const auto lt = storage_lifetimes(p, order);
  std::vector<std::vector<storage_id>> frees(order.size());
  for (storage_id s = 0; s < p.num_storages(); ++s) {
    const auto& l = lt[static_cast<std::size_t>(s)];
    if (!l.live() || p.resident(s) || p.live_to_end(s)) continue;
    frees[static_cast<std::size_t>(l.last)].push_back(s);
  }
  for (std::size_t i = 0; i < order.size(); ++i) {
    mp.steps.push_back({step_kind::compute, order[i]});
    for (auto s : frees[i]) mp.steps.push_back({step_kind::free, p.storage_root(s)});
  }
  mp.offsets = pl.tensor_offset;
  mp.workspace_offsets = pl.workspace_offset;
  mp.arena = pl.arena;
  mp.alignment = pl.alignment;
  const auto prof = profile(p, order);
  mp.stats.peak = prof.peak;
  mp.stats.arena = pl.arena;
  mp.stats.fragmentation = pl.arena > 0 ? static_cast<double>(pl.arena - prof.peak) / static_cast<double>(pl.arena) : 0.0;
  mp.stats.placer = pl.policy;
  if (!pl.note.empty()) mp.stats.notes.push_back(pl.note);
  return mp;
}

// Fills lower_bound and gap from a bound.
inline void set_lower_bound(plan_stats& st, std::int64_t lb) {
  st.lower_bound = lb;
  st.gap = st.peak > 0 ? static_cast<double>(st.peak - lb) / static_cast<double>(st.peak) : 0.0;
}

}  // namespace memplan
