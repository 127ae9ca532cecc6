#pragma once
// `memplan frontier GRAPH [--checkpointer NAME] [--points N] -o FRONTIER.csv [--svg PLOT.svg]`: the
// memory / recompute-overhead curve (remat::frontier), every point a verified plan.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <memplan/io/chart.hpp>
#include <memplan/io/json.hpp>
#include <memplan/io/report.hpp>
#include <memplan/remat/frontier.hpp>

#include "backends.hpp"
#include "policies.hpp"

namespace memplan::cli {

struct frontier_args {
  std::string graph, checkpointer = "default", scheduler = "default", placer = "default", output, svg;
  std::int32_t points = 12;
  double time_limit = -1;
  std::int64_t alignment = 1;
  bool verbose = false;
};

inline int run_frontier(const frontier_args& a) {
  if (a.points < 2) throw error(errc::invalid_argument, "--points must be at least 2");
  const auto sched = schedulers().make(a.scheduler);
  const auto ckpt = checkpointers().make(a.checkpointer);
  const auto placer = placers().make(a.placer);
  // Variants as `memplan plan` takes them (core/plan_variants.hpp): those that cost nothing at every
  // step; and when the set that keeps the given order's peak differs, its own sweep too, the curve then
  // being the points of both that no other point beats in arena and overhead together.
  const auto graph = io::read_graph(a.graph);
  const auto vr = choose_variants(graph);
  const auto loose = choose_variants(graph, variant_rule::no_peak_higher);
  const bool two = loose.taken != vr.taken;
  const auto& p = vr.rewritten;
  plan_context ctx;
  ctx.alignment = a.alignment;
  ctx.time_limit_s = a.time_limit;
  ctx.solver = milp_backend();
  ctx.progress = progress_printer(a.verbose);
  auto pts = remat::frontier(p, sched, ckpt, placer, {.points = a.points}, ctx);
  std::vector<std::size_t> variants_of(pts.size(), vr.taken.size());
  if (two) {
    auto c = ctx;
    c.cache = nullptr;
    const auto more = remat::frontier(loose.rewritten, sched, ckpt, placer, {.points = a.points}, c);
    std::vector<std::pair<remat::frontier_point, std::size_t>> all;
    for (std::size_t i = 0; i < pts.size(); ++i) all.emplace_back(pts[i], variants_of[i]);
    for (const auto& f : more) all.emplace_back(f, loose.taken.size());
    std::stable_sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.first.arena > y.first.arena; });
    std::vector<remat::frontier_point> merged;
    for (const auto& e : all) merged.push_back(e.first);
    pts.clear();
    variants_of.clear();
    for (auto i : remat::undominated(merged)) {
      pts.push_back(merged[i]);
      variants_of.push_back(all[i].second);
    }
  }
  std::ostream* os = &std::cout;
  std::ofstream file;
  if (!a.output.empty() && a.output != "-") {
    file.open(a.output);
    if (!file) throw error(errc::io_error, "cannot write '" + a.output + "'");
    os = &file;
  }
  *os << "budget_bytes,arena_bytes,peak_bytes,compute_cost,recompute_cost,overhead,recomputed_ops,checkpointer,plan_seconds,"
         "overhead_lower_bound,overhead_lower_bound_any_order,variants\n";
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const auto& f = pts[i];
    *os << f.budget << "," << f.arena << "," << f.peak << "," << f.compute_cost << "," << f.recompute_cost << "," << f.overhead << ","
        << f.recomputed_ops << "," << f.checkpointer << "," << f.seconds << "," << f.overhead_lower_bound << ","
        << f.overhead_lower_bound_any_order << "," << variants_of[i] << "\n";
  }
  if (!a.svg.empty()) {
    io::chart_series s{a.checkpointer, {}, "#e15759"};
    io::chart_series bound{"lower bound (this order)", {}, "#4e79a7"};
    auto sorted = pts;
    std::sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) { return x.overhead < y.overhead; });
    for (const auto& f : sorted) s.points.emplace_back(100.0 * f.overhead, static_cast<double>(f.arena) / 1048576.0);
    std::sort(sorted.begin(), sorted.end(), [](const auto& x, const auto& y) { return x.overhead_lower_bound < y.overhead_lower_bound; });
    for (const auto& f : sorted)
      if (f.overhead_lower_bound >= 0) bound.points.emplace_back(100.0 * f.overhead_lower_bound, static_cast<double>(f.arena) / 1048576.0);
    std::vector<io::chart_series> series{s};
    if (!bound.points.empty()) series.push_back(bound);
    io::write_line_chart_svg(a.svg, series,
                             {.title = p.name() + ": memory vs recomputation", .x_label = "recompute overhead (% of one step)",
                              .y_label = "arena (MiB)"});
  }
  if (os != &std::cout) {
    const auto least = *std::min_element(pts.begin(), pts.end(), [](const auto& x, const auto& y) { return x.arena < y.arena; });
    const auto none = *std::min_element(pts.begin(), pts.end(), [](const auto& x, const auto& y) {
      return x.overhead < y.overhead || (x.overhead == y.overhead && x.arena < y.arena);
    });
    std::cout << a.graph << ": " << pts.size() << " verified plans, arena " << io::human_bytes(none.arena)
              << " without recomputation down to " << io::human_bytes(least.arena) << " at " << 100.0 * least.overhead
              << " % overhead; wrote " << a.output << "\n";
    if (!vr.taken.empty())
      std::cout << "  with " << vr.taken.size() << " ops on a variant that costs nothing (" << vr.removed_ops.size()
                << " ops no longer needed): given-order peak " << io::human_bytes(vr.given_peak_before) << " -> "
                << io::human_bytes(vr.given_peak_after) << "\n";
    if (two)
      std::cout << "  also swept with the " << loose.taken.size() << " variants that keep the given order's peak ("
                << io::human_bytes(loose.given_peak_before) << " -> " << io::human_bytes(loose.given_peak_after)
                << "); the curve keeps the points of both sweeps that no other beats (column variants)\n";
    for (const auto& n : vr.notes) std::cout << "  " << n << "\n";
  }
  return 0;
}

}  // namespace memplan::cli
