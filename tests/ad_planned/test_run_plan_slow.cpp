// The full registered scheduler x placer cross product on larger models than the default-label
// suite (label slow): a wider CNN with batch 8 and a 2-head transformer over 8-token sequences.
#include <doctest/doctest.h>

#include "planned_support.hpp"

using namespace memplan;

TEST_CASE("planned training (slow): wider CNN, every scheduler x every placer, 20 steps bitwise equal to eager") {
  adplanned::case_model c{"cnn-wide",
                          ad::models::cnn({.batch = 8, .channels = 1, .height = 16, .width = 16, .width_mult = 8, .classes = 3},
                                          ad::adam{0.01f}),
                          1};
  adplanned::cross_product(c, schedulers().names(), placers().names(), 20);
}

TEST_CASE("planned training (slow): larger transformer, every scheduler x every placer, 20 steps bitwise equal to eager") {
  adplanned::case_model c{"transformer-8",
                          ad::models::transformer(
                              {.batch = 8, .length = 4, .vocab = 6, .dim = 32, .heads = 2, .mlp_hidden = 64, .classes = 2},
                              ad::sgd{0.05f, 0.9f}),
                          2};
  adplanned::cross_product(c, schedulers().names(), placers().names(), 20);
}

TEST_CASE("planned training (slow): small MLP, CNN and transformer, every scheduler x every placer with random implementation choices, 20 steps bitwise equal to eager with the same choices") {
  adplanned::cross_product_with_choices(adplanned::small_mlp(), schedulers().names(), placers().names(), 20);
  adplanned::cross_product_with_choices(adplanned::small_cnn(), schedulers().names(), placers().names(), 20);
  adplanned::cross_product_with_choices(adplanned::small_transformer(), schedulers().names(), placers().names(), 20);
}

TEST_CASE("joint implementation choice and recomputation: monet_greedy and monet_ilp plans (10 s per plan) train bitwise equal to eager with the same choices") {
  adplanned::check_joint_choice_plans({"monet_greedy", "monet_ilp"}, 10.0, true);
}
