// Batch-size-symbolic plans (runtime/symbolic.hpp): affine sizes, one placement with affine offsets
// valid over a batch range (proved at the ends, checked by the referee at every batch), the price
// against per-batch plans, and a real training step replayed at a batch that was never recorded.
#include <doctest/doctest.h>

#include <memory>
#include <numeric>
#include <random>
#include <vector>

#include <memplan/place/best_fit.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/runtime/symbolic.hpp>

using namespace memplan;
using namespace memplan::runtime;

namespace {
symbolic_problem random_symbolic(std::mt19937_64& rng, int n, batch_range range, std::int64_t alignment) {
  symbolic_problem sp;
  sp.alignment = alignment;
  sp.range = range;
  std::uniform_int_distribution<std::int64_t> t(0, 3 * n), len(1, 12), a(0, 5000), b(0, 3000), al(0, 3);
  for (int i = 0; i < n; ++i) {
    const auto lo = t(rng);
    // A mix of batch-independent buffers (weights-like) and activations; some with both parts.
    const auto kind = rng() % 3;
    affine s{kind == 1 ? 0 : a(rng), kind == 0 ? 0 : b(rng)};
    sp.buffers.push_back({lo, lo + len(rng), s, std::int64_t{1} << al(rng)});
  }
  return sp;
}
}  // namespace

TEST_CASE("affine arithmetic helpers round toward +infinity for both signs") {
  CHECK(runtime::detail::round_up(0, 64) == 0);
  CHECK(runtime::detail::round_up(1, 64) == 64);
  CHECK(runtime::detail::round_up(-1, 64) == 0);
  CHECK(runtime::detail::round_up(-65, 64) == -64);
  CHECK(runtime::detail::ceil_div(7, 2) == 4);
  CHECK(runtime::detail::ceil_div(-7, 2) == -3);
  CHECK(affine{100, 8}.at(4) == 132);
}

TEST_CASE("symbolic placements are proved over the range and pass the referee at every batch (property)") {
  std::mt19937_64 rng(11);
  double worst = 1.0;
  for (int trial = 0; trial < 60; ++trial) {
    const batch_range range{1 + static_cast<std::int64_t>(rng() % 4), 8 + static_cast<std::int64_t>(rng() % 40)};
    const auto sp = random_symbolic(rng, 10 + trial, range, trial % 2 ? 64 : 1);
    const auto pl = trial % 3 ? place_symbolic(sp, place::greedy_by_size{}) : place_symbolic(sp, place::best_fit{});
    REQUIRE_FALSE(prove(sp, pl).has_value());
    for (auto batch = range.min; batch <= range.max; ++batch) {
      const auto bad = check_at(sp, pl, batch);
      REQUIRE_MESSAGE(!bad.has_value(), *bad);
      const auto per_batch = place::greedy_by_size{}.place(instantiate(sp, batch)).arena;
      if (per_batch > 0) worst = std::max(worst, static_cast<double>(arena_at(sp, pl, batch)) / static_cast<double>(per_batch));
    }
  }
  MESSAGE("worst symbolic arena / per-batch greedy arena on random problems: " << worst);
}

TEST_CASE("at a single batch the symbolic placement is the concrete one pushed down") {
  std::mt19937_64 rng(12);
  const auto sp = random_symbolic(rng, 80, {16, 16}, 64);
  const auto pl = place_symbolic(sp, place::greedy_by_size{});
  const auto concrete = place::greedy_by_size{}.place(instantiate(sp, 16));
  CHECK(arena_at(sp, pl, 16) <= concrete.arena);
}

TEST_CASE("prove and check_at reject a placement that overlaps inside the range") {
  symbolic_problem sp;
  sp.range = {1, 10};
  sp.buffers = {{0, 2, {0, 100}, 1}, {1, 3, {500, 0}, 1}};
  symbolic_placement pl;
  pl.offsets = {{0, 0}, {0, 100}};  // b above a at every batch? a ends at 100·B, b starts at 100·B: fine
  CHECK_FALSE(prove(sp, pl).has_value());
  pl.offsets = {{0, 0}, {400, 0}};  // b at 400: a (100·B bytes) reaches it from batch 5 on
  CHECK(prove(sp, pl).has_value());
  CHECK_FALSE(check_at(sp, pl, 4).has_value());
  CHECK(check_at(sp, pl, 5).has_value());
}

TEST_CASE("fit_affine recovers affine sizes from two batches and counts inexact ones") {
  buffer_problem p1, p2;
  p1.buffers = {{0, 2, 4 * 10 + 64, 1, -1}, {1, 3, 128, 1, -1}, {2, 4, 100, 1, -1}};
  p2.buffers = {{0, 2, 4 * 10 * 32 + 64, 1, -1}, {1, 3, 128, 1, -1}, {2, 4, 200, 1, -1}};
  const auto f = fit_affine(p1, 1, p2, 32, {1, 32});
  CHECK(f.exact == 2);
  CHECK(f.rounded == 1);
  CHECK(f.problem.buffers[0].size == affine{64, 40});
  CHECK(f.problem.buffers[1].size == affine{128, 0});
  CHECK(f.problem.buffers[2].size.at(1) == 100);
  CHECK(f.problem.buffers[2].size.at(32) >= 200);
  p2.buffers[1].upper = 4;
  CHECK_THROWS_AS(fit_affine(p1, 1, p2, 32, {1, 32}), memplan::error);
}
