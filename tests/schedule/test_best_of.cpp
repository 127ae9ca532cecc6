#include <doctest/doctest.h>

#include <algorithm>

#include <memplan/core/adapt.hpp>
#include <memplan/core/bounds.hpp>
#include <memplan/core/best_of.hpp>
#include <memplan/schedule/default_scheduler.hpp>
#include <memplan/schedule/exact.hpp>
#include <memplan/schedule/given.hpp>
#include <memplan/schedule/list_scheduler.hpp>

#include "../property/training_dag.hpp"
#include "../support/olla_graphs.hpp"
#include "../support/random_dag.hpp"
#include "check.hpp"

using namespace memplan;

namespace {
// A scheduler that returns a fixed (topological) order under a fixed name: lets the tests pick
// winners and ties.
struct fixed_order {
  std::string label;
  std::vector<op_id> order;
  [[nodiscard]] std::string name() const { return label; }
  [[nodiscard]] schedule_result run(const problem& p, const plan_context& = {}) const {
    schedule_result r;
    r.order = order;
    r.peak = peak_of(p, order);
    r.policy = label;
    return r;
  }
};
}  // namespace

TEST_CASE("best_of: keeps the lowest peak and names the winner, ties go to the first") {
  const auto p = make_problem(testing::olla_figure3_graph());
  const fixed_order worse{"worse", {0, 1, 2, 3}}, better{"better", {0, 2, 1, 3}}, also{"also", {0, 2, 1, 3}};
  const auto r = schedule::best_of{worse, better, also}.run(p);
  CHECK(r.peak == 45);
  CHECK(r.policy == "better");
  CHECK(r.note.find("worse=60") != std::string::npos);
  CHECK(schedule::best_of{also, better}.run(p).policy == "also");
  CHECK(schedule::best_of{worse, better}.name() == "best_of(worse,better)");
  // copyable value
  const auto b = schedule::best_of{schedule::given{}, schedule::peak_aware()};
  auto c = b;
  CHECK(c.run(p).peak == 45);
  CHECK(c.run(p).policy == "peak_aware");
}

TEST_CASE("default: verified, fills the lower bound, optimal when it reaches it") {
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    const auto p = make_problem(testing::random_dag(seed, {.ops = 9}));
    const auto best = schedule::exact{}.run(p).peak;
    const auto r = testing::check_scheduler(p, schedule::default_scheduler{});
    CHECK(r.peak >= best);
    CHECK(r.lower_bound == lower_bound_peak(p).bytes);
    CHECK(r.optimal == (r.peak == r.lower_bound));
  }
  const auto p = make_problem(testing::olla_figure3_graph());
  const auto r = schedule::default_scheduler{}.run(p);
  CHECK(r.peak == 45);
  CHECK(r.policy.rfind("default(", 0) == 0);
}

TEST_CASE("default: deterministic with an iteration budget") {
  const auto p = make_problem(testing::random_dag(31, {.ops = 400, .max_outputs = 3, .p_workspace = 0.3}));
  const schedule::default_scheduler d{.time_limit_s = -1, .max_iterations = 20000};
  const auto a = d.run(p), b = d.run(p);
  CHECK(a.order == b.order);
  CHECK(a.peak <= schedule::min_net_growth().run(p).peak);
}

TEST_CASE("default: with a memory target below every order's peak, the best list order stands (no local search)") {
  const auto p = make_problem(testing::random_dag(31, {.ops = 400, .max_outputs = 3, .p_workspace = 0.3}));
  const schedule::default_scheduler d{.time_limit_s = -1, .max_iterations = 20000};
  const auto free_run = d.run(p);
  REQUIRE(free_run.peak > free_run.lower_bound);  // a gap, so the local search runs without a target
  CHECK(free_run.note.find("local_search:") != std::string::npos);
  plan_context ctx;
  ctx.budget = free_run.lower_bound - 1;
  const auto r = d.run(p, ctx);
  CHECK(r.note.find("local_search skipped: the memory target " + std::to_string(ctx.budget) + " is below every order's peak") !=
        std::string::npos);
  // The lowest-peak list order, first on ties, as best_of of the same heuristics gives it.
  std::int64_t least = -1;
  for (const auto& h : schedule::default_heuristics(false)) {
    const auto q = h.run(p);
    if (least < 0 || q.peak < least) least = q.peak;
  }
  if (is_topological(p, given_order(p))) least = std::min(least, peak_of(p, given_order(p)));
  CHECK(r.peak == least);
  CHECK(check_topological(p, r.order) == std::nullopt);
  // The peak decides nothing there: the second best order and the graph's own go along as
  // alternatives for the checkpointer (timeline::alternatives), each executable, distinct, named.
  REQUIRE_FALSE(r.alternatives.empty());
  CHECK(r.alternatives.size() <= 2);
  CHECK(r.note.find("alternatives for the stages after it:") != std::string::npos);
  for (std::size_t i = 0; i < r.alternatives.size(); ++i) {
    const auto& a = r.alternatives[i];
    CAPTURE(a.policy);
    CHECK_FALSE(a.policy.empty());
    CHECK(check_topological(p, a.order) == std::nullopt);
    CHECK(a.order != r.order);
    for (std::size_t j = 0; j < i; ++j) CHECK(a.order != r.alternatives[j].order);
  }
  const bool given_runs = is_topological(p, given_order(p));
  if (given_runs && given_order(p) != r.order)
    CHECK(std::any_of(r.alternatives.begin(), r.alternatives.end(), [&](const order_alternative& a) { return a.order == given_order(p); }));
  // They reach the timeline the pipeline passes on.
  const auto tl = run_stage(d, p, timeline{}, ctx);
  CHECK(tl.alternatives == r.alternatives);
  // A target the order bound allows: the local search runs as before, and the graph's own order is
  // the one alternative (a stage after it may place lower there). Without a memory limit: none.
  ctx.budget = free_run.lower_bound;
  const auto allowed = d.run(p, ctx);
  CHECK(allowed.order == free_run.order);
  if (given_runs && given_order(p) != allowed.order) {
    REQUIRE(allowed.alternatives.size() == 1);
    CHECK(allowed.alternatives.front().policy == "given");
    CHECK(allowed.alternatives.front().order == given_order(p));
  } else {
    CHECK(allowed.alternatives.empty());
  }
  CHECK(free_run.alternatives.empty());
}

TEST_CASE("default: under a memory limit the graph's own order goes along where a list order reached the bound") {
  // Random training graph 393 (the property volume test's): peak_aware reaches the order bound,
  // 20,817 B, as the given order does, with another order. The stages after the scheduler get the
  // given order as an alternative where a memory limit is set, and nothing without one.
  const auto p = testing::training_dag(393);
  const schedule::default_scheduler d{.time_limit_s = -1, .max_iterations = 20000};
  const auto free_run = d.run(p);
  REQUIRE(free_run.optimal);
  REQUIRE(free_run.order != given_order(p));
  REQUIRE(peak_of(p, given_order(p)) == free_run.peak);
  CHECK(free_run.alternatives.empty());
  for (const auto budget : {free_run.peak - 1, free_run.peak}) {
    CAPTURE(budget);
    plan_context ctx;
    ctx.budget = budget;
    const auto r = d.run(p, ctx);
    CHECK(r.order == free_run.order);  // the given order does not win at an equal peak
    REQUIRE(r.alternatives.size() == 1);
    CHECK(r.alternatives.front().policy == "given");
    CHECK(r.alternatives.front().order == given_order(p));
    CHECK(r.note.find("alternatives for the stages after it: given") != std::string::npos);
  }
}
