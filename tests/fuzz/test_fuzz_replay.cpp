// Every seed (corpus/<target>/) and every input a fuzzer once crashed on (regressions/<target>/) run
// through the fuzz targets' bodies in the ordinary build, so a fixed crash stays fixed without clang.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <memplan/io/gzip.hpp>

#include "harness.hpp"
#ifdef MEMPLAN_FUZZ_WITH_CLI
#include "cli_harness.hpp"
#endif

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> inputs_of(const std::string& target) {
  std::vector<fs::path> out;
  for (const char* dir : {"corpus", "regressions"}) {
    const fs::path d = fs::path(MEMPLAN_SOURCE_DIR) / "tests" / "fuzz" / dir / target;
    if (!fs::is_directory(d)) continue;
    for (const auto& e : fs::directory_iterator(d))
      if (e.is_regular_file()) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

template <class Body>
void replay(const std::string& target, Body body, std::size_t at_least) {
  const auto files = inputs_of(target);
  CHECK(files.size() >= at_least);
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    INFO(f.string());
    try {
      (void)body(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    } catch (const memplan::fuzz::finding& e) {
      FAIL_CHECK(e.what());
    }
  }
}

}  // namespace

TEST_CASE("fuzz replay: graph JSON") { replay("graph_json", memplan::fuzz::graph_json, 3); }
TEST_CASE("fuzz replay: gzip'd graph JSON") { replay("graph_json_gzip", memplan::fuzz::graph_json_gzip, 2); }
TEST_CASE("fuzz replay: plan JSON") { replay("plan_json", memplan::fuzz::plan_json, 2); }
TEST_CASE("fuzz replay: verify on mutated plans") { replay("verify_mutated", memplan::fuzz::verify_mutated, 2); }
TEST_CASE("fuzz replay: MiniMalloc CSV") { replay("buffers_csv", memplan::fuzz::buffers_csv, 3); }
#ifdef MEMPLAN_FUZZ_WITH_CLI
TEST_CASE("fuzz replay: CLI arguments") { replay("cli_args", memplan::fuzz::cli_args, 5); }
#endif

// The harnesses themselves must be able to fail: a broken property is reported, not swallowed.
TEST_CASE("fuzz harness: a plan that breaks a property is a finding") {
  const auto& fx = memplan::fuzz::plan_fixture::get();
  auto bad = fx.plan;
  REQUIRE(!bad.steps.empty());
  bad.steps.pop_back();  // an op left out
  CHECK_THROWS_AS(memplan::fuzz::recheck_accepted_plan(fx.graph, bad), memplan::fuzz::finding);
  CHECK_NOTHROW(memplan::fuzz::recheck_accepted_plan(fx.graph, fx.plan));
}
