#pragma once
// remat::recompute_bound_milp -- a lower bound on the recompute cost of every plan that keeps a fixed
// order within a budget, one small 0-1 program per op, solved by a MILP backend (solver/milp.hpp; e.g.
// solver::cbc{}, target memplan::cbc). It is core/recompute_bound.hpp's in-order argument with a
// rebuild's inputs charged all the way down, which that bound does one level deep and only for inputs
// an in-place write destroyed. remat::recompute_bound_milp_any_order (at the end) bounds the plans of
// every order: the same program with each op's side of v (before or after it) a variable; and
// remat::recompute_bound_milp_any_variants those of every order and every choice of the graph's
// variants: the same again over core/variants.hpp's relax_variants, with a 0-1 variable per alternative.
//
// The argument, at op v (its computation, the step whose live bytes the budget bounds). Let M be the
// values on the device while v runs and R the ops that run again after v. Then, in every plan:
//   * a value produced before v and read after v (or live to the end) is in M, or its producer is in R
//     (after v it can only come back by running that op again);
//   * every input of an op in R (and the base it writes in place) is in M or its own producer is in R,
//     for the same reason (a preexisting input, which nothing produces, must be in M);
//   * the inputs of v are in M, and the resident bytes, v's new outputs, its least workspace and one
//     version per storage in M fit the budget;
//   * the plan recomputes at least the least costs of the ops in R.
// So the least cost of (M, R) under those constraints (k_t: tensor t in M, x_w: op w in R, y_s:
// storage s holds a tensor of M) is a lower bound, and so is the largest over the ops. The program
// drops what a plan must also do -- when and how often ops rerun, the memory after v -- so it is a
// relaxation of Checkmate's model, but a small one (one op's view): CBC solves it in milliseconds on
// small graphs and on the transformer export, where the whole model finds nothing in minutes; on the
// large CNN exports it stops at its limit with a bound (docs/recompute.md).
//
// Only ops whose live bytes in the order without recomputation exceed the budget can need any. They
// are examined while the time lasts: first the op where core's in-order bound is attained, then the
// others by those live bytes, highest first (on DenseNet-121 at batch 32 and half its peak, the ten
// ops with the most live bytes gave 8.5 %, the op of core's bound 10.6 %). Each program's proven
// bound counts (its optimum when solved; the solver's bound when it stops early); a program the
// solver does not finish with a bound counts 0 (a solver crash, with cbc{.isolate = true}, too). The result is at least core's in-order
// bound, valid for any time limit, and can grow with it (not deterministic under a clock:
// `ops_examined` and `ops_solved` say how far it got).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <memplan/base/deadline.hpp>
#include <memplan/base/error.hpp>
#include <memplan/core/analysis.hpp>
#include <memplan/core/bounds.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/recompute_bound.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/core/variants.hpp>
#include <memplan/remat/engine.hpp>
#include <memplan/solver/milp.hpp>

namespace memplan::remat {

struct milp_bound_options {
  double time_limit_s = 10.0;         // for all the programs together
  double per_op_time_limit_s = 2.0;   // for one program (at most what is left of the whole)
  std::int32_t max_ops = -1;          // examine at most this many ops (< 0: every op above the budget)
};

struct recompute_milp_bound {
  double cost = 0.0;                  // no plan over the order within the budget recomputes less
  double core_cost = 0.0;             // core's bound, recompute_bound_in_order or _any_order (cost is at least this)
  bool any_order = false;             // true: recompute_bound_milp_any_order's, for every order
  bool variants = false;              // true: recompute_bound_milp_any_variants's, for every variant choice too
  double compute_cost = 0.0;          // one step, each op once at its own cost (1 per op without costs)
  double overhead = 0.0;              // cost / compute_cost
  op_id at_op = no_id;                // where it is attained (no_id: 0)
  std::int32_t ops_above = 0;         // ops whose no-recompute live bytes (any order: must-live bytes) exceed the budget
  std::int32_t ops_examined = 0;      // of those, programs built and solved (highest live bytes first)
  std::int32_t ops_solved = 0;        // of those, solved to optimality
  [[nodiscard]] bool complete() const noexcept { return ops_examined == ops_above && ops_solved == ops_examined; }
};

namespace detail {

// a + b for non-negative byte counts, held at the int64 maximum (sizes near 2^62 add up past it).
inline std::int64_t milp_bound_add(std::int64_t a, std::int64_t b) {
  return a > std::numeric_limits<std::int64_t>::max() - b ? std::numeric_limits<std::int64_t>::max() : a + b;
}

// Minimises the least total cost of one op's reruns (x_op[i] for xs[i]), in percent of a step (a
// scale the solver's tolerances suit), and folds the program's proven bound into `out`.
template <class Backend>
void milp_bound_solve(recompute_milp_bound& out, solver::model& m, const std::vector<solver::var>& xs, const std::vector<op_id>& x_op,
                      std::span<const double> op_cost, const memplan::detail::recompute_bound_tables& tb, const Backend& backend, double limit,
                      op_id v) {
  solver::expr objective;
  for (std::size_t i = 0; i < xs.size(); ++i)
    objective += solver::expr(xs[i], 100.0 * op_cost[static_cast<std::size_t>(x_op[i])] / tb.compute_cost);
  m.minimize(objective);
  const auto sol = backend.solve(m, {.time_limit_s = limit, .relative_gap = 1e-6});
  ++out.ops_examined;
  double percent = 0.0;
  if (sol.status == solver::status::optimal) {
    ++out.ops_solved;
    percent = sol.bound == sol.bound ? std::min(sol.bound, sol.objective) : sol.objective;
  } else if ((sol.status == solver::status::feasible || sol.status == solver::status::no_solution) && sol.bound == sol.bound) {
    percent = sol.bound;
  }
  const double cost = std::max(0.0, percent) / 100.0 * tb.compute_cost;
  if (cost > out.cost) {
    out.cost = cost;
    out.at_op = v;
  }
}

// One op's program. before[o]: 1 when o runs before v, 0 when it does not (v, and the ops after it),
// -1 when that depends on the order (then a variable b_o, and the ops before v form a down-set).
// With every before[] fixed (one order) it is the in-order program of the header comment; with b free
// it covers every order whose ops before v are a down-set containing the fixed ones: a value produced
// by a and read by c (or live to the end) crosses v when b_a = 1 and b_c = 0, so k_t + x_a >= b_a - b_c,
// and an op runs again after v only if it ran before (x_w <= b_w).
//
// With `vr` (relax_variants's, p its relaxed problem), an op with variants also reads what its chosen
// alternative reads beyond p's inputs: a 0-1 y per alternative, one chosen, and each such read counts
// where its alternative is chosen (the constraints above, less y - 1 on their right-hand side), after
// its producer (b_a >= b_c + y - 1). An op a choice may remove (vr->may_go) reads nothing, costs nothing
// and holds nothing in p; here it has a 0-1 r_d, 1 when the choice runs it (r_d >= y for each
// alternative reading its outputs, r_d >= r_e for each such op e reading them), and where it runs it has
// its own reads, cost and output bytes (vr->go_*): before v only if r_d (b_d <= r_d), after its inputs'
// producers (b_a >= b_d), and its inputs produced before v cross v when it first runs after v
// (k_u + x_a >= b_a + r_d - b_d - 1).
struct milp_bound_program {
  const problem& p;
  const memplan::detail::recompute_bound_tables& tb;
  const variant_relaxation* vr;
  std::span<const std::vector<std::vector<tensor_id>>> alts;             // per op, per alternative (empty: none)
  std::vector<std::vector<tensor_id>> reads;                            // per op: what it reads (required_tensors)
  std::vector<std::vector<op_id>> readers;                              // per tensor: the ops that read it
  std::vector<std::vector<std::pair<op_id, std::int32_t>>> alt_readers;  // per tensor: (op, alternative) reading it beyond reads
  std::vector<double> cost;                                             // per op: tb's least cost, a may_go op's own
  std::vector<std::int64_t> bytes;                                      // per storage: p's, a may_go op's output's own
  std::vector<std::int32_t> k_of, x_of, b_of, y_of, r_of;               // scratch: variable slots per tensor / op

  milp_bound_program(const problem& pr, const memplan::detail::recompute_bound_tables& t, const variant_relaxation* relaxation = nullptr)
      : p(pr), tb(t), vr(relaxation), cost(t.op_cost) {
    if (vr) alts = vr->alternatives;
    bytes.resize(static_cast<std::size_t>(p.num_storages()));
    for (storage_id s = 0; s < p.num_storages(); ++s) bytes[static_cast<std::size_t>(s)] = p.storage_bytes(s);
    if (vr) {
      for (op_id o = 0; o < p.num_ops(); ++o)
        if (goes(o)) cost[static_cast<std::size_t>(o)] = vr->go_cost[static_cast<std::size_t>(o)];
      for (tensor_id t = 0; t < p.num_tensors(); ++t) {
        auto& by = bytes[static_cast<std::size_t>(p.storage_of(t))];
        by = std::max(by, vr->go_bytes[static_cast<std::size_t>(t)]);
      }
    }
    reads.resize(static_cast<std::size_t>(p.num_ops()));
    readers.resize(static_cast<std::size_t>(p.num_tensors()));
    alt_readers.resize(static_cast<std::size_t>(p.num_tensors()));
    for (op_id o = 0; o < p.num_ops(); ++o) {
      reads[static_cast<std::size_t>(o)] = required_tensors(p, o);
      for (auto u : reads[static_cast<std::size_t>(o)]) readers[static_cast<std::size_t>(u)].push_back(o);
      if (static_cast<std::size_t>(o) < alts.size())
        for (std::size_t j = 0; j < alts[static_cast<std::size_t>(o)].size(); ++j)
          for (auto u : alts[static_cast<std::size_t>(o)][j]) alt_readers[static_cast<std::size_t>(u)].emplace_back(o, static_cast<std::int32_t>(j));
    }
  }
  [[nodiscard]] std::span<const std::vector<tensor_id>> alternatives_of(op_id o) const {
    if (static_cast<std::size_t>(o) >= alts.size()) return {};
    return alts[static_cast<std::size_t>(o)];
  }
  [[nodiscard]] bool goes(op_id o) const { return vr && o != no_id && vr->may_go[static_cast<std::size_t>(o)]; }

  template <class Backend>
  void solve_at(recompute_milp_bound& out, op_id v, std::span<const std::int8_t> before, std::int64_t budget, const Backend& backend,
                double limit) {
    // Bytes on the device whatever the plan: resident storages, v's new outputs, v's least workspace.
    std::int64_t fixed = p.resident_bytes();
    std::vector<storage_id> new_out;
    for (auto t : p.outputs(v)) {
      const auto s = p.storage_of(t);
      if (p.inplace_of(t) != no_id || p.resident(s) || std::find(new_out.begin(), new_out.end(), s) != new_out.end()) continue;
      new_out.push_back(s);
      fixed = milp_bound_add(fixed, bytes[static_cast<std::size_t>(s)]);
    }
    fixed = milp_bound_add(fixed, min_workspace(p, v));
    if (fixed >= budget) return;  // core/recompute_bound.hpp's bounds already say no plan fits here
    const double room = static_cast<double>(budget - fixed);
    solver::model m("recompute_bound_milp");
    k_of.assign(static_cast<std::size_t>(p.num_tensors()), -1);
    x_of.assign(static_cast<std::size_t>(p.num_ops()), -1);
    b_of.assign(static_cast<std::size_t>(p.num_ops()), -1);
    y_of.assign(static_cast<std::size_t>(p.num_ops()), -1);
    r_of.assign(static_cast<std::size_t>(p.num_ops()), -1);
    std::vector<solver::var> ks, xs, bs, ys, rs;
    std::vector<tensor_id> k_tensor;
    std::vector<op_id> x_op, b_op, work, go_work;
    const auto at = [&](op_id o) { return before[static_cast<std::size_t>(o)]; };
    // The variable of an op or tensor i among `vars` (slots[i]: its index there), made on first use,
    // when `made(i)` records it.
    const auto binary = [&](std::vector<std::int32_t>& slots, std::vector<solver::var>& vars, std::int32_t i, const auto& made) {
      auto& slot = slots[static_cast<std::size_t>(i)];
      if (slot < 0) {
        slot = static_cast<std::int32_t>(vars.size());
        vars.push_back(m.add_binary());
        made(i);
      }
      return vars[static_cast<std::size_t>(slot)];
    };
    // b_o as an expression: a constant when the order fixes it.
    const auto b = [&](op_id o) -> solver::expr {
      if (o == no_id) return solver::expr(1.0);  // what nothing produces exists from the start
      if (at(o) >= 0) return solver::expr(static_cast<double>(at(o)));
      return solver::expr(binary(b_of, bs, o, [&](op_id i) { b_op.push_back(i); }));
    };
    const auto k = [&](tensor_id t) { return binary(k_of, ks, t, [&](tensor_id i) { k_tensor.push_back(i); }); };
    // x_o, or nothing (a constant 0) for an op that cannot run again after v.
    const auto x = [&](op_id o) -> solver::expr {
      if (o == no_id || at(o) == 0 || !p.recomputable(o)) return {};
      return solver::expr(binary(x_of, xs, o, [&](op_id i) {
        x_op.push_back(i);
        work.push_back(i);
        if (at(i) < 0) m.add_ge(b(i) - solver::expr(xs.back()), 0.0);  // it ran before v
      }));
    };
    // r_d: the choice runs op d, one a choice may remove (its reads and bounds: go_work, below).
    const auto r = [&](op_id d) { return solver::expr(binary(r_of, rs, d, [&](op_id i) { go_work.push_back(i); })); };
    // y: op c runs its alternative j (the op's alternatives get their variables together, one chosen),
    // which runs the producers of what it reads, before c.
    const auto y = [&](op_id c, std::int32_t j) {
      auto& slot = y_of[static_cast<std::size_t>(c)];
      if (slot < 0) {
        const auto first = static_cast<std::int32_t>(ys.size());
        slot = first;
        solver::expr one;
        for (std::size_t i = 0; i < alternatives_of(c).size(); ++i) {
          ys.push_back(m.add_binary());
          one += solver::expr(ys.back());
        }
        m.add_eq(one, 1.0);
        for (std::size_t i = 0; i < alternatives_of(c).size(); ++i)
          for (auto t : alternatives_of(c)[i]) {
            const auto a = p.producer(t);
            if (a == no_id) continue;
            const solver::expr yi(ys[static_cast<std::size_t>(first) + i]);
            if (goes(a)) m.add_ge(r(a) - yi, 0.0);
            if (at(a) == 1 || (c != v && at(c) == 0)) continue;  // a surely before v, or c surely not
            const auto ba = b(a);
            m.add_ge(ba - (c == v ? solver::expr(1.0) : b(c)) - yi, -1.0);
          }
      }
      return solver::expr(ys[static_cast<std::size_t>(slot + j)]);
    };
    const auto free_of_charge = [&](tensor_id t) {
      const auto s = p.storage_of(t);
      return p.resident(s) || bytes[static_cast<std::size_t>(s)] == 0;
    };
    for (auto t : reads[static_cast<std::size_t>(v)])
      if (!free_of_charge(t)) m.fix(k(t), 1.0);
    for (std::size_t j = 0; j < alternatives_of(v).size(); ++j)
      for (auto t : alternatives_of(v)[j])
        if (!free_of_charge(t)) {
          const auto kt = k(t);
          m.add_ge(solver::expr(kt) - y(v, static_cast<std::int32_t>(j)), 0.0);
        }
    // Values that cross v: on the device at v, or their producer runs again.
    for (tensor_id t = 0; t < p.num_tensors(); ++t) {
      if (free_of_charge(t)) continue;
      const auto a = p.producer(t);
      if (a == v || (a != no_id && at(a) == 0)) continue;  // not produced before v
      const auto s = p.storage_of(t);
      bool after = p.live_to_end(s) && p.storage_tensors(s).back() == t;  // some use is surely after v
      for (auto c : readers[static_cast<std::size_t>(t)]) after |= c != v && at(c) == 0;
      if (after) {
        if (a == no_id || at(a) == 1) {
          const auto kt = k(t);
          if (const auto xa = x(a); xa.terms().empty()) m.fix(kt, 1.0);  // nothing can bring it back
          else m.add_ge(solver::expr(kt) + xa, 1.0);
        } else {
          const auto kt = k(t);
          const auto xa = x(a);
          m.add_ge(solver::expr(kt) + xa - b(a), 0.0);
        }
        continue;
      }
      // (Variables are made in a fixed order, so that the program, and where the solver stops on
      // it, do not depend on the compiler's order of evaluation.)
      for (auto c : readers[static_cast<std::size_t>(t)])
        if (c != v && at(c) < 0) {
          const auto kt = k(t);
          const auto xa = x(a);
          const auto ba = b(a);
          m.add_ge(solver::expr(kt) + xa - ba + b(c), 0.0);
        }
      // Reads of an alternative, where it is chosen (v's own: above).
      for (const auto& [c, j] : alt_readers[static_cast<std::size_t>(t)])
        if (c != v && at(c) != 1) {
          const auto kt = k(t);
          const auto xa = x(a);
          const auto ba = b(a);
          const auto bc = b(c);
          m.add_ge(solver::expr(kt) + xa - ba + bc - y(c, j), -1.0);
        }
    }
    // Every input of an op that runs again: there at v, or its producer runs again too. And each op
    // a choice may remove, where it runs (r_d; the header of this struct).
    while (!work.empty() || !go_work.empty()) {
      if (work.empty()) {
        const auto d = go_work.back();
        go_work.pop_back();
        const auto rd = r(d);
        const auto bd = b(d);
        m.add_ge(rd - bd, 0.0);
        for (auto u : vr->go_reads[static_cast<std::size_t>(d)]) {
          const auto a = p.producer(u);
          if (goes(a)) {
            const auto ra = r(a);
            m.add_ge(ra - rd, 0.0);
          }
          if (a != no_id && at(a) != 1) {
            const auto ba = b(a);
            m.add_ge(ba - bd, 0.0);
          }
          if (free_of_charge(u) || a == v || (a != no_id && at(a) == 0)) continue;  // not produced before v
          const auto ku = k(u);
          const auto xa = x(a);
          const auto ba = b(a);
          m.add_ge(solver::expr(ku) + xa - ba - rd + bd, -1.0);
        }
        continue;
      }
      const auto w = work.back();
      work.pop_back();
      const auto xw = xs[static_cast<std::size_t>(x_of[static_cast<std::size_t>(w)])];
      if (goes(w)) {
        const auto rw = r(w);
        m.add_ge(rw - solver::expr(xw), 0.0);
      }
      for (auto u : goes(w) ? vr->go_reads[static_cast<std::size_t>(w)] : reads[static_cast<std::size_t>(w)])  // (in p a removable op reads nothing)
        if (!free_of_charge(u)) {
          const auto ku = k(u);
          m.add_ge(solver::expr(ku) + x(p.producer(u)) - solver::expr(xw), 0.0);
        }
      for (std::size_t j = 0; j < alternatives_of(w).size(); ++j)
        for (auto u : alternatives_of(w)[j])
          if (!free_of_charge(u)) {
            const auto ku = k(u);
            const auto xu = x(p.producer(u));
            m.add_ge(solver::expr(ku) + xu - solver::expr(xw) - y(w, static_cast<std::int32_t>(j)), -1.0);
          }
    }
    // The ops before v are a down-set: a variable op's predecessors are before v when it is.
    for (std::size_t i = 0; i < b_op.size(); ++i) {  // b() may add variables: the loop reaches them
      const auto o = b_op[i];
      for (auto q : p.preds(o))
        if (at(q) < 0) {
          const auto bq = b(q);
          m.add_ge(bq - solver::expr(bs[i]), 0.0);
        }
    }
    // Memory: one version per storage, each storage's bytes once (as a fraction of the room left).
    std::vector<std::vector<std::int32_t>> versions(static_cast<std::size_t>(p.num_storages()));
    std::vector<storage_id> used;
    for (std::size_t i = 0; i < k_tensor.size(); ++i) {
      const auto s = p.storage_of(k_tensor[i]);
      if (versions[static_cast<std::size_t>(s)].empty()) used.push_back(s);
      versions[static_cast<std::size_t>(s)].push_back(static_cast<std::int32_t>(i));
    }
    solver::expr memory;
    for (auto s : used) {
      const auto& vs = versions[static_cast<std::size_t>(s)];
      if (std::find(new_out.begin(), new_out.end(), s) != new_out.end()) continue;  // counted in `fixed`
      const auto y = m.add_binary();
      solver::expr one;
      for (auto i : vs) {
        m.add_ge(solver::expr(y) - solver::expr(ks[static_cast<std::size_t>(i)]), 0.0);
        one += solver::expr(ks[static_cast<std::size_t>(i)]);
      }
      if (vs.size() > 1) m.add_le(one, 1.0);
      memory += solver::expr(y, static_cast<double>(bytes[static_cast<std::size_t>(s)]) / room);
    }
    m.add_le(memory, 1.0);
    milp_bound_solve(out, m, xs, x_op, cost, tb, backend, limit, v);
  }
};

}  // namespace detail

// With core's in-order bound already computed by the caller (`in_order`: recompute_bound_in_order(p,
// order, budget), e.g. for a report), so that it is not computed twice; the overload below computes it.
template <class Backend>
recompute_milp_bound recompute_bound_milp(const problem& p, std::span<const op_id> order, std::int64_t budget, const Backend& backend,
                                          const recompute_lower_bound& in_order, const milp_bound_options& opt = {}) {
  if (auto why = check_topological(p, order)) throw error(errc::invalid_argument, "recompute_bound_milp: " + *why);
  const memplan::detail::recompute_bound_tables tb(p);
  if (in_order.any_order || in_order.compute_cost != tb.compute_cost)
    throw error(errc::invalid_argument, "recompute_bound_milp: the bound passed in is not recompute_bound_in_order of this problem");
  recompute_milp_bound out;
  out.compute_cost = tb.compute_cost;
  const auto n = static_cast<std::int32_t>(order.size());
  if (n == 0 || !(tb.compute_cost > 0)) return out;
  std::vector<std::int32_t> pos(static_cast<std::size_t>(p.num_ops()));
  for (std::int32_t i = 0; i < n; ++i) pos[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = i;
  // The ops to examine: live bytes above the budget without recomputation, highest first.
  const auto live = make_timeline(p, order).live;
  std::vector<std::int32_t> ticks;
  for (std::int32_t i = 0; i < n && static_cast<std::size_t>(i) < live.size(); ++i)
    if (live[static_cast<std::size_t>(i)] > budget) ticks.push_back(i);
  std::stable_sort(ticks.begin(), ticks.end(), [&](std::int32_t a, std::int32_t b) { return live[static_cast<std::size_t>(a)] > live[static_cast<std::size_t>(b)]; });
  out.ops_above = static_cast<std::int32_t>(ticks.size());
  const auto& core = in_order;
  out.core_cost = out.cost = core.cost;
  if (core.cost > 0) out.at_op = core.at_op;
  if (core.at_op != no_id) {
    const auto at = std::find(ticks.begin(), ticks.end(), pos[static_cast<std::size_t>(core.at_op)]);
    if (at != ticks.end()) std::rotate(ticks.begin(), at, at + 1);
  }
  if (opt.max_ops >= 0 && ticks.size() > static_cast<std::size_t>(opt.max_ops)) ticks.resize(static_cast<std::size_t>(opt.max_ops));
  const auto clock = deadline::after(opt.time_limit_s);
  detail::milp_bound_program prog(p, tb);
  std::vector<std::int8_t> before(static_cast<std::size_t>(p.num_ops()));
  for (const auto vi : ticks) {
    if (clock.expired()) break;
    for (op_id o = 0; o < p.num_ops(); ++o) before[static_cast<std::size_t>(o)] = pos[static_cast<std::size_t>(o)] < vi ? 1 : 0;
    prog.solve_at(out, order[static_cast<std::size_t>(vi)], before, budget, backend, std::max(0.0, std::min(opt.per_op_time_limit_s, clock.seconds_left())));
  }
  out.overhead = out.cost / out.compute_cost;
  return out;
}

template <class Backend>
recompute_milp_bound recompute_bound_milp(const problem& p, std::span<const op_id> order, std::int64_t budget, const Backend& backend,
                                          const milp_bound_options& opt = {}) {
  if (auto why = check_topological(p, order)) throw error(errc::invalid_argument, "recompute_bound_milp: " + *why);
  return recompute_bound_milp(p, order, budget, backend, recompute_bound_in_order(p, order, budget), opt);
}

namespace detail {
// recompute_bound_milp_any_order's work; with `vr`, p is vr->relaxed and the bound covers every variant
// choice too (the ops a choice may remove are not examined: they may not run).
template <class Backend>
recompute_milp_bound milp_bound_any_order(const problem& p, std::int64_t budget, const Backend& backend, const recompute_lower_bound& any_order,
                                          const milp_bound_options& opt, std::int32_t max_ops_for_reachability, const variant_relaxation* vr) {
  const memplan::detail::recompute_bound_tables tb(p);
  recompute_milp_bound out;
  out.any_order = true;
  out.variants = vr != nullptr;
  out.compute_cost = vr ? vr->compute_cost_max : tb.compute_cost;
  out.core_cost = out.cost = any_order.cost;
  if (any_order.cost > 0) out.at_op = any_order.at_op;
  const auto no = static_cast<std::size_t>(p.num_ops());
  if (no == 0 || !(tb.compute_cost > 0)) return out;
  // Bytes at each op in every order: the must-live storages, plus what the op touches itself.
  std::vector<std::int64_t> bytes(no, p.resident_bytes());
  for (op_id v = 0; v < p.num_ops(); ++v) {
    auto& by = bytes[static_cast<std::size_t>(v)];
    for (auto s : p.touched(v))
      if (!p.resident(s)) by = milp_bound_add(by, p.storage_bytes(s));
    by = milp_bound_add(by, min_workspace(p, v));
  }
  const bool reach = memplan::detail::for_each_must_live(p, max_ops_for_reachability, [&](storage_id s, std::size_t base, std::span<const std::uint64_t> mask) {
    memplan::detail::for_each_bit(base, mask, [&](op_id v) { bytes[static_cast<std::size_t>(v)] = milp_bound_add(bytes[static_cast<std::size_t>(v)], p.storage_bytes(s)); });
  });
  if (!reach) {
    out.overhead = out.cost / out.compute_cost;
    return out;
  }
  std::vector<op_id> ops;
  for (op_id v = 0; v < p.num_ops(); ++v)
    if (!vr || !vr->may_go[static_cast<std::size_t>(v)]) ops.push_back(v);
  std::stable_sort(ops.begin(), ops.end(), [&](op_id a, op_id b) { return bytes[static_cast<std::size_t>(a)] > bytes[static_cast<std::size_t>(b)]; });
  out.ops_above = static_cast<std::int32_t>(ops.size());
  if (any_order.at_op != no_id) {
    const auto at = std::find(ops.begin(), ops.end(), any_order.at_op);
    if (at != ops.end()) std::rotate(ops.begin(), at, at + 1);
  }
  if (opt.max_ops >= 0 && ops.size() > static_cast<std::size_t>(opt.max_ops)) ops.resize(static_cast<std::size_t>(opt.max_ops));
  const auto clock = deadline::after(opt.time_limit_s);
  milp_bound_program prog(p, tb, vr);
  std::vector<std::int8_t> before(no);
  std::vector<op_id> stack;
  for (const auto v : ops) {
    if (clock.expired()) break;
    // Ancestors before v (1), v and its descendants not (0), the rest either way (-1).
    std::fill(before.begin(), before.end(), std::int8_t{-1});
    before[static_cast<std::size_t>(v)] = 0;
    for (const int dir : {0, 1}) {
      const std::int8_t mark = dir == 0 ? 1 : 0;
      stack.assign(1, v);
      while (!stack.empty()) {
        const auto o = stack.back();
        stack.pop_back();
        for (auto q : dir == 0 ? p.preds(o) : p.succs(o))
          if (before[static_cast<std::size_t>(q)] < 0) {
            before[static_cast<std::size_t>(q)] = mark;
            stack.push_back(q);
          }
      }
    }
    prog.solve_at(out, v, before, budget, backend, std::max(0.0, std::min(opt.per_op_time_limit_s, clock.seconds_left())));
  }
  out.overhead = out.cost / out.compute_cost;
  return out;
}

}  // namespace detail

// The bound for every order. At op v its ancestors run before v and its descendants after; every
// other op may go either way, so its side is a variable b_o (the ops before v a down-set), and the
// program above holds for every order at once: a value produced by a and read by c crosses v when
// b_a = 1 and b_c = 0 (k_t + x_a >= b_a - b_c), and an op runs again after v only if it ran before
// (x_w <= b_w). Each program's optimum (or proven bound) bounds the plans of every order; so does the
// largest over the ops. Any op may need recomputation in some order, so every op is a candidate
// (`ops_above` counts them all): the op of core's any-order bound first, then by the bytes that every
// order holds at it (core/bounds.hpp's must-live storages and what it touches), highest first. Beyond
// `max_ops_for_reachability` ops (the must-live sets' bitsets) it is core's bound.
template <class Backend>
recompute_milp_bound recompute_bound_milp_any_order(const problem& p, std::int64_t budget, const Backend& backend,
                                                    const recompute_lower_bound& any_order, const milp_bound_options& opt = {},
                                                    std::int32_t max_ops_for_reachability = 30000) {
  if (!any_order.any_order || any_order.compute_cost != memplan::detail::recompute_bound_tables(p).compute_cost)
    throw error(errc::invalid_argument, "recompute_bound_milp_any_order: the bound passed in is not recompute_bound_any_order of this problem");
  return detail::milp_bound_any_order(p, budget, backend, any_order, opt, max_ops_for_reachability, nullptr);
}

template <class Backend>
recompute_milp_bound recompute_bound_milp_any_order(const problem& p, std::int64_t budget, const Backend& backend, const milp_bound_options& opt = {}) {
  return recompute_bound_milp_any_order(p, budget, backend, recompute_bound_any_order(p, budget), opt);
}

// The bound for every order and every variant choice (core/variants.hpp: a plan of p with any of its
// variants taken, apply_variants, or none): the any-order program over relax_variants(p), where an op
// reads what all its alternatives read, and what only its chosen one reads where that one is chosen (a
// 0-1 variable per alternative). Its floor (`core_cost`) is core's any-order bound of the relaxed
// problem; `overhead` divides by the largest compute cost any choice can have (`compute_cost`: each op
// at the most costly of its alternatives). Without variants it is recompute_bound_milp_any_order's
// bound with `variants` set (every op then has one alternative).
template <class Backend>
recompute_milp_bound recompute_bound_milp_any_variants(const problem& p, std::int64_t budget, const Backend& backend, const milp_bound_options& opt = {},
                                                       std::int32_t max_ops_for_reachability = 30000) {
  const auto vr = relax_variants(p);
  return detail::milp_bound_any_order(vr.relaxed, budget, backend, recompute_bound_any_order(vr.relaxed, budget), opt, max_ops_for_reachability, &vr);
}

}  // namespace memplan::remat
