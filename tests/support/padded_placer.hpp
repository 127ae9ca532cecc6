#pragma once
// Test-only placers that leave bytes unused below greedy_by_size's placement: fragmentation a
// checkpointer cannot see, so a placement aimed at a budget overshoots it and plan()'s budget loop
// runs (or, given a plan to beat, is cut short).
#include <cstdint>
#include <string>

#include <memplan/core/buffer.hpp>
#include <memplan/place/greedy_by_size.hpp>

namespace memplan::testing {

// greedy_by_size's placement of `bp`, every offset and the arena `pad` bytes higher.
[[nodiscard]] inline place::buffer_placement padded_greedy_by_size(const place::buffer_problem& bp, std::int64_t pad) {
  auto pl = place::greedy_by_size{}.place(bp);
  for (auto& o : pl.offsets) o += pad;
  pl.arena += pad;
  return pl;
}

struct padded_placer {
  std::int64_t pad = 0;
  [[nodiscard]] std::string name() const { return "padded greedy_by_size"; }
  [[nodiscard]] place::buffer_placement place(const place::buffer_problem& bp) const { return padded_greedy_by_size(bp, pad); }
};

}  // namespace memplan::testing
