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
  SUBCASE("short steps under a long limit keep going") {
    const auto d = deadline::after(60.0);
    step_pacer pace(d);
    for (int i = 0; i < 3; ++i) {
      CHECK(pace.next());
      std::this_thread::sleep_for(5ms);
    }
  }
}
