// The MiniMalloc "challenging" instances (labelled slow: under the sanitizers they take longer). Node
// limits, not time, bound the search, so the outcomes are deterministic.
#include <doctest/doctest.h>

#include <memplan/io/buffers_csv.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/place/exact.hpp>

using namespace memplan;
using namespace memplan::place;

namespace {

buffer_problem instance(char name, bool with_capacity) {
  const auto path = std::string(MEMPLAN_DATA_DIR) + "/benchmarks/minimalloc/" + name + ".1048576.csv";
  auto p = io::read_buffers_csv_file(path).problem;
  if (with_capacity) p.capacity = *io::capacity_from_filename(path);
  return p;
}

}  // namespace

TEST_CASE("decision mode: exact places all eleven instances within their capacity") {
  for (char name : std::string("ABCDEFGHIJK")) {
    INFO(name);
    const auto p = instance(name, true);
    const auto pl = exact{.time_limit_s = 1e9, .node_limit = 2'000'000}.place(p);
    CHECK(!check(p, pl));
    CHECK(pl.arena <= p.capacity);
    if (arena_lower_bound(p) == p.capacity) CHECK(pl.optimal);  // capacity = max load: fitting is optimal
  }
}

TEST_CASE("decision mode: the default placer stops at the first placement that fits") {
  const auto p = instance('D', true);  // max load 986112, capacity 1048576
  const auto pl = default_placer{.time_limit_s = 1e9, .node_limit = 2'000'000}.place(p);
  CHECK(!check(p, pl));
  CHECK(pl.arena <= p.capacity);
  CHECK(!pl.optimal);
}

TEST_CASE("minimisation: exact proves zero fragmentation where max load is reachable") {
  for (char name : std::string("ABCEFGHIK")) {  // C's max load 1039360 is below its capacity
    INFO(name);
    const auto p = instance(name, false);
    const auto pl = exact{.time_limit_s = 1e9, .node_limit = 2'000'000}.place(p);
    CHECK(!check(p, pl));
    CHECK(pl.optimal);
    CHECK(pl.arena == arena_lower_bound(p));
  }
}

TEST_CASE("minimisation: D and J get below the best heights known for them") {
  // Best known before (the issue): D <= 1040384, J <= 1044480.
  for (auto [name, known] : {std::pair{'D', std::int64_t{1040384}}, std::pair{'J', std::int64_t{1044480}}}) {
    INFO(name);
    const auto p = instance(name, false);
    const auto pl = exact{.time_limit_s = 1e9, .node_limit = 400'000}.place(p);
    CHECK(!check(p, pl));
    CHECK(pl.arena <= known);
    CHECK(pl.lower_bound >= arena_lower_bound(p));
  }
}
