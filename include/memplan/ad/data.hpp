#pragma once
// Generated classification tasks with deterministic generators (ad::rng), used to prove that training
// through memplan's plans really learns. Each task draws one sample at a time; data_stream turns a task
// into an endless stream of batches written straight into caller memory (the input feed tensors).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <utility>
#include <span>
#include <vector>

#include <memplan/ad/tensor.hpp>
#include <memplan/base/error.hpp>

namespace memplan::ad {

// Two interleaved spirals in the plane (Lang & Witbrock 1988): class c in {0, 1} is the arm
// r = t, angle = turns*2*pi*t + c*pi, t in (0, 1], with Gaussian jitter; coordinates scaled to ~[-2, 2].
struct two_spirals {
  double turns = 1.5;
  double noise = 0.02;
  [[nodiscard]] shape_t sample_shape() const { return {2}; }
  [[nodiscard]] int classes() const { return 2; }
  void sample(rng& g, float* x, float& label) const {
    const int c = static_cast<int>(g.below(2));
    const double t = std::sqrt(0.0025 + 0.9975 * g.uniform());  // even density along the arm's area
    const double a = turns * 6.283185307179586 * t + c * 3.141592653589793;
    x[0] = static_cast<float>(2.0 * (t * std::cos(a) + noise * g.normal()));
    x[1] = static_cast<float>(2.0 * (t * std::sin(a) + noise * g.normal()));
    label = static_cast<float>(c);
  }
};

// 16x16 grey images of one filled square (0), filled disc (1) or plus-shaped cross (2), at a random
// position and size, with Gaussian pixel noise.
struct shapes16 {
  double noise = 0.15;
  [[nodiscard]] shape_t sample_shape() const { return {1, 16, 16}; }
  [[nodiscard]] int classes() const { return 3; }
  void sample(rng& g, float* x, float& label) const {
    const int c = static_cast<int>(g.below(3));
    const auto r = 3 + g.below(4);                // half-size 3..6
    const auto cx = r + g.below(16 - 2 * r), cy = r + g.below(16 - 2 * r);
    for (std::int64_t i = 0; i < 16; ++i)
      for (std::int64_t j = 0; j < 16; ++j) {
        const auto dx = j - cx, dy = i - cy;
        bool on = false;
        if (c == 0) on = std::abs(dx) <= r - 1 && std::abs(dy) <= r - 1;
        else if (c == 1) on = dx * dx + dy * dy <= r * r;
        else on = (std::abs(dx) <= r && std::abs(dy) <= 0) || (std::abs(dy) <= r && std::abs(dx) <= 0);
        x[i * 16 + j] = static_cast<float>((on ? 1.0 : 0.0) + noise * g.normal());
      }
    label = static_cast<float>(c);
  }
};

// Token sequences of `length` ids in [0, vocab): class 1 when some token occurs twice, class 0 when all
// are distinct (balanced). Needs attention: the answer depends on comparing positions with each other.
struct repeated_token {
  std::int64_t length = 8;
  std::int64_t vocab = 16;
  [[nodiscard]] shape_t sample_shape() const { return {length}; }
  [[nodiscard]] int classes() const { return 2; }
  void sample(rng& g, float* x, float& label) const {
    if (vocab < length || length < 2)
      throw error(errc::invalid_argument, "ad::repeated_token: need vocab >= length >= 2");
    std::vector<std::int64_t> tok(static_cast<std::size_t>(vocab));
    std::iota(tok.begin(), tok.end(), 0);
    for (std::int64_t i = 0; i < length; ++i)  // partial Fisher-Yates: `length` distinct tokens
      std::swap(tok[static_cast<std::size_t>(i)], tok[static_cast<std::size_t>(i + g.below(vocab - i))]);
    const int c = static_cast<int>(g.below(2));
    if (c == 1) {
      const auto from = g.below(length);
      auto to = g.below(length - 1);
      if (to >= from) ++to;
      tok[static_cast<std::size_t>(to)] = tok[static_cast<std::size_t>(from)];
    }
    for (std::int64_t i = 0; i < length; ++i) x[i] = static_cast<float>(tok[static_cast<std::size_t>(i)]);
    label = static_cast<float>(c);
  }
};

// An endless deterministic stream of batches from a task: same seed, same batches.
template <class Task>
class data_stream {
 public:
  data_stream(Task task, std::uint64_t seed) : task_(std::move(task)), g_(seed) {}
  // x: batch * numel(sample_shape) floats; labels: batch floats.
  void next(std::span<float> x, std::span<float> labels) {
    const auto per = numel(task_.sample_shape());
    if (static_cast<std::int64_t>(x.size()) != per * static_cast<std::int64_t>(labels.size()))
      throw error(errc::invalid_argument, "ad::data_stream: feed of " + std::to_string(x.size()) + " floats for " +
                                              std::to_string(labels.size()) + " samples of " + std::to_string(per));
    for (std::size_t i = 0; i < labels.size(); ++i) task_.sample(g_, x.data() + static_cast<std::int64_t>(i) * per, labels[i]);
  }
  [[nodiscard]] const Task& task() const noexcept { return task_; }

 private:
  Task task_;
  rng g_;
};

}  // namespace memplan::ad
