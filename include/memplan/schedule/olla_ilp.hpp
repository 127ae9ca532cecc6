#pragma once
// schedule::olla_ilp -- the operator order of minimum peak memory as an integer linear program:
// OLLA eq. 14 (eq. 1-5 and 13) with the simplifications of §4 (eq. 10-12 fixings, Functions 3-4
// early weight-update edges), warm-started from a heuristic and decoded by Function 1.
//
// Formulation as implemented (docs/olla_ilp.md has the long form). It works on storages (a tensor
// and everything inplace_of it: one allocation, several writers), with T = n timesteps and exactly
// one op per timestep -- the sequential reading of §3.1 ("a single operation typically runs per
// timestep"), so the objective of a solution IS the memory-rule peak of its decoded order:
//   R[o][t]  op o runs at t. Eq. 5 ties the C variables of all outputs of an op together, so one
//            variable per op stands for them all: C[s][t] = R[allocator(s)][t].
//   P[s][t]  storage s is preserved (live, not created) at t.
//   (3)  sum_t R[o][t] = 1                      every op runs once
//        sum_o R[o][t] = 1                      one op per timestep
//   (1)  R[alloc(s)][t] + P[s][t] <= 1
//   (2)  P[s][t] <= P[s][t-1] + R[alloc(s)][t-1]
//   (4)  R[u][t] <= P[s][t]                      for every other user u of s (readers, in-place writers)
//        precedence edges not implied by (4) (control edges, in-place order, zero-byte tensors):
//        sum_{t'<=t} R[o][t'] <= sum_{t'<t} R[q][t']   for q -> o
//   (13) sum_o (workspace(o) + bytes o allocates) R[o][t] + sum_s bytes(s) P[s][t] <= peak
//   objective: minimize peak (resident storages are a constant added back afterwards).
// Storages live to the end (graph outputs) get no P variable: P[s][t] = sum_{t'<t} R[alloc(s)][t'].
// Preexisting non-resident inputs: P[s][t] <= P[s][t-1], free at t = 0. Empty storages get nothing.
//
// §4.1 (eq. 10-12): with one op per timestep, op v can only run at a position in
// [|ancestors(v)|, n - 1 - |descendants(v)|] -- the sequential counterpart of SPAN = [ASAP, ALAP], and
// never wider. R exists only inside that window (eq. 10), P only inside MUL(s) = (earliest(alloc),
// max latest(user)] (eq. 11) and is the constant 1 on PRES(s) = [latest(alloc) + 1, max earliest(user)]
// (eq. 12). Fixed variables are substituted as constants, never created.
// §4.3 (Functions 3-4): the control edges of schedule::early_weight_updates are added first (option
// early_updates). They restrict the orders (a heuristic of the paper), so the solver's dual bound is then
// a bound over the restricted orders only and is NOT returned as schedule_result::lower_bound (the
// combinatorial lower_bound_peak is).
// Numerics: all sizes are divided by their gcd (solver doc: keep coefficients small).
//
// Without a MILP backend, or beyond max_ops / max_binaries, the warm-start scheduler's result is
// returned with a note saying why. A time-out returns the best incumbent (never worse than the warm
// start, which is also the solver's first incumbent).
#include <algorithm>
#include <cmath>
#include <functional>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <memplan/core/analysis.hpp>
#include <memplan/base/error.hpp>
#include <memplan/base/deadline.hpp>
#include <memplan/base/format.hpp>
#include <memplan/base/progress.hpp>
#include <memplan/core/any_stage.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/problem_builder.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/solver_time.hpp>
#include <memplan/schedule/default_scheduler.hpp>
#include <memplan/schedule/early_updates.hpp>
#include <memplan/solver/milp.hpp>
#include <memplan/solver/stage_time.hpp>

namespace memplan::schedule {

// Size of the model olla_ilp builds for a problem (after §4 fixings), for the size guard and reports.
struct olla_ilp_size {
  std::int32_t ops = 0;
  std::int32_t timesteps = 0;
  std::int64_t binaries = 0;          // R and P variables that are not fixed by eq. 10-12
  std::int64_t fixed_by_spans = 0;    // R and P variables eq. 10-12 removed (n * T * 2 - binaries, roughly)
  std::int64_t early_update_edges = 0;
  std::int64_t unit = 1;              // bytes per model unit (gcd of the sizes)
};

namespace detail {

// Positions an op can take in any sequential order: [#ancestors, n - 1 - #descendants].
struct olla_windows {
  std::vector<std::int32_t> earliest, latest;
};

inline olla_windows olla_position_windows(const problem& p) {
  const auto n = static_cast<std::size_t>(p.num_ops());
  const std::size_t words = (n + 63) / 64;
  const auto order = topological_order(p);
  olla_windows w;
  w.earliest.assign(n, 0);
  w.latest.assign(n, 0);
  std::vector<std::uint64_t> bits(n * words, 0);
  auto count = [&](std::size_t v) {
    std::int32_t c = 0;
    for (std::size_t k = 0; k < words; ++k) c += __builtin_popcountll(bits[v * words + k]);
    return c;
  };
  for (auto v : order) {  // ancestors
    const auto vi = static_cast<std::size_t>(v);
    for (auto q : p.preds(v)) {
      const auto qi = static_cast<std::size_t>(q);
      for (std::size_t k = 0; k < words; ++k) bits[vi * words + k] |= bits[qi * words + k];
      bits[vi * words + qi / 64] |= std::uint64_t{1} << (qi % 64);
    }
  }
  for (std::size_t v = 0; v < n; ++v) w.earliest[v] = count(v);
  std::fill(bits.begin(), bits.end(), 0);
  for (auto it = order.rbegin(); it != order.rend(); ++it) {  // descendants
    const auto vi = static_cast<std::size_t>(*it);
    for (auto s : p.succs(*it)) {
      const auto si = static_cast<std::size_t>(s);
      for (std::size_t k = 0; k < words; ++k) bits[vi * words + k] |= bits[si * words + k];
      bits[vi * words + si / 64] |= std::uint64_t{1} << (si % 64);
    }
  }
  for (std::size_t v = 0; v < n; ++v) w.latest[v] = static_cast<std::int32_t>(n) - 1 - count(v);
  return w;
}

// The eq. 14 model of a problem and what is needed to encode a start and decode a solution.
class olla_schedule_model {
 public:
  // What P[s][t] is for a storage: nothing (empty / resident), variables on MUL with a constant-1
  // stretch on PRES, or the running sum of its allocator's R (live to the end).
  enum class storage_mode : std::uint8_t { none, vars, cumulative };

  explicit olla_schedule_model(const problem& p) : p_(&p), n_(p.num_ops()), win_(olla_position_windows(p)) {
    const auto ns = static_cast<std::size_t>(p.num_storages());
    // Unit: gcd of every non-resident storage size and workspace (all live sums are multiples of it).
    std::int64_t g = 0;
    for (storage_id s = 0; s < p.num_storages(); ++s)
      if (!p.resident(s) && p.storage_bytes(s) > 0) g = std::gcd(g, p.storage_bytes(s));
    for (op_id o = 0; o < n_; ++o)
      if (p.workspace(o) > 0) g = std::gcd(g, p.workspace(o));
    unit_ = g > 0 ? g : 1;
    // R windows (eq. 10).
    r_off_.assign(static_cast<std::size_t>(n_) + 1, 0);
    for (op_id o = 0; o < n_; ++o)
      r_off_[static_cast<std::size_t>(o) + 1] =
          r_off_[static_cast<std::size_t>(o)] + (win_.latest[static_cast<std::size_t>(o)] - win_.earliest[static_cast<std::size_t>(o)] + 1);
    // P ranges (eq. 11-12).
    mode_.assign(ns, storage_mode::none);
    mul_lo_.assign(ns, 0);
    mul_hi_.assign(ns, -1);
    pres_lo_.assign(ns, 0);
    pres_hi_.assign(ns, -1);
    p_off_.assign(ns, 0);
    for (storage_id s = 0; s < p.num_storages(); ++s) {
      const auto si = static_cast<std::size_t>(s);
      if (p.resident(s) || p.storage_bytes(s) == 0) continue;
      const auto a = p.storage_allocator(s);
      std::int32_t last_e = a == no_id ? 0 : E(a), last_l = a == no_id ? 0 : L(a);
      for (auto u : p.storage_users(s)) {
        last_e = std::max(last_e, E(u));
        last_l = std::max(last_l, L(u));
      }
      if (p.live_to_end(s)) {
        if (a != no_id) { mode_[si] = storage_mode::cumulative; continue; }
        last_e = last_l = n_ - 1;  // preexisting and live to the end: constant
      }
      mode_[si] = storage_mode::vars;
      mul_lo_[si] = a == no_id ? 0 : E(a) + 1;
      mul_hi_[si] = last_l;
      pres_lo_[si] = a == no_id ? 0 : L(a) + 1;
      pres_hi_[si] = last_e;
    }
    // Alloc bytes per op (C terms of eq. 13) and the precedence edges (4) does not imply.
    alloc_units_.assign(static_cast<std::size_t>(n_), 0);
    for (op_id o = 0; o < n_; ++o) alloc_units_[static_cast<std::size_t>(o)] = p.workspace(o) / unit_;
    for (storage_id s = 0; s < p.num_storages(); ++s)
      if (mode_[static_cast<std::size_t>(s)] != storage_mode::none && p.storage_allocator(s) != no_id)
        alloc_units_[static_cast<std::size_t>(p.storage_allocator(s))] += p.storage_bytes(s) / unit_;
    for (op_id o = 0; o < n_; ++o)
      for (auto q : p.preds(o)) {
        bool implied = false;
        for (auto s : p.touched(o))
          implied |= mode_[static_cast<std::size_t>(s)] != storage_mode::none && p.storage_allocator(s) == q;
        if (!implied) edges_.emplace_back(q, o);
      }
  }

  [[nodiscard]] std::int64_t unit() const noexcept { return unit_; }
  [[nodiscard]] std::int64_t num_r() const noexcept { return r_off_.back(); }
  [[nodiscard]] std::int64_t num_p() const {
    std::int64_t c = 0;
    for (std::size_t s = 0; s < mode_.size(); ++s)
      if (mode_[s] == storage_mode::vars)
        for (auto t = mul_lo_[s]; t <= mul_hi_[s]; ++t) c += in_pres(s, t) ? 0 : 1;
    return c;
  }
  [[nodiscard]] std::int64_t fixed_count() const {
    std::int64_t vars_total = static_cast<std::int64_t>(n_) * n_;  // R
    for (auto m : mode_) vars_total += m == storage_mode::vars ? n_ : 0;
    return vars_total - num_r() - num_p();
  }

  // Builds the model (eq. 1-5, 10-14). peak_upper: the warm start's peak in units (nothing better
  // than it is wanted, so the peak variable is bounded by it).
  // peak_lower: a proven lower bound on the peak in units (lower_bound_peak), given to the solver.
  void build(std::int64_t peak_upper, std::int64_t peak_lower = 0) {
    auto& m = m_;
    m = solver::model("olla_eq14");
    const auto& p = *p_;
    r_.clear();
    r_.reserve(static_cast<std::size_t>(num_r()));
    for (op_id o = 0; o < n_; ++o)
      for (auto t = E(o); t <= L(o); ++t) r_.push_back(m.add_binary());
    pv_.clear();
    for (std::size_t s = 0; s < mode_.size(); ++s) {
      p_off_[s] = static_cast<std::int64_t>(pv_.size());
      if (mode_[s] == storage_mode::vars)
        for (auto t = mul_lo_[s]; t <= mul_hi_[s]; ++t)
          if (!in_pres(s, t)) pv_.push_back(m.add_binary());
    }
    peak_ = m.add_continuous(static_cast<double>(std::min(peak_lower, peak_upper)), static_cast<double>(peak_upper), "peak");
    // (3) every op once; one op per timestep.
    std::vector<solver::expr> at(static_cast<std::size_t>(n_));
    for (op_id o = 0; o < n_; ++o) {
      solver::expr once;
      for (auto t = E(o); t <= L(o); ++t) {
        once.add_term(R(o, t), 1.0);
        at[static_cast<std::size_t>(t)].add_term(R(o, t), 1.0);
      }
      m.add(once == 1.0);
    }
    for (auto& e : at) m.add(std::move(e) == 1.0);
    // (1), (2), (4) per storage.
    for (storage_id s = 0; s < p.num_storages(); ++s) {
      const auto si = static_cast<std::size_t>(s);
      if (mode_[si] == storage_mode::none) continue;
      const auto a = p.storage_allocator(s);
      if (mode_[si] == storage_mode::vars) {
        for (auto t = mul_lo_[si]; t <= mul_hi_[si]; ++t) {
          const auto pt = P(s, t);
          auto before = P(s, t - 1) + C(s, t - 1);
          if (in_pres(si, t)) {  // P = 1 here (eq. 12), which (2) still ties to the previous timestep
            if (!(before.empty() && before.constant() >= 1.0)) m.add(std::move(before) >= 1.0);
            continue;
          }
          if (a != no_id && t >= E(a) && t <= L(a)) m.add(C(s, t) + pt <= 1.0);  // (1)
          m.add(pt <= std::move(before));                                          // (2)
        }
      }
      for (auto u : p.storage_users(s)) {  // (4)
        if (u == a) continue;
        for (auto t = E(u); t <= L(u); ++t) {
          auto pt = P(s, t);
          if (pt.empty() && pt.constant() >= 1.0) continue;
          m.add(solver::expr(R(u, t)) <= pt);
        }
      }
    }
    // Precedence edges (4) does not imply: cumulative form, tighter than position differences.
    for (auto [q, o] : edges_) {
      const auto hi = std::min(L(o), L(q));
      solver::expr lhs, rhs;
      std::int32_t lt = E(o), rt = E(q);
      for (auto t = E(o); t <= hi; ++t) {
        for (; lt <= t; ++lt) lhs.add_term(R(o, lt), 1.0);
        for (; rt < t && rt <= L(q); ++rt) rhs.add_term(R(q, rt), 1.0);
        m.add(lhs <= rhs);
      }
    }
    // (13) peak per timestep.
    for (std::int32_t t = 0; t < n_; ++t) {
      solver::expr live;
      for (op_id o = 0; o < n_; ++o)
        if (t >= E(o) && t <= L(o) && alloc_units_[static_cast<std::size_t>(o)] > 0)
          live.add_term(R(o, t), static_cast<double>(alloc_units_[static_cast<std::size_t>(o)]));
      for (storage_id s = 0; s < p.num_storages(); ++s)
        if (mode_[static_cast<std::size_t>(s)] != storage_mode::none)
          live += static_cast<double>(p.storage_bytes(s) / unit_) * P(s, t);
      m.add(live <= solver::expr(peak_));
    }
    m.minimize(solver::expr(peak_));
  }

  // The full assignment of a topological order (minimal P: the memory rule's lifetimes).
  [[nodiscard]] std::vector<double> encode(std::span<const op_id> order) const {
    const auto& p = *p_;
    std::vector<double> x(m_.num_vars(), 0.0);
    std::vector<std::int32_t> pos(static_cast<std::size_t>(n_));
    for (std::size_t i = 0; i < order.size(); ++i) pos[static_cast<std::size_t>(order[i])] = static_cast<std::int32_t>(i);
    for (op_id o = 0; o < n_; ++o) x[R(o, pos[static_cast<std::size_t>(o)]).index] = 1.0;
    const auto lt = storage_lifetimes(p, order);
    for (std::size_t s = 0; s < mode_.size(); ++s) {
      if (mode_[s] != storage_mode::vars) continue;
      for (auto t = mul_lo_[s]; t <= mul_hi_[s]; ++t) {
        if (in_pres(s, t)) continue;
        const bool pre = p.storage_allocator(static_cast<storage_id>(s)) == no_id;
        const bool live = (pre ? t >= lt[s].first : t > lt[s].first) && t <= lt[s].last;
        x[pv_[static_cast<std::size_t>(p_off_[s] + (t - mul_lo_[s]) - pres_before(s, t))].index] = live ? 1.0 : 0.0;
      }
    }
    x[peak_.index] = static_cast<double>(peak_units(order));
    return x;
  }

  // Peak of an order in model units, without the resident bytes.
  [[nodiscard]] std::int64_t peak_units(std::span<const op_id> order) const {
    const auto prof = profile(*p_, order);
    std::int64_t mx = 0;
    for (auto v : prof.live) mx = std::max(mx, v - p_->resident_bytes());
    return mx / unit_;
  }

  // Function 1: ops in the order of their creation timesteps. Empty if the values are not one op
  // per timestep (never for a feasible solution).
  [[nodiscard]] std::vector<op_id> decode(std::span<const double> values) const {
    std::vector<op_id> at(static_cast<std::size_t>(n_), no_id);
    for (op_id o = 0; o < n_; ++o)
      for (auto t = E(o); t <= L(o); ++t)
        if (values[R(o, t).index] > 0.5) {
          if (at[static_cast<std::size_t>(t)] != no_id) return {};
          at[static_cast<std::size_t>(t)] = o;
        }
    for (auto o : at)
      if (o == no_id) return {};
    return at;
  }

  [[nodiscard]] const solver::model& model() const noexcept { return m_; }
  [[nodiscard]] solver::model& model() noexcept { return m_; }

 private:
  [[nodiscard]] std::int32_t E(op_id o) const { return win_.earliest[static_cast<std::size_t>(o)]; }
  [[nodiscard]] std::int32_t L(op_id o) const { return win_.latest[static_cast<std::size_t>(o)]; }
  [[nodiscard]] bool in_pres(std::size_t s, std::int32_t t) const { return t >= pres_lo_[s] && t <= pres_hi_[s]; }
  // Number of PRES timesteps in [mul_lo, t) (they have no variable).
  [[nodiscard]] std::int32_t pres_before(std::size_t s, std::int32_t t) const {
    const auto lo = std::max(pres_lo_[s], mul_lo_[s]), hi = std::min(pres_hi_[s], t - 1);
    return hi >= lo ? hi - lo + 1 : 0;
  }
  [[nodiscard]] solver::var R(op_id o, std::int32_t t) const {
    return r_[static_cast<std::size_t>(r_off_[static_cast<std::size_t>(o)] + (t - E(o)))];
  }
  // C[s][t] = R[alloc(s)][t] (eq. 5), 0 outside the allocator's window (eq. 10).
  [[nodiscard]] solver::expr C(storage_id s, std::int32_t t) const {
    const auto a = p_->storage_allocator(s);
    if (a == no_id || t < E(a) || t > L(a)) return solver::expr(0.0);
    return solver::expr(R(a, t));
  }
  [[nodiscard]] solver::expr P(storage_id s, std::int32_t t) const {
    const auto si = static_cast<std::size_t>(s);
    switch (mode_[si]) {
      case storage_mode::none: return solver::expr(0.0);
      case storage_mode::cumulative: {
        const auto a = p_->storage_allocator(s);
        solver::expr e;
        for (auto u = E(a); u < t && u <= L(a); ++u) e.add_term(R(a, u), 1.0);
        if (t > L(a)) return solver::expr(1.0);
        return e;
      }
      case storage_mode::vars:
        if (t < mul_lo_[si] || t > mul_hi_[si]) {
          // Before MUL a preexisting storage counts as "preserved from before the run" for (2).
          if (t < 0 && p_->storage_allocator(s) == no_id) return solver::expr(1.0);
          return solver::expr(0.0);
        }
        if (in_pres(si, t)) return solver::expr(1.0);
        return solver::expr(pv_[static_cast<std::size_t>(p_off_[si] + (t - mul_lo_[si]) - pres_before(si, t))]);
    }
    return solver::expr(0.0);
  }

  const problem* p_;
  std::int32_t n_;
  olla_windows win_;
  std::int64_t unit_ = 1;
  std::vector<std::int64_t> r_off_;
  std::vector<storage_mode> mode_;
  std::vector<std::int32_t> mul_lo_, mul_hi_, pres_lo_, pres_hi_;
  std::vector<std::int64_t> p_off_;
  std::vector<std::int64_t> alloc_units_;
  std::vector<std::pair<op_id, op_id>> edges_;
  solver::model m_;
  std::vector<solver::var> r_, pv_;
  solver::var peak_{};
};

// The topological order of p closest to `order`: Kahn's algorithm, the ready op that comes first in
// `order` first. Makes a heuristic order consistent with added control edges (Function 3).
inline std::vector<op_id> stable_topological_order(const problem& p, std::span<const op_id> order) {
  const auto n = static_cast<std::size_t>(p.num_ops());
  std::vector<std::int32_t> pos(n), indeg(n);
  for (std::size_t i = 0; i < order.size(); ++i) pos[static_cast<std::size_t>(order[i])] = static_cast<std::int32_t>(i);
  std::vector<std::pair<std::int32_t, op_id>> heap;
  for (std::size_t o = 0; o < n; ++o) {
    indeg[o] = static_cast<std::int32_t>(p.preds(static_cast<op_id>(o)).size());
    if (indeg[o] == 0) heap.emplace_back(pos[o], static_cast<op_id>(o));
  }
  std::make_heap(heap.begin(), heap.end(), std::greater<>{});
  std::vector<op_id> out;
  out.reserve(n);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
    const auto v = heap.back().second;
    heap.pop_back();
    out.push_back(v);
    for (auto w : p.succs(v))
      if (--indeg[static_cast<std::size_t>(w)] == 0) {
        heap.emplace_back(pos[static_cast<std::size_t>(w)], w);
        std::push_heap(heap.begin(), heap.end(), std::greater<>{});
      }
  }
  return out;
}

}  // namespace detail

struct olla_ilp {
  solver::any_backend backend{};               // none: plan_context::solver; neither: falls back to warm_start (with a note)
  double time_limit_s = 30.0;                  // wall clock for the stage: warm start (a quarter) and MILP solve
  double relative_gap = 1e-4;                  // stop when (incumbent - bound) / incumbent <= this
  int threads = 1;                             // > 1: CBC's parallel search, results may depend on timing
  int verbosity = 0;                           // the backend's log level
  bool early_updates = true;                   // OLLA §4.3 control edges (Functions 3-4) before solving
  std::int32_t max_ops = 3000;                 // size guard: beyond, fall back with a note
  std::int64_t max_binaries = 150000;          // size guard on the model after §4 fixings
  any_scheduler warm_start = default_scheduler{};  // the heuristic whose order is the first incumbent

  [[nodiscard]] std::string name() const { return "olla_ilp"; }

  // The model's size for p (what the size guard looks at), without solving. Throws
  // errc::limit_exceeded beyond max_ops (the windows need O(n^2) bits).
  [[nodiscard]] olla_ilp_size model_size(const problem& p) const {
    if (p.num_ops() > max_ops)
      throw error(errc::limit_exceeded, "schedule::olla_ilp: graph '" + p.name() + "' has " + std::to_string(p.num_ops()) +
                                            " ops, more than max_ops = " + std::to_string(max_ops));
    const auto edges = early_updates ? early_update_edges(p) : std::vector<std::pair<op_id, op_id>>{};
    const problem q = edges.empty() ? p : with_edges(p, edges);
    detail::olla_schedule_model mm(q);
    olla_ilp_size s;
    s.ops = p.num_ops();
    s.timesteps = p.num_ops();
    s.binaries = mm.num_r() + mm.num_p();
    s.fixed_by_spans = mm.fixed_count();
    s.early_update_edges = static_cast<std::int64_t>(edges.size());
    s.unit = mm.unit();
    return s;
  }

  [[nodiscard]] schedule_result run(const problem& p, const plan_context& ctx = {}) const {
    const auto& solver = backend.available() ? backend : ctx.solver;
    const auto limit = ctx.time_limit_or(time_limit_s);  // the whole stage: warm start and solve
    const auto clock = deadline::after(limit > 0 ? limit : -1.0);
    auto heur = warm_start.run(p, warm_start_context(ctx, limit, solver.available() && p.num_ops() <= max_ops));
    if (auto bad = check_topological(p, heur.order))
      throw error(errc::invalid_plan, "schedule::olla_ilp: warm-start scheduler '" + warm_start.name() +
                                          "' returned an invalid order: " + *bad);
    const auto lbp = ctx.order_bound(p);
    heur.lower_bound = std::max(heur.lower_bound, lbp);
    heur.optimal = heur.optimal || heur.peak <= heur.lower_bound;
    const std::string heur_name = warm_start.name();
    auto fallback = [&](const std::string& why) {
      schedule_result r = heur;
      r.note = "olla_ilp: " + why + ", used " + heur_name + (heur.note.empty() ? "" : "; " + heur.note);
      // A last event for every ending, so that a listener learns the outcome (and a bar closes).
      report(ctx.progress, name(), r.note, clock.elapsed(), heur.peak, lbp);
      return r;
    };
    if (!solver.available()) return fallback("no MILP backend available (link memplan::cbc and pass solver::cbc{})");
    if (p.num_ops() <= 1 || heur.optimal) {
      auto r = heur;
      r.policy = name();
      r.note = "olla_ilp: the warm start (" + heur.policy + ") meets the lower bound " + std::to_string(heur.lower_bound) +
               ", no solve needed";
      r.optimal = true;
      return r;
    }
    if (p.num_ops() > max_ops)
      return fallback("graph has " + std::to_string(p.num_ops()) + " ops > max_ops = " + std::to_string(max_ops));

    // §4.3: early weight-update control edges (Functions 3-4).
    const auto edges = early_updates ? early_update_edges(p) : std::vector<std::pair<op_id, op_id>>{};
    const problem q = edges.empty() ? p : with_edges(p, edges);
    std::vector<op_id> start = heur.order;
    std::int64_t start_peak = heur.peak;
    if (!is_topological(q, start)) {  // the heuristic broke an early-update edge: repair it for q
      start = detail::stable_topological_order(q, start);
      start_peak = peak_of(p, start);
    }
    detail::olla_schedule_model mm(q);
    const auto binaries = mm.num_r() + mm.num_p();
    if (binaries > max_binaries)
      return fallback("model too large: " + std::to_string(binaries) + " binaries > max_binaries = " +
                      std::to_string(max_binaries));
    const auto start_units = mm.peak_units(start);
    // lower_bound_peak is valid for every order (of q too): a floor for the peak variable.
    const auto lb_units = std::max<std::int64_t>(0, (lbp - p.resident_bytes() + mm.unit() - 1) / mm.unit());
    mm.build(start_units, lb_units);
    auto& m = mm.model();
    const auto x0 = mm.encode(start);
    if (auto bad = m.violation(x0))
      throw error(errc::invalid_plan, "schedule::olla_ilp: internal error: the warm start violates the model: " + *bad);
    m.set_start(x0);
    const auto st = m.stats();
    const std::string shape = std::to_string(p.num_ops()) + " timesteps, " + std::to_string(st.binaries) + " binaries (" +
                              std::to_string(mm.fixed_count()) + " fixed by spans), " + std::to_string(st.constraints) +
                              " constraints, unit " + std::to_string(mm.unit()) + " B";
    report(ctx.progress, name(), "solving: " + shape, clock.elapsed(), start_peak, lbp);

    auto within = solver::options_within(clock, limit);
    if (!within) return fallback(shape + "; the time limit of " + std::to_string(limit) + " s was spent before the solve");
    auto so = *within;
    so.relative_gap = relative_gap;
    so.threads = threads;
    so.verbosity = verbosity;
    const auto sol = solver.solve(m, so);
    const auto resident = p.resident_bytes();
    const bool exact_model = edges.empty();
    std::string note = "olla_ilp: " + shape + "; " + solver::to_string(sol.status) + " after " +
                       number_text(sol.seconds) + " s";
    if (!sol.message.empty()) note += " (" + sol.message + ")";
    std::int64_t ilp_bound = 0;
    if (!std::isnan(sol.bound)) {
      const double b = std::ceil(sol.bound - 1e-6 * std::max(1.0, std::abs(sol.bound)));
      ilp_bound = resident + static_cast<std::int64_t>(std::max(0.0, b)) * mm.unit();
      note += "; MILP bound " + std::to_string(ilp_bound) + " B";
      if (!exact_model)
        note += " (over orders with the " + std::to_string(edges.size()) +
                " early-update edges only, not claimed as a bound on all orders)";
    }
    if (!edges.empty()) note += "; " + std::to_string(edges.size()) + " early-update edges (OLLA Fn. 3-4)";
    report(ctx.progress, name(), note, clock.elapsed(), start_peak, lbp);
    if (!sol.has_incumbent()) return fallback(note + "; no incumbent");

    auto order = mm.decode(sol.values);
    if (order.empty() || !is_topological(p, order) || !is_topological(q, order))
      return fallback(note + "; the decoded order is not a valid order (numerical trouble?)");
    schedule_result r;
    r.policy = name();
    r.order = std::move(order);
    r.peak = peak_of(p, r.order);
    if (r.peak > heur.peak) {  // never worse than the warm start
      r.order = heur.order;
      r.peak = heur.peak;
      note += "; incumbent worse than the warm start, returned " + heur.policy;
    } else if (r.peak < heur.peak) {
      note += "; peak " + std::to_string(heur.peak) + " -> " + std::to_string(r.peak);
    }
    r.lower_bound = lbp;
    if (exact_model && ilp_bound > 0) r.lower_bound = std::max(r.lower_bound, std::min(ilp_bound, r.peak));
    r.optimal = r.peak <= r.lower_bound;
    r.note = std::move(note);
    return r;
  }
};

static_assert(scheduler<olla_ilp>);

}  // namespace memplan::schedule
