#pragma once
// Numbers in messages and notes: six significant digits ("0.0123", "1.5e+09"), locale-independent.
#include <cstdio>
#include <string>

namespace memplan {

inline std::string number_text(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

}  // namespace memplan
