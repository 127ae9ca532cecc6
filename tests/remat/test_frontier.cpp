#include <doctest/doctest.h>

#include <memplan/core/adapt.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/remat/default_checkpointer.hpp>
#include <memplan/remat/frontier.hpp>
#include <memplan/schedule/default_scheduler.hpp>
#include <zoo/zoo.hpp>

using namespace memplan;

TEST_CASE("frontier: from the no-recompute arena down to the smallest budget met, every point a plan") {
  const auto p = make_problem(zoo::resnet(14, 8, 64));
  int events = 0;
  plan_context ctx;
  ctx.progress = [&](const progress_event&) { ++events; };
  const auto pts = remat::frontier(p, schedule::default_scheduler{.time_limit_s = -1, .max_iterations = 2000}, remat::default_checkpointer{},
                                   place::greedy_by_size{}, {.points = 6}, ctx);
  REQUIRE(pts.size() >= 3);
  CHECK(pts.front().budget == -1);
  CHECK(pts.front().recomputed_ops == 0);
  std::int64_t least = pts.front().arena;
  int bounded = 0;
  for (std::size_t k = 1; k < pts.size(); ++k) {
    CHECK(pts[k].arena <= pts[k].budget);
    least = std::min(least, pts[k].arena);
    // Every point lies on or above the lower bounds for its arena (core/recompute_bound.hpp), the
    // any-order one below the point order's.
    CHECK(pts[k].overhead_lower_bound >= 0);
    CHECK(pts[k].overhead_lower_bound <= pts[k].overhead + 1e-12);
    CHECK(pts[k].overhead_lower_bound_any_order <= pts[k].overhead_lower_bound + 1e-12);
    bounded += pts[k].overhead_lower_bound > 0;
  }
  CHECK(pts.front().overhead_lower_bound == 0.0);
  CHECK(bounded > 0);
  CHECK(least < pts.front().arena);
  CHECK(events >= 2);
}
