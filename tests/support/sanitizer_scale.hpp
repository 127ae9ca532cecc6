#pragma once
// Under AddressSanitizer (the `sanitize` preset, part of CI) the tests run the same code 2-10x
// slower. The tests that sweep many instances (random graphs, budgets, CBC solves) take a stride
// through them there: every code path still runs instrumented, on fewer instances. The default build
// runs the full sweeps, and it is where the figures the tests check are measured.
#include <cstddef>

namespace memplan::testing {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool under_sanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool under_sanitizer = true;
#else
inline constexpr bool under_sanitizer = false;
#endif
#else
inline constexpr bool under_sanitizer = false;
#endif

// `k` under the sanitizer, 1 otherwise: the step of a sweep over instances.
constexpr std::size_t sanitizer_stride(std::size_t k) { return under_sanitizer ? k : 1; }

// Whether a sweep over (row, column) pairs, e.g. budget x policy, leaves this pair out: under the
// sanitizer it keeps the diagonals row + column = 0 (mod period), by default a checkerboard (every row
// and every column with at least `period` entries still runs, 1/period of the pairs), otherwise all.
constexpr bool sanitizer_skips(std::size_t row, std::size_t column, std::size_t period = 2) {
  return under_sanitizer && (row + column) % period != 0;
}

// `sanitized` under the sanitizer, `full` otherwise (counts of random instances, training steps).
template <class T>
constexpr T full_or_sanitized(T full, T sanitized) {
  return under_sanitizer ? sanitized : full;
}

}  // namespace memplan::testing
