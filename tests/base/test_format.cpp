// base/format.hpp: the numbers in notes and messages.
#include <doctest/doctest.h>

#include <memplan/base/format.hpp>

TEST_CASE("number_text: six significant digits, no locale") {
  CHECK(memplan::number_text(0.0) == "0");
  CHECK(memplan::number_text(2.0) == "2");
  CHECK(memplan::number_text(0.0123456789) == "0.0123457");
  CHECK(memplan::number_text(1.5e9) == "1.5e+09");
  CHECK(memplan::number_text(-3.25) == "-3.25");
}
