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

TEST_CASE("run_csv without a capacity: a set left more than 1 % above its bound is searched again") {
  // MiniMalloc's D, minimised: the default placer's own limit (0.8 s of counted work) ends at
  // 1,059,840 B, 7.5 % above max load; the second search (4x the work) reaches 1,033,216 B, below the
  // best height known before (1,040,384 B; docs/placement.md).
  const auto path = std::string(MEMPLAN_DATA_DIR) + "/benchmarks/minimalloc/D.1048576.csv";
  std::ostringstream log;
  const auto r = cli::run_csv({.input = path, .deterministic = true}, &log);
  CHECK(!place::check(r.list.problem, r.placement));
  CHECK(r.placement.arena <= 1040384);
  CHECK(log.str().find("searched again with 3.2 s") != std::string::npos);
  CHECK(log.str().find("(kept)") != std::string::npos);
  // Not with an explicit time limit, nor where the first result is within extend_gap of its bound.
  std::ostringstream log2;
  (void)cli::run_csv({.input = path, .time_limit_s = 0.01}, &log2);
  CHECK(log2.str().find("searched again") == std::string::npos);
  std::ostringstream log3;
  (void)cli::run_csv({.input = path, .extend_gap = 0.5}, &log3);
  CHECK(log3.str().find("searched again") == std::string::npos);
}

TEST_CASE("run_csv: the second search runs on the time-reversed list") {
  // A budget plan's buffers (Inception-v3 b32 offloaded at 0.5x, data/benchmarks/memplan): with
  // counted work, the first search ends 4.27 % above max load; searched again forward it ended 2.93 %
  // above (1,494,229,136 B), on the time-reversed list 2.29 % (1,484,396,176 B). The offsets are the
  // original list's: place::check and the file written back hold them.
  const auto path = std::string(MEMPLAN_DATA_DIR) + "/benchmarks/memplan/inception_v3-offload-0.5.csv";
  const std::string out = "test_place_run_csv_reversed.csv";
  std::ostringstream log;
  const auto r = cli::run_csv({.input = path, .deterministic = true, .output = out}, &log);
  CHECK(!place::check(r.list.problem, r.placement));
  CHECK(log.str().find("searched again with 3.2 s on the time-reversed list") != std::string::npos);
  CHECK(log.str().find("(kept)") != std::string::npos);
  CHECK(r.placement.arena < 1494229136);
  const auto back = io::read_buffers_csv_file(out);
  CHECK(back.ids == r.list.ids);
  std::remove(out.c_str());
}
