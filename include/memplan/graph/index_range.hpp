#pragma once
// A random-access range of handles 0..n-1. Used instead of std::views::iota | transform because
// clang 14 cannot compile libstdc++ 12's <ranges> views, and memplan must build with both.
#include <cstddef>
#include <cstdint>
#include <iterator>

namespace memplan {

template <class Handle>
class index_range {
 public:
  class iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using iterator_concept = std::random_access_iterator_tag;
    using value_type = Handle;
    using difference_type = std::ptrdiff_t;
    using reference = Handle;
    iterator() = default;
    explicit constexpr iterator(std::int32_t i) : i_(i) {}
    constexpr Handle operator*() const { return Handle{i_}; }
    constexpr Handle operator[](difference_type d) const { return Handle{static_cast<std::int32_t>(i_ + d)}; }
    constexpr iterator& operator++() { ++i_; return *this; }
    constexpr iterator operator++(int) { auto t = *this; ++i_; return t; }
    constexpr iterator& operator--() { --i_; return *this; }
    constexpr iterator operator--(int) { auto t = *this; --i_; return t; }
    constexpr iterator& operator+=(difference_type d) { i_ += static_cast<std::int32_t>(d); return *this; }
    constexpr iterator& operator-=(difference_type d) { i_ -= static_cast<std::int32_t>(d); return *this; }
    friend constexpr iterator operator+(iterator a, difference_type d) { return a += d; }
    friend constexpr iterator operator+(difference_type d, iterator a) { return a += d; }
    friend constexpr iterator operator-(iterator a, difference_type d) { return a -= d; }
    friend constexpr difference_type operator-(iterator a, iterator b) { return a.i_ - b.i_; }
    friend constexpr bool operator==(iterator a, iterator b) { return a.i_ == b.i_; }
    friend constexpr auto operator<=>(iterator a, iterator b) { return a.i_ <=> b.i_; }

   private:
    std::int32_t i_ = 0;
  };
  constexpr index_range() = default;
  constexpr explicit index_range(std::int32_t n) : n_(n) {}
  [[nodiscard]] constexpr iterator begin() const { return iterator(0); }
  [[nodiscard]] constexpr iterator end() const { return iterator(n_); }
  [[nodiscard]] constexpr std::size_t size() const { return static_cast<std::size_t>(n_); }
  [[nodiscard]] constexpr bool empty() const { return n_ == 0; }

 private:
  std::int32_t n_ = 0;
};

}  // namespace memplan
