#include <doctest/doctest.h>

#include <memplan/place/online/caching_allocator.hpp>
#include <memplan/place/online/free_list.hpp>

#include "instances.hpp"

using namespace memplan;
using namespace memplan::place;

namespace {
constexpr std::int64_t MiB = std::int64_t{1} << 20;
using offs = std::vector<std::int64_t>;
}  // namespace

TEST_CASE("first fit and best fit: hand-computed trace") {
  buffer_problem p;
  // a, b, c, x allocated at step 0 -> 0, 10, 15, 21 (top 24). At step 2, a and c are freed: holes
  // [0,10) and [15,21). d (5 bytes): first fit takes 0, best fit the 6-byte hole at 15. e (8 bytes):
  // first fit finds no hole of 8 any more and grows the heap to 32; best fit uses [0,10).
  p.buffers = {{0, 2, 10}, {0, 4, 5}, {0, 2, 6}, {0, 4, 3}, {2, 4, 5}, {2, 4, 8}};
  const auto ff = online::first_fit{}.simulate(p);
  CHECK(ff.placement.offsets == offs{0, 10, 15, 21, 0, 24});
  CHECK(ff.reserved == 32);
  const auto bf = online::best_fit{}.simulate(p);
  CHECK(bf.placement.offsets == offs{0, 10, 15, 21, 15, 0});
  CHECK(bf.reserved == 24);
  CHECK(bf.resident_peak == 24);
  CHECK(bf.fragmentation() == 0.0);
  CHECK(ff.fragmentation() == doctest::Approx(8.0 / 32.0));
}

TEST_CASE("free list coalesces neighbours and honours alignment") {
  buffer_problem p;
  p.buffers = {{0, 1, 4}, {0, 1, 4}, {0, 2, 1}, {1, 2, 8}};
  const auto r = online::first_fit{}.simulate(p);
  CHECK(r.placement.offsets == offs{0, 4, 8, 0});  // [0,4) + [4,8) merged into one 8-byte hole
  CHECK(r.reserved == 9);
  buffer_problem q;
  q.alignment = 8;
  q.buffers = {{0, 2, 3}, {0, 2, 3}, {1, 2, 2, 32}};
  const auto a = online::best_fit{}.simulate(q);
  CHECK(a.placement.offsets == offs{0, 8, 32});
  CHECK(a.reserved == 34);
  CHECK_THROWS_AS((void)online::first_fit{}.simulate([] {
    buffer_problem x;
    x.buffers = {{0, 1, 4, 1, 0}};
    return x;
  }()), error);
}

TEST_CASE("caching allocator: 512-byte rounding, small-pool splitting, best-fit reuse") {
  buffer_problem p;
  // a (1 B -> 512) opens a 2 MiB small segment; b (513 B -> 1024) follows at 512. At step 1, a's 512 B
  // block is freed; c (600 B -> 1024) does not fit there and takes the split remainder at 1536.
  p.buffers = {{0, 1, 1}, {0, 2, 513}, {1, 2, 600}};
  const auto r = online::caching_allocator{}.simulate(p);
  CHECK(r.placement.offsets == offs{0, 512, 1536});
  CHECK(r.reserved == 2 * MiB);
  CHECK(r.resident_peak == 1113);
}

TEST_CASE("caching allocator: large pool segments and the 1 MiB split threshold") {
  buffer_problem p;
  // a: 19.5 MiB >= 10 MiB gets its own segment rounded to 2 MiB (20 MiB); the 0.5 MiB rest is not
  // split off (large pool splits only remainders > 1 MiB). b (20 MiB) reuses that whole cached block.
  // c (2 MiB) reuses it too and splits (18 MiB left); d (18 MiB + 1 B -> +512) does not fit: new 20 MiB.
  p.buffers = {{0, 1, 19 * MiB + MiB / 2}, {1, 2, 20 * MiB}, {2, 3, 2 * MiB}, {2, 3, 18 * MiB + 1}};
  const auto r = online::caching_allocator{}.simulate(p);
  CHECK(r.placement.offsets == offs{0, 0, 0, 20 * MiB});
  CHECK(r.reserved == 40 * MiB);
  CHECK(r.resident_peak == 20 * MiB + 1);
  CHECK(r.fragmentation() == doctest::Approx((20.0 * MiB - 1) / (40.0 * MiB)));
}

TEST_CASE("caching allocator: 20 MiB segments for mid-size requests, no cross-segment coalescing") {
  buffer_problem p;
  // Three 9 MiB requests: two share a 20 MiB segment, the third opens a second one. When all are
  // freed, the two free 20 MiB segments are adjacent in address space but never merged, so a 30 MiB
  // request needs a third segment (30 MiB, rounded to 2 MiB).
  p.buffers = {{0, 1, 9 * MiB}, {0, 1, 9 * MiB}, {0, 1, 9 * MiB}, {1, 2, 30 * MiB}};
  const auto r = online::caching_allocator{}.simulate(p);
  CHECK(r.placement.offsets == offs{0, 9 * MiB, 20 * MiB, 40 * MiB});
  CHECK(r.reserved == 70 * MiB);
}

TEST_CASE("online allocators produce valid placements on random traces") {
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const auto p = testing::random_instance(seed, {.buffers = 200, .steps = 60, .max_size = 3 * MiB});
    for (const auto& r : {online::first_fit{}.simulate(p), online::best_fit{}.simulate(p),
                          online::caching_allocator{}.simulate(p)}) {
      CHECK(!check(p, r.placement));
      CHECK(r.reserved >= r.placement.arena);
      CHECK(r.reserved >= r.resident_peak);
      CHECK(r.fragmentation() >= 0.0);
    }
  }
}
