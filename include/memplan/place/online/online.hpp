#pragma once
// Online allocator baselines replayed over a buffer_problem's lifetimes: each buffer is allocated at
// its lower step and freed at its upper step; at equal steps frees come first (lifetimes are half-open),
// then allocations, each in buffer order. The allocators never see the future, so they fragment; the
// result carries what the allocator reserved from the device and the fragmentation OLLA §5.4 reports:
// (reserved - resident peak) / reserved.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/core/buffer.hpp>
#include <memplan/place/lower_bound.hpp>

namespace memplan::place::online {

struct online_result {
  buffer_placement placement;     // offsets in one virtual address space (checked by place::check)
  std::int64_t reserved = 0;      // bytes reserved from the device at the high-water mark
  std::int64_t resident_peak = 0; // max over steps of the live bytes (sizes as requested)
  [[nodiscard]] double fragmentation() const {
    return reserved > 0 ? static_cast<double>(reserved - resident_peak) / static_cast<double>(reserved) : 0.0;
  }
};

struct event {
  std::int64_t t;
  bool allocate;
  std::size_t buffer;
};

// Allocation/free events in replay order. Pinned buffers cannot be honoured by an online allocator.
inline std::vector<event> replay_order(const buffer_problem& p, const std::string& who) {
  validate(p);
  std::vector<event> evs;
  evs.reserve(2 * p.buffers.size());
  for (std::size_t i = 0; i < p.buffers.size(); ++i) {
    if (p.buffers[i].fixed_offset >= 0)
      throw error(errc::invalid_argument, who + ": buffer " + std::to_string(i) + " is pinned at offset " +
                                              std::to_string(p.buffers[i].fixed_offset) +
                                              "; an online allocator cannot honour pins");
    evs.push_back({p.buffers[i].lower, true, i});
    evs.push_back({p.buffers[i].upper, false, i});
  }
  std::sort(evs.begin(), evs.end(), [](const event& a, const event& b) {
    return a.t != b.t ? a.t < b.t : a.allocate != b.allocate ? !a.allocate : a.buffer < b.buffer;
  });
  return evs;
}

// Fills placement fields, checks it with the referee, and computes the resident peak.
inline online_result finish_online(const buffer_problem& p, std::vector<std::int64_t> offsets, std::int64_t reserved,
                                   const std::string& name) {
  online_result r;
  r.placement.offsets = std::move(offsets);
  for (std::size_t i = 0; i < p.buffers.size(); ++i)
    r.placement.arena = std::max(r.placement.arena, r.placement.offsets[i] + p.buffers[i].size);
  r.placement.lower_bound = arena_lower_bound(p);
  r.placement.optimal = r.placement.arena == r.placement.lower_bound;
  r.placement.placer = name;
  r.placement.note = "online replay, reserved " + std::to_string(reserved) + " bytes";
  r.reserved = reserved;
  r.resident_peak = resident_peak(p);
  if (r.placement.arena > p.capacity)
    throw error(errc::infeasible, name + ": arena " + std::to_string(r.placement.arena) + " exceeds the capacity " +
                                      std::to_string(p.capacity));
  if (auto why = check(p, r.placement)) throw error(errc::invalid_plan, name + " produced an invalid placement: " + *why);
  return r;
}

}  // namespace memplan::place::online
