#pragma once
// Independent checks of a scheduler's answer, shared by the schedule tests.
#include <doctest/doctest.h>

#include <memplan/core/adapt.hpp>
#include <memplan/core/analysis.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/core/verify.hpp>

#include "../support/stack_placer.hpp"

namespace memplan::testing {

// The result is a topological order whose claimed peak is its real peak, whose lower bound is
// not above it, and whose plan passes verify.
template <scheduler S>
schedule_result check_scheduler(const problem& p, const S& s, const plan_context& ctx = {}) {
  auto r = s.run(p, ctx);
  INFO("policy " << s.name() << " on " << p.name());
  const auto bad = check_topological(p, r.order);
  REQUIRE_MESSAGE(!bad, (bad ? *bad : std::string()));
  CHECK(r.peak == peak_of(p, r.order));
  CHECK(r.lower_bound <= r.peak);
  CHECK(!r.policy.empty());
  if (r.optimal) CHECK(r.lower_bound == r.peak);
  const auto mp = plan(p, s | stack_placer{}, ctx);
  CHECK(verify(p, mp).ok);
  CHECK(mp.stats.peak == peak_of(p, mp.order()));
  return r;
}

}  // namespace memplan::testing
