#pragma once
// place::bump -- the baseline of MemoMalloc §2.3 ("bump_allocation"): iterate over the allocations in
// order of their first step and hand out increasing offsets ("bump" a pointer), never reusing memory of
// freed buffers -- except that, as in MemoMalloc's bump allocator, the pointer is reset to 0 whenever
// no buffer is live (the arena is empty, so nothing can be overwritten). With reset_when_empty = false
// it is the pure bump: arena = sum of (aligned) sizes.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <memplan/core/buffer.hpp>
#include <memplan/place/detail/support.hpp>

namespace memplan::place {

struct bump {
  bool reset_when_empty = true;

  [[nodiscard]] std::string name() const { return "bump"; }

  [[nodiscard]] buffer_placement place(const buffer_problem& p) const {
    validate(p);
    const auto n = p.buffers.size();
    std::vector<std::int64_t> offsets(n, detail::unplaced);
    std::vector<std::size_t> pins;
    for (std::size_t i = 0; i < n; ++i)
      if (p.buffers[i].fixed_offset >= 0) { offsets[i] = p.buffers[i].fixed_offset; pins.push_back(i); }
    // Frees first at equal times.
    const auto evs = memplan::detail::lifetime_events(p, [](std::size_t) { return true; });
    std::int64_t next = 0, live = 0;
    for (const auto& e : evs) {
      if (e.kind == 0) {
        if (--live == 0 && reset_when_empty) next = 0;
        continue;
      }
      ++live;
      const auto& b = p.buffers[e.i];
      if (b.fixed_offset >= 0) continue;
      auto off = align_up(next, effective_alignment(p, b));
      if (b.size > 0) off = detail::above_pins(p, pins, b, off);  // over the pins live with b that the bump would run into
      offsets[e.i] = off;
      next = off + b.size;
    }
    return detail::finish(p, std::move(offsets), name(), reset_when_empty ? "" : "no reset");
  }
};

}  // namespace memplan::place
