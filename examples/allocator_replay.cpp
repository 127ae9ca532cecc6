// Record a program's allocations once, plan them, replay them from one slab (MemoMalloc with memplan):
//
//   1. run the program under a recording_resource   -> an allocation trace (sizes, order, lifetimes, tags)
//   2. plan_trace(trace, greedy_by_size)            -> one offset per allocation in one slab
//   3. run it again under a replaying_resource      -> allocation i is slab + offset[i], O(1), no locks
//   4. a run that differs (another size)            -> detected, the rest of the run goes to new/delete
//
// The "program" is a small MLP forward pass written with std::pmr::vector: every temporary takes its
// memory from the resource it is given, as a framework's tensors would.
#include <cstdio>
#include <memory>
#include <memory_resource>
#include <vector>

#include <memplan/place/greedy_by_size.hpp>
#include <memplan/runtime/replay.hpp>
#include <memplan/runtime/trace.hpp>

namespace {
using vec = std::pmr::vector<float>;

// y = relu(W x + b) with W an n x m matrix of 0.01 (no weights stored: the point is the temporaries).
vec layer(const vec& x, std::size_t n, std::pmr::memory_resource* mem) {
  vec pre(n, 0.0f, mem);  // pre-activation
  for (std::size_t i = 0; i < n; ++i) {
    float s = 0.1f;
    for (float v : x) s += 0.01f * v;
    pre[i] = s - 0.05f * static_cast<float>(i % 7);
  }
  vec out(n, 0.0f, mem);
  for (std::size_t i = 0; i < n; ++i) out[i] = pre[i] > 0 ? pre[i] : 0;
  return out;  // pre is freed here
}

float forward(std::size_t batch, std::pmr::memory_resource* mem) {
  vec x(batch * 64, 1.0f, mem);
  auto h1 = layer(x, batch * 256, mem);
  auto h2 = layer(h1, batch * 256, mem);
  auto h3 = layer(h2, batch * 32, mem);
  float sum = 0;
  for (float v : h3) sum += v;
  return sum;
}
}  // namespace

int main() {
  using namespace memplan::runtime;
  // 1. Record.
  recording_resource rec;
  rec.set_scope("forward");
  const float expected = forward(8, &rec);
  const auto trace = rec.take();
  std::printf("recorded %zu allocations, %lld events, live peak %lld B\n", trace.allocations.size(), static_cast<long long>(trace.events),
              static_cast<long long>(live_peak(trace)));
  for (const auto& a : trace.allocations)
    std::printf("  %6lld B  live over events [%lld, %lld)\n", static_cast<long long>(a.size), static_cast<long long>(a.begin), static_cast<long long>(a.end));

  // 2. Plan: one offset per allocation; the slab is the placement's arena.
  auto plan = std::make_shared<const replay_plan>(plan_trace(trace, memplan::place::greedy_by_size{}));
  long long no_reuse = 0;
  for (const auto& a : trace.allocations) no_reuse += static_cast<long long>(a.size);
  std::printf("plan: slab %lld B (%s), %d planned allocations; without reuse they would take %lld B (%.0f %% more)\n",
              static_cast<long long>(plan->arena), plan->placer.c_str(), plan->planned, no_reuse,
              100.0 * (static_cast<double>(no_reuse) / static_cast<double>(plan->arena) - 1.0));

  // 3. Replay: the same program, every allocation from the slab.
  replaying_resource<> mem(plan);
  for (int run = 0; run < 3; ++run) {
    mem.begin_run();
    const float got = forward(8, &mem);
    std::printf("run %d: result %s, hits %lld, misses %lld (every allocation is slab + offset: no call to new/delete)\n", run,
                got == expected ? "identical" : "DIFFERENT", static_cast<long long>(mem.stats().hits), static_cast<long long>(mem.stats().misses));
  }

  // 4. Another batch size: the first request has another size -> the run diverges, new/delete serves it.
  mem.begin_run();
  const float other = forward(16, &mem);
  std::printf("batch 16: result %g, divergent runs %lld (%s), misses %lld\n", static_cast<double>(other),
              static_cast<long long>(mem.stats().divergent_runs), mem.stats().reason.c_str(), static_cast<long long>(mem.stats().misses));
  return mem.stats().misses > 0 && mem.stats().hits == 3 * plan->planned ? 0 : 1;
}
