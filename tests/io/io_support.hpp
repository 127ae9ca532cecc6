#pragma once
// What the tests of memplan/io share (they build as one translation unit).
#include <string>

namespace iotest {

// tests/io/data (MEMPLAN_IO_TEST_DATA, set by CMake).
inline const std::string data_dir = MEMPLAN_IO_TEST_DATA;

// prefix followed by i in decimal: names for generated tensors and ops.
inline std::string numbered(const char* prefix, long long i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

}  // namespace iotest
