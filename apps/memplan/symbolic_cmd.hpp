#pragma once
// `memplan symbolic SMALL LARGE [--batches B1,B2] [--range MIN,MAX] [--batch N] [-o FILE.csv]`:
// one batch-size-symbolic plan (runtime/symbolic.hpp) from the same graph exported at two batch sizes.
// Each graph is run in its given order the way a framework allocates (runtime/plan_replay.hpp); the two
// allocation traces give every allocation an affine size a + b·batch; one placement with affine offsets
// is computed for every batch in the range and proved there. Prints the fit, the proof, and the arena
// of the symbolic plan against a greedy_by_size plan per batch (at N, or at the range's ends and powers
// of two); with -o writes the plan instantiated at N as MiniMalloc CSV (id,lower,upper,size,offset;
// lifetimes in allocation events).
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/io/buffers_csv.hpp>
#include <memplan/io/json.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/runtime/plan_replay.hpp>
#include <memplan/runtime/symbolic.hpp>
#include <memplan/schedule/given.hpp>

namespace memplan::cli {

struct symbolic_args {
  std::string small, large, output;
  std::vector<std::int64_t> batches;  // the batches of the two files (default: from "-b<N>" in their names)
  std::vector<std::int64_t> range;    // MIN,MAX (default: the two batches)
  std::int64_t batch = -1;            // instantiate at this batch
};

// The first "-b<digits>" followed by '.' or '-' in the name (export_torch.py names files "<model>-b<N>.json").
// A hand scan rather than <regex>: g++ 12's <regex> trips -Wmaybe-uninitialized under -O1 + sanitizers.
inline std::int64_t batch_from_name(const std::string& path) {
  for (std::size_t i = 0; i + 2 < path.size(); ++i) {
    if (path[i] != '-' || path[i + 1] != 'b') continue;
    std::size_t j = i + 2;
    while (j < path.size() && path[j] >= '0' && path[j] <= '9') ++j;
    if (j > i + 2 && j < path.size() && (path[j] == '.' || path[j] == '-') && j - (i + 2) <= 18)
      return std::stoll(path.substr(i + 2, j - (i + 2)));
  }
  throw error(errc::invalid_argument, "symbolic: cannot tell the batch size of '" + path + "' from its name; give --batches B1,B2");
}

inline runtime::allocation_trace trace_of_graph(const std::string& path) {
  const auto prob = io::read_graph(path);
  const auto plan = memplan::plan(prob, schedule::given{} | place::greedy_by_size{}, {.alignment = 64});
  return runtime::allocations_of(prob, plan).trace;
}

inline int run_symbolic(const symbolic_args& a) {
  const auto b1 = a.batches.size() == 2 ? a.batches[0] : batch_from_name(a.small);
  const auto b2 = a.batches.size() == 2 ? a.batches[1] : batch_from_name(a.large);
  if (!a.batches.empty() && a.batches.size() != 2) throw error(errc::invalid_argument, "symbolic: --batches takes two values");
  if (!a.range.empty() && a.range.size() != 2) throw error(errc::invalid_argument, "symbolic: --range takes MIN,MAX");
  const runtime::batch_range range = a.range.size() == 2 ? runtime::batch_range{a.range[0], a.range[1]}
                                                          : runtime::batch_range{std::min(b1, b2), std::max(b1, b2)};
  if (!a.output.empty() && a.batch < 0) throw error(errc::invalid_argument, "symbolic: -o needs --batch N (the batch whose placement it writes)");
  const auto t1 = trace_of_graph(a.small), t2 = trace_of_graph(a.large);
  const auto st = [&] {
    try {
      return runtime::fit_traces(t1, b1, t2, b2, range);
    } catch (const error& e) {
      std::string what = e.what();
      if (const auto at = what.find("fit_traces: "); at != std::string::npos) what.erase(0, at + 12);
      throw error(e.code(), "symbolic: '" + a.small + "' and '" + a.large + "' are not one program at two batch sizes: " + what);
    }
  }();
  std::int64_t exact = 0;
  for (std::size_t i = 0; i < st.sizes.size(); ++i)
    exact += st.sizes[i].at(b1) == t1.allocations[i].size && st.sizes[i].at(b2) == t2.allocations[i].size;
  const auto sr = runtime::plan_symbolic(st, place::greedy_by_size{});
  const auto proof = runtime::prove(sr.problem, sr.placement);
  std::printf("allocations: %zu (%lld with exactly affine sizes), planned buffers: %zu, batch range [%lld, %lld]\n", st.sizes.size(),
              static_cast<long long>(exact), sr.problem.buffers.size(), static_cast<long long>(range.min), static_cast<long long>(range.max));
  std::printf("symbolic plan (%s): %s; slab for every batch: %lld B\n", sr.placement.placer.c_str(),
              proof ? ("NOT PROVED: " + *proof).c_str() : "proved for every batch in the range", static_cast<long long>(sr.slab));
  std::vector<std::int64_t> show;
  if (a.batch >= 0) show.push_back(a.batch);
  else {
    show.push_back(range.min);
    for (std::int64_t b = 1; b < range.max; b *= 2)
      if (b > range.min) show.push_back(b);
    if (range.max != range.min) show.push_back(range.max);
  }
  std::printf("%8s %16s %16s %8s\n", "batch", "symbolic B", "per-batch B", "ratio");
  int status = proof ? 1 : 0;
  for (auto b : show) {
    if (b < range.min || b > range.max) throw error(errc::invalid_argument, "symbolic: --batch " + std::to_string(b) + " is outside the range");
    if (auto bad = runtime::check_at(sr.problem, sr.placement, b)) {
      std::printf("referee: %s\n", bad->c_str());
      status = 1;
    }
    const auto sym = runtime::arena_at(sr.problem, sr.placement, b);
    const auto per = place::greedy_by_size{}.place(runtime::instantiate(sr.problem, b)).arena;
    std::printf("%8lld %16lld %16lld %8.3f\n", static_cast<long long>(b), static_cast<long long>(sym), static_cast<long long>(per),
                per > 0 ? static_cast<double>(sym) / static_cast<double>(per) : 1.0);
  }
  if (!a.output.empty()) {
    io::buffer_list list;
    list.problem = runtime::instantiate(sr.problem, a.batch);
    for (auto i : sr.allocation) {
      const auto& tag = st.shape.allocations[static_cast<std::size_t>(i)].tag;
      list.ids.push_back(std::to_string(i) + (tag.empty() ? "" : ":" + tag));
    }
    for (auto& id : list.ids)
      for (auto& c : id)
        if (c == ',') c = ';';
    io::write_buffers_csv_file(a.output, list, runtime::instantiate(sr.problem, sr.placement, a.batch));
  }
  return status;
}

}  // namespace memplan::cli
