#include <doctest/doctest.h>

#include <memplan/core/adapt.hpp>
#include <memplan/schedule/exact.hpp>

#include "../support/brute_force.hpp"
#include "../support/olla_graphs.hpp"
#include "../support/random_dag.hpp"
#include "check.hpp"

using namespace memplan;

TEST_CASE("exact: equals brute force over all topological orders") {
  int searched = 0;
  for (std::uint64_t seed = 0; seed < 120; ++seed) {
    const int ops = 6 + static_cast<int>(seed % 5);  // 6..10 ops
    const auto p = make_problem(testing::random_dag(seed, {.ops = ops, .p_inplace = 0.2, .p_control = 0.1}));
    const auto best = testing::brute_force_min_peak(p);
    const auto r = testing::check_scheduler(p, schedule::exact{});
    INFO("seed " << seed << ": " << r.note);
    REQUIRE(r.peak == best);
    CHECK(r.optimal);
    CHECK(r.lower_bound == best);
    searched += r.note.find("states") != std::string::npos;
  }
  MESSAGE("exact searched (heuristic not already at the lower bound) on " << searched << " of 120 graphs");
  CHECK(searched > 0);
}

TEST_CASE("exact: wide graphs with many orders (brute force on 8-9 ops with few edges)") {
  for (std::uint64_t seed = 500; seed < 516; ++seed) {
    const auto p = make_problem(testing::random_dag(seed, {.ops = 8 + static_cast<int>(seed % 2), .max_inputs = 1, .max_outputs = 3,
                                                          .p_workspace = 0.4}));
    const auto best = testing::brute_force_min_peak(p);
    REQUIRE(schedule::exact{}.run(p).peak == best);
  }
}

TEST_CASE("exact: OLLA Figure 3") {
  const auto p = make_problem(testing::olla_figure3_graph());
  const auto r = testing::check_scheduler(p, schedule::exact{});
  CHECK(r.peak == 45);
  CHECK(r.optimal);
  CHECK(r.order == std::vector<op_id>{0, 2, 1, 3});
}

TEST_CASE("exact: refuses beyond its op limit, naming the size and the limit") {
  const auto p = make_problem(testing::random_dag(3, {.ops = 65}));
  try {
    (void)schedule::exact{}.run(p);
    FAIL("expected limit_exceeded");
  } catch (const memplan::error& e) {
    CHECK(e.code() == errc::limit_exceeded);
    const std::string w = e.what();
    CHECK(w.find("65 ops") != std::string::npos);
    CHECK(w.find("limit of 64") != std::string::npos);
  }
  const auto q = make_problem(testing::random_dag(3, {.ops = 20}));
  CHECK_THROWS_AS((void)schedule::exact{.max_ops = 10}.run(q), memplan::error);
}

TEST_CASE("exact: refuses when the search needs more states than max_states") {
  // Wide graphs: the heuristics rarely hit the bound, so the search must memoize states.
  int refused = 0;
  for (std::uint64_t seed = 0; seed < 40 && refused == 0; ++seed) {
    const auto p = make_problem(testing::random_dag(seed, {.ops = 30, .max_inputs = 2, .max_outputs = 3, .p_workspace = 0.5}));
    try {
      (void)schedule::exact{.max_states = 3}.run(p);
    } catch (const memplan::error& e) {
      CHECK(e.code() == errc::limit_exceeded);
      CHECK(std::string(e.what()).find("more than 3 search states") != std::string::npos);
      ++refused;
    }
  }
  CHECK(refused == 1);
}

TEST_CASE("exact: the time limit returns the best order found with optimal = false") {
  int timed_out = 0;
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    const auto p = make_problem(testing::random_dag(seed, {.ops = 40, .max_inputs = 2, .max_outputs = 3, .p_workspace = 0.5}));
    const auto r = schedule::exact{.time_limit_s = 0.0}.run(p);
    REQUIRE(!check_topological(p, r.order));
    CHECK(r.peak == peak_of(p, r.order));
    if (r.note.find("time limit") != std::string::npos) {
      ++timed_out;
      CHECK_FALSE(r.optimal);
      CHECK(r.lower_bound <= r.peak);
    } else {
      CHECK(r.optimal);  // a list schedule already met the lower bound
    }
  }
  CHECK(timed_out > 0);
}

TEST_CASE("exact: graphs without ops, and deterministic") {
  graph::dataflow_graph g("empty");
  (void)g.add_tensor("w", 8, tensor_kind::weight);
  const auto p = make_problem(g);
  const auto r = schedule::exact{}.run(p);
  CHECK(r.order.empty());
  CHECK(r.peak == 8);
  CHECK(r.optimal);
  const auto q = make_problem(testing::random_dag(21, {.ops = 14}));
  CHECK(schedule::exact{}.run(q).order == schedule::exact{}.run(q).order);
}
