// GPU test (label gpu): the executor on a CUDA arena reproduces the host arena bit for bit.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include <memplan/core/pipeline.hpp>
#include <memplan/graph/dataflow_graph.hpp>
#include <memplan/runtime/cuda.hpp>
#include <memplan/runtime/executor.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/runtime/replay.hpp>
#include <memplan/runtime/trace.hpp>
#include <memplan/schedule/given.hpp>

#include "../support/stack_placer.hpp"
#include "offload_plans.hpp"

using namespace memplan;

TEST_CASE("cuda backend: arena round trip, poisoning, offload through host staging") {
  if (runtime::cuda_device_count() == 0) {
    MESSAGE("no CUDA device: skipped");
    return;
  }
  runtime::arena<runtime::cuda_backend> ar(1 << 20);
  std::vector<float> h(1024);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>(i) * 0.5f;
  ar.backend().from_host(ar.at(4096, 4096), h.data(), 4096);
  std::vector<float> back(1024);
  ar.backend().to_host(back.data(), ar.at(4096, 4096), 4096);
  CHECK(std::memcmp(h.data(), back.data(), 4096) == 0);
  ar.poison(4096, 4096);
  ar.backend().to_host(back.data(), ar.at(4096, 4096), 4096);
  CHECK(std::isnan(back[7]));

  // A plan with a copy kernel on device memory: y = x (cudaMemcpy device to device).
  graph::dataflow_graph g("cuda-copy");
  auto x = g.add_tensor("x", 4096, tensor_kind::input);
  auto a = g.add_tensor("a", 4096);
  auto y = g.add_tensor("y", 4096, tensor_kind::output);
  g.add_op("copy1", {x}, {a});
  g.add_op("copy2", {a}, {y});
  const auto p = make_problem(g);
  const auto mp = plan(p, schedule::given{} | testing::stack_placer{}, {.alignment = 256});
  runtime::executor<runtime::cuda_backend> ex(p, mp, {.poison = true});
  ex.memory().backend().from_host(ex.tensor_data(0), h.data(), 4096);
  auto rs = ex.run([](op_id, std::span<std::byte* const> in, std::span<std::byte* const> out, std::byte*) {
    REQUIRE(cudaMemcpy(out[0], in[0], 4096, cudaMemcpyDeviceToDevice) == cudaSuccess);
  });
  CHECK(rs.high_water == mp.arena);
  ex.memory().backend().to_host(back.data(), ex.tensor_data(2), 4096);
  CHECK(std::memcmp(h.data(), back.data(), 4096) == 0);
}

TEST_CASE("cuda backend: a replaying resource serves a recorded trace from one device slab") {
  if (runtime::cuda_device_count() == 0) {
    MESSAGE("no CUDA device: skipped");
    return;
  }
  runtime::recording_resource rec;
  void* a = rec.allocate(4096, 256);
  void* b = rec.allocate(8192, 256);
  rec.deallocate(a, 4096, 256);
  void* c = rec.allocate(4096, 256);
  rec.deallocate(b, 8192, 256);
  rec.deallocate(c, 4096, 256);
  auto plan = std::make_shared<const runtime::replay_plan>(runtime::plan_trace(rec.take(), place::greedy_by_size{}));
  runtime::replaying_resource<runtime::cuda_backend> mem(plan);
  for (int run = 0; run < 2; ++run) {
    auto* da = static_cast<std::byte*>(mem.allocate(4096, 256));
    auto* db = static_cast<std::byte*>(mem.allocate(8192, 256));
    CHECK(mem.owns(da));
    CHECK(mem.owns(db));
    std::vector<float> h(1024, 2.5f), back(1024);
    runtime::cuda_backend{}.from_host(da, h.data(), 4096);
    runtime::cuda_backend{}.to_host(back.data(), da, 4096);
    CHECK(back == h);
    mem.deallocate(da, 4096, 256);
    auto* dc = static_cast<std::byte*>(mem.allocate(4096, 256));
    mem.deallocate(db, 8192, 256);
    mem.deallocate(dc, 4096, 256);
  }
  CHECK(mem.stats().hits == 6);
  CHECK(mem.stats().misses == 0);
}

TEST_CASE("cuda backend: offload and prefetch on the copy stream wait for the kernels submitted before them") {
  if (runtime::cuda_device_count() == 0) {
    MESSAGE("no CUDA device: skipped");
    return;
  }
  // f writes a, h writes b, k reads a and b. a is offloaded right after f and prefetched before k.
  // The kernels are cudaMemsetAsync / cudaMemcpyAsync on the legacy default stream: they return before
  // they run, so an offload that did not wait for f's work would copy the arena's NaN poison instead.
  constexpr std::int64_t bytes = std::int64_t{64} << 20;
  const auto p = testing::three_ops(bytes);
  const auto mp = testing::offloading_a(p, 0);
  const auto n = static_cast<std::size_t>(bytes);
  for (const bool thread : {true, false}) {
    CAPTURE(thread);
    runtime::executor<runtime::cuda_backend> ex(p, mp, {.poison = true, .copy_thread = thread});
    for (int step = 0; step < 3; ++step) {
      auto rs = ex.run([&](op_id o, std::span<std::byte* const> in, std::span<std::byte* const> out, std::byte*) {
        if (o == 0) REQUIRE(cudaMemsetAsync(out[0], 0x11, n, cudaStreamLegacy) == cudaSuccess);
        if (o == 1) REQUIRE(cudaMemsetAsync(out[0], 0x22, n, cudaStreamLegacy) == cudaSuccess);
        if (o == 2) REQUIRE(cudaMemcpyAsync(out[0], in[0], n, cudaMemcpyDeviceToDevice, cudaStreamLegacy) == cudaSuccess);
      });
      CHECK(rs.transfer_bytes == 2 * bytes);
      std::vector<unsigned char> back(n);
      ex.memory().backend().to_host(back.data(), ex.tensor_data(3), n);
      CHECK(std::count(back.begin(), back.end(), static_cast<unsigned char>(0x11)) == bytes);
    }
  }
}
