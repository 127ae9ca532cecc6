#pragma once
// Bit-for-bit equality of float vectors: the check every planned-versus-eager comparison makes.
#include <cstring>
#include <vector>

namespace memplan::testing {

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace memplan::testing
