// cbc.hpp compiled WITHOUT memplan::cbc (no MEMPLAN_HAVE_CBC): it must still compile, report
// available() == false, and turn every solve into a clear error -- the degrade path of ILP policies.
#include <memplan/solver/cbc.hpp>

#include <doctest/doctest.h>

#include <string>

namespace s = memplan::solver;

TEST_CASE("solver::cbc without CBC: not available, solve says how to get it") {
  static_assert(!s::cbc::available());
  static_assert(s::backend<s::cbc>);
  s::model m;
  const s::var x = m.add_binary("x");
  m.maximize(x);
  const s::solution r = s::cbc{}.solve(m, {});
  CHECK(r.status == s::status::error);
  CHECK(r.backend == "cbc");
  CHECK(r.message == "CBC is not available: build with -DMEMPLAN_WITH_CBC=ON and coinor-libcbc-dev (and link memplan::cbc)");
  try {
    s::require_incumbent(r, "schedule::olla_ilp");
    FAIL("no exception");
  } catch (const memplan::error& e) {
    CHECK(e.code() == memplan::errc::solver_error);
    CHECK(std::string(e.what()).find("schedule::olla_ilp: CBC is not available") == 0);
  }
  CHECK_FALSE(s::any_backend(s::cbc{}).available());
}
