#pragma once
// Small helpers the memplan::ad tests share (one definition: the tests of this folder build as one
// translation unit).
#include <cstdint>
#include <string>
#include <vector>

#include <memplan/ad/kernel_facts.hpp>
#include <memplan/ad/program_types.hpp>
#include <memplan/ad/tensor.hpp>

#include "../support/same_bits.hpp"

namespace adtest {

// n values uniform in [-1, 1) from the engine's own generator.
inline std::vector<float> random_vec(std::int64_t n, std::uint64_t seed) {
  memplan::ad::rng g(seed);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = static_cast<float>(g.uniform(-1, 1));
  return v;
}

// A node of kernel k with attributes a and the workspace its default implementation declares.
inline memplan::ad::node make(memplan::ad::kernel k, memplan::ad::node_attr a) {
  memplan::ad::node n;
  n.name = std::string(memplan::ad::to_string(k));
  n.kind = k;
  n.workspace_bytes = memplan::ad::workspace_bytes(k, a);
  n.attr = a;
  return n;
}

using memplan::testing::same_bits;

}  // namespace adtest
