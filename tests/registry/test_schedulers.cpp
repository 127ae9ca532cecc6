#include <doctest/doctest.h>

#include <memplan/core/adapt.hpp>
#include <memplan/registry/schedulers.hpp>

#include "../../bench/schedule/training_graphs.hpp"
#include "../support/olla_graphs.hpp"
#include "../support/random_dag.hpp"
#include "../schedule/check.hpp"

using namespace memplan;

TEST_CASE("schedulers registry: every registered policy runs, verifies, and is never below exact") {
  const auto names = schedulers().names();
  const std::vector<std::string> mine{"given", "depth_first", "min_net_growth", "max_free", "lookahead", "peak_aware",
                                      "reverse_min_net_growth", "best_of", "local_search", "exact", "default"};
  REQUIRE(names.size() >= mine.size());  // the solver layer registers olla_ilp after these
  CHECK(std::vector<std::string>(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(mine.size())) == mine);
  for (std::uint64_t seed = 0; seed < 25; ++seed) {
    const auto p = make_problem(testing::random_dag(seed, {.ops = 10, .p_inplace = 0.2, .p_control = 0.1}));
    const auto best = schedule::exact{}.run(p).peak;
    for (const auto& n : names) {
      if (n == "olla_ilp") continue;  // the solver layer's policy: tested with the solver
      const auto r = testing::check_scheduler(p, schedulers().make(n), {.time_limit_s = 5});
      CHECK(r.peak >= best);
    }
  }
}

TEST_CASE("schedulers registry: OLLA Figure 3 optimum by every policy but given") {
  const auto p = make_problem(testing::olla_figure3_graph());
  for (const auto& n : schedulers().names()) {
    INFO(n);
    const auto r = schedulers().make(n).run(p, {.time_limit_s = 10});
    CHECK(r.peak == (n == "given" ? 60 : 45));
  }
}

TEST_CASE("schedulers registry: unknown names list the valid ones, options pass through") {
  try {
    (void)schedulers().make("fastest");
    FAIL("expected an error");
  } catch (const memplan::error& e) {
    CHECK(e.code() == errc::invalid_argument);
    const std::string w = e.what();
    CHECK(w.find("unknown scheduler 'fastest'") != std::string::npos);
    CHECK(w.find("given, depth_first") != std::string::npos);
    CHECK(w.find("default") != std::string::npos);
  }
  // The context's time limit reaches exact; its progress callback hears from it.
  int events = 0;
  const auto p = make_problem(testing::random_dag(2, {.ops = 40, .max_inputs = 2, .max_outputs = 3, .p_workspace = 0.5}));
  const auto s = schedulers().make("exact");
  plan_context ctx;
  ctx.time_limit_s = 0.0;
  ctx.progress = [&](const progress_event& e) {
    CHECK(e.policy == "exact");
    ++events;
  };
  const auto r = s.run(p, ctx);
  CHECK(events >= 1);
  if (!r.optimal) CHECK(r.note.find("time limit") != std::string::npos);
  // any_scheduler is a copyable value
  auto copy = s;
  CHECK(copy.name() == "exact");
}

TEST_CASE("schedulers registry: same input and options give the same order") {
  const auto p = make_problem(testing::random_dag(8, {.ops = 12}));
  for (const auto& n : schedulers().names()) {
    if (n == "local_search" || n == "default" || n == "olla_ilp") continue;  // time-capped: checked with iteration budgets elsewhere
    CHECK(schedulers().make(n).run(p).order == schedulers().make(n).run(p).order);
  }
  // In deterministic mode the time-capped ones too.
  const plan_context det{.deterministic = true};
  for (const auto* n : {"local_search", "default"})
    CHECK(schedulers().make(n).run(p, det).order == schedulers().make(n).run(p, det).order);
}

TEST_CASE("schedulers registry: every policy verifies on training-like graphs (in-place updates, residuals, branches)") {
  for (auto m : bench::benchmark_models()) {
    m.blocks = std::min(m.blocks, 6);
    for (std::int64_t batch : {1, 32}) {
      m.batch = batch;
      const auto p = make_problem(bench::training_graph(m));
      const auto given = schedule::given{}.run(p).peak;
      for (const auto& n : schedulers().names()) {
        if (n == "olla_ilp") continue;
        if (n == "exact" && p.num_ops() > 64) {
          CHECK_THROWS_AS((void)schedulers().make(n).run(p), memplan::error);
          continue;
        }
        const auto r = testing::check_scheduler(p, schedulers().make(n), {.time_limit_s = 2});
        if (n == "default" || n == "exact") CHECK(r.peak <= given);  // given competes in default
      }
    }
  }
}
