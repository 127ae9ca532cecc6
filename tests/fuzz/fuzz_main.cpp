// The libFuzzer entry point of every memplan fuzz target: one executable, fuzz_memplan, and the
// target chosen by the environment variable MEMPLAN_FUZZ_TARGET (graph_json, graph_json_gzip,
// plan_json, verify_mutated, buffers_csv, cli_args). One binary instead of six keeps the sanitized
// clang build to two translation units (this one and the CLI's main.cpp). Bodies: harness.hpp,
// cli_harness.hpp; how to run: docs/reliability.md.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <memplan/io/gzip.hpp>

#include "cli_harness.hpp"
#include "harness.hpp"

namespace {

using target_fn = int (*)(const std::uint8_t*, std::size_t);

struct named_target {
  const char* name;
  target_fn run;
};

constexpr named_target targets[] = {
    {"graph_json", memplan::fuzz::graph_json},         {"graph_json_gzip", memplan::fuzz::graph_json_gzip},
    {"plan_json", memplan::fuzz::plan_json},           {"verify_mutated", memplan::fuzz::verify_mutated},
    {"buffers_csv", memplan::fuzz::buffers_csv},       {"cli_args", memplan::fuzz::cli_args},
};

target_fn chosen = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* name = std::getenv("MEMPLAN_FUZZ_TARGET");
  for (const auto& t : targets)
    if (name && std::strcmp(name, t.name) == 0) chosen = t.run;
  if (!chosen) {
    std::fprintf(stderr, "fuzz_memplan: set MEMPLAN_FUZZ_TARGET to one of:");
    for (const auto& t : targets) std::fprintf(stderr, " %s", t.name);
    std::fprintf(stderr, "\n");
    std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    return chosen(data, size);
  } catch (const memplan::fuzz::finding& f) {
    memplan::fuzz::report_and_abort(f);
  }
}
