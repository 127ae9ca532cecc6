#pragma once
// schedule::default_scheduler -- what `memplan plan` uses without --scheduler: the best order
// found without a solver. Every list-scheduler rule (with DFS and given-order tie-breaks, and
// under OLLA §4.3 early weight-update edges when the graph has update ops) runs, and the given
// order when it is executable; local_search then improves the two best distinct orders (half the
// time each) and the lowest peak wins (first on ties); with a memory target below the bound on
// every order's peak (recomputation or offloading will follow) the local search is skipped. It fills
// lower_bound (lower_bound_peak) and sets optimal when the peak reaches it. Under a memory limit it
// leaves other orders (timeline::alternatives) for the stages after it: the second best below every
// order's peak, and the given order wherever it differs from the chosen one.
// Cost: 12 list schedules (forward and reverse), O((V + E) log V) each (plus the early-update transform, O(updates *
// 4096)), the lower bound, and the local search: at most max_iterations moves and time_limit_s
// seconds (the list schedulers are not counted against it: they always run to completion).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <memplan/core/analysis.hpp>
#include <memplan/base/deadline.hpp>
#include <memplan/base/progress.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/schedule/list_scheduler.hpp>
#include <memplan/schedule/local_search.hpp>

namespace memplan::schedule {

// The list schedulers the default (and the registry's "best_of") tries, in tie-break order.
inline std::vector<list_scheduler> default_heuristics(bool with_early_updates = true) {
  std::vector<list_scheduler> h{peak_aware(), lookahead(), min_net_growth(), max_free(), depth_first()};
  h.push_back({priority::lookahead, true, tie_break::dfs, false, false});
  h.push_back({priority::min_net_growth, true, tie_break::given, false, false});
  h.push_back({priority::min_net_growth, false, tie_break::given, false, false});
  h.push_back(reverse_min_net_growth());
  h.push_back({priority::min_net_growth, false, tie_break::given, false, true});
  h.push_back({priority::max_free, false, tie_break::dfs, false, true});
  if (with_early_updates) h.push_back({priority::min_net_growth, true, tie_break::dfs, true, false});
  if (with_early_updates) h.push_back({priority::min_net_growth, false, tie_break::dfs, true, true});
  return h;
}

struct default_scheduler {
  double time_limit_s = 1.0;             // for the local search (< 0: iterations only, fully deterministic)
  std::int64_t max_iterations = 400000;  // local-search moves, split over the two starts (deterministic limit)
  std::uint64_t seed = 1;

  [[nodiscard]] std::string name() const { return "default"; }

  [[nodiscard]] schedule_result run(const problem& p, const plan_context& ctx = {}) const {
    // The time limit covers the whole stage: the list heuristics (all of them run unless the clock has
    // stopped after the first) and the local search, which gets what they left.
    const auto limit = ctx.time_limit_or(time_limit_s);
    const auto clock = deadline::after(limit);
    schedule_result best;
    const auto lb = ctx.order_bound(p);
    bool has_updates = false;
    for (op_id o = 0; o < p.num_ops() && !has_updates; ++o) has_updates = p.phase(o) == op_phase::update;
    std::string tried;
    // The two best distinct orders (lowest peak first; ties: the earlier heuristic).
    std::vector<schedule_result> top;
    for (const auto& h : default_heuristics(has_updates)) {
      if (!top.empty() && clock.expired()) {
        tried += " (time limit reached)";
        break;
      }
      auto r = h.run(p);
      tried += (tried.empty() ? "" : ", ") + r.policy + "=" + std::to_string(r.peak);
      report(ctx.progress, "default", r.policy, clock.elapsed(), r.peak, lb);
      bool dup = false;
      for (const auto& t : top) dup |= t.order == r.order;
      if (!dup) {
        top.push_back(std::move(r));
        std::stable_sort(top.begin(), top.end(), [](const schedule_result& a, const schedule_result& b) { return a.peak < b.peak; });
        if (top.size() > 2) top.pop_back();
      }
      if (top.front().peak <= lb) break;  // cannot do better
    }
    // The graph's own order competes too (last: ties go to the heuristics), so the default is
    // never worse than `given` when the given order is executable.
    // Under a memory limit it is computed even where a heuristic reached the bound: it goes on as an
    // alternative (below), never as the winner at an equal peak.
    schedule_result given;
    const bool limited = ctx.has_memory_limit();
    if (top.front().peak > lb || limited) {
      const auto gp = ctx.given_peak(p);
      if (gp >= 0) {
        schedule_result g;
        g.peak = gp;
        g.order = given_order(p);
        g.policy = "given";
        tried += ", given=" + std::to_string(g.peak);
        bool dup = false;
        for (const auto& t : top) dup |= t.order == g.order;
        if (!dup) {
          given = g;
          top.push_back(std::move(g));
          std::stable_sort(top.begin(), top.end(), [](const schedule_result& a, const schedule_result& b) { return a.peak < b.peak; });
          if (top.size() > 2) top.pop_back();
        }
      }
    }
    best = top.front();
    const auto winner = best.policy;
    std::string note = "default: " + tried;
    // A memory target below the bound on every order's peak means a checkpointer or offloader will
    // decide the memory, not the order's peak. The local search's moves keep the peak and shrink the
    // profile's area, which serves no later stage: measured at half the peak of the batch-32 exports,
    // the list order lets the default checkpointer fit ResNet-18 at 8.4 % overhead where the searched
    // one overshot, and is no worse on the 15 others (GoogLeNet 8.0 -> 7.6 %). So it is skipped.
    // The peak then does not say which order recomputes least either: the second best order and the
    // graph's own go with the first as alternatives (timeline::alternatives) for the checkpointer to
    // try. EfficientNet-B0 b32 at half its peak: the lowest peak's order (reverse_min_net_growth)
    // computes each SiLU's backward factor in the forward pass, where it replaces the cheap clone by a
    // value six ops deep, and recomputes 10.2 %; in the given order, 9.6 %.
    const bool below_every_order = limited && ctx.peak_target() < lb;
    if (below_every_order) {
      if (best.peak > lb)
        note += "; local_search skipped: the memory target " + std::to_string(ctx.peak_target()) + " is below every order's peak (bound " +
                std::to_string(lb) + ")";
      best.policy = "default(" + winner + ")";
      for (std::size_t k = 1; k < top.size(); ++k) best.alternatives.push_back({top[k].policy, top[k].order});
    } else if (best.peak > lb && p.num_ops() > 1) {
      // Local search from each of the two best orders, half the time each: the best start is
      // not always the best basin (measured on efficientnet_b0).
      local_search_options lo;
      lo.max_iterations = max_iterations / static_cast<std::int64_t>(top.size());
      lo.seed = seed;
      const auto before = best.peak;
      std::int64_t moves = 0;
      bool time_hit = false;
      for (std::size_t k = 0; k < top.size(); ++k) {
        // Each start gets an even share of what is left (a start may end early at its move limit).
        lo.time_limit_s = clock.limited() ? clock.seconds_left() / static_cast<double>(top.size() - k) : -1.0;
        auto im = detail::improve_order(p, top[k].order, lo, lb, ctx, "default");
        moves += im.iterations;
        time_hit |= im.time_limit_hit;
        if (k == 0 || im.peak < best.peak) {
          best.order = std::move(im.order);
          best.peak = im.peak;
          best.policy = "default(" + top[k].policy + "+local_search)";
        }
        if (best.peak <= lb) break;
      }
      note += "; local_search: " + std::to_string(before) + " -> " + std::to_string(best.peak) + " in " + std::to_string(moves) +
              " moves from the " + std::to_string(top.size()) + " best orders";
      if (time_hit) note += " (time limit ended it)";
    } else {
      best.policy = "default(" + winner + ")";
    }
    // Under a memory limit the graph's own order goes along as an alternative wherever it differs,
    // even when an order reached the bound or the local search ran: an offloader or checkpointer
    // after this stage may place lower on it at an equal or higher peak. On random training graphs
    // offloading in the given order met 23 of 10,000 budgets that it missed after this stage, which
    // left no alternative there (seed 393: peak_aware reached the bound, 20,817 B, as the given
    // order did; offloading on peak_aware's order got no lower than 19,897 B for a budget of 19,593 B).
    if (limited && !given.order.empty() && given.order != best.order &&
        std::none_of(best.alternatives.begin(), best.alternatives.end(), [&](const order_alternative& a) { return a.order == given.order; }))
      best.alternatives.push_back({"given", given.order});
    if (!best.alternatives.empty()) {
      note += "; alternatives for the stages after it:";
      for (const auto& a : best.alternatives) note += " " + a.policy;
    }
    best.lower_bound = lb;
    best.optimal = best.peak == lb;
    best.note = note;
    return best;
  }
};

static_assert(scheduler<default_scheduler>);

}  // namespace memplan::schedule
