#pragma once
// remat::recompute_bound_milp -- a lower bound on the recompute cost of every plan that keeps a fixed
// order within a budget, one small 0-1 program per op, solved by a MILP backend (solver/milp.hpp; e.g.
// solver::cbc{}, target memplan::cbc). It is core/recompute_bound.hpp's in-order argument with a
// rebuild's inputs charged all the way down, which that bound does one level deep and only for inputs
// an in-place write destroyed.
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
  double in_order_cost = 0.0;         // core's recompute_bound_in_order (cost is at least this)
  double compute_cost = 0.0;          // one step, each op once at its own cost (1 per op without costs)
  double overhead = 0.0;              // cost / compute_cost
  op_id at_op = no_id;                // where it is attained (no_id: 0)
  std::int32_t ops_above = 0;         // ops whose no-recompute live bytes exceed the budget
  std::int32_t ops_examined = 0;      // of those, programs built and solved (highest live bytes first)
  std::int32_t ops_solved = 0;        // of those, solved to optimality
  [[nodiscard]] bool complete() const noexcept { return ops_examined == ops_above && ops_solved == ops_examined; }
};

namespace detail {

// a + b for non-negative byte counts, held at the int64 maximum (sizes near 2^62 add up past it).
inline std::int64_t milp_bound_add(std::int64_t a, std::int64_t b) {
  return a > std::numeric_limits<std::int64_t>::max() - b ? std::numeric_limits<std::int64_t>::max() : a + b;
}

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
  std::vector<std::vector<tensor_id>> reads(static_cast<std::size_t>(p.num_ops()));
  std::vector<std::int32_t> last_read(static_cast<std::size_t>(p.num_tensors()), -1);
  for (op_id o = 0; o < p.num_ops(); ++o) {
    reads[static_cast<std::size_t>(o)] = detail::required_tensors(p, o);
    for (auto t : reads[static_cast<std::size_t>(o)])
      last_read[static_cast<std::size_t>(t)] = std::max(last_read[static_cast<std::size_t>(t)], pos[static_cast<std::size_t>(o)]);
  }
  // The ops to examine: live bytes above the budget without recomputation, highest first.
  const auto live = make_timeline(p, order).live;
  std::vector<std::int32_t> ticks;
  for (std::int32_t i = 0; i < n && static_cast<std::size_t>(i) < live.size(); ++i)
    if (live[static_cast<std::size_t>(i)] > budget) ticks.push_back(i);
  std::stable_sort(ticks.begin(), ticks.end(), [&](std::int32_t a, std::int32_t b) { return live[static_cast<std::size_t>(a)] > live[static_cast<std::size_t>(b)]; });
  out.ops_above = static_cast<std::int32_t>(ticks.size());
  const auto& core = in_order;
  out.in_order_cost = out.cost = core.cost;
  if (core.cost > 0) out.at_op = core.at_op;
  if (core.at_op != no_id) {
    const auto at = std::find(ticks.begin(), ticks.end(), pos[static_cast<std::size_t>(core.at_op)]);
    if (at != ticks.end()) std::rotate(ticks.begin(), at, at + 1);
  }
  if (opt.max_ops >= 0 && ticks.size() > static_cast<std::size_t>(opt.max_ops)) ticks.resize(static_cast<std::size_t>(opt.max_ops));
  const auto clock = deadline::after(opt.time_limit_s);
  const auto nt = static_cast<std::size_t>(p.num_tensors());
  const auto no = static_cast<std::size_t>(p.num_ops());
  std::vector<std::int32_t> k_of(nt), x_of(no);
  for (const auto vi : ticks) {
    if (clock.expired()) break;
    const auto v = order[static_cast<std::size_t>(vi)];
    // Bytes on the device whatever the plan: resident storages, v's new outputs, v's least workspace.
    std::int64_t fixed = p.resident_bytes();
    std::vector<storage_id> new_out;
    for (auto t : p.outputs(v)) {
      const auto s = p.storage_of(t);
      if (p.inplace_of(t) != no_id || p.resident(s) || std::find(new_out.begin(), new_out.end(), s) != new_out.end()) continue;
      new_out.push_back(s);
      fixed = detail::milp_bound_add(fixed, p.storage_bytes(s));
    }
    fixed = detail::milp_bound_add(fixed, min_workspace(p, v));
    if (fixed >= budget) continue;  // core/recompute_bound.hpp's bounds already say no plan fits here
    const double room = static_cast<double>(budget - fixed);
    solver::model m("recompute_bound_milp");
    std::fill(k_of.begin(), k_of.end(), -1);
    std::fill(x_of.begin(), x_of.end(), -1);
    std::vector<solver::var> ks, xs;
    std::vector<tensor_id> k_tensor;
    std::vector<op_id> x_op, work;
    const auto k = [&](tensor_id t) {
      auto& slot = k_of[static_cast<std::size_t>(t)];
      if (slot < 0) {
        slot = static_cast<std::int32_t>(ks.size());
        ks.push_back(m.add_binary());
        k_tensor.push_back(t);
      }
      return ks[static_cast<std::size_t>(slot)];
    };
    const auto x = [&](op_id o) {
      auto& slot = x_of[static_cast<std::size_t>(o)];
      if (slot < 0) {
        slot = static_cast<std::int32_t>(xs.size());
        xs.push_back(m.add_binary());
        x_op.push_back(o);
        work.push_back(o);
        if (!p.recomputable(o)) m.fix(xs.back(), 0.0);
      }
      return xs[static_cast<std::size_t>(slot)];
    };
    // Bytes that cost nothing and values that need no choice: zero-byte and resident storages.
    const auto free_of_charge = [&](tensor_id t) {
      const auto s = p.storage_of(t);
      return p.resident(s) || p.storage_bytes(s) == 0;
    };
    for (auto t : reads[static_cast<std::size_t>(v)])
      if (!free_of_charge(t)) m.fix(k(t), 1.0);
    // Values produced before v and read after it (or live to the end).
    for (tensor_id t = 0; t < p.num_tensors(); ++t) {
      if (free_of_charge(t)) continue;
      const auto w = p.producer(t);
      const auto s = p.storage_of(t);
      const bool before = w == no_id || pos[static_cast<std::size_t>(w)] < vi;
      if (!before) continue;
      const bool at_end = p.live_to_end(s) && p.storage_tensors(s).back() == t;
      if (!(last_read[static_cast<std::size_t>(t)] > vi || at_end)) continue;
      if (w == no_id) m.fix(k(t), 1.0);  // nothing can bring it back
      else m.add_ge(solver::expr(k(t)) + solver::expr(x(w)), 1.0);
    }
    // Every input of an op that runs again: there at v, or its producer runs again too.
    while (!work.empty()) {
      const auto w = work.back();
      work.pop_back();
      const auto xw = xs[static_cast<std::size_t>(x_of[static_cast<std::size_t>(w)])];
      for (auto u : reads[static_cast<std::size_t>(w)]) {
        if (free_of_charge(u)) continue;
        const auto pu = p.producer(u);
        if (pu == no_id) m.add_ge(solver::expr(k(u)) - solver::expr(xw), 0.0);
        else m.add_ge(solver::expr(k(u)) + solver::expr(x(pu)) - solver::expr(xw), 0.0);
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
      memory += solver::expr(y, static_cast<double>(p.storage_bytes(s)) / room);
    }
    m.add_le(memory, 1.0);
    // Least total cost of the reruns, in percent of a step (a scale the solver's tolerances suit).
    solver::expr objective;
    for (std::size_t i = 0; i < xs.size(); ++i)
      objective += solver::expr(xs[i], 100.0 * tb.op_cost[static_cast<std::size_t>(x_op[i])] / tb.compute_cost);
    m.minimize(objective);
    const double limit = std::max(0.0, std::min(opt.per_op_time_limit_s, clock.seconds_left()));
    const auto sol = backend.solve(m, {.time_limit = limit, .relative_gap = 1e-6});
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
  out.overhead = out.cost / out.compute_cost;
  return out;
}

template <class Backend>
recompute_milp_bound recompute_bound_milp(const problem& p, std::span<const op_id> order, std::int64_t budget, const Backend& backend,
                                          const milp_bound_options& opt = {}) {
  if (auto why = check_topological(p, order)) throw error(errc::invalid_argument, "recompute_bound_milp: " + *why);
  return recompute_bound_milp(p, order, budget, backend, recompute_bound_in_order(p, order, budget), opt);
}

}  // namespace memplan::remat
