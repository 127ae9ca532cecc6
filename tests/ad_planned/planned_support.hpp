#pragma once
// Shared by the planned-training tests: train a model eagerly and under a plan from the same seed and
// data, in lockstep, with NaN poisoning on both, and compare bit for bit.
#include <doctest/doctest.h>

#include <algorithm>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <memplan/core/adapt.hpp>
#include <memplan/core/bounds.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/core/plan.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/verify.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/ad/data.hpp>
#include <memplan/ad/models/cnn.hpp>
#include <memplan/ad/models/mlp.hpp>
#include <memplan/ad/models/transformer.hpp>
#include <memplan/ad/run_plan.hpp>
#include <memplan/registry/checkpointers.hpp>
#include <memplan/registry/placers.hpp>
#include <memplan/remat/monet_greedy.hpp>
#include <memplan/schedule/default_scheduler.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/registry/schedulers.hpp>

#include "../support/sanitizer_scale.hpp"

#include "../support/milp_backend.hpp"

#include "../support/same_bits.hpp"

namespace adplanned {

using namespace memplan;

// A scheduler whose answer was computed once (the registry's scheduler of that name on this problem): lets one
// schedule be placed by every placer without re-running a 1-second search per pair.
struct precomputed {
  schedule_result result;
  [[nodiscard]] schedule_result run(const problem&, const plan_context& = {}) const { return result; }
  [[nodiscard]] std::string name() const { return result.policy.empty() ? "precomputed" : result.policy; }
};

// The three model builders at test size, each with its task.
struct case_model {
  std::string name;
  ad::model m;
  int kind = 0;  // 0 mlp / two_spirals, 1 cnn / shapes16, 2 transformer / repeated_token
};

inline case_model small_mlp() {
  return {"mlp", ad::models::mlp({.batch = 8, .in = 2, .hidden = 16, .layers = 1, .classes = 2}, ad::adam{0.01f}), 0};
}
inline case_model small_cnn() {
  return {"cnn", ad::models::cnn({.batch = 2, .channels = 1, .height = 16, .width = 16, .width_mult = 2, .classes = 3},
                                 ad::sgd{0.05f, 0.9f}),
          1};
}
inline case_model small_transformer() {
  return {"transformer",
          ad::models::transformer({.batch = 2, .length = 4, .vocab = 6, .dim = 8, .heads = 2, .mlp_hidden = 8, .classes = 2},
                                  ad::adam{0.01f}),
          2};
}

// N steps with a fresh stream of seed `seed`, on any runner with data()/run(); a planned runner's
// arena high-water of every step goes to `high`.
template <class Runner>
std::vector<float> train(Runner& r, const case_model& c, int steps, std::uint64_t seed, std::vector<float>* losses,
                         std::vector<std::int64_t>* high = nullptr) {
  auto go = [&](auto task) {
    ad::data_stream<decltype(task)> d(task, seed);
    for (int s = 0; s < steps; ++s) {
      const float l = ad::train_step(r, c.m, d);
      if (losses) losses->push_back(l);
      if constexpr (requires { r.last_stats(); })
        if (high) high->push_back(r.last_stats().high_water);
    }
  };
  if (c.kind == 0) go(ad::two_spirals{});
  else if (c.kind == 1) go(ad::shapes16{});
  else go(ad::repeated_token{4, 6});
  return ad::read_state(c.m.step, r);
}

struct eager_reference {
  std::vector<float> initial, state, losses;
  std::int64_t peak = 0;
};

// Eager training, each node running the implementation `impl` chooses (empty: the defaults).
inline eager_reference eager_training(const case_model& c, int steps, std::uint64_t seed, std::vector<std::int32_t> impl = {}) {
  ad::eager_runner e(c.m.step, {.poison = true, .impl = std::move(impl)});
  eager_reference ref;
  ref.initial = ad::read_state(c.m.step, e);
  ref.state = train(e, c, steps, seed, &ref.losses);
  ref.peak = e.peak_bytes();
  return ref;
}

using memplan::testing::same_bits;

// Trains under (scheduler, placer) with poisoning and checks, bit for bit, every loss and the final
// weights + optimizer state against the eager reference; the arena high-water equals the plan's arena.
inline void check_planned(const case_model& c, const problem& prob, const precomputed& sch, const std::string& placer,
                          const eager_reference& ref, int steps, std::uint64_t seed) {
  CAPTURE(c.name);
  CAPTURE(sch.name());
  CAPTURE(placer);
  // The searching placers get a short budget: the check is about the plan's validity, not its quality.
  plan_context ctx;
  ctx.alignment = ad::plan_alignment;
  ctx.time_limit_s = 0.2;
  ctx.solver = memplan::testing::milp_backend();
  auto mp = plan(prob, sch | placers().make(placer), ctx);
  ad::planned_runner r(c.m.step, prob, mp, {.poison = true});
  std::vector<float> losses;
  std::vector<std::int64_t> high;
  auto state = [&] {
    auto go = [&](auto task) {
      ad::data_stream<decltype(task)> d(task, seed);
      for (int s = 0; s < steps; ++s) {
        losses.push_back(ad::train_step(r, c.m, d));
        high.push_back(r.last_stats().high_water);
      }
    };
    if (c.kind == 0) go(ad::two_spirals{});
    else if (c.kind == 1) go(ad::shapes16{});
    else go(ad::repeated_token{4, 6});
    return ad::read_state(c.m.step, r);
  }();
  CHECK(same_bits(losses, ref.losses));
  CHECK(same_bits(state, ref.state));
  for (auto h : high) CHECK(h == mp.arena);
}

// ILP policies run when CBC is linked (memplan::cbc), with short time limits; without CBC they
// would only repeat their fallback (the default policies), so they are skipped.
inline bool is_ilp(const std::string& name) { return name.find("ilp") != std::string::npos; }
inline constexpr const char* ilp_skip_reason = "ILP policy and CBC is not linked (memplan::cbc missing)";

// Every registered scheduler's answer for a problem, or the reason it is skipped.
struct scheduled {
  std::string name;
  std::optional<precomputed> result;
  std::string skipped;
};

inline std::vector<scheduled> all_schedules(const problem& prob, const std::vector<std::string>& names) {
  std::vector<scheduled> r;
  for (const auto& n : names) {
    scheduled s{n, std::nullopt, {}};
    if (is_ilp(n) && !memplan::testing::milp_backend().available()) {
      s.skipped = ilp_skip_reason;
    } else if (n == "exact" && prob.num_ops() > 64) {
      s.skipped = "schedule::exact handles at most 64 ops, this graph has " + std::to_string(prob.num_ops());
    } else {
      // default / local_search / exact: 0.5 s budgets keep the suite short; any valid order will do.
      plan_context ctx;
      ctx.time_limit_s = 0.5;
      ctx.solver = memplan::testing::milp_backend();
      auto res = schedulers().make(n).run(prob, ctx);
      if (res.policy.empty()) res.policy = n;
      s.result = precomputed{std::move(res)};
    }
    r.push_back(std::move(s));
  }
  return r;
}

inline void cross_product(const case_model& c, const std::vector<std::string>& schedulers,
                          const std::vector<std::string>& placers, int steps) {
  const auto prob = make_problem(ad::to_dataflow_graph(c.m.step));
  const std::uint64_t seed = 4242;
  const auto ref = eager_training(c, steps, seed);
  REQUIRE_FALSE(same_bits(ref.initial, ref.state));  // training moved the state: equality below means something
  int pairs = 0;
  for (const auto& pl : placers)
    if (is_ilp(pl) && !memplan::testing::milp_backend().available()) MESSAGE(c.name << ": placer '" << pl << "' skipped: " << ilp_skip_reason);
  for (const auto& s : all_schedules(prob, schedulers)) {
    if (!s.result) {
      MESSAGE(c.name << ": scheduler '" << s.name << "' skipped: " << s.skipped);
      continue;
    }
    for (const auto& pl : placers) {
      if (is_ilp(pl) && !memplan::testing::milp_backend().available()) continue;
      check_planned(c, prob, *s.result, pl, ref, steps, seed);
      ++pairs;
    }
  }
  MESSAGE(c.name << " (" << prob.num_ops() << " ops): " << pairs << " scheduler x placer plans trained " << steps
                 << " steps bitwise equal to eager");
  CHECK(pairs > 0);
}

// ---- implementation choices ------------------------------------------------------------------

// Test-only stage: gives every op step that has implementation alternatives one of them -- drawn per
// op from `seed` (the same for every step of an op), the one with the least workspace (first on a
// tie), or a non-default one for every op (alternatives in turn by op id) -- and re-derives the
// profile, so that the placer places the chosen workspaces. Not a planning policy (it ignores
// costs): it makes plans whose steps run non-default implementations. It sits in the checkpointer
// slot of a pipeline, the slot between scheduler and placer.
struct choose_implementations {
  static constexpr stage_kind kind = stage_kind::checkpointer;
  enum class mode { random, least_workspace, every_alternative };
  mode how = mode::random;
  std::uint64_t seed = 1;
  [[nodiscard]] std::string name() const {
    if (how == mode::random) return "choose_implementations(seed " + std::to_string(seed) + ")";
    return how == mode::least_workspace ? "choose_implementations(least workspace)" : "choose_implementations(every alternative)";
  }
  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context&) const {
    for (auto& st : tl.steps) {
      if (!runs_op(st.kind)) continue;
      const auto im = p.implementations(st.op());
      if (im.empty()) continue;
      const auto n = static_cast<std::int32_t>(im.size());
      if (how == mode::random) {
        ad::rng g(seed * 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(st.op().value()));
        st.impl = static_cast<std::int32_t>(g.below(n));
      } else if (how == mode::every_alternative) {
        st.impl = n > 1 ? 1 + st.op().value() % (n - 1) : 0;
      } else {
        std::size_t best = 0;
        for (std::size_t k = 1; k < im.size(); ++k)
          if (im[k].workspace < im[best].workspace) best = k;
        st.impl = static_cast<std::int32_t>(best);
      }
    }
    derive(p, tl);
    return tl;
  }
};

// memplan::plan(p, sched | pick | placer, ctx) but for the lower bound the plan claims. plan()
// certifies a plan that only reorders against lower_bound_peak(p), and that bound counts every op's
// own (default) workspace, so it does not hold once steps choose an implementation with less
// workspace (verify then rejects the plan: "lower bound above its own peak"; a core issue, reported).
// Here the plan claims op_local_bound(p), which takes each op's smallest workspace. Verified.
template <class S, class P>
memory_plan plan_choosing(const problem& p, const S& sched, const choose_implementations& pick, const P& placer, plan_context ctx) {
  ctx.alignment = ad::plan_alignment;
  ctx.cache = ctx.cache_for(p);
  auto tl = run_stage(sched, p, timeline{}, ctx);
  tl = run_stage(pick, p, std::move(tl), ctx);
  tl = run_stage(placer, p, std::move(tl), ctx);
  memory_plan mp{std::move(tl), {}};
  mp.stats = timeline_stats(p, mp);
  set_lower_bound(mp.stats, op_local_bound(p));
  mp.stats.given_peak = ctx.cache->given_peak();
  verify_or_throw(p, mp);
  return mp;
}

// Steps of a plan that run a non-default implementation.
inline int non_default_steps(const memory_plan& mp) {
  int n = 0;
  for (const auto& st : mp.steps) n += runs_op(st.kind) && st.impl > 0;
  return n;
}

// Trains under a plan whose steps chose implementations and eagerly with the same choices
// (implementation_choices), poisoned, from the same seed and data: every loss and the final weights
// and optimizer state bit for bit, and the arena's high-water equals the plan's arena every step.
inline void check_with_choices(const case_model& c, const problem& prob, const memory_plan& mp, int steps, std::uint64_t seed) {
  // Under the sanitizer three steps: every plan still runs forward, backward and the update in lockstep
  // with eager (the default build trains the full count).
  steps = memplan::testing::full_or_sanitized(steps, std::min(steps, 3));
  CAPTURE(c.name);
  CAPTURE(mp.stats.scheduler);
  CAPTURE(mp.stats.checkpointer);
  CAPTURE(mp.stats.placer);
  const auto choices = ad::implementation_choices(c.m.step, prob, mp);
  const auto ref = eager_training(c, steps, seed, choices);
  REQUIRE_FALSE(same_bits(ref.initial, ref.state));
  ad::planned_runner r(c.m.step, prob, mp, {.poison = true});
  CHECK(r.implementation_choices() == choices);
  std::vector<float> losses;
  std::vector<std::int64_t> high;
  const auto state = train(r, c, steps, seed, &losses, &high);
  CHECK(same_bits(losses, ref.losses));
  CHECK(same_bits(state, ref.state));
  for (auto h : high) CHECK(h == mp.arena);
}

// Every registered scheduler x placer with implementations chosen at random per plan (a new seed
// for every pair), each plan checked by check_with_choices.
inline void cross_product_with_choices(const case_model& c, const std::vector<std::string>& schedulers,
                                       const std::vector<std::string>& placer_names, int steps) {
  const auto prob = ad::make_problem(c.m.step);
  int pairs = 0, chosen = 0;
  std::uint64_t seed = 0;
  for (const auto& s : all_schedules(prob, schedulers)) {
    if (!s.result) {
      MESSAGE(c.name << ": scheduler '" << s.name << "' skipped: " << s.skipped);
      continue;
    }
    for (const auto& pl : placer_names) {
      if (is_ilp(pl) && !memplan::testing::milp_backend().available()) continue;
      plan_context ctx;
      ctx.time_limit_s = 0.2;
      ctx.solver = memplan::testing::milp_backend();
      const auto mp = plan_choosing(prob, *s.result, choose_implementations{choose_implementations::mode::random, ++seed},
                                    placers().make(pl), ctx);
      check_with_choices(c, prob, mp, steps, 4242);
      chosen += non_default_steps(mp);
      ++pairs;
    }
  }
  MESSAGE(c.name << " (" << prob.num_ops() << " ops): " << pairs << " scheduler x placer plans with random implementation choices ("
                 << chosen << " non-default steps) trained " << steps << " steps bitwise equal to eager with the same choices");
  CHECK(pairs > 0);
  CHECK(chosen > 0);
}

// Joint implementation choice and recomputation (remat::monet_greedy, remat::monet_ilp): the CNN and an
// MLP train under the named checkpointers' plans at 90, 75 and 60 % of the fastest-implementation
// arena, bitwise equal to eager with the plans' choices, high-water == arena <= budget; some plan
// leaves an op off its fastest implementation.
// (expect_off_fastest: some plan must leave an op off its fastest implementation -- asked only with
// a time limit long enough for the search to get there on a loaded or sanitized build.)
inline void check_joint_choice_plans(std::initializer_list<const char*> names, double time_limit_s, bool expect_off_fastest) {
  const auto sched = schedule::default_scheduler{.time_limit_s = -1, .max_iterations = 5000};
  // The CNN (convolutions: im2col + GEMM with a workspace, or direct) and an MLP whose activations
  // outweigh its weights (matmuls: packed with a workspace, or plain loops).
  const case_model mlp{"mlp", ad::models::mlp({.batch = 64, .in = 2, .hidden = 64, .layers = 4, .classes = 2}, ad::adam{0.01f}), 0};
  int all_plans = 0, all_off = 0;
  for (const auto& c : {small_cnn(), mlp}) {
    const auto prob = ad::make_problem(c.m.step);
    REQUIRE(remat::has_implementations(prob));
    plan_context ctx;
    ctx.alignment = ad::plan_alignment;
    ctx.solver = memplan::testing::milp_backend();
    // The arena with every op on its fastest implementation and nothing recomputed.
    const auto fast = plan(prob, sched | remat::monet_greedy{} | place::default_placer{}, ctx);
    int plans = 0, off_fastest = 0, recomputing = 0;
    for (auto budget : {fast.arena * 9 / 10, fast.arena * 3 / 4, fast.arena * 3 / 5}) {
      for (const auto* name : names) {
        CAPTURE(c.name);
        CAPTURE(name);
        CAPTURE(budget);
        plan_context bc = ctx;
        bc.budget = budget;
        bc.time_limit_s = time_limit_s;
        memory_plan mp;
        try {
          mp = plan(prob, sched | checkpointers().make(name) | place::default_placer{}, bc);
        } catch (const error& e) {
          CHECK(e.code() == errc::infeasible);
          continue;
        }
        CHECK(mp.arena <= budget);
        check_with_choices(c, prob, mp, 12, 47);  // bitwise = eager with the plan's choices; high-water == arena
        ++plans;
        bool rec = false;
        for (const auto& s : mp.steps) rec |= s.kind == step_kind::recompute;
        recomputing += rec;
        for (const auto& s : mp.steps)
          if (s.kind == step_kind::compute && step_cost(prob, s) > remat::implementation_front(prob, s.id).front().cost) {
            ++off_fastest;
            break;
          }
      }
    }
    MESSAGE(c.name << ": fastest-implementation arena " << fast.arena << " B; " << plans << " joint plans trained bitwise equal to eager, "
                   << off_fastest << " with ops off their fastest implementation, " << recomputing << " recomputing");
    all_plans += plans;
    all_off += off_fastest;
  }
  CHECK(all_plans > 0);
  if (expect_off_fastest) CHECK(all_off > 0);
}

}  // namespace adplanned
