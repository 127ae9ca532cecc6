// Joint implementation choice and recomputation benchmark (docs/monet.md). Prints, does not assert.
//
// For each graph: the baseline is the given order (PyTorch's) with every op on its own (default)
// implementation and nothing recomputed: peak P0, compute cost C0 (the sum of the ops' costs). For each
// policy, the least memory target B (bisection over B/P0) at which its plan meets B with a total compute
// cost <= 1.10 C0 (MONeT Table 1: memory at <= 10 % overhead over PyTorch), printed as B/P0:
//   recompute only     remat::default_checkpointer over the default implementations (no choice)
//   checkmate-D        remat::checkmate_ilp over the default implementations (MONeT's Checkmate-D)
//   checkmate-O        checkmate-D's plan with each op then moved to its fastest implementation that
//                      fits the memory left (MONeT's Checkmate-O, post-optimized)
//   monet_greedy       remat::monet_greedy (solver-free joint heuristic)
//   monet_ilp          remat::monet_ilp (MONeT's joint 0-1 program, CBC)
// then the ratios checkmate-O / monet_ilp and recompute-only / monet_greedy (MONeT: 1.2-1.8x vs
// Checkmate), the least B / P0 below which no recompute-only plan has <= 10 % overhead (the lower
// bounds of core/recompute_bound.hpp), and the ILP solve times and statuses at the final targets.
//
// --no-slower instead prints, for every bundled export whose ops list implementations (or the graphs
// named), `memplan plan`'s default pipeline with implementation_choice::own against its default
// no_slower (core/implementations.hpp): the planned peak, the arena and the op steps' cost, as ratios.
//
// --milp-bound S adds, per graph, whether any plan can meet 0.45 of P0 with <= 10 % overhead (the
// issue's must): the op-local floor, or remat::recompute_bound_milp_any_order at that budget for up to S
// seconds plus the ops' least costs (must_at_045).
//
// Usage: memplan_bench_monet [--time-limit S] [--iters N] [--no-ilp] [--backward-only] [--only SUBSTRING] [--no-slower] [--milp-bound S] [GRAPH.json.gz ...]
// (--backward-only: monet_ilp restricted to MONeT's Alg. 2 stages, forward ops recomputed before backward ops only)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <memplan/core/context.hpp>
#include <memplan/core/implementations.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/core/recompute_bound.hpp>
#include <memplan/core/variants.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/io/gzip.hpp>
#include <memplan/io/json.hpp>
#include <memplan/remat/checkmate_ilp.hpp>
#include <memplan/remat/default_checkpointer.hpp>
#include <memplan/remat/milp_bound.hpp>
#include <memplan/remat/monet_greedy.hpp>
#include <memplan/remat/monet_ilp.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/schedule/default_scheduler.hpp>
#ifdef MEMPLAN_BENCH_CBC
#include <memplan/solver/cbc.hpp>
#endif

using namespace memplan;
using clock_type = std::chrono::steady_clock;

namespace {

double secs_since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }

struct outcome {
  std::int64_t peak = 0;
  double cost = 0;
  std::string note;
  double seconds = 0;
};

using policy_fn = std::function<outcome(const problem&, const timeline&, std::int64_t)>;

struct result {
  double ratio = 1.0;        // least B / P0 found with overhead <= 10 %
  double overhead = 0.0;     // at that B
  double seconds = 0.0;      // of the run at that B
  std::string note;          // its stage note
  int runs = 0;
};

// Bisection over B / P0 in [lo, 1]: the least B whose plan fits B at cost <= 1.1 C0. P0: p0_in, or
// the base timeline's peak.
result least_memory(const problem& p, const timeline& base, double c0, const policy_fn& f, int iters, double lo, std::int64_t p0_in = -1) {
  result r;
  const auto p0 = p0_in > 0 ? p0_in : base.peak;
  auto ok = [&](double x, outcome& o) {
    const auto b = static_cast<std::int64_t>(x * static_cast<double>(p0));
    o = f(p, base, b);
    ++r.runs;
    return o.peak <= b && o.cost <= 1.10 * c0 * (1 + 1e-12);
  };
  outcome o;
  double good = 1.0, bad = lo;
  if (!ok(1.0, o)) return {1.0, o.cost / c0 - 1, o.seconds, "does not meet the baseline peak: " + o.note, r.runs};
  r = {1.0, o.cost / c0 - 1, o.seconds, o.note, r.runs};
  if (ok(lo, o)) return {lo, o.cost / c0 - 1, o.seconds, o.note, r.runs};
  for (int k = 0; k < iters; ++k) {
    const double mid = 0.5 * (good + bad);
    if (ok(mid, o)) {
      good = mid;
      r.overhead = o.cost / c0 - 1;
      r.seconds = o.seconds;
      r.note = o.note;
    } else {
      bad = mid;
    }
  }
  r.ratio = good;
  return r;
}

plan_context ctx_for(std::int64_t b, double limit) {
  plan_context c;
  c.memory_target = b;
  c.time_limit_s = limit;
  c.implementations = implementation_choice::own;  // "recompute only" keeps the default implementations
#ifdef MEMPLAN_BENCH_CBC
  c.solver = solver::cbc{};
#endif
  return c;
}

// The largest B / P0 at which the lower bound on the recompute overhead of every plan within B
// (core/recompute_bound.hpp; over the given order, or any order) still exceeds `cap`: no
// recompute-only plan with overhead <= cap fits there or below (bisection, 20 steps).
double bound_ratio(const problem& p, const timeline& base, double cap, bool any_order) {
  const auto order = base.order();
  const auto over = [&](std::int64_t b) {
    const auto any = recompute_bound_any_order(p, b);
    if (!any.feasible || any.overhead > cap) return true;
    if (any_order) return false;
    const auto in = recompute_bound_in_order(p, order, b);
    return !in.feasible || in.overhead > cap;
  };
  std::int64_t lo = op_local_bound(p), hi = base.peak;
  if (!over(lo)) return static_cast<double>(lo) / static_cast<double>(base.peak);
  for (int i = 0; i < 20 && hi - lo > 1; ++i) {
    const auto mid = lo + (hi - lo) / 2;
    (over(mid) ? lo : hi) = mid;
  }
  return static_cast<double>(lo) / static_cast<double>(base.peak);
}

// --milp-bound S: the must (a plan at 0.45 of P0 with <= 10 % overhead) against what any plan
// needs there: below the op-local floor nothing fits; above it, every plan's step costs at least the
// sum of the ops' least costs (each at the least of its implementations and variants; an op a variant
// choice may remove at 0) plus remat::recompute_bound_milp_any_variants (its reruns at those costs, in
// any order, with any variants), so when that exceeds 1.10 C0 no order, recomputation or choice of
// implementations and variants meets it.
void must_at_045(const problem& p, const timeline& base, [[maybe_unused]] double c0, [[maybe_unused]] double milp_seconds) {
  const auto b = static_cast<std::int64_t>(0.45 * static_cast<double>(base.peak));
  const auto floor = op_local_bound(p);
  if (b < floor) {
    std::printf("    at 0.45 of P0: below the op-local floor (%.3f of P0): no plan of any kind fits\n",
                static_cast<double>(floor) / static_cast<double>(base.peak));
    return;
  }
#ifdef MEMPLAN_BENCH_CBC
  const auto t0 = clock_type::now();
  const auto ma = remat::recompute_bound_milp_any_variants(p, b, solver::cbc{.isolate = true}, {.time_limit_s = milp_seconds, .per_op_time_limit_s = 10});
  const memplan::detail::recompute_bound_tables tb(relax_variants(p).relaxed);
  double least = 0;
  for (const auto c : tb.op_cost) least += c;
  const double step = (least + ma.cost) / c0;
  std::printf("    at 0.45 of P0: any-order 0-1 recompute bound %.2f %% (core's %.2f %%; %d of %d ops examined, %d solved, %.0f s; %s); least step cost "
              "%.4f of C0 -> %s\n",
              100 * ma.overhead, 100 * ma.core_cost / ma.compute_cost, ma.ops_examined, ma.ops_above, ma.ops_solved, secs_since(t0),
              has_variants(p) ? "any variants" : "no variants", step, step > 1.10 ? "no plan meets 0.45 with <= 10 %" : "not excluded");
#else
  std::printf("    at 0.45 of P0: above the op-local floor; --milp-bound needs memplan::cbc\n");
#endif
}

std::string ratio_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", x);
  return buf;
}

outcome run_stage(const problem& p, const timeline& tl, const auto& stage, const plan_context& ctx) {
  const auto t0 = clock_type::now();
  const auto out = stage.run(p, tl, ctx);
  return {out.peak, remat::total_step_cost(p, out), out.stages.empty() ? "" : out.stages.back().note, secs_since(t0)};
}

}  // namespace

// --no-slower: the default pipeline with every op on its own implementation, then with the no-slower choice.
void no_slower_table(const std::vector<std::string>& files, const std::string& only) {
  std::printf("memplan plan's defaults: implementations own -> no-slower (ratios no-slower / own)\n");
  std::printf("%-30s %14s %8s %8s %10s %12s %12s\n", "graph", "own peak (B)", "peak", "arena", "op steps", "off fastest", "plan s");
  for (const auto& file : files) {
    if (!only.empty() && file.find(only) == std::string::npos) continue;
    const auto p = io::read_graph(file);
    if (!has_implementations(p)) continue;
    auto run = [&](implementation_choice c) {
      plan_context ctx;
      ctx.implementations = c;
      const auto t0 = clock_type::now();
      auto mp = plan(p, schedule::default_scheduler{} | place::default_placer{}, ctx);
      return std::pair{std::move(mp), secs_since(t0)};
    };
    const auto [own, own_s] = run(implementation_choice::own);
    const auto [mine, mine_s] = run(implementation_choice::no_slower);
    auto r = [](double a, double b) { return b > 0 ? a / b : 1.0; };
    std::printf("%-30s %14lld %8.4f %8.4f %10.4f %5lld -> %-4lld %5.2f/%5.2f\n", std::filesystem::path(file).stem().stem().string().c_str(),
                static_cast<long long>(own.stats.peak), r(static_cast<double>(mine.stats.peak), static_cast<double>(own.stats.peak)),
                r(static_cast<double>(mine.arena), static_cast<double>(own.arena)), r(total_step_cost(p, mine), total_step_cost(p, own)),
                static_cast<long long>(implementations_changed(p, own)), static_cast<long long>(implementations_changed(p, mine)), own_s, mine_s);
    std::fflush(stdout);
  }
}

int main(int argc, char** argv) {
  double limit = 20;
  int iters = 6;
  bool ilp = true;
  bool backward_only = false;  // monet_ilp{.backward_only = true}: MONeT's Alg. 2 stages
  std::string only;
  bool no_slower = false;
  double milp_seconds = 0;  // --milp-bound S: the any-order 0-1 bound at 0.45 of P0 (must_at_045)
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--time-limit" && i + 1 < argc) limit = std::atof(argv[++i]);
    else if (a == "--iters" && i + 1 < argc) iters = std::atoi(argv[++i]);
    else if (a == "--no-ilp") ilp = false;
    else if (a == "--backward-only") backward_only = true;
    else if (a == "--only" && i + 1 < argc) only = argv[++i];
    else if (a == "--no-slower") no_slower = true;
    else if (a == "--milp-bound" && i + 1 < argc) milp_seconds = std::atof(argv[++i]);
    else files.push_back(a);
  }
  const bool named = !files.empty();
  if (files.empty()) {
    const std::filesystem::path dir = std::filesystem::path(MEMPLAN_SOURCE_DIR) / "data" / "models";
    for (const char* m : {"alexnet-train-b32", "vgg11-train-b32", "squeezenet1_0-train-b32", "resnet18-train-b32", "mobilenet_v2-train-b32",
                          "googlenet-train-b32", "vgg16-train-b32", "resnet50-train-b32"})
      files.push_back((dir / (std::string(m) + ".json.gz")).string());
  }
  if (no_slower) {
    if (!named) {  // every bundled export
      files.clear();
      for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(MEMPLAN_SOURCE_DIR) / "data" / "models"))
        if (e.path().string().ends_with(".json.gz")) files.push_back(e.path().string());
      std::sort(files.begin(), files.end());
    }
    no_slower_table(files, only);
    return 0;
  }
#ifndef MEMPLAN_BENCH_CBC
  if (ilp) std::printf("(built without memplan::cbc: the ILP rows are their fallbacks)\n");
#endif
  std::printf("memory at <= 10 %% compute overhead, as a fraction of the given order's peak with the default implementations\n");
  std::printf("%-26s %5s %10s | %9s %11s %11s %12s %10s | %8s %8s\n", "graph", "ops", "P0 (MiB)", "recompute", "checkmate-D", "checkmate-O",
              "monet_greedy", "monet_ilp", "ckO/mILP", "rec/mgr");
  for (const auto& file : files) {
    if (!only.empty() && file.find(only) == std::string::npos) continue;
    const auto p = io::read_graph(file);
    if (!remat::has_implementations(p)) continue;
    const auto base = given_timeline(p);
    double c0 = 0;
    for (op_id o = 0; o < p.num_ops(); ++o) c0 += p.cost(o);
    const double lo = std::max(0.05, static_cast<double>(p.resident_bytes()) / static_cast<double>(base.peak));
    const auto recompute = least_memory(p, base, c0, [&](const problem& q, const timeline& t, std::int64_t b) {
      return run_stage(q, t, remat::default_checkpointer{.choose_implementations = false}, ctx_for(b, limit));
    }, iters + 2, lo);
    const auto greedy = least_memory(p, base, c0, [&](const problem& q, const timeline& t, std::int64_t b) {
      return run_stage(q, t, remat::monet_greedy{}, ctx_for(b, limit));
    }, iters + 2, lo);
    result ckd, cko, mono;
    const bool small = p.num_ops() <= 120;
    if (ilp && small) {
      const remat::checkmate_ilp ck{.warm_start = remat::best_solver_free{}};
      ckd = least_memory(p, base, c0, [&](const problem& q, const timeline& t, std::int64_t b) {
        return run_stage(q, t, ck, ctx_for(b, limit));
      }, iters, lo);
      cko = least_memory(p, base, c0, [&](const problem& q, const timeline& t, std::int64_t b) {
        const auto t0 = clock_type::now();
        auto out = ck.run(q, t, ctx_for(b, limit));
        std::vector<std::vector<remat::impl_alternative>> front(static_cast<std::size_t>(q.num_ops()));
        for (op_id o = 0; o < q.num_ops(); ++o) front[static_cast<std::size_t>(o)] = remat::implementation_front(q, o);
        remat::detail::upgrade_impls(q, out, front, b, true);
        return outcome{out.peak, remat::total_step_cost(q, out), out.stages.back().note, secs_since(t0)};
      }, iters, lo);
      mono = least_memory(p, base, c0, [&](const problem& q, const timeline& t, std::int64_t b) {
        return run_stage(q, t, remat::monet_ilp{.backward_only = backward_only}, ctx_for(b, limit));
      }, iters, lo);
    }
    auto cell = [&](const result& r, bool have) {
      static char buf[64];
      if (!have) std::snprintf(buf, sizeof buf, "-");
      else std::snprintf(buf, sizeof buf, "%.3f", r.ratio);
      return std::string(buf);
    };
    const bool have_ilp = ilp && small;
    std::printf("%-26s %5d %10.1f | %9s %11s %11s %12s %10s | %8s %8.2f\n", std::filesystem::path(file).stem().stem().string().c_str(), p.num_ops(),
                static_cast<double>(base.peak) / 1048576.0, cell(recompute, true).c_str(), cell(ckd, have_ilp).c_str(), cell(cko, have_ilp).c_str(),
                cell(greedy, true).c_str(), cell(mono, have_ilp).c_str(),
                have_ilp ? ratio_text(cko.ratio / mono.ratio).c_str() : "-", recompute.ratio / greedy.ratio);
    std::printf("    recompute-only lower bound: no plan with <= 10 %% overhead below %.3f of P0 in the given order, %.3f in any order\n",
                bound_ratio(p, base, 0.10, false), bound_ratio(p, base, 0.10, true));
    if (milp_seconds > 0) must_at_045(p, base, c0, milp_seconds);
    std::printf("    overheads at those targets: recompute %.1f %%, monet_greedy %.1f %%", 100 * recompute.overhead, 100 * greedy.overhead);
    if (have_ilp) std::printf(", checkmate-D %.1f %%, checkmate-O %.1f %%, monet_ilp %.1f %%", 100 * ckd.overhead, 100 * cko.overhead, 100 * mono.overhead);
    std::printf("\n    times at those targets: monet_greedy %.2f s", greedy.seconds);
    if (have_ilp) std::printf(", checkmate_ilp %.1f s, monet_ilp %.1f s", ckd.seconds, mono.seconds);
    std::printf("\n");
    if (have_ilp) {
      std::printf("    checkmate-D: %s\n", ckd.note.c_str());
      std::printf("    monet_ilp:   %s\n", mono.note.c_str());
    }
    // Variants (core/variants.hpp), against the same P0 (the graph as traced): first those that cost
    // nothing at any step (`memplan plan` always takes them), then those that only keep the given
    // order's peak (`memplan plan` takes that set where its plan is better: core/plan_variants.hpp,
    // so its figure is the better of the two lines). The memory they save counts, as MONeT's
    // output-activated variants do. The 10 % is over the step with the variants (C0 without the ops
    // they make unneeded): stricter.
    const auto strict = choose_variants(p);
    const auto loose = choose_variants(p, variant_rule::no_peak_higher);
    for (const auto* vr : {&strict, &loose}) {
      if (vr->taken.empty() || (vr == &loose && loose.taken == strict.taken)) continue;
      const auto& q = vr->rewritten;
      const auto qbase = given_timeline(q);
      double c0q = 0;
      for (op_id o = 0; o < q.num_ops(); ++o) c0q += q.cost(o);
      const auto vrec = least_memory(q, qbase, c0q, [&](const problem& g, const timeline& t, std::int64_t b) {
        return run_stage(g, t, remat::default_checkpointer{.choose_implementations = false}, ctx_for(b, limit));
      }, iters + 2, lo, base.peak);
      const auto vgr = least_memory(q, qbase, c0q, [&](const problem& g, const timeline& t, std::int64_t b) {
        return run_stage(g, t, remat::monet_greedy{}, ctx_for(b, limit));
      }, iters + 2, lo, base.peak);
      const double scale = static_cast<double>(qbase.peak) / static_cast<double>(base.peak);
      std::printf("    with %zu variants %s (%zu ops no longer needed; given order %.3f of P0, step cost %.3f of C0): "
                  "recompute %.3f (%.1f %%), monet_greedy %.3f (%.1f %%); recompute-only bound %.3f in the given order, %.3f in any order\n",
                  vr->taken.size(), vr == &strict ? "that cost nothing" : "that keep the peak", vr->removed_ops.size(), scale, c0q / c0,
                  vrec.ratio, 100 * vrec.overhead, vgr.ratio, 100 * vgr.overhead, scale * bound_ratio(q, qbase, 0.10, false),
                  scale * bound_ratio(q, qbase, 0.10, true));
    }
    std::fflush(stdout);
  }
  return 0;
}
