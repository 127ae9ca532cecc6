#include <doctest/doctest.h>

#include <memplan/core/adapt.hpp>
#include <memplan/core/bounds.hpp>
#include <memplan/core/analysis.hpp>
#include <memplan/graph/dataflow_graph.hpp>

#include "../support/brute_force.hpp"
#include "../support/olla_graphs.hpp"
#include "../support/random_dag.hpp"

using namespace memplan;

// OLLA Figure 3 (tests/support/olla_graphs.hpp): the given order peaks at 60, the optimum at 45.
inline graph::dataflow_graph olla_figure3() { return testing::olla_figure3_graph(); }

TEST_CASE("analysis: OLLA Figure 3 -- the order changes the peak") {
  const auto p = make_problem(olla_figure3());
  const std::vector<op_id> given{0, 1, 2, 3};
  const std::vector<op_id> better{0, 2, 1, 3};
  CHECK(peak_of(p, given) == 60);
  CHECK(peak_of(p, better) == 45);
  CHECK(testing::brute_force_min_peak(p) == 45);
  const auto prof = profile(p, better);
  CHECK(prof.live == std::vector<std::int64_t>{30, 35, 45, 35});
  CHECK(prof.peak_step == 2);
  // lower bound: at v2 and v3 every order holds a, b's or d's storages -- here it is tight.
  CHECK(lower_bound_peak(p).bytes <= 45);
  CHECK(lower_bound_peak(p).bytes >= 35);
}

TEST_CASE("analysis: topological check names the op") {
  const auto p = make_problem(olla_figure3());
  const std::vector<op_id> bad{1, 0, 2, 3};
  auto why = check_topological(p, bad);
  REQUIRE(why);
  CHECK(why->find("op 'v3' runs before its predecessor op 'v1'") != std::string::npos);
  const std::vector<op_id> dup{0, 0, 2, 3};
  REQUIRE(check_topological(p, dup));
  CHECK(check_topological(p, dup)->find("already ran") != std::string::npos);
  const std::vector<op_id> short_order{0, 1};
  CHECK(check_topological(p, short_order));
  CHECK_THROWS_AS((void)peak_of(p, bad), memplan::error);
}

TEST_CASE("analysis: levels and reachability") {
  const auto p = make_problem(olla_figure3());
  const auto lv = compute_levels(p);
  CHECK(lv.depth == 3);
  CHECK(lv.asap == std::vector<std::int32_t>{0, 1, 1, 2});
  CHECK(lv.alap == std::vector<std::int32_t>{0, 1, 1, 2});
  reachability r(p);
  CHECK(r.reaches(0, 3));
  CHECK(r.reaches(1, 3));
  CHECK_FALSE(r.reaches(1, 2));
  CHECK_FALSE(r.reaches(3, 0));
}

TEST_CASE("analysis: reachability equals a transitive closure on random DAGs") {
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    const auto p = make_problem(testing::random_dag(seed, {.ops = 25}));
    const auto n = static_cast<std::size_t>(p.num_ops());
    std::vector<std::vector<bool>> tc(n, std::vector<bool>(n, false));
    const auto order = topological_order(p);
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const auto v = static_cast<std::size_t>(*it);
      tc[v][v] = true;
      for (auto w : p.succs(*it))
        for (std::size_t k = 0; k < n; ++k)
          if (tc[static_cast<std::size_t>(w)][k]) tc[v][k] = true;
    }
    reachability r(p);
    for (std::size_t u = 0; u < n; ++u)
      for (std::size_t v = 0; v < n; ++v) REQUIRE(r.reaches(static_cast<op_id>(u), static_cast<op_id>(v)) == tc[u][v]);
  }
}

TEST_CASE("analysis: the lower bound never exceeds the best order (brute force)") {
  int tight = 0;
  for (std::uint64_t seed = 0; seed < 60; ++seed) {
    const auto p = make_problem(testing::random_dag(seed, {.ops = 7}));
    const auto best = testing::brute_force_min_peak(p);
    const auto lb = lower_bound_peak(p);
    CHECK(lb.uses_reachability);
    REQUIRE(lb.bytes <= best);
    // the op-local bound alone is never stronger than the full one
    CHECK(lower_bound_peak(p, 0).bytes <= lb.bytes);
    tight += (lb.bytes == best);
  }
  MESSAGE("lower bound tight on " << tight << " of 60 random graphs");
  CHECK(tight > 0);
}

TEST_CASE("analysis: lifetimes follow the memory rule") {
  graph::dataflow_graph g("rule");
  auto x = g.add_tensor("x", 4, tensor_kind::input);
  auto a = g.add_tensor("a", 8);
  auto a2 = g.add_tensor("a2", 8);
  auto o = g.add_tensor("out", 2, tensor_kind::output);
  auto z = g.add_tensor("z", 1);
  g.add_op("p", {x}, {a});
  g.add_op("inpl", {a}, {a2});
  g.set_inplace_of(a2, a);
  g.add_op("q", {a2}, {o});
  g.add_op("r", {x}, {z});
  const auto p = make_problem(g);
  const std::vector<op_id> order{0, 1, 2, 3};
  const auto lt = storage_lifetimes(p, order);
  const auto sa = static_cast<std::size_t>(p.storage_of(1));
  CHECK(lt[sa].first == 0);
  CHECK(lt[sa].last == 2);  // a and a2 share a storage, read last by q
  CHECK(lt[static_cast<std::size_t>(p.storage_of(3))].last == 3);  // output: to the end
  CHECK(lt[static_cast<std::size_t>(p.storage_of(0))].first == 0);
  CHECK(lt[static_cast<std::size_t>(p.storage_of(0))].last == 3);  // resident
  CHECK(profile(p, order).live == std::vector<std::int64_t>{12, 12, 14, 7});
}

TEST_CASE("analysis: inputs may be freed after their last use when told") {
  graph::dataflow_graph g("nonresident");
  auto x = g.add_tensor("x", 100, tensor_kind::input);
  auto a = g.add_tensor("a", 1);
  auto b = g.add_tensor("b", 1);
  g.add_op("p", {x}, {a});
  g.add_op("q", {a}, {b});
  const auto resident = make_problem(g);
  const auto transient = make_problem(g, {}, {.inputs_resident = false});
  const std::vector<op_id> order{0, 1};
  CHECK(peak_of(resident, order) == 102);
  CHECK(profile(transient, order).live == std::vector<std::int64_t>{101, 2});
}

TEST_CASE("analysis: 100k-op chain -- levels, profile and the cheap bound scale") {
  graph::dataflow_graph g("chain");
  auto prev = g.add_tensor("x", 4, tensor_kind::input);
  for (int i = 0; i < 100000; ++i) {
    auto t = g.add_tensor(testing::numbered("t", i), 4 + (i % 7));
    g.add_op(testing::numbered("op", i), {prev}, {t});
    prev = t;
  }
  const auto p = make_problem(g);
  const auto order = topological_order(p);
  CHECK(compute_levels(p).depth == 100000);
  CHECK(peak_of(p, order) > 0);
  const auto lb = lower_bound_peak(p);
  CHECK_FALSE(lb.uses_reachability);
  CHECK(lb.bytes == peak_of(p, order));  // a chain has one order
  reachability r(p);
  CHECK(r.reaches(0, 99999));
  CHECK_FALSE(r.reaches(99999, 0));
}
