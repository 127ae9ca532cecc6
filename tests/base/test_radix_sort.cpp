#include <doctest/doctest.h>

#include <memplan/base/radix_sort.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

using memplan::base::sort_by_key;

TEST_CASE("sort_by_key: the order of a stable comparison sort, for any key width and count") {
  // Counts around the switch to the radix passes (512); keys of few bits (one pass, many ties), of
  // 33 bits (three passes), of all 64 bits, and keys sharing a digit (passes skipped).
  for (std::size_t n : {0u, 1u, 2u, 511u, 512u, 513u, 5000u, 100000u}) {
    for (int kind = 0; kind < 4; ++kind) {
      INFO("n = " << n << ", kind " << kind);
      std::mt19937_64 g(n * 4 + static_cast<std::size_t>(kind));
      std::vector<std::pair<std::uint64_t, std::size_t>> items(n);
      for (std::size_t i = 0; i < n; ++i) {
        const auto r = g();
        const std::uint64_t key = kind == 0 ? r % 7 : kind == 1 ? r >> 31 : kind == 2 ? r : (r % 3) << 40 | 0x5a5;
        items[i] = {key, i};
      }
      auto expected = items;
      std::stable_sort(expected.begin(), expected.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      sort_by_key(items);
      CHECK(items == expected);
    }
  }
}
