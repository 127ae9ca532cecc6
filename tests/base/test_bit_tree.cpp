#include <doctest/doctest.h>

#include <memplan/base/bit_tree.hpp>

#include <iterator>
#include <random>
#include <set>

using memplan::base::bit_tree;

TEST_CASE("bit_tree: next and prev agree with std::set under random inserts and erases") {
  // Sizes on and around the word and level boundaries (64, 4096), and one with three levels.
  for (std::size_t n : {1u, 2u, 63u, 64u, 65u, 130u, 4095u, 4096u, 4097u, 300000u}) {
    INFO("n = " << n);
    std::mt19937_64 g(n);
    std::uniform_int_distribution<std::size_t> any(0, n - 1);
    bit_tree t(n);
    std::set<std::size_t> s;
    CHECK(t.next(0) == bit_tree::npos);
    CHECK(t.prev(n) == bit_tree::npos);
    const int ops = n > 10000 ? 20000 : 4000;
    for (int k = 0; k < ops; ++k) {
      const auto x = any(g);
      // Inserts and erases in phases, so the set runs full and nearly empty.
      if ((k / 500) % 2 == 0 || s.empty()) {
        t.insert(x);
        s.insert(x);
      } else {
        const auto at = s.lower_bound(x);  // an element present: the next one at or after x, else the first
        const auto y = at == s.end() ? *s.begin() : *at;
        t.erase(y);
        s.erase(y);
      }
      const auto q = any(g);
      const auto it = s.lower_bound(q);
      REQUIRE(t.next(q) == (it == s.end() ? bit_tree::npos : *it));
      REQUIRE(t.prev(q) == (it == s.begin() ? bit_tree::npos : *std::prev(it)));
      REQUIRE(t.contains(q) == (s.count(q) == 1));
    }
    // The extremes: next of 0 is the least, prev of n the greatest.
    CHECK(t.next(0) == (s.empty() ? bit_tree::npos : *s.begin()));
    CHECK(t.prev(n) == (s.empty() ? bit_tree::npos : *s.rbegin()));
  }
}
