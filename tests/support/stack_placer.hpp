#pragma once
// A test-only placer that never reuses memory: buffer i sits after buffer i-1 (aligned). Core tests
// use it so they do not depend on the place/ policies.
#include <string>

#include <memplan/core/buffer.hpp>

namespace memplan::testing {

struct stack_placer {
  [[nodiscard]] std::string name() const { return "test-stack"; }
  [[nodiscard]] place::buffer_placement place(const place::buffer_problem& bp) const {
    place::buffer_placement pl;
    std::int64_t top = 0;
    for (const auto& b : bp.buffers) {
      top = place::align_up(top, place::effective_alignment(bp, b));
      pl.offsets.push_back(top);
      top += b.size;
      pl.arena = std::max(pl.arena, top);
    }
    pl.placer = name();
    return pl;
  }
};

}  // namespace memplan::testing
