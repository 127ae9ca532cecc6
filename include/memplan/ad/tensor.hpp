#pragma once
// Shapes, 64-byte aligned float storage and a portable deterministic RNG for memplan::ad.
//
// Storage contract (shared by the eager runner and the planned-arena executor): every tensor and every
// workspace starts at an address that is a multiple of `tensor_alignment` (64 bytes). Kernels read
// their operands through unaligned Eigen maps, so any address works, but Eigen's vectorised loops peel
// scalar iterations until the next packet boundary; fixing every base address modulo 64 makes the
// summation order, and so the bits of every result, independent of where a buffer lives.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <memplan/base/error.hpp>

namespace memplan::ad {

using shape_t = std::vector<std::int64_t>;

inline constexpr std::size_t tensor_alignment = 64;

inline std::int64_t numel(const shape_t& s) {
  std::int64_t n = 1;
  for (auto d : s) {
    if (d < 0) throw error(errc::invalid_argument, "ad: negative dimension in a shape");
    n *= d;
  }
  return n;
}

inline std::int64_t byte_size(const shape_t& s) { return numel(s) * static_cast<std::int64_t>(sizeof(float)); }

inline shape_t contiguous_strides(const shape_t& s) {
  shape_t st(s.size());
  std::int64_t acc = 1;
  for (std::size_t i = s.size(); i > 0; --i) {
    st[i - 1] = acc;
    acc *= s[i - 1];
  }
  return st;
}

inline std::string to_string(const shape_t& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) r.push_back(',');
    r.append(std::to_string(s[i]));
  }
  r.push_back(']');
  return r;
}

inline bool is_aligned(const void* p) noexcept {
  return reinterpret_cast<std::uintptr_t>(p) % tensor_alignment == 0;
}

inline std::size_t aligned_bytes(std::size_t bytes) noexcept {
  return (bytes + tensor_alignment - 1) / tensor_alignment * tensor_alignment;
}

// An owned, 64-byte aligned float array (the eager runner's allocation unit; also handy in tests).
class float_buffer {
 public:
  float_buffer() = default;
  explicit float_buffer(std::int64_t count) : size_(count) {
    if (count < 0) throw error(errc::invalid_argument, "ad: negative buffer size");
    const auto bytes = aligned_bytes(static_cast<std::size_t>(count > 0 ? count : 1) * sizeof(float));
    data_.reset(static_cast<float*>(std::aligned_alloc(tensor_alignment, bytes)));
    if (!data_) throw error(errc::runtime_error, "ad: out of memory allocating " + std::to_string(bytes) + " bytes");
  }
  [[nodiscard]] float* data() noexcept { return data_.get(); }
  [[nodiscard]] const float* data() const noexcept { return data_.get(); }
  [[nodiscard]] std::int64_t size() const noexcept { return size_; }
  [[nodiscard]] std::span<float> span() noexcept { return {data_.get(), static_cast<std::size_t>(size_)}; }
  [[nodiscard]] std::span<const float> span() const noexcept { return {data_.get(), static_cast<std::size_t>(size_)}; }
  void fill(float v) noexcept {
    for (std::int64_t i = 0; i < size_; ++i) data_[i] = v;
  }

 private:
  struct deleter {
    void operator()(float* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<float[], deleter> data_;
  std::int64_t size_ = 0;
};

// A quiet NaN with a recognisable payload: what the runners write into fresh memory to catch reads of
// memory that no kernel wrote ("poison").
inline float poison_value() noexcept {
  const std::uint32_t bits = 0x7fc0dead;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Deterministic, platform-independent generator (splitmix64): the standard library's distributions
// are implementation-defined, so initial weights and data sets are drawn with this instead.
class rng {
 public:
  explicit rng(std::uint64_t seed = 0) : state_(seed) {}
  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // uniform in [0, 1) with 53 random bits
  double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) noexcept { return lo + (hi - lo) * uniform(); }
  // uniform integer in [0, n)
  std::int64_t below(std::int64_t n) noexcept { return static_cast<std::int64_t>(uniform() * static_cast<double>(n)); }
  // standard normal by Box-Muller (one value per call; deterministic)
  double normal() noexcept {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  std::uint64_t state_;
};

}  // namespace memplan::ad
