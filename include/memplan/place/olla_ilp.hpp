#pragma once
// place::olla_ilp -- tensor addresses of minimum arena as an integer linear program: OLLA eq. 15
// (eq. 6, 7a, 7b, 8) on a buffer_problem (lifetimes fixed by a schedule, §4.4), after the pyramid
// pre-placement of §4.5 (Function 5), warm-started from a heuristic placement.
//
// Formulation as implemented:
//   k[i]   integer, buffer i's offset in units of its alignment: A[i] = align(i) * k[i] (pinned
//          buffers -- the caller's fixed offsets and, with preplace, the pyramid -- are constants).
//   x[i,j] binary, only for pairs whose lifetimes overlap (§4.2: with lifetimes fixed, eq. 6 forces
//          a[i,j] + b[i,j] >= 1 exactly for those pairs, so one binary with b = 1 - a encodes both):
//   (7a)   A[i] + S[i] <= A[j] + M (1 - x[i,j])      i below j
//   (7b)   A[j] + S[j] <= A[i] + M x[i,j]            j below i
//   (8)    A[i] + S[i] <= peak_mem,  minimize peak_mem (eq. 15)
// M is the warm start's arena (nothing larger is wanted, so every address is bounded by it) or the
// capacity when that is smaller. All quantities are divided by their gcd (sizes, alignments, pins);
// if the arena still exceeds max_units units, sizes are rounded up to a coarser unit -- still a valid
// placement, but then neither optimality nor the solver's bound are claimed.
// Lower bound returned: max(arena_lower_bound, the warm start's bound, the solver's dual bound when the
// model is exact -- no pyramid pins and no coarsening). With pins the result is §4.5's heuristic.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include <memplan/base/deadline.hpp>
#include <memplan/base/error.hpp>
#include <memplan/core/any_stage.hpp>
#include <memplan/core/buffer.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/solver_time.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/place/detail/support.hpp>
#include <memplan/place/lower_bound.hpp>
#include <memplan/place/pyramid.hpp>
#include <memplan/solver/milp.hpp>
#include <memplan/solver/stage_time.hpp>

namespace memplan::place {

struct olla_ilp {
  solver::any_backend backend{};               // none: plan_context::solver; neither: falls back to warm_start (with a note)
  double time_limit_s = 30.0;                  // wall clock for the stage: warm start (a quarter) and MILP solve
  double relative_gap = 1e-4;
  int threads = 1;
  int verbosity = 0;
  bool preplace = true;                        // §4.5: pin the pyramid (Function 5) first, the ILP places the rest
  std::int64_t max_binaries = 200000;          // size guard on the pair binaries: beyond, fall back with a note
  std::int64_t max_units = 10'000'000;         // big-M guard (solver numerics): coarsen the unit beyond
  any_placer warm_start = default_placer{};    // heuristic placement: the fallback and the first incumbent

  [[nodiscard]] std::string name() const { return "olla_ilp"; }

  [[nodiscard]] buffer_placement place(const buffer_problem& p) const { return place(p, plan_context{}); }

  [[nodiscard]] buffer_placement place(const buffer_problem& p, const plan_context& ctx) const {
    validate(p);
    const auto& solver = backend.available() ? backend : ctx.solver;
    const auto limit = ctx.time_limit_or(time_limit_s);  // the whole stage: warm start and solve
    const auto clock = deadline::after(limit > 0 ? limit : -1.0);
    const auto relaxed = detail::without_capacity(p);
    auto heur = warm_start.place(relaxed, warm_start_context(ctx, limit, solver.available()));
    if (auto bad = check(relaxed, heur))
      throw error(errc::invalid_plan, "place::olla_ilp: warm-start placer '" + warm_start.name() + "' returned an invalid placement: " + *bad);
    const auto lb0 = std::max(arena_lower_bound(p), heur.lower_bound);
    auto fallback = [&](const std::string& why) {
      return detail::finish(p, heur.offsets, heur.placer, "olla_ilp: " + why + ", used " + warm_start.name() +
                                                              (heur.note.empty() ? "" : "; " + heur.note),
                            lb0, heur.optimal);
    };
    if (!solver.available()) return fallback("no MILP backend available (link memplan::cbc and pass solver::cbc{})");
    if (heur.arena <= lb0)
      return detail::finish(p, heur.offsets, name(), "olla_ilp: the warm start (" + heur.placer + ") meets the lower bound, no solve needed", lb0, true);

    // §4.5: pyramid pre-placement; the warm start must then respect the pins.
    buffer_problem q = relaxed;
    std::vector<std::int64_t> start = heur.offsets;
    std::size_t pyramid_pins = 0;
    if (preplace) {
      q = pyramid{}.with_pins(relaxed);
      for (std::size_t i = 0; i < q.buffers.size(); ++i)
        pyramid_pins += q.buffers[i].fixed_offset >= 0 && p.buffers[i].fixed_offset < 0 && p.buffers[i].size > 0 ? 1 : 0;
      if (pyramid_pins > 0) start = pyramid{}.place(relaxed).offsets;
    }
    const auto n = q.buffers.size();
    std::int64_t start_arena = 0;
    for (std::size_t i = 0; i < n; ++i) start_arena = std::max(start_arena, start[i] + q.buffers[i].size);
    const auto ub = std::min(start_arena, p.capacity);

    // Units: gcd of everything, or a coarser unit when the arena would exceed max_units of them.
    std::int64_t g = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const auto& b = q.buffers[i];
      if (b.size == 0) continue;
      g = std::gcd(g, b.size);
      g = std::gcd(g, effective_alignment(q, b));
      if (b.fixed_offset > 0) g = std::gcd(g, b.fixed_offset);
    }
    if (g == 0) g = 1;
    std::int64_t unit = g;
    bool coarse = false;
    if (ub / unit > max_units) {
      unit = g * ((ub / g + max_units - 1) / max_units);
      coarse = true;
    }
    auto up = [&](std::int64_t x) { return (x + unit - 1) / unit; };
    const auto ub_units = coarse ? up(ub) + 1 : ub / unit;

    // Pairs of buffers live together (eq. 6), not both pinned.
    std::vector<std::size_t> live;
    for (std::size_t i = 0; i < n; ++i)
      if (q.buffers[i].size > 0) live.push_back(i);
    std::sort(live.begin(), live.end(), [&](std::size_t a, std::size_t b) {
      return q.buffers[a].lower != q.buffers[b].lower ? q.buffers[a].lower < q.buffers[b].lower : a < b;
    });
    std::vector<std::pair<std::size_t, std::size_t>> pairs;
    for (std::size_t x = 0; x < live.size(); ++x)
      for (std::size_t y = x + 1; y < live.size() && q.buffers[live[y]].lower < q.buffers[live[x]].upper; ++y) {
        const auto i = live[x], j = live[y];
        if (q.buffers[i].fixed_offset >= 0 && q.buffers[j].fixed_offset >= 0) continue;
        pairs.emplace_back(std::min(i, j), std::max(i, j));
        if (static_cast<std::int64_t>(pairs.size()) > max_binaries)
          return fallback("model too large: more than max_binaries = " + std::to_string(max_binaries) + " overlapping pairs");
      }

    // Model.
    solver::model m("olla_eq15");
    std::vector<solver::var> k(n);
    std::vector<std::int64_t> step(n, 0);  // units per k
    std::vector<solver::expr> lo(n), hi(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& b = q.buffers[i];
      if (b.size == 0) continue;
      if (b.fixed_offset >= 0) {
        lo[i] = solver::expr(static_cast<double>(b.fixed_offset / unit));
        hi[i] = solver::expr(static_cast<double>(up(b.fixed_offset + b.size)));
        continue;
      }
      const auto a = effective_alignment(q, b);
      step[i] = std::lcm(a, unit) / unit;
      const auto kmax = std::max<std::int64_t>(0, (ub_units - up(b.size)) / step[i]);
      k[i] = m.add_integer(0, static_cast<double>(kmax));
      lo[i] = solver::expr(k[i], static_cast<double>(step[i]));
      hi[i] = lo[i] + static_cast<double>(up(b.size));
    }
    const auto peak = m.add_continuous(0, static_cast<double>(ub_units), "arena");
    const double M = static_cast<double>(ub_units);
    std::vector<solver::var> xv;
    xv.reserve(pairs.size());
    for (auto [i, j] : pairs) {
      const auto x = m.add_binary();
      xv.push_back(x);
      m.add(hi[i] - lo[j] + M * solver::expr(x) <= M);  // (7a)
      m.add(hi[j] - lo[i] - M * solver::expr(x) <= 0.0);  // (7b)
    }
    for (std::size_t i = 0; i < n; ++i)
      if (q.buffers[i].size > 0) m.add(hi[i] <= solver::expr(peak));  // (8)
    m.minimize(solver::expr(peak));

    // Warm start (exact units only: a coarse unit cannot express the start's offsets).
    bool started = false;
    if (!coarse && start_arena <= ub) {
      std::vector<double> x0(m.num_vars(), 0.0);
      for (std::size_t i = 0; i < n; ++i)
        if (q.buffers[i].size > 0 && q.buffers[i].fixed_offset < 0) x0[k[i].index] = static_cast<double>(start[i] / unit / step[i]);
      for (std::size_t e = 0; e < pairs.size(); ++e) {
        const auto [i, j] = pairs[e];
        x0[xv[e].index] = start[i] + q.buffers[i].size <= start[j] ? 1.0 : 0.0;
      }
      x0[peak.index] = static_cast<double>(start_arena / unit);
      if (auto bad = m.violation(x0))
        throw error(errc::invalid_plan, "place::olla_ilp: internal error: the warm start violates the model: " + *bad);
      m.set_start(x0);
      started = true;
    }
    auto within = solver::options_within(clock, limit);
    if (!within) return fallback("the time limit of " + std::to_string(limit) + " s was spent before the solve");
    auto so = *within;
    so.relative_gap = relative_gap;
    so.threads = threads;
    so.verbosity = verbosity;
    const auto sol = solver.solve(m, so);
    const bool exact_model = pyramid_pins == 0 && !coarse;
    const auto st = m.stats();
    std::string note = "olla_ilp: " + std::to_string(st.integers) + " addresses, " + std::to_string(st.binaries) +
                       " pair binaries, " + std::to_string(pyramid_pins) + " pyramid pins, unit " + std::to_string(unit) +
                       " B" + (coarse ? " (coarsened: not exact)" : "") + (started ? "" : ", no warm start") + "; " +
                       solver::to_string(sol.status) + " after " + std::to_string(sol.seconds) + " s";
    if (!sol.message.empty()) note += " (" + sol.message + ")";
    if (sol.status == solver::status::infeasible && exact_model && ub < start_arena)
      throw error(errc::infeasible, "place::olla_ilp: no placement fits the capacity of " + std::to_string(p.capacity) +
                                        " bytes (proven by the MILP; lower bound " + std::to_string(lb0) + ")");
    if (!sol.has_incumbent()) return fallback(note + "; no incumbent");

    std::vector<std::int64_t> offsets(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const auto& b = q.buffers[i];
      if (b.fixed_offset >= 0) offsets[i] = b.fixed_offset;
      else if (b.size > 0) offsets[i] = sol.int_value(k[i]) * step[i] * unit;
      else offsets[i] = 0;
    }
    std::int64_t arena = 0;
    for (std::size_t i = 0; i < n; ++i) arena = std::max(arena, offsets[i] + q.buffers[i].size);
    std::int64_t lb = lb0;
    if (exact_model && !std::isnan(sol.bound)) {
      const double bnd = std::ceil(sol.bound - 1e-6 * std::max(1.0, std::abs(sol.bound)));
      lb = std::max(lb, std::min(arena, static_cast<std::int64_t>(std::max(0.0, bnd)) * unit));
      note += "; MILP bound " + std::to_string(static_cast<std::int64_t>(std::max(0.0, bnd)) * unit) + " B";
    }
    buffer_placement mine;
    mine.offsets = offsets;
    mine.arena = arena;
    const auto invalid = check(relaxed, mine);
    if (invalid || arena > heur.arena) {
      note += invalid ? "; the MILP incumbent failed the check (" + *invalid + "), kept " : std::string("; the MILP incumbent is worse, kept ");
      note += heur.placer + " (" + std::to_string(heur.arena) + ")";
      return detail::finish(p, heur.offsets, name(), note, lb, heur.arena <= lb);
    }
    if (arena < heur.arena) note += "; arena " + std::to_string(heur.arena) + " -> " + std::to_string(arena);
    return detail::finish(p, std::move(offsets), name(), note, lb, arena <= lb);
  }
};

}  // namespace memplan::place
