#include <doctest/doctest.h>

#include <memplan/registry/placers.hpp>

using namespace memplan;

TEST_CASE("placers registry: every listed name resolves, unknown names list the valid ones") {
  for (const auto& n : placers().names()) CHECK(placers().make(n).name().size() > 0);
  const std::vector<std::string> expected{"bump", "greedy_by_size", "greedy_by_breadth", "best_fit", "gergov", "mincost_flow",
                                          "pyramid", "exact", "best_of", "default", "online_first_fit", "online_best_fit",
                                          "caching_allocator", "olla_ilp"};
  CHECK(placers().names() == expected);
  try {
    (void)placers().make("greedy");
    FAIL("expected an error");
  } catch (const error& e) {
    CHECK(e.code() == errc::invalid_argument);
    CHECK(std::string(e.what()).find("greedy_by_size") != std::string::npos);
    CHECK(std::string(e.what()).find("unknown placer 'greedy'") != std::string::npos);
  }
  CHECK(placers().help().find("  exact: ") != std::string::npos);
}

TEST_CASE("placers registry: the context's time limit reaches the searching placers") {
  // A problem the greedy placers leave above its bound: exact and default search, within the limit.
  buffer_problem p;
  for (int i = 0; i < 40; ++i) p.buffers.push_back({i % 7, i % 7 + 1 + i % 3, 1 + (i * 37) % 101});
  for (const auto* n : {"exact", "default"}) {
    const auto pl = placers().make(n).place(p, plan_context{.time_limit_s = 0.01});
    CHECK(!check(p, pl));
  }
}

TEST_CASE("registry: a name registered twice is refused") {
  registry<any_placer> r("placer");
  r.add("a", "first", [] { return any_placer(place::bump{}); });
  CHECK_THROWS_AS(r.add("a", "again", [] { return any_placer(place::bump{}); }), error);
  CHECK(r.contains("a"));
  CHECK_FALSE(r.contains("b"));
  CHECK(r.kind() == "placer");
}
