#pragma once
// remat::best_solver_free -- the best plan of the solver-free checkpointers within a time budget, over
// the implementations the timeline already has (no operator choice; remat::default_checkpointer adds
// that on graphs with implementation alternatives). They run while time is left, fast ones first
// (Chen's Alg. 3 segments, then greedy's fine-grained eviction, Chen's segments with the cheap-results
// rule, greedy keeping the values that end in-place chains, the chain DP, revolve, and greedy keeping
// the inputs that rebuild what it drops), each searching
// within what is left of the budget; the winner is the first plan that meets the memory target at the
// least recompute cost (best_of's rule for checkpointers), and without a target the timeline is
// returned unchanged. A greedy winner then runs again annealing its drop set (`anneal`).
// Deterministic in deterministic mode (all run).
#include <algorithm>
#include <cstdio>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <memplan/base/deadline.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/remat/chain_dp.hpp>
#include <memplan/remat/chen.hpp>
#include <memplan/remat/detail.hpp>
#include <memplan/remat/greedy.hpp>
#include <memplan/remat/revolve.hpp>

namespace memplan::remat {

struct best_solver_free {
  static constexpr stage_kind kind = stage_kind::checkpointer;
  double time_limit_s = 1.0;  // for the whole search (members poll it between their replays)
  bool anneal = true;         // then the winning greedy variant again, annealing its drop set (greedy::anneal)
  [[nodiscard]] std::string name() const { return "best_solver_free"; }

  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const { return run_as(p, std::move(tl), ctx, name()); }

  // The same search, its stage record labelled `label` ("default(chen_budget)", "default: ...").
  [[nodiscard]] timeline run_as(const problem& p, timeline tl, const plan_context& ctx, const std::string& label) const {
    const auto target = detail::target_of(ctx);
    if (target == std::numeric_limits<std::int64_t>::max() || tl.peak <= target) {
      tl.stages.push_back({kind, label, 0.0, label + ": the peak meets the target (or there is none): nothing recomputed"});
      return tl;
    }
    const auto clock = deadline::after(ctx.time_limit_or(time_limit_s));
    ::memplan::remat::detail::engine e(p, tl);
    std::vector<detail::candidate> cs;
    std::string tried;
    // Chen's Alg. 3 first: a few replays of the engine, fast on any size (0.06 s on ResNet-50, 0.26 s
    // on DenseNet-121 at batch 32), and the better plan where the forward chain has clear cuts
    // (DenseNet-121 at half its peak: 64 % overhead against greedy's 115 %; ResNet-1001: 32.8 %).
    // Then greedy's fine-grained drops and evictions, which win on graphs with cheap activations
    // (ResNet-50 at 0.7x: 4.1 % against 19.7 %) but take seconds on large or dense graphs.
    // Last: greedy keeping rebuild inputs (DenseNet-121 at half its peak: 11.3 % against greedy's 36.8 %),
    // which runs only while a share of the budget is left (ResNet-1001's search already takes 0.9 s).
    const auto members = std::make_tuple(chen_budget{}, greedy{}, chen_budget{.drop_cheap = true}, greedy{.inplace_chains = false}, chain_dp{},
                                         revolve{}, greedy{.keep_rebuild_inputs = true});
    // The last member takes what the others leave: they keep the even shares they had without it.
    int members_left = static_cast<int>(std::tuple_size_v<decltype(members)>) - 1;
    double fastest = 1e18;  // the shortest member run so far: a later member needs at least about that
    auto consider = [&](const auto& stage) {
      const int share_of = std::max(1, members_left--);
      if (!cs.empty() && (clock.expired() || clock.seconds_left() < fastest)) return;
      // Each member searches within an even share of what is left (in deterministic mode: its own work
      // limits): given all of it, chain_dp's budget sweep used the time up and revolve, started with a
      // few milliseconds left, still ran its first replay (50 ms on ShuffleNet at batch 32: a 25 %
      // overrun of a 0.2 s limit).
      auto sub = ctx;
      if (!ctx.deterministic && !cs.empty()) sub.time_limit_s = std::max(0.0, std::min(clock.seconds_left(), 1e9)) / share_of;
      const double started = clock.elapsed();
      auto out = stage.run(p, tl, sub);
      fastest = std::min(fastest, clock.elapsed() - started);
      detail::candidate c{std::move(out), 0.0, {}};
      c.cost = detail::recompute_cost(e, c.tl);
      c.what = c.tl.stages.empty() ? stage.name() : c.tl.stages.back().note;
      char cost[32];
      std::snprintf(cost, sizeof cost, "%.4g", c.cost);
      tried += (tried.empty() ? "" : ", ") + stage.name() + " peak " + std::to_string(c.tl.peak) + " cost " + cost;
      cs.push_back(std::move(c));
    };
    std::vector<std::size_t> member_of;  // per candidate: the member that made it
    std::size_t index = 0;
    auto run_member = [&](const auto& m) {
      const auto before = cs.size();
      consider(m);
      if (cs.size() > before) member_of.push_back(index);
      ++index;
    };
    std::apply([&](const auto&... m) { (run_member(m), ...); }, members);
    // Then the winner, when it is a greedy variant, again with its drop set annealed (remat::greedy's
    // phase 3: counted steps, on graphs where they are at most its anneal_work op replays) in what is
    // left of the time: SqueezeNet at batch 32 and half its peak, 12.5 -> 10.2 % in 0.4 s more.
    if (anneal && !cs.empty()) {
      const auto winner = member_of[detail::choose(cs, target)];
      index = 0;
      auto anneal_member = [&](const auto& m) {
        if constexpr (std::is_same_v<std::decay_t<decltype(m)>, greedy>) {
          if (index == winner) {
            auto g = m;
            g.anneal = true;
            members_left = 1;  // all the time left
            consider(g);
          }
        }
        ++index;
      };
      std::apply([&](const auto&... m) { (anneal_member(m), ...); }, members);
    }
    const auto k = detail::choose(cs, target);
    auto finish = [&](std::size_t i) {
      auto t = std::move(cs[i].tl);
      auto rec = t.stages.back();
      t.stages.pop_back();
      rec.name = label + "(" + rec.name + ")";
      rec.note = label + ": " + tried + "; chose " + rec.note;
      t.stages.push_back(std::move(rec));
      return t;
    };
    // The other plans that meet the target, for plan() to place when the winner's arena overshoots
    // (plan_context::runners_up): in choose's order, each a different plan (the annealed member may
    // return its member's plan again).
    std::vector<std::size_t> others;
    if (ctx.runners_up) {
      for (std::size_t i = 0; i < cs.size(); ++i)
        if (i != k && cs[i].tl.peak <= target && !cs[i].tl.steps.empty()) others.push_back(i);
      std::stable_sort(others.begin(), others.end(), [&](std::size_t a, std::size_t b) {
        return cs[a].cost < cs[b].cost || (cs[a].cost == cs[b].cost && cs[a].tl.peak < cs[b].tl.peak);
      });
      std::vector<std::size_t> kept;
      for (auto i : others) {
        const auto same = [&](std::size_t j) { return cs[j].cost == cs[i].cost && cs[j].tl.peak == cs[i].tl.peak; };
        if (same(k) || std::any_of(kept.begin(), kept.end(), same)) continue;
        if (kept.size() == plan_context::max_runners_up) break;
        kept.push_back(i);
      }
      others = std::move(kept);
    }
    auto out = finish(k);
    for (auto i : others) ctx.runners_up->push_back(finish(i));
    return out;
  }
};

static_assert(timeline_stage<best_solver_free>);

}  // namespace memplan::remat
