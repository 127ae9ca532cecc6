#include <doctest/doctest.h>

#include <memplan/core/adapt.hpp>
#include <memplan/schedule/exact.hpp>
#include <memplan/schedule/given.hpp>
#include <memplan/schedule/list_scheduler.hpp>
#include <memplan/schedule/local_search.hpp>

#include "../support/brute_force.hpp"
#include "../support/olla_graphs.hpp"
#include "../support/random_dag.hpp"
#include "check.hpp"

using namespace memplan;

TEST_CASE("local_search: the incremental profile equals a full recomputation after every kept move") {
  // verify_incremental recomputes profile and lifetimes from scratch after each kept move and
  // throws on any difference.
  std::int64_t kept = 0;
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    const auto p = make_problem(testing::random_dag(seed, {.ops = 10 + static_cast<int>(seed % 50), .max_inputs = 3, .max_outputs = 3,
                                                          .p_inplace = 0.3, .p_control = 0.1, .p_workspace = 0.4, .p_output = 0.2}));
    schedule::local_search_options o;
    o.max_iterations = 3000;
    o.time_limit_s = -1;
    o.verify_incremental = true;
    o.seed = seed;
    const auto base = schedule::given{}.run(p);
    auto im = schedule::detail::improve_order(p, base.order, o, 0, plan_context{});
    CHECK(im.peak == peak_of(p, im.order));
    CHECK(im.peak <= base.peak);
    kept += im.accepted;
  }
  MESSAGE("kept moves checked: " << kept);
  CHECK(kept > 100);
}

TEST_CASE("local_search: verified, never below exact, never above its base") {
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    const auto p = make_problem(testing::random_dag(seed, {.ops = 9}));
    const auto best = schedule::exact{}.run(p).peak;
    const auto base = schedule::given{}.run(p).peak;
    const auto r = testing::check_scheduler(p, schedule::local_search{schedule::given{}, {.time_limit_s = -1, .max_iterations = 2000}});
    CHECK(r.peak >= best);
    CHECK(r.peak <= base);
    CHECK(r.policy == "local_search(given)");
  }
}

TEST_CASE("local_search: moves an op across a branch (OLLA Figure 3 from the given order)") {
  const auto p = make_problem(testing::olla_figure3_graph());
  const auto r = testing::check_scheduler(p, schedule::local_search{schedule::given{}});
  CHECK(r.peak == 45);
  CHECK(r.order == std::vector<op_id>{0, 2, 1, 3});
}

TEST_CASE("local_search: repairs a greedy choice that holds memory too early") {
  // B1 allocates a 50-byte output early; the best order runs chain A (peak 111) first.
  graph::dataflow_graph g("net");
  auto x = g.add_tensor("x", 10, tensor_kind::input);
  auto big = g.add_tensor("big", 100), small = g.add_tensor("small", 1);
  auto out = g.add_tensor("out", 50, tensor_kind::output);
  auto y = g.add_tensor("y", 1, tensor_kind::output);
  g.add_op("A1", {x}, {big});
  g.add_op("A3", {big}, {small});
  g.add_op("B1", {x}, {out});
  g.add_op("join", {small, out}, {y});
  const auto p = make_problem(g);
  CHECK(schedule::min_net_growth().run(p).peak == 161);
  CHECK(testing::check_scheduler(p, schedule::local_search{schedule::min_net_growth()}).peak == 111);
}

TEST_CASE("local_search: improves on every heuristic across random graphs, deterministic per seed") {
  std::int64_t improved = 0;
  for (std::uint64_t seed = 0; seed < 15; ++seed) {
    const auto p = make_problem(testing::random_dag(seed, {.ops = 120, .max_outputs = 3, .p_workspace = 0.3}));
    const auto base = schedule::min_net_growth().run(p).peak;
    const schedule::local_search ls{schedule::min_net_growth(), {.time_limit_s = -1, .max_iterations = 20000, .seed = 7}};
    const auto r = testing::check_scheduler(p, ls);
    CHECK(r.peak <= base);
    improved += r.peak < base;
    CHECK(ls.run(p).order == r.order);
  }
  MESSAGE("local search lowered the min_net_growth peak on " << improved << " of 15 graphs");
}

TEST_CASE("local_search: the iteration budget and the time cap bound the search") {
  const auto p = make_problem(testing::random_dag(4, {.ops = 500}));
  const auto a = schedule::local_search{schedule::given{}, {.time_limit_s = -1, .max_iterations = 0}}.run(p);
  CHECK(a.order == schedule::given{}.run(p).order);
  CHECK(a.note.find("in 0 moves") != std::string::npos);
  const auto b = schedule::local_search{schedule::given{}, {.time_limit_s = 0.0, .max_iterations = 1000000}}.run(p);
  CHECK(b.note.find("time limit") != std::string::npos);
  CHECK(!check_topological(p, b.order));
}
