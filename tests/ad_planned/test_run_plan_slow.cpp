// The full registered scheduler x placer cross product on the CNN and the transformer (label slow;
// the default label runs the full product on the MLP and a subset on these two).
#include <doctest/doctest.h>

#include "planned_support.hpp"

using namespace memplan;

TEST_CASE("planned training (slow): CNN, every scheduler x every placer, 20 steps bitwise equal to eager") {
  adplanned::cross_product(adplanned::small_cnn(), schedule::scheduler_names(), place::placer_names(), 20);
}

TEST_CASE("planned training (slow): transformer, every scheduler x every placer, 20 steps bitwise equal to eager") {
  adplanned::cross_product(adplanned::small_transformer(), schedule::scheduler_names(), place::placer_names(), 20);
}
