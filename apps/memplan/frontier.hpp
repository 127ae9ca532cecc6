#pragma once
// `memplan frontier GRAPH [--checkpointer NAME] [--points N] -o FRONTIER.csv [--svg PLOT.svg]`: the
// memory / recompute-overhead curve (remat::frontier), every point a verified plan.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <string>

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
  const auto vr = choose_variants(io::read_graph(a.graph));  // variants that cost nothing, as `memplan plan` takes them
  const auto& p = vr.rewritten;
  plan_context ctx;
  ctx.alignment = a.alignment;
  ctx.time_limit_s = a.time_limit;
  ctx.solver = milp_backend();
  ctx.progress = progress_printer(a.verbose);
  const auto pts = remat::frontier(p, sched, ckpt, placer, {.points = a.points}, ctx);
  std::ostream* os = &std::cout;
  std::ofstream file;
  if (!a.output.empty() && a.output != "-") {
    file.open(a.output);
    if (!file) throw error(errc::io_error, "cannot write '" + a.output + "'");
    os = &file;
  }
  *os << "budget_bytes,arena_bytes,peak_bytes,compute_cost,recompute_cost,overhead,recomputed_ops,checkpointer,plan_seconds,"
         "overhead_lower_bound,overhead_lower_bound_any_order\n";
  for (const auto& f : pts)
    *os << f.budget << "," << f.arena << "," << f.peak << "," << f.compute_cost << "," << f.recompute_cost << "," << f.overhead << ","
        << f.recomputed_ops << "," << f.checkpointer << "," << f.seconds << "," << f.overhead_lower_bound << ","
        << f.overhead_lower_bound_any_order << "\n";
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
    std::cout << a.graph << ": " << pts.size() << " verified plans, arena " << io::human_bytes(pts.front().arena)
              << " without recomputation down to " << io::human_bytes(least.arena) << " at " << 100.0 * least.overhead
              << " % overhead; wrote " << a.output << "\n";
    if (!vr.taken.empty())
      std::cout << "  with " << vr.taken.size() << " ops on a variant that costs nothing (" << vr.removed_ops.size()
                << " ops no longer needed): given-order peak " << io::human_bytes(vr.given_peak_before) << " -> "
                << io::human_bytes(vr.given_peak_after) << "\n";
    for (const auto& n : vr.notes) std::cout << "  " << n << "\n";
  }
  return 0;
}

}  // namespace memplan::cli
