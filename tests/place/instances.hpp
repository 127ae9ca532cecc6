#pragma once
// Random buffer problems for the placement tests (fixed seeds), and a brute-force optimum.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <memplan/core/buffer.hpp>
#include <memplan/place/detail/support.hpp>
#include <memplan/place/greedy_by_size.hpp>

// In memplan::testing with the other test helpers: the test executables are grouped into a few
// translation units (tests/CMakeLists.txt), where a second `testing` namespace would make `testing::` ambiguous.
namespace memplan::testing {

struct instance_options {
  int buffers = 20;
  int steps = 20;
  std::int64_t max_size = 100;
  bool alignments = false;   // random per-buffer alignments in {1, 2, ..., 64}
  std::int64_t global_alignment = 1;
  double pinned = 0.0;       // fraction of buffers pinned (at a feasible greedy placement's offsets)
  bool zero_sizes = false;   // some buffers of size 0
};

inline place::buffer_problem random_instance(std::uint64_t seed, const instance_options& o) {
  std::mt19937_64 g(seed);
  place::buffer_problem p;
  p.alignment = o.global_alignment;
  for (int i = 0; i < o.buffers; ++i) {
    buffer b;
    b.lower = std::uniform_int_distribution<int>(0, o.steps - 1)(g);
    // Mostly short lifetimes, some long ones (as activations kept for the backward pass).
    const int span = std::uniform_int_distribution<int>(0, 3)(g) == 0 ? o.steps : std::max(1, o.steps / 5);
    b.upper = std::min<std::int64_t>(o.steps, b.lower + std::uniform_int_distribution<int>(1, span)(g));
    b.size = std::uniform_int_distribution<std::int64_t>(o.zero_sizes ? 0 : 1, o.max_size)(g);
    if (o.alignments) b.alignment = std::int64_t{1} << std::uniform_int_distribution<int>(0, 6)(g);
    p.buffers.push_back(b);
  }
  if (o.pinned > 0) {
    const auto pl = place::greedy_by_size{}.place(p);
    std::bernoulli_distribution pin(o.pinned);
    for (std::size_t i = 0; i < p.buffers.size(); ++i)
      if (pin(g)) p.buffers[i].fixed_offset = pl.offsets[i];
  }
  return p;
}

// Minimum arena by enumerating every order of the unpinned buffers, each placed at its lowest feasible
// aligned offset (pins first). Complete: list an optimal placement's unpinned buffers by offset; placing
// them in that order, each one's optimal offset is still feasible (every earlier buffer overlapping it
// in time sits at or below its optimal offset, hence below it), so the lowest feasible offset is at or
// below it, and by induction the arena never exceeds the optimum.
inline std::int64_t brute_force_arena(const place::buffer_problem& p) {
  auto perm = place::detail::free_buffers(p);
  std::int64_t best = std::numeric_limits<std::int64_t>::max();
  do {
    const auto off = place::detail::place_in_order(p, perm, place::detail::fit::first);
    std::int64_t a = 0;
    for (std::size_t i = 0; i < p.buffers.size(); ++i) a = std::max(a, off[i] + p.buffers[i].size);
    best = std::min(best, a);
  } while (std::next_permutation(perm.begin(), perm.end()));
  return best;
}

// The small-instance families every exact placer is checked on against brute force.
inline std::vector<instance_options> small_instance_kinds() {
  return {
      {.buffers = 6, .steps = 6, .max_size = 8},
      {.buffers = 7, .steps = 5, .max_size = 10},
      {.buffers = 7, .steps = 8, .max_size = 64, .alignments = true},
      {.buffers = 6, .steps = 6, .max_size = 40, .global_alignment = 8},
      {.buffers = 7, .steps = 6, .max_size = 20, .pinned = 0.3},
      {.buffers = 6, .steps = 4, .max_size = 12, .alignments = true, .pinned = 0.3, .zero_sizes = true},
  };
}

}  // namespace memplan::testing
