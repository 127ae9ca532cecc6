#pragma once
// Strongly typed dense ids. An op_id, a tensor_id and a storage_id are each an index into the
// problem's arrays (so they convert to and from std::int32_t without ceremony: `op_id o = 0`,
// `v[o]`, `o + 1`), but one kind never turns into another implicitly: passing a tensor_id where an
// op_id is expected needs two user-defined conversions and does not compile. Converting on purpose
// is spelled out: `static_cast<op_id>(t)`.
#include <cstddef>
#include <cstdint>
#include <functional>

namespace memplan {

template <class Tag>
class basic_id {
 public:
  using value_type = std::int32_t;
  constexpr basic_id() noexcept = default;
  constexpr basic_id(value_type v) noexcept : v_(v) {}                    // NOLINT: implicit from an index
  constexpr operator value_type() const noexcept { return v_; }          // NOLINT: implicit to an index
  [[nodiscard]] constexpr value_type value() const noexcept { return v_; }
  constexpr basic_id& operator++() noexcept { ++v_; return *this; }
  constexpr basic_id operator++(int) noexcept { basic_id c = *this; ++v_; return c; }
  constexpr basic_id& operator--() noexcept { --v_; return *this; }
  constexpr basic_id operator--(int) noexcept { basic_id c = *this; --v_; return c; }

 private:
  value_type v_ = 0;
};

struct op_tag;
struct tensor_tag;
struct storage_tag;
struct mat_tag;

using op_id = basic_id<op_tag>;            // an op of a problem
using tensor_id = basic_id<tensor_tag>;    // a tensor of a problem
using storage_id = basic_id<storage_tag>;  // a storage: a tensor and everything in place of it
using mat_id = basic_id<mat_tag>;          // a materialization of a storage in a plan

inline constexpr std::int32_t no_id = -1;

}  // namespace memplan

template <class Tag>
struct std::hash<memplan::basic_id<Tag>> {
  std::size_t operator()(memplan::basic_id<Tag> id) const noexcept { return std::hash<std::int32_t>{}(id.value()); }
};
