// Reliability figures (docs/reliability.md):
//   deadlines  every registered scheduler, placer, checkpointer and offloader under a time limit, on every bundled
//              graph and on adversarial inputs; prints, per policy, its worst wall time (the stage's own
//              seconds and the whole plan() call) against the limit, and the worst overrun. Each
//              checkpointer and offloader also under a budget (plan()'s reruns after an overshoot: three periods at most) and
//              under a stop for the whole plan() one period away.
//   variants   plan_choosing_variants' group search under its time limit (--variant-limit, 2 s) at two
//              budgets on the bundled exports with variants: the search's time and its overrun.
//   scale      planning a training graph of 100k+ ops (peak RSS of the process, printed), and a list of
//              1M buffers read from MiniMalloc CSV text and placed.
// Run: bench_reliability [--only deadlines,scale,variants] [--limit SECONDS] [--variant-limit SECONDS] [--graphs N] [--policy SUBSTRING] [--ops N] [--buffers N]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <memplan/core/pipeline.hpp>
#include <memplan/core/plan_variants.hpp>
#include <memplan/io/buffers_csv.hpp>
#include <memplan/io/gzip.hpp>
#include <memplan/io/json.hpp>
#include <memplan/registry/checkpointers.hpp>
#include <memplan/registry/offloaders.hpp>
#include <memplan/registry/placers.hpp>
#include <memplan/registry/schedulers.hpp>
#include <memplan/remat/default_checkpointer.hpp>

#include "training_dag.hpp"

using namespace memplan;

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

struct worst {
  double allowed = 0;  // the limit the row is held to
  double stage = 0, total = 0;
  std::string where;
  int runs = 0, refusals = 0;
};

struct named_problem {
  std::string name;
  problem p;
};

// The bundled exports (data/models), sorted by name.
std::vector<std::filesystem::path> bundled_exports() {
  const auto dir = std::filesystem::path(MEMPLAN_SOURCE_DIR) / "data" / "models";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().string().ends_with(".json.gz")) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<named_problem> deadline_inputs(int max_graphs) {
  std::vector<named_problem> v;
  for (const auto& f : bundled_exports()) {
    if (static_cast<int>(v.size()) >= max_graphs) break;
    v.push_back({f.filename().string(), io::read_graph(f.string())});
  }
  // Adversarial: wide random training graphs (many equal choices for the searches).
  testing::training_dag_options wide;
  wide.min_layers = wide.max_layers = 400;
  wide.p_skip = 0.6;
  wide.p_control = 0.3;
  v.push_back({"adversarial-training-400", testing::training_dag(11, wide)});
  testing::training_dag_options deep;
  deep.min_layers = deep.max_layers = 800;
  v.push_back({"adversarial-training-800", testing::training_dag(12, deep)});
  return v;
}

void run_deadlines(double limit, int max_graphs, const std::string& policy_filter) {
  const auto inputs = deadline_inputs(max_graphs);
  std::printf("== deadlines: time limit %.3f s, %zu graphs (bundled + adversarial)\n", limit, inputs.size());
  std::map<std::string, worst> table;
  // `allowed`: the limit the row is held to (one period; the budget reruns' rows: three).
  auto record = [&](const std::string& policy, const std::string& graph, auto&& make_plan, auto stage_seconds, double allowed) {
    if (policy.find(policy_filter) == std::string::npos) return;
    auto& w = table[policy];
    w.allowed = allowed;
    const double t0 = now_s();
    try {
      const auto mp = make_plan();
      const double total = now_s() - t0;
      const double stage = stage_seconds(mp.stats, total);
      if (stage > 1.1 * allowed)  // past the target: what each stage did, to see which step overran
        for (const auto& r : mp.stages)
          std::printf("  overran: %s, %s: %.3f s: %s\n", policy.c_str(), graph.c_str(), r.seconds, r.note.substr(0, 400).c_str());
      ++w.runs;
      if (stage > w.stage) {
        w.stage = stage;
        w.where = graph;
      }
      w.total = std::max(w.total, total);
    } catch (const error&) {
      ++w.refusals;  // a budget no plan meets, a graph beyond an exact method's limit
    }
  };
  // The table so far (printed after every graph: a run cut short still leaves its figures).
  auto print_table = [&] {
    std::printf("%-36s %6s %6s %12s %12s %10s  %s\n", "policy", "runs", "refuse", "worst stage", "worst plan()", "overrun", "graph of the worst stage");
    double worst_overrun = -1;
    std::string worst_policy;
    for (const auto& [policy, w] : table) {
      const double overrun = (w.stage - w.allowed) / w.allowed;
      if (overrun > worst_overrun) {
        worst_overrun = overrun;
        worst_policy = policy;
      }
      std::printf("%-36s %6d %6d %10.4f s %10.4f s %9.1f%%  %s\n", policy.c_str(), w.runs, w.refusals, w.stage, w.total,
                  overrun > 0 ? 100 * overrun : 0.0, w.where.c_str());
    }
    std::printf("worst overrun: %.1f %% of the row's limit (%s; one period is %.3f s)\n", worst_overrun > 0 ? 100 * worst_overrun : 0.0,
                worst_policy.c_str(), limit);
  };
  for (const auto& [name, p] : inputs) {
    const double graph_t0 = now_s();
    plan_context ctx;
    ctx.time_limit_s = limit;
    for (const auto& s : schedulers().names())
      record("scheduler " + s, name, [&] { return memplan::plan(p, schedulers().make(s) | place::greedy_by_size{}, ctx); },
             [](const plan_stats& st, double) { return st.schedule_seconds; }, limit);
    for (const auto& pl : placers().names())
      record("placer " + pl, name, [&] { return memplan::plan(p, schedule::given{} | placers().make(pl), ctx); },
             [](const plan_stats& st, double) { return st.place_seconds; }, limit);
    // Checkpointers three ways, at a third of the way from the given order's peak down to the
    // resident bytes:
    // - the policy itself: that as its memory target (one run of the stage);
    // - plan() with that as its budget: where the placed arena overshoots, plan() reruns the stage
    //   aimed lower, the reruns sharing one more period (core/pipeline.hpp), and where none of them
    //   fitted, the least target's run up to one more: three periods at most;
    // - plan() with that budget and a stop for the whole plan one period away (plan_context::stop):
    //   every stage, rerun and check of plan() within it.
    const auto given_peak = peak_of(p, given_order(p));
    const auto third_down = given_peak - (given_peak - p.resident_bytes()) / 3;
    // The three rows of one reducing stage (`alone`, then "budget reruns " and "whole-plan stop " +
    // `label`), its seconds read by `seconds`; `base` carries what its rows share (the offloaders' timing).
    auto three_ways = [&](const std::string& alone, const std::string& label, auto pipeline, const plan_context& base, auto seconds) {
      plan_context targeted = base;
      targeted.memory_target = third_down;
      plan_context budgeted = base;
      budgeted.budget = third_down;
      record(alone, name, [&] { return memplan::plan(p, pipeline(), targeted); }, seconds, limit);
      record("budget reruns " + label, name, [&] { return memplan::plan(p, pipeline(), budgeted); }, seconds, 3 * limit);
      record("whole-plan stop " + label, name,
             [&] {
               plan_context stopped = budgeted;
               stopped.time_limit_s = -1;  // the stages' own defaults, cut to the stop
               stopped.stop = deadline::after(limit);
               return memplan::plan(p, pipeline(), stopped);
             },
             [](const plan_stats&, double total) { return total; }, limit);
    };
    for (const auto& c : checkpointers().names())
      three_ways("checkpointer " + c, c, [&] { return schedule::given{} | checkpointers().make(c) | place::greedy_by_size{}; }, ctx,
                 [](const plan_stats& st, double) { return st.checkpoint_seconds; });
    // Offloaders the same three ways, at 12 GB/s and 15 TFLOP/s (docs/offload.md's setting). A policy
    // that refuses a graph (brute_force above 16 values) is counted as a refusal.
    plan_context offload_ctx = ctx;
    offload_ctx.timing.bandwidth = 12e9;
    offload_ctx.timing.device_flops = 15e12;
    for (const auto& o : offloaders().names())
      three_ways("offloader " + o, "offloader " + o, [&] { return schedule::given{} | offloaders().make(o) | place::greedy_by_size{}; }, offload_ctx,
                 [](const plan_stats& st, double) { return st.offload_seconds; });
    std::printf("  %-40s %6d ops  every policy in %.1f s\n", name.c_str(), p.num_ops(), now_s() - graph_t0);
    print_table();
    std::fflush(stdout);
  }
}

// plan_choosing_variants' group search (core/plan_variants.hpp) under its time limit, as `memplan plan
// --budget` runs it: every bundled export whose variants fall into two sets, at 0.4x and 0.5x of its
// given order's peak. The search's time counts from the first whole set's plan; an overrun is counted
// only where the search planned at least once (when the two whole sets alone take the limit, it does
// not start).
void run_variants(double limit, int max_graphs) {
  std::printf("== variants: group search time limit %.3f s\n", limit);
  std::printf("%-36s %6s %8s %10s %10s %9s  %s\n", "graph", "budget", "plans", "whole sets", "search", "overrun", "note");
  double worst_overrun = 0;
  std::string worst_where = "none";
  int graphs = 0;
  for (const auto& f : bundled_exports()) {
    if (graphs >= max_graphs) break;
    const auto p = io::read_graph(f.string());
    if (choose_variants(p).taken == choose_variants(p, variant_rule::no_peak_higher).taken) continue;
    ++graphs;
    const auto given_peak = peak_of(p, given_order(p));
    for (const double fraction : {0.5, 0.4}) {
      plan_context ctx;
      ctx.budget = static_cast<std::int64_t>(fraction * static_cast<double>(given_peak));
      int calls = 0;
      double first = -1, whole_sets_end = 0;
      auto make_plan = [&](const problem& q, const deadline& until, const plan_to_beat& to_beat) {
        if (first < 0) first = now_s();
        auto c = ctx;
        c.stop = until;
        c.to_beat = to_beat;
        auto mp = memplan::plan(q, schedule::default_scheduler{} | remat::default_checkpointer{} | place::default_placer{}, c);
        if (++calls == 2) whole_sets_end = now_s();
        return mp;
      };
      std::string note;
      try {
        note = plan_choosing_variants(p, make_plan, {.time_limit_s = limit}).note;
      } catch (const error& e) {
        note = e.what();
      }
      const double spent = now_s() - first;
      const double overrun = calls > 2 ? std::max(0.0, (spent - limit) / limit) : 0.0;
      if (overrun > worst_overrun) {
        worst_overrun = overrun;
        worst_where = f.filename().string() + " at " + std::to_string(fraction).substr(0, 3) + "x";
      }
      const auto groups = note.find("; then ");
      char whole[32] = "-";  // (no whole set planned: the budget was refused first)
      if (calls >= 2) std::snprintf(whole, sizeof whole, "%.2f s", whole_sets_end - first);
      std::printf("%-36s %5.1fx %8d %10s %8.2f s %8.1f%%  %s\n", f.filename().string().c_str(), fraction, std::max(0, calls - 2),
                  whole, spent, 100 * overrun, note.substr(groups == std::string::npos ? 0 : groups + 7, 160).c_str());
      std::fflush(stdout);
    }
  }
  std::printf("worst overrun of the group search: %.1f %% of its %.3f s (%s)\n", 100 * worst_overrun, limit, worst_where.c_str());
}

void run_scale(int ops_wanted, std::int64_t buffers) {
  std::printf("== scale\n");
  testing::training_dag_options o;
  o.p_huge = 0;
  o.min_layers = o.max_layers = std::max(1, ops_wanted / 4);  // ~4.1 ops per layer
  const double rss0 = peak_rss_mib();
  double t0 = now_s();
  const auto p = testing::training_dag(1, o);
  const double built = now_s() - t0;
  t0 = now_s();
  const auto mp = memplan::plan(p, schedule::given{} | place::best_fit{}, {.time_limit_s = 0});
  const double given_s = now_s() - t0;
  t0 = now_s();
  const auto mp2 = memplan::plan(p, schedule::default_scheduler{} | place::default_placer{}, {.time_limit_s = 1.0});
  const double default_s = now_s() - t0;
  std::printf("training graph: %d ops, %d tensors; built in %.2f s; given|best_fit %.2f s (peak %lld); "
              "default|default (1 s limits) %.2f s (peak %lld); peak RSS %.0f MiB (%.0f MiB before the graph)\n",
              p.num_ops(), p.num_tensors(), built, given_s, static_cast<long long>(mp.stats.peak), default_s,
              static_cast<long long>(mp2.stats.peak), peak_rss_mib(), rss0);
  // The greedy placers alone on the same graph's buffers (the given order's lifetimes, alignment 256):
  // training graphs keep thousands of ranges live, the case their gap search must scale to
  // (docs/placement.md). The hash of the offsets tells whether two builds place identically.
  {
    buffer_origin origin;
    const auto bp = to_buffers(p, given_timeline(p), 256, origin);
    const auto time_placer = [&](const char* what, const auto& placer) {
      const double s0 = now_s();
      const auto pl = placer.place(bp);
      const double secs = now_s() - s0;
      std::uint64_t h = 1469598103934665603ull;
      for (auto x : pl.offsets) h = (h ^ static_cast<std::uint64_t>(x)) * 1099511628211ull;
      std::printf("  %zu buffers placed by %-22s in %6.2f s, arena %lld, offsets hash %016llx\n", bp.buffers.size(), what, secs,
                  static_cast<long long>(pl.arena), static_cast<unsigned long long>(h));
    };
    time_placer("best_fit", place::best_fit{});
    time_placer("best_fit (temporal order)", place::best_fit{.order = place::best_fit::order_by::temporal});
    time_placer("greedy_by_size", place::greedy_by_size{});
  }
  if (buffers <= 0) return;
  // 1M buffers as MiniMalloc CSV text.
  std::mt19937_64 rng(3);
  std::ostringstream csv;
  csv << "id,lower,upper,size\n";
  for (std::int64_t i = 0; i < buffers; ++i) {
    const auto lower = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(buffers));
    csv << 'b' << i << ',' << lower << ',' << lower + 1 + static_cast<std::int64_t>(rng() % 64) << ',' << 1 + rng() % 4096 << '\n';
  }
  const auto text = csv.str();
  t0 = now_s();
  std::istringstream in(text);
  const auto list = io::read_buffers_csv(in, "1M.csv");
  const double read_s = now_s() - t0;
  t0 = now_s();
  const auto pl = place::best_fit{}.place(list.problem);
  const double place_s = now_s() - t0;
  const auto bad = check(list.problem, pl);
  std::printf("buffer list: %zu buffers (%.0f MiB of CSV) read in %.2f s, best_fit in %.2f s, arena %lld, lower bound %lld, %s; "
              "peak RSS %.0f MiB\n",
              list.problem.buffers.size(), static_cast<double>(text.size()) / 1048576.0, read_s, place_s,
              static_cast<long long>(pl.arena), static_cast<long long>(pl.lower_bound), bad ? bad->c_str() : "checked",
              peak_rss_mib());
}

}  // namespace

int main(int argc, char** argv) {
  std::string only = "deadlines,scale,variants";
  double limit = 0.25, variant_limit = 2.0;  // variant_limit: the group search's default (variant_search)
  int graphs = 1000, ops = 100000;
  std::string policy_filter;  // e.g. "checkpointer revolve": only the policies whose row name contains it
  std::int64_t buffers = 1000000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--only") only = v;
    else if (a == "--limit") limit = std::stod(v);
    else if (a == "--variant-limit") variant_limit = std::stod(v);
    else if (a == "--graphs") graphs = std::stoi(v);
    else if (a == "--policy") policy_filter = v;
    else if (a == "--ops") ops = std::stoi(v);
    else if (a == "--buffers") buffers = std::stoll(v);
    else {
      std::fprintf(stderr, "usage: bench_reliability [--only deadlines,scale,variants] [--limit S] [--variant-limit S] [--graphs N] [--policy SUBSTRING] [--ops N] [--buffers N]\n");
      return 2;
    }
  }
  if (only.find("scale") != std::string::npos) run_scale(ops, buffers);
  if (only.find("deadlines") != std::string::npos) run_deadlines(limit, graphs, policy_filter);
  if (only.find("variants") != std::string::npos) run_variants(variant_limit, graphs);
  return 0;
}
