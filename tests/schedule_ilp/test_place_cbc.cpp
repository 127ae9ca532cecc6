// place::olla_ilp with CBC: eq. 15 reaches the brute-force minimum arena; OLLA Figure 4.
#include <doctest/doctest.h>

#include <memplan/place/bump.hpp>
#include <memplan/place/exact.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/place/olla_ilp.hpp>
#include <memplan/solver/cbc.hpp>

#include "../place/instances.hpp"

using namespace memplan;
using namespace memplan::place;

TEST_CASE("place::olla_ilp (CBC): equals brute force on small instances (no pre-placement)") {
  const auto kinds = testing::small_instance_kinds();
  int closed = 0;
  for (std::size_t k = 0; k < kinds.size(); ++k)
    for (std::uint64_t seed = 1; seed <= 12; ++seed) {
      const auto p = testing::random_instance(seed * 31 + k, kinds[k]);
      const auto opt = testing::brute_force_arena(p);
      const auto warm = greedy_by_size{}.place(p);
      const auto pl = olla_ilp{.backend = solver::cbc{}, .time_limit_s = 60, .preplace = false, .warm_start = greedy_by_size{}}.place(p);
      INFO("kind " << k << " seed " << seed << ": " << pl.note);
      CHECK(!check(p, pl));
      CHECK(pl.arena == opt);
      CHECK(pl.optimal);
      CHECK(pl.lower_bound == opt);
      CHECK(pl.arena == exact{}.place(p).arena);
      if (warm.arena > opt) ++closed;
    }
  CHECK(closed > 0);  // some warm starts were suboptimal: the MILP closed the gap
}

TEST_CASE("place::olla_ilp (CBC): with pyramid pre-placement (§4.5) valid, never worse than the warm start") {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const auto p = testing::random_instance(seed, {.buffers = 12, .steps = 10, .max_size = 30});
    const auto warm = greedy_by_size{}.place(p);
    const auto pl = olla_ilp{.backend = solver::cbc{}, .time_limit_s = 60, .warm_start = greedy_by_size{}}.place(p);
    INFO("seed " << seed << ": " << pl.note);
    CHECK(!check(p, pl));
    CHECK(pl.arena <= warm.arena);
    CHECK(pl.arena >= exact{}.place(p).arena);
    CHECK(pl.lower_bound <= exact{}.place(p).arena);
  }
}

TEST_CASE("place::olla_ilp (CBC): OLLA Figure 4, the MILP leaves the gap between A and B") {
  buffer_problem p;
  p.buffers = {{0, 2, 2}, {1, 4, 1}, {2, 4, 3}};  // A, B, C
  const auto warm = bump{}.place(p);
  REQUIRE(warm.arena > 4);
  for (bool pre : {false, true}) {
    const auto pl = olla_ilp{.backend = solver::cbc{}, .preplace = pre, .warm_start = bump{}}.place(p);
    INFO(pl.note);
    CHECK(pl.arena == 4);
    CHECK(pl.optimal);
    CHECK(!check(p, pl));
  }
  p.capacity = 4;
  CHECK(olla_ilp{.backend = solver::cbc{}, .preplace = false, .warm_start = bump{}}.place(p).arena == 4);
  p.capacity = 3;  // B and C are live together: 4 bytes
  for (bool pre : {false, true}) {
    try {
      (void)olla_ilp{.backend = solver::cbc{}, .preplace = pre, .warm_start = bump{}}.place(p);
      FAIL("capacity 3 cannot be met");
    } catch (const memplan::error& e) {
      CHECK(e.code() == errc::infeasible);
      CHECK(std::string(e.what()).find("capacity") != std::string::npos);
    }
  }
}

TEST_CASE("place::olla_ilp (CBC): size guard falls back with a note") {
  const auto p = testing::random_instance(5, {.buffers = 40, .steps = 6, .max_size = 100});
  const auto warm = bump{}.place(p);
  REQUIRE(warm.arena > arena_lower_bound(p));  // a solve would be needed
  const auto pl = olla_ilp{.backend = solver::cbc{}, .preplace = false, .max_binaries = 3, .warm_start = bump{}}.place(p);
  CHECK(!check(p, pl));
  CHECK(pl.arena == warm.arena);
  CHECK(pl.note.find("model too large") != std::string::npos);
}
