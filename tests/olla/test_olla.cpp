#include <doctest/doctest.h>

#include <memplan/olla.hpp>

#include "../support/brute_force.hpp"
#include "../support/random_dag.hpp"

using namespace memplan;

TEST_CASE("olla::optimize: verified plans, never worse than the given order, zero fragmentation when reachable") {
  int zero_frag = 0;
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    const auto g = testing::random_dag(seed, {.ops = 8});
    const auto p = make_problem(g);
    const auto mp = olla::optimize(g, {.schedule_time_limit_s = 0.2, .place_time_limit_s = 0.05, .alignment = 1});
    REQUIRE(verify(p, mp).ok);
    CHECK(mp.stats.peak <= mp.stats.given_peak);
    CHECK(mp.stats.peak >= testing::brute_force_min_peak(p));
    CHECK(mp.stats.lower_bound <= mp.stats.peak);
    CHECK(mp.arena >= mp.stats.peak);
    zero_frag += (mp.arena == mp.stats.peak);
  }
  MESSAGE("zero fragmentation on " << zero_frag << " of 40 random graphs");
  CHECK(zero_frag > 30);
}

TEST_CASE("olla::optimize: capacity below the peak is infeasible with a clear error") {
  const auto g = testing::random_dag(3, {.ops = 12});
  const auto mp = olla::optimize(g);
  try {
    (void)olla::optimize(g, {.capacity = mp.stats.peak - 1});
    FAIL("expected errc::infeasible");
  } catch (const memplan::error& e) {
    CHECK(e.code() == errc::infeasible);
  }
}

TEST_CASE("olla::optimize: reorder=false keeps the given order") {
  const auto g = testing::random_dag(5, {.ops = 15});
  const auto p = make_problem(g);
  const auto mp = olla::optimize(g, {.reorder = false});
  std::vector<op_id> given(static_cast<std::size_t>(p.num_ops()));
  for (std::size_t i = 0; i < given.size(); ++i) given[i] = static_cast<op_id>(i);
  CHECK(mp.order() == given);
  CHECK(mp.stats.peak == mp.stats.given_peak);
}

TEST_CASE("olla::optimize: the lower bound, the given peak and the plan's timeline are computed once each") {
  auto p = make_problem(testing::random_dag(17, {.ops = 200, .max_outputs = 2, .p_inplace = 0.1, .p_workspace = 0.2}));
  analysis_counters counters;
  p.instrument(&counters);
  const auto mp = olla::optimize(p, {.deterministic = true});
  CHECK(verify(p, mp).ok);
  CHECK(counters.lower_bounds == 1);  // lower_bound_peak: shared by the scheduler and the report
  CHECK(counters.timelines == 1);     // the chosen order's lifetimes and profile: built once, placed and reported from
  MESSAGE("storage_lifetimes calls (candidate orders of the search included): " << counters.lifetimes.load()
          << ", topological checks: " << counters.topological_checks.load());
}
