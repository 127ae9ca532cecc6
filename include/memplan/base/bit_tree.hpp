#pragma once
// base::bit_tree -- an ordered set of the integers [0, n): insert, erase, the next element at or
// after x, the last one before x, each in O(log_64 n) word operations (a 64-ary tree of bit words, as
// a van Emde Boas layout flattened to a few levels: 3 levels hold 262,144 elements).
//
// Why: sweeps over lifetimes keep the live buffers ordered by offset. With the offsets ranked once
// (one sort), this replaces a std::set of (offset, buffer): the referee's sweep over 100k buffers went
// from about 37 ms to a few, and a deadline's fixed work with it.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace memplan::base {

class bit_tree {
 public:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  explicit bit_tree(std::size_t n = 0) {
    std::size_t bits = n;
    do {
      const auto words = (bits + 63) / 64;
      levels_.emplace_back(words == 0 ? 1 : words, 0);
      bits = words;
    } while (bits > 1);
  }

  [[nodiscard]] bool contains(std::size_t x) const { return (levels_[0][x >> 6] >> (x & 63)) & 1; }

  void insert(std::size_t x) {
    for (auto& level : levels_) {
      auto& w = level[x >> 6];
      const bool was_empty = w == 0;
      w |= std::uint64_t{1} << (x & 63);
      if (!was_empty) return;  // the levels above already mark this word
      x >>= 6;
    }
  }

  void erase(std::size_t x) {
    for (auto& level : levels_) {
      auto& w = level[x >> 6];
      w &= ~(std::uint64_t{1} << (x & 63));
      if (w != 0) return;  // the word still holds elements: the levels above stay marked
      x >>= 6;
    }
  }

  // The least element >= x, or npos.
  [[nodiscard]] std::size_t next(std::size_t x) const {
    std::size_t level = 0;
    for (;; ++level) {
      if (level == levels_.size()) return npos;
      const auto& words = levels_[level];
      if ((x >> 6) >= words.size()) return npos;
      const auto w = words[x >> 6] & (~std::uint64_t{0} << (x & 63));
      if (w != 0) {
        x = (x & ~std::size_t{63}) | static_cast<std::size_t>(std::countr_zero(w));
        break;
      }
      x = (x >> 6) + 1;  // the next word of this level: its bit on the level above
    }
    for (; level > 0; --level) x = (x << 6) | static_cast<std::size_t>(std::countr_zero(levels_[level - 1][x]));
    return x;
  }

  // The greatest element < x, or npos.
  [[nodiscard]] std::size_t prev(std::size_t x) const {
    std::size_t level = 0;
    for (;; ++level) {
      if (level == levels_.size() || x == 0) return npos;
      --x;  // now the greatest candidate: x itself is excluded
      const auto& words = levels_[level];
      if ((x >> 6) >= words.size()) x = words.size() * 64 - 1;
      const auto w = words[x >> 6] & (~std::uint64_t{0} >> (63 - (x & 63)));
      if (w != 0) {
        x = (x & ~std::size_t{63}) | static_cast<std::size_t>(63 - std::countl_zero(w));
        break;
      }
      x >>= 6;  // this word's bit on the level above: look before it
    }
    for (; level > 0; --level) x = (x << 6) | static_cast<std::size_t>(63 - std::countl_zero(levels_[level - 1][x]));
    return x;
  }

 private:
  std::vector<std::vector<std::uint64_t>> levels_;  // levels_[0]: one bit per element; above: one per word below
};

}  // namespace memplan::base
