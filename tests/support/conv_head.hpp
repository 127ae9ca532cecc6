#pragma once
// The two-op graph the implementation tests vary: x (100 B, input) -> conv -> h (100 B) -> head -> y
// (4 B, output); conv costs 10 with the given workspace and alternatives, head costs 1.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <memplan/core/problem.hpp>
#include <memplan/core/problem_builder.hpp>

namespace memplan::testing {

inline problem conv_head(std::string name, std::int64_t conv_workspace, std::vector<implementation> conv_impls,
                         std::int64_t head_workspace = 0) {
  problem_builder b(std::move(name));
  const auto x = b.add_tensor("x", 100, tensor_kind::input);
  const auto h = b.add_tensor("h", 100, tensor_kind::activation);
  const auto y = b.add_tensor("y", 4, tensor_kind::output);
  b.add_op("conv", {x}, {h}, "conv", op_phase::forward, 10.0, conv_workspace, std::move(conv_impls));
  b.add_op("head", {h}, {y}, "linear", op_phase::forward, 1.0, head_workspace);
  return b.build();
}

}  // namespace memplan::testing
