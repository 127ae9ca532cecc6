// Property tests at volume: random training-like graphs through every registered scheduler, placer,
// checkpointer and offloader, and random buffer sets through every placer. Every plan must pass
// memplan::verify and the independent simulator (simulate.hpp); every placement place::check and a
// pairwise check. MEMPLAN_PROPERTY_DAGS / MEMPLAN_PROPERTY_OFFLOAD_DAGS / MEMPLAN_PROPERTY_IMPL_DAGS /
// MEMPLAN_PROPERTY_BUFFER_SETS set the counts (CMakeLists.txt: the full counts under label `slow`,
// fewer in the default run).
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <memplan/core/pipeline.hpp>
#include <memplan/core/variants.hpp>
#include <memplan/core/verify.hpp>
#include <memplan/registry/checkpointers.hpp>
#include <memplan/registry/offloaders.hpp>
#include <memplan/registry/placers.hpp>
#include <memplan/registry/schedulers.hpp>

#include "../core/random_variants.hpp"
#include "../remat/remat_graphs.hpp"
#include "../support/sanitizer_scale.hpp"
#include "simulate.hpp"
#include "training_dag.hpp"

#ifndef MEMPLAN_PROPERTY_DAGS
#define MEMPLAN_PROPERTY_DAGS 10000
#endif
// Under AddressSanitizer (the `sanitize` preset) a tenth of the graphs: the same code, ~10x slower.
#ifndef MEMPLAN_PROPERTY_SCALE
#define MEMPLAN_PROPERTY_SCALE (memplan::testing::full_or_sanitized(1, 10))
#endif
#ifndef MEMPLAN_PROPERTY_BUFFER_SETS
#define MEMPLAN_PROPERTY_BUFFER_SETS 1000
#endif
#ifndef MEMPLAN_PROPERTY_OFFLOAD_DAGS
#define MEMPLAN_PROPERTY_OFFLOAD_DAGS MEMPLAN_PROPERTY_DAGS
#endif
// Graphs with implementations go through every scheduler, checkpointer and offloader: a quarter of the graphs.
#ifndef MEMPLAN_PROPERTY_IMPL_DAGS
#define MEMPLAN_PROPERTY_IMPL_DAGS (MEMPLAN_PROPERTY_DAGS / 4)
#endif

using namespace memplan;

namespace {

struct tally {
  std::int64_t plans = 0, clear_errors = 0;
  double seconds = 0;
};

// The online allocator models refuse what an online allocator cannot do (pinned buffers; the caching
// allocator also alignments above its 512-byte blocks) with errc::invalid_argument, by design.
bool documented_refusal(const std::string& policy) {
  return policy.find("online_") != std::string::npos || policy.find("caching_allocator") != std::string::npos;
}

std::int64_t alignment_for(std::uint64_t seed) {
  switch (seed % 10) {
    case 0: return 64;
    case 1: return 256;
    case 2: return std::int64_t{1} << 30;  // 1 GiB
    default: return 1;
  }
}

// The checkpointers' budget: three quarters of the way from the op-local bound to the given order's peak.
std::int64_t checkpointer_budget(const problem& p) {
  const auto given_peak = peak_of(p, given_order(p));
  const auto floor = op_local_bound(p);
  return floor + (given_peak - floor) / 2 + (given_peak - floor) / 4;
}

// Plans p with `pipeline` under ctx and checks the plan: `verify` and the simulator, the arena within
// ctx.budget, the makespan at or above its lower bound, the host peak within the host limit. Counts
// it in t; a refusal must be clear (a budget no plan meets, a graph beyond an exact method's limit, an
// alignment the caching-allocator model cannot give: documented, above its 512-byte blocks). Anything
// else is reported (the first 10) and counted in `failures`. Returns the plan, or nothing.
template <class Pipeline>
std::optional<memory_plan> plan_and_check(const problem& p, const Pipeline& pipeline, const plan_context& ctx, std::uint64_t seed,
                                          const std::string& label, tally& t, std::int64_t& failures) {
  const auto t0 = std::chrono::steady_clock::now();
  std::optional<memory_plan> out;
  try {
    auto mp = memplan::plan(p, pipeline, ctx);
    ++t.plans;
    const auto v = verify(p, mp);
    const auto sim = testing::simulate_plan(p, mp);
    std::string wrong;
    if (!v.ok || sim) wrong = "verify: " + v.violation + "; simulator: " + sim.value_or("ok");
    else if (ctx.budget >= 0 && mp.arena > ctx.budget) wrong = "arena " + std::to_string(mp.arena) + " above the budget";
    else if (mp.stats.makespan < mp.stats.makespan_lower_bound * (1 - 1e-9))
      wrong = "makespan " + std::to_string(mp.stats.makespan) + " below its bound " + std::to_string(mp.stats.makespan_lower_bound);
    else if (ctx.timing.host_limit >= 0 && mp.stats.host_peak > ctx.timing.host_limit)
      wrong = "host peak " + std::to_string(mp.stats.host_peak) + " above the host limit";
    if (!wrong.empty()) {
      ++failures;
      if (failures <= 10) FAIL_CHECK("seed " << seed << ", " << label << ": " << wrong);
    }
    out = std::move(mp);
  } catch (const error& e) {
    if (e.code() == errc::infeasible || e.code() == errc::limit_exceeded ||
        (e.code() == errc::invalid_argument && documented_refusal(label))) {
      ++t.clear_errors;
    } else {
      ++failures;
      if (failures <= 10) FAIL_CHECK("seed " << seed << ", " << label << ": " << std::string(to_string(e.code())) << ": " << std::string(e.what()));
    }
  }
  t.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace

TEST_CASE("property: random training graphs through every scheduler, placer and checkpointer, all verified twice") {
  const int n = MEMPLAN_PROPERTY_DAGS / MEMPLAN_PROPERTY_SCALE;
  std::map<std::string, tally> by_policy;
  std::int64_t failures = 0, huge_graphs = 0, zero_tensors = 0;
  auto t_all = std::chrono::steady_clock::now();
  const auto scheduler_names = schedulers().names();
  const auto placer_names = placers().names();
  const auto checkpointer_names = checkpointers().names();
  for (int i = 0; i < n; ++i) {
    const auto seed = static_cast<std::uint64_t>(i);
    const auto p = testing::training_dag(seed);
    for (tensor_id t = 0; t < p.num_tensors(); ++t) {
      if (p.bytes(t) > (std::int64_t{1} << 60)) { ++huge_graphs; break; }
    }
    for (tensor_id t = 0; t < p.num_tensors(); ++t) zero_tensors += p.bytes(t) == 0 && p.kind(t) != tensor_kind::control;
    plan_context base;
    base.alignment = alignment_for(seed);
    base.time_limit_s = 0;  // every searching policy stops at its first result: volume, not depth
    auto run = [&](const std::string& label, const auto& pipeline, const plan_context& ctx) {
      (void)plan_and_check(p, pipeline, ctx, seed, label, by_policy[label], failures);
    };
    for (const auto& s : scheduler_names) run("scheduler " + s, schedulers().make(s) | place::best_fit{}, base);
    for (const auto& pl : placer_names) run("placer " + pl, schedule::given{} | placers().make(pl), base);
    plan_context budgeted = base;
    budgeted.budget = checkpointer_budget(p);
    for (const auto& c : checkpointer_names)
      run("checkpointer " + c, schedule::given{} | checkpointers().make(c) | place::best_fit{}, budgeted);
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();
  std::int64_t plans = 0;
  for (const auto& [name, t] : by_policy) plans += t.plans;
  MESSAGE(n << " graphs (" << huge_graphs << " with tensors near 2^61, " << zero_tensors << " zero-byte tensors), " << plans
            << " verified plans in " << total << " s");
  for (const auto& [name, t] : by_policy)
    MESSAGE(name << ": " << t.plans << " plans, " << t.clear_errors << " clear refusals, " << t.seconds << " s");
  CHECK(failures == 0);
  CHECK(huge_graphs > 0);
  CHECK(zero_tensors > 0);
  // Every scheduler and placer planned nearly every graph (refusals are for budgets and exact limits).
  for (const auto& [name, t] : by_policy)
    if (name.rfind("checkpointer", 0) != 0) CHECK_MESSAGE(t.plans >= n * 9 / 10, name);
}

TEST_CASE("property: random training graphs through every offloader, verified twice, within the budget and above the makespan bound") {
  const int n = MEMPLAN_PROPERTY_OFFLOAD_DAGS / MEMPLAN_PROPERTY_SCALE;
  std::map<std::string, tally> by_policy;
  std::int64_t failures = 0, moved = 0, met_alone = 0, met_composed = 0, composed_missed = 0, scheduled_missed = 0, met_scheduled = 0,
               composed_slower = 0, composed_much_slower = 0;
  double composed_seconds = 0, better_seconds = 0;  // makespans summed where the composition and one alone met the budget
  tally checkpointer_alone;
  const auto names = offloaders().names();
  const auto t_all = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    const auto seed = static_cast<std::uint64_t>(i);
    const auto p = testing::training_dag(seed);
    const auto given_peak = peak_of(p, given_order(p));
    const auto floor = op_local_bound(p);
    plan_context ctx;
    ctx.alignment = alignment_for(seed);
    ctx.time_limit_s = 0;  // every searching policy stops at its first result: volume, not depth
    // Budgets from near the op-local bound (mostly refused) to near the peak; a copy engine slow or
    // fast against the graphs' costs; on every fifth graph a host limit of half the bytes above it.
    const double frac = (seed % 3 == 0) ? 0.25 : (seed % 3 == 1) ? 0.5 : 0.85;
    ctx.budget = floor + static_cast<std::int64_t>(frac * static_cast<double>(given_peak - floor));
    ctx.timing = {.bandwidth = seed % 2 == 0 ? 1e6 : 1e9, .device_flops = 1e9};
    if (seed % 5 == 0) ctx.timing.host_limit = (given_peak - ctx.budget) / 2;
    // Returns the makespan where the pipeline met the budget (a verified plan within it).
    auto run = [&](const std::string& name, const auto& pipeline) -> std::optional<double> {
      const auto mp = plan_and_check(p, pipeline, ctx, seed, "offloader " + name, by_policy[name], failures);
      if (!mp) return std::nullopt;
      moved += mp->stats.transfer_bytes > 0;
      return mp->stats.makespan;
    };
    std::optional<double> alone;
    for (const auto& name : names) {
      const auto met = run(name, schedule::given{} | offloaders().make(name) | place::best_fit{});
      if (name == "default") alone = met;
    }
    const bool alone_met = alone.has_value();
    // The CLI's other compositions: a reordering scheduler before the offloader, and a checkpointer
    // before it (`--checkpointer default --offloader default`), which must meet every budget that the
    // default offloader or the default checkpointer meets alone.
    // (As the CLI builds it for `--offloader default`: `none` in the checkpointer's place.)
    const bool scheduled_met = run("default after the default scheduler",
                                   schedulers().make("default") | checkpointers().make("none") | offloaders().make("default") | place::best_fit{})
                                   .has_value();
    scheduled_missed += alone_met && !scheduled_met;
    met_scheduled += scheduled_met;
    const auto composed = run("default after the default checkpointer",
                              schedule::given{} | checkpointers().make("default") | offloaders().make("default") | place::best_fit{});
    const bool composed_met = composed.has_value();
    // (Timed as the offloaders time a plan: `none` moves nothing.)
    const auto checkpointed = plan_and_check(p, schedule::given{} | checkpointers().make("default") | offloaders().make("none") | place::best_fit{},
                                             ctx, seed, "checkpointer default", checkpointer_alone, failures);
    const bool checkpointer_met = checkpointed.has_value();
    if (composed && (alone || checkpointer_met)) {
      const double better = std::min(alone.value_or(std::numeric_limits<double>::infinity()),
                                     checkpointer_met ? checkpointed->stats.makespan : std::numeric_limits<double>::infinity());
      composed_slower += *composed > better * (1 + 1e-6);
      if (*composed > better * 1.001) {
        ++composed_much_slower;
        if (composed_much_slower <= 10)
          FAIL_CHECK("seed " << seed << ": the default checkpointer then the default offloader took " << *composed
                             << " s a step, more than 0.1 % above the better of the two alone (" << better << " s)");
      }
      composed_seconds += *composed;
      better_seconds += better;
    }
    met_alone += alone_met || checkpointer_met;
    met_composed += composed_met;
    if ((alone_met || checkpointer_met) && !composed_met) {
      ++composed_missed;
      if (composed_missed <= 10)
        FAIL_CHECK("seed " << seed << ": the default checkpointer then the default offloader missed a budget that "
                           << std::string(alone_met ? "the offloader" : "the checkpointer") << " alone met");
    }
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();
  std::int64_t plans = 0;
  for (const auto& [name, t] : by_policy) plans += t.plans;
  MESSAGE(n << " graphs, " << plans << " verified offload plans (" << moved << " moving bytes) in " << total << " s");
  for (const auto& [name, t] : by_policy)
    MESSAGE("offloader " << name << ": " << t.plans << " plans, " << t.clear_errors << " clear refusals, " << t.seconds << " s");
  MESSAGE("budgets met by the default offloader or the default checkpointer alone: " << met_alone << "; by the two composed: " << met_composed
                                                                                          << ", of them slower than the better of the two alone: " << composed_slower
                                                                                          << " (makespans summed: " << composed_seconds / better_seconds << "x the better's)");
  MESSAGE("budgets met by the default offloader after the default scheduler: " << met_scheduled << "; met by it in the given order and missed after the default scheduler: " << scheduled_missed);
  CHECK(failures == 0);
  CHECK(composed_missed == 0);
  // 2,594 of 4,726 before stop 78 (up to 36 % slower), 470 at stop 78: the offloader alone runs beside
  // the composition where both meet the target, and the faster goes on (core/pipeline.hpp); 31 since
  // stop 79, all within 0.005 %: where the faster overshoots on placement, it is aimed lower before
  // the slower plan that fits is kept. Above 0.1 % it fails (FAIL_CHECK above; none of 50,000 seeds).
  CHECK(composed_slower * 50 <= met_alone);
  CHECK(composed_much_slower == 0);
  // 104 before stop 76, 23 before stop 77 (the scheduler now leaves the graph's own order under any
  // memory limit, and the budget loop's reruns go on it where it placed lower in the first run). The
  // 2 left have sizes near 2^62: a rerun's placement is refused for its size, which ends the plan
  // (4884, 7924).
  CHECK(scheduled_missed <= 2);
  CHECK(moved > 0);
  for (const auto& [name, t] : by_policy)
    if (name != "none") CHECK_MESSAGE(t.plans >= n / 4, name);  // (none moves nothing: it meets only budgets above the peak)
}

TEST_CASE("property: random training graphs with operator implementations through every scheduler, checkpointer and offloader, verified twice") {
  // MONeT's choice (issue 9): each op with a cost gets 1-3 alternatives (a fast one with a workspace
  // of one to three times its outputs, a lean one, one between; remat_graphs.hpp), and every other
  // graph variants that read other tensors (random_variants.hpp). Plans without a
  // budget choose implementations at no extra time (implementation_choice::no_slower); checkpointers
  // under a budget choose them too where they can (default, monet_greedy, monet_ilp without a solver).
  const int n = MEMPLAN_PROPERTY_IMPL_DAGS / MEMPLAN_PROPERTY_SCALE;
  std::map<std::string, tally> by_policy;
  std::int64_t failures = 0, changed = 0, refused_graphs = 0, variant_graphs = 0;
  const auto scheduler_names = schedulers().names();
  const auto checkpointer_names = checkpointers().names();
  const auto offloader_names = offloaders().names();
  for (int i = 0; i < n; ++i) {
    const auto seed = static_cast<std::uint64_t>(i);
    problem p = testing::training_dag(seed);
    try {
      p = testing::with_implementations(p, seed, 1 + static_cast<int>(seed % 3));
      // On every other graph, variants too: implementations that read another, earlier tensor
      // (core/variants.hpp), on backward ops or on any op.
      if (seed % 2 == 1) p = testing::with_random_variants(p, seed, seed % 4 == 1);
    } catch (const error& e) {  // a workspace of three times a tensor near 2^61 bytes: refused by name
      CHECK_MESSAGE(e.code() == errc::invalid_graph, e.what());
      ++refused_graphs;
      continue;
    }
    // Planners do not take variants; choose_variants rewrites the graph with those it takes (as
    // `memplan plan` does), and the rewritten graph is what is planned and verified.
    if (has_variants(p)) {
      auto r = choose_variants(p, seed % 4 == 1 ? variant_rule::no_peak_higher : variant_rule::no_step_higher);
      variant_graphs += !r.taken.empty();
      p = std::move(r.rewritten);
    }
    plan_context base;
    base.alignment = alignment_for(seed);
    base.time_limit_s = 0;
    auto run = [&](const std::string& label, const auto& pipeline, const plan_context& ctx) {
      if (const auto mp = plan_and_check(p, pipeline, ctx, seed, label, by_policy[label], failures))
        changed += std::any_of(mp->steps.begin(), mp->steps.end(),
                               [](const step& st) { return (st.kind == step_kind::compute || st.kind == step_kind::recompute) && st.impl >= 0; });
    };
    for (const auto& s : scheduler_names) run("scheduler " + s, schedulers().make(s) | place::best_fit{}, base);
    plan_context budgeted = base;
    budgeted.budget = checkpointer_budget(p);
    for (const auto& c : checkpointer_names)
      run("checkpointer " + c, schedule::given{} | checkpointers().make(c) | place::best_fit{}, budgeted);
    // Offloaders on the same graphs: ops on other implementations (workspaces) in the timelines they
    // move values out of, with a copy engine as in the offloader case above.
    plan_context timed = budgeted;
    timed.timing = {.bandwidth = seed % 2 == 0 ? 1e6 : 1e9, .device_flops = 1e9};
    if (seed % 5 == 0) timed.timing.host_limit = (peak_of(p, given_order(p)) - timed.budget) / 2;
    for (const auto& o : offloader_names)
      run("offloader " + o, schedule::given{} | offloaders().make(o) | place::best_fit{}, timed);
    run("default checkpointer, then the default offloader",
        schedule::given{} | checkpointers().make("default") | offloaders().make("default") | place::best_fit{}, timed);
  }
  std::int64_t plans = 0;
  for (const auto& [name, t] : by_policy) plans += t.plans;
  MESSAGE(n << " graphs with implementations (" << variant_graphs << " rewritten with variants; " << refused_graphs
            << " refused: a workspace beyond the limits), " << plans << " verified plans, " << changed << " with ops off their own implementation");
  for (const auto& [name, t] : by_policy)
    MESSAGE(name << ": " << t.plans << " plans, " << t.clear_errors << " clear refusals, " << t.seconds << " s");
  CHECK(failures == 0);
  CHECK(changed > 0);
  CHECK(variant_graphs > 0);
}

namespace {

// Random buffer sets: lifetimes, sizes from 0 to near 2^60, alignments, a few pinned buffers that
// never overlap (pinned at distinct slots above everything else).
place::buffer_problem random_buffers(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uni = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  place::buffer_problem bp;
  const auto n = uni(0, 48);
  const bool huge = seed % 20 == 0;
  std::int64_t pin_slot = std::int64_t{1} << 40;
  for (std::int64_t i = 0; i < n; ++i) {
    place::buffer b;
    b.lower = uni(0, 30);
    b.upper = b.lower + uni(1, 12);
    b.size = huge && uni(0, 3) == 0 ? (std::int64_t{1} << 58) + uni(0, 1 << 20) : uni(0, 5) == 0 ? 0 : uni(1, 1 << 16);
    if (uni(0, 5) == 0) b.alignment = std::int64_t{1} << uni(0, 12);
    if (!huge && uni(0, 15) == 0) {
      b.fixed_offset = pin_slot;
      pin_slot += std::int64_t{1} << 20;
      b.alignment = 1;
    }
    bp.buffers.push_back(b);
  }
  if (seed % 7 == 0) bp.alignment = 64;
  return bp;
}

// A pairwise O(n^2) check that shares nothing with place::check.
std::optional<std::string> pairwise_check(const place::buffer_problem& bp, const place::buffer_placement& pl) {
  if (pl.offsets.size() != bp.buffers.size()) return std::string("wrong number of offsets");
  std::int64_t arena = 0;
  for (std::size_t i = 0; i < bp.buffers.size(); ++i) {
    const auto& a = bp.buffers[i];
    const auto align = std::max(a.alignment, bp.alignment);
    if (pl.offsets[i] < 0 || pl.offsets[i] % align != 0) return "buffer " + std::to_string(i) + " misaligned";
    if (a.fixed_offset >= 0 && pl.offsets[i] != a.fixed_offset) return "buffer " + std::to_string(i) + " moved from its pin";
    arena = std::max(arena, pl.offsets[i] + a.size);
    for (std::size_t j = 0; j < i; ++j) {
      const auto& b = bp.buffers[j];
      if (a.size == 0 || b.size == 0 || a.upper <= b.lower || b.upper <= a.lower) continue;
      if (pl.offsets[i] < pl.offsets[j] + b.size && pl.offsets[j] < pl.offsets[i] + a.size)
        return "buffers " + std::to_string(j) + " and " + std::to_string(i) + " overlap";
    }
  }
  if (arena > pl.arena) return "arena " + std::to_string(pl.arena) + " below the highest end " + std::to_string(arena);
  if (pl.lower_bound > pl.arena) return std::string("lower bound above the arena");
  return std::nullopt;
}

}  // namespace

TEST_CASE("property: random buffer sets through every placer, checked by place::check and pairwise") {
  const int n = MEMPLAN_PROPERTY_BUFFER_SETS / MEMPLAN_PROPERTY_SCALE;
  std::int64_t failures = 0, placements = 0, refusals = 0;
  const auto names = placers().names();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    const auto bp = random_buffers(static_cast<std::uint64_t>(i));
    for (const auto& name : names) {
      try {
        const auto pl = placers().make(name).place(bp, plan_context{.time_limit_s = 0});
        ++placements;
        const auto a = check(bp, pl);
        const auto b = pairwise_check(bp, pl);
        if (a || b) {
          ++failures;
          if (failures <= 10) FAIL_CHECK("set " << i << ", " << name << ": " << a.value_or("ok") << "; " << b.value_or("ok"));
        }
      } catch (const error& e) {
        // Sets of the `huge` kind whose sizes and padding could need an arena beyond 2^62 are refused
        // by validate() for every placer (offsets are int64): 4 sets of the 10,000 under label slow.
        const bool beyond_int64 = e.code() == errc::limit_exceeded && std::string(e.what()).find("beyond 2^62") != std::string::npos;
        if ((e.code() == errc::invalid_argument && documented_refusal(name)) || beyond_int64) {
          ++refusals;
          continue;
        }
        ++failures;
        if (failures <= 10) FAIL_CHECK("set " << i << ", " << name << ": " << std::string(to_string(e.code())) << ": " << std::string(e.what()));
      }
    }
  }
  MESSAGE(n << " buffer sets, " << placements << " placements checked, " << refusals << " documented refusals (online models: pins, alignment) in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s");
  CHECK(failures == 0);
  CHECK(placements + refusals == static_cast<std::int64_t>(n) * static_cast<std::int64_t>(names.size()));
  CHECK(refusals * 5 < placements);
}
