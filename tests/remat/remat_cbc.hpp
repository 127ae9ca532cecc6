#pragma once
// What the CBC-backed remat tests share (test_checkmate_cbc.cpp, test_monet_cbc.cpp: one unity TU).
#include <cstdint>

#include <memplan/core/pipeline.hpp>
#include <memplan/solver/cbc.hpp>

namespace memplan::testing {

// A context that solves with CBC towards the memory target `target`.
inline plan_context with_cbc(std::int64_t target) {
  plan_context c;
  c.memory_target = target;
  c.solver = solver::cbc{};
  return c;
}

}  // namespace memplan::testing
