#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include <memplan/base/deadline.hpp>

using namespace memplan;
using namespace std::chrono_literals;

TEST_CASE("deadline: below zero or beyond 1e9 s never expires, zero expires at once") {
  CHECK_FALSE(deadline::never().limited());
  CHECK_FALSE(deadline::after(-1).expired());
  CHECK_FALSE(deadline::after(2e9).limited());
  CHECK(deadline::after(0).expired());
  CHECK(deadline::after(0).seconds_left() == 0.0);
  const auto d = deadline::after(100);
  CHECK(d.limited());
  CHECK(d.seconds_left() > 99);
  CHECK(d.slice(1).seconds_left() <= 1.0);   // a part of the remaining time
  CHECK(d.slice(-1).limit() == d.limit());   // no slice: the same deadline
  CHECK(deadline::after(0.5).slice(10).seconds_left() <= 0.5);
}

TEST_CASE("step_pacer: the first step always starts, then only while the time left covers the longest step") {
  SUBCASE("no limit: every step starts") {
    const auto d = deadline::never();
    step_pacer pace(d);
    for (int i = 0; i < 5; ++i) CHECK(pace.next());
  }
  SUBCASE("an expired deadline still lets the first step start, no second") {
    const auto d = deadline::after(0);
    step_pacer pace(d);
    CHECK(pace.next());
    CHECK_FALSE(pace.next());
  }
  SUBCASE("a step longer than what is left stops the loop before the deadline passes") {
    const auto d = deadline::after(1.0);
    step_pacer pace(d);
    CHECK(pace.next());
    std::this_thread::sleep_for(600ms);  // the first step: 0.6 s, so at most 0.4 s are left
    CHECK_FALSE(pace.next());
  }
  SUBCASE("reserved steps: a step starts only while the time left also covers the reserve") {
    const auto d = deadline::after(1.0);
    step_pacer pace(d);
    CHECK(pace.next(1));
    CHECK(pace.longest() == 0.0);
    std::this_thread::sleep_for(300ms);  // a 0.3 s step: at most 0.7 s left, under the 0.9 s of 1 + 2 steps
    CHECK_FALSE(pace.next(2));
    CHECK(pace.longest() >= 0.3);
    CHECK(pace.next(0));  // 0.3 s fits without the reserve (the call in between was a step of ~0 s)
    const auto never = deadline::never();
    step_pacer unlimited(never);
    CHECK(unlimited.next(1000));  // no limit: the reserve asks for nothing
  }
  SUBCASE("an expected first step: the first starts only where the time left covers it, the later ones by the steps measured") {
    const auto d = deadline::after(1.0);
    step_pacer too_long(d, 2.0);
    CHECK_FALSE(too_long.next());
    step_pacer fits(d, 0.5);
    CHECK(fits.next());
    CHECK(fits.next(1));  // the later steps are paced by the steps measured (~0 s here), not the expectation
    const auto expired = deadline::after(0);
    step_pacer late(expired, 1e-9);
    CHECK_FALSE(late.next());  // unlike the plain pacer, not even the first step past the deadline
    const auto never = deadline::never();
    step_pacer unlimited(never, 100.0);
    CHECK(unlimited.next());  // no limit: every step starts
    step_pacer zero(expired, 0.0);
    CHECK(zero.next());  // 0: the plain pacer's first step
  }
  SUBCASE("short steps under a long limit keep going") {
    const auto d = deadline::after(60.0);
    step_pacer pace(d);
    for (int i = 0; i < 3; ++i) {
      CHECK(pace.next());
      std::this_thread::sleep_for(5ms);
    }
  }
}

TEST_CASE("deadline on a work clock: time is the work charged, so it expires on work, not on the wall clock") {
  work_clock work(1e-3);  // a unit is a millisecond
  const auto d = deadline::after(1.0, &work);
  CHECK(d.counts_work());
  CHECK_FALSE(deadline::after(1.0).counts_work());
  std::this_thread::sleep_for(20ms);  // wall time does not count
  CHECK(d.seconds_left() == doctest::Approx(1.0));
  CHECK(d.elapsed() == 0.0);
  d.charge(400);
  CHECK(d.seconds_left() == doctest::Approx(0.6));
  CHECK(d.elapsed() == doctest::Approx(0.4));
  // Slices and reserves stay on the same clock.
  const auto part = d.slice(0.25);
  const auto reserve = d.kept_back(0.5);
  CHECK(part.counts_work());
  CHECK(reserve.counts_work());
  CHECK(part.seconds_left() == doctest::Approx(0.25));
  CHECK(reserve.seconds_left() == doctest::Approx(0.1));
  part.charge(100);  // one clock: every deadline on it sees the work
  CHECK(work.units() == 500);
  CHECK(reserve.expired());
  CHECK_FALSE(part.expired());
  CHECK(d.seconds_left() == doctest::Approx(0.5));
  part.charge(150);
  CHECK(part.expired());
  CHECK_FALSE(d.expired());
  d.charge(349);
  CHECK_FALSE(d.expired());
  d.charge(1);  // 1,000 units: the second is spent
  CHECK(d.expired());
  // A step pacer on a work clock measures steps in work.
  work_clock w2(1e-3);
  const auto e = deadline::after(1.0, &w2);
  step_pacer pace(e);
  CHECK(pace.next());
  e.charge(600);  // a step of 0.6 virtual seconds: 0.4 left
  CHECK_FALSE(pace.next());
  CHECK(pace.longest() == doctest::Approx(0.6));
  // Charges to a steady-clock deadline go nowhere.
  deadline::after(1.0).charge(1'000'000);
  deadline::never().charge(1);
}
