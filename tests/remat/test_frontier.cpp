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
  // A curve: along it the arena falls and the overhead rises; no point beats another.
  for (std::size_t k = 1; k < pts.size(); ++k) {
    CHECK(pts[k].arena < pts[k - 1].arena);
    if (k >= 2) CHECK(pts[k].overhead > pts[k - 1].overhead);
  }
  CHECK(remat::undominated(pts).size() == pts.size());
  CHECK(least < pts.front().arena);
  CHECK(events >= 2);
}

TEST_CASE("frontier: undominated keeps the points no other beats in arena and overhead, the first of equal ones") {
  auto pt = [](std::int64_t arena, double overhead) {
    remat::frontier_point f;
    f.arena = arena;
    f.overhead = overhead;
    return f;
  };
  // 0: no recompute; 1: beaten by 2 (less memory, less overhead: a heuristic's non-monotone budget
  // step); 3 repeats 2; 4 trades more overhead for less memory; 5 is beaten by 4.
  const std::vector<remat::frontier_point> pts{pt(1000, 0.0), pt(800, 0.30), pt(700, 0.20), pt(700, 0.20), pt(500, 0.50), pt(600, 0.60)};
  CHECK(remat::undominated(pts) == std::vector<std::size_t>{0, 2, 4});
  CHECK(remat::undominated({}).empty());
  CHECK(remat::undominated({pt(5, 0.1)}) == std::vector<std::size_t>{0});
}
