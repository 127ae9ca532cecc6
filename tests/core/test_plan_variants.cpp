// core/plan_variants.hpp: variants that only keep the given order's peak from rising are taken where
// the plan is better with them. choose_variants' no_peak_higher rule on a concatenation block (the
// exporter's from_concatenation variant), the choice between the two plans by the limit and by cost,
// and random training graphs with random variants under a budget: the plan kept is verified and no
// worse than the other set's by the rules of the header.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <memplan/core/pipeline.hpp>
#include <memplan/core/plan_variants.hpp>
#include <memplan/core/problem_builder.hpp>
#include <memplan/core/variants.hpp>
#include <memplan/core/verify.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/remat/greedy.hpp>
#include <memplan/schedule/default_scheduler.hpp>
#include <memplan/schedule/given.hpp>

#include "../property/training_dag.hpp"
#include "random_variants.hpp"
#include "../support/padded_placer.hpp"

using namespace memplan;

namespace {

// Two ReLU branches concatenated (GoogLeNet / SqueezeNet): each ReLU backward reads its branch output
// r1 / r2 (100 B each), or, as a variant, the concatenation c (200 B) that holds the same values.
// With the variants r1 and r2 die after the cat and c lives until the second ReLU backward: the steps
// from the cat to conv3_bw hold 200 B less, those of conv1_bw and relu2_bw c instead of r2 (100 B more).
problem cat_block() {
  problem_builder b("cat-block");
  auto t = [&](const char* n, std::int64_t bytes, tensor_kind k) { return b.add_tensor(n, bytes, k); };
  const auto x = t("x", 10, tensor_kind::input);
  const auto w1 = t("w1", 10, tensor_kind::weight);
  const auto w2 = t("w2", 10, tensor_kind::weight);
  const auto w3 = t("w3", 10, tensor_kind::weight);
  const auto a1 = t("a1", 100, tensor_kind::activation);
  const auto r1 = t("r1", 100, tensor_kind::activation);
  b.set_inplace_of(r1, a1);
  const auto a2 = t("a2", 100, tensor_kind::activation);
  const auto r2 = t("r2", 100, tensor_kind::activation);
  b.set_inplace_of(r2, a2);
  const auto c = t("c", 200, tensor_kind::activation);
  const auto z = t("z", 50, tensor_kind::activation);
  const auto loss = t("loss", 1, tensor_kind::output);
  const auto gz = t("gz", 50, tensor_kind::gradient);
  const auto gc = t("gc", 200, tensor_kind::gradient);
  const auto gw3 = t("gw3", 10, tensor_kind::output);
  const auto ga1 = t("ga1", 100, tensor_kind::gradient);
  const auto ga2 = t("ga2", 100, tensor_kind::gradient);
  const auto gw1 = t("gw1", 10, tensor_kind::output);
  const auto gw2 = t("gw2", 10, tensor_kind::output);
  b.add_op("conv1", {x, w1}, {a1}, "conv", op_phase::forward, 4.0);
  b.add_op("relu1_", {a1}, {r1}, "relu_", op_phase::forward, 1.0);
  b.add_op("conv2", {x, w2}, {a2}, "conv", op_phase::forward, 4.0);
  b.add_op("relu2_", {a2}, {r2}, "relu_", op_phase::forward, 1.0);
  b.add_op("cat", {r1, r2}, {c}, "cat", op_phase::forward, 1.0);
  b.add_op("conv3", {c, w3}, {z}, "conv", op_phase::forward, 4.0);
  b.add_op("loss", {z}, {loss}, "loss", op_phase::forward, 1.0);
  b.add_op("loss_bw", {loss}, {gz}, "loss_bw", op_phase::backward, 1.0);
  b.add_op("conv3_bw", {gz, c, w3}, {gc, gw3}, "conv_bw", op_phase::backward, 8.0);
  b.add_op("relu1_bw", {gc, r1}, {ga1}, "threshold_backward", op_phase::backward, 1.0, 0,
           {implementation{"from_concatenation", 1.0, 0, {"gc", "c"}}});
  b.add_op("conv1_bw", {ga1, x, w1}, {gw1}, "conv_bw", op_phase::backward, 8.0);
  b.add_op("relu2_bw", {gc, r2}, {ga2}, "threshold_backward", op_phase::backward, 1.0, 0,
           {implementation{"from_concatenation", 1.0, 0, {"gc", "c"}}});
  b.add_op("conv2_bw", {ga2, x, w2}, {gw2}, "conv_bw", op_phase::backward, 8.0);
  return b.build();
}

memory_plan plan_given(const problem& q, plan_context ctx = {}) { return plan(q, schedule::given{} | place::default_placer{}, ctx); }

}  // namespace

TEST_CASE("choose_variants: no_peak_higher takes a variant that raises another step, the default rule does not") {
  const auto p = cat_block();
  const auto strict = choose_variants(p);
  CHECK(strict.taken.empty());
  const auto loose = choose_variants(p, variant_rule::no_peak_higher);
  REQUIRE(loose.taken.size() == 2);
  CHECK(loose.taken[0] == variant_choice{"relu1_bw", "from_concatenation"});
  CHECK(loose.taken[1] == variant_choice{"relu2_bw", "from_concatenation"});
  CHECK(loose.removed_ops.empty());
  // The given order's peak, at conv3_bw (r1, r2, c, gz, gc), falls from 701 to 501 B there; with c
  // alive until relu2_bw, conv1_bw rises from 461 to 561 B and is the new peak.
  CHECK(loose.given_peak_before == 701);
  CHECK(loose.given_peak_after == 561);
  CHECK(choose_variants(p, variant_rule::no_peak_higher).taken == loose.taken);  // deterministic
}

TEST_CASE("plan_choosing_variants keeps the plan that meets the limit, else the better one") {
  const auto p = cat_block();
  int plans = 0;
  // No limit: both planned, the variants' plan needs less.
  auto r = plan_choosing_variants(p, [&](const problem& q) {
    ++plans;
    return plan_given(q);
  });
  CHECK(plans == 2);
  CHECK(r.variants.taken.size() == 2);
  CHECK(verify(r.variants.rewritten, r.plan).ok);
  CHECK(r.note.find("kept the second (the better plan)") != std::string::npos);
  const auto without = plan_given(p);
  CHECK(r.plan.arena < without.arena);
  // A capacity only the variants' plan meets: the other throws infeasible, this one is kept.
  plans = 0;
  r = plan_choosing_variants(p, [&](const problem& q) {
    ++plans;
    return plan_given(q, {.capacity = r.plan.arena});
  });
  CHECK(plans == 2);
  CHECK(r.variants.taken.size() == 2);
  CHECK(r.note.find("the first does not meet the limit") != std::string::npos);
  // Below both: the first set's error.
  CHECK_THROWS_AS(plan_choosing_variants(p, [&](const problem& q) { return plan_given(q, {.capacity = 100}); }), error);
  // A graph whose variants are free at every step: one set, planned once.
  plans = 0;
  const auto q = apply_variants(p, choose_variants(p, variant_rule::no_peak_higher).taken);
  r = plan_choosing_variants(q, [&](const problem& g) {
    ++plans;
    return plan_given(g);
  });
  CHECK(plans == 1);
  CHECK(r.note.empty());
}

TEST_CASE("plan_choosing_variants on random training graphs under a budget: verified, never worse than either whole set") {
  int graphs = 0, both = 0, kept_loose = 0, mixed = 0, unsearched = 0, none_better = 0;
  for (std::uint64_t seed = 1; seed <= 160; ++seed) {
    const auto p = testing::with_random_variants(testing::training_dag(seed, {.p_huge = 0.0}), seed);
    const auto strict = choose_variants(p);
    const auto loose = choose_variants(p, variant_rule::no_peak_higher);
    if (strict.taken == loose.taken) continue;
    INFO("seed " << seed);
    ++graphs;
    const auto peak = plan(strict.rewritten, schedule::default_scheduler{} | place::default_placer{}).stats.peak;
    plan_context ctx;
    ctx.budget = peak * 9 / 10;
    ctx.deterministic = true;  // the whole sets' plans below are the ones plan_choosing_variants compared
    int plans = 0;
    auto make = [&](const problem& q) {
      ++plans;
      return plan(q, schedule::default_scheduler{} | remat::greedy{} | place::default_placer{}, ctx);
    };
    const variant_search search{.time_limit_s = -1.0, .max_plans = 6};  // deterministic: plans counted
    variant_plan r;
    try {
      r = plan_choosing_variants(p, make, search);
    } catch (const error& e) {
      CHECK(e.code() == errc::infeasible);
      continue;
    }
    CHECK(plans <= 2 + search.max_plans);
    CHECK(verify(r.variants.rewritten, r.plan).ok);
    CHECK(r.plan.arena <= ctx.budget);
    // Every variant free at every step, and only variants of the two sets.
    for (const auto& c : strict.taken) CHECK(std::find(r.variants.taken.begin(), r.variants.taken.end(), c) != r.variants.taken.end());
    for (const auto& c : r.variants.taken) CHECK(std::find(loose.taken.begin(), loose.taken.end(), c) != loose.taken.end());
    CHECK(r.variants.rewritten.num_ops() == apply_variants(p, r.variants.taken).num_ops());
    const bool took_loose = r.variants.taken == loose.taken;
    kept_loose += took_loose;
    mixed += !took_loose && r.variants.taken != strict.taken;
    // A search that kept no switch says which whole set stays.
    if (r.note.find("none better") != std::string::npos && ++none_better)
      CHECK(r.note.find(took_loose ? "groups stay taken (the second whole set)" : "none better, so none taken") != std::string::npos);
    // Neither whole set's plan, when it has one, is better by the header's rules.
    for (const auto* other : {&strict.rewritten, &loose.rewritten}) {
      try {
        const auto o = make(*other);
        ++both;
        CHECK_FALSE(better_plan(*other, o, r.variants.rewritten, r.plan));
      } catch (const error& e) {
        CHECK(e.code() == errc::infeasible);
      }
    }
    // Deterministic: the same choice again.
    CHECK(plan_choosing_variants(p, make, search).variants.taken == r.variants.taken);
    // No room for the search: a whole set, and the note names the limit.
    if (detail::variant_groups(p, strict.taken, loose.taken).size() >= 2) {
      const auto none = plan_choosing_variants(p, make, {.time_limit_s = -1.0, .max_plans = 6, .max_ops_planned = 0});
      CHECK((none.variants.taken == strict.taken || none.variants.taken == loose.taken));
      CHECK(none.note.find("not searched one at a time: the search's limit of 0 ops planned") != std::string::npos);
      ++unsearched;
    }
  }
  MESSAGE(graphs << " graphs where the sets differ; whole sets planned " << both << "; the no-peak-higher set kept " << kept_loose
                 << ", a mix of its groups " << mixed << "; searches that kept no switch " << none_better);
  CHECK(graphs > 5);
  CHECK(both > 6);
  CHECK(mixed > 0);
  CHECK(unsearched > 0);
  CHECK(none_better > 0);
}

TEST_CASE("plan_choosing_variants: every plan after the first gets the best plan so far to beat") {
  int graphs = 0, given_one = 0, cut = 0;
  for (std::uint64_t seed = 1; seed <= 160; ++seed) {
    const auto p = testing::with_random_variants(testing::training_dag(seed, {.p_huge = 0.0}), seed);
    if (choose_variants(p).taken == choose_variants(p, variant_rule::no_peak_higher).taken) continue;
    INFO("seed " << seed);
    ++graphs;
    const auto peak = plan(p, schedule::default_scheduler{} | place::default_placer{}).stats.peak;
    for (const int tenths : {9, 7, -9}) {  // -9: 0.9x, with every placement padded by 5 % of the peak
      plan_context ctx;
      ctx.budget = peak * std::abs(tenths) / 10;
      const testing::padded_placer padded{tenths < 0 ? peak / 20 : 0};
      ctx.deterministic = true;
      std::vector<plan_to_beat> given;  // per make_plan call
      std::vector<double> costs;        // the plan's total step cost, or -1 where it threw
      auto make = [&](const problem& q, const deadline&, const plan_to_beat& to_beat) {
        given.push_back(to_beat);
        costs.push_back(-1.0);
        auto c = ctx;
        c.to_beat = to_beat;
        auto mp = padded.pad > 0 ? plan(q, schedule::default_scheduler{} | remat::greedy{} | padded, c)
                                 : plan(q, schedule::default_scheduler{} | remat::greedy{} | place::default_placer{}, c);
        costs.back() = total_step_cost(q, mp);
        return mp;
      };
      variant_plan r;
      try {
        r = plan_choosing_variants(p, make, {.time_limit_s = -1.0, .max_plans = 4});
      } catch (const error& e) {
        CHECK(e.code() == errc::infeasible);  // never not_better: the first plan has none to beat
        continue;
      }
      CHECK(verify(r.variants.rewritten, r.plan).ok);
      CHECK(r.plan.arena <= ctx.budget);
      REQUIRE(given.size() >= 2);
      CHECK(given[0].step_cost < 0);
      // The plan to beat is the cheapest plan so far (untimed plans compare by step cost first).
      for (std::size_t i = 1; i < given.size(); ++i) {
        double best = -1.0;
        for (std::size_t j = 0; j < i; ++j)
          if (costs[j] >= 0 && (best < 0 || costs[j] < best)) best = costs[j];
        CHECK(given[i].step_cost == best);
        CHECK(given[i].makespan < 0);
        given_one += best >= 0;
      }
      CHECK(total_step_cost(r.variants.rewritten, r.plan) == *std::min_element(costs.begin(), costs.end(), [](double a, double b) {
        return (a >= 0 ? a : 1e300) < (b >= 0 ? b : 1e300);
      }));
      cut += r.note.find("not planned to the budget") != std::string::npos;
    }
  }
  MESSAGE(graphs << " graphs; " << given_one << " plans given one to beat; the second whole set cut short " << cut << " times");
  CHECK(graphs > 5);
  CHECK(given_one > 10);
  CHECK(cut > 0);
}

TEST_CASE("plan_choosing_variants: a make_plan's own not_better, in its own words, is a plan that lost") {
  for (std::uint64_t seed = 1; seed <= 160; ++seed) {
    const auto p = testing::with_random_variants(testing::training_dag(seed, {.p_huge = 0.0}), seed);
    if (choose_variants(p).taken == choose_variants(p, variant_rule::no_peak_higher).taken) continue;
    INFO("seed " << seed);
    int calls = 0;
    // Every plan after the first refuses, with a message that is not plan()'s.
    auto make = [&](const problem& q, const deadline&, const plan_to_beat& to_beat) {
      if (calls++ > 0) {
        CHECK(to_beat.step_cost >= 0);
        throw error(errc::not_better, "refused by the caller");
      }
      return plan(q, schedule::default_scheduler{} | place::default_placer{});
    };
    const auto r = plan_choosing_variants(p, make, {.time_limit_s = -1.0, .max_plans = 2});
    CHECK(verify(r.variants.rewritten, r.plan).ok);
    CHECK(r.variants.taken == choose_variants(p).taken);
    CHECK(r.note.find("kept the first (the second refused by the caller)") != std::string::npos);
    CHECK(calls >= 2);
    return;
  }
  FAIL("no random graph with two variant sets");
}

TEST_CASE("plan_choosing_variants: the group search's plans get its deadline, and a plan past its stop is still verified") {
  // The first random training graph whose variants fall into two groups or more.
  problem p;
  std::uint64_t seed = 1;
  for (; seed <= 400; ++seed) {
    p = testing::with_random_variants(testing::training_dag(seed, {.p_huge = 0.0}), seed);
    const auto strict = choose_variants(p);
    const auto loose = choose_variants(p, variant_rule::no_peak_higher);
    if (strict.taken != loose.taken && detail::variant_groups(p, strict.taken, loose.taken).size() >= 2) break;
  }
  REQUIRE(seed <= 400);
  INFO("seed " << seed);
  std::vector<bool> limited;  // per make_plan call: did it get a deadline?
  auto make = [&](const problem& q, const deadline& until) {
    limited.push_back(until.limited());
    plan_context ctx;
    ctx.stop = until;
    return plan(q, schedule::default_scheduler{} | remat::greedy{} | place::default_placer{}, ctx);
  };
  // With a time limit: the two whole sets unlimited, every plan of the search within its deadline.
  (void)plan_choosing_variants(p, make, {.time_limit_s = 1000.0, .max_plans = 3});
  REQUIRE(limited.size() > 2);
  CHECK(!limited[0]);
  CHECK(!limited[1]);
  for (std::size_t i = 2; i < limited.size(); ++i) CHECK(limited[i]);
  // Counting plans instead of time (deterministic mode): no deadline anywhere.
  limited.clear();
  (void)plan_choosing_variants(p, make, {.time_limit_s = -1.0, .max_plans = 3});
  REQUIRE(limited.size() > 2);
  for (const bool l : limited) CHECK(!l);
  // A plan whose stop has passed: every searching stage gets a clock that has run out, and the plan
  // (schedule, recompute to the budget, place) is verified and meets the budget, or is refused.
  plan_context late;
  late.stop = deadline::after(0.0);
  late.budget = plan(p, schedule::default_scheduler{} | place::default_placer{}).stats.peak * 9 / 10;
  try {
    const auto mp = plan(p, schedule::default_scheduler{} | remat::greedy{} | place::default_placer{}, late);
    CHECK(verify(p, mp).ok);
    CHECK(mp.arena <= late.budget);
  } catch (const error& e) {
    CHECK(e.code() == errc::infeasible);
  }
}
