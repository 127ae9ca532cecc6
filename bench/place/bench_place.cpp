// Placement benchmark. Prints (does not assert) against the targets of the placement work:
//  * 10k buffers placed heuristically in <= 1 s;
//  * default placer: 0.0 % fragmentation within 50 ms on model-like instances;
//  * proven optima on the MiniMalloc "challenging" instances.
// Usage: bench_place [--quick] [--mm-time SECONDS] [--no-minimalloc] [--no-synthetic] [--sizes 1000,10000,100000]
#include <chrono>
#include <ctime>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <memplan/io/buffers_csv.hpp>
#include <memplan/place/placers.hpp>

#include "place_report.hpp"

using namespace memplan;
using namespace memplan::place;
using clock_type = std::chrono::steady_clock;

namespace {

// A DNN-training-like buffer list: saved forward activations live until their backward step (nested
// lifetimes), per-op workspaces for one step, activation gradients for two steps, weight gradients for
// one; plus 15 % tensors with random lifetimes (skip connections, optimizer temporaries). Sizes follow
// a CNN: batch x channels x H x W x 4 B, channels doubling and resolution halving every quarter of the
// layers, with jitter; workspaces and weight gradients are smaller.
buffer_problem dnn_like(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  buffer_problem p;
  const auto layers = static_cast<std::int64_t>(std::max<std::size_t>(1, n * 85 / 100 / 4));
  const std::int64_t T = 2 * layers + 1;
  auto act_size = [&](std::int64_t i) {
    const auto stage = std::min<std::int64_t>(3, 4 * i / layers);
    const std::int64_t channels = 64 << stage, hw = 56 >> stage;
    std::uniform_int_distribution<int> jitter(1, 4);
    return std::int64_t{8} * channels * hw * hw * 4 * jitter(g) / 4;
  };
  auto add = [&](std::int64_t lo, std::int64_t hi, std::int64_t size) {
    if (p.buffers.size() >= n) return;
    p.buffers.push_back({lo, std::min(hi, T), std::max<std::int64_t>(size, 256)});
  };
  std::uniform_real_distribution<double> frac(0.05, 0.5);
  for (std::int64_t i = 0; i < layers; ++i) {
    const auto s = act_size(i);
    const auto back = 2 * layers - 1 - i;  // the backward step of layer i
    // Activation: 40 % are saved for the backward pass (conv/matmul inputs), the rest (elementwise
    // outputs, recomputable) die after their consumer.
    add(i, std::bernoulli_distribution(0.4)(g) ? back + 1 : i + 2, s);
    add(i, i + 1, static_cast<std::int64_t>(static_cast<double>(s) * frac(g)));  // workspace
    add(back, back + 2, s);                                                   // activation gradient
    add(back, back + 1, static_cast<std::int64_t>(static_cast<double>(s) * frac(g) / 4));  // weight gradient
  }
  std::geometric_distribution<int> len(0.05);
  std::uniform_int_distribution<std::int64_t> at(0, T - 1);
  while (p.buffers.size() < n) {
    const auto lo = at(g);
    add(lo, lo + 1 + len(g), act_size(std::uniform_int_distribution<std::int64_t>(0, layers - 1)(g)) / 2);
  }
  return p;
}

// Process CPU time: the benchmark machine may be shared, and every placer is single-threaded.
double cpu_ms() { return 1e3 * static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

struct row {
  std::string placer;
  double ms = 0;       // CPU
  double wall_ms = 0;
  std::int64_t arena = 0;
  std::string note;
};

row run(const std::string& name, const std::function<buffer_placement()>& f) {
  row r;
  r.placer = name;
  const auto t0 = clock_type::now();
  const auto c0 = cpu_ms();
  try {
    const auto pl = f();
    r.arena = pl.arena;
    r.note = pl.optimal ? "optimal" : "";
  } catch (const error& e) {
    r.note = e.what();
  }
  r.ms = cpu_ms() - c0;
  r.wall_ms = std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
  return r;
}

void synthetic(const std::vector<std::size_t>& sizes) {
  std::cout << "\n## Synthetic DNN-like buffer lists\n\n"
               "| buffers | placer | cpu ms | wall ms | arena (B) | lower bound (B) | gap % | note |\n"
               "|---:|---|---:|---:|---:|---:|---:|---|\n";
  for (auto n : sizes) {
    const auto p = dnn_like(n, 42 + n);
    const auto bound = arena_lower_bound(p);
    struct entry {
      std::string name;
      std::size_t max_n;  // skip above (quadratic or worse)
      std::function<buffer_placement()> f;
    };
    const std::vector<entry> placers = {
        {"bump", SIZE_MAX, [&] { return bump{}.place(p); }},
        {"greedy_by_size", SIZE_MAX, [&] { return greedy_by_size{}.place(p); }},
        {"greedy_by_breadth", SIZE_MAX, [&] { return greedy_by_breadth{}.place(p); }},
        {"best_fit", SIZE_MAX, [&] { return best_fit{}.place(p); }},
        {"gergov", 20000, [&] { return gergov{}.place(p); }},
        {"mincost_flow", 1000, [&] { return mincost_flow{}.place(p); }},
        {"pyramid", SIZE_MAX, [&] { return pyramid{}.place(p); }},
        {"default (50 ms)", SIZE_MAX, [&] { return default_placer{}.place(p); }},
        {"exact (2 s)", 10000, [&] { return exact{.time_limit_s = 2}.place(p); }},
        {"online first_fit", SIZE_MAX, [&] { return online::first_fit{}.place(p); }},
        {"online best_fit", SIZE_MAX, [&] { return online::best_fit{}.place(p); }},
        {"caching_allocator", SIZE_MAX, [&] { return online::caching_allocator{}.place(p); }},
    };
    double baseline_ms = 0;
    for (const auto& e : placers) {
      if (n > e.max_n) {
        std::printf("| %zu | %s | - | - | - | %lld | - | skipped above %zu buffers (O(n^2) or worse; exact: search limit) |\n", n, e.name.c_str(),
                    static_cast<long long>(bound), e.max_n);
        continue;
      }
      auto r = run(e.name, e.f);
      if (e.name == "greedy_by_size") baseline_ms = r.ms;
      std::string note = r.note;
      if (e.name != "greedy_by_size" && baseline_ms > 0) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%s%.1fx greedy_by_size time", note.empty() ? "" : ", ", r.ms / baseline_ms);
        note += buf;
      }
      if (r.arena == 0 && n > 0)
        std::printf("| %zu | %s | %.1f | %.1f | - | %lld | - | %s |\n", n, e.name.c_str(), r.ms, r.wall_ms, static_cast<long long>(bound),
                    r.note.c_str());
      else
        std::printf("| %zu | %s | %.1f | %.1f | %lld | %lld | %.2f | %s |\n", n, e.name.c_str(), r.ms, r.wall_ms,
                    static_cast<long long>(r.arena), static_cast<long long>(bound),
                    100.0 * static_cast<double>(r.arena - bound) / static_cast<double>(r.arena), note.c_str());
      std::fflush(stdout);
    }
  }
  std::cout << "\nTarget: 10k buffers heuristically placed in <= 1 s (see greedy_by_size / best_fit rows).\n";
}

void minimalloc(double seconds) {
  const std::filesystem::path dir = std::filesystem::path(MEMPLAN_SHARED_DIR) / "benchmarks" / "minimalloc";
  if (!std::filesystem::exists(dir)) {
    std::cout << "\n(MiniMalloc instances not found at " << dir << ")\n";
    return;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".csv") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::cout << "\n## MiniMalloc benchmark instances (exact with accept = capacity, time limit " << seconds << " s each)\n\n"
               "| instance | buffers | capacity | lower bound | greedy_by_size | exact arena | proven optimal | time s | "
               "fits capacity | nodes / note |\n|---|---:|---:|---:|---:|---:|---|---:|---|---|\n";
  int proven = 0, fit = 0, total = 0;
  for (const auto& f : files) {
    const auto list = io::read_buffers_csv_file(f.string());
    const auto cap = io::capacity_from_filename(f.string());
    const auto& p = list.problem;
    const auto bound = arena_lower_bound(p);
    const auto gs = greedy_by_size{}.place(p).arena;
    const auto t0 = clock_type::now();
    // MiniMalloc's task is the decision problem "fits the capacity": accept any arena <= capacity.
    const auto pl = exact{.time_limit_s = seconds, .accept = cap ? *cap : -1}.place(p);
    const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
    const bool fits = cap && pl.arena <= *cap;
    ++total;
    proven += pl.optimal;
    fit += fits;
    std::printf("| %s | %zu | %lld | %lld | %lld | %lld | %s | %.2f | %s | %s |\n", f.filename().c_str(),
                p.buffers.size(), cap ? static_cast<long long>(*cap) : -1LL, static_cast<long long>(bound),
                static_cast<long long>(gs), static_cast<long long>(pl.arena), pl.optimal ? "yes" : "no", s,
                fits ? "yes" : "NO", pl.note.c_str());
    std::fflush(stdout);
  }
  std::printf("\n%d/%d proven optimal, %d/%d fit their capacity.\n", proven, total, fit, total);
}

void model_like() {
  std::cout << "\n## Model-like training graphs (hook: memplan::bench::place_row)\n\n";
  bench::place_header(std::cout);
  for (std::size_t n : {200, 500, 1000, 2000, 5000})
    for (std::uint64_t seed : {1, 2}) {
      auto p = dnn_like(n, seed);
      bench::place_row(p, "dnn_like n=" + std::to_string(n) + " seed " + std::to_string(seed), std::cout);
      std::cout.flush();
    }
  std::cout << "\nTarget: default placer 0.0 % fragmentation within 50 ms.\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes = {1000, 10000, 100000};
  double mm_time = 10;
  bool mm = true, quick = false, synth = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") quick = true;
    else if (a == "--no-minimalloc") mm = false;
    else if (a == "--no-synthetic") synth = false;
    else if (a == "--mm-time" && i + 1 < argc) mm_time = std::atof(argv[++i]);
    else if (a == "--sizes" && i + 1 < argc) {
      sizes.clear();
      std::stringstream ss(argv[++i]);
      for (std::string x; std::getline(ss, x, ',');) sizes.push_back(static_cast<std::size_t>(std::stoull(x)));
    } else {
      std::cerr << "usage: bench_place [--quick] [--mm-time SECONDS] [--no-minimalloc] [--no-synthetic] [--sizes 1000,10000]\n";
      return 2;
    }
  }
  if (quick) { sizes = {1000, 10000}; mm_time = std::min(mm_time, 2.0); }
  std::cout << "# memplan placement benchmark\n";
  if (synth) synthetic(sizes);
  model_like();
  if (mm) minimalloc(mm_time);
}
