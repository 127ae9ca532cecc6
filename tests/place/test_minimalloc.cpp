// The MiniMalloc "challenging" instances that exact proves within seconds (labelled slow: under the
// sanitizers they take longer). Node limits, not time, bound the search, so the outcome is deterministic.
#include <doctest/doctest.h>

#include <memplan/io/buffers_csv.hpp>
#include <memplan/place/exact.hpp>

using namespace memplan;
using namespace memplan::place;

TEST_CASE("exact proves zero fragmentation on MiniMalloc instances C, F, G, K") {
  for (const char* name : {"C.1048576.csv", "F.1048576.csv", "G.1048576.csv", "K.1048576.csv"}) {
    INFO(name);
    const auto path = std::string(MEMPLAN_SHARED_DIR) + "/benchmarks/minimalloc/" + name;
    auto p = io::read_buffers_csv_file(path).problem;
    p.capacity = *io::capacity_from_filename(path);
    const auto pl = exact{.time_limit = 1e9, .node_limit = 200000}.place(p);
    CHECK(!check(p, pl));
    CHECK(pl.optimal);
    CHECK(pl.arena == arena_lower_bound(p));
    CHECK(pl.arena <= p.capacity);
  }
}
