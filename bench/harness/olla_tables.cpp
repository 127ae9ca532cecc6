// memplan_olla_tables -- regenerates docs/results.md and docs/plots/*.svg: OLLA's evaluation
// (Steiner et al., §5.3-5.7, Figures 7, 8, 9, 11, 13) measured on the bundled PyTorch exports
// (data/models/*.json.gz) and on zoo graphs (Chen's ResNet/LSTM configurations, a Beaumont chain),
// every number from the same run, next to the paper's published averages.
//
// Per graph:
//  * given peak: the peak of PyTorch's own order under the memory rule (no fragmentation);
//  * best peak: the scheduler's order (default: schedule::default_scheduler); Fig. 7 reduction =
//    (given - best) / given;
//  * PyTorch fragmentation: place::online::caching_allocator replayed on the given order, (MR - RS) / MR
//    at MR's peak (OLLA §5.4); memplan fragmentation: (arena - peak) / arena of the placer's arena on the
//    best order (Fig. 8);
//  * plan times: scheduler and placer wall-clock seconds (Fig. 9 / Fig. 11);
//  * total reduction (Fig. 13): (caching-allocator reserved bytes on the given order - memplan arena) /
//    caching-allocator reserved bytes -- "total reduction in peak memory usage compared to PyTorch".
// Every memplan plan is verified (memplan::plan runs verify); the caching-allocator placement is
// checked by place::check.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/utsname.h>

#include <memplan/core/bounds.hpp>
#include <memplan/core/analysis.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/registry/placers.hpp>
#include <memplan/place/online/caching_allocator.hpp>
#include <memplan/registry/schedulers.hpp>
#include <zoo/zoo.hpp>

#if defined(MEMPLAN_HARNESS_WITH_JSON) && __has_include(<memplan/io/json.hpp>)
// g++ 12 at -O3 reports a bogus -Wrestrict inside libstdc++'s operator+(const char*, std::string&&)
// (GCC bug 105329) when it inlines the reader's message building; silence it for this header only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
#include <memplan/io/gzip.hpp>
#include <memplan/io/json.hpp>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#define MEMPLAN_HARNESS_READS_JSON 1
#endif

#include "svg_bars.hpp"

namespace fs = std::filesystem;
using namespace memplan;

namespace {

// ---- the paper's published figures (OLLA, arXiv 2210.12924, §5.3-5.7) ------------------------------
struct published {
  static constexpr double reorder_b1 = 22.5, reorder_b32 = 10.1, reorder_max = 38.0;  // Fig. 7, %
  static constexpr double pytorch_frag_b1 = 7.9, pytorch_frag_b32 = 26.1;               // Fig. 8, %
  static constexpr double olla_frag = 0.0;                                              // Fig. 8, %
  static constexpr double order_median_s = 1.4, order_median_pm = 0.2;                  // Fig. 9
  static constexpr double place_median_s = 5.7, place_median_pm = 0.6;                  // Fig. 11
  static constexpr double total_b1 = 30.4, total_b32 = 36.1;                            // Fig. 13, %
};

struct options {
  std::string models_dir = MEMPLAN_SOURCE_DIR "/data/models";
  std::string out = MEMPLAN_SOURCE_DIR "/docs/results.md";
  std::string plots = MEMPLAN_SOURCE_DIR "/docs/plots";
  std::string scheduler = "default";
  std::string placer = "default";
  double schedule_time = 5.0;
  double place_time = 2.0;
  std::int64_t alignment = 512;
  bool zoo = true;
  bool real = true;
  std::string only;  // substring filter on model names
  bool verbose = false;  // full plan notes on stderr
};

// A scheduler whose answer is already known (it ran with its own time limit).
struct precomputed_order {
  schedule_result result;
  [[nodiscard]] std::string name() const { return result.policy; }
  [[nodiscard]] schedule_result run(const problem&, const plan_context&) const { return result; }
};

struct model_source {
  std::string family;  // e.g. resnet50, zoo-resnet1001
  std::string mode;    // train / infer
  std::int64_t batch = 0;
  std::string origin;  // "PyTorch export" / "zoo"
  std::function<problem()> load;
  [[nodiscard]] std::string name() const { return family + "-" + mode + "-b" + std::to_string(batch); }
};

struct measurement {
  model_source src;
  bool ok = false;
  std::string error;
  std::int32_t ops = 0, tensors = 0;
  std::int64_t given_peak = 0, best_peak = 0, lower_bound = 0, arena = 0;
  std::int64_t pt_reserved = 0, pt_resident = 0;
  double sched_s = 0, place_s = 0, total_s = 0;
  std::string sched_policy, place_policy, notes, bound_by;
  [[nodiscard]] double reorder() const { return 100.0 * static_cast<double>(given_peak - best_peak) / static_cast<double>(given_peak); }
  [[nodiscard]] double reorder_bound() const {
    return 100.0 * static_cast<double>(given_peak - std::min(given_peak, lower_bound)) / static_cast<double>(given_peak);
  }
  [[nodiscard]] double pt_frag() const { return 100.0 * static_cast<double>(pt_reserved - pt_resident) / static_cast<double>(pt_reserved); }
  [[nodiscard]] double mp_frag() const { return 100.0 * static_cast<double>(arena - best_peak) / static_cast<double>(arena); }
  [[nodiscard]] double total() const { return 100.0 * static_cast<double>(pt_reserved - arena) / static_cast<double>(pt_reserved); }
};

measurement measure(const model_source& src, const options& opt) {
  measurement m;
  m.src = src;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    const auto p = src.load();
    m.ops = p.num_ops();
    m.tensors = p.num_tensors();
    const auto given = given_order(p);
    m.given_peak = peak_of(p, given);
    // PyTorch: its own order, its caching allocator (requests as made; the model rounds to 512 B).
    buffer_origin origin;
    const auto bp = to_buffers(p, make_timeline(p, given), 1, origin);
    const auto pt = place::online::caching_allocator{}.simulate(bp);
    m.pt_reserved = pt.reserved;
    m.pt_resident = pt.resident_peak;
    // The replay's resident set is the same memory rule as peak_of: an independent consistency check.
    if (m.pt_resident != m.given_peak)
      throw error(errc::invalid_plan, "caching-allocator replay holds " + std::to_string(m.pt_resident) +
                                          " live bytes at its peak, the memory rule says " + std::to_string(m.given_peak));
    // memplan: scheduler + placer, verified by plan().
    // The time limits go with each stage: the scheduler's and the placer's own.
    const auto sched = schedulers().make(opt.scheduler);
    const auto placer = placers().make(opt.placer);
    plan_context sctx, pctx;
    sctx.time_limit_s = opt.schedule_time;
    pctx.time_limit_s = opt.place_time;
    pctx.alignment = opt.alignment;
    pctx.cut_bound = true;  // as `memplan plan`: the min-cut bound where lower_bound_peak leaves a gap
    const auto ts = std::chrono::steady_clock::now();
    const auto order = sched.run(p, sctx);
    const double sched_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - ts).count();
    const auto mp = plan(p, precomputed_order{order} | placer, pctx);
    m.best_peak = mp.stats.peak;
    m.lower_bound = mp.stats.lower_bound;
    m.bound_by = mp.stats.lower_bound_by;
    m.arena = mp.arena;
    m.sched_s = sched_s;
    m.place_s = mp.stats.place_seconds;
    m.sched_policy = mp.stats.scheduler;
    m.place_policy = mp.stats.placer;
    for (const auto& n : mp.stats.notes) m.notes += (m.notes.empty() ? "" : "; ") + n;
    if (mp.stats.given_peak != m.given_peak)
      throw error(errc::invalid_plan, "plan's given peak " + std::to_string(mp.stats.given_peak) + " != " + std::to_string(m.given_peak));
    m.ok = true;
  } catch (const std::exception& e) {
    m.error = e.what();
  }
  m.total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

// ---- the graphs -------------------------------------------------------------------------------------
std::vector<model_source> real_models(const options& opt, std::string& note) {
  std::vector<model_source> v;
#if defined(MEMPLAN_HARNESS_READS_JSON)
  if (!fs::is_directory(opt.models_dir)) {
    note = "models directory " + opt.models_dir + " not found";
    return v;
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(opt.models_dir)) {
    const auto n = e.path().filename().string();
    if (n.size() > 8 && n.substr(n.size() - 8) == ".json.gz") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    // <family>-<mode>-b<batch>.json.gz
    auto stem = f.filename().string();
    stem = stem.substr(0, stem.size() - 8);
    const auto b = stem.rfind("-b");
    const auto m = b == std::string::npos ? std::string::npos : stem.rfind('-', b - 1);
    if (b == std::string::npos || m == std::string::npos) {
      note += "skipped " + f.filename().string() + " (name is not <model>-<mode>-b<batch>); ";
      continue;
    }
    model_source s;
    s.family = stem.substr(0, m);
    s.mode = stem.substr(m + 1, b - m - 1);
    s.batch = std::stoll(stem.substr(b + 2));
    s.origin = "PyTorch export";
    s.load = [path = f.string()] { return io::read_graph(path); };
    v.push_back(std::move(s));
  }
#else
  (void)opt;
  note = "this build has no JSON reader (memplan::json / io/json.hpp missing): bundled exports skipped";
#endif
  return v;
}

std::vector<model_source> zoo_models() {
  std::vector<model_source> v;
  auto add = [&](std::string family, std::int64_t batch, std::function<graph::dataflow_graph()> build) {
    v.push_back({std::move(family), "train", batch, "zoo", [build = std::move(build)] { return make_problem(build()); }});
  };
  // The zoo's own ResNets next to the PyTorch exports of the same nets.
  for (std::int64_t b : {1, 32}) add("zoo-resnet18", b, [b] { return zoo::resnet(18, b); });
  for (std::int64_t b : {1, 32}) add("zoo-resnet50", b, [b] { return zoo::resnet(50, b); });
  // Chen et al. §5.2: batch 32, 224x224, deep ResNets up to 1,000+ layers.
  add("zoo-resnet152", 32, [] { return zoo::resnet(152, 32); });
  add("zoo-resnet500", 32, [] { return zoo::resnet(500, 32); });
  add("zoo-resnet1001", 32, [] { return zoo::resnet(1001, 32); });
  // Chen et al. §5.3: 4-layer LSTM, hidden 1024, batch 64, 64 steps, softmax over 5000 classes.
  add("zoo-lstm4x1024-t64", 64, [] { return zoo::lstm(zoo::lstm_config{}); });
  // Beaumont et al. §6: ResNet-50 as a chain of virtual layers (224x224, batch 32).
  add("zoo-chain-resnet50", 32, [] { return zoo::chain(zoo::chain_params::from_resnet(zoo::resnet_config::from_depth(50))); });
  // Seeded random layered DAG (training).
  add("zoo-random-dag-s1", 1, [] {
    return zoo::random_dag({.layers = 40, .width = 8, .fan_in = 2, .skip_probability = 0.2, .min_bytes = 1 << 12,
                            .max_bytes = 1 << 24, .weight_ratio = 16, .training = true, .seed = 1});
  });
  return v;
}

// ---- formatting -------------------------------------------------------------------------------------
std::string fmt(double v, int prec = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}
std::string mib(std::int64_t b) { return fmt(static_cast<double>(b) / (1024.0 * 1024.0), 1); }
std::string secs(double s) { return s < 0.01 ? fmt(s * 1000, 2) + " ms" : s < 1 ? fmt(s * 1000, 0) + " ms" : fmt(s, 2) + " s"; }

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
double maximum(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

std::string machine_description() {
  std::string s;
  utsname u{};
  if (uname(&u) == 0) s = std::string(u.sysname) + " " + u.release + " " + u.version + " " + u.machine;
  std::ifstream cpu("/proc/cpuinfo");
  std::string line, model;
  while (std::getline(cpu, line))
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  return "`" + s + "`; CPU: " + (model.empty() ? "unknown" : model) + "; " + std::to_string(std::thread::hardware_concurrency()) +
         " hardware threads";
}

std::string utc_now() {
  const auto t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

// Rows of a figure table: the training graphs of the PyTorch exports, one row per model, b1 / b32 columns.
struct paired {
  std::string family;
  const measurement* b1 = nullptr;
  const measurement* b32 = nullptr;
};

std::vector<paired> pair_by_family(const std::vector<measurement>& ms, const std::string& origin, const std::string& mode) {
  std::vector<paired> rows;
  for (const auto& m : ms) {
    if (m.src.origin != origin || m.src.mode != mode || !m.ok) continue;
    auto it = std::find_if(rows.begin(), rows.end(), [&](const paired& r) { return r.family == m.src.family; });
    if (it == rows.end()) {
      rows.push_back({m.src.family});
      it = rows.end() - 1;
    }
    if (m.src.batch == 1) it->b1 = &m;
    if (m.src.batch == 32) it->b32 = &m;
  }
  return rows;
}

std::string cell(const measurement* m, double (measurement::*f)() const) { return m ? fmt((m->*f)(), 1) : "–"; }

std::vector<double> collect(const std::vector<paired>& rows, bool b32, double (measurement::*f)() const) {
  std::vector<double> v;
  for (const auto& r : rows)
    if (auto* m = b32 ? r.b32 : r.b1) v.push_back((m->*f)());
  return v;
}

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  if (!f) throw error(errc::io_error, "cannot write " + p.string());
  f << text;
  if (!f) throw error(errc::io_error, "error while writing " + p.string());
}

harness::bar_chart chart(const std::string& title, const std::string& y, const std::vector<paired>& rows,
                         const std::vector<std::pair<std::string, std::function<std::optional<double>(const paired&)>>>& series,
                         std::vector<harness::reference_line> refs, bool log_scale = false) {
  static const char* colors[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948"};
  harness::bar_chart c;
  c.title = title;
  c.y_label = y;
  c.log_scale = log_scale;
  for (const auto& r : rows) c.categories.push_back(r.family);
  for (std::size_t s = 0; s < series.size(); ++s) {
    harness::bar_series bs;
    bs.label = series[s].first;
    bs.color = colors[s % 6];
    for (const auto& r : rows) bs.values.push_back(series[s].second(r));
    c.series.push_back(std::move(bs));
  }
  c.references = std::move(refs);
  return c;
}

std::function<std::optional<double>(const paired&)> value(bool b32, double (measurement::*f)() const) {
  return [b32, f](const paired& r) -> std::optional<double> {
    const auto* m = b32 ? r.b32 : r.b1;
    if (!m) return std::nullopt;
    return (m->*f)();
  };
}

double sched_time(const measurement& m) { return m.sched_s; }
double place_time(const measurement& m) { return m.place_s; }

std::string report(const std::vector<measurement>& ms, const options& opt, const std::string& real_note, double wall_s,
                   const std::string& command) {
  std::ostringstream o;
  const auto train = pair_by_family(ms, "PyTorch export", "train");
  const auto infer = pair_by_family(ms, "PyTorch export", "infer");
  o << "# Results: OLLA's evaluation reproduced\n\n";
  o << "Generated by `" << command << "` (see [benchmarks.md](benchmarks.md)) on " << utc_now() << ".\n\n";
  o << "- Machine: " << machine_description() << ".\n";
  o << "- Build: " <<
#if defined(__clang__)
      "clang++ "
#elif defined(__GNUC__)
      "g++ "
#endif
    << __VERSION__ <<
#if defined(NDEBUG)
      ", optimised (NDEBUG)"
#else
      ", NOT optimised (assertions on): times are not representative"
#endif
    << ".\n";
  o << "- memplan: scheduler `" << opt.scheduler << "` (time limit " << fmt(opt.schedule_time, 1) << " s per graph), placer `"
    << opt.placer << "` (time limit " << fmt(opt.place_time, 1) << " s per graph), alignment " << opt.alignment
    << " B (the caching allocator's granularity); every plan verified by `memplan::verify`.\n";
  o << "- PyTorch baseline: the exported (given) order, replayed on `place::online::caching_allocator` (model of "
       "PyTorch's CUDA caching allocator: 512 B rounding, small/large pools, 2 MiB / 20 MiB segments, no cross-segment "
       "coalescing).\n";
  o << "- Whole run: " << fmt(wall_s, 1) << " s wall-clock for " << ms.size() << " graphs (one process, one thread).\n";
  if (!real_note.empty()) o << "- Note: " << real_note << "\n";
  o << "\nAll figures of one table come from this one run. The paper (OLLA, §5) publishes per-model values only as bar "
       "charts; the numbers it states in the text are its averages and medians, which the last rows compare with. "
       "OLLA solved ILPs with Gurobi under a 5-minute cap per problem on a Xeon Gold 6138; memplan here runs its "
       "solver-free default policies under the time limits above, on the models bundled in `data/models` (exported from "
       "PyTorch 1.13 by `tools/export_torch.py`; OLLA's set also had ResNet3D, XLM-R, ViT, which are not bundled).\n\n";

  // Failures first, so that nothing is hidden.
  for (const auto& m : ms)
    if (!m.ok) o << "- **" << m.src.name() << " failed**: " << m.error << "\n";

  // ---- the graphs ----
  o << "\n## The graphs\n\n| graph | source | ops | tensors | given-order peak (MiB) | lower bound (MiB) | bound by |\n|---|---|---:|---:|---:|---:|---|\n";
  for (const auto& m : ms)
    if (m.ok)
      o << "| " << m.src.name() << " | " << m.src.origin << " | " << m.ops << " | " << m.tensors << " | " << mib(m.given_peak)
        << " | " << mib(m.lower_bound) << " | " << m.bound_by << " |\n";
  o << "\nLower bound: the plan's (`plan_stats::lower_bound`, as `memplan plan` reports it), valid for every order: "
       "`lower_bound_peak` (what any order must hold at some op; OLLA §3.3 edge precedence), the scheduler's own where "
       "it proves more, or the min-cut bound (core/cut_bound.hpp: at each op, the least bytes that separate the ops "
       "already run from those not yet run) where those leave a gap. A certificate for the reordering column below.\n";

  // ---- Fig. 7 ----
  o << "\n## Figure 7: peak memory reduction from node reordering\n\n"
       "(given-order peak − memplan order's peak) / given-order peak, without fragmentation (both peaks by the memory rule; "
       "OLLA §5.3 \"eliminated the impact of memory fragmentation\").\n\n"
       "The bound columns are (given-order peak − lower bound) / given-order peak: no order of that graph can reduce more "
       "(the lower bound above), so a small bound means PyTorch's order is already close to optimal.\n\n"
       "| model (training) | batch 1: given → memplan (MiB) | reduction b1 (%) | bound b1 (%) | batch 32: given → memplan (MiB) | "
       "reduction b32 (%) | bound b32 (%) |\n"
       "|---|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& r : train) {
    auto pk = [](const measurement* m) { return m ? mib(m->given_peak) + " → " + mib(m->best_peak) : std::string("–"); };
    o << "| " << r.family << " | " << pk(r.b1) << " | " << cell(r.b1, &measurement::reorder) << " | "
      << cell(r.b1, &measurement::reorder_bound) << " | " << pk(r.b32) << " | " << cell(r.b32, &measurement::reorder) << " | "
      << cell(r.b32, &measurement::reorder_bound) << " |\n";
  }
  const auto r1 = collect(train, false, &measurement::reorder), r32 = collect(train, true, &measurement::reorder);
  const auto q1 = collect(train, false, &measurement::reorder_bound), q32 = collect(train, true, &measurement::reorder_bound);
  o << "| **memplan average** (max) | | **" << fmt(mean(r1)) << "** (" << fmt(maximum(r1)) << ") | " << fmt(mean(q1)) << " | | **"
    << fmt(mean(r32)) << "** (" << fmt(maximum(r32)) << ") | " << fmt(mean(q32)) << " |\n";
  o << "| OLLA, published average (max over all) | | " << fmt(published::reorder_b1) << " (" << fmt(published::reorder_max)
    << ") | | | " << fmt(published::reorder_b32) << " (" << fmt(published::reorder_max) << ") | |\n";
  {
    int proven = 0, within_1 = 0, n = 0;
    std::string above;  // the graphs more than 1 % above their bound
    for (const auto& r : train)
      for (auto* m : {r.b1, r.b32})
        if (m) {
          ++n;
          proven += m->best_peak == m->lower_bound;
          const double gap = m->lower_bound > 0 ? static_cast<double>(m->best_peak - m->lower_bound) / static_cast<double>(m->lower_bound) : 0.0;
          if (gap <= 0.01)
            ++within_1;
          else
            above += (above.empty() ? "" : ", ") + m->src.name() + " " + fmt(100.0 * gap) + " %";
        }
    o << "\nmemplan's order reaches the lower bound (a proven minimum peak) on " << proven << " of " << n
      << " training graphs; where it does, no reordering could reduce the peak further. It is within 1 % of the bound on "
      << within_1 << " of " << n << (above.empty() ? "" : " (above it: " + above + ")")
      << ". These tables plan the graph as exported, as PyTorch runs it; `memplan plan` with its defaults also "
         "considers the graph's variants (e.g. concatenations written in place, docs/monet.md), which this harness leaves "
         "out, and certifies its plan against the bound of the graph it kept.\n";
  }
  o << "\n![Figure 7](plots/fig7_reordering.svg)\n";

  // ---- Fig. 8 ----
  o << "\n## Figure 8: fragmentation, PyTorch caching allocator vs memplan placement\n\n"
       "(MR − RS) / MR at MR's peak (OLLA §5.4): MR = bytes reserved (caching allocator: its segments; memplan: the arena), "
       "RS = the resident set at that moment (the peak of live bytes of the order each runs).\n\n"
       "| model (training) | PyTorch b1 (%) | memplan b1 (%) | PyTorch b32 (%) | memplan b32 (%) |\n|---|---:|---:|---:|---:|\n";
  for (const auto& r : train)
    o << "| " << r.family << " | " << cell(r.b1, &measurement::pt_frag) << " | " << cell(r.b1, &measurement::mp_frag) << " | "
      << cell(r.b32, &measurement::pt_frag) << " | " << cell(r.b32, &measurement::mp_frag) << " |\n";
  const auto f1 = collect(train, false, &measurement::pt_frag), f32 = collect(train, true, &measurement::pt_frag);
  const auto g1 = collect(train, false, &measurement::mp_frag), g32 = collect(train, true, &measurement::mp_frag);
  o << "| **measured average** | **" << fmt(mean(f1)) << "** | **" << fmt(mean(g1), 2) << "** | **" << fmt(mean(f32)) << "** | **"
    << fmt(mean(g32), 2) << "** |\n";
  o << "| OLLA, published average | " << fmt(published::pytorch_frag_b1) << " | " << fmt(published::olla_frag) << " | "
    << fmt(published::pytorch_frag_b32) << " | " << fmt(published::olla_frag) << " |\n";
  o << "\nThe PyTorch column is a model of the allocator replayed on the exported order, not a measurement on a GPU; "
       "memplan's residue above 0 % is 512 B alignment padding plus whatever the placer's time limit left.\n";
  o << "\n![Figure 8](plots/fig8_fragmentation.svg)\n";

  // ---- Fig. 9 / 11 ----
  o << "\n## Figures 9 and 11: planning times\n\n"
       "Wall-clock seconds of memplan's scheduler (node ordering, Fig. 9) and placer (address generation, Fig. 11) per "
       "graph, single-threaded. Both stop at their time limits (above).\n\n"
       "| model (training) | ordering b1 | ordering b32 | placement b1 | placement b32 |\n|---|---:|---:|---:|---:|\n";
  auto tcell = [](const measurement* m, double (*f)(const measurement&)) { return m ? secs(f(*m)) : std::string("–"); };
  std::vector<double> st, pt;
  for (const auto& r : train) {
    o << "| " << r.family << " | " << tcell(r.b1, sched_time) << " | " << tcell(r.b32, sched_time) << " | " << tcell(r.b1, place_time)
      << " | " << tcell(r.b32, place_time) << " |\n";
    for (auto* m : {r.b1, r.b32})
      if (m) {
        st.push_back(m->sched_s);
        pt.push_back(m->place_s);
      }
  }
  o << "| **memplan median** (max) | **" << secs(median(st)) << "** (" << secs(maximum(st)) << ") | | **" << secs(median(pt)) << "** ("
    << secs(maximum(pt)) << ") | |\n";
  o << "| OLLA, published median (Gurobi) | " << fmt(published::order_median_s) << " ± " << fmt(published::order_median_pm)
    << " s | | " << fmt(published::place_median_s) << " ± " << fmt(published::place_median_pm) << " s | |\n";
  o << "\n![Figures 9 and 11](plots/fig9_11_times.svg)\n";

  // ---- Fig. 13 ----
  o << "\n## Figure 13: total reduction in peak memory vs PyTorch\n\n"
       "(caching allocator's reserved bytes on the given order − memplan's arena on its own order) / caching allocator's "
       "reserved bytes: reordering and placement together, against what PyTorch actually reserves.\n\n"
       "| model (training) | PyTorch b1 (MiB) | memplan b1 (MiB) | reduction b1 (%) | PyTorch b32 (MiB) | memplan b32 (MiB) | reduction b32 (%) |\n"
       "|---|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& r : train) {
    auto mb = [](const measurement* m, bool pt_) { return m ? mib(pt_ ? m->pt_reserved : m->arena) : std::string("–"); };
    o << "| " << r.family << " | " << mb(r.b1, true) << " | " << mb(r.b1, false) << " | " << cell(r.b1, &measurement::total) << " | "
      << mb(r.b32, true) << " | " << mb(r.b32, false) << " | " << cell(r.b32, &measurement::total) << " |\n";
  }
  const auto t1 = collect(train, false, &measurement::total), t32 = collect(train, true, &measurement::total);
  o << "| **memplan average** | | | **" << fmt(mean(t1)) << "** | | | **" << fmt(mean(t32)) << "** |\n";
  o << "| OLLA, published average | | | " << fmt(published::total_b1) << " | | | " << fmt(published::total_b32) << " |\n";
  o << "\n![Figure 13](plots/fig13_total.svg)\n";

  // ---- inference and zoo graphs ----
  auto full_table = [&](const std::string& title, const std::string& origin, const std::string& mode) {
    bool any = false;
    for (const auto& m : ms) any = any || (m.ok && m.src.origin == origin && (mode.empty() || m.src.mode == mode));
    if (!any) return;
    o << "\n## " << title << "\n\n| graph | ops | given peak (MiB) | memplan peak (MiB) | reordering (%) | PyTorch reserved (MiB) | "
         "PyTorch frag. (%) | memplan arena (MiB) | memplan frag. (%) | total (%) | ordering | placement |\n"
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const auto& m : ms) {
      if (!m.ok || m.src.origin != origin || (!mode.empty() && m.src.mode != mode)) continue;
      o << "| " << m.src.name() << " | " << m.ops << " | " << mib(m.given_peak) << " | " << mib(m.best_peak) << " | " << fmt(m.reorder())
        << " | " << mib(m.pt_reserved) << " | " << fmt(m.pt_frag()) << " | " << mib(m.arena) << " | " << fmt(m.mp_frag(), 2) << " | "
        << fmt(m.total()) << " | " << secs(m.sched_s) << " | " << secs(m.place_s) << " |\n";
    }
  };
  full_table("Inference graphs (PyTorch exports; not in OLLA's figures)", "PyTorch export", "infer");
  full_table("Zoo graphs (bench/zoo: Chen's ResNet and LSTM configurations, a Beaumont chain, a random DAG)", "zoo", "");
  o << "\nZoo graphs are built analytically (bench/zoo, see benchmarks.md), not traced: zoo-resnet18/50 sit next to the "
       "PyTorch exports of the same nets as a cross-check of the builders; the others are the configurations of Chen et al. "
       "§5.2-5.3 (ResNet-500 and ResNet-1001 = 166 and 333 bottleneck blocks at batch 32, 224×224; Chen et al. report 48 GB for a 1,000-layer ResNet before optimisation; LSTM 4×1024, 64 steps, batch 64) and of "
       "Beaumont et al. §6 (ResNet-50 as a chain of virtual layers).\n";

  // ---- which policies won ----
  o << "\n## Policies chosen\n\nWhat `plan_stats` says: the winning scheduler and placer, and their notes (truncated).\n\n"
       "| graph | scheduler result | placer result | notes |\n|---|---|---|---|\n";
  for (const auto& m : ms) {
    if (!m.ok) continue;
    auto notes = m.notes;
    for (auto& ch : notes)
      if (ch == '|' || ch == '\n') ch = '/';
    if (notes.size() > 240) notes = notes.substr(0, 237) + "...";
    o << "| " << m.src.name() << " | " << m.sched_policy << " | " << m.place_policy << " | " << notes << " |\n";
  }
  (void)infer;
  return o.str();
}

void write_plots(const std::vector<measurement>& ms, const fs::path& dir) {
  fs::create_directories(dir);
  const auto train = pair_by_family(ms, "PyTorch export", "train");
  write_file(dir / "fig7_reordering.svg",
             harness::render_svg(chart("Fig. 7: peak reduction from reordering (memplan vs PyTorch order)", "reduction (%)", train,
                                       {{"batch 1", value(false, &measurement::reorder)}, {"batch 32", value(true, &measurement::reorder)}},
                                       {{"OLLA avg b1 22.5%", "#4e79a7", published::reorder_b1},
                                        {"OLLA avg b32 10.1%", "#f28e2b", published::reorder_b32}})));
  write_file(dir / "fig8_fragmentation.svg",
             harness::render_svg(chart("Fig. 8: fragmentation (MR - RS) / MR", "fragmentation (%)", train,
                                       {{"PyTorch b1", value(false, &measurement::pt_frag)},
                                        {"PyTorch b32", value(true, &measurement::pt_frag)},
                                        {"memplan b1", value(false, &measurement::mp_frag)},
                                        {"memplan b32", value(true, &measurement::mp_frag)}},
                                       {{"OLLA: PyTorch avg b1 7.9%", "#4e79a7", published::pytorch_frag_b1},
                                        {"b32 26.1%", "#f28e2b", published::pytorch_frag_b32}})));
  auto secs_of = [](bool b32, bool sched) {
    return [b32, sched](const paired& r) -> std::optional<double> {
      const auto* m = b32 ? r.b32 : r.b1;
      if (!m) return std::nullopt;
      return sched ? m->sched_s : m->place_s;
    };
  };
  write_file(dir / "fig9_11_times.svg",
             harness::render_svg(chart("Figs. 9 and 11: planning time per graph (log scale)", "seconds", train,
                                       {{"ordering b1", secs_of(false, true)},
                                        {"ordering b32", secs_of(true, true)},
                                        {"placement b1", secs_of(false, false)},
                                        {"placement b32", secs_of(true, false)}},
                                       {{"OLLA median ordering 1.4 s", "#4e79a7", published::order_median_s},
                                        {"placement 5.7 s", "#e15759", published::place_median_s}},
                                       true)));
  write_file(dir / "fig13_total.svg",
             harness::render_svg(chart("Fig. 13: total reduction vs PyTorch (caching allocator, given order)", "reduction (%)", train,
                                       {{"batch 1", value(false, &measurement::total)}, {"batch 32", value(true, &measurement::total)}},
                                       {{"OLLA avg b1 30.4%", "#4e79a7", published::total_b1},
                                        {"OLLA avg b32 36.1%", "#f28e2b", published::total_b32}})));
}

void usage() {
  std::cout << "memplan_olla_tables [--out FILE.md] [--plots DIR] [--models DIR] [--scheduler NAME] [--placer NAME]\n"
               "                    [--schedule-time S] [--place-time S] [--alignment B] [--no-zoo] [--no-real] [--only SUBSTR]\n"
               "                    [--verbose]\n"
               "Regenerates docs/results.md and docs/plots/*.svg (OLLA Figs. 7, 8, 9, 11, 13).\n";
}

}  // namespace

int main(int argc, char** argv) {
  options opt;
  std::string command = "bench/harness/regenerate.sh";
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc) throw error(errc::invalid_argument, a + " needs a value");
        return argv[++i];
      };
      if (a == "--out") opt.out = next();
      else if (a == "--plots") opt.plots = next();
      else if (a == "--models") opt.models_dir = next();
      else if (a == "--scheduler") opt.scheduler = next();
      else if (a == "--placer") opt.placer = next();
      else if (a == "--schedule-time") opt.schedule_time = std::stod(next());
      else if (a == "--place-time") opt.place_time = std::stod(next());
      else if (a == "--alignment") opt.alignment = std::stoll(next());
      else if (a == "--no-zoo") opt.zoo = false;
      else if (a == "--no-real") opt.real = false;
      else if (a == "--only") opt.only = next();
      else if (a == "--verbose") opt.verbose = true;
      else if (a == "--command") command = next();
      else if (a == "--help" || a == "-h") { usage(); return 0; }
      else throw error(errc::invalid_argument, "unknown option '" + a + "'");
    }
    // Fail early on bad policy names.
    (void)schedulers().make(opt.scheduler);
    (void)placers().make(opt.placer);

    std::string note;
    std::vector<model_source> models;
    if (opt.real) models = real_models(opt, note);
    if (opt.zoo)
      for (auto& z : zoo_models()) models.push_back(std::move(z));
    if (!opt.only.empty())
      models.erase(std::remove_if(models.begin(), models.end(),
                                  [&](const model_source& m) { return m.name().find(opt.only) == std::string::npos; }),
                   models.end());
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<measurement> ms;
    for (const auto& m : models) {
      std::cerr << m.name() << " ... " << std::flush;
      ms.push_back(measure(m, opt));
      const auto& r = ms.back();
      if (r.ok)
        std::cerr << r.ops << " ops, given " << mib(r.given_peak) << " MiB -> " << mib(r.best_peak) << " MiB (" << fmt(r.reorder())
                  << " %), PyTorch reserved " << mib(r.pt_reserved) << " MiB, arena " << mib(r.arena) << " MiB, total "
                  << fmt(r.total()) << " %, " << fmt(r.total_s, 2) << " s\n";
      else
        std::cerr << "FAILED: " << r.error << "\n";
      if (opt.verbose && r.ok)
        std::cerr << "  schedule " << secs(r.sched_s) << ", place " << secs(r.place_s) << "; notes: " << r.notes << "\n";
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const fs::path out(opt.out);
    if (out.has_parent_path()) fs::create_directories(out.parent_path());
    write_file(out, report(ms, opt, note, wall, command));
    write_plots(ms, opt.plots);
    std::cerr << "wrote " << opt.out << " and " << opt.plots << "/*.svg in " << fmt(wall, 1) << " s\n";
    for (const auto& m : ms)
      if (!m.ok) return 2;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "memplan_olla_tables: " << e.what() << "\n";
    return 1;
  }
}
