#pragma once
// Element types of the graph format (docs/format.md, "dtype table"): the bytes of one element, so
// that a tensor given by shape and dtype has bytes = product(shape) * size(dtype). std only.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace memplan::io {

struct dtype_entry {
  std::string_view name;
  std::int64_t bytes;
};

// PyTorch's names (str(torch.float32) without "torch."), which is what the exporter writes.
inline constexpr std::array<dtype_entry, 12> dtype_table{{
    {"float64", 8}, {"float32", 4}, {"float16", 2}, {"bfloat16", 2},
    {"int64", 8},   {"int32", 4},   {"int16", 2},   {"int8", 1},
    {"uint8", 1},   {"bool", 1},    {"complex64", 8}, {"complex128", 16},
}};

// Bytes of one element of `name`, nothing when the name is not in the table.
inline constexpr std::optional<std::int64_t> dtype_size(std::string_view name) noexcept {
  for (const auto& d : dtype_table)
    if (d.name == name) return d.bytes;
  return std::nullopt;
}

// "float64, float32, ..." for messages.
inline std::string dtype_names() {
  std::string s;
  for (const auto& d : dtype_table) {
    if (!s.empty()) s += ", ";
    s += d.name;
  }
  return s;
}

// product(shape) * element_bytes, nothing when it overflows a signed 64-bit integer or a dimension
// is negative.
inline std::optional<std::int64_t> shape_bytes(std::span<const std::int64_t> shape, std::int64_t element_bytes) noexcept {
  std::int64_t n = element_bytes;
  if (n < 0) return std::nullopt;
  for (auto d : shape) {
    if (d < 0) return std::nullopt;
    if (d == 0) n = 0;  // an empty dimension makes the product 0 whatever the others are
  }
  for (auto d : shape) {
    std::int64_t r = 0;
    if (__builtin_mul_overflow(n, d, &r)) return std::nullopt;
    n = r;
  }
  return n;
}

}  // namespace memplan::io
