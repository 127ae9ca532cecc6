#pragma once
// The vocabulary shared by every layer: tensor kinds and op phases (docs/format.md), the kinds of
// plan steps, and the kinds of pipeline stages.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>
#include <string_view>

namespace memplan {

enum class tensor_kind : std::uint8_t { input, weight, activation, gradient, optimizer_state, output, control };
enum class op_phase : std::uint8_t { forward, backward, update, other };

inline constexpr std::string_view to_string(tensor_kind k) noexcept {
  switch (k) {
    case tensor_kind::input: return "input";
    case tensor_kind::weight: return "weight";
    case tensor_kind::activation: return "activation";
    case tensor_kind::gradient: return "gradient";
    case tensor_kind::optimizer_state: return "optimizer_state";
    case tensor_kind::output: return "output";
    case tensor_kind::control: return "control";
  }
  return "activation";
}

inline constexpr std::string_view to_string(op_phase p) noexcept {
  switch (p) {
    case op_phase::forward: return "forward";
    case op_phase::backward: return "backward";
    case op_phase::update: return "update";
    case op_phase::other: return "other";
  }
  return "other";
}

inline constexpr std::optional<tensor_kind> parse_tensor_kind(std::string_view s) noexcept {
  for (auto k : {tensor_kind::input, tensor_kind::weight, tensor_kind::activation, tensor_kind::gradient,
                 tensor_kind::optimizer_state, tensor_kind::output, tensor_kind::control})
    if (to_string(k) == s) return k;
  return std::nullopt;
}

inline constexpr std::optional<op_phase> parse_op_phase(std::string_view s) noexcept {
  for (auto p : {op_phase::forward, op_phase::backward, op_phase::update, op_phase::other})
    if (to_string(p) == s) return p;
  return std::nullopt;
}

// Kinds that may exist before the first op (no producer) and, by default, stay resident to the end.
inline constexpr bool may_be_resident(tensor_kind k) noexcept {
  return k == tensor_kind::input || k == tensor_kind::weight || k == tensor_kind::optimizer_state;
}

// One way to run an op (MONeT §3: workspace vs time, in-place variants): the op's alternatives to its
// own cost and workspace. With `inputs` (tensor names) it is a *variant* that reads those tensors instead
// of the op's inputs (MONeT's D^l_k, eq. 5 and 8: output-activated backward); problem keeps variants
// apart from the op's implementations (problem::variants, core/variants.hpp).
struct implementation {
  std::string name;
  double cost = 0.0;
  std::int64_t workspace = 0;
  std::vector<std::string> inputs{};  // empty: the op's own inputs
  friend bool operator==(const implementation&, const implementation&) = default;
};

// ---- plan steps --------------------------------------------------------------------------------
// compute/recompute run an op; offload/prefetch move a storage to the host and back; free ends a
// storage's materialization on the device.
enum class step_kind : std::uint8_t { compute, recompute, offload, prefetch, free };

inline constexpr std::string_view to_string(step_kind k) noexcept {
  switch (k) {
    case step_kind::compute: return "compute";
    case step_kind::recompute: return "recompute";
    case step_kind::offload: return "offload";
    case step_kind::prefetch: return "prefetch";
    case step_kind::free: return "free";
  }
  return "compute";
}

inline constexpr bool runs_op(step_kind k) noexcept { return k == step_kind::compute || k == step_kind::recompute; }

// ---- pipeline stages, in the order a pipeline runs them ---------------------------------------------
enum class stage_kind : std::uint8_t { scheduler, checkpointer, offloader, placer };

inline constexpr std::string_view to_string(stage_kind k) noexcept {
  switch (k) {
    case stage_kind::scheduler: return "scheduler";
    case stage_kind::checkpointer: return "checkpointer";
    case stage_kind::offloader: return "offloader";
    case stage_kind::placer: return "placer";
  }
  return "stage";
}

}  // namespace memplan
