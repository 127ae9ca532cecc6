// Recomputation benchmark (docs/recompute.md). Prints, does not assert:
//  * Chen et al. Fig. 5: ResNet in Chen's configuration (batch 32), memory vs depth for "no
//    optimisation" (every tensor its own memory), "in-place + sharing" (memplan's plan without
//    recomputation) and the sublinear plan (remat::chen_budget), with its recompute overhead;
//  * Chen Fig. 6: the LSTM (4 x 1024, batch 64) over sequence length, the same three series;
//  * the ResNet-1001 target: <= 7 GiB at <= one extra forward pass, planned in <= 1 s;
//  * real training exports at batch 32 (data/models): the default checkpointer at 0.5x and 0.7x of
//    the no-recompute plan's peak: arena, overhead, plan time, and at 0.5x the lower bounds on the
//    overhead of any plan within the budget (core/recompute_bound.hpp); with --milp-bound S (and CBC),
//    also remat/milp_bound.hpp's per-op 0-1 bounds in the plan's order and in any order, S seconds per
//    graph each; on graphs with variants, also the bound over every choice of them.
// Writes the two figures as SVG (log-log) when asked.
//
// Usage: memplan_bench_remat [--quick] [--no-real] [--plots DIR] [--only SUBSTRING] [--milp-bound SECONDS]
#include <algorithm>
#include <chrono>
#include <limits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <memplan/core/adapt.hpp>
#include <memplan/core/plan_variants.hpp>
#include <memplan/core/recompute_bound.hpp>
#include <memplan/remat/milp_bound.hpp>
#ifdef MEMPLAN_BENCH_CBC
#include <memplan/solver/cbc.hpp>
#endif
#include <memplan/core/variants.hpp>
#include <memplan/core/any_stage.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/io/chart.hpp>
#include <memplan/io/gzip.hpp>
#include <memplan/io/json.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/remat/chen.hpp>
#include <memplan/remat/default_checkpointer.hpp>
#include <memplan/remat/none.hpp>
#include <memplan/schedule/default_scheduler.hpp>
#include <memplan/schedule/given.hpp>
#include <zoo/zoo.hpp>

using namespace memplan;
using clock_type = std::chrono::steady_clock;

namespace {

double secs_since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }
double gib(std::int64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0 * 1024.0); }

// Forward ops' share of a step's cost: "one extra forward pass" of recomputation.
double forward_cost(const problem& p) {
  double f = 0;
  for (op_id o = 0; o < p.num_ops(); ++o)
    if (p.phase(o) == op_phase::forward) f += p.cost(o);
  return f;
}

struct row {
  double x = 0;
  std::int64_t naive = 0, sharing = 0, sublinear = 0, resident = 0;
  double overhead = 0, forward_share = 0, seconds = 0;
};

// The three of Chen's series for one graph. The given order, as Chen's framework runs it.
row chen_row(const problem& p, double x) {
  row r;
  r.x = x;
  r.resident = p.resident_bytes();
  for (tensor_id t = 0; t < p.num_tensors(); ++t) r.naive += p.bytes(t);
  r.sharing = plan(p, schedule::given{} | remat::none{} | place::greedy_by_size{}).arena;
  const auto t0 = clock_type::now();
  const auto mp = plan(p, schedule::given{} | remat::chen_budget{} | place::greedy_by_size{});
  r.seconds = secs_since(t0);
  r.sublinear = mp.arena;
  r.overhead = mp.stats.recompute_cost / mp.stats.compute_cost;
  r.forward_share = forward_cost(p) / mp.stats.compute_cost;
  return r;
}

// Chen plots the feature maps (what the plan allocates besides the resident weights, optimizer state
// and batch); both are printed: the whole arena, and "fm" = arena - resident.
void print_rows(const char* what, const char* xname, const std::vector<row>& rows) {
  std::printf("\n%s\n%8s %14s %16s %14s | %12s %12s %12s | %9s %11s %7s\n", what, xname, "no opt (GiB)", "sharing (GiB)",
              "sublinear", "fm: no opt", "sharing", "sublinear", "overhead", "1 fwd pass", "plan s");
  for (const auto& r : rows)
    std::printf("%8.0f %14.2f %16.2f %14.2f | %12.2f %12.2f %12.2f | %8.1f%% %10.1f%% %7.3f\n", r.x, gib(r.naive), gib(r.sharing),
                gib(r.sublinear), gib(r.naive - r.resident), gib(r.sharing - r.resident), gib(r.sublinear - r.resident), 100 * r.overhead,
                100 * r.forward_share, r.seconds);
}

void plot(const std::string& path, const std::string& title, const std::string& xl, const std::vector<row>& rows) {
  io::chart_series a{"no optimisation", {}, "#bab0ac"}, b{"in-place + sharing", {}, "#4e79a7"}, c{"sublinear plan (chen_budget)", {}, "#e15759"};
  for (const auto& r : rows) {
    a.points.emplace_back(r.x, gib(r.naive - r.resident));
    b.points.emplace_back(r.x, gib(r.sharing - r.resident));
    c.points.emplace_back(r.x, gib(r.sublinear - r.resident));
  }
  io::write_line_chart_svg(path, {a, b, c},
                           {.title = title, .x_label = xl, .y_label = "feature-map memory (GiB)", .log_x = true, .log_y = true});
  std::printf("wrote %s\n", path.c_str());
}

}  // namespace

int main(int argc, char** argv) try {
  bool quick = false, real = true;
  std::string plots, only;
  double milp_seconds = 0;  // --milp-bound: remat::recompute_bound_milp per graph at 0.5x (with CBC)
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--no-real")) real = false;
    else if (!std::strcmp(argv[i], "--plots") && i + 1 < argc) plots = argv[++i];
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!std::strcmp(argv[i], "--milp-bound") && i + 1 < argc) milp_seconds = std::atof(argv[++i]);
    else {
      std::fprintf(stderr, "usage: %s [--quick] [--no-real] [--plots DIR] [--only SUBSTRING] [--milp-bound SECONDS]\n", argv[0]);
      return 2;
    }
  }
  auto wanted = [&](const std::string& n) { return only.empty() || n.find(only) != std::string::npos; };

  // ---- Chen Fig. 5: ResNet depth sweep ----
  std::vector<row> resnet;
  if (wanted("resnet")) {
    const std::vector<std::int64_t> depths = quick ? std::vector<std::int64_t>{50, 101, 200} : std::vector<std::int64_t>{50, 101, 152, 200, 350, 500, 1001};
    for (auto d : depths) resnet.push_back(chen_row(make_problem(zoo::resnet(d, 32, 224)), static_cast<double>(d)));
    print_rows("Chen Fig. 5: ResNet, batch 32, 224x224 (memory of the arena)", "depth", resnet);
    if (!plots.empty()) plot(plots + "/chen_fig5_resnet.svg", "ResNet training memory vs depth (batch 32)", "depth (layers)", resnet);
  }

  // ---- Chen Fig. 6: LSTM sequence length sweep ----
  std::vector<row> lstm;
  if (wanted("lstm")) {
    const std::vector<std::int64_t> lens = quick ? std::vector<std::int64_t>{64, 128} : std::vector<std::int64_t>{64, 128, 256, 512, 1024};
    for (auto t : lens) {
      zoo::lstm_config c;
      c.steps = t;
      lstm.push_back(chen_row(make_problem(zoo::lstm(c)), static_cast<double>(t)));
    }
    print_rows("Chen Fig. 6: LSTM 4 x 1024, batch 64 (memory of the arena)", "steps", lstm);
    if (!plots.empty()) plot(plots + "/chen_fig6_lstm.svg", "LSTM training memory vs sequence length (4 x 1024, batch 64)", "time steps", lstm);
  }

  // ---- ResNet-1001: <= 7 GiB at <= one extra forward pass, planned in <= 1 s ----
  if (wanted("1001") && !quick) {
    const auto p = make_problem(zoo::resnet(1001, 32, 224));
    const std::int64_t budget = 7LL << 30;
    for (const auto& [name, ckpt] : std::vector<std::pair<std::string, any_checkpointer>>{{"chen_budget", remat::chen_budget{}},
                                                                                         {"default", remat::default_checkpointer{}}}) {
      const auto t0 = clock_type::now();
      try {
        const auto mp = plan(p, schedule::given{} | ckpt | place::greedy_by_size{}, {.budget = budget});
        const double s = secs_since(t0);
        const double over = mp.stats.recompute_cost / mp.stats.compute_cost, fwd = forward_cost(p) / mp.stats.compute_cost;
        std::printf("\nTARGET ResNet-1001 b32 at 7 GiB with %s: arena %.2f GiB (Chen: 48 GB -> 7 GB), recompute %.1f %% of a step "
                    "(one forward pass: %.1f %%), checkpoint %.3f s, plan %.3f s -> %s\n",
                    name.c_str(), gib(mp.arena), 100 * over, 100 * fwd, mp.stats.checkpoint_seconds, s,
                    mp.arena <= budget && over <= fwd + 1e-9 && mp.stats.checkpoint_seconds <= 1.0 ? "met" : "not met");
      } catch (const error& e) {
        std::printf("\nTARGET ResNet-1001 b32 at 7 GiB with %s: %s -> not met\n", name.c_str(), e.what());
      }
    }
  }

  // ---- Real exports at batch 32 ----
  if (real && wanted("real")) {
    const std::filesystem::path dir = std::filesystem::path(MEMPLAN_SOURCE_DIR) / "data" / "models";
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().string().find("-train-b32.json.gz") != std::string::npos) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    if (quick && files.size() > 4) files.resize(4);
    std::printf("\nReal training exports, batch 32: the default checkpointer at fractions of the no-recompute plan's peak\n");
    std::printf("(bound: no plan within the budget recomputes less, in the plan's order / in any order; core/recompute_bound.hpp)\n");
    std::printf("%-26s %10s | %8s %27s %9s %7s | %8s %27s %9s %7s %15s\n", "graph", "peak GiB", "0.7x arena", "", "overhead", "s", "0.5x arena", "",
                "overhead", "s", "0.5x bound");
    int met10 = 0, n = 0, impossible10 = 0, out_of_reach_in_order = 0;
#ifndef MEMPLAN_BENCH_CBC
    if (milp_seconds > 0) std::printf("(--milp-bound: this build has no CBC; the column is left out)\n");
    milp_seconds = 0;
#endif
    if (milp_seconds > 0)
      std::printf("(0-1 bound: remat::recompute_bound_milp in the plan's order / recompute_bound_milp_any_order, %.0f s per graph each; ops examined / above the budget, solved)\n", milp_seconds);
    std::vector<double> times;
    for (const auto& f : files) {
      // The baseline is the graph as traced; the plans take variants as `memplan plan` does (marked *:
      // MobileNet-V2's output-activated hardtanh_backward, free at every step; GoogLeNet's, Inception's
      // and SqueezeNet's from_concatenation, where the plan at the budget is better with them:
      // core/plan_variants.hpp).
      const auto g = io::read_graph(f.string());
      const auto sched = schedule::default_scheduler{};
      const auto base = plan(g, sched | place::default_placer{});
      std::printf("%-26s %10.3f |", (g.name() + (has_variants(g) ? "*" : "")).c_str(), gib(base.stats.peak));
      for (double frac : {0.7, 0.5}) {
        const auto budget = static_cast<std::int64_t>(frac * static_cast<double>(base.stats.peak));
        const auto t0 = clock_type::now();
        try {
          const auto vp = plan_choosing_variants(
              g, [&](const problem& q, const deadline& until, const plan_to_beat& to_beat) {
                // As `memplan plan`: the search's plans end by its deadline, with the best plan so far to beat.
                return plan(q, sched | remat::default_checkpointer{} | place::default_placer{},
                            {.budget = budget, .to_beat = to_beat, .stop = until});
              });
          const auto& p = vp.variants.rewritten;
          const auto& mp = vp.plan;
          const double s = secs_since(t0);
          const double over = mp.stats.recompute_cost / mp.stats.compute_cost;
          auto who = mp.stats.checkpointer;  // "default(greedy)" -> "greedy"
          if (who.rfind("default(", 0) == 0 && who.back() == ')') who = who.substr(8, who.size() - 9);
          std::printf(" %8.3f %27s %8.1f%% %7.2f |", gib(mp.arena), who.c_str(),
                      100 * over, s);
          times.push_back(mp.stats.checkpoint_seconds);
          if (frac == 0.5) {
            met10 += over <= 0.10;
            const auto in = recompute_bound_in_order(p, mp.order(), budget);
            const auto any = recompute_bound_any_order(p, budget);
            std::printf(" %6.1f%% /%5.1f%%", 100 * std::max(in.overhead, any.overhead), 100 * any.overhead);
            double any_overhead = any.overhead;
#ifdef MEMPLAN_BENCH_CBC
            if (milp_seconds > 0) {
              const auto mb = remat::recompute_bound_milp(p, mp.order(), budget, solver::cbc{.isolate = true}, in, {.time_limit_s = milp_seconds});
              const auto ma = remat::recompute_bound_milp_any_order(p, budget, solver::cbc{.isolate = true}, any, {.time_limit_s = milp_seconds});
              std::printf(" | 0-1 bound %6.2f%% (%d/%d ops, %d solved) / %6.2f%% (%d/%d, %d)", 100 * mb.overhead, mb.ops_examined, mb.ops_above,
                          mb.ops_solved, 100 * ma.overhead, ma.ops_examined, ma.ops_above, ma.ops_solved);
              out_of_reach_in_order += std::max(mb.overhead, ma.overhead) > 0.10;
              any_overhead = std::max(any_overhead, ma.overhead);
            }
#endif
            if (has_variants(g)) {
              // Impossible only for every variant choice: the bound over all of them (core/variants.hpp's
              // relaxation; core's any-order bound of it, and with --milp-bound the 0-1 one).
              const auto vr = relax_variants(g);
              const auto rc = recompute_bound_any_order(vr.relaxed, budget);
              any_overhead = rc.feasible ? rc.cost / vr.compute_cost_max : std::numeric_limits<double>::infinity();
#ifdef MEMPLAN_BENCH_CBC
              if (milp_seconds > 0)
                any_overhead = std::max(any_overhead, remat::recompute_bound_milp_any_variants(g, budget, solver::cbc{.isolate = true}, {.time_limit_s = milp_seconds}).overhead);
#endif
              std::printf(" | any variants %6.2f%%", 100 * any_overhead);
            }
            impossible10 += any_overhead > 0.10;
          }
        } catch (const error& e) {
          std::printf(" %8s %27s %9s %7.2f |", "-", "infeas.", "", secs_since(t0));
        }
      }
      ++n;
      std::printf("\n");
    }
    std::printf("* the graph has variants; the plans take them as `memplan plan` does (core/plan_variants.hpp); the peak is the graph's own, without them;\n"
                "  the bounds are over the variants the plan took, and \"any variants\" over every choice of them (what the TARGET line counts)\n");
    std::sort(times.begin(), times.end());
    std::printf("TARGET half the no-recompute peak with <= 10 %% overhead: %d of %d real exports (%d cannot: their any-order bound%s is above 10 %%)\n",
                met10, n, impossible10, milp_seconds > 0 ? ", core's or the 0-1 one," : "");
    if (milp_seconds > 0)
      std::printf("(%d of them cannot in the plan's order: its bound, core's or the 0-1 one, is above 10 %%)\n", out_of_reach_in_order);
    if (!times.empty()) std::printf("TARGET default checkpointer <= 2 s per graph: slowest %.3f s, median %.3f s\n", times.back(), times[times.size() / 2]);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "memplan_bench_remat: %s\n", e.what());
  return 1;
}
