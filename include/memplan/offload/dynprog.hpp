#pragma once
// offload::dynprog -- DYNPROG of Beaumont et al.: Algorithm 1 (§5.3), the dynamic program over the
// fractional-communication relaxation (Problem 2, §5), then the no-wait ordered schedule with the
// same offload decisions (§6), here simulated by offload/build.hpp.
//
// Algorithm 1 runs on a chain: x_0..x_L, F_i reads x_i and writes x_{i+1}, B_i reads x_i, x_{i+1}.
// memplan applies it to any timeline through its *chain view*: x_i are the candidates in production
// order; u_F(i) the seconds of the ticks after x_i is produced up to the one producing x_{i+1}; u_B(i)
// the seconds from the first use of x_{i+1} after its gap to the first use of x_i after its gap;
// ex_F(i) (ex_B(i)) the most bytes those forward (backward) ticks hold besides the candidates alive
// then; y_i = 0 (gradients are part of ex_B). On a training chain this is the paper's chain; on a DAG
// it is a heuristic whose result the simulator times exactly.
//
// State (§5.2.1): IDLE(i, M_F, Delta_F, Delta_B), memory discretised into `slots` slots of M / slots
// bytes (the paper: S = 500), sizes rounded up. Transitions: eqs. (1)-(8) for offloading x_i or not.
// Delta never goes negative: the copy engine's idle credit is dropped (see chain_step), so the idle
// time between the phases, eqs. (9)-(10), is both backlogs' transfer time; the memory terms R_j are
// left to the simulator. When the chosen set does not fit the tick model (which holds copies in
// flight for whole ticks), the offloader falls back to GREEDY's choice and says so.
// detail::chain_program is the same program with a third choice per value (recompute), which
// offload::combined runs on chains.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <memplan/base/deadline.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/offload/model.hpp>
#include <memplan/offload/policies.hpp>

namespace memplan::offload {

// The chain of Algorithm 1 seen in a tick model (bytes and seconds).
struct chain_view {
  std::vector<std::int64_t> x;    // |x_i|, the candidates in production order
  std::vector<double> uf, ub;     // u_F(i), u_B(i)
  std::vector<std::int64_t> exf, exb;
  // For chain_program's third choice (empty: offload or keep only): the seconds that rebuild x_i on
  // the compute engine (< 0: it cannot be rebuilt), and whether that rebuild reads x_{i-1} (which must
  // then have been kept on the device).
  std::vector<double> rec;
  std::vector<std::uint8_t> rec_needs_prev;
  // May x_i be rebuilt, x_{i-1} kept or not?
  [[nodiscard]] bool rebuildable(std::size_t i, bool prev_kept) const {
    return !rec.empty() && rec[i] >= 0.0 && (!rec_needs_prev[i] || prev_kept);
  }
};

inline chain_view make_chain_view(const tick_model& m) {
  chain_view c;
  const auto L = m.candidates.size();
  const auto n = m.ticks();
  for (const auto& k : m.candidates) c.x.push_back(k.bytes);
  // rest[t]: the bytes at tick t besides the candidates alive then (on the device without offloading),
  // and a sparse table of its range maxima: ex_F / ex_B are maxima of it over tick ranges, which on a
  // DAG can overlap (a scan per range and a pass over the candidates per tick took 0.3 s on a 3,197-op
  // graph with 1,460 candidates).
  const auto nt = static_cast<std::size_t>(std::max<std::int32_t>(n, 0));
  std::vector<std::int64_t> rest(nt + 1, 0);
  for (const auto& k : m.candidates) {
    const auto a = std::max<std::int32_t>(k.produced, 0), b = std::max(k.after, k.before);
    if (a >= n || b < a) continue;
    rest[static_cast<std::size_t>(a)] -= k.bytes;
    rest[static_cast<std::size_t>(std::min(b + 1, n))] += k.bytes;
  }
  std::int64_t alive = 0;
  for (std::size_t t = 0; t < nt; ++t) {
    alive -= rest[t];
    rest[t] = m.live[t] - alive;
  }
  rest.resize(nt);
  std::vector<std::vector<std::int64_t>> table{rest};
  for (std::size_t w = 1; 2 * w <= nt; w *= 2) {
    const auto& prev = table.back();
    std::vector<std::int64_t> row(nt - 2 * w + 1);
    for (std::size_t t = 0; t < row.size(); ++t) row[t] = std::max(prev[t], prev[t + w]);
    table.push_back(std::move(row));
  }
  auto range_max = [&](std::int32_t from, std::int32_t to) -> std::int64_t {  // max of rest over [from, to), 0 when empty
    from = std::max<std::int32_t>(from, 0);
    to = std::min(to, n);
    if (to <= from) return 0;
    const auto len = static_cast<std::size_t>(to - from);
    std::size_t lvl = 0;
    while ((std::size_t{2} << lvl) <= len) ++lvl;
    const auto& row = table[lvl];
    return std::max(row[static_cast<std::size_t>(from)], row[static_cast<std::size_t>(to) - (std::size_t{1} << lvl)]);
  };
  for (std::size_t i = 0; i < L; ++i) {
    const auto from = m.candidates[i].produced + 1;
    const auto to = i + 1 < L ? m.candidates[i + 1].produced + 1 : std::min(n, m.candidates[i].after);
    c.uf.push_back(to > from ? m.between(from, to) : 0.0);
    c.exf.push_back(std::max<std::int64_t>(0, range_max(from, to)));
    // Backward: the ticks after the first use of x_{i+1} after its gap, through the first use of x_i.
    const auto hi = m.candidates[i].after;
    const auto lo = i + 1 < L ? m.candidates[i + 1].after + 1 : to;
    c.ub.push_back(hi + 1 > lo ? m.between(lo, hi + 1) : 0.0);
    c.exb.push_back(std::max<std::int64_t>(0, range_max(lo, hi + 1)));
  }
  return c;
}

// How far the timeline is from Algorithm 1's chain: the adjacent candidates x_i, x_{i+1} whose first
// uses after their gaps come in production order (x_i read back before x_{i+1}). On a chain the
// backward phase reads them in reverse (B_i after B_{i+1}), so 0; on the training exports 30-52 % of
// the pairs (VGG-16 b32: 24 of 48, each layer's saved tensors read back in forward order).
inline std::int64_t chain_order_breaks(const tick_model& m) {
  std::int64_t breaks = 0;
  for (std::size_t i = 0; i + 1 < m.candidates.size(); ++i) breaks += m.candidates[i].after < m.candidates[i + 1].after;
  return breaks;
}

namespace detail {

// What Algorithm 1 decides for each x_i: move it to the host and back (the paper's two choices),
// keep it on the device, or (the combined program below) free it after its last forward use and
// rebuild it on the compute engine before its backward use.
enum class chain_decision : std::uint8_t { offload = 0, keep = 1, recompute = 2 };

// One transition of Algorithm 1 over the fractional-communication relaxation, shared by the dynamic
// program and by `chain_program_value` (which walks one sequence of decisions: the brute force the
// tests compare the program with). The state: M_F (the candidates on the device in the forward
// phase), Delta_F and Delta_B (the bytes still to copy out and in), all in slots, and whether x_i was
// kept (only where the view allows recomputation: a rebuilt x_{i+1} needs x_i on the device then).
//
// The paper lets Delta go negative: a credit of idle copy-engine time, used only by the idle time
// between the phases (Av_F, Av_B in eqs. (9)-(10)). memplan keeps Delta >= 0 (no credit). Two reasons:
//   * Algorithm 1's memory test, M_F + ex_F - Delta_F + |x_{i+1}| <= M, adds a credit to the memory.
//     Once the credit reached its clamp (-M) no state survived: at 100 B/s no random chain got a
//     decision, and `dynprog` fell back to GREEDY's choice.
//   * Keeping the credit and testing Delta+ instead gave worse decisions and far more states: on the
//     48 chain instances of `test_offload` dynprog was optimal on 41, against 43 without it, and a
//     50-value chain took 0.3-3.4 s against 0.2-1.1 s.
// Without the credit, the idle time between the phases is both backlogs' transfer time.
struct chain_step {
  double unit = 1.0;     // bytes per slot
  std::int64_t Ms = 0;   // the memory, in slots
  double Bs = 0.0;       // slots per second
  [[nodiscard]] std::int64_t slots_of(std::int64_t b) const { return static_cast<std::int64_t>(std::ceil(static_cast<double>(b) / unit)); }
  [[nodiscard]] static std::int64_t backlog(double d) { return std::max<std::int64_t>(0, static_cast<std::int64_t>(std::llround(d))); }
  struct state {
    std::int64_t mf2 = 0;  // 2 M_F + (x_i kept and recomputation considered)
    std::int64_t df = 0, db = 0;
    [[nodiscard]] auto key() const { return std::tuple{mf2, df, db}; }
  };
  // The state after deciding x_i from `s`, and the seconds it adds; nothing where the memory
  // constraints fail (eqs. (1)-(8); the recompute transition is memplan's, see chain_program).
  [[nodiscard]] std::optional<std::pair<state, double>> next(const chain_view& c, std::size_t i, const state& s, chain_decision d) const {
    const auto L = c.x.size();
    const auto xi = slots_of(c.x[i]), xn = i + 1 < L ? slots_of(c.x[i + 1]) : 0, ef = slots_of(c.exf[i]), eb = slots_of(c.exb[i]);
    const bool rec_on = !c.rec.empty();
    const auto prev_kept = (s.mf2 & 1) != 0;
    const auto mf = (s.mf2 - (s.mf2 & 1)) / 2;
    const auto df = s.df, db = s.db;
    const auto mb = db + mf - df;  // |y_i| = 0
    if (mf + ef - df + xn > Ms || mb + eb - db > Ms) return std::nullopt;
    const double epsf = std::max(0.0, static_cast<double>(mf + ef + xn - Ms) / Bs);  // eq. (1)
    const double epsb = std::max(0.0, static_cast<double>(mb + eb - Ms) / Bs);       // eq. (6)
    const double movf = (epsf + c.uf[i]) * Bs, movb = (epsb + c.ub[i]) * Bs;
    const auto out_of = [&](std::int64_t pending) { return static_cast<std::int64_t>(std::min(static_cast<double>(pending), movf)); };
    const double v = epsf + epsb;
    switch (d) {
      case chain_decision::offload:  // eqs. (2), (3), (7)
        return std::pair{state{2 * (mf + xn - out_of(df + xi)), backlog(static_cast<double>(df + xi) - movf), xi + backlog(static_cast<double>(db) - movb)}, v};
      case chain_decision::keep:  // eqs. (4), (5), (8)
        return std::pair{state{2 * (mf + xn - out_of(df)) + (rec_on ? 1 : 0), backlog(static_cast<double>(df) - movf), backlog(static_cast<double>(db) - movb)}, v};
      case chain_decision::recompute: {
        // x_i leaves the device after F_i reads it, with no copy; its producer runs again just before
        // the backward reads it (rec[i] seconds on the compute engine: the step is that much longer,
        // and the copy engine has that much more time in the backward group). It is on the device in
        // that group as a kept value would be (M_F still counts it at this layer), and in no later one.
        if (!c.rebuildable(i, prev_kept)) return std::nullopt;
        const double movr = (epsb + c.ub[i] + c.rec[i]) * Bs;
        return std::pair{state{2 * (mf + xn - xi - out_of(df)), backlog(static_cast<double>(df) - movf), backlog(static_cast<double>(db) - movr)},
                         v + c.rec[i]};
      }
    }
    return std::nullopt;
  }
  // The idle time between the phases (eqs. (9)-(10), their transfer terms without the credit).
  [[nodiscard]] double between_phases(const state& s) const { return static_cast<double>(s.df + s.db) / Bs; }
  [[nodiscard]] state initial(const chain_view& c) const { return {2 * slots_of(c.x[0]), 0, 0}; }  // M_F counts the x_i only (x_0 enters with the first tick); ex_F / ex_B hold the rest
};

inline chain_step make_chain_step(std::int64_t M, double bandwidth, std::int32_t slots) {
  chain_step st;
  st.unit = std::max(1.0, std::ceil(static_cast<double>(M) / slots));
  st.Ms = static_cast<std::int64_t>(std::floor(static_cast<double>(M) / st.unit));
  st.Bs = bandwidth / st.unit;
  return st;
}

// The seconds one sequence of decisions adds to the compute time in the model (idle time, plus the
// rebuilds), +inf where it breaks the memory constraints: what chain_program minimises.
inline double chain_program_value(const chain_view& c, std::int64_t M, double bandwidth, std::int32_t slots, const std::vector<chain_decision>& d) {
  const auto st = make_chain_step(M, bandwidth, slots);
  if (c.x.empty()) return 0.0;
  auto s = st.initial(c);
  double total = 0.0;
  for (std::size_t i = 0; i < c.x.size(); ++i) {
    const auto n = st.next(c, i, s, d[i]);
    if (!n) return std::numeric_limits<double>::infinity();
    s = n->first;
    total += n->second;
  }
  return total + st.between_phases(s);
}

// Algorithm 1 on a chain view, with a third choice per value where the view gives rebuild times
// (chain_view::rec): the decisions of the least added time (idle plus rebuilds), or nothing when no
// state survives the memory constraints, or when `clock` runs out first (then *cut_at, when given,
// is the candidate it had reached; it stays -1 otherwise). Exact for its model: states with one key
// have the same futures, and each layer keeps the least time per key.
inline std::optional<std::vector<chain_decision>> chain_program(const chain_view& c, std::int64_t M, double bandwidth, std::int32_t slots,
                                                                const deadline& clock = deadline::never(), std::int64_t* cut_at = nullptr) {
  if (cut_at) *cut_at = -1;
  const auto L = c.x.size();
  if (L == 0) return std::vector<chain_decision>{};
  const auto st = make_chain_step(M, bandwidth, slots);
  const std::uint64_t ways = c.rec.empty() ? 2 : 3;
  // The layer of IDLE being extended (its states sorted by key), and for every layer how each of its
  // states was reached: `from` = ways x (index of the parent in the layer before) + the decision
  // (offload, keep, recompute), which is also the order the states were generated in. Only these 4
  // bytes a state are kept for all layers: keeping whole states (40 bytes) for backtracking took
  // 500 MB on DenseNet-121 b32 and a quarter of Algorithm 1's time went to page faults (offload.md, stop 56).
  struct entry {
    chain_step::state s;
    double idle;
  };
  struct generated {
    chain_step::state s;
    double idle;
    std::uint64_t from;
  };
  std::vector<entry> layer{{st.initial(c), 0.0}};
  std::vector<std::vector<std::uint32_t>> reached(L + 1);
  std::vector<generated> next;
  for (std::size_t i = 0; i < L; ++i) {
    // A layer holds up to `ways` x the states of the one before (DenseNet-121 b32 in its given order:
    // 1.5 s for the 1,435 layers of Algorithm 1), so the clock is read before each layer and every
    // 4,096 states within one.
    if (i > 0 && clock.expired()) {
      if (cut_at) *cut_at = static_cast<std::int64_t>(i);
      return std::nullopt;
    }
    // (Past 2^32 generated states the generation order no longer fits `reached`'s 4 bytes: no
    // decision, the caller's fallback instead.)
    if (ways * layer.size() > std::uint64_t{0xffffffff}) return std::nullopt;
    next.clear();
    for (std::size_t j = 0; j < layer.size(); ++j) {
      if ((j & 4095) == 4095 && clock.expired()) {
        if (cut_at) *cut_at = static_cast<std::int64_t>(i);
        return std::nullopt;
      }
      for (std::uint64_t d = 0; d < ways; ++d)
        if (const auto n = st.next(c, i, layer[j].s, static_cast<chain_decision>(d)))
          next.push_back({n->first, layer[j].idle + n->second, ways * static_cast<std::uint64_t>(j) + d});
    }
    // One state per key: the least time, the first generated among equal ones (parents in key order,
    // offload before keep before recompute: the rule of the std::map this once was, so Algorithm 1's
    // decisions are the same). Sorting by (key, generation) is the stable sort by key without its buffer.
    std::sort(next.begin(), next.end(), [](const generated& a, const generated& b) {
      return a.s.key() < b.s.key() || (a.s.key() == b.s.key() && a.from < b.from);
    });
    layer.clear();
    auto& how = reached[i + 1];
    for (const auto& g : next) {
      if (!layer.empty() && layer.back().s.key() == g.s.key()) {
        if (g.idle < layer.back().idle) {
          layer.back().idle = g.idle;
          how.back() = static_cast<std::uint32_t>(g.from);
        }
      } else {
        layer.push_back({g.s, g.idle});
        how.push_back(static_cast<std::uint32_t>(g.from));
      }
    }
  }
  double best = std::numeric_limits<double>::infinity();
  std::int64_t bj = -1;
  for (std::size_t j = 0; j < layer.size(); ++j)
    if (const double g = layer[j].idle + st.between_phases(layer[j].s); g < best) {
      best = g;
      bj = static_cast<std::int64_t>(j);
    }
  if (best == std::numeric_limits<double>::infinity()) return std::nullopt;
  std::vector<chain_decision> d(L);
  for (std::size_t i = L; i > 0; --i) {
    const auto from = reached[i][static_cast<std::size_t>(bj)];
    d[i - 1] = static_cast<chain_decision>(from % ways);
    bj = from / ways;
  }
  return d;
}

// Algorithm 1 on a chain view: the offload decisions (indices) of the least idle time, or nothing
// when no state survives the memory constraints, or when `clock` runs out first (see chain_program;
// recomputation is not considered whatever the view holds).
inline std::optional<std::vector<std::int32_t>> algorithm1(chain_view c, std::int64_t M, double bandwidth, std::int32_t slots,
                                                           const deadline& clock = deadline::never(), std::int64_t* cut_at = nullptr) {
  c.rec.clear();
  c.rec_needs_prev.clear();
  const auto d = chain_program(c, M, bandwidth, slots, clock, cut_at);
  if (!d) return std::nullopt;
  std::vector<std::int32_t> chosen;
  for (std::size_t i = 0; i < d->size(); ++i)
    if ((*d)[i] == chain_decision::offload) chosen.push_back(static_cast<std::int32_t>(i));
  return chosen;
}

}  // namespace detail

struct dynprog {
  static constexpr stage_kind kind = stage_kind::offloader;
  std::int32_t slots = 500;  // S, memory slots (§6: "500 is a reasonable value in practice")
  [[nodiscard]] std::string name() const { return "dynprog"; }
  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    const auto S = slots;
    const auto clock = deadline::after(ctx.time_limit_or(-1.0));
    return detail::run_offloader(p, std::move(tl), ctx, name(), [S, &clock](detail::chooser& ch, std::int64_t target) {
      const auto& m = ch.model();
      // The answer when Algorithm 1's decisions do not fit the tick model, or its clock runs out: GREEDY's
      // choice. Under a time limit it is computed first, aside, so that the limit holds with the
      // fallback included (computed after a cut, it took up to 0.05 s more on a 0.25 s limit), and
      // Algorithm 1 gets what is left; without one, only when needed.
      // Algorithm 1 then stops early enough for the two simulations that follow a cut (the choice
      // considered, the timeline built), timed by GREEDY's: without that reserve it ended 11.5 % past
      // a 0.25 s limit on Inception-v3 b32.
      std::optional<choice> g;
      deadline alg1_clock = clock;
      if (clock.limited()) {
        const auto t0 = deadline::clock::now();
        auto aside = ch.sibling();
        g = detail::greedy_choice(aside, target, clock);  // (paced too: 0.09 s under a 0.025 s limit on a 3,197-op graph before)
        ch.count_simulations(aside.evaluated());
        const double per_simulation = std::chrono::duration<double>(deadline::clock::now() - t0).count() /
                                      static_cast<double>(std::max<std::int64_t>(1, aside.evaluated()));
        alg1_clock = clock.kept_back(2 * per_simulation);
      }
      std::int64_t cut_at = -1;
      const auto chosen = detail::algorithm1(make_chain_view(m), target, m.timing.bandwidth, S, alg1_clock, &cut_at);
      if (chosen && ch.consider(*chosen) < std::numeric_limits<double>::infinity()) return ch.best();
      if (cut_at >= 0)
        ch.remark += "Algorithm 1 stopped by the time limit at value " + std::to_string(cut_at) + " of " + std::to_string(m.candidates.size()) +
                     ", GREEDY's choice instead";
      if (!g) return detail::greedy_choice(ch, target);
      if (g->found()) ch.consider(g->chosen);
      return ch.best();
    });
  }
};

static_assert(timeline_stage<dynprog>);

}  // namespace memplan::offload
