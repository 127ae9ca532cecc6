#pragma once
// Argument parsing shared by the CLI's subcommands: byte sizes and alignments.
#include <cstdint>
#include <cctype>
#include <map>
#include <string>

#include <cstdio>
#include <iostream>

#include <unistd.h>

#include <memplan/base/error.hpp>
#include <memplan/base/progress.hpp>
#include <memplan/io/report.hpp>

namespace memplan::cli {

// Progress of the policies that search, on stderr: every event with -v; when stderr is a terminal
// (and not -q), the events of work that has run for a second or more; otherwise none.
inline progress_callback progress_printer(bool verbose, bool quiet = false) {
  const bool terminal = !quiet && ::isatty(2) != 0;
  if (!verbose && !terminal) return {};
  return [verbose](const progress_event& e) {
    if (!verbose && e.seconds < 1.0) return;
    char b[64];
    std::snprintf(b, sizeof b, "[%8.3f s] ", e.seconds);
    std::cerr << b << e.policy << ": " << e.message;
    if (e.best >= 0) std::cerr << " (best " << io::human_bytes(e.best) << ")";
    if (e.lower_bound > 0) std::cerr << " (bound " << io::human_bytes(e.lower_bound) << ")";
    std::cerr << "\n";
  };
}

// "4096", "512KiB", "1.5GiB", "2G" (binary units), "3MB" (decimal).
inline std::int64_t parse_bytes(const std::string& text, const std::string& option) {
  std::size_t pos = 0;
  double v = 0;
  try {
    // Digits first: std::stod would also take "0x100", "inf", "nan" and leading blanks.
    if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.') ||
        (text.size() > 1 && (text[1] == 'x' || text[1] == 'X')))
      throw std::invalid_argument(text);
    v = std::stod(text, &pos);
  } catch (const std::exception&) {
    throw error(errc::invalid_argument, option + " '" + text + "' is not a size in bytes (e.g. 4096, 512MiB, 1.5GiB)");
  }
  std::string unit = text.substr(pos);
  static const std::map<std::string, double> units{{"", 1},           {"B", 1},          {"K", 1024.0},     {"KiB", 1024.0},
                                                   {"M", 1048576.0},  {"MiB", 1048576.0}, {"G", 1073741824.0}, {"GiB", 1073741824.0},
                                                   {"T", 1099511627776.0}, {"TiB", 1099511627776.0},
                                                   {"KB", 1e3},       {"MB", 1e6},       {"GB", 1e9},       {"TB", 1e12}};
  auto it = units.find(unit);
  if (it == units.end())
    throw error(errc::invalid_argument, option + " '" + text + "': unknown unit '" + unit + "' (binary: K or KiB, M or MiB, G or GiB, T or TiB; decimal: KB, MB, GB, TB; B or none: bytes)");
  const double b = v * it->second;
  if (!(b >= 0) || b > 9.2e18) throw error(errc::invalid_argument, option + " '" + text + "' is not a size between 0 and 2^63 bytes");
  if (it->second == 1 && b != static_cast<double>(static_cast<std::int64_t>(b)))
    throw error(errc::invalid_argument, option + " '" + text + "' is not a whole number of bytes");
  return static_cast<std::int64_t>(b);
}

// A positive rate, plain or scientific: "12e9", "15000000000000", "1.2e10" (bytes/s, FLOP/s).
inline double parse_rate(const std::string& text, const std::string& option) {
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos == 0 || pos != text.size() || !(v > 0) || !(v < 1e300))
    throw error(errc::invalid_argument, option + " '" + text + "' is not a positive number per second (e.g. 12e9)");
  return v;
}

inline void check_alignment(std::int64_t a) {
  if (a <= 0 || (a & (a - 1)) != 0)
    throw error(errc::invalid_argument, "--alignment " + std::to_string(a) + " is not a power of two (e.g. 1, 64, 256)");
}

}  // namespace memplan::cli
