// memplan: the command-line front end (docs/cli.md), as memplan::cli::run_command_line (main.cpp only
// forwards to it; the fuzz targets and test_fuzz_replay link the same object). Subcommands: plan,
// verify, explain, stats, dot, place, frontier, zoo, symbolic, completion.
// Exit codes: 0 ok, 1 invalid plan / infeasible, 2 bad input (unreadable or malformed files, bad
// options), 3 internal or solver failure. Errors are one line on stderr.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <memplan/base/error.hpp>
#include <memplan/core/analysis.hpp>
#include <memplan/core/bounds.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/core/plan_variants.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/core/verify.hpp>
#include <memplan/io/buffers_csv.hpp>
#include <memplan/io/dot.hpp>
#include <memplan/io/json.hpp>
#include <memplan/io/plan_json.hpp>
#include <memplan/io/report.hpp>
#include <memplan/io/svg.hpp>
#include <memplan/remat/milp_bound.hpp>

#include "args.hpp"
#include "backends.hpp"
#include "command_line.hpp"
#include "completion.hpp"
#include "explain_cmd.hpp"
#include "frontier.hpp"
#include "zoo_cmd.hpp"
#include "place_csv.hpp"
#include "symbolic_cmd.hpp"
#include "policies.hpp"

namespace {

using namespace memplan;
using cli::check_alignment;
using cli::parse_bytes;
using cli::parse_rate;
// The registries, built in their own translation units (policies.hpp).
using cli::checkpointers;
using cli::offloaders;
using cli::placers;
using cli::schedulers;

constexpr const char* version_text = "memplan 0.1.0";

int exit_code(errc c) {
  switch (c) {
    case errc::invalid_plan:
    case errc::not_better:
    case errc::infeasible: return 1;
    case errc::parse_error:
    case errc::invalid_graph:
    case errc::io_error:
    case errc::invalid_argument:
    case errc::limit_exceeded: return 2;
    case errc::solver_error:
    case errc::runtime_error: return 3;
  }
  return 3;
}

std::string one_line(std::string s) {
  for (auto& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

// ---- plan ------------------------------------------------------------------------------------------
struct plan_args {
  std::string graph, scheduler = "default", placer = "default", checkpointer, offloader, capacity, budget, output, svg, report_json, dot, buffers;
  double time_limit = -1;
  double bound_time = 0;  // --bound-time: seconds for remat::recompute_bound_milp (0: not run)
  std::string bandwidth, device_flops, host_limit;  // offloading: bytes/s, FLOP/s (plain or 12e9), host bytes
  std::string implementations = "no-slower";        // own | no-slower (plan_context::implementations)
  std::int64_t alignment = 1;
  bool quiet = false, verbose = false, deterministic = false;
};

// --buffers: the placement problem the plan posed, as MiniMalloc CSV (core/timeline.hpp's to_buffers: one
// buffer per tensor materialization and op workspace, lifetimes in ticks), to place it again with
// `memplan place` or another placer. Without the plan's offsets (memplan place reads them as pins); ids
// are the buffers' indices, and --alignment above 1 is every buffer's alignment column.
void write_plan_buffers(const std::string& path, const problem& p, const memory_plan& mp) {
  buffer_origin origin;
  io::buffer_list list{to_buffers(p, mp, 1, origin), {}};
  for (std::size_t b = 0; b < list.problem.buffers.size(); ++b) {
    list.problem.buffers[b].alignment = mp.alignment;
    list.ids.push_back(std::to_string(b));
  }
  io::write_buffers_csv_file(path, list);
}

int run_plan(const plan_args& a) {
  check_alignment(a.alignment);
  if (a.time_limit < 0 && a.time_limit != -1) throw error(errc::invalid_argument, "--time-limit must be >= 0 seconds");
  if (!(a.bound_time >= 0) || a.bound_time > 1e6) throw error(errc::invalid_argument, "--bound-time must be between 0 and 1e6 seconds");
  if (a.bound_time > 0 && a.budget.empty()) throw error(errc::invalid_argument, "--bound-time needs --budget (it bounds the overhead within the budget)");
  const auto sched = schedulers().make(a.scheduler);
  const auto placer = placers().make(a.placer);
  // With a budget and neither a checkpointer nor an offloader named, the default checkpointer runs.
  const auto ckpt = checkpointers().make(!a.checkpointer.empty()                       ? a.checkpointer
                                         : a.budget.empty() || !a.offloader.empty() ? "none"
                                                                                     : "default");
  if (a.offloader.empty() && (!a.bandwidth.empty() || !a.device_flops.empty() || !a.host_limit.empty()))
    throw error(errc::invalid_argument, "--bandwidth, --device-flops and --host-limit need --offloader NAME");
  const auto graph = io::read_graph(a.graph);
  plan_context ctx;
  ctx.progress = cli::progress_printer(a.verbose, a.quiet);
  ctx.alignment = a.alignment;
  ctx.time_limit_s = a.time_limit;
  ctx.deterministic = a.deterministic;
  ctx.cut_bound = true;  // the report's gap against the tightest bound (min-cut, at most 0.5 s)
  ctx.implementations = a.implementations == "own" ? implementation_choice::own : implementation_choice::no_slower;
  ctx.solver = cli::milp_backend();
  ctx.memo = std::make_shared<stage_memo>();  // shared by the variant sets' plans (make_plan's copies)
  std::int64_t capacity = -1;
  if (!a.capacity.empty()) ctx.capacity = capacity = parse_bytes(a.capacity, "--capacity");
  if (!a.budget.empty()) ctx.budget = parse_bytes(a.budget, "--budget");
  if (!a.bandwidth.empty()) ctx.timing.bandwidth = parse_rate(a.bandwidth, "--bandwidth");
  if (!a.device_flops.empty()) ctx.timing.device_flops = parse_rate(a.device_flops, "--device-flops");
  if (!a.host_limit.empty()) ctx.timing.host_limit = parse_bytes(a.host_limit, "--host-limit");
  const auto t0 = std::chrono::steady_clock::now();
  auto make_plan = [&](const problem& q, const deadline& until, const plan_to_beat& to_beat = {}) {
    auto c = ctx;
    c.cache = nullptr;  // each rewrite its own analyses
    c.stop = until;     // the variant group search's plans end by its deadline
    c.to_beat = to_beat;  // and a plan that would only rerun its budget loop to lose stops early
    c.cut_bound = false;  // certified below, for the kept plan only
    return a.offloader.empty() ? memplan::plan(q, sched | ckpt | placer, c)
                               : memplan::plan(q, sched | ckpt | offloaders().make(a.offloader) | placer, c);
  };
  // Variants (core/variants.hpp), unless --implementations own: those that cost nothing at any step,
  // and those that only keep the given order's peak where the plan is better with them
  // (core/plan_variants.hpp: both planned when they differ).
  // Their group search gets --time-limit (2 s without one); --deterministic counts plans instead.
  // Only under a memory limit: without one the plans tie on cost and the arena decides, and on the
  // six exports with such variants no group beat the whole sets (0.5-1.3 s more each).
  variant_search search;
  if (a.deterministic) search.time_limit_s = -1.0;
  else if (a.time_limit >= 0) search.time_limit_s = a.time_limit;
  if (a.budget.empty() && a.capacity.empty()) search.max_plans = 0;
  auto vp = a.implementations == "own" ? variant_plan{variant_rewrite{graph, {}, {}, 0, 0, {}}, make_plan(graph, deadline::never()), {}}
                                       : plan_choosing_variants(graph, make_plan, search);
  const auto& vr = vp.variants;
  const auto& p = vr.rewritten;
  auto& mp = vp.plan;
  // The min-cut bound for the plan kept, not for each variant set's (googlenet-train-b32: 0.5 s less).
  if (ctx.cut_bound) certify_with_cut_bound(p, mp, ctx);
  if (!vp.note.empty()) mp.stats.notes.push_back(vp.note);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (capacity >= 0 && mp.arena > capacity)
    throw error(errc::infeasible, "the plan needs an arena of " + std::to_string(mp.arena) + " bytes, above --capacity " +
                                      std::to_string(capacity));
  const auto ok = verify(p, mp);
  auto rep = io::make_report(p, mp, secs, ok.ok);
  io::set_variants(rep, vr);
  rep.notes.insert(rep.notes.begin(), vr.notes.begin(), vr.notes.end());
  rep.capacity = capacity;
  const auto bounds = io::set_budget(rep, p, mp, ctx.budget);
  if (a.bound_time > 0 && bounds && rep.overhead_lower_bound >= 0) {
    // The 0-1 bounds (remat/milp_bound.hpp), in the plan's order (half the time, and what it leaves)
    // and in any order: each at least core's, and the report keeps the larger. They bound the plans
    // of the problem planned (the variants the plan took); when the graph has variants, a third share
    // of the time goes to the bound over every choice of them (a note only). They read the clock, so
    // the report can differ between runs (the plan file does not).
    const bool variant_bound = has_variants(graph);
    const double share = a.bound_time / (variant_bound ? 3 : 2);
    const auto t_bound = std::chrono::steady_clock::now();
    const auto left = [&](double of) {
      return std::max(0.0, of - std::chrono::duration<double>(std::chrono::steady_clock::now() - t_bound).count());
    };
    const auto mb = remat::recompute_bound_milp(p, mp.order(), ctx.budget, ctx.solver, bounds->in_order, {.time_limit_s = share});
    const auto ma = remat::recompute_bound_milp_any_order(p, ctx.budget, ctx.solver, bounds->any_order,
                                                          {.time_limit_s = left(variant_bound ? 2 * share : a.bound_time)});
    const auto percent = [](double f) {
      char b[32];
      std::snprintf(b, sizeof b, "%.2f %%", 100.0 * f);
      return std::string(b);
    };
    const auto counts = [](const remat::recompute_milp_bound& m, const char* what) {
      return std::to_string(m.ops_examined) + " of the " + std::to_string(m.ops_above) + " " + what + " examined, " + std::to_string(m.ops_solved) + " solved";
    };
    rep.overhead_lower_bound = std::max({rep.overhead_lower_bound, mb.overhead, ma.overhead});  // any order includes this one
    rep.overhead_lower_bound_any_order = std::max(rep.overhead_lower_bound_any_order, ma.overhead);
    rep.notes.push_back("overhead bound: recompute_bound_milp (" + std::string(ctx.solver.name()) + ") " + percent(mb.overhead) +
                        " in this order, core's " + percent(mb.core_cost / std::max(mb.compute_cost, 1e-300)) + "; " +
                        counts(mb, "ops above the budget") + "; in any order " + percent(ma.overhead) + ", core's " +
                        percent(ma.core_cost / std::max(ma.compute_cost, 1e-300)) + "; " + counts(ma, "ops") +
                        (ctx.solver.available() ? "" : " (no MILP backend in this build: core's bounds)"));
    if (variant_bound) {
      const auto mv = remat::recompute_bound_milp_any_variants(graph, ctx.budget, ctx.solver, {.time_limit_s = left(a.bound_time)});
      rep.notes.push_back("overhead bound with any of the graph's variants, in any order: " + percent(mv.overhead) +
                          " of the costliest choice's step (the plans above: " + percent(rep.overhead_lower_bound_any_order) + "), core's " +
                          percent(mv.core_cost / std::max(mv.compute_cost, 1e-300)) + "; " + counts(mv, "ops") +
                          (ctx.solver.available() ? "" : " (no MILP backend in this build: core's bound of the relaxed graph)"));
    }
  }
  if (a.checkpointer.empty() && (a.budget.empty() || !a.offloader.empty())) rep.checkpointer.clear();
  if (!a.output.empty()) io::write_plan(a.output, p, mp, vr.taken);
  if (!a.report_json.empty()) io::save_json(a.report_json, io::report_to_json(rep), 2);
  if (!a.svg.empty()) io::write_heap_svg(a.svg, p, mp);
  if (!a.dot.empty()) io::write_dot_file(a.dot, p);
  if (!a.buffers.empty()) write_plan_buffers(a.buffers, p, mp);
  if (!a.quiet) {
    io::print_report(std::cout, rep);
    for (const auto& [what, path] : {std::pair{"plan", a.output}, {"report", a.report_json}, {"heap map", a.svg}, {"graph", a.dot}, {"buffers", a.buffers}})
      if (!path.empty()) std::cout << "wrote          " << what << " to " << path << "\n";
  }
  if (!ok) throw error(errc::invalid_plan, "the plan failed verification: " + ok.violation);
  return 0;
}

// ---- verify -------------------------------------------------------------------------------------------
int run_verify(const std::string& graph, const std::string& plan_path) {
  // A plan made with variants is checked against the graph with them taken (the plan names them).
  const auto pv = io::read_plan_with_variants(io::read_graph(graph), plan_path);
  const auto& p = pv.graph;
  const auto& mp = pv.plan;
  const auto r = verify(p, mp);
  // A plan checked against another graph than its own fails on whatever differs first; say so.
  if (!r)
    throw error(errc::invalid_plan, plan_path + ": " + r.violation +
                                        (!pv.graph_name.empty() && pv.graph_name != p.name()
                                             ? " (the plan was made for graph '" + pv.graph_name + "', and this graph is '" + p.name() + "')"
                                             : std::string()));
  std::cout << plan_path << ": valid plan for " << p.name() << ": " << mp.steps.size() << " steps, peak "
            << io::human_bytes(mp.stats.peak) << " (" << mp.stats.peak << " B), arena " << io::human_bytes(mp.arena) << " ("
            << mp.arena << " B)\n";
  return 0;
}

// ---- stats ----------------------------------------------------------------------------------------------
int run_stats(const std::string& graph, int top, bool as_json) {
  if (top < 0) throw error(errc::invalid_argument, "--top must be >= 0");
  const auto p = io::read_graph(graph);
  std::int64_t total = 0;
  std::map<tensor_kind, std::pair<std::int64_t, std::int64_t>> by_kind;  // count, bytes
  for (tensor_id t = 0; t < p.num_tensors(); ++t) {
    total += p.bytes(t);
    auto& k = by_kind[p.kind(t)];
    ++k.first;
    k.second += p.bytes(t);
  }
  std::map<op_phase, std::int64_t> phases;
  std::int64_t workspace = 0;
  for (op_id o = 0; o < p.num_ops(); ++o) {
    ++phases[p.phase(o)];
    workspace = std::max(workspace, p.workspace(o));
  }
  const auto given = given_order(p);
  const auto prof = profile(p, given);
  const auto lb = lower_bound_peak(p);
  std::vector<tensor_id> largest(static_cast<std::size_t>(p.num_tensors()));
  for (std::size_t i = 0; i < largest.size(); ++i) largest[i] = static_cast<tensor_id>(i);
  std::stable_sort(largest.begin(), largest.end(), [&](tensor_id a, tensor_id b) { return p.bytes(a) > p.bytes(b); });
  largest.resize(std::min(largest.size(), static_cast<std::size_t>(top)));

  if (as_json) {
    io::json j;
    j["graph"] = p.name();
    j["ops"] = p.num_ops();
    j["tensors"] = p.num_tensors();
    j["storages"] = p.num_storages();
    j["total_bytes"] = total;
    j["resident_bytes"] = p.resident_bytes();
    j["given_peak"] = prof.peak;
    j["given_peak_op"] = prof.peak_step >= 0 ? p.op_name(given[static_cast<std::size_t>(prof.peak_step)]) : std::string();
    j["lower_bound"] = lb.bytes;
    j["max_workspace"] = workspace;
    io::json k = io::json::object();
    for (const auto& [kind, cb] : by_kind) k[std::string(to_string(kind))] = {{"tensors", cb.first}, {"bytes", cb.second}};
    j["by_kind"] = k;
    io::json ph = io::json::object();
    for (const auto& [phase, n] : phases) ph[std::string(to_string(phase))] = n;
    j["phases"] = ph;
    io::json big = io::json::array();
    for (auto t : largest) big.push_back({{"id", p.tensor_name(t)}, {"bytes", p.bytes(t)}, {"kind", std::string(to_string(p.kind(t)))}});
    j["largest"] = big;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  auto bytes = [](std::int64_t b) { return io::human_bytes(b) + " (" + std::to_string(b) + " B)"; };
  std::cout << "graph          " << p.name() << "\n";
  std::cout << "ops            " << p.num_ops() << "\n";
  std::cout << "tensors        " << p.num_tensors() << " (" << p.num_storages() << " storages)\n";
  std::cout << "total bytes    " << bytes(total) << "\n";
  std::cout << "resident       " << bytes(p.resident_bytes()) << "\n";
  std::cout << "given peak     " << bytes(prof.peak);
  if (prof.peak_step >= 0) std::cout << " at op '" << p.op_name(given[static_cast<std::size_t>(prof.peak_step)]) << "' (step " << prof.peak_step << ")";
  std::cout << "\n";
  std::cout << "lower bound    " << bytes(lb.bytes) << (lb.uses_reachability ? "" : " (op-local bound only: graph too large for reachability)")
            << "\n";
  if (workspace > 0) std::cout << "max workspace  " << bytes(workspace) << "\n";
  std::cout << "by kind\n";
  for (const auto& [kind, cb] : by_kind) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-16s %8lld tensors %14s\n", std::string(to_string(kind)).c_str(),
                  static_cast<long long>(cb.first), io::human_bytes(cb.second).c_str());
    std::cout << line;
  }
  std::cout << "by phase\n";
  for (const auto& [phase, n] : phases) {
    char line[96];
    std::snprintf(line, sizeof line, "  %-16s %8lld ops\n", std::string(to_string(phase)).c_str(), static_cast<long long>(n));
    std::cout << line;
  }
  if (!largest.empty()) {
    std::cout << "largest tensors\n";
    for (auto t : largest) {
      char line[64];
      std::snprintf(line, sizeof line, "  %14s  %-16s ", io::human_bytes(p.bytes(t)).c_str(), std::string(to_string(p.kind(t))).c_str());
      std::cout << line << p.tensor_name(t) << "\n";
    }
  }
  return 0;
}

// ---- dot -------------------------------------------------------------------------------------------------
int run_dot(const std::string& graph, const std::string& out, bool lr) {
  const auto p = io::read_graph(graph);
  io::dot_options o;
  o.left_to_right = lr;
  if (out.empty() || out == "-") io::write_dot(std::cout, p, o);
  else io::write_dot_file(out, p, o);
  return 0;
}

// ---- place -----------------------------------------------------------------------------------------------
int run_place(const std::string& input, const std::string& capacity, const std::string& placer, double time_limit,
              bool deterministic, int threads, const std::string& out) {
  cli::csv_run_options o;
  o.input = input;
  if (!capacity.empty()) o.capacity = parse_bytes(capacity, "--capacity");
  o.placer = placer;
  o.time_limit_s = time_limit;
  o.deterministic = deterministic;
  o.threads = threads;
  o.output = out;
  (void)placers().make(placer);  // an unknown name is bad input, before any work
  const auto r = cli::run_csv(o, &std::cout);
  if (auto bad = place::check(r.list.problem, r.placement)) throw error(errc::runtime_error, "placer returned an invalid placement: " + *bad);
  if (o.capacity && r.placement.arena > *o.capacity)
    throw error(errc::infeasible, input + ": no placement found within --capacity " + std::to_string(*o.capacity) + " (best arena " +
                                      std::to_string(r.placement.arena) + ")");
  return 0;
}

}  // namespace

int memplan::cli::run_command_line(int argc, const char* const* argv, const command_line_limits& limits) {
  CLI::App app{"memplan: plans the memory of neural-network graphs (operator order, tensor offsets in one arena).", "memplan"};
  app.set_version_flag("--version", version_text);
  app.require_subcommand(1);
  app.footer(
      "Examples:\n"
      "  memplan plan data/models/resnet18-train-b32.json.gz --svg heap.svg --report-json report.json\n"
      "  memplan plan graph.json -o plan.json && memplan verify graph.json plan.json\n"
      "  memplan stats graph.json\n"
      "  memplan SUBCOMMAND --help     (options of one subcommand)\n"
      "Exit codes: 0 ok, 1 invalid plan or infeasible capacity, 2 bad input, 3 internal/solver failure.\n"
      "Graph format and plan format: docs/format.md; this tool: docs/cli.md.");

  const auto sched_names = schedulers().joined_names();
  const auto place_names = placers().joined_names();

  plan_args pa;
  auto* plan = app.add_subcommand("plan", "Plan a graph: order its ops and place its tensors in one arena; print a report.");
  plan->add_option("graph", pa.graph, "graph file in the memplan format (.json or .json.gz)")->required();
  plan->add_option("--scheduler", pa.scheduler, "op-ordering policy: " + sched_names)->capture_default_str();
  plan->add_option("--placer", pa.placer, "offset-placement policy: " + place_names)->capture_default_str();
  plan->add_option("--time-limit", pa.time_limit, "seconds for the policies that search (default: each policy's own)");
  plan->add_option("--bound-time", pa.bound_time,
                   "with --budget: seconds for tighter overhead bounds (remat/milp_bound.hpp, one 0-1 program per op with the MILP "
                   "backend): in the plan's order, in any order, and on a graph with variants with any of them; docs/recompute.md; "
                   "default 0: not run");
  plan->add_option("--alignment", pa.alignment, "byte alignment of every tensor offset, a power of two")->capture_default_str();
  plan->add_option("--capacity", pa.capacity, "arena limit in bytes (4096, 512MiB, 1.5GiB); exit 1 when it cannot be met");
  plan->add_option("--budget", pa.budget,
                   "memory budget in bytes (same syntax): recompute activations to fit it (the default checkpointer when none is named); "
                   "exit 1 with the smallest reachable arena and a lower bound when it cannot be met");
  plan->add_option("--checkpointer", pa.checkpointer, "recomputation policy: " + checkpointers().joined_names() + " (default: none, or default with --budget)");
  plan->add_option("--offloader", pa.offloader,
                   "offloading policy (activations to host memory and back, Beaumont et al.; docs/offload.md): " + offloaders().joined_names() +
                       "; the plan is then timed (makespan in the report)");
  plan->add_option("--bandwidth", pa.bandwidth, "offloading: device <-> host bytes per second (12e9, 12000000000)");
  plan->add_option("--device-flops", pa.device_flops, "offloading: FLOP per second of the device, for graphs whose costs are FLOPs (15e12)");
  plan->add_option("--host-limit", pa.host_limit, "offloading: host memory the offloaded values may use, in bytes (same syntax as --budget)");
  plan->add_option("--implementations", pa.implementations,
                   "for ops that list implementation alternatives: no-slower (each op on the least-workspace one no slower than its "
                   "own, then on faster ones that fit within that peak; and variants that read other tensors, such as an "
                   "output-activated backward: those that cost nothing, and those that keep the peak where the plan is "
                   "better with them: docs/monet.md) or own (every op on its own, the graph as given)")
      ->check(CLI::IsMember({"own", "no-slower"}))
      ->capture_default_str();
  plan->add_option("-o,--output", pa.output, "write the plan as JSON (docs/format.md, plan file)");
  plan->add_option("--svg", pa.svg, "write an SVG heap map (steps x addresses)");
  plan->add_option("--report-json", pa.report_json, "write the report as JSON");
  plan->add_option("--dot", pa.dot, "write the graph in Graphviz DOT");
  plan->add_option("--buffers", pa.buffers,
                   "write the placement problem of the plan: one buffer per tensor materialization and op workspace (id,lower,upper,size; "
                   "ticks and bytes) as MiniMalloc CSV, to place it again with memplan place or another placer");
  plan->add_flag("-q,--quiet", pa.quiet, "print nothing (files and exit code only)");
  plan->add_flag("-v,--verbose", pa.verbose, "print every progress event on stderr (default: on a terminal, the work that runs a second or more)");
  plan->add_flag("--deterministic", pa.deterministic,
                 "count work (iterations, search nodes) instead of time, ignoring --time-limit: the same graph and options "
                 "give a byte-identical plan file on every run and machine (stats.*_seconds are then written as 0)");
  plan->footer(
      "Examples:\n"
      "  memplan plan data/models/resnet18-train-b32.json.gz --svg heap.svg --report-json report.json\n"
      "  memplan plan graph.json --scheduler given --placer greedy_by_size -o plan.json\n"
      "  memplan plan graph.json --alignment 256 --capacity 2GiB --time-limit 10\n"
      "  memplan plan graph.json --budget 1GiB                      (recompute activations to fit 1 GiB)\n"
      "  memplan plan graph.json --budget 1GiB --offloader default --bandwidth 12e9   (offload activations to the host)\n"
      "The report shows the peak of the graph's own (given) order, the planned peak and its reduction, a lower\n"
      "bound on the peak of any order and the gap to it, the arena and its fragmentation, and the policies used.\n"
      "Schedulers:\n" + schedulers().help() + "Checkpointers:\n" + checkpointers().help() + "Offloaders:\n" + offloaders().help() +
      "Placers: " + place_names + " (default: heuristics, then an exact search within --time-limit).");

  std::string vgraph, vplan;
  auto* ver = app.add_subcommand("verify", "Check a plan against its graph; exit 0 only when it is valid.");
  ver->add_option("graph", vgraph, "graph file (.json or .json.gz)")->required();
  ver->add_option("plan", vplan, "plan file written by `memplan plan -o`")->required();
  ver->footer(
      "Example:\n"
      "  memplan plan graph.json -o plan.json && memplan verify graph.json plan.json\n"
      "Exit codes: 0 valid; 1 invalid (the first violation is printed: step, op, tensors, offsets); 2 unreadable input.");

  cli::explain_args ea;
  auto* expl = app.add_subcommand("explain", "Tell a plan in words: the peak step, what is live there and why, what is recomputed or offloaded.");
  expl->add_option("graph", ea.first, "graph file (.json or .json.gz); the two files may come in either order")->required();
  expl->add_option("plan", ea.second, "plan file written by `memplan plan -o`")->required();
  expl->add_option("--top", ea.top, "how many live storages to list at the peak")->capture_default_str();
  expl->footer("Example:\n  memplan plan graph.json --budget 1GiB -o plan.json && memplan explain graph.json plan.json");

  std::string shell;
  auto* comp = app.add_subcommand("completion", "Print a shell completion script (bash; zsh with bashcompinit).");
  comp->add_option("shell", shell, "bash")->required()->check(CLI::IsMember({"bash"}));
  comp->footer("Example:\n  memplan completion bash > ~/.local/share/bash-completion/completions/memplan");

  std::string sgraph;
  int stop = 10;
  bool sjson = false;
  auto* stats = app.add_subcommand("stats", "Describe a graph: sizes by kind, phases, given-order peak, lower bound, largest tensors.");
  stats->add_option("graph", sgraph, "graph file (.json or .json.gz)")->required();
  stats->add_option("--top", stop, "how many of the largest tensors to list")->capture_default_str();
  stats->add_flag("--json", sjson, "print the figures as JSON");
  stats->footer("Example:\n  memplan stats data/models/resnet18-train-b32.json.gz --top 5");

  std::string dgraph, dout;
  bool dlr = false;
  auto* dot = app.add_subcommand("dot", "Export a graph to Graphviz DOT (ops as boxes, tensors as edges labelled with size).");
  dot->add_option("graph", dgraph, "graph file (.json or .json.gz)")->required();
  dot->add_option("-o,--output", dout, "output file (default: standard output)");
  dot->add_flag("--lr", dlr, "lay the graph out left to right");
  dot->footer("Example:\n  memplan dot graph.json -o graph.dot && dot -Tsvg graph.dot -o graph.svg");

  std::string pin, pcap, pplacer = "default", pout;
  double ptl = -1;
  bool pdet = false;
  int pthreads = 0;
  auto* plc = app.add_subcommand("place", "Place a list of buffers with fixed lifetimes (MiniMalloc CSV: id,lower,upper,size).");
  plc->add_option("buffers", pin, "CSV file with the header id,lower,upper,size[,offset][,alignment]")->required();
  plc->add_option("--capacity", pcap, "arena limit in bytes (4096, 512MiB, ...); exit 1 when it cannot be met");
  plc->add_option("--placer", pplacer, "placement policy: " + place_names)->capture_default_str();
  plc->add_option("--time-limit", ptl,
                  "seconds for the placers that search (exact, default); without it: 60 with --capacity (stopping at the first fit), "
                  "else their own (default: 0.8 s, then 3.2 s more where that leaves the arena over 1 % above its bound; "
                  "both forward and time-reversed with two threads)");
  plc->add_option("-o,--output", pout, "write id,lower,upper,size,offset");
  plc->add_flag("--deterministic", pdet, "count search nodes instead of time (ignores --time-limit): the same offsets on every run");
  plc->add_option("--threads", pthreads,
                  "threads for the default placer without --capacity: with 2 it searches forward and on the "
                  "time-reversed list at once (default: 2 where the machine has two cores, else 1)")
      ->check(CLI::Range(0, 2));
  plc->footer("Example:\n  memplan place buffers.csv --placer best_fit -o offsets.csv\n  memplan place A.1048576.csv --capacity 1048576");

  cli::frontier_args fa;
  auto* fr = app.add_subcommand("frontier", "The memory / recompute-overhead curve: verified plans from no recomputation down to the smallest budget met.");
  fr->add_option("graph", fa.graph, "graph file (.json or .json.gz)")->required();
  fr->add_option("--checkpointer", fa.checkpointer, "recomputation policy: " + checkpointers().joined_names())->capture_default_str();
  fr->add_option("--scheduler", fa.scheduler, "op-ordering policy: " + sched_names)->capture_default_str();
  fr->add_option("--placer", fa.placer, "offset-placement policy: " + place_names)->capture_default_str();
  fr->add_option("--points", fa.points, "budgets on a geometric grid from the no-recompute arena toward the op-local lower bound; below the last one met, bisection finds the smallest budget the pipeline meets")->capture_default_str();
  fr->add_option("--time-limit", fa.time_limit, "seconds for the policies that search (default: each policy's own)");
  fr->add_option("--alignment", fa.alignment, "byte alignment of every offset, a power of two")->capture_default_str();
  fr->add_option("-o,--output", fa.output, "write the points as CSV (default: standard output)");
  fr->add_option("--svg", fa.svg, "write the curve as SVG (arena vs overhead)");
  fr->add_flag("-v,--verbose", fa.verbose, "print progress on stderr");
  fr->footer("Example:\n  memplan frontier data/models/resnet50-train-b32.json.gz -o frontier.csv --svg frontier.svg\n"
             "Columns: budget_bytes (-1: no budget), arena_bytes, peak_bytes, compute_cost, recompute_cost, overhead,\n"
             "recomputed_ops, checkpointer, plan_seconds, overhead_lower_bound (this order; -1: no plan has that arena),\n"
             "overhead_lower_bound_any_order, variants (how many the point's graph takes).");

  cli::zoo_args za;
  auto* zoo_cmd = app.add_subcommand("zoo", "Write a generated graph of bench/zoo (the benchmarks' models) in the graph format.");
  zoo_cmd->add_option("name", za.name, "which graph: " + cli::zoo_names())->required();
  zoo_cmd->add_option("--depth", za.depth, "resnet / chain: depth (18, 34, 50, 101, 152, 200 or 2 + 3k)")->capture_default_str();
  zoo_cmd->add_option("--batch", za.batch, "batch size (default: 32 for resnet and chain, 64 for lstm)");
  zoo_cmd->add_option("--image", za.image, "resnet / chain: image side in pixels")->capture_default_str();
  zoo_cmd->add_option("--steps", za.steps, "lstm: time steps")->capture_default_str();
  zoo_cmd->add_option("--layers", za.layers, "random_dag: layers")->capture_default_str();
  zoo_cmd->add_option("--seed", za.seed, "random_dag: seed")->capture_default_str();
  zoo_cmd->add_option("-o,--output", za.output, "output file (.json or .json.gz; default: standard output)");
  zoo_cmd->footer("Examples:\n  memplan zoo resnet --depth 1001 -o resnet1001.json.gz\n  memplan zoo lstm --steps 128 -o lstm.json");

  cli::symbolic_args sa;
  auto* sym = app.add_subcommand("symbolic", "One batch-size-symbolic allocation plan from a graph exported at two batch sizes; --batch N instantiates it.");
  sym->add_option("small", sa.small, "graph at the first batch size (.json or .json.gz)")->required();
  sym->add_option("large", sa.large, "the same graph at a second batch size")->required();
  sym->add_option("--batches", sa.batches, "the two files' batch sizes B1,B2 (default: from '-b<N>' in the names)")->delimiter(',');
  sym->add_option("--range", sa.range, "batch range MIN,MAX the plan must be valid for (default: B1,B2)")->delimiter(',');
  sym->add_option("--batch", sa.batch, "instantiate the plan at this batch size");
  sym->add_option("-o,--output", sa.output, "with --batch: write the instantiated placement as CSV (id,lower,upper,size,offset)");
  sym->footer("Example:\n  memplan symbolic data/models/resnet18-train-b1.json.gz data/models/resnet18-train-b32.json.gz --batch 12 -o b12.csv\n"
              "Exit codes: 0 proved for the whole range; 1 not proved (a bug: reported); 2 bad input (different graphs).");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "memplan: error: " << one_line(e.what()) << " (run 'memplan --help' or 'memplan SUBCOMMAND --help')\n";
    return 2;
  }
  if (limits.parse_only) return 0;
  if (limits.max_time_limit_s >= 0) {
    for (double* t : {&pa.time_limit, &ptl, &fa.time_limit}) *t = *t < 0 ? limits.max_time_limit_s : std::min(*t, limits.max_time_limit_s);
  }

  try {
    if (*plan) return run_plan(pa);
    if (*ver) return run_verify(vgraph, vplan);
    if (*expl) return cli::run_explain(ea);
    if (*comp) {
      cli::write_bash_completion(std::cout, app,
                                 {{"--scheduler", sched_names},
                                  {"--checkpointer", checkpointers().joined_names()},
                                  {"--offloader", offloaders().joined_names()},
                                  {"--placer", place_names},
                                  {"--implementations", "own, no-slower"}});
      return 0;
    }
    if (*stats) return run_stats(sgraph, stop, sjson);
    if (*dot) return run_dot(dgraph, dout, dlr);
    if (*plc) return run_place(pin, pcap, pplacer, ptl, pdet, pthreads, pout);
    if (*fr) return cli::run_frontier(fa);
    if (*zoo_cmd) return cli::run_zoo(za);
    if (*sym) return cli::run_symbolic(sa);
  } catch (const memplan::error& e) {
    std::cerr << "memplan: " << to_string(e.code()) << ": " << one_line(e.what()) << "\n";
    return exit_code(e.code());
  } catch (const std::bad_alloc&) {
    std::cerr << "memplan: internal error: out of memory\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "memplan: internal error: " << one_line(e.what()) << "\n";
    return 3;
  }
  return 0;
}
