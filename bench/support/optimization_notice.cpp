// Linked into every benchmark when MEMPLAN_BENCH_OPTIMIZE is set (bench/CMakeLists.txt): a benchmark
// built without optimisation (CI builds them at -O0 only to smoke-run them) says so before it prints
// any time, so that its figures are not taken for measurements.
#include <cstdio>

namespace {
#ifndef __OPTIMIZE__
[[maybe_unused]] const bool memplan_bench_notice = [] {
  std::fputs("memplan bench: built without optimisation (MEMPLAN_BENCH_OPTIMIZE); its times are not "
             "representative: build with the default preset's -O2 to measure\n", stderr);
  return true;
}();
#endif
}  // namespace
