// Thread safety (docs/reliability.md, "Threads"): a `problem` and the policy values (including the
// registries' type-erased ones) may be shared by threads that plan concurrently, each with its own
// plan_context. Four threads plan several graphs through every kind of stage at once; every plan must
// verify and equal, byte for byte, the plan the same job gives on one thread (deterministic mode).
// The `tsan` preset runs this under ThreadSanitizer (docs/reliability.md).
#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <memplan/core/adapt.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/core/verify.hpp>
#include <memplan/registry/checkpointers.hpp>
#include <memplan/registry/offloaders.hpp>
#include <memplan/registry/placers.hpp>
#include <memplan/registry/schedulers.hpp>

#include "../../bench/schedule/training_graphs.hpp"
#include "../support/random_dag.hpp"

using namespace memplan;

namespace {

struct job {
  const problem* p;
  std::string scheduler, checkpointer, offloader, placer;
  double budget_fraction;  // of the no-recompute peak; 0: no budget
};

// What a plan is, as data: every step (kind, id, implementation, materialization, transfer times),
// every offset, the arena and the peak.
std::string fingerprint(const memory_plan& mp) {
  std::string s = std::to_string(mp.arena) + "/" + std::to_string(mp.stats.peak) + ":";
  for (const auto& st : mp.steps)
    s += std::to_string(static_cast<int>(st.kind)) + "," + std::to_string(st.id) + "," + std::to_string(st.impl) + "," +
         std::to_string(st.workspace_offset) + ";";
  for (const auto& m : mp.mats) s += std::to_string(m.storage) + "@" + std::to_string(m.offset) + ";";
  return s;
}

std::string run_job(const job& j, std::int64_t no_recompute_peak) {
  plan_context ctx;
  ctx.deterministic = true;
  ctx.timing = {.bandwidth = 1e6, .device_flops = 1e9};  // offloaders need a copy engine
  if (j.budget_fraction > 0) ctx.budget = static_cast<std::int64_t>(j.budget_fraction * static_cast<double>(no_recompute_peak));
  try {
    const auto pipe = schedulers().make(j.scheduler) | checkpointers().make(j.checkpointer) | offloaders().make(j.offloader) |
                      placers().make(j.placer);
    const auto mp = plan(*j.p, pipe, ctx);
    if (auto r = verify(*j.p, mp); !r) return "INVALID: " + r.violation;
    return fingerprint(mp);
  } catch (const error& e) {
    return std::string("error ") + std::string(to_string(e.code())) + ": " + e.what();  // e.g. an infeasible budget: the same on every thread
  }
}

}  // namespace

TEST_CASE("threads plan many graphs at once through every stage kind, sharing problems and policies") {
  std::vector<problem> problems;
  for (std::uint64_t seed = 0; seed < 1; ++seed) problems.push_back(make_problem(testing::random_dag(seed, {.ops = 30})));
  for (const auto& m : bench::benchmark_models())
    if (m.name != "deep-resnet") problems.push_back(make_problem(bench::training_graph(m)));
  std::vector<std::int64_t> peaks;
  for (const auto& p : problems)
    peaks.push_back(plan(p, schedule::given{} | place::greedy_by_size{}, {.deterministic = true}).stats.peak);

  std::vector<job> jobs;
  const std::vector<std::string> scheds{"given", "default", "local_search"}, ckpts{"none", "default", "monet_greedy", "checkmate_ilp"},
      offs{"none", "default"}, places{"default", "best_fit", "exact"};
  for (std::size_t k = 0; k < problems.size(); ++k)
    for (std::size_t a = 0; a < scheds.size(); ++a)
      for (std::size_t b = 0; b < ckpts.size(); ++b) {
        // Every combination of scheduler and checkpointer; offloader and placer rotate (all are met).
        const auto c = (k + a + b) % offs.size(), d = (k + 2 * a + b) % places.size();
        const bool reduce = ckpts[b] != "none" || offs[c] != "none";
        jobs.push_back({&problems[k], scheds[a], ckpts[b], offs[c], places[d], reduce ? 0.8 : 0.0});
      }
  auto peak_of = [&](const job& j) { return peaks[static_cast<std::size_t>(j.p - problems.data())]; };

  std::vector<std::string> alone(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) alone[i] = run_job(jobs[i], peak_of(jobs[i]));

  // Thread t takes the jobs of its parity, from its own starting point: every job runs on two threads,
  // and four threads plan at once throughout.
  constexpr std::size_t threads = 4;
  std::vector<std::vector<std::string>> got(threads, std::vector<std::string>(jobs.size()));
  {
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (std::size_t r = 0; r < jobs.size(); ++r) {
          const auto i = (r + t * jobs.size() / threads) % jobs.size();
          if (i % 2 == t % 2) got[t][i] = run_job(jobs[i], peak_of(jobs[i]));
        }
      });
    for (auto& th : pool) th.join();
  }
  std::size_t planned = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    INFO(jobs[i].p->name() << ": " << jobs[i].scheduler << " | " << jobs[i].checkpointer << " | " << jobs[i].offloader << " | "
                           << jobs[i].placer);
    CHECK(alone[i].rfind("INVALID", 0) != 0);
    planned += alone[i].rfind("error", 0) != 0;
    for (std::size_t t = i % 2; t < threads; t += 2) CHECK(got[t][i] == alone[i]);
  }
  MESSAGE(planned << " of " << jobs.size() << " jobs planned (the others: the budget out of reach, the same error on every thread)");
  CHECK(planned * 10 >= jobs.size() * 6);
}
