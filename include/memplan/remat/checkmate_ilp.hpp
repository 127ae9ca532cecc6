#pragma once
// remat::checkmate_ilp -- the Checkmate MILP (Jain et al., MLSys 2020; the R/S/FREE formulation that
// MONeT §3 restates) over the FIXED order of the incoming timeline's compute steps: which ops to
// recompute where, and which values to keep, at minimum total recompute cost under a peak target.
//
// Formulation as implemented (docs/checkmate.md has the long form). Positions i = 0..n-1 are the
// scheduled ops in the timeline's order; stage t (0..n-1) ends with the first computation of op t.
// Within a stage the ops run in position order, each at most once, op t last (Checkmate's "frontier
// advancing" stages). Values are tensors; a storage (a tensor and everything inplace_of it) holds
// one version of its in-place chain v0 -> v1 -> ... at a time.
//   R[t][i]  op i is (re)computed in stage t, for i < t (R[t][t] = 1);
//   S[t][v]  the storage of v holds v when stage t starts (kept from stage t-1);
//   N[t][s]  storage s is allocated anew by its allocator's recompute in stage t (continuous);
//   FREE[t][k][s]  storage s is freed right after op k in stage t (continuous);
//   U[t][k]  bytes of the non-fixed storages on the device while op k runs in stage t (continuous, an
//            upper bound at every feasible point, exact at the warm start).
// Constraints, for every stage t and op i with R[t][i] possible:
//   readability   R[t][i] <= S[t][u] + R[t][prod(u)]       every input u of i, and the base of every
//                                                          in-place output (in-place writers run after
//                                                          every other reader, so in position order
//                                                          a value read in a stage is not yet overwritten)
//   no clobber    R[t][i] + sum_{k>=1} S[t][v_k] <= 1      i allocates v0 of a storage: not while it holds
//                                                          a later version (a recompute leaves v0 as is)
//   keep          S[t+1][v] <= S[t][v] + R[t][prod(v)],  S[t+1][v] <= 1 - R[t][writer(v)],
//                 sum_v S[t][v] <= 1 per storage
//   allocation    N[t][s] >= R[t][alloc(s)] - sum_v S[t][v]
//   free          FREE[t][k][s] <= R[t][k],  <= 1 - sum_v S[t+1][v],  <= 1 - R[t][j] for users j of s
//                 with k < j <= t (the product of Checkmate eq. 5, linearized from above: memory is
//                 never under-counted, and an optimum frees as early as possible)
//   memory        U[t][k] >= U[t][k-1] - sum_s M_s FREE[t][k-1][s] + sum_{s alloc by k} M_s N[t][s],
//                 U[t][first] >= sum_s M_s sum_v S[t][v] + ...,
//                 U[t][k] + workspace(k) R[t][k] <= target - fixed bytes live at (t, k)
//                 (inequalities: U only has to bound the memory from above; as equalities, CBC 2.10
//                 crashed in CglPreProcess::postProcess whenever a warm start was given and a time or
//                 node limit stopped the search)
//   objective     minimize sum_{t, i<t} cost(i) R[t][i]  (one unit per op when the graph has no costs)
// Fixed storages (resident, graph outputs, and empty storages without in-place versions) are never
// freed: their presence and version at every stage follow from the order and enter as constants.
// Variables that cannot matter are not created: R[t][i] only for recomputable ops with a data
// descendant at position >= t; S[t][v] only while some reader of v may still run.
//
// The solution becomes steps: in each stage the recomputes in position order, then the compute; a
// storage is freed after its last use in the stage unless kept (S), everything not kept after the
// stage's compute. Recomputes whose outputs are not used and kept values that are not read are
// dropped first (they only add cost or memory). relink() then numbers the materializations and derives
// the profile; the stage re-checks the result with verify() before returning it.
//
// Without a memory target (ctx.peak_target()) or when the incoming timeline already fits, the timeline
// is returned unchanged (no recomputation is the cheapest plan). Without a MILP backend, beyond the size
// guards, or when the solver finds nothing, the best warm start is returned with a note saying why.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <memplan/base/deadline.hpp>
#include <memplan/base/error.hpp>
#include <memplan/base/format.hpp>
#include <memplan/base/progress.hpp>
#include <memplan/core/any_stage.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/plan.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/solver_time.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/core/verify.hpp>
#include <memplan/remat/none.hpp>
#include <memplan/solver/milp.hpp>
#include <memplan/solver/stage_time.hpp>

namespace memplan::remat {

// Size of the model checkmate_ilp builds for a timeline, for the size guards and reports.
struct checkmate_ilp_size {
  std::int32_t stages = 0;
  std::int64_t r_vars = 0, s_vars = 0;                  // binaries
  std::int64_t d_vars = 0;                              // binaries: implementation choices (monet_ilp, MONeT's delta)
  std::int64_t n_vars = 0, free_vars = 0, u_vars = 0;   // continuous
  std::int64_t constraints = 0;                         // after build (0 from model_size)
  std::int64_t unit = 1;                                // bytes per model unit
  bool rounded = false;                                 // sizes rounded up to the unit (conservative)
  [[nodiscard]] std::int64_t binaries() const noexcept { return r_vars + s_vars + d_vars; }
};

namespace detail {

// What the model needs to know about a problem over a fixed order. Positions index the order.
struct checkmate_facts {
  std::int32_t n = 0;
  std::vector<op_id> order;
  std::vector<std::int32_t> pos;              // op -> position
  std::vector<step> op_step;                  // position -> its compute step (op, impl)
  std::vector<double> cost;                   // position -> cost of one recompute (model units)
  std::vector<std::int64_t> ws;               // position -> workspace bytes
  bool unit_costs = false;                    // the graph has no costs: one unit per recompute
  // tensors
  std::vector<std::int32_t> prod;             // position of the producer, -1 when preexisting
  std::vector<std::int32_t> writer;           // position of the op writing the next version in place, -1
  std::vector<std::int32_t> version;          // index in its storage's chain
  std::vector<std::vector<std::int32_t>> readers;  // positions that read it (inputs, in-place writer)
  std::vector<std::int32_t> reader_need;      // max last_need over its readers, -1 when none
  // storages
  std::vector<std::vector<tensor_id>> chain;  // versions, root first
  std::vector<std::uint8_t> fixed;            // never freed: resident, output, empty single-version
  std::vector<std::vector<std::int32_t>> users;  // positions touching it, ascending
  // positions
  std::vector<std::vector<storage_id>> touch;  // storages read or written (empty ones too)
  std::vector<std::int32_t> last_need;        // max position of the op and its data descendants
  // Implementation choice (monet_ilp; checkmate_ilp keeps one alternative per position: the order's).
  struct alternative {
    std::int32_t impl = -1;   // index into problem::implementations, -1: the op's own
    double cost = 0;          // model units
    std::int64_t ws = 0;      // workspace bytes
  };
  std::vector<std::vector<alternative>> alts;  // position -> its alternatives (>= 1)
  std::vector<std::vector<std::int32_t>> alt_of;  // position -> impl + 1 -> index of the alternative that is it or dominates it
  bool choose = false;                        // the model chooses implementations and counts every op step's cost
  bool one_impl_per_op = true;                // a recompute runs the implementation of the op's first computation
  std::vector<std::uint8_t> may_recompute;    // position -> the op may be recomputed
  std::vector<std::uint8_t> hosts_recompute;  // position -> its stage may recompute ops

  [[nodiscard]] bool has_choice(std::int32_t i) const { return alts[static_cast<std::size_t>(i)].size() > 1; }
  // The alternative at position i for a step's impl (the dominating one when pruned), -1 when unknown.
  [[nodiscard]] std::int32_t alt_index(std::int32_t i, std::int32_t impl) const {
    const auto& a = alt_of[static_cast<std::size_t>(i)];
    const auto k = static_cast<std::size_t>(impl + 1);
    return impl < -1 || k >= a.size() ? -1 : a[k];
  }

  [[nodiscard]] std::int32_t nt() const noexcept { return static_cast<std::int32_t>(prod.size()); }
  // The version index a fixed storage holds when stage t starts (t in [0, n]); -1: not allocated yet.
  [[nodiscard]] std::int32_t fixed_version(storage_id s, std::int32_t t) const {
    const auto& c = chain[static_cast<std::size_t>(s)];
    if (prod[static_cast<std::size_t>(c[0])] >= t) return -1;
    std::int32_t k = 0;
    while (static_cast<std::size_t>(k) + 1 < c.size() && prod[static_cast<std::size_t>(c[static_cast<std::size_t>(k) + 1])] < t) ++k;
    return k;
  }
};

inline checkmate_facts checkmate_make_facts(const problem& p, const timeline& tl) {
  checkmate_facts f;
  f.order = tl.order();
  f.n = static_cast<std::int32_t>(f.order.size());
  const auto n = static_cast<std::size_t>(f.n);
  if (f.n != p.num_ops())
    throw error(errc::invalid_argument, "remat::checkmate_ilp: the timeline computes " + std::to_string(f.n) + " of the " +
                                            std::to_string(p.num_ops()) + " ops of '" + p.name() + "'");
  f.pos.assign(static_cast<std::size_t>(p.num_ops()), -1);
  for (std::size_t i = 0; i < n; ++i) f.pos[static_cast<std::size_t>(f.order[i])] = static_cast<std::int32_t>(i);
  f.op_step.resize(n);
  for (const auto& st : tl.steps)
    if (st.kind == step_kind::compute) f.op_step[static_cast<std::size_t>(f.pos[static_cast<std::size_t>(st.id)])] = step{step_kind::compute, st.id, st.impl};
  f.cost.resize(n);
  f.ws.resize(n);
  bool any_cost = false;
  for (std::size_t i = 0; i < n; ++i) {
    f.cost[i] = step_cost(p, f.op_step[i]);
    f.ws[i] = step_workspace(p, f.op_step[i]);
    any_cost |= f.cost[i] > 0;
  }
  f.unit_costs = !any_cost;
  if (f.unit_costs) std::fill(f.cost.begin(), f.cost.end(), 1.0);
  f.alts.assign(n, {});
  f.alt_of.assign(n, {});
  f.may_recompute.assign(n, 1);
  f.hosts_recompute.assign(n, 1);
  for (std::size_t i = 0; i < n; ++i) {
    f.alts[i] = {{f.op_step[i].impl, f.cost[i], f.ws[i]}};
    f.alt_of[i].assign(p.implementations(f.order[i]).size() + 1, -1);
    f.alt_of[i][static_cast<std::size_t>(f.op_step[i].impl + 1)] = 0;
  }

  const auto nt = static_cast<std::size_t>(p.num_tensors());
  const auto ns = static_cast<std::size_t>(p.num_storages());
  f.prod.assign(nt, -1);
  f.writer.assign(nt, -1);
  f.version.assign(nt, 0);
  f.readers.assign(nt, {});
  f.reader_need.assign(nt, -1);
  std::vector<tensor_id> next(nt, no_id);
  for (tensor_id t = 0; t < p.num_tensors(); ++t) {
    if (p.producer(t) != no_id) f.prod[static_cast<std::size_t>(t)] = f.pos[static_cast<std::size_t>(p.producer(t))];
    const auto b = p.inplace_of(t);
    if (b == no_id) continue;
    if (next[static_cast<std::size_t>(b)] != no_id)
      throw error(errc::invalid_argument, "remat::checkmate_ilp: " + p.describe_tensor(b) + " is overwritten in place twice (by '" +
                                              p.tensor_name(next[static_cast<std::size_t>(b)]) + "' and '" + p.tensor_name(t) + "')");
    next[static_cast<std::size_t>(b)] = t;
  }
  f.chain.assign(ns, {});
  f.fixed.assign(ns, 0);
  for (storage_id s = 0; s < p.num_storages(); ++s) {
    auto& c = f.chain[static_cast<std::size_t>(s)];
    for (tensor_id v = p.storage_root(s); v != no_id; v = next[static_cast<std::size_t>(v)]) {
      f.version[static_cast<std::size_t>(v)] = static_cast<std::int32_t>(c.size());
      c.push_back(v);
    }
    if (c.size() != p.storage_tensors(s).size())
      throw error(errc::invalid_argument, "remat::checkmate_ilp: the in-place versions of " + p.describe_tensor(p.storage_root(s)) +
                                              " do not form one chain");
    for (std::size_t k = 0; k + 1 < c.size(); ++k) f.writer[static_cast<std::size_t>(c[k])] = f.prod[static_cast<std::size_t>(c[k + 1])];
    f.fixed[static_cast<std::size_t>(s)] =
        p.resident(s) || p.live_to_end(s) || (p.storage_bytes(s) == 0 && c.size() == 1) ? 1 : 0;
  }
  f.touch.assign(n, {});
  f.users.assign(ns, {});
  for (std::size_t i = 0; i < n; ++i) {
    const auto o = f.order[i];
    auto add = [&](tensor_id t) {
      const auto s = p.storage_of(t);
      auto& tv = f.touch[i];
      if (std::find(tv.begin(), tv.end(), s) == tv.end()) {
        tv.push_back(s);
        f.users[static_cast<std::size_t>(s)].push_back(static_cast<std::int32_t>(i));
      }
    };
    for (auto t : p.inputs(o)) {
      add(t);
      auto& r = f.readers[static_cast<std::size_t>(t)];
      if (std::find(r.begin(), r.end(), static_cast<std::int32_t>(i)) == r.end()) r.push_back(static_cast<std::int32_t>(i));
    }
    for (auto t : p.outputs(o)) {
      add(t);
      const auto b = p.inplace_of(t);
      if (b == no_id) continue;
      auto& r = f.readers[static_cast<std::size_t>(b)];
      if (std::find(r.begin(), r.end(), static_cast<std::int32_t>(i)) == r.end()) r.push_back(static_cast<std::int32_t>(i));
    }
  }
  f.last_need.assign(n, 0);
  for (std::size_t ii = n; ii-- > 0;) {
    auto ln = static_cast<std::int32_t>(ii);
    for (auto v : p.outputs(f.order[ii]))
      for (auto r : f.readers[static_cast<std::size_t>(v)])
        if (static_cast<std::size_t>(r) > ii) ln = std::max(ln, f.last_need[static_cast<std::size_t>(r)]);
    f.last_need[ii] = ln;
  }
  for (std::size_t v = 0; v < nt; ++v)
    for (auto r : f.readers[v]) f.reader_need[v] = std::max(f.reader_need[v], f.last_need[static_cast<std::size_t>(r)]);
  return f;
}

// Turns facts into monet_ilp's: every position chooses among the op's own (cost, workspace) and its
// implementations (MONeT §4, delta), pruned to the Pareto front of (cost, workspace) -- a dominated
// alternative is never needed, a plan using one maps to its dominator (alt_of) at no more cost or
// memory. Costs are in the graph's units (one unit per op step when the graph gives no costs at all,
// the implementations' included).
inline void monet_choices(const problem& p, checkmate_facts& f, bool one_impl_per_op) {
  const auto n = static_cast<std::size_t>(f.n);
  bool any_cost = false;
  for (std::size_t i = 0; i < n; ++i) {
    const auto o = f.order[i];
    any_cost |= p.cost(o) > 0;
    for (const auto& im : p.implementations(o)) any_cost |= im.cost > 0;
  }
  f.unit_costs = !any_cost;
  f.choose = true;
  f.one_impl_per_op = one_impl_per_op;
  for (std::size_t i = 0; i < n; ++i) {
    const auto o = f.order[i];
    std::vector<checkmate_facts::alternative> all;
    all.push_back({-1, any_cost ? p.cost(o) : 1.0, p.workspace(o)});
    const auto ims = p.implementations(o);
    for (std::size_t k = 0; k < ims.size(); ++k) all.push_back({static_cast<std::int32_t>(k), any_cost ? ims[k].cost : 1.0, ims[k].workspace});
    // b dominates a: no costlier, no larger, and strictly better in one, or equal and listed first.
    auto dominates = [&](std::size_t b, std::size_t a) {
      const auto &x = all[a], &y = all[b];
      if (y.cost > x.cost || y.ws > x.ws) return false;
      return y.cost < x.cost || y.ws < x.ws || b < a;
    };
    auto& alts = f.alts[i];
    alts.clear();
    std::vector<std::int32_t> kept_as(all.size(), -1);
    for (std::size_t a = 0; a < all.size(); ++a) {
      bool dominated = false;
      for (std::size_t b = 0; b < all.size() && !dominated; ++b) dominated = b != a && dominates(b, a);
      if (!dominated) {
        kept_as[a] = static_cast<std::int32_t>(alts.size());
        alts.push_back(all[a]);
      }
    }
    // Fastest first (then smaller workspace): alternative 0 is the op's fastest implementation.
    std::vector<std::int32_t> perm(alts.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::stable_sort(perm.begin(), perm.end(), [&](std::int32_t a, std::int32_t b) {
      const auto &x = alts[static_cast<std::size_t>(a)], &y = alts[static_cast<std::size_t>(b)];
      return x.cost != y.cost ? x.cost < y.cost : x.ws < y.ws;
    });
    std::vector<checkmate_facts::alternative> sorted;
    std::vector<std::int32_t> where(alts.size());
    for (std::size_t k = 0; k < perm.size(); ++k) {
      where[static_cast<std::size_t>(perm[k])] = static_cast<std::int32_t>(k);
      sorted.push_back(alts[static_cast<std::size_t>(perm[k])]);
    }
    alts = std::move(sorted);
    auto& ao = f.alt_of[i];
    ao.assign(all.size(), -1);
    for (std::size_t a = 0; a < all.size(); ++a) {
      if (kept_as[a] >= 0) {
        ao[a] = where[static_cast<std::size_t>(kept_as[a])];
        continue;
      }
      // The kept alternative dominating it with the least cost (then workspace).
      std::int32_t best = -1;
      for (std::size_t k = 0; k < alts.size(); ++k)
        if (alts[k].cost <= all[a].cost && alts[k].ws <= all[a].ws && best < 0) best = static_cast<std::int32_t>(k);
      ao[a] = best;
    }
    // "As ordered" now means the op's fastest alternative.
    f.op_step[i].impl = alts[0].impl;
    f.cost[i] = alts[0].cost;
    f.ws[i] = alts[0].ws;
  }
}

// Restricts the stages as MONeT's Alg. 2 does: only forward ops are recomputed, and only in the
// stages of backward (and update) ops. Graphs without forward and backward phases are left as they are.
inline void monet_stages(const problem& p, checkmate_facts& f) {
  bool fwd = false, bwd = false;
  for (auto o : f.order) {
    fwd |= p.phase(o) == op_phase::forward;
    bwd |= p.phase(o) == op_phase::backward;
  }
  if (!fwd || !bwd) return;
  for (std::size_t i = 0; i < f.order.size(); ++i) {
    f.may_recompute[i] = p.phase(f.order[i]) == op_phase::forward ? 1 : 0;
    f.hosts_recompute[i] = p.phase(f.order[i]) == op_phase::forward ? 0 : 1;
  }
}

// A plan in the model's terms: which ops run in which stage, which versions are kept into which stage.
struct staged_plan {
  std::int32_t n = 0, nt = 0;
  // The implementation of each run (t, i): an alternative of facts::alts[i], or as_ordered: the
  // implementation of the op's compute step in the incoming order.
  static constexpr std::int32_t as_ordered = -2;

  staged_plan() = default;
  staged_plan(std::int32_t n_, std::int32_t nt_)
      : n(n_), nt(nt_), r(static_cast<std::size_t>(n_)), s(static_cast<std::size_t>(n_) + 1) {}
  // Back to the state just constructed, keeping the rows allocated (the on-demand plan's attempts
  // reuse one plan).
  void reset() {
    for (auto& row : r) std::fill(row.begin(), row.end(), std::uint8_t{0});
    for (auto& row : s) std::fill(row.begin(), row.end(), std::uint8_t{0});
    im.clear();
  }
  void set_impl(std::int32_t t, std::int32_t i, std::int32_t k) {
    if (im.empty()) {
      if (k == as_ordered) return;
      im.assign(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), as_ordered);
    }
    im[static_cast<std::size_t>(t) * static_cast<std::size_t>(n) + static_cast<std::size_t>(i)] = k;
  }
  [[nodiscard]] std::int32_t impl(std::int32_t t, std::int32_t i) const {
    return im.empty() ? as_ordered : im[static_cast<std::size_t>(t) * static_cast<std::size_t>(n) + static_cast<std::size_t>(i)];
  }
  // Whether stage t runs op i (i <= t; every stage runs its own op).
  std::uint8_t& run(std::int32_t t, std::int32_t i) { return row(r[static_cast<std::size_t>(t)], static_cast<std::size_t>(t) + 1)[static_cast<std::size_t>(i)]; }
  [[nodiscard]] bool runs(std::int32_t t, std::int32_t i) const {
    if (i < 0 || i > t || t >= n) return false;
    const auto& x = r[static_cast<std::size_t>(t)];
    return i == t || (!x.empty() && x[static_cast<std::size_t>(i)] != 0);
  }
  // Whether version v is kept into stage t (t in [0, n]).
  std::uint8_t& keep(std::int32_t t, tensor_id v) { return row(s[static_cast<std::size_t>(t)], static_cast<std::size_t>(nt))[static_cast<std::size_t>(v)]; }
  [[nodiscard]] bool kept(std::int32_t t, tensor_id v) const {
    if (t < 0 || t > n) return false;
    const auto& x = s[static_cast<std::size_t>(t)];
    return !x.empty() && x[static_cast<std::size_t>(v)] != 0;
  }
  // The alternative run (t, i) uses (index into f.alts[i]; -1: one the model does not have).
  [[nodiscard]] std::int32_t alt(const checkmate_facts& f, std::int32_t t, std::int32_t i) const {
    const auto k = impl(t, i);
    return f.alt_index(i, k == as_ordered ? f.op_step[static_cast<std::size_t>(i)].impl : k);
  }
  // The objective: recompute cost (checkmate), or the cost of every op step (monet, MONeT eq. 9).
  [[nodiscard]] double cost(const checkmate_facts& f) const {
    double c = 0;
    for (std::int32_t t = 0; t < n; ++t)
      for (std::int32_t i = 0; i < (f.choose ? t + 1 : t); ++i)
        if (runs(t, i)) {
          const auto a = alt(f, t, i);
          c += a >= 0 ? f.alts[static_cast<std::size_t>(i)][static_cast<std::size_t>(a)].cost : f.cost[static_cast<std::size_t>(i)];
        }
    return c;
  }

 private:
  // Rows allocated on first write (an untouched row reads as zeros): at 3,000 ops the matrices hold
  // tens of MB, and allocating them whole made one step (0.05-0.19 s of page faults) that no clock poll
  // could cut; row by row, the allocation falls inside the loops that poll. r's row t has t + 1 entries.
  static std::vector<std::uint8_t>& row(std::vector<std::uint8_t>& x, std::size_t size) {
    if (x.empty()) x.assign(size, 0);
    return x;
  }
  std::vector<std::vector<std::uint8_t>> r, s;
  std::vector<std::int32_t> im;  // empty while every run is as_ordered (n^2 entries once one is not)
};

// Sets the S bits of the fixed storages (constants of the model).
inline void set_fixed_bits(const problem& p, const checkmate_facts& f, staged_plan& sp) {
  for (storage_id s = 0; s < p.num_storages(); ++s) {
    if (!f.fixed[static_cast<std::size_t>(s)]) continue;
    const auto& c = f.chain[static_cast<std::size_t>(s)];
    for (std::int32_t t = 0; t <= f.n; ++t) {
      for (auto v : c) sp.keep(t, v) = 0;
      const auto k = f.fixed_version(s, t);
      if (k >= 0) sp.keep(t, c[static_cast<std::size_t>(k)]) = 1;
    }
  }
}

// Drops recomputes whose outputs nothing in the stage reads and nothing keeps, and kept values nothing
// reads or keeps further (both only add cost or memory), until nothing changes. Valid plans stay valid.
inline void cleanup(const problem& p, const checkmate_facts& f, staged_plan& sp) {
  const auto n = f.n;
  for (bool changed = true; changed;) {
    changed = false;
    for (std::int32_t t = 0; t < n; ++t)
      for (std::int32_t i = t - 1; i >= 0; --i) {
        if (!sp.runs(t, i)) continue;
        bool useful = false;
        for (auto v : p.outputs(f.order[static_cast<std::size_t>(i)])) {
          if (t + 1 < n && sp.kept(t + 1, v)) useful = true;
          for (auto j : f.readers[static_cast<std::size_t>(v)]) useful |= j > i && sp.runs(t, j);
        }
        if (!useful) {
          sp.run(t, i) = 0;
          changed = true;
        }
      }
    for (std::int32_t t = n - 1; t >= 1; --t)
      for (tensor_id v = 0; v < f.nt(); ++v) {
        const auto s = p.storage_of(v);
        if (f.fixed[static_cast<std::size_t>(s)] || !sp.kept(t, v)) continue;
        const auto pr = f.prod[static_cast<std::size_t>(v)];
        const bool root = f.version[static_cast<std::size_t>(v)] == 0;
        const bool reallocated = root && pr >= 0 && sp.runs(t, pr);
        bool used = t + 1 < n && sp.kept(t + 1, v);
        for (auto j : f.readers[static_cast<std::size_t>(v)]) used |= sp.runs(t, j);
        if (!root && pr >= 0 && sp.runs(t, pr)) used = true;  // a recompute that leaves this version as it is
        if (!used || reallocated) {
          sp.keep(t, v) = 0;
          changed = true;
        }
      }
  }
}

// The storages an op step materializes or writes, applied to `held` (the version each storage holds,
// no_id when none) with verify's rules; returns a violation in words, or nullopt.
inline std::optional<std::string> apply_op(const problem& p, op_id o, bool recompute, std::vector<tensor_id>& held) {
  auto readable = [&](tensor_id t) { return held[static_cast<std::size_t>(p.storage_of(t))] == t; };
  for (auto t : p.inputs(o))
    if (!readable(t)) return p.describe_op(o) + " reads " + p.describe_tensor(t) + ", which is not on the device";
  for (auto t : p.outputs(o)) {
    auto& h = held[static_cast<std::size_t>(p.storage_of(t))];
    if (recompute && h == t) continue;
    if (p.inplace_of(t) != no_id) {
      if (!readable(p.inplace_of(t))) return p.describe_op(o) + " writes in place over " + p.describe_tensor(p.inplace_of(t)) + ", which is not on the device";
    } else if (h != no_id) {
      return p.describe_op(o) + " produces " + p.describe_tensor(t) + " while its storage holds '" + p.tensor_name(h) + "'";
    }
    h = t;
  }
  return std::nullopt;
}

inline std::vector<tensor_id> initially_held(const problem& p) {
  std::vector<tensor_id> held(static_cast<std::size_t>(p.num_storages()), no_id);
  for (storage_id s = 0; s < p.num_storages(); ++s)
    if (p.preexisting(s)) held[static_cast<std::size_t>(s)] = p.storage_root(s);
  return held;
}

// The steps of a staged plan (into `out`, which keeps its evidence and stage records), relinked.
// Throws errc::invalid_plan when the plan is inconsistent (a bug, or a solution off by tolerances).
inline void staged_to_timeline(const problem& p, const checkmate_facts& f, const staged_plan& sp, timeline& out) {
  const auto n = f.n;
  auto held = initially_held(p);
  std::vector<step> steps;
  const auto bad = [&](const std::string& why) { return error(errc::invalid_plan, "remat::checkmate_ilp: " + why); };
  std::vector<std::int32_t> last_touch(static_cast<std::size_t>(p.num_storages()), -1);
  auto kept_next = [&](std::int32_t t, storage_id s) {
    if (t + 1 >= n) return false;
    for (auto v : f.chain[static_cast<std::size_t>(s)])
      if (sp.kept(t + 1, v)) return true;
    return false;
  };
  for (std::int32_t t = 0; t < n; ++t) {
    for (tensor_id v = 0; v < f.nt(); ++v)
      if (sp.kept(t, v) && held[static_cast<std::size_t>(p.storage_of(v))] != v)
        throw bad("stage " + std::to_string(t) + " keeps " + p.describe_tensor(v) + ", which is not on the device");
    std::vector<std::int32_t> ops;
    for (std::int32_t i = 0; i <= t; ++i)
      if (sp.runs(t, i)) ops.push_back(i);
    for (auto i : ops)
      for (auto s : f.touch[static_cast<std::size_t>(i)]) last_touch[static_cast<std::size_t>(s)] = i;
    for (auto i : ops) {
      const auto o = f.order[static_cast<std::size_t>(i)];
      auto st = f.op_step[static_cast<std::size_t>(i)];
      st.kind = i == t ? step_kind::compute : step_kind::recompute;
      if (const auto k = sp.impl(t, i); k != staged_plan::as_ordered) st.impl = k;
      if (auto why = apply_op(p, o, i < t, held)) throw bad("stage " + std::to_string(t) + ": " + *why);
      steps.push_back(st);
      for (auto s : f.touch[static_cast<std::size_t>(i)]) {
        const auto su = static_cast<std::size_t>(s);
        if (f.fixed[su] || last_touch[su] != i || held[su] == no_id || kept_next(t, s)) continue;
        steps.push_back({step_kind::free, p.storage_root(s)});
        held[su] = no_id;
      }
    }
    for (auto i : ops)
      for (auto s : f.touch[static_cast<std::size_t>(i)]) last_touch[static_cast<std::size_t>(s)] = -1;
    // Everything else not kept into the next stage goes after the stage's compute.
    for (storage_id s = 0; s < p.num_storages(); ++s) {
      const auto su = static_cast<std::size_t>(s);
      if (f.fixed[su] || held[su] == no_id || kept_next(t, s)) continue;
      steps.push_back({step_kind::free, p.storage_root(s)});
      held[su] = no_id;
    }
  }
  out.steps = std::move(steps);
  relink(p, out);
}

// A staged plan from a timeline over the same order whose recomputes are in position order within each
// stage (each op at most once); nullopt (with `why`) otherwise.
inline std::optional<staged_plan> timeline_to_staged(const problem& p, const checkmate_facts& f, const timeline& tl, std::string& why) {
  staged_plan sp(f.n, f.nt());
  auto held = initially_held(p);
  std::int32_t t = 0, last = -1;
  bool recorded = false;
  auto record = [&] {
    if (recorded) return;
    for (std::size_t s = 0; s < held.size(); ++s)
      if (held[s] != no_id) sp.keep(t, held[s]) = 1;
    recorded = true;
  };
  for (const auto& st : tl.steps) {
    if (st.kind == step_kind::compute) {
      if (t >= f.n || st.id != f.order[static_cast<std::size_t>(t)]) {
        why = "it computes the ops in another order";
        return std::nullopt;
      }
      record();
      if (auto bad = apply_op(p, st.id, false, held)) {
        why = *bad;
        return std::nullopt;
      }
      sp.set_impl(t, t, st.impl);
      ++t;
      last = -1;
      recorded = false;
    } else if (st.kind == step_kind::recompute) {
      const auto i = f.pos[static_cast<std::size_t>(st.id)];
      if (i < 0 || i >= t || i <= last) {
        why = "its recomputes between two scheduled ops are not in order, once each";
        return std::nullopt;
      }
      record();
      if (auto bad = apply_op(p, st.id, true, held)) {
        why = *bad;
        return std::nullopt;
      }
      sp.run(t, i) = 1;
      sp.set_impl(t, i, st.impl);
      last = i;
    } else if (st.kind == step_kind::free) {
      held[static_cast<std::size_t>(p.storage_of(st.id))] = no_id;
    } else {
      why = "it offloads";
      return std::nullopt;
    }
  }
  if (t != f.n) {
    why = "it does not compute every op";
    return std::nullopt;
  }
  set_fixed_bits(p, f, sp);
  return sp;
}

// A staged plan memplan builds without a solver, to recompute on demand: a storage whose versions can
// all be recomputed is kept into a stage only when that stage reads the value it holds at the end of
// the previous one; any other value a stage reads is recomputed in it (recursively, in position order).
// The other storages are kept from their production to the last stage that reads them. Storages whose
// recompute would clash with a kept one (a multi-output or in-place op writing into another storage)
// are kept instead. A low-memory warm start and fallback; nullopt when it finds no consistent plan.
// Past `clock`, no new attempt starts (nullopt).
inline std::optional<staged_plan> on_demand_plan(const problem& p, const checkmate_facts& f, const deadline& clock = deadline::never()) {
  const auto n = f.n;
  const auto ns = static_cast<std::size_t>(p.num_storages());
  std::vector<std::uint8_t> drop(ns, 0);
  for (storage_id s = 0; s < p.num_storages(); ++s) {
    const auto su = static_cast<std::size_t>(s);
    if (f.fixed[su] || p.preexisting(s) || p.storage_bytes(s) == 0) continue;
    bool ok = true;
    for (auto v : f.chain[su]) ok &= p.recomputable(f.order[static_cast<std::size_t>(f.prod[static_cast<std::size_t>(v)])]);
    drop[su] = ok ? 1 : 0;
  }
  staged_plan sp(n, f.nt());
  // A frame of `need`'s walk: storage s's producer (position pr) runs again in the stage; next: the
  // input (or, once outputs is set, the output) it goes on with.
  struct need_frame {
    storage_id s;
    std::int32_t pr;
    std::size_t next;
    bool outputs;
  };
  std::vector<need_frame> frames;
  for (std::size_t attempt = 0; attempt <= ns; ++attempt) {
    if (attempt > 0) {
      if (clock.expired()) return std::nullopt;
      sp.reset();
    }
    std::vector<std::int32_t> keep_until(static_cast<std::size_t>(f.nt()), -1);
    for (tensor_id v = 0; v < f.nt(); ++v)
      for (auto r : f.readers[static_cast<std::size_t>(v)]) keep_until[static_cast<std::size_t>(v)] = std::max(keep_until[static_cast<std::size_t>(v)], r);
    // Dropped storages: the version held when the previous stage ends, the version kept into this stage,
    // whether a recompute of this stage allocates the storage anew.
    std::vector<tensor_id> held_end(ns, no_id), kept(ns, no_id);
    std::vector<std::uint8_t> alloc(ns, 0);
    std::int32_t t = 0;
    // Makes v readable in stage t; returns the storage to keep instead when it cannot (or -1). The
    // recomputes a stage needs chain back through the ops (on a chain's backward, to its input): they
    // are walked on an explicit stack, one frame per op being recomputed, not on the call stack (a
    // 3,000-layer chain overflowed a 256 KB thread stack).
    auto need = [&](tensor_id v0, std::int32_t asker0) -> std::int32_t {
      // v's own checks: -1 (readable in stage t as it is) or the storage to keep instead; otherwise its
      // producer is to run in stage t: a frame is pushed and `recompute` returned.
      constexpr std::int32_t recompute = -2;
      auto open = [&](tensor_id v, std::int32_t asker) -> std::int32_t {
        const auto s = p.storage_of(v);
        const auto su = static_cast<std::size_t>(s);
        const auto pr = f.prod[static_cast<std::size_t>(v)];
        if (f.fixed[su]) return f.fixed_version(s, t) == f.version[static_cast<std::size_t>(v)] ? -1 : asker;
        if (!drop[su]) {
          if (pr >= 0 && sp.runs(t, pr)) return -1;
          const auto w = f.writer[static_cast<std::size_t>(v)];
          if (w >= 0 && w < t) return asker;
          keep_until[static_cast<std::size_t>(v)] = std::max(keep_until[static_cast<std::size_t>(v)], t);
          return -1;
        }
        if (kept[su] == v || sp.runs(t, pr)) return -1;
        if (kept[su] == no_id && held_end[su] == v && !alloc[su]) {
          kept[su] = v;
          sp.keep(t, v) = 1;
          return -1;
        }
        if (kept[su] != no_id) return s;  // another version of s is kept into this stage
        frames.push_back({s, pr, 0, false});
        return recompute;
      };
      frames.clear();
      auto r = open(v0, asker0);
      while (!frames.empty()) {
        if (r >= 0) return r;  // a storage to keep instead: the whole request fails with it
        auto& fr = frames.back();
        const auto o = f.order[static_cast<std::size_t>(fr.pr)];
        const auto s = fr.s;
        // Its inputs first, then the older versions its in-place outputs overwrite, then the checks
        // on its other outputs; each need may push a frame, which runs before this one resumes.
        const auto ins = p.inputs(o);
        if (!fr.outputs) {
          if (fr.next < ins.size()) {
            const auto u = ins[fr.next++];
            r = open(u, s);
            continue;
          }
          fr.outputs = true;
          fr.next = 0;
        }
        const auto outs = p.outputs(o);
        r = -1;
        bool opened = false;
        while (!opened && r < 0 && fr.next < outs.size()) {  // (opened: fr may have moved)
          const auto w = outs[fr.next++];
          const auto s2 = p.storage_of(w);
          const auto s2u = static_cast<std::size_t>(s2);
          if (s2 == s) {
            if (p.inplace_of(w) != no_id) {
              r = open(p.inplace_of(w), s);
              opened = true;
            }
            continue;
          }
          // Another storage: fine when it is dropped too, w is its root and no later version is kept.
          if (p.inplace_of(w) != no_id || (!drop[s2u] && f.chain[s2u].size() > 1)) r = s;
          else if (drop[s2u] && kept[s2u] != no_id && f.version[static_cast<std::size_t>(kept[s2u])] > 0) r = s;
        }
        if (opened || r >= 0) continue;
        for (auto w : outs)
          if (p.inplace_of(w) == no_id) alloc[static_cast<std::size_t>(p.storage_of(w))] = 1;
        sp.run(t, fr.pr) = 1;
        frames.pop_back();
        r = -1;
      }
      return r;
    };
    std::int32_t failed = -1;
    for (t = 0; t < n && failed < 0; ++t) {
      // An attempt is O(n^2) (every stage scans the ops run so far, and touches rows not allocated
      // yet), so the clock is read inside it too, not only between attempts.
      if ((t & 31) == 31 && clock.expired()) return std::nullopt;
      const auto o = f.order[static_cast<std::size_t>(t)];
      for (auto u : p.inputs(o))
        if (failed < 0) failed = need(u, p.storage_of(u));
      for (auto w : p.outputs(o))
        if (failed < 0 && p.inplace_of(w) != no_id) failed = need(p.inplace_of(w), p.storage_of(w));
      // What the dropped storages hold when the stage ends.
      for (std::int32_t i = 0; i <= t; ++i) {
        if (!sp.runs(t, i)) continue;
        for (auto w : p.outputs(f.order[static_cast<std::size_t>(i)])) {
          const auto su = static_cast<std::size_t>(p.storage_of(w));
          if (!drop[su] || (i < t && kept[su] == w)) continue;
          kept[su] = w;
        }
      }
      held_end = kept;
      std::fill(kept.begin(), kept.end(), no_id);
      std::fill(alloc.begin(), alloc.end(), 0);
    }
    if (failed >= 0) {
      if (!drop[static_cast<std::size_t>(failed)]) return std::nullopt;  // cannot happen for the order's own reads
      drop[static_cast<std::size_t>(failed)] = 0;
      continue;
    }
    for (tensor_id v = 0; v < f.nt(); ++v) {
      const auto su = static_cast<std::size_t>(p.storage_of(v));
      if (f.fixed[su] || drop[su]) continue;
      const auto pr = f.prod[static_cast<std::size_t>(v)];
      for (std::int32_t tt = std::max(1, pr + 1); tt <= std::min(keep_until[static_cast<std::size_t>(v)], n - 1); ++tt) sp.keep(tt, v) = 1;
    }
    for (tensor_id v = 0; v < f.nt(); ++v)  // the preexisting ones are on the device at the start
      if (f.prod[static_cast<std::size_t>(v)] < 0 && f.version[static_cast<std::size_t>(v)] == 0) sp.keep(0, v) = 1;
    set_fixed_bits(p, f, sp);
    cleanup(p, f, sp);
    return sp;
  }
  return std::nullopt;
}

// verify() on a copy of the timeline placed without reuse (every materialization and workspace its own
// range): checks the steps' validity and the claimed peak whatever placer runs later.
inline std::optional<std::string> replay_violation(const problem& p, const timeline& tl) {
  memory_plan mp{tl, {}};
  std::int64_t off = 0;
  for (auto& m : mp.mats) {
    m.offset = off;
    off += p.storage_bytes(m.storage);
  }
  for (auto& st : mp.steps) {
    if (!runs_op(st.kind)) continue;
    const auto w = step_workspace(p, st);
    st.workspace_offset = w > 0 ? off : -1;
    off += w;
  }
  mp.arena = off;
  mp.alignment = 1;
  mp.stats = timeline_stats(p, mp);
  if (auto r = verify(p, mp); !r) return r.violation;
  return std::nullopt;
}

// The model over a fixed order for one peak target.
class checkmate_model {
 public:
  checkmate_model(const problem& p, const checkmate_facts& f, std::int64_t target) : p_(&p), f_(&f), target_(target) {
    const auto n = f.n;
    // Unit: gcd of the non-fixed sizes and the workspaces; coarser (sizes rounded up) when they span
    // more than 1e6 units (CBC's tolerances are around 1e-6 relative).
    std::int64_t g = 0, mx = 0;
    for (storage_id s = 0; s < p.num_storages(); ++s)
      if (!f.fixed[static_cast<std::size_t>(s)] && p.storage_bytes(s) > 0) {
        g = std::gcd(g, p.storage_bytes(s));
        mx = std::max(mx, p.storage_bytes(s));
      }
    for (const auto& as : f.alts)
      for (const auto& a : as)
        if (a.ws > 0) {
          g = std::gcd(g, a.ws);
          mx = std::max(mx, a.ws);
        }
    unit_ = g > 0 ? g : 1;
    constexpr std::int64_t span = 1000000;
    if (mx / unit_ > span) {
      unit_ = (mx + span - 1) / span;
      rounded_ = true;
    }
    // Which variables exist.
    r_idx_.assign(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), -1);
    s_idx_.assign(static_cast<std::size_t>(n + 1) * static_cast<std::size_t>(f.nt()), -1);
    std::int64_t nr = 0, nsv = 0;
    for (std::int32_t t = 0; t < n; ++t)
      for (std::int32_t i = 0; i < t; ++i)
        if (p.recomputable(f.order[static_cast<std::size_t>(i)]) && f.last_need[static_cast<std::size_t>(i)] >= t &&
            f.may_recompute[static_cast<std::size_t>(i)] && f.hosts_recompute[static_cast<std::size_t>(t)])
          r_idx_[ri(t, i)] = nr++;
    // delta[t][i][a] (MONeT §4): one binary per alternative of every run that can happen.
    d_idx_.assign(static_cast<std::size_t>(n) * static_cast<std::size_t>(n), -1);
    std::int64_t nd = 0;
    for (std::int32_t t = 0; t < n; ++t)
      for (std::int32_t i = 0; i <= t; ++i)
        if (f.has_choice(i) && (i == t || r_idx_[ri(t, i)] >= 0)) {
          d_idx_[ri(t, i)] = nd;
          nd += static_cast<std::int64_t>(f.alts[static_cast<std::size_t>(i)].size());
        }
    for (std::int32_t t = 1; t < n; ++t)
      for (tensor_id v = 0; v < f.nt(); ++v) {
        const auto vu = static_cast<std::size_t>(v);
        if (f.fixed[static_cast<std::size_t>(p.storage_of(v))] || f.prod[vu] >= t || f.reader_need[vu] < t) continue;
        s_idx_[si(t, v)] = nsv++;
      }
    size_.stages = n;
    size_.r_vars = nr;
    size_.s_vars = nsv;
    size_.d_vars = nd;
    size_.unit = unit_;
    size_.rounded = rounded_;
  }

  [[nodiscard]] const checkmate_ilp_size& size() const noexcept { return size_; }
  [[nodiscard]] std::int64_t unit() const noexcept { return unit_; }
  [[nodiscard]] bool rounded() const noexcept { return rounded_; }
  [[nodiscard]] solver::model& model() noexcept { return m_; }
  [[nodiscard]] const solver::model& model() const noexcept { return m_; }
  // Why the model is infeasible before solving (a constant constraint that fails), or empty.
  [[nodiscard]] const std::string& trivially_infeasible() const noexcept { return trivial_; }

  void build() {
    const auto& p = *p_;
    const auto& f = *f_;
    const auto n = f.n;
    m_ = solver::model("checkmate");
    defs_.clear();
    r_var_.assign(static_cast<std::size_t>(size_.r_vars), {});
    s_var_.assign(static_cast<std::size_t>(size_.s_vars), {});
    for (std::int32_t t = 0; t < n; ++t)
      for (std::int32_t i = 0; i < t; ++i)
        if (auto k = r_idx_[ri(t, i)]; k >= 0) r_var_[static_cast<std::size_t>(k)] = m_.add_binary();
    for (std::int32_t t = 1; t < n; ++t)
      for (tensor_id v = 0; v < f.nt(); ++v)
        if (auto k = s_idx_[si(t, v)]; k >= 0) s_var_[static_cast<std::size_t>(k)] = m_.add_binary();
    d_var_.assign(static_cast<std::size_t>(size_.d_vars), {});
    for (auto& d : d_var_) d = m_.add_binary();
    // Objective: costs scaled so that the smallest positive one is 1 (at most 1e6 apart).
    double cmin = 0, cmax = 0;
    auto see = [&](double c) {
      if (c <= 0) return;
      cmin = cmin == 0 ? c : std::min(cmin, c);
      cmax = std::max(cmax, c);
    };
    for (auto c : f.cost) see(c);
    for (const auto& as : f.alts)
      for (const auto& a : as) see(a.cost);
    cost_scale_ = cmin > 0 ? (cmax / cmin > 1e6 ? 1e6 / cmax : 1.0 / cmin) : 1.0;
    // Checkmate: recompute cost, sum_{t, i<t} cost(i) R[t][i]. MONeT eq. 9: the cost of every run,
    // forward/backward (i = t) and recomputation (i < t), by the implementation it chose.
    solver::expr obj;
    for (std::int32_t t = 0; t < n; ++t)
      for (std::int32_t i = 0; i <= t; ++i) {
        if (auto d = d_idx_[ri(t, i)]; d >= 0) {
          const auto& as = f.alts[static_cast<std::size_t>(i)];
          for (std::size_t a = 0; a < as.size(); ++a)
            if (as[a].cost > 0) obj.add_term(d_var_[static_cast<std::size_t>(d) + a], as[a].cost * cost_scale_);
          continue;
        }
        if (i == t) continue;  // a constant
        if (auto k = r_idx_[ri(t, i)]; k >= 0 && f.cost[static_cast<std::size_t>(i)] > 0)
          obj.add_term(r_var_[static_cast<std::size_t>(k)], f.cost[static_cast<std::size_t>(i)] * cost_scale_);
      }
    m_.minimize(std::move(obj));
    // One implementation per run: sum_l delta[t][i][l] = R[t][i] (MONeT: sum_l delta_{i,l} = 1 for the
    // forward/backward run, sum_l delta^k_{i,l} = r^k_i for a recomputation); with one_impl_per_op, a
    // recompute runs the first computation's implementation: delta[t][i][l] <= delta[i][i][l].
    for (std::int32_t t = 0; t < n; ++t)
      for (std::int32_t i = 0; i <= t; ++i) {
        const auto d = d_idx_[ri(t, i)];
        if (d < 0) continue;
        const auto na = f.alts[static_cast<std::size_t>(i)].size();
        solver::expr e;
        for (std::size_t a = 0; a < na; ++a) e += solver::expr(d_var_[static_cast<std::size_t>(d) + a]);
        add(std::move(e) == R(t, i), "one_impl");
        if (i < t && f.one_impl_per_op) {
          const auto d0 = d_idx_[ri(i, i)];
          for (std::size_t a = 0; a < na; ++a)
            add(solver::expr(d_var_[static_cast<std::size_t>(d) + a]) <= solver::expr(d_var_[static_cast<std::size_t>(d0) + a]), "same_impl");
        }
      }

    for (std::int32_t t = 0; t < n; ++t) {
      // ---- readability and clobbering ----
      for (std::int32_t i = 0; i <= t; ++i) {
        if (R(t, i).empty() && R(t, i).constant() == 0.0) continue;
        const auto o = f.order[static_cast<std::size_t>(i)];
        const auto ins = p.inputs(o);
        for (auto u : ins) add(R(t, i) <= S(t, u) + R(t, f.prod[static_cast<std::size_t>(u)]), "read");
        for (auto v : p.outputs(o)) {
          const auto b = p.inplace_of(v);
          const auto& c = f.chain[static_cast<std::size_t>(p.storage_of(v))];
          if (b != no_id) {
            if (std::find(ins.begin(), ins.end(), b) == ins.end())
              add(R(t, i) <= S(t, b) + R(t, f.prod[static_cast<std::size_t>(b)]) + (i < t ? S(t, v) : solver::expr(0.0)), "base");
          } else if (c.size() > 1 && i < t) {
            solver::expr e = R(t, i);
            for (std::size_t k = 1; k < c.size(); ++k) e += S(t, c[k]);
            add(std::move(e) <= 1.0, "clobber");
          }
        }
      }
      // ---- what is kept into stage t + 1 ----
      if (t + 1 < n) {
        for (tensor_id v = 0; v < f.nt(); ++v) {
          if (s_idx_[si(t + 1, v)] < 0) continue;
          const auto next = S(t + 1, v);
          add(next <= S(t, v) + R(t, f.prod[static_cast<std::size_t>(v)]), "keep");
          const auto w = f.writer[static_cast<std::size_t>(v)];
          if (w >= 0 && w <= t) add(next + R(t, w) <= 1.0, "overwritten");
        }
        for (storage_id s = 0; s < p.num_storages(); ++s) {
          const auto& c = f.chain[static_cast<std::size_t>(s)];
          if (f.fixed[static_cast<std::size_t>(s)] || c.size() < 2) continue;
          auto e = P(t + 1, s);
          if (e.terms().size() > 1) add(std::move(e) <= 1.0, "one_version");
        }
      }
      // ---- memory, op by op ----
      solver::expr cur;
      for (storage_id s = 0; s < p.num_storages(); ++s)
        if (!f.fixed[static_cast<std::size_t>(s)] && p.storage_bytes(s) > 0) cur += units(p.storage_bytes(s)) * P(t, s);
      std::int64_t fixed_start = 0;
      for (storage_id s = 0; s < p.num_storages(); ++s)
        if (f.fixed[static_cast<std::size_t>(s)] && f.fixed_version(s, t) >= 0) fixed_start += p.storage_bytes(s);
      for (std::int32_t k = 0; k <= t; ++k) {
        const auto rk = R(t, k);
        if (rk.empty() && rk.constant() == 0.0) continue;
        const auto o = f.order[static_cast<std::size_t>(k)];
        std::int64_t fixed_now = fixed_start;
        for (auto v : p.outputs(o)) {
          const auto s = p.storage_of(v);
          const auto su = static_cast<std::size_t>(s);
          if (p.inplace_of(v) != no_id || p.storage_bytes(s) == 0) continue;
          if (f.fixed[su]) {
            if (k == t) fixed_now += p.storage_bytes(s);
            continue;
          }
          if (k == t) {
            cur += units(p.storage_bytes(s));
            continue;
          }
          const auto pt = P(t, s);
          if (pt.empty()) {
            cur += units(p.storage_bytes(s)) * rk;
          } else {
            const auto nv = m_.add_continuous(0.0, 1.0);
            defs_.push_back({nv, def_kind::positive_part, {rk - pt}});
            add(solver::expr(nv) >= rk - pt, "alloc");
            cur += units(p.storage_bytes(s)) * solver::expr(nv);
            ++size_.n_vars;
          }
        }
        const auto u = m_.add_continuous(0.0, solver::infinity);
        defs_.push_back({u, def_kind::value, {cur}});
        add(solver::expr(u) >= cur, "U");
        ++size_.u_vars;
        const double rhs = std::floor(static_cast<double>(target_ - fixed_now) / static_cast<double>(unit_));
        add(solver::expr(u) + W(t, k) <= rhs, "memory");
        cur = solver::expr(u);
        // Frees after op k: storages it touches that no later op of the stage uses and stage t+1 does not keep.
        for (auto s : f.touch[static_cast<std::size_t>(k)]) {
          const auto su = static_cast<std::size_t>(s);
          if (f.fixed[su] || p.storage_bytes(s) == 0) continue;
          std::vector<solver::expr> factors;
          bool never = false;
          if (!rk.empty()) factors.push_back(rk);
          if (t + 1 < n) {
            auto kp = P(t + 1, s);
            if (!kp.empty()) factors.push_back(1.0 - kp);
          }
          for (auto j : f.users[su]) {
            if (j <= k || j > t) continue;
            const auto rj = R(t, j);
            if (!rj.empty()) factors.push_back(1.0 - rj);
            else if (rj.constant() != 0.0) never = true;
          }
          if (never) continue;
          const auto b = units(p.storage_bytes(s));
          if (factors.empty()) {
            cur -= b;
            continue;
          }
          const auto fv = m_.add_continuous(0.0, 1.0);
          for (const auto& e : factors) add(solver::expr(fv) <= e, "free");
          defs_.push_back({fv, def_kind::minimum, std::move(factors)});
          cur -= b * solver::expr(fv);
          ++size_.free_vars;
        }
      }
    }
    size_.constraints = static_cast<std::int64_t>(m_.num_constraints());
  }

  // The full assignment of a staged plan (N, FREE, U at their exact values).
  [[nodiscard]] std::vector<double> encode(const staged_plan& sp) const {
    const auto& f = *f_;
    std::vector<double> x(m_.num_vars(), 0.0);
    for (std::int32_t t = 0; t < f.n; ++t)
      for (std::int32_t i = 0; i < t; ++i)
        if (auto k = r_idx_[ri(t, i)]; k >= 0) x[r_var_[static_cast<std::size_t>(k)].index] = sp.runs(t, i) ? 1.0 : 0.0;
    for (std::int32_t t = 1; t < f.n; ++t)
      for (tensor_id v = 0; v < f.nt(); ++v)
        if (auto k = s_idx_[si(t, v)]; k >= 0) x[s_var_[static_cast<std::size_t>(k)].index] = sp.kept(t, v) ? 1.0 : 0.0;
    for (std::int32_t t = 0; t < f.n; ++t)
      for (std::int32_t i = 0; i <= t; ++i)
        if (auto d = d_idx_[ri(t, i)]; d >= 0 && sp.runs(t, i))
          if (auto a = sp.alt(f, t, i); a >= 0) x[d_var_[static_cast<std::size_t>(d + a)].index] = 1.0;
    for (const auto& d : defs_) {
      double val = 0;
      switch (d.kind) {
        case def_kind::positive_part: val = std::max(0.0, d.exprs[0].evaluate(x)); break;
        case def_kind::value: val = d.exprs[0].evaluate(x); break;
        case def_kind::minimum:
          val = 1.0;
          for (const auto& e : d.exprs) val = std::min(val, e.evaluate(x));
          val = std::max(0.0, val);
          break;
      }
      x[d.v.index] = val;
    }
    return x;
  }

  // Whether every bit a staged plan sets has a variable (or is a constant 1) in the model.
  [[nodiscard]] bool representable(const staged_plan& sp) const {
    const auto& f = *f_;
    for (std::int32_t t = 0; t < f.n; ++t)
      for (std::int32_t i = 0; i < t; ++i)
        if (sp.runs(t, i) && r_idx_[ri(t, i)] < 0) return false;
    for (std::int32_t t = 1; t < f.n; ++t)
      for (tensor_id v = 0; v < f.nt(); ++v)
        if (sp.kept(t, v) && !f.fixed[static_cast<std::size_t>(p_->storage_of(v))] && s_idx_[si(t, v)] < 0) return false;
    // Every run's implementation is one of the model's alternatives (the only one without a choice),
    // and with one_impl_per_op a recompute runs its first computation's.
    for (std::int32_t t = 0; t < f.n; ++t)
      for (std::int32_t i = 0; i <= t; ++i) {
        if (!sp.runs(t, i)) continue;
        const auto a = sp.alt(f, t, i);
        if (a < 0) return false;
        if (i < t && f.one_impl_per_op && f.choose && a != sp.alt(f, i, i)) return false;
      }
    return true;
  }

  [[nodiscard]] staged_plan decode(std::span<const double> x) const {
    const auto& f = *f_;
    staged_plan sp(f.n, f.nt());
    for (std::int32_t t = 0; t < f.n; ++t)
      for (std::int32_t i = 0; i < t; ++i)
        if (auto k = r_idx_[ri(t, i)]; k >= 0) sp.run(t, i) = x[r_var_[static_cast<std::size_t>(k)].index] > 0.5 ? 1 : 0;
    for (std::int32_t t = 1; t < f.n; ++t)
      for (tensor_id v = 0; v < f.nt(); ++v)
        if (auto k = s_idx_[si(t, v)]; k >= 0) sp.keep(t, v) = x[s_var_[static_cast<std::size_t>(k)].index] > 0.5 ? 1 : 0;
    for (std::int32_t t = 0; t < f.n; ++t)
      for (std::int32_t i = 0; i <= t; ++i)
        if (auto d = d_idx_[ri(t, i)]; d >= 0) {
          const auto& as = f.alts[static_cast<std::size_t>(i)];
          for (std::size_t a = 0; a < as.size(); ++a)
            if (x[d_var_[static_cast<std::size_t>(d) + a].index] > 0.5) sp.set_impl(t, i, as[a].impl);
        }
    for (tensor_id v = 0; v < f.nt(); ++v)
      if (f.prod[static_cast<std::size_t>(v)] < 0 && f.version[static_cast<std::size_t>(v)] == 0) sp.keep(0, v) = 1;
    set_fixed_bits(*p_, f, sp);
    return sp;
  }

  // The objective in the graph's cost units.
  [[nodiscard]] double unscale(double objective) const { return objective / cost_scale_; }

 private:
  enum class def_kind : std::uint8_t { positive_part, value, minimum };
  struct definition {
    solver::var v;
    def_kind kind;
    std::vector<solver::expr> exprs;
  };

  [[nodiscard]] std::size_t ri(std::int32_t t, std::int32_t i) const {
    return static_cast<std::size_t>(t) * static_cast<std::size_t>(f_->n) + static_cast<std::size_t>(i);
  }
  [[nodiscard]] std::size_t si(std::int32_t t, tensor_id v) const {
    return static_cast<std::size_t>(t) * static_cast<std::size_t>(f_->nt()) + static_cast<std::size_t>(v);
  }
  [[nodiscard]] double units(std::int64_t bytes) const {
    return static_cast<double>(rounded_ ? (bytes + unit_ - 1) / unit_ : bytes / unit_);
  }
  // R[t][i]: 1 for i == t, a variable, or 0.
  [[nodiscard]] solver::expr R(std::int32_t t, std::int32_t i) const {
    if (i < 0 || i > t) return solver::expr(0.0);
    if (i == t) return solver::expr(1.0);
    const auto k = r_idx_[ri(t, i)];
    return k >= 0 ? solver::expr(r_var_[static_cast<std::size_t>(k)]) : solver::expr(0.0);
  }
  // Workspace of run (t, k) in units: ws(k) R[t][k], or sum_l c^l delta[t][k][l] (MONeT: c_i = sum_l c_i^l delta_{i,l}).
  [[nodiscard]] solver::expr W(std::int32_t t, std::int32_t k) const {
    const auto& f = *f_;
    if (auto d = d_idx_[ri(t, k)]; d >= 0) {
      solver::expr e;
      const auto& as = f.alts[static_cast<std::size_t>(k)];
      for (std::size_t a = 0; a < as.size(); ++a)
        if (as[a].ws > 0) e.add_term(d_var_[static_cast<std::size_t>(d) + a], units(as[a].ws));
      return e;
    }
    return units(f.ws[static_cast<std::size_t>(k)]) * R(t, k);
  }
  // S[t][v]: a constant for fixed storages and at t = 0, a variable, or 0.
  [[nodiscard]] solver::expr S(std::int32_t t, tensor_id v) const {
    const auto& f = *f_;
    const auto s = p_->storage_of(v);
    if (f.fixed[static_cast<std::size_t>(s)]) return solver::expr(f.fixed_version(s, t) == f.version[static_cast<std::size_t>(v)] ? 1.0 : 0.0);
    if (t == 0) return solver::expr(f.prod[static_cast<std::size_t>(v)] < 0 && f.version[static_cast<std::size_t>(v)] == 0 ? 1.0 : 0.0);
    if (t >= f.n) return solver::expr(0.0);
    const auto k = s_idx_[si(t, v)];
    return k >= 0 ? solver::expr(s_var_[static_cast<std::size_t>(k)]) : solver::expr(0.0);
  }
  // The storage is on the device when stage t starts.
  [[nodiscard]] solver::expr P(std::int32_t t, storage_id s) const {
    solver::expr e;
    for (auto v : f_->chain[static_cast<std::size_t>(s)]) e += S(t, v);
    return e;
  }
  void add(solver::constraint c, const char* what) {
    if (c.lhs.empty()) {
      const bool ok = c.sense == solver::sense::le ? 0.0 <= c.rhs + 1e-9 : c.sense == solver::sense::ge ? 0.0 >= c.rhs - 1e-9 : std::abs(c.rhs) <= 1e-9;
      if (!ok && trivial_.empty()) trivial_ = std::string("constant constraint '") + what + "' fails";
      return;
    }
    m_.add(std::move(c), what);
  }

  const problem* p_;
  const checkmate_facts* f_;
  std::int64_t target_;
  std::int64_t unit_ = 1;
  bool rounded_ = false;
  double cost_scale_ = 1.0;
  checkmate_ilp_size size_;
  std::vector<std::int64_t> r_idx_, s_idx_, d_idx_;
  std::vector<solver::var> r_var_, s_var_, d_var_;
  std::vector<definition> defs_;
  solver::model m_;
  std::string trivial_;
};

inline double recompute_cost_of(const problem& p, const timeline& tl) {
  double c = 0;
  for (const auto& s : tl.steps)
    if (s.kind == step_kind::recompute) c += step_cost(p, s);
  return c;
}
inline std::int64_t recompute_count(const timeline& tl) {
  return std::count_if(tl.steps.begin(), tl.steps.end(), [](const step& s) { return s.kind == step_kind::recompute; });
}

// Whether an *_ilp checkpointer starts its on-demand plan now. Without a solve to follow it only
// matters when no candidate fits yet, and it starts only while a quarter of the stage's limit is
// left: it takes about as long as one of the warm start's runs (48 ms on EfficientNet-B0 at batch
// 32), and the warm start may have used the whole limit (monet_greedy runs the same plan as its own
// last resort).
inline bool start_on_demand(const deadline& clock, double limit, bool will_solve, bool fits_already) {
  if (clock.expired()) return false;
  if (will_solve) return true;
  return !fits_already && !(clock.limited() && clock.seconds_left() < 0.25 * limit);
}

// A plan an *_ilp checkpointer may return or start its solve from (warm start, on-demand plans).
struct ilp_candidate {
  std::string who;
  timeline tl;
  double cost = 0;  // in the policy's objective
};

// The least costly candidate that meets the target, else the one with the lowest peak (nullptr: none).
inline const ilp_candidate* best_candidate(const std::vector<ilp_candidate>& cands, std::int64_t target) {
  const ilp_candidate* best = nullptr;
  for (const auto& c : cands) {
    if (!best) { best = &c; continue; }
    const bool fc = c.tl.peak <= target, fb = best->tl.peak <= target;
    if (fc != fb ? fc : (fc ? c.cost < best->cost : c.tl.peak < best->tl.peak)) best = &c;
  }
  return best;
}

// Gives the model the cheapest candidate that meets the target and that the model can represent as its
// MILP start; returns what was used or why none was (`unrepresentable`: the policy's words for a plan
// the model cannot hold).
inline std::string set_warm_start(const problem& p, const checkmate_facts& f, const checkmate_model& mm, solver::model& m,
                                  const std::vector<ilp_candidate>& cands, std::int64_t target, const std::string& unrepresentable) {
  std::string note = "no warm start fits the target";
  std::vector<const ilp_candidate*> fit;
  for (const auto& c : cands)
    if (c.tl.peak <= target) fit.push_back(&c);
  std::stable_sort(fit.begin(), fit.end(), [](const ilp_candidate* a, const ilp_candidate* b) { return a->cost < b->cost; });
  for (const auto* c : fit) {
    std::string why;
    auto sp = timeline_to_staged(p, f, c->tl, why);
    if (!sp) {
      note = "warm start " + c->who + " not used: " + why;
      continue;
    }
    cleanup(p, f, *sp);
    if (!mm.representable(*sp)) {
      note = "warm start " + c->who + " not used: " + unrepresentable;
      continue;
    }
    const auto x0 = mm.encode(*sp);
    if (auto bad = m.violation(x0)) {
      note = "warm start " + c->who + " not used: " + *bad;
      continue;
    }
    m.set_start(x0);
    return "warm start " + c->who + " (model cost " + number_text(sp->cost(f)) + ")";
  }
  return note;
}

// The order's own timeline (compute and free steps) with every op on implementation impl[op], keeping
// tl's stage records and order bounds.
inline timeline with_impls(const problem& p, const timeline& tl, const std::vector<std::int32_t>& impl) {
  auto base = make_timeline(p, tl.order());
  for (auto& s : base.steps)
    if (s.kind == step_kind::compute) s.impl = impl[static_cast<std::size_t>(s.id)];
  derive(p, base);
  base.stages = tl.stages;
  base.order_lower_bound = tl.order_lower_bound;
  base.order_optimal = tl.order_optimal;
  return base;
}

// Runs an *_ilp checkpointer's plugged warm start within the stage's clock and adds its plan to the
// candidates, named with its own notes; a plan whose replay fails is dropped. Returns the summary the
// fallback notes quote. `describe` words a plan's cost.
template <class Describe>
std::string add_warm_start(const problem& p, const timeline& tl, const any_checkpointer& warm_start, const plan_context& ctx,
                           double limit, bool will_solve, const deadline& clock, std::vector<ilp_candidate>& cands, Describe&& describe) {
  auto w = warm_start.run(p, tl, warm_start_context(ctx, limit, will_solve, &clock));
  std::string wnote;
  for (std::size_t k = tl.stages.size(); k < w.stages.size(); ++k)
    if (!w.stages[k].note.empty()) wnote += (wnote.empty() ? "" : "; ") + w.stages[k].note;
  w.stages = tl.stages;
  const auto who = warm_start.name() + (wnote.empty() ? "" : " (" + wnote + ")");
  if (auto bad = replay_violation(p, w)) return "warm start " + who + " dropped: " + *bad;
  std::string summary = "warm start " + who + ": peak " + std::to_string(w.peak) + " bytes, " + describe(w);
  cands.push_back({who, std::move(w), 0});
  return summary;
}

// What an *_ilp checkpointer's solve gave: the decoded plan, replayed and within the target, or none
// and `note` says why (the caller falls back to its best candidate).
struct staged_solve {
  std::optional<timeline> plan;
  std::string note;  // the model's shape, the warm start used, the solver's status, time, bound and gap
};

// The size guards and solver settings of an *_ilp checkpointer.
struct staged_solve_limits {
  std::int32_t max_ops = 400;
  std::int64_t max_binaries = 200000;
  double relative_gap = 1e-4;
  int threads = 1;
  int verbosity = 0;
};

// Builds the staged R/S(/delta) model over f at the target, starts it from the cheapest candidate it
// can represent (`unrepresentable`: the policy's words for one it cannot), solves it within the stage's
// clock and translates the solution into steps. `schedules`: which plans the model ranges over, for
// the message when it proves none fits.
inline staged_solve solve_staged(const problem& p, const checkmate_facts& f, std::int64_t target, const timeline& tl,
                                 const solver::any_backend& solver, const deadline& clock, double limit, const staged_solve_limits& lim,
                                 const std::vector<ilp_candidate>& cands, const std::string& unrepresentable,
                                 const std::string& schedules, const progress_callback& progress, const std::string& policy) {
  if (!solver.available()) return {std::nullopt, "no MILP backend available (link memplan::cbc and pass solver::cbc{})"};
  if (f.n > lim.max_ops) return {std::nullopt, "graph has " + std::to_string(f.n) + " ops > max_ops = " + std::to_string(lim.max_ops)};
  checkmate_model mm(p, f, target);
  if (mm.size().binaries() > lim.max_binaries)
    return {std::nullopt, "model too large: " + std::to_string(mm.size().binaries()) + " binaries > max_binaries = " + std::to_string(lim.max_binaries)};
  mm.build();
  auto& m = mm.model();
  const auto& sz = mm.size();
  const std::string shape = std::to_string(sz.stages) + " stages, " + std::to_string(sz.binaries()) + " binaries (R " + std::to_string(sz.r_vars) +
                            ", S " + std::to_string(sz.s_vars) + (sz.d_vars > 0 ? ", delta " + std::to_string(sz.d_vars) : std::string()) + "), " +
                            std::to_string(sz.n_vars + sz.free_vars + sz.u_vars) + " continuous, " + std::to_string(sz.constraints) +
                            " constraints, unit " + std::to_string(mm.unit()) + " B" + (mm.rounded() ? " (sizes rounded up: conservative)" : "");
  if (!mm.trivially_infeasible().empty()) return {std::nullopt, shape + "; infeasible (" + mm.trivially_infeasible() + ")"};

  const auto start_note = set_warm_start(p, f, mm, m, cands, target, unrepresentable);
  report(progress, policy, "solving: " + shape + "; " + start_note, clock.elapsed(), tl.peak, 0);
  auto within = solver::options_within(clock, limit);
  if (!within) return {std::nullopt, shape + "; the time limit of " + number_text(limit) + " s was spent before the solve"};
  auto so = *within;
  so.relative_gap = lim.relative_gap;
  so.threads = lim.threads;
  so.verbosity = lim.verbosity;
  const auto sol = solver.solve(m, so);
  std::string note = shape + "; " + start_note + "; " + solver::to_string(sol.status) + " after " + number_text(sol.seconds) + " s";
  if (!sol.message.empty() && sol.message != solver::to_string(sol.status)) note += " (" + sol.message + ")";
  if (!std::isnan(sol.bound)) note += ", bound " + number_text(mm.unscale(sol.bound));
  if (sol.has_incumbent()) note += ", gap " + (std::isnan(sol.gap) ? std::string("unknown") : number_text(100.0 * sol.gap) + " %");
  report(progress, policy, note, clock.elapsed(), tl.peak, 0);
  if (sol.status == solver::status::infeasible)
    return {std::nullopt, note + ": no plan over this order (" + schedules + ") fits the target of " + std::to_string(target) + " bytes"};
  if (!sol.has_incumbent()) return {std::nullopt, note + "; no incumbent"};

  auto sp = mm.decode(sol.values);
  cleanup(p, f, sp);
  timeline out = tl;
  try {
    staged_to_timeline(p, f, sp, out);
  } catch (const error& e) {
    return {std::nullopt, note + "; the solution does not translate into steps (" + e.what() + ")"};
  }
  if (auto bad = replay_violation(p, out)) return {std::nullopt, note + "; the translated plan does not verify (" + *bad + ")"};
  if (out.peak > target)
    return {std::nullopt, note + "; the translated plan peaks at " + std::to_string(out.peak) + " bytes, above the target (numerical trouble?)"};
  return {std::move(out), std::move(note)};
}

}  // namespace detail

struct checkmate_ilp {
  static constexpr stage_kind kind = stage_kind::checkpointer;

  solver::any_backend backend{};            // none: plan_context::solver; neither: falls back to the warm start (with a note)
  double time_limit_s = 30.0;               // wall clock for the stage: warm starts and MILP solve (ctx.time_limit_s overrides)
  double relative_gap = 1e-4;               // stop when (incumbent - bound) / incumbent <= this
  int threads = 1;                          // > 1: CBC's parallel search, results may depend on timing
  int verbosity = 0;                        // the backend's log level
  std::int32_t max_ops = 400;               // size guard: beyond, fall back with a note
  std::int64_t max_binaries = 200000;       // size guard on R and S variables
  any_checkpointer warm_start = none{};        // its timeline is the solver's first incumbent when it fits

  [[nodiscard]] std::string name() const { return "checkmate_ilp"; }

  // The model's size over a timeline's order (variables; constraints are counted when built).
  [[nodiscard]] checkmate_ilp_size model_size(const problem& p, const timeline& tl) const {
    const auto f = detail::checkmate_make_facts(p, tl.empty() ? given_timeline(p) : tl);
    return detail::checkmate_model(p, f, 0).size();
  }

  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const {
    tl.alternatives.clear();  // the scheduler's other orders are not tried: the model and its warm start are over this order
    const auto limit = ctx.time_limit_or(time_limit_s);  // the whole stage: warm starts and solve
    const auto clock = deadline::after(limit > 0 ? limit : -1.0);
    const auto records = tl.stages;
    auto finish = [&](timeline out, const std::string& note) {
      out.stages = records;
      out.stages.push_back({kind, name(), 0.0, "checkmate_ilp: " + note});
      return out;
    };
    if (p.num_ops() == 0) return finish(std::move(tl), "no ops");
    if (tl.empty()) tl = given_timeline(p);
    const auto target = ctx.peak_target();
    if (target == std::numeric_limits<std::int64_t>::max())
      return finish(std::move(tl), "no memory target (budget, capacity or memory_target), nothing recomputed");
    // Start from the order's own timeline (compute and free steps only).
    std::string rebuilt;
    if (tl.has_recompute_or_transfer_steps()) {
      tl = detail::with_impls(p, tl, compute_impls(p, tl));
      rebuilt = "; started from the order's own timeline (the incoming one had recompute or transfer steps)";
    }
    if (tl.peak <= target)
      return finish(std::move(tl), "the timeline fits (peak " + std::to_string(tl.peak) + " <= target " + std::to_string(target) +
                                       " bytes), nothing recomputed" + rebuilt);
    const auto f = detail::checkmate_make_facts(p, tl);
    report(ctx.progress, name(), "warm start: " + warm_start.name(), clock.elapsed(), tl.peak, 0);

    // ---- warm starts: the plugged heuristic, then memplan's on-demand plan ----
    using candidate = detail::ilp_candidate;
    std::vector<candidate> cands;
    const auto& solver = backend.available() ? backend : ctx.solver;
    const bool will_solve = solver.available() && f.n <= max_ops;
    const std::string warm_summary = detail::add_warm_start(p, tl, warm_start, ctx, limit, will_solve, clock, cands, [&](const timeline& w) {
      return "recompute cost " + number_text(detail::recompute_cost_of(p, w));
    });
    const bool warm_ok = !cands.empty();  // the warm start is the first candidate when it replays
    const bool fits_already = std::any_of(cands.begin(), cands.end(), [&](const candidate& c) { return c.tl.peak <= target; });
    if (auto od = detail::start_on_demand(clock, limit, will_solve, fits_already) ? detail::on_demand_plan(p, f, clock) : std::nullopt) {
      timeline t2 = tl;
      try {
        detail::staged_to_timeline(p, f, *od, t2);
        if (!detail::replay_violation(p, t2)) cands.push_back({"on-demand recomputation", std::move(t2), 0});
      } catch (const error&) {
      }
    }
    // Costs in the model's units: the steps' costs, or the number of recomputes when the graph has none.
    auto model_cost = [&](const timeline& x) {
      return f.unit_costs ? static_cast<double>(detail::recompute_count(x)) : detail::recompute_cost_of(p, x);
    };
    for (auto& c : cands) c.cost = model_cost(c.tl);
    auto best_candidate = [&] { return detail::best_candidate(cands, target); };
    auto fallback = [&](const std::string& why) {
      const auto* c = best_candidate();
      if (!c) return finish(tl, why + "; returned the timeline unchanged" + rebuilt);
      return finish(c->tl, why + "; returned " + c->who + ": peak " + std::to_string(c->tl.peak) + " bytes (target " +
                               std::to_string(target) + "), " + std::to_string(detail::recompute_count(c->tl)) +
                               " recomputes, recompute cost " + number_text(detail::recompute_cost_of(p, c->tl)) +
                               (warm_ok && c == &cands.front() ? "" : "; " + warm_summary) + rebuilt);
    };

    auto solved = detail::solve_staged(p, f, target, tl, solver, clock, limit, {max_ops, max_binaries, relative_gap, threads, verbosity}, cands,
                                       "it recomputes values nothing needs", "recomputing each op at most once between two scheduled ops",
                                       ctx.progress, name());
    if (!solved.plan) return fallback(solved.note);
    auto& out = *solved.plan;
    auto& note = solved.note;
    const auto cost = detail::recompute_cost_of(p, out);
    if (const auto* c = best_candidate(); c && c->tl.peak <= target && c->cost < model_cost(out))
      return finish(c->tl, note + "; incumbent costlier than the warm start, returned " + c->who + rebuilt);
    note += "; peak " + std::to_string(tl.peak) + " -> " + std::to_string(out.peak) + " bytes (target " + std::to_string(target) + "), " +
            std::to_string(detail::recompute_count(out)) + " recomputes, recompute cost " + number_text(cost) +
            (f.unit_costs ? " (the graph has no costs: the model counted one unit per recompute)" : "");
    return finish(std::move(out), note + rebuilt);
  }
};

static_assert(timeline_stage<checkmate_ilp>);

}  // namespace memplan::remat
