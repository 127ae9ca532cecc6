// The work behind `memplan place` (apps/memplan/place_csv.hpp), run in-process.
#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "../../apps/memplan/place_csv.hpp"

using namespace memplan;

TEST_CASE("run_csv: the CLI's `memplan place` pipeline") {
  const std::string in = std::string(MEMPLAN_DATA_DIR) + "/benchmarks/minimalloc/input.12.csv";
  const std::string out = "test_place_run_csv_out.csv";
  std::ostringstream log;
  const auto r = cli::run_csv({.input = in, .capacity = 12, .placer = "exact", .time_limit_s = 5, .output = out}, &log);
  CHECK(r.placement.arena == 12);
  CHECK(log.str().find("arena 12") != std::string::npos);
  CHECK(log.str().find("(optimal)") != std::string::npos);
  const auto back = io::read_buffers_csv_file(out);
  CHECK(back.ids == r.list.ids);
  std::remove(out.c_str());
  try {
    (void)cli::run_csv({.input = in, .capacity = 11, .placer = "default"});
    FAIL("expected infeasible");
  } catch (const error& e) {
    CHECK(e.code() == errc::infeasible);
    CHECK(std::string(e.what()).find("11") != std::string::npos);
  }
  CHECK_THROWS_AS((void)cli::run_csv({.input = in, .placer = "nope"}), error);
}
