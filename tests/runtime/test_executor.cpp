#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include <memplan/core/pipeline.hpp>
#include <memplan/offload/default_offloader.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/runtime/executor.hpp>
#include <memplan/schedule/given.hpp>

#include "../support/random_dag.hpp"
#include "../support/stack_placer.hpp"
#include "offload_plans.hpp"
#include "../support/sanitizer_scale.hpp"

using namespace memplan;
using testing::offloading_a;
using testing::three_ops;

namespace {
// A deterministic float kernel: each output element = f(op, element index, all inputs' elements).
// It reads every input fully and writes every output fully, like a real kernel.
struct mixing_kernel {
  const problem* p;
  void operator()(op_id o, std::span<std::byte* const> in, std::span<std::byte* const> out, std::byte* ws) const {
    float acc = static_cast<float>(o) * 0.5f + 1.0f;
    for (std::size_t k = 0; k < in.size(); ++k) {
      if (!in[k]) continue;
      const auto n = p->bytes(p->inputs(o)[k]) / 4;
      for (std::int64_t i = 0; i < n; ++i) {
        float v;
        std::memcpy(&v, in[k] + 4 * i, 4);
        acc = acc * 0.75f + v * 0.125f;
      }
    }
    if (ws) {  // use the workspace: write then read it back
      const auto n = p->workspace(o) / 4;
      for (std::int64_t i = 0; i < n; ++i) std::memcpy(ws + 4 * i, &acc, 4);
      for (std::int64_t i = 0; i < n; ++i) {
        float v;
        std::memcpy(&v, ws + 4 * i, 4);
        acc += v * 1e-3f;
      }
    }
    for (std::size_t k = 0; k < out.size(); ++k) {
      if (!out[k]) continue;
      const auto n = p->bytes(p->outputs(o)[k]) / 4;
      for (std::int64_t i = 0; i < n; ++i) {
        const float v = acc + static_cast<float>(i) * 0.01f + static_cast<float>(k);
        std::memcpy(out[k] + 4 * i, &v, 4);
      }
    }
  }
};

// Graphs whose sizes are multiples of 4 so every tensor holds floats.
graph::dataflow_graph float_dag(std::uint64_t seed) {
  auto g0 = testing::random_dag(seed, {.ops = 25, .max_bytes = 16});
  graph::dataflow_graph g(g0.name());
  for (auto t : g0.tensors())
    g.add_tensor(*g0.tensor_name(t), 4 * g0.tensor_bytes(t), g0.tensor_kind_of(t));
  for (auto t : g0.tensors())
    if (auto b = g0.inplace_of(t)) g.set_inplace_of(t, *b);
  for (auto o : g0.ops()) {
    auto in = g0.inputs(o);
    auto out = g0.outputs(o);
    graph::op_attributes a{g0.op_type(o), g0.op_phase_of(o), g0.op_cost(o), 4 * g0.op_workspace(o)};
    g.add_op(*g0.op_name(o), {in.begin(), in.end()}, {out.begin(), out.end()}, a);
  }
  return g;
}

void fill_resident(const problem& p, const std::function<std::byte*(tensor_id)>& at) {
  for (storage_id s = 0; s < p.num_storages(); ++s) {
    if (!p.preexisting(s) || p.storage_bytes(s) == 0) continue;
    auto* d = at(p.storage_root(s));
    for (std::int64_t i = 0; i < p.storage_bytes(s) / 4; ++i) {
      const float v = static_cast<float>(s) + 0.001f * static_cast<float>(i);
      std::memcpy(d + 4 * i, &v, 4);
    }
  }
}

// Bytes of every storage that survives the run (resident + outputs), for bitwise comparison.
std::vector<std::byte> survivors(const problem& p, const std::function<std::byte*(tensor_id)>& at) {
  std::vector<std::byte> r;
  for (storage_id s = 0; s < p.num_storages(); ++s)
    if ((p.resident(s) || p.live_to_end(s)) && p.storage_bytes(s) > 0) {
      auto* d = at(p.storage_root(s));
      r.insert(r.end(), d, d + p.storage_bytes(s));
    }
  return r;
}

}  // namespace

TEST_CASE("executor: a planned run reproduces the eager run bit for bit, and touches exactly the arena") {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    const auto g = float_dag(seed);
    const auto p = make_problem(g);
    const auto mp = plan(p, schedule::given{} | testing::stack_placer{}, {.alignment = 16});
    runtime::eager_executor eager(p);
    fill_resident(p, [&](tensor_id t) { return eager.tensor_data(t); });
    runtime::executor ex(p, mp, {.poison = true});
    fill_resident(p, [&](tensor_id t) { return ex.tensor_data(t); });
    for (int step = 0; step < 3; ++step) {
      eager.run(mixing_kernel{&p});
      auto rs = ex.run(mixing_kernel{&p});
      CHECK(rs.high_water == mp.arena);
    }
    const auto a = survivors(p, [&](tensor_id t) { return eager.tensor_data(t); });
    const auto b = survivors(p, [&](tensor_id t) { return ex.tensor_data(t); });
    REQUIRE(a.size() == b.size());
    CHECK(std::memcmp(a.data(), b.data(), a.size()) == 0);
    CHECK(eager.peak_bytes() == mp.stats.given_peak);  // the eager allocations follow the memory rule exactly
  }
}

TEST_CASE("executor: a temporary problem is refused at compile time, an lvalue one is taken") {
  // The executors keep a pointer to the problem, so their constructors from `const problem&&` are
  // deleted: a temporary (or moved-from) problem does not compile, with every argument list.
  using ex = runtime::executor<>;
  static_assert(!std::is_constructible_v<ex, problem&&, memory_plan>);
  static_assert(!std::is_constructible_v<ex, problem, memory_plan, runtime::executor_options>);
  static_assert(!std::is_constructible_v<ex, const problem&&, memory_plan, runtime::executor_options, runtime::host_backend>);
  static_assert(std::is_constructible_v<ex, const problem&, memory_plan>);
  static_assert(std::is_constructible_v<ex, problem&, memory_plan, runtime::executor_options, runtime::host_backend>);
  static_assert(!std::is_constructible_v<runtime::eager_executor, problem&&>);
  static_assert(std::is_constructible_v<runtime::eager_executor, const problem&>);
}

TEST_CASE("executor: an overlapping plan is refused by verify and, forced, corrupts the numbers under poisoning") {
  const auto p = three_ops(64);
  auto good = plan(p, schedule::given{} | testing::stack_placer{});
  auto bad = good;
  bad.mats[static_cast<std::size_t>(first_mat(bad, p.storage_of(2)))].offset =
      good.mats[static_cast<std::size_t>(first_mat(good, p.storage_of(1)))].offset;  // b written over a while a is still needed
  CHECK_FALSE(verify(p, bad).ok);
  CHECK_THROWS_AS(runtime::executor<>(p, bad), memplan::error);

  runtime::executor ok_ex(p, good, {.poison = true});
  fill_resident(p, [&](tensor_id t) { return ok_ex.tensor_data(t); });
  ok_ex.run(mixing_kernel{&p});
  runtime::executor bad_ex(p, bad, {.poison = true, .verify_plan = false});
  fill_resident(p, [&](tensor_id t) { return bad_ex.tensor_data(t); });
  bad_ex.run(mixing_kernel{&p});
  const auto ra = survivors(p, [&](tensor_id t) { return ok_ex.tensor_data(t); });
  const auto rb = survivors(p, [&](tensor_id t) { return bad_ex.tensor_data(t); });
  CHECK(std::memcmp(ra.data(), rb.data(), ra.size()) != 0);
}

TEST_CASE("executor: offload/prefetch copy through host staging, freed memory is poisoned") {
  const auto p = three_ops();
  const auto mp = offloading_a(p, 0);  // offload a after f, prefetch before k
  for (const bool thread : {true, false}) {
    CAPTURE(thread);
    runtime::eager_executor eager(p);
    fill_resident(p, [&](tensor_id t) { return eager.tensor_data(t); });
    eager.run(mixing_kernel{&p});
    runtime::executor ex(p, mp, {.poison = true, .copy_thread = thread});
    fill_resident(p, [&](tensor_id t) { return ex.tensor_data(t); });
    auto rs = ex.run(mixing_kernel{&p});
    CHECK(rs.transfer_bytes == 32);
    const auto ra = survivors(p, [&](tensor_id t) { return eager.tensor_data(t); });
    const auto rb = survivors(p, [&](tensor_id t) { return ex.tensor_data(t); });
    CHECK(std::memcmp(ra.data(), rb.data(), ra.size()) == 0);
    // b is freed after k: its bytes are the NaN poison now
    float v;
    std::memcpy(&v, ex.memory().data() + first_offset(p, mp, 2), 4);
    CHECK(std::isnan(v));
  }
}

TEST_CASE("copy_engine: jobs run in submission order on one thread, and wait rethrows a job's exception") {
  runtime::copy_engine e;
  std::vector<int> order;  // written by the copy thread only, read after drain()
  std::thread::id worker;
  runtime::copy_engine::ticket last = 0;
  for (int i = 0; i < 50; ++i)
    last = e.submit([&, i] {
      order.push_back(i);
      worker = std::this_thread::get_id();
    });
  CHECK(last == 50);
  e.wait(last);
  CHECK(e.completed() == 50);
  REQUIRE(order.size() == 50);
  for (int i = 0; i < 50; ++i) CHECK(order[static_cast<std::size_t>(i)] == i);
  CHECK(worker != std::this_thread::get_id());
  // A failing copy: wait() rethrows it, the copies queued after it are skipped, the engine goes on.
  bool ran_after = false;
  e.submit([] { throw std::runtime_error("copy failed"); });
  const auto after = e.submit([&] { ran_after = true; });
  CHECK_THROWS_WITH_AS(e.wait(after), "copy failed", std::runtime_error);
  CHECK_FALSE(ran_after);
  bool ran_next = false;
  e.wait(e.submit([&] { ran_next = true; }));
  CHECK(ran_next);
}

namespace {
// Shared between the compute thread (the kernel) and the copy thread (the backend).
struct overlap_flags {
  std::atomic<bool> copy_started{false}, kernel_done{false};
  bool kernel_saw_copy_in_flight = false, copy_saw_kernel_finish = false;
};
bool wait_flag(const std::atomic<bool>& f) {  // bounded: a failure must not hang the test
  for (int i = 0; i < 10000 && !f.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return f.load();
}
// A host backend whose offload copy holds on until the kernel running beside it has finished.
struct watching_backend : runtime::host_backend {
  overlap_flags* f = nullptr;
  void to_host(void* dst, const std::byte* src, std::size_t n) const {
    f->copy_started = true;
    f->copy_saw_kernel_finish = wait_flag(f->kernel_done);
    std::memcpy(dst, src, n);
  }
};
}  // namespace

TEST_CASE("executor: with the copy thread, an offload is in flight while the next op computes") {
  // f: x -> a, h: x -> b, k: (a, b) -> y; a is offloaded once f has written it and released after h:
  // its copy runs beside h.
  const auto p = three_ops();
  const auto mp = offloading_a(p, 1);
  overlap_flags flags;
  watching_backend backend;
  backend.f = &flags;
  runtime::executor<watching_backend> ex(p, mp, {.poison = true}, backend);
  fill_resident(p, [&](tensor_id t) { return ex.tensor_data(t); });
  const mixing_kernel mix{&p};
  const auto rs = ex.run([&](op_id o, std::span<std::byte* const> in, std::span<std::byte* const> out, std::byte* ws) {
    if (o == 1) flags.kernel_saw_copy_in_flight = wait_flag(flags.copy_started);
    mix(o, in, out, ws);
    if (o == 1) flags.kernel_done = true;
  });
  CHECK(flags.kernel_saw_copy_in_flight);
  CHECK(flags.copy_saw_kernel_finish);
  CHECK(rs.transfer_bytes == 32);
  // The same numbers as an eager run.
  runtime::eager_executor eager(p);
  fill_resident(p, [&](tensor_id t) { return eager.tensor_data(t); });
  eager.run(mixing_kernel{&p});
  const auto ra = survivors(p, [&](tensor_id t) { return eager.tensor_data(t); });
  const auto rb = survivors(p, [&](tensor_id t) { return ex.tensor_data(t); });
  CHECK(std::memcmp(ra.data(), rb.data(), ra.size()) == 0);
}

TEST_CASE("executor: timed offload plans on random DAGs run bitwise equal to eager, copies on the copy thread or inline") {
  int plans = 0, moving = 0;
  // Under the sanitizer every other seed.
  for (std::uint64_t seed = 0; seed < 40; seed += memplan::testing::sanitizer_stride(2)) {
    const auto g = float_dag(seed);
    const auto p = make_problem(g);
    plan_context ctx;
    ctx.alignment = 16;
    ctx.timing.bandwidth = 8.0;  // bytes per cost unit: copies last about as long as ops
    const auto a0 = plan(p, schedule::given{} | place::default_placer{}, ctx).arena;
    for (const auto frac : {0.9, 0.75}) {
      CAPTURE(seed);
      CAPTURE(frac);
      ctx.budget = static_cast<std::int64_t>(static_cast<double>(a0) * frac);
      memory_plan mp;
      try {
        mp = plan(p, schedule::given{} | offload::default_offloader{} | place::default_placer{}, ctx);
      } catch (const error& e) {
        CHECK(e.code() == errc::infeasible);
        continue;
      }
      REQUIRE(mp.timed);
      ++plans;
      moving += mp.stats.transfer_bytes > 0;
      runtime::eager_executor eager(p);
      fill_resident(p, [&](tensor_id t) { return eager.tensor_data(t); });
      eager.run(mixing_kernel{&p});
      eager.run(mixing_kernel{&p});
      const auto ra = survivors(p, [&](tensor_id t) { return eager.tensor_data(t); });
      for (const bool thread : {true, false}) {
        CAPTURE(thread);
        runtime::executor ex(p, mp, {.poison = true, .copy_thread = thread});
        fill_resident(p, [&](tensor_id t) { return ex.tensor_data(t); });
        ex.run(mixing_kernel{&p});
        const auto rs = ex.run(mixing_kernel{&p});  // twice: the second run starts from the first's state
        CHECK(rs.transfer_bytes == mp.stats.transfer_bytes);
        CHECK(rs.high_water <= mp.arena);
        const auto rb = survivors(p, [&](tensor_id t) { return ex.tensor_data(t); });
        CHECK(std::memcmp(ra.data(), rb.data(), ra.size()) == 0);
      }
    }
  }
  MESSAGE(plans << " offload plans, " << moving << " of them moving bytes");
  CHECK(moving >= memplan::testing::full_or_sanitized(10, 5));
}

TEST_CASE("arena: bounds are checked and poison is NaN") {
  runtime::arena<> ar(100);
  CHECK_THROWS_AS((void)ar.at(90, 20), memplan::error);
  ar.poison(2, 30);
  float v;
  std::memcpy(&v, ar.data() + 4, 4);
  CHECK(std::isnan(v));
  CHECK_THROWS_AS(runtime::arena<>(-1), memplan::error);
}
