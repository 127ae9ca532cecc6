#pragma once
// Small hand-made offload plans for the executor tests (host: test_executor.cpp; CUDA: test_cuda.cpp).
#include <cstdint>
#include <vector>

#include <doctest/doctest.h>

#include <memplan/core/pipeline.hpp>
#include <memplan/core/verify.hpp>
#include <memplan/graph/dataflow_graph.hpp>
#include <memplan/schedule/given.hpp>

#include "../support/stack_placer.hpp"

namespace memplan::testing {

// f: x -> a, h: x -> b, k: (a, b) -> y, `bytes` each.
inline problem three_ops(std::int64_t bytes = 16) {
  graph::dataflow_graph g("three_ops");
  auto x = g.add_tensor("x", bytes, tensor_kind::input);
  auto a = g.add_tensor("a", bytes);
  auto b = g.add_tensor("b", bytes);
  auto y = g.add_tensor("y", bytes, tensor_kind::output);
  g.add_op("f", {x}, {a});
  g.add_op("h", {x}, {b});
  g.add_op("k", {a, b}, {y});
  return make_problem(g);
}

// three_ops' given order with a (tensor 1) offloaded after op `after` (f or h) and prefetched before
// k, back at its offset; verified.
inline memory_plan offloading_a(const problem& p, op_id after) {
  auto mp = plan(p, schedule::given{} | stack_placer{});
  std::vector<step> steps;
  for (const auto& s : mp.steps) {
    if (s.kind == step_kind::compute && s.id == 2) steps.push_back({step_kind::prefetch, 1});
    steps.push_back(s);
    if (s.kind == step_kind::compute && s.id == after) steps.push_back({step_kind::offload, 1});
  }
  mp.steps = steps;
  relink(p, mp, /*inherit_offsets=*/true);
  mp.stats.transfer_bytes = 2 * p.storage_bytes(p.storage_of(1));
  REQUIRE(verify(p, mp).ok);
  return mp;
}

}  // namespace memplan::testing
