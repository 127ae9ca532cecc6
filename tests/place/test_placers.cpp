#include <doctest/doctest.h>

#include <memplan/place/placers.hpp>
#include <memplan/registry/placers.hpp>

#include <random>
#include <tuple>

#include "instances.hpp"

using namespace memplan;
using namespace memplan::place;
using testing::instance_options;
using testing::random_instance;

namespace {

const std::vector<std::string> offline = {"bump",   "greedy_by_size", "greedy_by_breadth", "best_fit", "gergov",
                                          "mincost_flow", "pyramid", "exact", "best_of", "default"};

// The placer of a name (memplan::placers()), with a time limit for the searching ones.
struct named_placer {
  any_placer impl;
  plan_context ctx;
  [[nodiscard]] std::string name() const { return impl.name(); }
  [[nodiscard]] buffer_placement place(const buffer_problem& bp) const { return impl.place(bp, ctx); }
};
named_placer by_name(const std::string& name, double time_limit_s = -1) {
  return {placers().make(name), plan_context{.time_limit_s = time_limit_s}};
}

void expect_valid(const buffer_problem& p, const buffer_placement& pl, const std::string& who) {
  INFO(who);
  const auto why = check(p, pl);
  CHECK_MESSAGE(!why, (why ? *why : std::string()));
  CHECK(pl.lower_bound == std::max(pl.lower_bound, arena_lower_bound(p)));  // never below the simple bound
  CHECK(pl.arena >= pl.lower_bound);
  CHECK(pl.optimal == (pl.arena == pl.lower_bound || pl.optimal));
}

// The order search's result as a placement for the referee (moved from a copy: copying into the
// empty vector trips g++ 12's -Wnonnull at -O3).
buffer_placement as_placement(place::detail::order_search_result r) {
  buffer_placement pl;
  pl.arena = r.arena;
  pl.offsets = std::move(r.offsets);
  return pl;
}

}  // namespace

TEST_CASE("every placer returns placements the referee accepts on random instances") {
  std::vector<instance_options> kinds = {
      {.buffers = 30, .steps = 25, .max_size = 100},
      {.buffers = 60, .steps = 40, .max_size = 4096, .alignments = true},
      {.buffers = 40, .steps = 30, .max_size = 1000, .global_alignment = 64},
      {.buffers = 40, .steps = 30, .max_size = 300, .alignments = true, .pinned = 0.2},
      {.buffers = 25, .steps = 10, .max_size = 50, .pinned = 0.5, .zero_sizes = true},
  };
  for (std::size_t k = 0; k < kinds.size(); ++k)
    for (std::uint64_t seed = 1; seed <= 8; ++seed) {
      const auto p = random_instance(1000 * k + seed, kinds[k]);
      for (const auto& name : offline) {
        auto placer = by_name(name, name == "exact" || name == "default" ? 0.05 : -1);
        const auto pl = placer.place(p);
        expect_valid(p, pl, name + " kind " + std::to_string(k) + " seed " + std::to_string(seed));
      }
    }
}

TEST_CASE("placers are deterministic") {
  const auto p = random_instance(77, {.buffers = 200, .steps = 100, .max_size = 10000, .alignments = true});
  for (const auto& name : offline) {
    if (name == "exact" || name == "default") continue;  // time-limited
    const auto a = by_name(name).place(p), b = by_name(name).place(p);
    CHECK(a.offsets == b.offsets);
  }
  const auto a = exact{.time_limit_s = 1e9, .node_limit = 2000}.place(p);
  const auto b = exact{.time_limit_s = 1e9, .node_limit = 2000}.place(p);
  CHECK(a.offsets == b.offsets);
}

TEST_CASE("check rejects broken placements") {
  buffer_problem p;
  p.buffers = {{0, 4, 8, 1, -1}, {2, 6, 8, 8, -1}, {5, 9, 4, 1, 16}};
  const auto good = greedy_by_size{}.place(p);
  REQUIRE(!check(p, good));
  SUBCASE("overlap") {
    auto bad = good;
    bad.offsets = {0, 0, 16};
    bad.arena = 20;
    auto why = check(p, bad);
    REQUIRE(why);
    CHECK(why->find("overlap") != std::string::npos);
  }
  SUBCASE("misaligned") {
    auto bad = good;
    bad.offsets = {0, 12, 16};
    bad.arena = 20;
    auto why = check(p, bad);
    REQUIRE(why);
    CHECK(why->find("aligned") != std::string::npos);
  }
  SUBCASE("wrong arena") {
    auto bad = good;
    bad.arena += 1;
    auto why = check(p, bad);
    REQUIRE(why);
    CHECK(why->find("arena") != std::string::npos);
  }
  SUBCASE("moved pin") {
    auto bad = good;
    bad.offsets = {0, 8, 20};
    bad.arena = 24;
    auto why = check(p, bad);
    REQUIRE(why);
    CHECK(why->find("pinned") != std::string::npos);
  }
  SUBCASE("capacity") {
    auto q = p;
    q.capacity = good.arena - 1;
    auto why = check(q, good);
    REQUIRE(why);
    CHECK(why->find("capacity") != std::string::npos);
  }
}

// Random offsets (aligned, pins kept) for the referee: a valid placement with some buffers moved onto
// others, so that about half the placements overlap somewhere.
namespace {
buffer_placement referee_scrambled(const buffer_problem& p, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  auto pl = greedy_by_size{}.place(p);
  std::bernoulli_distribution move((seed / 2) % 2 == 0 ? 0.0 : 0.05);  // (the callers spread every second seed)
  for (std::size_t i = 0; i < p.buffers.size(); ++i)
    if (p.buffers[i].fixed_offset < 0 && move(g)) {
      const auto a = effective_alignment(p, p.buffers[i]);
      pl.offsets[i] = pl.offsets[std::uniform_int_distribution<std::size_t>(0, p.buffers.size() - 1)(g)] / a * a;
    }
  pl.arena = place::detail::arena_of(p, pl.offsets);
  return pl;
}

// Lifetimes scaled apart: the same problem with its steps spread over a range far wider than the
// number of buffers (the comparison sort's path of lifetime_events, not the counting sort's).
buffer_problem spread_in_time(buffer_problem p) {
  for (auto& b : p.buffers) {
    b.lower *= 1'000'003;
    b.upper *= 1'000'003;
  }
  return p;
}
}  // namespace

TEST_CASE("the referee finds an overlap exactly when a pairwise check does, on compact and spread-out steps") {
  int invalid = 0;
  for (std::uint64_t seed = 1; seed <= 120; ++seed) {
    auto p = random_instance(seed, {.buffers = 60, .steps = 25, .max_size = 64, .alignments = seed % 3 == 0, .pinned = seed % 4 == 0 ? 0.2 : 0.0,
                                    .zero_sizes = seed % 5 == 0});
    if (seed % 2 == 0) p = spread_in_time(p);
    const auto pl = referee_scrambled(p, seed);
    bool overlap = false;
    for (std::size_t i = 0; i < p.buffers.size(); ++i)
      for (std::size_t j = i + 1; j < p.buffers.size(); ++j) {
        const auto& a = p.buffers[i];
        const auto& b = p.buffers[j];
        overlap |= a.size > 0 && b.size > 0 && a.lower < b.upper && b.lower < a.upper && pl.offsets[i] < pl.offsets[j] + b.size &&
                   pl.offsets[j] < pl.offsets[i] + a.size;
      }
    INFO("seed " << seed);
    const auto why = check(p, pl);
    CHECK(bool(why) == overlap);
    if (why) CHECK(why->find("overlap") != std::string::npos);
    invalid += overlap;
  }
  CHECK(invalid >= 20);  // the moved buffers do overlap on many of them
}

TEST_CASE("lifetime events: by time, closes before opens, then by buffer, and resident_peak is the largest step's live bytes") {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    auto p = random_instance(seed, {.buffers = 80, .steps = seed % 2 == 0 ? 12 : 40, .zero_sizes = true});
    const bool spread_out = seed % 4 == 1;
    if (spread_out) p = spread_in_time(p);
    INFO("seed " << seed);
    const auto keep = [&](std::size_t i) { return p.buffers[i].size > 0 && i % 7 != 3; };
    const auto evs = memplan::detail::lifetime_events(p, keep);
    std::vector<std::tuple<std::int64_t, int, std::size_t>> expected;
    for (std::size_t i = 0; i < p.buffers.size(); ++i)
      if (keep(i)) {
        expected.emplace_back(p.buffers[i].lower, 1, i);
        expected.emplace_back(p.buffers[i].upper, 0, i);
      }
    std::sort(expected.begin(), expected.end());
    REQUIRE(evs.size() == expected.size());
    for (std::size_t k = 0; k < evs.size(); ++k) CHECK(std::tuple(evs[k].t, evs[k].kind, evs[k].i) == expected[k]);
    // resident_peak against the live bytes at every step (compact steps only: a loop over them).
    if (!spread_out) {
      std::int64_t peak = 0;
      for (std::int64_t t = 0; t <= 40; ++t) {
        std::int64_t live = 0;
        for (const auto& b : p.buffers) live += b.lower <= t && t < b.upper ? b.size : 0;
        peak = std::max(peak, live);
      }
      CHECK(resident_peak(p) == peak);
    } else {
      CHECK(resident_peak(p) == resident_peak(random_instance(seed, {.buffers = 80, .steps = seed % 2 == 0 ? 12 : 40, .zero_sizes = true})));
    }
  }
}

TEST_CASE("lower bound accounts for alignment and pins") {
  buffer_problem p;
  p.alignment = 16;
  p.buffers = {{0, 2, 10}, {0, 2, 10}, {0, 2, 20}};
  // Two of them pay their 6 (or 12) bytes of padding; the topmost one does not.
  CHECK(resident_peak(p) == 40);
  CHECK(arena_lower_bound(p) == 16 + 16 + 20);
  CHECK(exact{}.place(p).arena == 52);
  p.buffers.push_back({5, 6, 4, 1, 128});
  CHECK(arena_lower_bound(p) == 132);
}

TEST_CASE("capacity: clear infeasible error naming the capacity and the best arena") {
  buffer_problem p;
  p.buffers = {{0, 2, 10}, {1, 3, 10}, {2, 4, 10}};
  p.capacity = 15;
  for (const auto& name : offline) {
    INFO(name);
    try {
      (void)by_name(name, 0.05).place(p);
      FAIL("expected infeasible");
    } catch (const error& e) {
      CHECK(e.code() == errc::infeasible);
      CHECK(std::string(e.what()).find("15") != std::string::npos);
      CHECK(std::string(e.what()).find("20") != std::string::npos);
    }
  }
  p.capacity = 20;
  CHECK(default_placer{}.place(p).arena == 20);
}

TEST_CASE("bump never reuses memory while buffers are live, resets when empty") {
  buffer_problem p;
  p.buffers = {{0, 2, 10}, {1, 3, 20}, {2, 4, 5}, {5, 6, 7}};
  const auto pl = bump{}.place(p);
  CHECK(pl.offsets == std::vector<std::int64_t>{0, 10, 30, 0});
  CHECK(pl.arena == 35);
  CHECK(bump{.reset_when_empty = false}.place(p).arena == 42);
}

TEST_CASE("greedy_by_size: largest first, smallest gap") {
  buffer_problem p;
  // 0 and 1 are placed first (largest); 2 fits the 5-byte gap between them exactly, not the 30-byte one.
  p.buffers = {{0, 10, 50}, {0, 10, 40}, {2, 4, 5}, {3, 9, 4}};
  // Make two gaps with pins: [50, 55) and [95, 125) are free while 2 and 3 live.
  p.buffers.push_back({1, 8, 10, 1, 125});
  p.buffers[1].fixed_offset = 55;
  const auto pl = greedy_by_size{}.place(p);
  CHECK(pl.offsets[0] == 0);
  CHECK(pl.offsets[2] == 50);
  CHECK(pl.offsets[3] == 95);  // 4 bytes: the 5-byte gap is taken, next smallest is the 30-byte one
}

TEST_CASE("greedy_by_breadth visits the widest step first") {
  buffer_problem p;
  p.buffers = {{0, 1, 8}, {0, 1, 8}, {1, 2, 30}, {1, 3, 1}};
  const auto pl = greedy_by_breadth{}.place(p);
  // Step 1 is the widest (31 bytes): its buffers (30 then 1) are placed first at 0 and 30.
  CHECK(pl.offsets[2] == 0);
  CHECK(pl.offsets[3] == 30);
  CHECK(pl.arena == 31);
}

TEST_CASE("pyramid: nested longest lifetimes stacked from address 0, usable as pins") {
  buffer_problem p;
  // Activations of a 3-layer net: a0 lives [0,10), a1 [1,9), a2 [2,8); temporaries in between.
  p.buffers = {{2, 8, 30}, {0, 10, 10}, {1, 9, 20}, {3, 4, 5}, {0, 3, 40}};
  const auto pre = pyramid{}.preplace(p);
  CHECK(pre[1] == 0);
  CHECK(pre[2] == 10);
  CHECK(pre[0] == 30);
  CHECK(pre[3] == 60);  // [3,4) nests inside [2,8): it continues the pyramid
  CHECK(pre[4] == -1);  // [0,3) does not nest in [3,4)
  const auto pinned = pyramid{}.with_pins(p);
  CHECK(pinned.buffers[1].fixed_offset == 0);
  CHECK(pinned.buffers[4].fixed_offset == -1);
  const auto pl = pyramid{}.place(p);
  CHECK(!check(p, pl));
  // The pyramid pins are honoured by the other placers too.
  CHECK(exact{}.place(pinned).offsets[2] == 10);
}

TEST_CASE("mincost_flow builds shared blocks of buffers with disjoint lifetimes") {
  buffer_problem p;
  p.buffers = {{0, 2, 100}, {2, 4, 100}, {4, 6, 100}, {0, 6, 10}};
  const auto pl = mincost_flow{}.place(p);
  CHECK(pl.arena == 110);  // one block of 100 reused three times + one of 10
  CHECK(pl.offsets[0] == pl.offsets[1]);
  CHECK(pl.offsets[1] == pl.offsets[2]);
  auto big = random_instance(5, {.buffers = 50});
  CHECK_THROWS_AS((void)mincost_flow{.max_buffers = 10}.place(big), error);
}

TEST_CASE("mincost_flow under a spent time limit: the flow stops after its first phase, the placement stays valid") {
  const auto p = random_instance(9, {.buffers = 400, .steps = 120, .max_size = 5000});
  const auto full = mincost_flow{}.place(p);
  expect_valid(p, full, "mincost_flow");
  CHECK(full.note.find("time limit") == std::string::npos);
  const auto cut = mincost_flow{}.place(p, plan_context{.time_limit_s = 0});
  expect_valid(p, cut, "mincost_flow, time limit 0");
  if (cut.note.find("time limit reached") != std::string::npos) CHECK(cut.arena >= full.arena);  // a partial flow is a worse decomposition
  else CHECK(cut.offsets == full.offsets);  // the first phase routed everything
}

TEST_CASE("best_of under a time limit: later members are skipped, the result is a member's valid placement") {
  const auto p = random_instance(4, {.buffers = 300, .steps = 100, .max_size = 1000});
  const auto all = best_of{greedy_by_size{}, best_fit{}, greedy_by_breadth{}}.place(p);
  const auto cut = best_of{greedy_by_size{}, best_fit{}, greedy_by_breadth{}}.place(p, plan_context{.time_limit_s = 0});
  expect_valid(p, cut, "best_of, time limit 0");
  CHECK(cut.placer == "greedy_by_size");  // only the first member runs once the clock has stopped
  CHECK(cut.note.find("best_fit skipped (time limit)") != std::string::npos);
  CHECK(cut.note.find("greedy_by_breadth skipped (time limit)") != std::string::npos);
  CHECK(all.note.find("skipped") == std::string::npos);
  CHECK(all.arena <= cut.arena);
}

TEST_CASE("gergov on a chain and on overlapping buffers") {
  buffer_problem p;
  p.buffers = {{0, 2, 100}, {2, 4, 100}, {1, 3, 10}};
  const auto pl = gergov{}.place(p);
  CHECK(!check(p, pl));
  CHECK(pl.arena == 110);
}

TEST_CASE("best_of names the winner and default_placer reaches zero fragmentation") {
  const auto p = random_instance(3, {.buffers = 80, .steps = 40, .max_size = 1000});
  const auto pl = best_of{bump{}, greedy_by_size{}, best_fit{}}.place(p);
  CHECK(pl.placer != "bump");
  CHECK(pl.note.find("bump=") != std::string::npos);
  const auto d = default_placer{.time_limit_s = 5}.place(p);
  CHECK(!check(p, d));
  CHECK(d.arena <= pl.arena);
  CHECK(d.placer.rfind("default(", 0) == 0);
}

TEST_CASE("default_placer: first fit in allocation order where the size-ordered passes leave holes") {
  // Long-lived buffers beginning among short ones (found by a seeded search over small random sets):
  // greedy_by_breadth and best_fit leave 2 bytes of holes, first fit by allocation order (lower end,
  // then larger first) none. With no search nodes the default placer has only its passes.
  buffer_problem p;
  p.buffers = {{9, 11, 5}, {0, 6, 7}, {9, 11, 8}, {3, 4, 7}, {6, 11, 2}, {5, 9, 2}, {0, 8, 4}};
  REQUIRE(arena_lower_bound(p) == 18);
  CHECK(greedy_by_breadth{}.place(p).arena == 20);
  CHECK(best_fit{}.place(p).arena == 20);
  const auto d = default_placer{.node_limit = 0}.place(p);
  CHECK(!check(p, d));
  CHECK(d.arena == 18);
  CHECK(d.optimal);
  CHECK(d.placer == "default(first_fit_by_allocation)");
  CHECK(d.note.find("greedy_by_breadth=20, best_fit=20, first_fit_by_allocation=18") != std::string::npos);
}

TEST_CASE("default_placer with a capacity: the passes after the exact search still count, and a proof says so") {
  // Sets where greedy_by_size or pyramid (the passes after the exact search) beat the passes before
  // it, found by a seeded search; at a capacity of their arena, with no search nodes, the default
  // placer must fit. (Until stop 63 the exact search enforced the capacity itself and threw first:
  // idealloc's pangu set, whose size skips the search, was "infeasible" at 5,560,000,000 B where
  // pyramid places 5,551,071,295 B.)
  int fitted = 0;
  for (std::uint64_t seed = 1; seed <= 400 && fitted < 3; ++seed) {
    auto p = random_instance(seed, {.buffers = 7, .steps = 8, .max_size = 12});
    const auto before = std::min({greedy_by_breadth{}.place(p).arena, best_fit{}.place(p).arena,
                                  place::detail::arena_of(p, place::detail::first_fit_by_allocation{}.offsets(p, deadline::never()))});
    const auto after = std::min(greedy_by_size{}.place(p).arena, pyramid{}.place(p).arena);
    if (after >= before) continue;
    INFO("seed " << seed);
    p.capacity = after;
    const auto d = default_placer{.node_limit = 0}.place(p);
    expect_valid(p, d, "default_placer");
    CHECK(d.arena <= after);
    ++fitted;
  }
  CHECK(fitted == 3);
  // Above max load and below the optimum only the search can say that no placement fits, and it says
  // so (a pin at 2 leaves the 3-byte buffer no room below it: optimum 6, max load 4).
  buffer_problem p;
  p.buffers = {{0, 2, 1, 1, 2}, {0, 2, 3}};
  REQUIRE(testing::brute_force_arena(p) == 6);
  REQUIRE(arena_lower_bound(p) < 6);
  p.capacity = 5;
  try {
    (void)default_placer{}.place(p);
    FAIL("expected infeasible");
  } catch (const error& e) {
    CHECK(e.code() == errc::infeasible);
    CHECK(std::string(e.what()).find("no placement fits the capacity 5: proven lower bound 6") != std::string::npos);
  }
  p.capacity = 6;
  CHECK(default_placer{}.place(p).arena == 6);
}

TEST_CASE("order search: from the allocation order to the optimum where every greedy pass misses it") {
  // Found by a seeded search over small random sets (random_instance(371, 8 buffers, 8 steps)): the
  // greedy passes leave 41 bytes, the optimum (brute force) is max load, 36.
  buffer_problem p;
  p.buffers = {{2, 3, 10}, {3, 4, 1}, {4, 8, 20}, {2, 5, 11}, {1, 2, 20}, {3, 4, 8}, {2, 3, 15}, {0, 1, 12}};
  REQUIRE(arena_lower_bound(p) == 36);
  REQUIRE(testing::brute_force_arena(p) == 36);
  const auto never = deadline::never();
  const auto start = place::detail::place_in_order(p, place::detail::first_fit_by_allocation::order(p), place::detail::fit::best);
  CHECK(place::detail::arena_of(p, start) > 36);
  CHECK(greedy_by_breadth{}.place(p).arena > 36);
  CHECK(best_fit{}.place(p).arena > 36);
  CHECK(place::detail::arena_of(p, place::detail::first_fit_by_allocation{}.offsets(p, never)) > 36);
  const auto r = place::detail::improve_insertion_order(p, place::detail::first_fit_by_allocation::order(p), place::detail::fit::best,
                                                        36, never, 1000, 1000);
  CHECK(r.arena == 36);
  CHECK(r.passes < 1000);  // it stops at the target
  CHECK(!check(p, as_placement(r)));
  // In the default placer (no exact search nodes here, so the order search is what finds it).
  // The set falls apart in time; decompose = false keeps it whole (with the pieces, the whole set is
  // placed after them when they miss the bound).
  const auto d = default_placer{.time_limit_s = 1e9, .node_limit = 0, .decompose = false, .order_search_passes = 1000}.place(p);
  CHECK(!check(p, d));
  CHECK(d.arena == 36);
  CHECK(d.placer == "default(order_search)");
  CHECK(d.note.find("order_search=36") != std::string::npos);
  const auto by_pieces = default_placer{.time_limit_s = 1e9, .node_limit = 0, .order_search_passes = 1000}.place(p);
  CHECK(!check(p, by_pieces));
  CHECK(by_pieces.arena == 36);
  // Decision mode leaves it out: there the exact search keeps the whole budget, and a search that
  // cannot fit the capacity ends in the capacity error.
  auto capped = p;
  capped.capacity = 40;
  CHECK_THROWS_AS((void)(default_placer{.time_limit_s = 1e9, .node_limit = 0, .decompose = false, .order_search_passes = 1000}.place(capped)),
                  error);
}

TEST_CASE("order search on random sets: valid, never above its start, the same result twice") {
  std::vector<instance_options> kinds = {
      {.buffers = 60, .steps = 30, .max_size = 1000},
      {.buffers = 80, .steps = 40, .max_size = 4096, .alignments = true},
      {.buffers = 50, .steps = 25, .max_size = 300, .global_alignment = 16, .pinned = 0.2},
      {.buffers = 40, .steps = 20, .max_size = 50, .pinned = 0.4, .zero_sizes = true},
  };
  int better = 0;
  for (std::size_t k = 0; k < kinds.size(); ++k)
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
      const auto p = random_instance(500 * k + seed, kinds[k]);
      INFO("kind " << k << " seed " << seed);
      const auto order = place::detail::first_fit_by_allocation::order(p);
      const auto start = place::detail::arena_of(p, place::detail::place_in_order(p, order, place::detail::fit::best));
      const auto a = place::detail::improve_insertion_order(p, order, place::detail::fit::best, 0, deadline::never(), 200, 64);
      const auto b = place::detail::improve_insertion_order(p, order, place::detail::fit::best, 0, deadline::never(), 200, 64);
      const auto why = check(p, as_placement(a));
      CHECK_MESSAGE(!why, (why ? *why : std::string()));
      CHECK(a.arena <= start);
      CHECK(a.arena >= arena_lower_bound(p));
      CHECK(a.offsets == b.offsets);
      CHECK(a.passes <= 200);
      better += a.arena < start;
      // An expired deadline: the first pass stacks what it could not place, and no move is tried.
      const auto cut = place::detail::improve_insertion_order(p, order, place::detail::fit::best, 0, deadline::after(0), 200, 64);
      CHECK(!check(p, as_placement(cut)));
      CHECK(cut.passes == 0);
    }
  CHECK(better > 0);  // the moves do lower some arenas
}

TEST_CASE("place_rest with a ceiling: the same offsets up to it, stops at the first buffer above it") {
  int stopped = 0;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    const auto p = random_instance(seed, {.buffers = 60, .steps = 30, .max_size = 1000, .alignments = seed % 2 == 0});
    INFO("seed " << seed);
    const auto order = place::detail::first_fit_by_allocation::order(p);
    const auto full = place::detail::place_in_order(p, order, place::detail::fit::best);
    const auto arena = place::detail::arena_of(p, full);
    const place::detail::time_axis axis(p);
    const auto from_scratch = [&](std::int64_t ceiling, bool& over) {
      place::detail::occupancy_index index(axis);
      std::vector<std::int64_t> offsets(p.buffers.size(), place::detail::unplaced);
      place::detail::place_rest(index, p, order, 0, place::detail::fit::best, offsets, static_cast<const deadline*>(nullptr), nullptr, ceiling, &over);
      return offsets;
    };
    bool over = false;
    CHECK(from_scratch(arena, over) == full);
    CHECK(!over);
    // One byte lower: the loop stops at the first buffer whose end passes it; every buffer placed
    // before that one has the offset of the full pass.
    const auto below = from_scratch(arena - 1, over);
    REQUIRE(over);
    ++stopped;
    std::size_t k = 0;
    while (k < order.size() && below[order[k]] + p.buffers[order[k]].size <= arena - 1) {
      CHECK(below[order[k]] == full[order[k]]);
      ++k;
    }
    REQUIRE(k < order.size());
    CHECK(full[order[k]] + p.buffers[order[k]].size == arena);  // the first buffer the full pass put on top
    // From the middle: an index holding the first half at the full pass's offsets places the rest as
    // the full pass did (the order search's passes start so, from a copy of its checkpoint).
    place::detail::occupancy_index index(axis);
    auto offsets = std::vector<std::int64_t>(p.buffers.size(), place::detail::unplaced);
    for (std::size_t q = 0; q < order.size() / 2; ++q) {
      const auto& b = p.buffers[order[q]];
      offsets[order[q]] = full[order[q]];
      index.insert(b.lower, b.upper, full[order[q]], full[order[q]] + b.size);
    }
    place::detail::place_rest(index, p, order, order.size() / 2, place::detail::fit::best, offsets, static_cast<const deadline*>(nullptr), nullptr);
    CHECK(offsets == full);
  }
  CHECK(stopped == 12);
}

TEST_CASE("bad input is rejected by every placer") {
  buffer_problem p;
  p.buffers = {{3, 3, 10}};
  for (const auto& name : offline) CHECK_THROWS_AS((void)by_name(name).place(p), error);
  p.buffers = {{0, 3, -1}};
  CHECK_THROWS_AS((void)greedy_by_size{}.place(p), error);
  p.buffers = {{0, 3, 4, 3}};
  CHECK_THROWS_AS((void)exact{}.place(p), error);
}

TEST_CASE("empty problems") {
  buffer_problem p;
  for (const auto& name : offline) {
    const auto pl = by_name(name).place(p);
    CHECK(pl.arena == 0);
    CHECK(pl.offsets.empty());
  }
}
