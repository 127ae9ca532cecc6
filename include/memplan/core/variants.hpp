#pragma once
// Variants: implementations that read other tensors than their op does (implementation::inputs) --
// MONeT's implementation-dependent dependencies D^l_k (§3, eq. 5 and 8), e.g. an output-activated
// backward that reads an activation's output instead of a saved copy of its input (Appendix D).
// Every planner treats an op's implementations() as sharing its inputs, so a variant is never chosen
// inside a pipeline; it is taken by rewriting the problem first:
//
//   apply_variants(p, taken)  the problem in which each named op reads its variant's inputs and runs at
//                             the variant's cost and workspace, without the ops that then have no use:
//                             every output an activation or gradient nobody reads, none overwritten in
//                             place or overwriting one; the op recomputable (not random), not an update
//                             and outside the graph's extra edges. Names are kept; ids change.
//   choose_variants(p)        the variants that cost nothing (the rule of implementation_choice::
//                             no_slower, core/implementations.hpp): no slower and no more workspace than
//                             the op's own, and in the given order (a topological one when the given
//                             order does not run) no step holding more bytes and the steps' sum lower.
//                             Greedy in op order, each variant judged against the ones already taken
//                             (all of them first, in one rewrite, when together they pass).
//   choose_variants(p, variant_rule::no_peak_higher)
//                             the same, but a variant may raise steps other than the peak: the given
//                             order's peak does not rise and the steps' sum falls. Such a variant is not
//                             free at every budget (a concatenation read instead of its inputs lives a
//                             few steps longer), so plan_choosing_variants (core/plan_variants.hpp) takes
//                             these only where the plan at the budget is better with them.
//
// A plan of the rewritten problem names its variants (io/plan_json.hpp, "variants"), and reading the
// plan against the original graph takes them again, so `memplan verify GRAPH PLAN` checks it.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/core/analysis.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/problem_builder.hpp>

namespace memplan {

// One variant taken: op `op` runs its variant `implementation` (names, as in the graph).
struct variant_choice {
  std::string op;
  std::string implementation;
  friend bool operator==(const variant_choice&, const variant_choice&) = default;
};

inline bool has_variants(const problem& p) {
  for (op_id o = 0; o < p.num_ops(); ++o)
    if (!p.variants(o).empty()) return true;
  return false;
}

namespace detail {

// Whether `to` is reachable from `from` along precedence edges (`to` runs after `from` in every order).
inline bool reaches(const problem& p, op_id from, op_id to) {
  std::vector<std::uint8_t> seen(static_cast<std::size_t>(p.num_ops()), 0);
  std::vector<op_id> stack{from};
  seen[static_cast<std::size_t>(from)] = 1;
  while (!stack.empty()) {
    const auto v = stack.back();
    stack.pop_back();
    if (v == to) return true;
    for (auto w : p.succs(v))
      if (!seen[static_cast<std::size_t>(w)]) {
        seen[static_cast<std::size_t>(w)] = 1;
        stack.push_back(w);
      }
  }
  return false;
}

// Whether apply_variants removes op d once nothing reads its outputs: recomputable (not random), not
// an update, outside the graph's extra edges (in_edge), with outputs, each an activation or gradient
// that is not overwritten in place (overwritten) nor overwrites one.
inline bool may_go(const problem& p, op_id d, std::span<const std::uint8_t> in_edge, std::span<const std::uint8_t> overwritten) {
  if (in_edge[static_cast<std::size_t>(d)] || !p.recomputable(d) || p.phase(d) == op_phase::update || p.outputs(d).empty()) return false;
  for (auto t : p.outputs(d)) {
    if (overwritten[static_cast<std::size_t>(t)] || p.inplace_of(t) != no_id) return false;
    if (p.kind(t) != tensor_kind::activation && p.kind(t) != tensor_kind::gradient) return false;
  }
  return true;
}

// Per op, 1 when it is an endpoint of one of the graph's extra edges; per tensor, 1 when an in-place
// write overwrites it.
inline std::pair<std::vector<std::uint8_t>, std::vector<std::uint8_t>> edge_ends_and_overwritten(const problem& p) {
  std::vector<std::uint8_t> in_edge(static_cast<std::size_t>(p.num_ops()), 0), overwritten(static_cast<std::size_t>(p.num_tensors()), 0);
  for (tensor_id t = 0; t < p.num_tensors(); ++t)
    if (p.inplace_of(t) != no_id) overwritten[static_cast<std::size_t>(p.inplace_of(t))] = 1;
  for (auto [a, b] : p.extra_edges()) in_edge[static_cast<std::size_t>(a)] = in_edge[static_cast<std::size_t>(b)] = 1;
  return {std::move(in_edge), std::move(overwritten)};
}

}  // namespace detail

// The problem with `taken` applied (see above). The names of the ops no longer needed are appended to
// *removed. Throws errc::invalid_argument for an op or variant the graph does not have, or an op named
// twice; errc::invalid_graph for a variant that reads a tensor computed after its op (named) or any
// other cycle the choice makes.
inline problem apply_variants(const problem& p, std::span<const variant_choice> taken, std::vector<std::string>* removed = nullptr) {
  const auto no = static_cast<std::size_t>(p.num_ops());
  const auto nt = static_cast<std::size_t>(p.num_tensors());
  std::vector<std::int32_t> chosen(no, -1);
  for (const auto& c : taken) {
    const auto o = p.find_op(c.op);
    if (!o) throw error(errc::invalid_argument, "variant '" + c.implementation + "': the graph has no op '" + c.op + "'");
    const auto vs = p.variants(*o);
    std::int32_t k = -1;
    for (std::size_t i = 0; i < vs.size(); ++i)
      if (vs[i].name == c.implementation) k = static_cast<std::int32_t>(i);
    if (k < 0) {
      std::string have;
      for (const auto& v : vs) have += (have.empty() ? "" : ", ") + v.name;
      throw error(errc::invalid_argument, p.describe_op(*o) + " has no variant '" + c.implementation + "'" +
                                              (have.empty() ? " (it has none)" : " (it has: " + have + ")"));
    }
    auto& ch = chosen[static_cast<std::size_t>(*o)];
    if (ch >= 0 && ch != k) throw error(errc::invalid_argument, p.describe_op(*o) + " is given two variants");
    ch = k;
  }
  // Each op's inputs under the choice.
  std::vector<std::vector<tensor_id>> ins(no);
  for (op_id o = 0; o < p.num_ops(); ++o) {
    auto& in = ins[static_cast<std::size_t>(o)];
    const auto k = chosen[static_cast<std::size_t>(o)];
    if (k < 0) {
      in.assign(p.inputs(o).begin(), p.inputs(o).end());
      continue;
    }
    const auto& v = p.variants(o)[static_cast<std::size_t>(k)];
    for (const auto& n : v.inputs) {
      const auto t = *p.find_tensor(n);  // the builder checked every name
      if (std::find(in.begin(), in.end(), t) == in.end()) in.push_back(t);
    }
  }
  // Ops left without a use.
  std::vector<std::int32_t> readers(nt, 0);
  std::vector<std::uint8_t> gone(no, 0);
  for (const auto& in : ins)
    for (auto t : in) ++readers[static_cast<std::size_t>(t)];
  const auto ends = detail::edge_ends_and_overwritten(p);  // (not a structured binding: clang 14 cannot capture one)
  const auto& in_edge = ends.first;
  const auto& overwritten = ends.second;
  auto unused = [&](op_id d) {
    const auto i = static_cast<std::size_t>(d);
    if (gone[i] || chosen[i] >= 0 || !detail::may_go(p, d, in_edge, overwritten)) return false;
    for (auto t : p.outputs(d))
      if (readers[static_cast<std::size_t>(t)] > 0) return false;
    return true;
  };
  std::vector<op_id> work;
  for (op_id o = 0; o < p.num_ops(); ++o)
    if (chosen[static_cast<std::size_t>(o)] >= 0)
      for (auto t : p.inputs(o))
        if (readers[static_cast<std::size_t>(t)] == 0 && p.producer(t) != no_id) work.push_back(p.producer(t));
  while (!work.empty()) {
    const auto d = work.back();
    work.pop_back();
    if (!unused(d)) continue;
    gone[static_cast<std::size_t>(d)] = 1;
    if (removed) removed->push_back(p.op_name(d));
    for (auto t : ins[static_cast<std::size_t>(d)])
      if (--readers[static_cast<std::size_t>(t)] == 0 && p.producer(t) != no_id) work.push_back(p.producer(t));
  }
  // The rewritten problem: the same names, the ops in their order.
  problem_builder b(p.name(), p.options());
  b.set_cost_unit(p.cost_unit());
  std::vector<tensor_id> tmap(nt, no_id);
  for (tensor_id t = 0; t < p.num_tensors(); ++t)
    if (p.producer(t) == no_id || !gone[static_cast<std::size_t>(p.producer(t))])
      tmap[static_cast<std::size_t>(t)] = b.add_tensor(p.tensor_name(t), p.bytes(t), p.kind(t));
  for (tensor_id t = 0; t < p.num_tensors(); ++t)
    if (tmap[static_cast<std::size_t>(t)] != no_id && p.inplace_of(t) != no_id)
      b.set_inplace_of(tmap[static_cast<std::size_t>(t)], tmap[static_cast<std::size_t>(p.inplace_of(t))]);
  std::vector<op_id> omap(no, no_id);
  for (op_id o = 0; o < p.num_ops(); ++o) {
    const auto i = static_cast<std::size_t>(o);
    if (gone[i]) continue;
    std::vector<tensor_id> in, out;
    for (auto t : ins[i]) in.push_back(tmap[static_cast<std::size_t>(t)]);
    for (auto t : p.outputs(o)) out.push_back(tmap[static_cast<std::size_t>(t)]);
    double cost = p.cost(o);
    std::int64_t ws = p.workspace(o);
    std::vector<implementation> impls;
    if (chosen[i] >= 0) {
      // The variant becomes the op's own; the op's implementations and other variants read what it no
      // longer reads, and go.
      const auto& v = p.variants(o)[static_cast<std::size_t>(chosen[i])];
      cost = v.cost;
      ws = v.workspace;
    } else {
      impls.assign(p.implementations(o).begin(), p.implementations(o).end());
      impls.insert(impls.end(), p.variants(o).begin(), p.variants(o).end());
    }
    omap[i] = b.add_op(p.op_name(o), std::move(in), std::move(out), p.op_type(o), p.phase(o), cost, ws, std::move(impls), p.recomputable(o));
  }
  for (auto [a, c] : p.extra_edges()) b.add_edge(omap[static_cast<std::size_t>(a)], omap[static_cast<std::size_t>(c)]);
  problem q;
  try {
    q = b.build();
  } catch (const error& e) {
    // A cycle: name the variant that reads what its op precedes, when one does (one search per
    // variant input, only here, not on every rewrite choose_variants tries).
    for (op_id o = 0; o < p.num_ops(); ++o) {
      const auto k = chosen[static_cast<std::size_t>(o)];
      if (k < 0) continue;
      const auto& v = p.variants(o)[static_cast<std::size_t>(k)];
      for (auto t : ins[static_cast<std::size_t>(o)])
        if (const auto w = p.producer(t); w != no_id && detail::reaches(p, o, w))
          throw error(errc::invalid_graph, p.describe_op(o) + ": variant '" + v.name + "' reads " + p.describe_tensor(t) + ", which " +
                                               p.describe_op(w) + " computes after it");
    }
    throw error(e.code(), std::string("with the chosen variants: ") + e.what());
  }
  q.instrument(p.counters());
  return q;
}

// Which variants choose_variants takes (both: no slower, no more workspace, the steps' sum lower).
enum class variant_rule {
  no_step_higher,  // no step of the given order holds more bytes: free at every budget
  no_peak_higher,  // the given order's peak does not rise
};

// What choose_variants took and what it gave.
struct variant_rewrite {
  problem rewritten;                      // the problem to plan (p itself when nothing was taken)
  std::vector<variant_choice> taken;      // in op order
  std::vector<std::string> removed_ops;   // ops no longer needed
  std::int64_t given_peak_before = 0;     // the order's peak before and after (0 when p has no variants)
  std::int64_t given_peak_after = 0;
  std::vector<std::string> notes;        // limits hit, in words
};

// The variants that cost nothing (see the top of this file). Deterministic.
inline variant_rewrite choose_variants(const problem& p, variant_rule rule = variant_rule::no_step_higher, std::size_t max_tries = 512) {
  variant_rewrite r{p, {}, {}, 0, 0, {}};
  if (!has_variants(p)) return r;
  std::vector<variant_choice> cand;
  for (op_id o = 0; o < p.num_ops(); ++o)
    for (const auto& v : p.variants(o))
      if (v.cost <= p.cost(o) && v.workspace <= p.workspace(o)) {
        cand.push_back({p.op_name(o), v.name});
        break;  // the first that costs nothing
      }
  auto order = given_order(p);
  if (!is_topological(p, order)) order = topological_order(p);
  const auto n = order.size();
  // Live bytes per position of `order` (-1: the op is gone). profile() throws when `order` does not
  // run in q (a variant that reads what is computed later in it).
  auto live_of = [&](const problem& q) {
    std::vector<std::int64_t> at(n, -1);
    std::vector<op_id> qo;
    std::vector<std::size_t> pos;
    for (std::size_t i = 0; i < n; ++i)
      if (auto o = q.find_op(p.op_name(order[i]))) {
        qo.push_back(*o);
        pos.push_back(i);
      }
    const auto m = profile(q, qo);
    for (std::size_t j = 0; j < qo.size(); ++j) at[pos[j]] = m.live[j];
    return at;
  };
  auto sum = [](const std::vector<std::int64_t>& v) {
    std::int64_t s = 0;
    for (auto x : v) s += std::max<std::int64_t>(x, 0);
    return s;
  };
  auto top = [](const std::vector<std::int64_t>& v) {
    std::int64_t m = 0;
    for (auto x : v) m = std::max(m, x);
    return m;
  };
  // No step holds more (no_peak_higher: the highest does not), and the sum is lower.
  auto better = [&](const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& cur) {
    if (rule == variant_rule::no_peak_higher) return top(a) <= top(cur) && sum(a) < sum(cur);
    for (std::size_t i = 0; i < n; ++i)
      if (a[i] >= 0 && (cur[i] < 0 || a[i] > cur[i])) return false;
    return sum(a) < sum(cur);
  };
  auto cur = live_of(p);
  const auto peak = [&](const std::vector<std::int64_t>& v) {
    std::int64_t m = p.resident_bytes();
    for (auto x : v) m = std::max(m, x);
    return m;
  };
  r.given_peak_before = r.given_peak_after = peak(cur);
  if (cand.empty()) return r;
  auto attempt = [&](const std::vector<variant_choice>& trial, std::vector<std::string>& gone) -> std::optional<problem> {
    try {
      auto q = apply_variants(p, trial, &gone);
      auto a = live_of(q);
      if (!better(a, cur)) return std::nullopt;
      cur = std::move(a);
      return q;
    } catch (const error&) {
      return std::nullopt;  // a cycle, or `order` does not run with the variant: not free
    }
  };
  std::vector<std::string> gone;
  if (auto q = attempt(cand, gone)) {
    r.rewritten = std::move(*q);
    r.taken = cand;
    r.removed_ops = std::move(gone);
  } else {
    std::size_t tried = 0;
    for (const auto& c : cand) {
      if (tried++ == max_tries) {
        r.notes.push_back("variants: tried the first " + std::to_string(max_tries) + " of " + std::to_string(cand.size()) +
                          " one by one; the rest keep their op's own");
        break;
      }
      auto trial = r.taken;
      trial.push_back(c);
      gone.clear();
      if (auto q = attempt(trial, gone)) {
        r.rewritten = std::move(*q);
        r.taken = std::move(trial);
        r.removed_ops = gone;
      }
    }
  }
  r.given_peak_after = peak(cur);
  return r;
}


// ---- every variant choice at once (for lower bounds) ----------------------------------------------
// A relaxation of every problem apply_variants can make from p (remat::recompute_bound_milp_any_variants
// bounds them all through it). `relaxed` has p's ids, and:
//  * each op reads only what all its alternatives read (its own inputs and every variant's), at the
//    least cost and workspace among them; alternatives[o][j] lists what alternative j (0: the op's own
//    inputs, then its variants in order) reads beyond that (no entries for an op without variants);
//  * an op that some choice may leave without a reader (may_go[o]: detail::may_go, with its outputs read
//    by no op's shared inputs, and so on down) reads nothing, costs nothing and its outputs take 0 bytes.
// So a plan of any rewrite, read against `relaxed` (each op its rewrite's alternative, the ops the
// rewrite removed run first: they need nothing and hold nothing), is a plan of it in every order the
// rewrite runs, recomputing no more (by relaxed's costs) and holding no more bytes at any step; a bound
// that also asks each op's chosen alternative's reads to be there is still a bound for every choice.
// What such an op has where a choice keeps it (its reads, cost, output bytes) is kept beside (go_*):
// the 0-1 bound charges them where its variables say the op runs.
struct variant_relaxation {
  problem relaxed;
  std::vector<std::vector<std::vector<tensor_id>>> alternatives;  // per op, per alternative: reads beyond relaxed's
  std::vector<std::uint8_t> may_go;                               // per op
  std::vector<std::vector<tensor_id>> go_reads;  // per op: for a may_go op, what it reads in every choice that runs it
  std::vector<double> go_cost;                   // per op: for a may_go op, its least cost on relaxed's scale (1 when
                                                 // relaxed has no costs and p none either; 0 when only p has them)
  std::vector<std::int64_t> go_bytes;            // per tensor: for an output of a may_go op, its bytes in p (else 0)
  double compute_cost_max = 0.0;  // sum over ops of the largest cost among its own and its variants' (1 per
                                  // op when the graph has no costs): at least every rewrite's compute cost
                                  // (a graph without costs counts reruns; variants with costs there would
                                  // make rewrites that count costs, which no count of reruns bounds)
};

inline variant_relaxation relax_variants(const problem& p) {
  const auto no = static_cast<std::size_t>(p.num_ops());
  const auto nt = static_cast<std::size_t>(p.num_tensors());
  variant_relaxation r;
  r.alternatives.resize(no);
  r.may_go.assign(no, 0);
  r.go_reads.resize(no);
  r.go_cost.assign(no, 0.0);
  r.go_bytes.assign(nt, 0);
  std::vector<std::vector<tensor_id>> shared(no);
  bool costed = false;
  for (op_id o = 0; o < p.num_ops() && !costed; ++o) costed = p.cost(o) > 0;
  for (op_id o = 0; o < p.num_ops(); ++o) {
    const auto i = static_cast<std::size_t>(o);
    shared[i].assign(p.inputs(o).begin(), p.inputs(o).end());
    double most = p.cost(o);
    if (!p.variants(o).empty()) {
      std::vector<std::vector<tensor_id>> alt{shared[i]};
      for (const auto& v : p.variants(o)) {
        most = std::max(most, v.cost);
        auto& in = alt.emplace_back();
        for (const auto& n : v.inputs) in.push_back(*p.find_tensor(n));  // the builder checked every name
      }
      std::vector<tensor_id> common;
      for (auto t : alt[0]) {
        const bool base = std::any_of(p.outputs(o).begin(), p.outputs(o).end(), [&](tensor_id u) { return p.inplace_of(u) == t; });
        if (base || std::all_of(alt.begin(), alt.end(), [&](const auto& a) { return std::find(a.begin(), a.end(), t) != a.end(); }))
          common.push_back(t);  // (an in-place write's base stays an input: every alternative overwrites it)
      }
      for (auto& a : alt) std::erase_if(a, [&](tensor_id t) { return std::find(common.begin(), common.end(), t) != common.end(); });
      shared[i] = std::move(common);
      r.alternatives[i] = std::move(alt);
    }
    r.compute_cost_max += costed ? most : 1.0;
  }
  // The ops some choice may remove: producers of what only some alternatives read, when no op's shared
  // inputs read their outputs, then the same for what those read (as apply_variants removes them).
  std::vector<std::int32_t> readers(nt, 0);
  for (const auto& in : shared)
    for (auto t : in) ++readers[static_cast<std::size_t>(t)];
  const auto ends = detail::edge_ends_and_overwritten(p);
  std::vector<op_id> work;
  for (const auto& alt : r.alternatives)
    for (const auto& a : alt)
      for (auto t : a)
        if (p.producer(t) != no_id) work.push_back(p.producer(t));
  while (!work.empty()) {
    const auto d = work.back();
    work.pop_back();
    const auto i = static_cast<std::size_t>(d);
    if (r.may_go[i] || !detail::may_go(p, d, ends.first, ends.second)) continue;
    if (std::any_of(p.outputs(d).begin(), p.outputs(d).end(), [&](tensor_id t) { return readers[static_cast<std::size_t>(t)] > 0; })) continue;
    r.may_go[i] = 1;
    for (auto t : shared[i])
      if (--readers[static_cast<std::size_t>(t)] == 0 && p.producer(t) != no_id) work.push_back(p.producer(t));
    r.go_reads[i] = std::move(shared[i]);
    shared[i].clear();
    r.alternatives[i].clear();
  }
  std::vector<std::int64_t> bytes(nt);
  for (tensor_id t = 0; t < p.num_tensors(); ++t) {
    const auto a = p.producer(t);
    const bool gone = a != no_id && r.may_go[static_cast<std::size_t>(a)];
    bytes[static_cast<std::size_t>(t)] = gone ? 0 : p.bytes(t);
    if (gone) r.go_bytes[static_cast<std::size_t>(t)] = p.bytes(t);
  }
  r.relaxed = with_ops(
      p,
      [&](const problem& g, op_id o, op_fields& f) {
        const auto i = static_cast<std::size_t>(o);
        f.inputs = shared[i];
        for (const auto& v : g.variants(o)) {
          f.cost = std::min(f.cost, v.cost);
          f.workspace = std::min(f.workspace, v.workspace);
        }
        if (r.may_go[i]) {
          f.cost = 0.0;
          f.workspace = 0;
          for (auto& im : f.impls) im.cost = 0.0, im.workspace = 0;
        }
      },
      {}, bytes);
  bool relaxed_costed = false;
  for (op_id o = 0; o < r.relaxed.num_ops() && !relaxed_costed; ++o) relaxed_costed = r.relaxed.cost(o) > 0;
  for (op_id o = 0; o < p.num_ops(); ++o) {
    if (!r.may_go[static_cast<std::size_t>(o)]) continue;
    double least = p.cost(o);
    for (const auto& im : p.implementations(o)) least = std::min(least, im.cost);
    for (const auto& v : p.variants(o)) least = std::min(least, v.cost);
    r.go_cost[static_cast<std::size_t>(o)] = relaxed_costed ? least : costed ? 0.0 : 1.0;
  }
  return r;
}

}  // namespace memplan
