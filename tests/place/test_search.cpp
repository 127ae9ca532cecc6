// The search machinery behind exact and default_placer: the occupancy index, the canonical search at
// exact targets, window bounds, decision / minimisation modes, time decomposition, and deadlines that
// cut the work short but still return valid placements (no timing assertions: only validity).
#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <thread>
#include <numeric>
#include <optional>
#include <algorithm>
#include <random>
#include <set>

#include <memplan/io/buffers_csv.hpp>
#include <memplan/place/placers.hpp>
#include "library_placers.hpp"  // apps/memplan (this program's one)
#include "place_csv.hpp"  // apps/memplan: what `memplan place` runs
#include <memplan/place/window_bound.hpp>

#include "instances.hpp"
#include "../support/sanitizer_scale.hpp"
#include "../support/small_stack.hpp"

using namespace memplan;
using namespace memplan::place;
using testing::brute_force_arena;
using testing::random_instance;

namespace {

// Reference gap search: every placed buffer overlapping in time, one by one (the textbook O(n^2)).
std::vector<std::int64_t> naive_place_in_order(const buffer_problem& p, const std::vector<std::size_t>& order, place::detail::fit rule) {
  std::vector<std::int64_t> offsets(p.buffers.size(), place::detail::unplaced);
  std::vector<std::size_t> placed;
  for (std::size_t i = 0; i < p.buffers.size(); ++i)
    if (p.buffers[i].fixed_offset >= 0) {
      offsets[i] = p.buffers[i].fixed_offset;
      placed.push_back(i);
    }
  std::vector<std::pair<std::int64_t, std::int64_t>> occupied;
  for (auto i : order) {
    if (offsets[i] != place::detail::unplaced) continue;
    const auto& b = p.buffers[i];
    if (b.size == 0) { offsets[i] = 0; continue; }
    occupied.clear();
    for (auto j : placed) {
      const auto& q = p.buffers[j];
      if (q.size > 0 && q.lower < b.upper && b.lower < q.upper) occupied.emplace_back(offsets[j], offsets[j] + q.size);
    }
    offsets[i] = place::detail::find_gap(occupied, b.size, effective_alignment(p, b), rule);
    placed.push_back(i);
  }
  return offsets;
}

// A training-step-like list repeated `copies` times in time, with weights live throughout.
buffer_problem micro_batches(int copies, std::uint64_t seed) {
  const auto one = random_instance(seed, {.buffers = 40, .steps = 20, .max_size = 500});
  buffer_problem p;
  p.buffers.push_back({0, 20 * copies, 64});  // a weight
  p.buffers.push_back({0, 20 * copies, 32});
  for (int c = 0; c < copies; ++c)
    for (auto b : one.buffers) {
      b.lower += 20 * c;
      b.upper += 20 * c;
      p.buffers.push_back(b);
    }
  return p;
}

// The same, every micro-batch with its sizes scaled by its own factor in [0.90, 1.10] (sequence
// lengths that differ): no two pieces are alike, all have the same lifetimes.
buffer_problem jittered_micro_batches(int copies, std::uint64_t seed) {
  const auto one = random_instance(seed, {.buffers = 60, .steps = 20, .max_size = 500});
  buffer_problem p;
  p.buffers.push_back({0, 20 * copies, 64});
  std::mt19937_64 g(seed);
  for (int c = 0; c < copies; ++c) {
    const auto f = 90 + static_cast<std::int64_t>(g() % 21);
    for (auto b : one.buffers) {
      b.lower += 20 * c;
      b.upper += 20 * c;
      b.size = b.size * f / 100;
      p.buffers.push_back(b);
    }
  }
  return p;
}

}  // namespace

TEST_CASE("occupancy index: greedy gap search equals the naive one") {
  std::mt19937_64 g(5);
  int compared = 0;
  for (const auto& kind : testing::small_instance_kinds())
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
      auto o = kind;
      o.buffers *= 6;
      o.steps *= 4;
      const auto p = random_instance(seed * 97, o);
      auto order = place::detail::free_buffers(p);
      std::shuffle(order.begin(), order.end(), g);
      for (auto rule : {place::detail::fit::first, place::detail::fit::best}) {
        CHECK(place::detail::place_in_order(p, order, rule) == naive_place_in_order(p, order, rule));
        ++compared;
      }
    }
  CHECK(compared == 240);
  // Training-shaped lists (weights live throughout, many ranges live at once: the gap search narrows
  // windows set by set and its cursors skip ranges, which short random lists barely exercise), in the
  // decreasing-size order of best_fit and a shuffled one, with a global alignment.
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    auto p = micro_batches(12, seed);
    p.alignment = seed % 2 ? 1 : 64;
    auto order = place::detail::free_buffers(p);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return p.buffers[a].size > p.buffers[b].size; });
    for (int shuffled = 0; shuffled < 2; ++shuffled) {
      if (shuffled) std::shuffle(order.begin(), order.end(), g);
      for (auto rule : {place::detail::fit::first, place::detail::fit::best})
        CHECK(place::detail::place_in_order(p, order, rule) == naive_place_in_order(p, order, rule));
    }
  }
}

TEST_CASE("canonical search: feasible exactly at the optimum, under every preorder") {
  const auto kinds = testing::small_instance_kinds();
  using outcome = place::detail::canonical_search::outcome;
  for (std::size_t k = 0; k < kinds.size(); ++k)
    for (std::uint64_t seed = 1; seed <= 15; ++seed) {
      const auto p = random_instance(seed * 13 + k, kinds[k]);
      const auto opt = brute_force_arena(p);
      const auto never = deadline::never();
      place::detail::canonical_search s(p, never);
      REQUIRE(s.ready());
      s.set_hint(greedy_by_size{}.place(p).offsets);
      INFO("kind " << k << " seed " << seed << " optimum " << opt);
      for (const char* keys : {"WAT", "TAW", "TWA", "O"}) {
        std::vector<std::int64_t> offsets;
        CHECK(s.decide(opt, keys, -1, never, offsets) == outcome::found);
        buffer_placement pl;
        pl.arena = place::detail::arena_of(p, offsets);
        pl.offsets = std::move(offsets);  // moved: a copy into the empty vector trips g++ 12's -Wnonnull at -O3
        CHECK(!check(p, pl));
        CHECK(pl.arena <= opt);
        if (opt > 0) CHECK(s.decide(opt - 1, keys, -1, never, offsets) == outcome::infeasible);
        // Again, with the failure tables of the first runs in place: same answers.
        CHECK(s.decide(opt, keys, -1, never, offsets) == outcome::found);
      }
    }
}

TEST_CASE("canonical search: a perfect packing over hundreds of sections is found at its height") {
  // Lanes of random heights stacked to H, each cut in time into buffers of its height (some lanes one
  // buffer over the whole horizon, as weights): max load is H at every step, so H is the optimum. The
  // span checks read section maxima through blocks of 128 sections; these lists have several hundred
  // sections, which the brute-force instances above never reach. A check that over-counted would prune
  // the packing: guided by it (preorder "O", the lanes' offsets as the hint) the search must find it,
  // and unguided it may run out of nodes but must never call H infeasible.
  using outcome = place::detail::canonical_search::outcome;
  int sections_seen = 0;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    std::mt19937_64 g(seed);
    const auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(g); };
    constexpr std::int64_t steps = 1000;
    buffer_problem p;
    std::vector<std::int64_t> lane_offsets;
    std::int64_t height = 0;
    const auto lanes = pick(5, 8);
    for (std::int64_t l = 0; l < lanes; ++l) {
      const auto size = pick(1, 1000);
      if (pick(0, 4) == 0) {
        p.buffers.push_back({0, steps, size});
        lane_offsets.push_back(height);
      } else {
        for (std::int64_t t = 0; t < steps;) {
          const auto end = std::min(steps, t + pick(1, 30));
          p.buffers.push_back({t, end, size});
          lane_offsets.push_back(height);
          t = end;
        }
      }
      height += size;
    }
    std::set<std::int64_t> ends;  // the search's sections: one per distinct end of a buffer
    for (const auto& b : p.buffers) ends.insert(b.upper);
    sections_seen = std::max(sections_seen, static_cast<int>(ends.size()));
    INFO("seed " << seed << ": " << p.buffers.size() << " buffers, " << ends.size() << " sections, height " << height);
    const auto never = deadline::never();
    place::detail::canonical_search s(p, never);
    REQUIRE(s.ready());
    s.set_hint(lane_offsets);
    std::vector<std::int64_t> offsets;
    REQUIRE(s.decide(height, "O", 100'000, never, offsets) == outcome::found);
    buffer_placement pl;
    pl.arena = place::detail::arena_of(p, offsets);
    pl.offsets = std::move(offsets);  // moved: a copy into the empty vector trips g++ 12's -Wnonnull at -O3
    CHECK(!check(p, pl));
    CHECK(pl.arena == height);
    CHECK(s.decide(height - 1, "O", 100'000, never, offsets) == outcome::infeasible);
    for (const char* keys : {"WAT", "TAW"}) CHECK(s.decide(height, keys, 20'000, never, offsets) != outcome::infeasible);
  }
  CHECK(sections_seen > 2 * 128);
}

TEST_CASE("canonical search: a dive through 1,042 buffers on a 256 KB thread stack (no recursion)") {
  // idealloc's resnet50: one dive under "WAT" places every buffer at max load, 1,228 levels deep.
  // The recursive search this replaced overflowed a 256 KB stack here at -O2 (and 8 MB at -O0 under ASan).
  const auto p = io::read_buffers_csv_file(std::string(MEMPLAN_DATA_DIR) + "/benchmarks/idealloc/resnet50.csv").problem;
  const std::int64_t max_load = 1515472556;
  using outcome = place::detail::canonical_search::outcome;
  outcome r = outcome::aborted;
  std::size_t depth = 0;
  std::vector<std::int64_t> offsets;
  buffer_placement planned;
  REQUIRE(testing::run_on_small_stack(256 * 1024, [&] {
    const auto never = deadline::never();
    place::detail::canonical_search s(p, never);
    r = s.decide(max_load, "WAT", 5000, never, offsets);
    depth = s.max_depth();
    planned = exact{.time_limit_s = 1e9, .node_limit = 20000, .accept = 0}.place(p);
  }));
  REQUIRE(r == outcome::found);
  CHECK(depth > 1000);
  buffer_placement pl;
  pl.offsets = offsets;
  pl.arena = place::detail::arena_of(p, offsets);
  CHECK(!check(p, pl));
  CHECK(pl.arena == max_load);
  CHECK(!check(p, planned));
  CHECK(planned.arena == max_load);
  CHECK(planned.optimal);
}

TEST_CASE("window bounds never exceed the optimum") {
  int above_max_load = 0, total = 0;
  // Under the sanitizer every third seed (the brute force is the cost).
  for (std::uint64_t seed = 1; seed <= 120; seed += memplan::testing::sanitizer_stride(3)) {
    // Per-buffer alignments: small random lists whose optimum lies above the (aligned) max load.
    const auto p = random_instance(seed, {.buffers = 7, .steps = 6, .max_size = 64, .alignments = true});
    const auto opt = brute_force_arena(p);
    const auto w = window_lower_bound(p);
    INFO("seed " << seed);
    CHECK(w.bytes <= opt);
    CHECK(w.bytes >= arena_lower_bound(p));
    above_max_load += w.bytes > arena_lower_bound(p);
    ++total;
  }
  MESSAGE("window bound above max load on " << above_max_load << " of " << total << " instances");
  CHECK(above_max_load > total / 2);  // measured: 72 of the first 100 seeds
}

TEST_CASE("window bounds set aside the buffers live throughout a window (the weights of a training list)") {
  // A small list whose optimum lies above max load, under 500 weights live over the whole horizon: every
  // window holds more than max_window_buffers (400) buffers, so before the weights were set aside no
  // window was searched. The weights go to the bottom of an optimal placement (their addresses are
  // busy at every step), so the optimum is the small list's plus their bytes, and the bound reaches it.
  int proved = 0, total = 0;
  for (std::uint64_t seed = 1; seed <= 60 && total < 6; ++seed) {
    const auto small = random_instance(seed * 7, {.buffers = 7, .steps = 6, .max_size = 64, .alignments = true});
    const auto opt = brute_force_arena(small);
    if (opt == arena_lower_bound(small)) continue;
    ++total;
    INFO("seed " << seed * 7 << ": optimum " << opt << ", max load " << arena_lower_bound(small));
    auto p = small;
    for (int k = 0; k < 500; ++k) p.buffers.push_back({0, 6, 64 * (1 + k % 3)});  // sizes: multiples of every alignment
    std::int64_t weights = 0;
    for (std::size_t i = small.buffers.size(); i < p.buffers.size(); ++i) weights += p.buffers[i].size;
    const auto w = window_lower_bound(p);
    CHECK(w.bytes <= opt + weights);  // never above the optimum
    CHECK(w.bytes >= arena_lower_bound(p));
    proved += w.bytes == opt + weights;
    if (w.bytes > arena_lower_bound(p)) CHECK(w.how.find("live throughout it") != std::string::npos);
    // A weight whose size is not a multiple of the window's alignments stays in the window; the bound
    // stays below what a placement reaches.
    auto odd = p;
    odd.buffers.back().size = 65;
    CHECK(window_lower_bound(odd).bytes <= default_placer{.time_limit_s = 1e9, .node_limit = 1000}.place(odd).arena);
  }
  CHECK(total == 6);
  CHECK(proved == total);
}

TEST_CASE("decision mode stops at the first fit, accept = 0 minimises, a capacity under the bound is refused") {
  buffer_problem p;
  p.buffers = {{4, 6, 4}, {5, 6, 6}, {1, 2, 5}, {0, 6, 3}, {0, 5, 4}};  // greedy 17, optimum 13
  p.capacity = 16;
  const auto fits = exact{.time_limit_s = 1e9, .node_limit = 100000}.place(p);
  CHECK(!check(p, fits));
  CHECK(fits.arena <= 16);
  CHECK(fits.note.find("accepted") != std::string::npos);
  const auto best = exact{.time_limit_s = 1e9, .node_limit = 100000, .accept = 0}.place(p);
  CHECK(best.arena == 13);
  CHECK(best.optimal);
  const auto d = default_placer{.time_limit_s = 1e9, .node_limit = 100000}.place(p);
  CHECK(d.arena <= 16);
  p.capacity = 12;
  CHECK_THROWS_AS((void)(exact{.time_limit_s = 1e9, .node_limit = 100000}.place(p)), error);
  CHECK_THROWS_AS((void)(default_placer{.time_limit_s = 1e9, .node_limit = 100000}.place(p)), error);
}

TEST_CASE("minimisation proves optima above max load by exhaustion") {
  int above = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    const auto p = random_instance(seed * 7, {.buffers = 7, .steps = 6, .max_size = 64, .alignments = true});
    const auto opt = brute_force_arena(p);
    const auto pl = exact{.time_limit_s = 1e9}.place(p);
    INFO("seed " << seed);
    CHECK(pl.arena == opt);
    CHECK(pl.optimal);
    CHECK(pl.lower_bound == opt);
    above += opt > arena_lower_bound(p);
  }
  CHECK(above > 0);  // some optima lie above max load: the bound came from exhausted searches
}

TEST_CASE("minimise_to_accept: below an unreachable accept it still descends, above it it stops at the first fit") {
  // accept = max load where the optimum lies above it: decision mode refutes it and keeps its
  // incumbent; minimising to accept goes on down to the optimum. accept at the optimum or above: the
  // result fits it.
  int refuted = 0, lower = 0;
  for (std::uint64_t seed = 1; seed <= 60; ++seed) {
    const auto p = random_instance(seed * 7, {.buffers = 7, .steps = 6, .max_size = 64, .alignments = true});
    const auto opt = brute_force_arena(p);
    const auto bound = arena_lower_bound(p);
    INFO("seed " << seed << ", optimum " << opt << ", max load " << bound);
    const auto decided = exact{.time_limit_s = 1e9, .accept = bound}.place(p);
    const auto minimised = exact{.time_limit_s = 1e9, .accept = bound, .minimise_to_accept = true}.place(p);
    CHECK(!check(p, decided));
    CHECK(!check(p, minimised));
    CHECK(minimised.arena == opt);  // every search here finishes: the optimum, proven
    CHECK(minimised.lower_bound == opt);
    CHECK(minimised.arena <= decided.arena);
    refuted += opt > bound;
    lower += minimised.arena < decided.arena;
    for (const auto accept : {opt, opt + 8}) {
      const auto fits = exact{.time_limit_s = 1e9, .accept = accept, .minimise_to_accept = true}.place(p);
      CHECK(!check(p, fits));
      CHECK(fits.arena <= accept);
    }
  }
  CHECK(refuted > 0);
  CHECK(lower > 0);  // decision mode kept a greedy incumbent above the optimum there
  MESSAGE("accept = max load below the optimum on " << refuted << " of 60; lower than decision mode's arena on " << lower);
}

TEST_CASE("a context's arena_target: exact and default_placer minimise down to it, no further, and an own accept wins") {
  // plan() sets it to the budget where it places without the limit (a checkpointer or offloader in the
  // pipeline): an arena within the budget ends the search, one above it is minimised as before.
  int stopped_above_optimum = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const auto p = random_instance(seed * 11, {.buffers = 7, .steps = 6, .max_size = 64, .alignments = true});
    const auto opt = brute_force_arena(p);
    const auto bound = arena_lower_bound(p);
    INFO("seed " << seed << ", optimum " << opt << ", max load " << bound);
    plan_context ctx;
    ctx.time_limit_s = 1e9;
    for (const auto target : {opt, opt + 8, opt + 64}) {
      ctx.arena_target = target;
      const auto e = exact{}.place(p, ctx);
      const auto d = default_placer{}.place(p, ctx);
      CHECK(!check(p, e));
      CHECK(!check(p, d));
      CHECK(e.arena <= target);
      CHECK(d.arena <= target);
      stopped_above_optimum += e.arena > opt;
    }
    ctx.arena_target = bound;  // at or below the optimum: minimised to the optimum, as without a target
    CHECK(exact{}.place(p, ctx).arena == opt);
    const auto own = exact{.accept = 0}.place(p, {.arena_target = opt + 64, .time_limit_s = 1e9});
    CHECK(own.arena == opt);  // the placer's own accept (0: minimise) is kept
  }
  CHECK(stopped_above_optimum > 0);
  MESSAGE("an arena above the optimum, within the target, ended the search " << stopped_above_optimum << " times");
}

TEST_CASE("push_down: every buffer on the highest end before it in the order that it overlaps, and smaller sizes give no higher offsets") {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    auto p = random_instance(seed, {.buffers = 80, .steps = 40, .max_size = 1000, .alignments = seed % 2 == 0});
    if (seed % 4 == 1) {  // a pin: the pushed-down buffers rest on it too
      p.buffers[3].fixed_offset = 4096;
    }
    INFO("seed " << seed);
    std::mt19937_64 g(seed);
    std::vector<std::size_t> order(p.buffers.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::shuffle(order.begin(), order.end(), g);
    const auto offsets = place::detail::push_down(p, order);
    buffer_placement pl;
    pl.arena = place::detail::arena_of(p, offsets);
    pl.offsets = offsets;
    CHECK(!check(p, pl));
    // The definition, pair by pair.
    std::vector<char> before(p.buffers.size(), 0);
    for (std::size_t i = 0; i < p.buffers.size(); ++i) before[i] = p.buffers[i].fixed_offset >= 0;
    for (auto i : order) {
      const auto& b = p.buffers[i];
      if (b.fixed_offset >= 0) continue;
      std::int64_t h = 0;
      for (std::size_t j = 0; j < p.buffers.size(); ++j) {
        const auto& q = p.buffers[j];
        if (before[j] && q.size > 0 && q.lower < b.upper && b.lower < q.upper) h = std::max(h, offsets[j] + q.size);
      }
      CHECK(offsets[i] == (b.size == 0 ? 0 : align_up(h, effective_alignment(p, b))));
      before[i] = 1;
    }
    // The same order over smaller sizes (a family member with a smaller factor): no offset rises.
    auto smaller = p;
    for (auto& b : smaller.buffers)
      if (b.fixed_offset < 0) b.size = b.size * static_cast<std::int64_t>(80 + g() % 21) / 100;
    const auto shrunk = place::detail::push_down(smaller, order);
    for (std::size_t i = 0; i < p.buffers.size(); ++i) CHECK(shrunk[i] <= offsets[i]);
  }
}

TEST_CASE("time decomposition: micro-batches above the weights, repeated pieces placed once") {
  const auto p = micro_batches(5, 3);
  const auto tp = place::detail::split_in_time(p);
  CHECK(tp.global.size() == 2);
  CHECK(tp.pieces.size() >= 5);
  const auto pl = default_placer{.time_limit_s = 1e9, .node_limit = 200000}.place(p);
  CHECK(!check(p, pl));
  CHECK(pl.arena >= arena_lower_bound(p));
  const auto whole = default_placer{.time_limit_s = 1e9, .node_limit = 200000, .decompose = false}.place(p);
  CHECK(!check(p, whole));
  // Pins switch the decomposition off.
  auto pinned = p;
  pinned.buffers[5].fixed_offset = 0;
  pinned.buffers[0].fixed_offset = 4096;
  CHECK(place::detail::split_in_time(pinned).pieces.empty());
  CHECK(!check(pinned, default_placer{}.place(pinned)));
}

TEST_CASE("time decomposition: global buffers and one piece: the rest is searched alone, and nothing is lost") {
  // Any placement of the whole problem, with the global buffers' addresses squeezed out, places the
  // rest that many bytes lower: the optimum is the rest's optimum plus their bytes. Checked against
  // brute force on small lists with two or three buffers live throughout.
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    // A chain of overlapping lifetimes over steps [0, 6) (one piece), and two or three buffers live
    // over all of them.
    std::mt19937_64 g(seed);
    place::buffer_problem p;
    for (std::int64_t i = 0; i < 5; ++i)
      p.buffers.push_back({.lower = i, .upper = std::min<std::int64_t>(6, i + 2 + static_cast<std::int64_t>(g() % 2)),
                           .size = 1 + static_cast<std::int64_t>(g() % 12)});
    for (std::uint64_t k = 0; k < 2 + seed % 2; ++k) p.buffers.push_back({.lower = 0, .upper = 6, .size = 1 + static_cast<std::int64_t>(g() % 9)});
    std::shuffle(p.buffers.begin(), p.buffers.end(), g);
    const auto tp = place::detail::split_in_time(p);
    REQUIRE(tp.pieces.size() == 1);
    CAPTURE(seed);
    const auto pl = default_placer{.time_limit_s = 1e9, .node_limit = 200000}.place(p);
    CHECK(!check(p, pl));
    CHECK(pl.arena == brute_force_arena(p));
    CHECK(pl.placer == "default(pieces)");
    CHECK(pl.note.find("the rest placed alone above " + std::to_string(tp.global.size()) + " global buffers") != std::string::npos);
    // Deterministic: the same placement again.
    CHECK(default_placer{.time_limit_s = 1e9, .node_limit = 200000}.place(p).offsets == pl.offsets);
    // With an alignment that a global buffer's size is not a multiple of, padding below the rest
    // could be lost: the whole problem is searched, as without global buffers.
    auto aligned = p;
    aligned.alignment = 4;
    aligned.buffers.push_back({.lower = 0, .upper = 6, .size = 3});
    const auto whole = default_placer{.time_limit_s = 1e9, .node_limit = 200000}.place(aligned);
    CHECK(!check(aligned, whole));
    CHECK(whole.placer != "default(pieces)");
    CHECK(whole.arena == brute_force_arena(aligned));
  }
}

TEST_CASE("time decomposition: pieces with the same lifetimes take a searched member's layout") {
  // Seed 28: 8 micro-batches, 8 distinct pieces in one family of lifetimes; the model's layout (the
  // member with the highest bound: its buffers by offset, pushed down) brings all 7 others within the
  // target without a search.
  const auto p = jittered_micro_batches(8, 28);
  const auto pl = default_placer{.time_limit_s = 1e9, .node_limit = 20000}.place(p);
  CHECK(!check(p, pl));
  CHECK(pl.arena == arena_lower_bound(p));
  CHECK(pl.placer == "default(pieces)");
  CHECK(pl.note.find("8 distinct in 1 families of lifetimes, 8 of them within the largest piece bound, 7 by another member's layout") !=
        std::string::npos);
  // Same lifetimes, other sizes: the layout carried over is valid for any sizes.
  const auto a = jittered_micro_batches(8, 29);
  CHECK(!check(a, default_placer{.time_limit_s = 1e9, .node_limit = 500}.place(a)));
}

TEST_CASE("deadlines cut the work short and the best placement so far is valid") {
  // A large list: some passes cannot finish in the budgets below.
  auto big = random_instance(99, {.buffers = 5000, .steps = 1000, .max_size = 1 << 20, .alignments = true});
  for (double limit : {0.0, 1e-4, 0.01}) {
    INFO("limit " << limit);
    const auto d = default_placer{.time_limit_s = limit}.place(big);
    CHECK(!check(big, d));
    CHECK(d.arena >= d.lower_bound);
    const auto e = exact{.time_limit_s = limit == 0 ? 1e-4 : limit}.place(big);
    CHECK(!check(big, e));
  }
  // A greedy pass whose deadline has passed stacks what it did not place, and says so.
  const auto expired = deadline::after(0);
  const auto cut = greedy_by_breadth{}.place(big, expired);
  CHECK(!check(big, cut));
  CHECK(cut.note.find("time limit hit") != std::string::npos);
  const auto sweep = place::detail::allocator_sweep{}.offsets(big, expired);
  buffer_placement pl;
  pl.offsets = sweep;
  pl.arena = place::detail::arena_of(big, sweep);
  CHECK(!check(big, pl));
  // exact with time_limit_s = 0: the heuristics run to the end, no search.
  const auto heuristics = exact{.time_limit_s = 0}.place(big);
  CHECK(!check(big, heuristics));
  CHECK(heuristics.arena <= greedy_by_breadth{}.place(big).arena);
  // The MiniMalloc instance F cut after a few nodes: still a valid placement with its gap.
  auto f = io::read_buffers_csv_file(std::string(MEMPLAN_DATA_DIR) + "/benchmarks/minimalloc/F.1048576.csv").problem;
  const auto early = exact{.time_limit_s = 1e9, .node_limit = 50}.place(f);
  CHECK(!check(f, early));
  if (!early.optimal) CHECK(early.note.find("gap") != std::string::npos);
}

TEST_CASE("blocks_by_address: the lowest free block that holds a size at an alignment, as a scan finds it") {
  using place::detail::blocks_by_address;
  std::mt19937_64 g(5);
  blocks_by_address tree;
  std::map<std::int64_t, std::pair<std::int64_t, std::uint32_t>> blocks;  // start -> (length, id)
  std::uint32_t next_id = 0;
  for (int step = 0; step < 20000; ++step) {
    const auto start = std::uniform_int_distribution<std::int64_t>(0, 1 << 20)(g);
    if (g() % 3 != 0 || blocks.empty()) {  // insert a block that overlaps no other
      const auto length = std::uniform_int_distribution<std::int64_t>(1, 4096)(g);
      auto after = blocks.lower_bound(start);
      const bool clear = (after == blocks.end() || after->first >= start + length) &&
                         (after == blocks.begin() || std::prev(after)->first + std::prev(after)->second.first <= start);
      if (clear) {
        tree.insert(start, length, next_id);
        blocks[start] = {length, next_id++};
      }
    } else {  // erase the block at or after start (else the first)
      auto it = blocks.lower_bound(start);
      if (it == blocks.end()) it = blocks.begin();
      tree.erase(it->first);
      blocks.erase(it);
    }
    const auto size = std::uniform_int_distribution<std::int64_t>(1, 4096)(g);
    const auto align = std::int64_t{1} << std::uniform_int_distribution<int>(0, 8)(g);
    auto expected = blocks_by_address::none;
    for (const auto& [s, b] : blocks)
      if (align_up(s, align) + size <= s + b.first) {
        expected = b.second;
        break;
      }
    REQUIRE(tree.lowest_fit(size, align) == expected);
  }
}

TEST_CASE("best_fit_sweep: each buffer takes the smallest free block that holds it, and stacks above placed buffers") {
  // Step 0: a (100), b (10), c (50), d (10) from offset 0 up; step 1: a and c end, leaving free blocks
  // of 100 and 50 bytes; step 2: e (50 bytes) takes the 50-byte block (first fit would take offset 0),
  // f (60) the 100-byte one, g (8, aligned to 64) the rest of it at 64.
  buffer_problem p;
  p.buffers = {{0, 1, 100}, {0, 3, 10}, {0, 1, 50}, {0, 3, 10}, {2, 3, 50}, {2, 3, 60}, {2, 3, 8, 64}};
  const auto never = deadline::never();
  const auto o = place::detail::allocator_sweep{}.offsets(p, never);
  CHECK(o == std::vector<std::int64_t>{0, 100, 110, 160, 110, 0, 64});
  // Stacked above what is placed: the same buffers above a pinned one, shifted by its top (aligned to
  // the largest alignment).
  auto q = p;
  q.buffers.push_back({0, 3, 30, 1, 0});
  const auto s = place::detail::allocator_sweep{}.offsets(q, never);
  for (std::size_t i = 0; i < p.buffers.size(); ++i) CHECK(s[i] == o[i] + 64);
  // Valid on random sets with alignments and pins, and the same offsets as the rule replayed naively:
  // free blocks in a plain list (merged with their neighbours on a free, the top lowered when the
  // highest block is freed), a buffer taking the first block that holds it among the five smallest of
  // at least its size (ties: lowest start), else the smallest of at least size + alignment - 1, else
  // the top; the allocations of a step by index, or larger / longer-lived first (then by index).
  using place::detail::sweep_ties;
  const auto naive = [](const buffer_problem& r, sweep_ties ties = sweep_ties::by_index) {
    std::int64_t base = 0, align = r.alignment;
    for (const auto& b : r.buffers) {
      if (b.fixed_offset >= 0) base = std::max(base, b.fixed_offset + b.size);
      align = std::max(align, effective_alignment(r, b));
    }
    base = align_up(base, align);
    std::vector<std::int64_t> o(r.buffers.size(), -1);
    std::vector<std::pair<std::int64_t, std::int64_t>> free_blocks;  // [start, end), relative to base
    std::int64_t top = 0;
    std::int64_t last = 0;
    for (const auto& b : r.buffers) last = std::max(last, b.upper);
    for (std::int64_t t = 0; t <= last; ++t) {
      for (std::size_t i = 0; i < r.buffers.size(); ++i) {  // frees first
        const auto& b = r.buffers[i];
        if (b.upper != t || b.fixed_offset >= 0 || b.size == 0) continue;
        auto start = o[i] - base, end = start + b.size;
        for (bool merged = true; merged;) {
          merged = false;
          for (auto it = free_blocks.begin(); it != free_blocks.end(); ++it)
            if (it->second == start || it->first == end) {
              start = std::min(start, it->first);
              end = std::max(end, it->second);
              free_blocks.erase(it);
              merged = true;
              break;
            }
        }
        if (end == top) top = start;
        else free_blocks.emplace_back(start, end);
      }
      std::vector<std::size_t> starting;
      for (std::size_t i = 0; i < r.buffers.size(); ++i)
        if (r.buffers[i].lower == t) starting.push_back(i);
      const auto key = [&](std::size_t i) {
        const auto& b = r.buffers[i];
        return ties == sweep_ties::by_index ? 0 : ties == sweep_ties::larger_first ? b.size : b.upper - b.lower;
      };
      std::stable_sort(starting.begin(), starting.end(), [&](std::size_t x, std::size_t y) { return key(x) > key(y); });
      for (const auto i : starting) {
        const auto& b = r.buffers[i];
        if (b.fixed_offset >= 0) continue;
        if (b.size == 0) { o[i] = 0; continue; }
        const auto a = effective_alignment(r, b);
        auto by_size = free_blocks;
        std::sort(by_size.begin(), by_size.end(), [](const auto& x, const auto& y) {
          return std::pair(x.second - x.first, x.first) < std::pair(y.second - y.first, y.first);
        });
        std::optional<std::pair<std::int64_t, std::int64_t>> take;
        int looked = 0;
        for (const auto& f : by_size) {
          if (f.second - f.first < b.size) continue;
          if (looked++ == 5) break;
          if (align_up(f.first, a) + b.size <= f.second) { take = f; break; }
        }
        if (!take)
          for (const auto& f : by_size)
            if (f.second - f.first >= b.size + a - 1) { take = f; break; }
        std::int64_t pos;
        if (take) {
          pos = align_up(take->first, a);
          free_blocks.erase(std::find(free_blocks.begin(), free_blocks.end(), *take));
          if (take->first < pos) free_blocks.emplace_back(take->first, pos);
          if (pos + b.size < take->second) free_blocks.emplace_back(pos + b.size, take->second);
        } else {
          pos = align_up(top, a);
          if (pos > top) free_blocks.emplace_back(top, pos);
          top = pos + b.size;
        }
        o[i] = base + pos;
      }
    }
    for (std::size_t i = 0; i < r.buffers.size(); ++i)
      if (r.buffers[i].fixed_offset >= 0) o[i] = r.buffers[i].fixed_offset;
    return o;
  };
  CHECK(naive(p) == o);
  CHECK(naive(q) == s);
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    const auto r = random_instance(seed, {.buffers = 200, .steps = 60, .max_size = 1000, .alignments = true, .pinned = 0.1, .zero_sizes = true});
    buffer_placement pl;
    pl.offsets = place::detail::allocator_sweep{}.offsets(r, never);
    pl.arena = place::detail::arena_of(r, pl.offsets);
    INFO("seed " << seed);
    CHECK(!check(r, pl));
    CHECK(pl.offsets == naive(r));
    for (const auto ties : {sweep_ties::larger_first, sweep_ties::longer_first})
      CHECK(place::detail::allocator_sweep{.ties = ties}.offsets(r, never) == naive(r, ties));
    buffer_placement ff;  // first fit: stacked above the pins too
    ff.offsets = place::detail::allocator_sweep{.rule = place::detail::fit::first}.offsets(r, never);
    ff.arena = place::detail::arena_of(r, ff.offsets);
    CHECK(!check(r, ff));
  }
  // First fit with a step's allocations larger first places as first_fit_by_allocation (the lowest gap
  // among the buffers placed before and live at the start) when nothing is pinned.
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    const auto r = random_instance(seed, {.buffers = 300, .steps = 80, .max_size = 5000, .alignments = seed % 2 == 0, .zero_sizes = true});
    INFO("seed " << seed);
    const auto first = place::detail::allocator_sweep{.rule = place::detail::fit::first, .ties = sweep_ties::larger_first};
    const auto greedy = place::detail::first_fit_by_allocation{}.by_greedy_pass(r, never);
    CHECK(first.offsets(r, never) == greedy);
    CHECK(place::detail::first_fit_by_allocation{}.offsets(r, never) == greedy);
  }
  // The order within a step matters: two buffers start together, the larger first takes the freed
  // block that fits it exactly, by index the smaller splits it first.
  buffer_problem two;
  two.buffers = {{0, 1, 100}, {0, 3, 10}, {1, 3, 40}, {1, 3, 100}};
  CHECK(place::detail::allocator_sweep{}.offsets(two, never) == std::vector<std::int64_t>{0, 100, 0, 110});
  CHECK(place::detail::allocator_sweep{.ties = sweep_ties::larger_first}.offsets(two, never) == std::vector<std::int64_t>{0, 100, 110, 0});
}

TEST_CASE("node limits make the searching placers deterministic") {
  const auto p = random_instance(31, {.buffers = 300, .steps = 120, .max_size = 5000, .alignments = true});
  const auto a = default_placer{.time_limit_s = 1e9, .node_limit = 3000}.place(p);
  const auto b = default_placer{.time_limit_s = 1e9, .node_limit = 3000}.place(p);
  CHECK(a.offsets == b.offsets);
  const auto x = exact{.time_limit_s = 1e9, .node_limit = 3000, .accept = 0}.place(p);
  const auto y = exact{.time_limit_s = 1e9, .node_limit = 3000, .accept = 0}.place(p);
  CHECK(x.offsets == y.offsets);
}

TEST_CASE("a time limit on the work clock makes the searching placers deterministic, whatever the load, and sets how far they search") {
  // MiniMalloc's D: the search does not close its gap (0.6 s: 7.5 % above max load), so every run
  // below stops on its clock.
  const auto p = io::read_buffers_csv_file(std::string(MEMPLAN_DATA_DIR) + "/benchmarks/minimalloc/D.1048576.csv").problem;
  const auto nodes = [](const buffer_placement& pl) {  // exact's note: "..., N nodes; ..."
    const auto at = pl.note.find(" nodes");
    REQUIRE(at != std::string::npos);
    return std::stoll(pl.note.substr(pl.note.rfind(' ', at - 1) + 1));
  };
  const auto quick = exact{.time_limit_s = 0.02, .count_work = true, .accept = 0};
  const auto a = quick.place(p);
  // The same again while another thread keeps a core busy: the clock it reads is the work done.
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    volatile std::uint64_t x = 0;
    while (!stop.load(std::memory_order_relaxed)) x = x + 1;
  });
  const auto b = quick.place(p);
  stop = true;
  busy.join();
  CHECK(a.offsets == b.offsets);
  CHECK(a.note == b.note);
  CHECK(!a.optimal);
  // Four times the limit: about four times the nodes (the probes' budgets double, so not exactly).
  const auto longer = exact{.time_limit_s = 0.08, .count_work = true, .accept = 0}.place(p);
  CHECK(nodes(longer) > 2 * nodes(a));
  CHECK(longer.arena <= a.arena);
  // The default placer under a deterministic context runs its own limit on the work clock.
  plan_context det;
  det.deterministic = true;
  det.time_limit_s = 1e-6;  // ignored in deterministic mode
  const auto d = default_placer{.time_limit_s = 0.05}.place(p, det);
  CHECK(d.offsets == default_placer{.time_limit_s = 0.05, .count_work = true}.place(p).offsets);
  CHECK(!check(p, d));
}

TEST_CASE("memplan place with --capacity and no time limit: decision mode, stops at the first fit") {
  const auto path = std::string(MEMPLAN_DATA_DIR) + "/benchmarks/minimalloc/D.1048576.csv";
  const auto r = cli::run_csv({.input = path, .capacity = 1048576}, nullptr);
  CHECK(r.placement.arena <= 1048576);
  CHECK(!check(r.list.problem, r.placement));
  CHECK(!r.placement.optimal);  // max load 986112 is not reached; a fit is all decision mode asks for
}
