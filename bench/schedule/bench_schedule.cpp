// Scheduling benchmark: peak under the given order and under every policy, the reduction, the
// plan time, the gap to lower_bound_peak, on generated training-like graphs (training_graphs.hpp)
// and on the bundled PyTorch graphs (data/models/*.json.gz, when built with memplan::json).
//   memplan_bench_schedule [--no-real] [--quick] [--only SUBSTRING] [--time SECONDS]
// Prints a table, then the target lines: default within 1 % of the lower bound, median default
// plan time <= 0.5 s, a 100k-op synthetic graph by the default heuristic in <= 10 s.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <memplan/core/adapt.hpp>
#include <memplan/core/bounds.hpp>
#include <memplan/core/implementations.hpp>
#include <memplan/core/analysis.hpp>
#include <memplan/registry/schedulers.hpp>
#include <memplan/schedule/schedulers.hpp>

#include "training_graphs.hpp"

#ifdef MEMPLAN_BENCH_WITH_JSON
#include <memplan/io/gzip.hpp>
#include <memplan/io/json.hpp>
#endif

using namespace memplan;
using clock_type = std::chrono::steady_clock;

namespace {

struct row_policy {
  std::string name;
  schedule::any_scheduler s;
};

double seconds_since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

double mib(std::int64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); }

struct graph_result {
  std::string name;
  std::int32_t ops = 0;
  std::int64_t given = 0, lb = 0, best = 0, def = 0, exact = -1;  // exact: proven optimum (-1: not run)
  double def_time = 0.0;
};

graph_result bench_graph(const std::string& name, const problem& p, const std::vector<row_policy>& policies) {
  graph_result g;
  g.name = name;
  g.ops = p.num_ops();
  const auto t0 = clock_type::now();
  g.lb = lower_bound_peak(p).bytes;
  const double lb_time = seconds_since(t0);
  std::int64_t given = -1;
  try {
    given = schedule::given{}.run(p).peak;
  } catch (const memplan::error&) {
  }
  g.given = given;
  std::printf("\n%s: %d ops, %d tensors, given peak %.2f MiB, lower bound %.2f MiB (%.3f s)\n", name.c_str(), p.num_ops(),
              p.num_tensors(), mib(given), mib(g.lb), lb_time);
  std::printf("  %-44s %12s %9s %9s %9s\n", "policy", "peak MiB", "vs given", "gap LB", "time s");
  g.best = -1;
  auto all = policies;
  if (p.num_ops() <= 64) all.push_back({"exact", schedule::exact{.time_limit_s = 30}});
  for (const auto& pol : all) {
    const auto t1 = clock_type::now();
    schedule_result r;
    try {
      r = pol.s.run(p);
    } catch (const memplan::error& e) {
      std::printf("  %-44s %s\n", pol.name.c_str(), e.what());
      continue;
    }
    const double t = seconds_since(t1);
    const double red = given > 0 ? 100.0 * static_cast<double>(given - r.peak) / static_cast<double>(given) : 0.0;
    const double gap = r.peak > 0 ? 100.0 * static_cast<double>(r.peak - g.lb) / static_cast<double>(r.peak) : 0.0;
    std::string label = pol.name;
    if (pol.name == "default" || pol.name == "best_of") label += " [" + r.policy + "]";
    if (label.size() > 44) label = label.substr(0, 41) + "...";
    std::printf("  %-44s %12.3f %8.1f%% %8.2f%% %9.3f\n", label.c_str(), mib(r.peak), red, gap, t);
    if (g.best < 0 || r.peak < g.best) g.best = r.peak;
    if (pol.name == "default") { g.def = r.peak; g.def_time = t; }
    if (pol.name == "exact" && r.optimal) g.exact = r.peak;
  }
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  bool real = true, quick = false;
  std::string only;
  double budget = 1.0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--no-real")) real = false;
    else if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!std::strcmp(argv[i], "--time") && i + 1 < argc) budget = std::atof(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--no-real] [--quick] [--only SUBSTRING] [--time SECONDS]\n", argv[0]);
      return 2;
    }
  }
  std::vector<row_policy> policies;
  for (const auto& n : {"depth_first", "min_net_growth", "max_free", "lookahead", "peak_aware", "reverse_min_net_growth"})
    policies.push_back({n, schedulers().make(n)});
  policies.push_back({"peak_aware+early_updates",
                      schedule::list_scheduler{schedule::priority::min_net_growth, true, schedule::tie_break::dfs, true, false}});
  policies.push_back({"best_of", schedulers().make("best_of")});
  policies.push_back({"default", schedule::default_scheduler{.time_limit_s = budget}});

  std::vector<graph_result> results;
  for (const auto& m : bench::benchmark_models())
    for (std::int64_t batch : {1, 32}) {
      auto o = m;
      o.batch = batch;
      const auto name = "gen:" + m.name + "-b" + std::to_string(batch);
      if (!only.empty() && name.find(only) == std::string::npos) continue;
      results.push_back(bench_graph(name, make_problem(bench::training_graph(o)), policies));
    }
#ifdef MEMPLAN_BENCH_WITH_JSON
  if (real) {
    const std::filesystem::path dir = std::filesystem::path(MEMPLAN_SOURCE_DIR) / "data" / "models";
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(dir))
      for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.path().string().ends_with(".json.gz")) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      const auto name = "real:" + f.filename().string().substr(0, f.filename().string().size() - 8);
      if (!only.empty() && name.find(only) == std::string::npos) continue;
      if (quick && name.find("-b32") != std::string::npos) continue;
      try {
        // The problem plan() orders: under implementation_choice::no_slower (the default) each op with
        // the least workspace among its implementations no slower than its own (core/implementations.hpp).
        const auto g = io::read_graph(f.string());
        const auto sp = scheduling_problem(g, plan_context{});
        results.push_back(bench_graph(name, sp ? *sp : g, policies));
      } catch (const memplan::error& e) {
        std::printf("\n%s: cannot read: %s\n", name.c_str(), e.what());
      }
    }
  }
#else
  if (real) std::printf("\n(real graphs skipped: built without memplan::json)\n");
#endif

  // ---- summary and targets ----
  std::printf("\n%-40s %7s %11s %11s %11s %8s %8s %8s\n", "graph", "ops", "given MiB", "default MiB", "LB MiB", "red %", "gap LB%",
              "time s");
  std::vector<double> times;
  int within = 0, counted = 0, with_exact = 0, at_exact = 0;
  for (const auto& r : results) {
    const double red = r.given > 0 ? 100.0 * static_cast<double>(r.given - r.def) / static_cast<double>(r.given) : 0.0;
    const double gap = r.def > 0 ? 100.0 * static_cast<double>(r.def - r.lb) / static_cast<double>(r.def) : 0.0;
    std::printf("%-40s %7d %11.3f %11.3f %11.3f %8.1f %8.2f %8.3f\n", r.name.c_str(), r.ops, mib(r.given), mib(r.def), mib(r.lb), red,
                gap, r.def_time);
    times.push_back(r.def_time);
    ++counted;
    within += gap <= 1.0;
    if (r.exact >= 0) {
      ++with_exact;
      at_exact += r.def == r.exact;
    }
  }
  std::sort(times.begin(), times.end());
  const double median = times.empty() ? 0.0 : times[times.size() / 2];
  std::printf("\nTARGET default within 1%% of the lower bound: %d of %d graphs\n", within, counted);
  if (with_exact > 0)
    std::printf("       (default equals the proven optimum of exact on %d of the %d graphs small enough for it)\n", at_exact, with_exact);
  const double slowest = times.empty() ? 0.0 : times.back();
  std::printf("TARGET median default plan time <= 0.5 s: median %.3f s, slowest %.3f s (local-search cap %.2f s) -> %s\n", median,
              slowest, budget, median <= 0.5 ? "met" : "NOT met");

  // 100k-op synthetic graph: a deep residual training graph.
  bench::training_graph_options big;
  big.name = "synthetic-100k";
  big.blocks = 14300;  // ~7 ops per block (fwd conv, relu, add; bwd relu, wgrad, dgrad, sum; update)
  big.residual_every = 2;
  big.act_bytes = 1 << 12;
  big.weight_bytes = 1 << 10;
  const auto tb = clock_type::now();
  const auto bp = make_problem(bench::training_graph(big));
  const double build = seconds_since(tb);
  const auto t1 = clock_type::now();
  const auto hr = schedule::peak_aware().run(bp);
  const double heur = seconds_since(t1);
  const auto t2 = clock_type::now();
  const auto dr = schedule::default_scheduler{.time_limit_s = budget}.run(bp);
  const double deft = seconds_since(t2);
  std::printf("TARGET 100k-op graph (%d ops, built in %.2f s): peak_aware %.3f s (peak %.2f MiB); default %.3f s (peak %.2f MiB, LB %.2f MiB, %s) -> %s\n",
              bp.num_ops(), build, heur, mib(hr.peak), deft, mib(dr.peak), mib(dr.lower_bound), dr.policy.c_str(),
              deft <= 10.0 ? "met" : "NOT met");
  return 0;
}
