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
  for (std::size_t k = 1; k < pts.size(); ++k) {
    CHECK(pts[k].arena <= pts[k].budget);
    least = std::min(least, pts[k].arena);
  }
  CHECK(least < pts.front().arena);
  CHECK(events >= 2);
}
