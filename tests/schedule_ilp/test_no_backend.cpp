// OLLA ILP policies without a MILP backend (the fallback), and the eq. 14 model checked without a
// solver: every topological order encodes to a feasible assignment whose objective is its peak.
#include <doctest/doctest.h>

#include <memplan/core/adapt.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/place/olla_ilp.hpp>
#include <memplan/schedule/default_scheduler.hpp>
#include <memplan/schedule/olla_ilp.hpp>
#include <zoo/small.hpp>

#include "../place/instances.hpp"
#include "../support/brute_force.hpp"
#include "../support/olla_graphs.hpp"
#include "../support/random_dag.hpp"
#include "replay.hpp"

using namespace memplan;

TEST_CASE("schedule::olla_ilp without a backend falls back to default_scheduler and says so") {
  for (std::uint64_t seed = 0; seed < 10; ++seed) {
    const auto p = make_problem(testing::random_dag(seed, {.ops = 15}));
    // default_scheduler with an iteration budget and no time cap, so that the comparison is deterministic
    const schedule::default_scheduler det{.time_limit_s = -1, .max_iterations = 5000};
    const auto r = schedule::olla_ilp{.warm_start = det}.run(p);
    const auto d = det.run(p);
    CHECK(schedule::olla_ilp{}.warm_start.name() == "default");
    INFO("seed " << seed << ": " << r.note);
    CHECK(r.order == d.order);
    CHECK(r.peak == d.peak);
    CHECK(r.note.rfind("olla_ilp: no MILP backend available (link memplan::cbc and pass solver::cbc{}), used default", 0) == 0);
    testing::check_result(p, r);
  }
  // Through the pipeline the note reaches the plan's stats.
  const auto p = make_problem(testing::olla_figure3_graph());
  const auto mp = plan(p, schedule::olla_ilp{} | place::default_placer{});
  REQUIRE(!mp.stats.notes.empty());
  CHECK(mp.stats.notes.front().find("no MILP backend") != std::string::npos);
}

TEST_CASE("place::olla_ilp without a backend falls back to default_placer and says so") {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const auto bp = testing::random_instance(seed, {.buffers = 30, .steps = 12, .max_size = 50});
    const place::default_placer det{.time_limit_s = 1e9, .node_limit = 20000};  // deterministic budget
    const auto r = place::olla_ilp{.warm_start = det}.place(bp);
    const auto d = det.place(bp);
    INFO("seed " << seed << ": " << r.note);
    CHECK(!place::check(bp, r));
    CHECK(r.arena == d.arena);
    CHECK(r.offsets == d.offsets);
    CHECK(r.lower_bound <= r.arena);
    CHECK(r.note.rfind("olla_ilp: no MILP backend available (link memplan::cbc and pass solver::cbc{}), used default", 0) == 0);
  }
}

namespace {
// Every topological order of p encodes to a feasible assignment of the model (with peak variable
// bounded by `upper` units), its objective is the order's peak, and Function 1 decodes it back.
int check_every_order(const problem& p) {
  schedule::detail::olla_schedule_model mm(p);
  std::int64_t worst = 0;
  testing::for_each_topological_order(p, [&](const std::vector<op_id>& o) { worst = std::max(worst, mm.peak_units(o)); });
  mm.build(worst);
  int orders = 0;
  testing::for_each_topological_order(p, [&](const std::vector<op_id>& o) {
    ++orders;
    const auto x = mm.encode(o);
    const auto bad = mm.model().violation(x);
    REQUIRE_MESSAGE(!bad, (bad ? *bad : std::string()));
    const auto obj = mm.model().objective_value(x);
    CHECK(p.resident_bytes() + static_cast<std::int64_t>(obj) * mm.unit() == std::max(p.resident_bytes(), peak_of(p, o)));
    CHECK(mm.decode(x) == o);
  });
  return orders;
}
}  // namespace

TEST_CASE("olla eq. 14 model: every topological order is a feasible assignment with its own peak") {
  int total = 0;
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    const int ops = 5 + static_cast<int>(seed % 4);
    const problem_options po{.inputs_resident = seed % 3 != 0};  // also inputs freed after their last use
    const auto p = make_problem(testing::random_dag(seed, {.ops = ops, .p_inplace = 0.3, .p_control = 0.15, .p_output = 0.2}), {}, po);
    INFO("seed " << seed);
    total += check_every_order(p);
  }
  CHECK(total > 200);
  CHECK(check_every_order(make_problem(testing::olla_figure3_graph())) == 2);
}

TEST_CASE("olla eq. 14 model: spans (eq. 10) are the sequential positions an op can take") {
  const auto p = make_problem(testing::random_dag(7, {.ops = 9, .p_control = 0.2}));
  const auto w = schedule::detail::olla_position_windows(p);
  std::vector<std::int32_t> lo(static_cast<std::size_t>(p.num_ops()), 1 << 30), hi(static_cast<std::size_t>(p.num_ops()), -1);
  testing::for_each_topological_order(p, [&](const std::vector<op_id>& o) {
    for (std::size_t i = 0; i < o.size(); ++i) {
      auto& l = lo[static_cast<std::size_t>(o[i])];
      auto& h = hi[static_cast<std::size_t>(o[i])];
      l = std::min(l, static_cast<std::int32_t>(i));
      h = std::max(h, static_cast<std::int32_t>(i));
    }
  });
  CHECK(w.earliest == lo);  // ancestor / descendant counts are exactly the reachable positions
  CHECK(w.latest == hi);
}

TEST_CASE("olla eq. 14 model: a training graph with early-update edges encodes the default order") {
  const auto p0 = make_problem(zoo::mlp(2, {4, 8, 8, 3}));
  const auto edges = schedule::early_update_edges(p0);
  CHECK(!edges.empty());  // the MLP has update ops
  const auto p = with_edges(p0, edges);
  const auto d = schedule::default_scheduler{}.run(p);
  schedule::detail::olla_schedule_model mm(p);
  mm.build(mm.peak_units(d.order));
  const auto x = mm.encode(d.order);
  CHECK(!mm.model().violation(x));
  CHECK(mm.decode(x) == d.order);
  const auto sz = schedule::olla_ilp{}.model_size(p0);
  CHECK(sz.early_update_edges == static_cast<std::int64_t>(edges.size()));
  CHECK(sz.binaries == static_cast<std::int64_t>(mm.model().stats().binaries));
  CHECK(sz.fixed_by_spans > 0);
  CHECK_THROWS_AS((void)schedule::olla_ilp{.max_ops = 3}.model_size(p0), memplan::error);
}
