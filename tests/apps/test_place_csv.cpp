// The work behind `memplan place` (apps/memplan/place_csv.hpp), run in-process.
#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>
#include <string>

#include "../../apps/memplan/library_placers.hpp"  // (this program's one)
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

TEST_CASE("run_csv without a capacity: a set left more than 1 % above its bound is searched again, forward and time-reversed") {
  // MiniMalloc's D, minimised: the default placer's own limit (0.8 s of counted work) ends at
  // 1,059,840 B forward and time-reversed, 7.5 % above max load; the second search (4x the work)
  // reaches 1,033,216 B, below the best height known before (1,040,384 B; docs/placement.md).
  // Deterministic mode runs both ways on one thread or two, with the same offsets.
  const auto path = std::string(MEMPLAN_DATA_DIR) + "/benchmarks/minimalloc/D.1048576.csv";
  std::ostringstream log;
  const auto r = cli::run_csv({.input = path, .deterministic = true, .threads = 2}, &log);
  CHECK(!place::check(r.list.problem, r.placement));
  CHECK(r.placement.arena <= 1040384);
  CHECK(log.str().find("searched forward and on the time-reversed list at once, arenas 1059840 and 1059840") != std::string::npos);
  CHECK(log.str().find("searched again with 3.2 s both ways") != std::string::npos);
  CHECK(log.str().find("(kept)") != std::string::npos);
  // (The first searches only, on one thread and on two: the same offsets.)
  std::ostringstream one, both;
  const auto r1 = cli::run_csv({.input = path, .deterministic = true, .extend_gap = 0.5, .threads = 1}, &one);
  const auto r2 = cli::run_csv({.input = path, .deterministic = true, .extend_gap = 0.5, .threads = 2}, &both);
  CHECK(r1.placement.arena == 1059840);
  CHECK(r1.placement.offsets == r2.placement.offsets);
  CHECK(one.str().find("searched forward and on the time-reversed list, arenas 1059840 and 1059840") != std::string::npos);
  // Not with an explicit time limit, nor where the first result is within extend_gap of its bound.
  std::ostringstream log2;
  (void)cli::run_csv({.input = path, .time_limit_s = 0.01}, &log2);
  CHECK(log2.str().find("searched again") == std::string::npos);
  std::ostringstream log3;
  (void)cli::run_csv({.input = path, .extend_gap = 0.5}, &log3);
  CHECK(log3.str().find("searched again") == std::string::npos);
}

TEST_CASE("run_csv: with two threads both ways at once, also under a time limit, and on one thread forward only") {
  // (Wall-clock runs: only what the notes say is checked, not the arenas the clock allows.)
  const auto path = std::string(MEMPLAN_DATA_DIR) + "/benchmarks/minimalloc/D.1048576.csv";
  std::ostringstream two, one, capacity;
  const auto r2 = cli::run_csv({.input = path, .time_limit_s = 0.05, .threads = 2}, &two);
  CHECK(!place::check(r2.list.problem, r2.placement));
  CHECK(two.str().find("searched forward and on the time-reversed list at once") != std::string::npos);
  CHECK(two.str().find("searched again") == std::string::npos);  // (an explicit time limit: no second search)
  const auto r1 = cli::run_csv({.input = path, .extend_gap = 0.5, .threads = 1}, &one);
  CHECK(!place::check(r1.list.problem, r1.placement));
  CHECK(one.str().find("time-reversed") == std::string::npos);
  // With a capacity (decision mode) or another placer: one search, as before.
  (void)cli::run_csv({.input = path, .capacity = 1048576, .threads = 2}, &capacity);
  CHECK(capacity.str().find("time-reversed") == std::string::npos);
}

TEST_CASE("run_csv: the second search runs on the time-reversed list too") {
  // A budget plan's buffers (Inception-v3 b32 offloaded at 0.5x, data/benchmarks/memplan): with
  // counted work, the first searches end 4.27 % (forward) and 4.56 % (reversed) above max load;
  // searched again forward it ended 2.93 % above (1,494,229,136 B), on the time-reversed list 2.29 %
  // (1,484,396,176 B). The offsets are the original list's: place::check and the file written back
  // hold them.
  const auto path = std::string(MEMPLAN_DATA_DIR) + "/benchmarks/memplan/inception_v3-offload-0.5.csv";
  const std::string out = "test_place_run_csv_reversed.csv";
  std::ostringstream log;
  const auto r = cli::run_csv({.input = path, .deterministic = true, .output = out}, &log);
  CHECK(!place::check(r.list.problem, r.placement));
  CHECK(log.str().find("searched again with 3.2 s both ways, arenas 1494229136 and 1484396176") != std::string::npos);
  CHECK(log.str().find("(kept)") != std::string::npos);
  CHECK(r.placement.arena == 1484396176);
  const auto back = io::read_buffers_csv_file(out);
  CHECK(back.ids == r.list.ids);
  std::remove(out.c_str());
}
