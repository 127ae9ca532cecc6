#pragma once
// place::exact -- branch and bound over canonical placements (detail/canonical_search.hpp, after
// MiniMalloc): in *decision mode* it stops at the first placement that fits, in *minimisation mode* it
// improves the arena until it meets the proven lower bound or the time runs out, and returns its best
// placement with the remaining gap.
//
// Mode: `accept` >= 0 stops at the first arena <= accept; accept = -1 (the default) uses the problem's
// capacity when it is finite (MiniMalloc's decision problem) and minimises otherwise; accept = 0 always
// minimises. minimise_to_accept = true with accept > 0: minimisation's search (below), stopping at the
// first arena <= accept (default_placer's pieces, for which an arena a little above it still counts).
//
// Search plan (one canonical_search, its failure tables shared by every call):
//  * incumbent: greedy_by_breadth, best_fit and greedy_by_size (each stops at the deadline less the
//    time to stack its rest and check; a pass starts only if its setup fits the time left; the
//    best-fit sweep first when a whole greedy pass does not);
//  * the first round starts with preorder "O" (the incumbent's offsets): one dive rebuilds a
//    pushed-down copy of the incumbent, which often closes a greedy gap at once on big problems;
//  * decision mode: feasibility searches at min(accept, best - 1) under the preorders "WAT", "TAW" and
//    "TWA" in turn, with node limits doubling from 2n (MiniMalloc's round robin). A restart skips
//    every subtree an earlier run of the same preorder finished, so doubling costs little;
//  * minimisation, bound first: the same at the proven bound (max load is the usual optimum; a
//    finished search without a placement raises the bound) for a fifth of the time or node limit;
//  * then descent: targets `best - step` (step = a quarter of the gap, halved when a probe gives up,
//    renewed after an improvement; the node limit restarts at a quarter after each improvement), the
//    bound still probed with a quarter of the node limit. Time goes to improving the arena instead of
//    binary-search midpoints that can neither be reached nor refuted;
//  * window_bounds = true: window_lower_bound (window_bound.hpp: exhaustive search on short windows of
//    the time axis) may raise the proven bound when max load is not reached in the first rounds.
// The deadline (time_limit_s) covers all of it: the heuristics, the overlap lists and every search
// node and candidate, so the wall time stays within the limit plus a few milliseconds (plus the
// O(n log n) bookkeeping that brackets the passes: the bound, sorting, the referee check; about 1 us
// per buffer).
// Deterministic for a given node_limit when the time limit does not cut the search, and with
// count_work (the time limit then counts work: base/deadline.hpp).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/base/progress.hpp>
#include <memplan/core/context.hpp>
#include <memplan/place/best_fit.hpp>
#include <memplan/core/buffer.hpp>
#include <memplan/place/detail/canonical_search.hpp>
#include <memplan/place/detail/support.hpp>
#include <memplan/place/greedy_by_breadth.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/place/lower_bound.hpp>
#include <memplan/place/window_bound.hpp>

namespace memplan::place {

namespace detail {

// The best of the fast heuristics on p (capacity ignored), each cut short at `until` (then the rest
// of its buffers is stacked on top, still valid). The first always runs.
inline buffer_placement greedy_incumbent(const buffer_problem& p, const deadline& until, std::string* tried = nullptr) {
  const auto relaxed = without_capacity(p);
  const auto bound = arena_lower_bound(relaxed);
  buffer_placement best;
  // The passes stop early enough to stack a cut pass's rest and run the final check in time.
  const auto n = p.buffers.size();
  const auto pass_until = until.kept_back(wrap_up_seconds(n));
  // Offsets of a pass; the referee checks the placement exact returns, once.
  auto consider = [&](auto policy) {
    buffer_placement pl;
    pl.offsets = policy.offsets(relaxed, pass_until);
    pl.arena = arena_of(relaxed, pl.offsets);
    pl.placer = policy.name();
    if (tried) *tried += (tried->empty() ? "" : ", ") + pl.placer + "=" + std::to_string(pl.arena);
    if (best.offsets.empty() || pl.arena < best.arena) best = std::move(pl);
  };
  // A pass starts only if its setup (about 1 us per buffer) fits; with too little time for a whole
  // greedy pass, the best-fit sweep first (a cut pass is usually worse).
  const auto room = [&] { return pass_until.seconds_left() > 1e-6 * static_cast<double>(n); };
  if (pass_until.seconds_left() < greedy_pass_seconds(n)) sweeps(until.kept_back(check_seconds(n)), consider);
  if (room()) consider(greedy_by_breadth{});
  if (best.arena > bound && room()) consider(best_fit{});
  if (best.arena > bound && room()) consider(greedy_by_size{});
  return best;
}

}  // namespace detail

struct exact {
  static constexpr double default_time_limit_s = 10.0;
  double time_limit_s = -1;          // seconds in all (heuristics + search); < 0: default_time_limit_s; 0: heuristics only (run to the end)
  std::int64_t node_limit = -1;      // total search nodes, < 0: unlimited
  // The time limit counts work, not the clock (base/deadline.hpp's work_clock): deterministic on any
  // machine; what plan_context::deterministic sets.
  bool count_work = false;
  std::size_t max_buffers = 10000;   // above this the search is skipped (the heuristics' best is returned)
  std::int64_t max_overlaps = 20'000'000;  // likewise above this many pairs of buffers live together (memory)
  // Stop at the first arena <= accept. -1: the capacity when it is finite (decision mode), else
  // minimise; 0: minimise. Optimality is claimed only when proven.
  std::int64_t accept = -1;
  // With accept > 0: search as in minimisation (bound first at max(bound, accept), then descent from
  // the incumbent) and stop at the first arena <= accept, instead of probing only at accept. For
  // callers to whom an arena a little above accept is still worth having (default_placer's pieces of
  // a time decomposition: the arena is the highest piece's).
  bool minimise_to_accept = false;
  bool window_bounds = false;        // minimisation: try window_lower_bound when max load is not met
  progress_callback progress{};      // after each search round: arena, bound, nodes (the context's, via place(p, ctx))

  [[nodiscard]] std::string name() const { return "exact"; }
  [[nodiscard]] double seconds() const { return time_limit_s < 0 ? default_time_limit_s : time_limit_s; }

  // Number of pairs of non-empty buffers live at a common step (the search stores them). O(n log n).
  static std::int64_t overlapping_pairs(const buffer_problem& p) {
    std::int64_t live = 0, pairs = 0;
    for (const auto& e : memplan::detail::lifetime_events(p, [&](std::size_t i) { return p.buffers[i].size > 0; })) {
      if (e.kind == 1) pairs += live++;
      else --live;
    }
    return pairs;
  }

  // With a context: its time limit replaces time_limit_s; in deterministic mode the placer's own
  // limit counts work instead (count_work), so the same input gives the same placement on any machine.
  [[nodiscard]] buffer_placement place(const buffer_problem& p, const plan_context& ctx) const {
    return detail::with_context(*this, ctx).place(p);
  }

  [[nodiscard]] buffer_placement place(const buffer_problem& p) const {
    validate(p);
    if (seconds() == 0) {  // the heuristics only, each run to the end
      const auto never = deadline::never();
      return search_from(p, detail::greedy_incumbent(p, never), deadline::after(0));
    }
    work_clock work;
    const auto until = deadline::after(seconds(), count_work ? &work : nullptr);
    return search_from(p, detail::greedy_incumbent(p, until), until);
  }

  // Searches below a given valid placement of p (without its capacity) for `seconds` (time_limit_s is
  // ignored here); used by default_placer to reuse its heuristics' best.
  [[nodiscard]] buffer_placement improve(const buffer_problem& p, const buffer_placement& incumbent, double seconds) const {
    validate(p);
    work_clock work;
    return search_from(p, incumbent, deadline::after(std::max(0.0, seconds), count_work ? &work : nullptr));
  }

  [[nodiscard]] buffer_placement search_from(const buffer_problem& p, const buffer_placement& incumbent,
                                             const deadline& time_limit) const {
    const auto until = time_limit.kept_back(detail::check_seconds(p.buffers.size()));  // the final check's time
    using outcome = detail::canonical_search::outcome;
    const auto started = std::chrono::steady_clock::now();
    if (incumbent.offsets.size() != p.buffers.size())
      throw error(errc::invalid_argument, "exact: the incumbent has " + std::to_string(incumbent.offsets.size()) +
                                              " offsets for " + std::to_string(p.buffers.size()) + " buffers");
    std::vector<std::int64_t> best = incumbent.offsets;
    std::int64_t best_arena = detail::arena_of(p, best);
    std::int64_t proven = std::max(arena_lower_bound(p), std::min(incumbent.lower_bound, best_arena));
    const bool capacity_given = p.capacity != std::numeric_limits<std::int64_t>::max();
    const std::int64_t level = accept >= 0 ? accept : capacity_given ? p.capacity : 0;  // stop at arena <= level
    std::int64_t nodes = 0;
    std::string how = "incumbent from greedy heuristics", bound_how;
    // Done: optimal, good enough, or (decision mode) the level is proven out of reach.
    const bool decision = level > 0 && !minimise_to_accept;
    const auto finished = [&] { return best_arena <= proven || best_arena <= level || (decision && proven > level); };
    const auto nodes_left = [&] { return node_limit < 0 ? std::numeric_limits<std::int64_t>::max() : node_limit - nodes; };
    if (!finished() && !until.expired() && nodes_left() > 0) {
      // (The pairs are counted only below the buffer limit: the count is a sweep over every lifetime.)
      const auto pairs = p.buffers.size() > max_buffers ? std::int64_t{-1} : overlapping_pairs(p);
      if (pairs < 0 || pairs > max_overlaps) {
        how += "; search skipped: " +
               (pairs < 0 ? std::to_string(p.buffers.size()) + " buffers (limit " + std::to_string(max_buffers) + ")"
                          : std::to_string(pairs) + " overlapping pairs (limit " + std::to_string(max_overlaps) + ")");
      } else if (detail::canonical_search search(p, until); !search.ready()) {
        how += search.too_big() ? "; search skipped: the section lists would exceed 50M entries" : "; time limit hit while building the search";
      } else {
        // Preorder "O" ranks the buffers by their offsets in the incumbent: its first dive rebuilds a
        // pushed-down copy of the incumbent, which often closes the greedy's gap at once on big
        // problems (googlenet-train-b32: 1091 buffers, max load in one dive). Only in the first round.
        const std::vector<std::string> preorders{"WAT", "TAW", "TWA"}, first_round{"O", "WAT", "TAW", "TWA"};
        search.set_hint(best);
        std::int64_t step = 0;  // descent step (minimisation); 0: recompute from the gap
        const std::int64_t first_probe_limit = std::max<std::int64_t>(16, 2 * static_cast<std::int64_t>(search.size()));
        std::int64_t probe_limit = first_probe_limit;
        int round = 0;
        double last_report = 0.0;
        bool windows_tried = false;
        std::vector<std::int64_t> found;
        // One probe: returns its outcome, updates best / proven.
        const auto probe = [&](std::int64_t target, const std::string& keys, std::int64_t nodes_cap, const deadline* within = nullptr) {
          const auto cap = std::min(nodes_cap, nodes_left());
          if (cap <= 0) return outcome::aborted;  // (a negative limit would mean "unlimited" to decide)
          const auto before = search.nodes();
          const auto r = search.decide(target, keys, cap, within ? *within : until, found);
          nodes += search.nodes() - before;
          if (r == outcome::found) {
            const auto a = detail::arena_of(p, found);
            if (a < best_arena) { best = found; best_arena = a; how = "canonical search"; }
          } else if (r == outcome::infeasible && target >= proven) {
            proven = target + 1;
            bound_how = "exhaustive search at " + std::to_string(target);
          }
          return r;
        };
        // Minimisation runs in two phases. Bound first: the decision search at the proven bound (max
        // load is the usual optimum) until a fifth of the time or node limit is spent (or the node limit
        // per probe reaches 2^10 x 2n). Then descent: targets below the incumbent, `step` = a quarter of
        // the gap (halved when a probe gives up, recomputed after an improvement), with a node limit that
        // doubles per round and restarts at a quarter after each improvement; the bound is probed on
        // with a quarter of that limit (proofs by exhaustion, or max load found late).
        // Probes at the proven bound are also cut by the clock: near a bound that cannot be met a node
        // can cost 30x one higher up, as each candidate fails late (an Inception-v3 recompute plan's
        // 1,809 buffers: 0.35 ms per node at max load, 24 us at 4 % above it), and under node limits
        // alone one probe took the whole time, the descent none (exact's 0.8 s on them: 15.25 % above
        // max load, 1.82 % with the cuts; idealloc's and MiniMalloc's sets unchanged). In phase one a
        // probe may run to twice the fifth (cut at the fifth, MiniMalloc's E lost the probe that met max
        // load); in the descent the bound's probes get at most a quarter of the time the descent's have
        // taken (at least 1 % of what is left). Probes at an accept level above the bound (minimising
        // to accept: the pipeline's budget) are not cut: there the level is the answer wanted, and
        // cutting it lost plans that fit (EfficientNet-B0 b32 offloaded at 0.6x: 2 reruns -> 5).
        const double phase_a_seconds = std::min(until.seconds_left(), 1e9) / 5;
        const auto phase_a_until = until.slice(phase_a_seconds);  // (on until's clock)
        const auto phase_a_probes_until = until.slice(2 * phase_a_seconds);
        const std::int64_t phase_a_nodes = node_limit < 0 ? std::numeric_limits<std::int64_t>::max() : node_limit / 5;
        bool descending = decision;  // (decision mode has a single target)
        double descent_seconds = 0, bound_seconds = 0;  // on until's clock: spent in the descent by its probes below the incumbent, and by those at the bound
        while (!finished() && !until.expired() && nodes_left() > 0) {
          if (!descending && (phase_a_until.expired() || nodes >= phase_a_nodes || probe_limit > (first_probe_limit << 10))) {
            descending = true;
            probe_limit = first_probe_limit;
          }
          for (const auto& keys : round == 0 ? first_round : preorders) {
            if (finished() || until.expired() || nodes_left() <= 0) break;
            if (decision) {
              (void)probe(std::min(level, best_arena - 1), keys, probe_limit);
              continue;
            }
            // The lowest target worth a probe (minimising to accept: nothing below accept is needed).
            const auto lowest = std::max(proven, level);
            const bool at_bound = level <= proven;
            if (!descending) {
              (void)probe(lowest, keys, probe_limit, at_bound ? &phase_a_probes_until : nullptr);
              continue;
            }
            const double before_bound = until.seconds_left();
            const auto bound_slice = until.slice(std::max(descent_seconds / 4 - bound_seconds, until.seconds_left() / 100));
            const auto r_bound = probe(lowest, keys, std::max<std::int64_t>(16, probe_limit / 4), at_bound ? &bound_slice : nullptr);
            bound_seconds += before_bound - until.seconds_left();
            if (r_bound == outcome::found || finished()) continue;
            if (step <= 0) step = std::max<std::int64_t>(1, (best_arena - lowest) / 4);
            const auto target = std::max(lowest, best_arena - step);
            const double before_descent = until.seconds_left();
            const auto r = target > lowest ? probe(target, keys, probe_limit) : outcome::aborted;
            descent_seconds += before_descent - until.seconds_left();
            if (r == outcome::found) {
              step = 0;
              probe_limit = std::max(first_probe_limit, probe_limit / 4);
            } else if (r == outcome::aborted) {
              step = std::max<std::int64_t>(1, step / 2);
            }
          }
          probe_limit = std::min<std::int64_t>(2 * probe_limit, std::int64_t{1} << 50);
          ++round;
          // Progress at most twice a second (rounds can take microseconds).
          if (progress) {
            const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
            if (elapsed - last_report >= 0.5) {
              last_report = elapsed;
              report(progress, "placer exact", "round " + std::to_string(round) + ", " + std::to_string(nodes) + " nodes" +
                                                   (decision ? ", looking for an arena <= " + std::to_string(level) : ""),
                     elapsed, best_arena, proven);
            }
          }
          // Max load not met after the first rounds: short windows of the time axis may prove more.
          if (!decision && window_bounds && !windows_tried && !finished() && probe_limit >= 64 * static_cast<std::int64_t>(search.size())) {
            windows_tried = true;
            const auto w = window_lower_bound(p, {.until = &until, .cap = best_arena});
            if (w.bytes > proven) {
              proven = std::min(w.bytes, best_arena);
              bound_how = w.how;
            }
          }
        }
      }
    }
    proven = std::min(proven, best_arena);
    std::string note = how + ", " + std::to_string(nodes) + " nodes; ";
    if (best_arena == proven) note += "proven optimal";
    else
      note += std::string(best_arena <= level ? "accepted (arena <= " + std::to_string(level) + ")" : "limit hit") + ": arena " +
              std::to_string(best_arena) + " vs proven bound " + std::to_string(proven) + " (gap " +
              std::to_string(best_arena - proven) + " bytes)";
    if (!bound_how.empty()) note += "; bound by " + bound_how;
    if (best_arena > p.capacity && proven > p.capacity)
      throw detail::capacity_refuted(name(), p.capacity, proven, best_arena);
    return detail::finish(p, std::move(best), name(), note, proven, best_arena == proven);
  }
};

}  // namespace memplan::place
