#pragma once
// How a resident tensor (input, weight, optimizer state) of an ad::program gets its first value:
// the initializer record, the usual schemes (init::*) and fill_initial, the one routine every runner
// uses to write them.
#include <cmath>
#include <cstdint>
#include <span>

#include <memplan/ad/tensor.hpp>

namespace memplan::ad {

// How a resident tensor (input, weight, optimizer state) gets its first value.
struct initializer {
  enum class method : std::uint8_t { none, zeros, constant, uniform, normal };
  method how = method::none;
  double a = 0.0, b = 0.0;  // constant: a; uniform: [a, b); normal: mean a, std b
  std::uint64_t seed = 0;
};

namespace init {
inline initializer zeros() { return {initializer::method::zeros, 0, 0, 0}; }
inline initializer constant(double v) { return {initializer::method::constant, v, 0, 0}; }
inline initializer uniform(double lo, double hi, std::uint64_t seed = 0) { return {initializer::method::uniform, lo, hi, seed}; }
inline initializer normal(double mean, double stddev, std::uint64_t seed = 0) {
  return {initializer::method::normal, mean, stddev, seed};
}
// He et al. 2015 (ReLU nets): N(0, 2/fan_in).
inline initializer he_normal(std::int64_t fan_in, std::uint64_t seed = 0) {
  return normal(0.0, std::sqrt(2.0 / static_cast<double>(fan_in > 0 ? fan_in : 1)), seed);
}
// Glorot & Bengio 2010: U(-sqrt(6/(in+out)), +sqrt(6/(in+out))).
inline initializer glorot_uniform(std::int64_t fan_in, std::int64_t fan_out, std::uint64_t seed = 0) {
  const double r = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out > 0 ? fan_in + fan_out : 1));
  return uniform(-r, r, seed);
}
}  // namespace init

inline void fill_initial(const initializer& in, std::span<float> out) {
  rng g(in.seed);
  for (auto& v : out) {
    switch (in.how) {
      case initializer::method::none:
      case initializer::method::zeros: v = 0.0f; break;
      case initializer::method::constant: v = static_cast<float>(in.a); break;
      case initializer::method::uniform: v = static_cast<float>(g.uniform(in.a, in.b)); break;
      case initializer::method::normal: v = static_cast<float>(in.a + in.b * g.normal()); break;
    }
  }
}

}  // namespace memplan::ad
