#pragma once
// Random variants for the variants tests (core/variants.hpp, core/plan_variants.hpp): on about half
// the backward ops of a graph, one input swapped for a tensor computed earlier in the given order (or
// resident), at the op's cost or a little more; in-place bases are kept.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <memplan/core/problem.hpp>
#include <memplan/core/problem_builder.hpp>

namespace memplan::testing {

inline problem with_random_variants(const problem& base, std::uint64_t seed) {
  std::mt19937_64 rng(seed * 7919);
  auto pick = [&](std::int64_t n) { return std::uniform_int_distribution<std::int64_t>(0, n - 1)(rng); };
  return with_ops(base, [&](const problem& g, op_id o, op_fields& f) {
    if (g.phase(o) != op_phase::backward || g.inputs(o).empty() || pick(2) == 0) return;
    std::vector<tensor_id> earlier;
    for (tensor_id t = 0; t < g.num_tensors(); ++t)
      if ((g.producer(t) == no_id || g.producer(t) < o) && g.bytes(t) > 0) earlier.push_back(t);
    if (earlier.empty()) return;
    std::vector<std::string> ins;
    for (auto t : g.inputs(o)) ins.push_back(g.tensor_name(t));
    auto& slot = ins[static_cast<std::size_t>(pick(static_cast<std::int64_t>(ins.size())))];
    bool base_of_output = false;
    for (auto t : g.outputs(o))
      if (g.inplace_of(t) != no_id && g.tensor_name(g.inplace_of(t)) == slot) base_of_output = true;
    if (base_of_output) return;
    slot = g.tensor_name(earlier[static_cast<std::size_t>(pick(static_cast<std::int64_t>(earlier.size())))]);
    f.impls.push_back(implementation{"v", pick(3) == 0 ? f.cost * 1.5 + 1 : f.cost, f.workspace, ins});
  });
}

}  // namespace memplan::testing
