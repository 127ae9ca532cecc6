#pragma once
// remat::best_solver_free -- the best plan of the solver-free checkpointers within a time limit, over
// the implementations the timeline already has (no operator choice; remat::default_checkpointer adds
// that on graphs with implementation alternatives). They run while time is left, fast ones first
// (Chen's Alg. 3 segments, then greedy's fine-grained eviction, Chen's segments with the cheap-results
// rule, greedy keeping the values that end in-place chains, the chain DP, revolve, and greedy keeping
// the inputs that rebuild what it drops), each searching
// within what is left of the time limit; the winner is the first plan that meets the memory target at the
// least recompute cost (best_of's rule for checkpointers), and without a target the timeline is
// returned unchanged. A greedy winner then runs again annealing its drop set (`anneal`).
// Deterministic in deterministic mode (all run).
#include <algorithm>
#include <cstdio>
#include <deque>
#include <optional>
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
  // A plan on one of the scheduler's alternative orders (timeline::alternatives) must recompute this
  // fraction less than the best plan on the first order to win (see pick in run_as).
  double alternative_margin = 0.03;
  [[nodiscard]] std::string name() const { return "best_solver_free"; }

  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const { return run_as(p, std::move(tl), ctx, name()); }

  // The same search, its stage record labelled `label` ("default(chen_budget)", "default: ...").
  [[nodiscard]] timeline run_as(const problem& p, timeline tl, const plan_context& ctx, const std::string& label) const {
    const auto target = detail::target_of(ctx);
    auto alternatives = std::move(tl.alternatives);
    tl.alternatives.clear();
    if (target == std::numeric_limits<std::int64_t>::max() || tl.peak <= target) {
      tl.stages.push_back({kind, label, 0.0, label + ": the peak meets the target (or there is none): nothing recomputed"});
      return tl;
    }
    const auto clock = deadline::after(ctx.time_limit_or(time_limit_s));
    // The orders the members run on: the timeline's, then each alternative the scheduler left
    // (timeline::alternatives) where greedy recomputes less than on the first; an engine each (its
    // ops' implementations, so its costs, follow that order's timeline).
    std::vector<timeline> inputs;
    std::vector<std::string> input_name{""};
    std::deque<::memplan::remat::detail::engine> engines;
    inputs.push_back(std::move(tl));
    engines.emplace_back(p, inputs.front());
    std::size_t in = 0;  // the input the members run on now
    std::vector<detail::candidate> cs;
    std::vector<std::size_t> input_of;  // per candidate: its input
    std::string tried;
    // Chen's Alg. 3 first: a few replays of the engine, fast on any size (0.06 s on ResNet-50, 0.26 s
    // on DenseNet-121 at batch 32), and the better plan where the forward chain has clear cuts
    // (DenseNet-121 at half its peak: 64 % overhead against greedy's 115 %; ResNet-1001: 32.8 %).
    // Then greedy's fine-grained drops and evictions, which win on graphs with cheap activations
    // (ResNet-50 at 0.7x: 4.1 % against 19.7 %) but take seconds on large or dense graphs.
    // Last: greedy keeping rebuild inputs (DenseNet-121 at half its peak: 11.3 % against greedy's 36.8 %),
    // which runs only while a share of the time limit is left (ResNet-1001's search already takes 0.9 s).
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
      auto out = stage.run(p, inputs[in], sub);
      fastest = std::min(fastest, clock.elapsed() - started);
      detail::candidate c{std::move(out), 0.0, {}};
      c.cost = detail::recompute_cost(engines[in], c.tl);
      c.what = (input_name[in].empty() ? "" : "on the " + input_name[in] + " order: ") + (c.tl.stages.empty() ? stage.name() : c.tl.stages.back().note);
      char cost[32];
      std::snprintf(cost, sizeof cost, "%.4g", c.cost);
      tried += (tried.empty() ? "" : ", ") + (input_name[in].empty() ? "" : input_name[in] + ":") + stage.name() + " peak " +
               std::to_string(c.tl.peak) + " cost " + cost;
      cs.push_back(std::move(c));
      input_of.push_back(in);
    };
    std::vector<std::size_t> member_of;  // per candidate: the member that made it
    std::size_t index = 0;
    std::size_t skip = std::tuple_size_v<decltype(members)>;  // a member not to run again (on an alternative: greedy ran already)
    auto run_member = [&](const auto& m) {
      const auto before = cs.size();
      if (index != skip) consider(m);
      if (cs.size() > before) member_of.push_back(index);
      ++index;
    };
    std::apply([&](const auto&... m) { (run_member(m), ...); }, members);
    // The alternative orders: greedy (member 1, the usual winner, one of the fast members) on each;
    // where its plan meets the target and recomputes alternative_margin less than greedy's on the
    // first order (or greedy's there does not meet it), the other members run on that order too (an
    // even share each of the time left), and every plan competes. Greedy alone decides which orders
    // are tried in full: a whole search per order would double the stage's time on every graph.
    // EfficientNet-B0 b32 at half its peak: 10.2 -> 9.6 % (the graph's own order).
    constexpr std::size_t greedy_member = 1;
    static_assert(std::is_same_v<std::tuple_element_t<greedy_member, std::decay_t<decltype(members)>>, greedy>,
                  "best_solver_free: greedy_member must name the members' greedy");
    std::optional<double> first_greedy;
    for (std::size_t i = 0; i < cs.size(); ++i)
      if (member_of[i] == greedy_member && cs[i].tl.peak <= target) first_greedy = cs[i].cost;
    std::string alternatives_note;
    for (const auto& a : alternatives) {
      if (!cs.empty() && (clock.expired() || clock.seconds_left() < fastest)) {
        alternatives_note += "; the " + a.policy + " order not tried (time limit)";
        continue;
      }
      inputs.push_back(::memplan::detail::alternative_timeline(p, inputs.front(), a, ctx));
      input_name.push_back(a.policy);
      engines.emplace_back(p, inputs.back());
      in = inputs.size() - 1;
      const auto before = cs.size();
      members_left = 1;
      consider(std::get<greedy_member>(members));
      if (cs.size() > before) member_of.push_back(greedy_member);
      const bool better =
          cs.size() > before && cs.back().tl.peak <= target && (!first_greedy || cs.back().cost <= (1.0 - alternative_margin) * *first_greedy);
      if (!better) continue;
      alternatives_note += "; the " + a.policy + " order tried in full (greedy recomputes less there)";
      members_left = static_cast<int>(std::tuple_size_v<decltype(members)>) - 1;
      index = 0;
      skip = greedy_member;
      std::apply([&](const auto&... m) { (run_member(m), ...); }, members);
    }
    tried += alternatives_note;
    // The winner: choose's rule over every plan, but a plan on an alternative order wins only when it
    // recomputes at least alternative_margin less than the best on the first order. Plans are chosen
    // before they are placed, and where the winner's arena overshoots, plan() places the runners-up
    // with a quarter of the placing work: the first order's plan, which had placed at its peak with
    // all of it, then overshot too (Inception-v3 b32 at 0.4x, with 2 of its variant groups: another
    // order's plan 2.3 % cheaper won, and the plan kept recomputed 10.99 % where it had 9.28 %).
    auto pick = [&]() -> std::size_t {
      const auto k = detail::choose(cs, target);
      if (input_of[k] == 0 || cs[k].tl.peak > target) return k;
      std::optional<std::size_t> first;
      for (std::size_t i = 0; i < cs.size(); ++i)
        if (input_of[i] == 0 && cs[i].tl.peak <= target && (!first || cs[i].cost < cs[*first].cost)) first = i;
      return first && cs[k].cost > (1.0 - alternative_margin) * cs[*first].cost ? *first : k;
    };
    // Then the winner, when it is a greedy variant, again with its drop set annealed (remat::greedy's
    // phase 3: counted steps, on graphs where they are at most its anneal_work op replays) in what is
    // left of the time: SqueezeNet at batch 32 and half its peak, 12.5 -> 10.2 % in 0.4 s more.
    if (anneal && !cs.empty()) {
      const auto w = pick();
      const auto winner = member_of[w];
      in = input_of[w];
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
    const auto k = pick();
    auto finish = [&](std::size_t i) {
      auto t = std::move(cs[i].tl);
      auto rec = t.stages.back();
      t.stages.pop_back();
      const auto& order = input_name[input_of[i]];
      rec.name = label + "(" + rec.name + (order.empty() ? "" : " on " + order) + ")";
      rec.note = label + ": " + tried + "; chose " + (order.empty() ? "" : "on the " + order + " order: ") + rec.note;
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
