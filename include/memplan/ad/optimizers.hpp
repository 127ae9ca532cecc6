#pragma once
// Optimizers of ad training steps: the `optimizer` concept, sgd (with heavy-ball momentum) and adam.
// An optimizer emits the update nodes of one step, written in place into the weights and into its
// own optimizer-state tensors.
#include <concepts>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <variant>

#include <memplan/ad/initializer.hpp>
#include <memplan/ad/ops.hpp>
#include <memplan/ad/program_types.hpp>
#include <memplan/ad/step_builder.hpp>
#include <memplan/base/error.hpp>
#include <memplan/base/kinds.hpp>

namespace memplan::ad {

// An optimizer is a small copyable value that emits the update nodes of one training step for every
// (weight, final gradient) pair, in place into the weights and its own optimizer-state tensors.
template <class O>
concept optimizer = std::copyable<O> && requires(const O& o, step_builder& b,
                                                 std::span<const std::pair<std::int32_t, std::int32_t>> wg) {
  { o.emit(b, wg) } -> std::same_as<void>;
  { o.name() } -> std::convertible_to<std::string>;
};

// SGD with (heavy-ball) momentum: v' = momentum*v + g, w' = w - lr*v'. momentum == 0: no state.
struct sgd {
  float lr = 0.01f;
  float momentum = 0.0f;
  [[nodiscard]] std::string name() const { return "sgd"; }
  void emit(step_builder& b, std::span<const std::pair<std::int32_t, std::int32_t>> wg) const {
    if (!(lr >= 0.0f) || !(momentum >= 0.0f && momentum < 1.0f))
      throw error(errc::invalid_argument, "ad::sgd: lr must be >= 0 and momentum in [0, 1)");
    for (auto [w, g] : wg) {
      const auto wi = b.tensor(w);
      const auto n = wi.numel();
      const auto w_next = b.add_tensor(wi.name + ".next", wi.shape, tensor_kind::weight, {}, w);
      if (momentum != 0.0f) {
        const auto v = b.add_tensor(wi.name + ".momentum", wi.shape, tensor_kind::optimizer_state, init::zeros());
        const auto v_next = b.add_tensor(wi.name + ".momentum.next", wi.shape, tensor_kind::optimizer_state, {}, v);
        b.add_node("sgd:" + wi.name, kernel::sgd, sgd_attr{n, lr, momentum}, {w, v, g}, {w_next, v_next}, op_phase::update);
      } else {
        b.add_node("sgd:" + wi.name, kernel::sgd, sgd_attr{n, lr, 0.0f}, {w, g}, {w_next}, op_phase::update);
      }
    }
  }
};

// Adam (Kingma & Ba 2015, Alg. 1). The step count t is an optimizer_state scalar incremented in place
// once per step; every weight's update reads the incremented count for the bias corrections.
struct adam {
  float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  [[nodiscard]] std::string name() const { return "adam"; }
  void emit(step_builder& b, std::span<const std::pair<std::int32_t, std::int32_t>> wg) const {
    if (!(lr >= 0.0f) || !(beta1 >= 0.0f && beta1 < 1.0f) || !(beta2 >= 0.0f && beta2 < 1.0f) || !(eps > 0.0f))
      throw error(errc::invalid_argument, "ad::adam: need lr >= 0, beta1 and beta2 in [0, 1), eps > 0");
    if (wg.empty()) return;
    const auto t = b.add_tensor("adam.step", {1}, tensor_kind::optimizer_state, init::zeros());
    const auto t_next = b.add_tensor("adam.step.next", {1}, tensor_kind::optimizer_state, {}, t);
    b.add_node("adam:step", kernel::step_increment, std::monostate{}, {t}, {t_next}, op_phase::update);
    for (auto [w, g] : wg) {
      const auto wi = b.tensor(w);
      const auto m = b.add_tensor(wi.name + ".adam_m", wi.shape, tensor_kind::optimizer_state, init::zeros());
      const auto v = b.add_tensor(wi.name + ".adam_v", wi.shape, tensor_kind::optimizer_state, init::zeros());
      const auto w_next = b.add_tensor(wi.name + ".next", wi.shape, tensor_kind::weight, {}, w);
      const auto m_next = b.add_tensor(wi.name + ".adam_m.next", wi.shape, tensor_kind::optimizer_state, {}, m);
      const auto v_next = b.add_tensor(wi.name + ".adam_v.next", wi.shape, tensor_kind::optimizer_state, {}, v);
      b.add_node("adam:" + wi.name, kernel::adam, adam_attr{wi.numel(), lr, beta1, beta2, eps}, {w, m, v, g, t_next},
                 {w_next, m_next, v_next}, op_phase::update);
    }
  }
};

}  // namespace memplan::ad
