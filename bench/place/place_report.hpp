#pragma once
// Hook for the model-graph harness: one table row per buffer_problem (e.g. a graph + schedule turned
// into buffers by core). Columns: label, buffers, lower bound (max resident bytes, aligned), then for
// greedy_by_size, best_fit and the default placer the fragmentation (arena - bound) / arena in %, the
// default placer's time, and the fragmentation of the PyTorch caching allocator model (OLLA Fig. 8).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>

#include <memplan/place/placers.hpp>

namespace memplan::bench {

inline double fragmentation_percent(std::int64_t arena, std::int64_t bound) {
  return arena > 0 ? 100.0 * static_cast<double>(arena - bound) / static_cast<double>(arena) : 0.0;
}

inline void place_header(std::ostream& out) {
  out << "| instance | buffers | lower bound (B) | greedy_by_size frag % | best_fit frag % | default frag % | default ms | "
         "default proven | caching allocator frag % |\n"
         "|---|---:|---:|---:|---:|---:|---:|---|---:|\n";
}

inline void place_row(const place::buffer_problem& p, const std::string& label, std::ostream& out,
                      double default_budget_s = 0.05) {
  using clock = std::chrono::steady_clock;
  const auto bound = place::arena_lower_bound(p);
  const auto gs = place::greedy_by_size{}.place(p);
  const auto bf = place::best_fit{}.place(p);
  const auto t0 = clock::now();
  const auto d = place::default_placer{.time_limit_s = default_budget_s}.place(p);
  const double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  std::string caching = "n/a (pins or alignment > 512)";
  try {
    const auto c = place::online::caching_allocator{}.simulate(p);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", 100.0 * c.fragmentation());
    caching = buf;
  } catch (const error&) {
  }
  char line[512];
  std::snprintf(line, sizeof line, "| %s | %zu | %lld | %.2f | %.2f | %.2f | %.1f | %s | %s |\n", label.c_str(),
                p.buffers.size(), static_cast<long long>(bound), fragmentation_percent(gs.arena, bound),
                fragmentation_percent(bf.arena, bound), fragmentation_percent(d.arena, bound), ms,
                d.optimal ? "yes" : "no", caching.c_str());
  out << line;
}

}  // namespace memplan::bench
