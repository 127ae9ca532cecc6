#pragma once
// Test helpers for the OLLA ILP tests: a scheduler that replays a computed result (so a plan can be
// verified without solving again), and the full check of a schedule_result.
#include <doctest/doctest.h>

#include <string>

#include <memplan/core/analysis.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/core/verify.hpp>
#include <memplan/place/greedy_by_size.hpp>

namespace memplan::testing {

struct replay {
  schedule_result result;
  [[nodiscard]] std::string name() const { return "replay"; }
  [[nodiscard]] schedule_result run(const problem&) const { return result; }
};

// Independent checks: topological, claimed peak is the real one, bound not above it, and the plan
// of the order passes memplan::verify (through memplan::plan).
inline void check_result(const problem& p, const schedule_result& r) {
  const auto bad = check_topological(p, r.order);
  REQUIRE_MESSAGE(!bad, (bad ? *bad : std::string()));
  CHECK(r.peak == peak_of(p, r.order));
  CHECK(r.lower_bound <= r.peak);
  if (r.optimal) CHECK(r.lower_bound == r.peak);
  const auto mp = plan(p, replay{r} | place::greedy_by_size{});
  CHECK(verify(p, mp).ok);
  CHECK(mp.stats.peak == r.peak);
}

}  // namespace memplan::testing
