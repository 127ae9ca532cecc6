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

// Minimum arena over every order of the unpinned buffers, each placed at its lowest feasible aligned
// offset (pins first). Complete: list an optimal placement's unpinned buffers by offset; placing them in
// that order, each one's optimal offset is still feasible (every earlier buffer overlapping it in time
// sits at or below its optimal offset, hence below it), so the lowest feasible offset is at or below
// it, and by induction the arena never exceeds the optimum.
// Written apart from the placers (no occupancy index): the orders are walked depth first, so a prefix
// is placed once for all its completions; a prefix whose arena already reaches the best is not extended
// (placing more never lowers an arena); of buffers equal in lifetime, size and alignment only the first
// is tried at each depth (swapping them gives the same arenas). The lowest feasible offset is 0 or the
// aligned top of a buffer placed before that overlaps in time: below the lowest one, the highest top
// under it, aligned up, is free too.
inline std::int64_t brute_force_arena(const place::buffer_problem& p) {
  struct placed { std::int64_t lower, upper, offset, top; };
  std::vector<placed> at;
  std::int64_t pinned_top = 0;
  for (const auto& b : p.buffers)
    if (b.fixed_offset >= 0) {
      pinned_top = std::max(pinned_top, b.fixed_offset + b.size);
      if (b.size > 0) at.push_back({b.lower, b.upper, b.fixed_offset, b.fixed_offset + b.size});
    }
  std::vector<std::size_t> rest;  // zero-size buffers sit at 0 and overlap nothing
  for (std::size_t i = 0; i < p.buffers.size(); ++i)
    if (p.buffers[i].fixed_offset < 0 && p.buffers[i].size > 0) rest.push_back(i);
  const auto same = [&](std::size_t i, std::size_t j) {
    const auto &a = p.buffers[i], &b = p.buffers[j];
    return a.lower == b.lower && a.upper == b.upper && a.size == b.size && effective_alignment(p, a) == effective_alignment(p, b);
  };
  const auto lowest = [&](const place::buffer& b) {
    const auto align = effective_alignment(p, b);
    const auto fits = [&](std::int64_t x) {
      for (const auto& q : at)
        if (q.lower < b.upper && b.lower < q.upper && q.offset < x + b.size && x < q.top) return false;
      return true;
    };
    std::int64_t best = std::numeric_limits<std::int64_t>::max();
    if (fits(0)) return std::int64_t{0};
    for (const auto& q : at)
      if (q.lower < b.upper && b.lower < q.upper) {
        const auto x = align_up(q.top, align);
        if (x < best && fits(x)) best = x;
      }
    return best;
  };
  std::int64_t best = std::numeric_limits<std::int64_t>::max();
  std::vector<bool> used(rest.size(), false);
  const auto walk = [&](auto&& self, std::size_t depth, std::int64_t arena) -> void {
    if (arena >= best) return;
    if (depth == rest.size()) { best = arena; return; }
    for (std::size_t k = 0; k < rest.size(); ++k) {
      if (used[k]) continue;
      bool repeat = false;  // an equal buffer not placed yet comes first
      for (std::size_t j = 0; j < k && !repeat; ++j) repeat = !used[j] && same(rest[j], rest[k]);
      if (repeat) continue;
      const auto& b = p.buffers[rest[k]];
      const auto x = lowest(b);
      used[k] = true;
      at.push_back({b.lower, b.upper, x, x + b.size});
      self(self, depth + 1, std::max(arena, x + b.size));
      at.pop_back();
      used[k] = false;
    }
  };
  walk(walk, 0, pinned_top);
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
