#pragma once
// Exact references for checkpointers on small graphs, independent of remat/: over the FIXED order of a
// timeline's compute steps, the minimum total recompute cost of a valid plan whose peak stays within a
// budget, found by Dijkstra over states (position in the order, the version every storage holds or
// none) with recompute cost as the distance. Actions, with verify's rules:
//   * compute the next scheduled op;
//   * recompute an op computed before: recomputable, its inputs (and the bases it writes in place)
//     readable, no output storage holding another version; outputs still on the device are left as
//     they are (a recompute that changes nothing is never taken);
//   * free a storage (not before the first op; never resident or output storages).
// Memory rule: while an op step runs, every storage on the device counts (those it allocates too) plus
// its workspace; every preexisting storage counts at the start. A value that no op can read any more
// (no reader with a data descendant at or after the current position) is freed at once: that never
// costs anything and keeps the state space small.
//
// remat_plans::staged restricts recomputes between two scheduled ops to position order, each op at most
// once (Checkmate's stages); remat_plans::any allows any sequence. Costs are the steps' costs, or one
// unit per recompute when every op of the graph costs 0.
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <memplan/core/problem.hpp>
#include <memplan/core/timeline.hpp>

namespace memplan::testing {

enum class remat_plans { any, staged };

// Joint choice of implementations (the reference for remat::monet_ilp): every op step may run the op's
// own (cost, workspace) or any of its implementations, unpruned; the cost is then that of EVERY op
// step (MONeT eq. 9), computations included. one_impl_per_op: a recompute runs the implementation the
// op's computation chose. may_recompute(pos, i): whether the op at position i may be recomputed
// before the scheduled op at position pos (empty: always).
struct impl_choice {
  bool choose = false;
  bool one_impl_per_op = true;
  std::function<bool(std::int32_t, std::int32_t)> may_recompute;
};

struct remat_reference {
  bool feasible = false;
  double cost = 0.0;         // minimum total recompute cost (model units, see above)
  std::int64_t peak = 0;     // peak of the plan found
  timeline plan;             // the plan found (steps relinked; evidence and records of the input)
  std::int64_t states = 0;   // states settled
  bool complete = true;      // false: max_states reached before the answer
};

namespace detail {

class remat_search {
 public:
  remat_search(const problem& p, const timeline& tl, remat_plans space, impl_choice choice = {}) : p_(p), space_(space), choice_(std::move(choice)) {
    order_ = tl.order();
    n_ = static_cast<std::int32_t>(order_.size());
    pos_.assign(static_cast<std::size_t>(p.num_ops()), -1);
    for (std::int32_t i = 0; i < n_; ++i) pos_[static_cast<std::size_t>(order_[static_cast<std::size_t>(i)])] = i;
    impl_.assign(static_cast<std::size_t>(n_), -1);
    for (const auto& s : tl.steps)
      if (s.kind == step_kind::compute) impl_[static_cast<std::size_t>(pos_[static_cast<std::size_t>(s.id)])] = s.impl;
    bool any_cost = false;
    for (std::int32_t i = 0; i < n_; ++i) any_cost |= step_cost(p, op_step(i, step_kind::recompute)) > 0;
    if (choice_.choose)
      for (op_id o = 0; o < p.num_ops(); ++o) {
        any_cost |= p.cost(o) > 0;
        for (const auto& im : p.implementations(o)) any_cost |= im.cost > 0;
      }
    unit_costs_ = !any_cost;
    // last_need: the latest position among an op and its data descendants (readers of its outputs,
    // in-place writers of them).
    std::vector<std::vector<std::int32_t>> readers(static_cast<std::size_t>(p.num_tensors()));
    for (std::int32_t i = 0; i < n_; ++i) {
      const auto o = order_[static_cast<std::size_t>(i)];
      for (auto t : p.inputs(o)) readers[static_cast<std::size_t>(t)].push_back(i);
      for (auto t : p.outputs(o))
        if (p.inplace_of(t) != no_id) readers[static_cast<std::size_t>(p.inplace_of(t))].push_back(i);
    }
    last_need_.assign(static_cast<std::size_t>(n_), 0);
    for (std::int32_t i = n_ - 1; i >= 0; --i) {
      auto ln = i;
      for (auto t : p.outputs(order_[static_cast<std::size_t>(i)]))
        for (auto r : readers[static_cast<std::size_t>(t)])
          if (r > i) ln = std::max(ln, last_need_[static_cast<std::size_t>(r)]);
      last_need_[static_cast<std::size_t>(i)] = ln;
    }
    // The last position before which the op at position i may still be recomputed (-1: never).
    recompute_until_.assign(static_cast<std::size_t>(n_), -1);
    for (std::int32_t i = 0; i < n_; ++i) {
      if (!p.recomputable(order_[static_cast<std::size_t>(i)])) continue;
      for (std::int32_t t = last_need_[static_cast<std::size_t>(i)]; t > i; --t)
        if (!choice_.may_recompute || choice_.may_recompute(t, i)) {
          recompute_until_[static_cast<std::size_t>(i)] = t;
          break;
        }
    }
    tensor_need_.assign(static_cast<std::size_t>(p.num_tensors()), -1);
    for (tensor_id t = 0; t < p.num_tensors(); ++t)
      for (auto r : readers[static_cast<std::size_t>(t)])
        tensor_need_[static_cast<std::size_t>(t)] = std::max(tensor_need_[static_cast<std::size_t>(t)], last_need_[static_cast<std::size_t>(r)]);
  }

  // Minimum cost within `budget` (metric cost), or minimum peak (metric peak, budget ignored).
  remat_reference solve(std::int64_t budget, bool min_peak, std::int64_t max_states, const timeline& tl) {
    remat_reference res;
    state s0;
    if (choice_.choose && choice_.one_impl_per_op) s0.im.assign(static_cast<std::size_t>(n_), -2);
    s0.held.assign(static_cast<std::size_t>(p_.num_storages()), no_id);
    std::int64_t initial = 0;
    for (storage_id s = 0; s < p_.num_storages(); ++s)
      if (p_.preexisting(s)) {
        s0.held[static_cast<std::size_t>(s)] = p_.storage_root(s);
        initial += p_.storage_bytes(s);
      }
    if (!min_peak && initial > budget) return res;
    nodes_.clear();
    index_.clear();
    using item = std::pair<double, std::int64_t>;  // (distance, node)
    std::priority_queue<item, std::vector<item>, std::greater<>> pq;
    auto push = [&](state st, double dist, double cost, std::int64_t peak, std::int64_t parent, step how) {
      const auto key = st.key();
      auto it = index_.find(key);
      if (it != index_.end()) {
        auto& nd = nodes_[static_cast<std::size_t>(it->second)];
        if (nd.done || nd.dist <= dist) return;
        nd = {std::move(st), dist, cost, peak, parent, how, false};
        pq.emplace(dist, it->second);
        return;
      }
      const auto id = static_cast<std::int64_t>(nodes_.size());
      index_.emplace(key, id);
      nodes_.push_back({std::move(st), dist, cost, peak, parent, how, false});
      pq.emplace(dist, id);
    };
    push(s0, min_peak ? static_cast<double>(initial) : 0.0, 0.0, initial, -1, {});
    while (!pq.empty()) {
      const auto d = pq.top().first;
      const auto id = pq.top().second;
      pq.pop();
      if (nodes_[static_cast<std::size_t>(id)].done || d > nodes_[static_cast<std::size_t>(id)].dist) continue;
      nodes_[static_cast<std::size_t>(id)].done = true;
      ++res.states;
      if (res.states > max_states) {
        res.complete = false;
        return res;
      }
      const auto cur = nodes_[static_cast<std::size_t>(id)];
      if (cur.st.pos == n_) {
        res.feasible = true;
        res.cost = cur.cost;
        res.peak = cur.peak;
        res.plan = rebuild(id, tl);
        return res;
      }
      auto go = [&](state nx, step how, std::int64_t mem, double add) {
        if (!min_peak && mem > budget) return;
        const auto peak = std::max(cur.peak, mem);
        const auto cost = cur.cost + add;
        push(std::move(nx), min_peak ? static_cast<double>(peak) : cost, cost, peak, id, how);
      };
      // compute the next scheduled op (with each implementation when choosing)
      for (auto impl : impls_of(cur.st.pos, -2)) {
        state nx = cur.st;
        auto st = op_step(cur.st.pos, step_kind::compute);
        st.impl = impl;
        if (auto mem = apply(nx, cur.st.pos, false, step_workspace(p_, st))) {
          if (!nx.im.empty()) nx.im[static_cast<std::size_t>(cur.st.pos)] = impl;
          nx.pos = cur.st.pos + 1;
          nx.last = -1;
          drop_dead(nx);
          go(std::move(nx), st, *mem, choice_.choose ? (unit_costs_ ? 1.0 : step_cost(p_, st)) : 0.0);
        }
      }
      // recompute an op computed before
      for (std::int32_t i = space_ == remat_plans::staged ? cur.st.last + 1 : 0; i < cur.st.pos; ++i) {
        if (!p_.recomputable(order_[static_cast<std::size_t>(i)]) || last_need_[static_cast<std::size_t>(i)] < cur.st.pos) continue;
        if (choice_.may_recompute && !choice_.may_recompute(cur.st.pos, i)) continue;
        for (auto impl : impls_of(i, cur.st.im.empty() ? -2 : cur.st.im[static_cast<std::size_t>(i)])) {
          state nx = cur.st;
          auto st = op_step(i, step_kind::recompute);
          st.impl = impl;
          auto mem = apply(nx, i, true, step_workspace(p_, st));
          if (!mem || nx.held == cur.st.held) continue;
          if (space_ == remat_plans::staged) nx.last = i;
          drop_dead(nx);
          go(std::move(nx), st, *mem, unit_costs_ ? 1.0 : step_cost(p_, st));
        }
      }
      // free a storage
      if (cur.st.pos > 0)
        for (storage_id s = 0; s < p_.num_storages(); ++s) {
          if (cur.st.held[static_cast<std::size_t>(s)] == no_id || p_.resident(s) || p_.live_to_end(s)) continue;
          state nx = cur.st;
          nx.held[static_cast<std::size_t>(s)] = no_id;
          go(std::move(nx), step{step_kind::free, p_.storage_root(s)}, 0, 0.0);
        }
    }
    return res;
  }

  [[nodiscard]] bool unit_costs() const noexcept { return unit_costs_; }

 private:
  struct state {
    std::int32_t pos = 0;   // ops computed so far (the next scheduled op is order[pos])
    std::int32_t last = -1; // staged: position of the last recompute since the last compute
    std::vector<tensor_id> held;  // per storage: the version it holds, no_id when none
    std::vector<std::int32_t> im;  // one_impl_per_op: per position, the implementation its computation chose (-2: none / no longer matters)
    [[nodiscard]] std::string key() const {
      std::string k(reinterpret_cast<const char*>(&pos), sizeof pos);
      k.append(reinterpret_cast<const char*>(&last), sizeof last);
      for (auto v : im) k.append(reinterpret_cast<const char*>(&v), sizeof v);
      for (auto h : held) {
        const std::int32_t v = h;
        k.append(reinterpret_cast<const char*>(&v), sizeof v);
      }
      return k;
    }
  };
  struct node {
    state st;
    double dist = 0, cost = 0;
    std::int64_t peak = 0;
    std::int64_t parent = -1;
    step how{};  // the step (plus drop_dead frees) that led here
    bool done = false;
  };

  [[nodiscard]] step op_step(std::int32_t i, step_kind k) const {
    step s{k, order_[static_cast<std::size_t>(i)]};
    s.impl = impl_[static_cast<std::size_t>(i)];
    return s;
  }

  // The implementations a step of the op at position i may run: the order's, or, when choosing, every
  // one (fixed: the one its computation chose, when one_impl_per_op).
  [[nodiscard]] std::vector<std::int32_t> impls_of(std::int32_t i, std::int32_t fixed) const {
    if (!choice_.choose) return {impl_[static_cast<std::size_t>(i)]};
    if (fixed != -2) return {fixed};
    std::vector<std::int32_t> v{-1};
    const auto n = static_cast<std::int32_t>(p_.implementations(order_[static_cast<std::size_t>(i)]).size());
    for (std::int32_t k = 0; k < n; ++k) v.push_back(k);
    return v;
  }

  // Runs the op at position i on the state; the live bytes while it runs, or nullopt when not allowed.
  std::optional<std::int64_t> apply(state& st, std::int32_t i, bool recompute, std::int64_t workspace = 0) const {
    const auto o = order_[static_cast<std::size_t>(i)];
    auto readable = [&](tensor_id t) { return st.held[static_cast<std::size_t>(p_.storage_of(t))] == t; };
    for (auto t : p_.inputs(o))
      if (!readable(t)) return std::nullopt;
    for (auto t : p_.outputs(o)) {
      auto& h = st.held[static_cast<std::size_t>(p_.storage_of(t))];
      if (recompute && h == t) continue;
      if (p_.inplace_of(t) != no_id) {
        if (!readable(p_.inplace_of(t))) return std::nullopt;
      } else if (h != no_id) {
        return std::nullopt;
      }
      h = t;
    }
    std::int64_t live = 0;
    for (storage_id s = 0; s < p_.num_storages(); ++s)
      if (st.held[static_cast<std::size_t>(s)] != no_id) live += p_.storage_bytes(s);
    return live + workspace;
  }

  // Frees every non-fixed storage whose value no op can read any more (after the first op only).
  void drop_dead(state& st) const {
    // An op no longer recomputable here: which implementation it ran no longer matters.
    for (std::size_t i = 0; i < st.im.size(); ++i)
      if (recompute_until_[i] < st.pos) st.im[i] = -2;
    if (st.pos == 0) return;
    for (storage_id s = 0; s < p_.num_storages(); ++s) {
      const auto h = st.held[static_cast<std::size_t>(s)];
      if (h == no_id || p_.resident(s) || p_.live_to_end(s)) continue;
      if (tensor_need_[static_cast<std::size_t>(h)] < st.pos) st.held[static_cast<std::size_t>(s)] = no_id;
    }
  }

  // The steps along the path to `id`, with the frees drop_dead made, relinked into a copy of tl.
  timeline rebuild(std::int64_t id, const timeline& tl) const {
    std::vector<std::int64_t> path;
    for (auto k = id; k >= 0; k = nodes_[static_cast<std::size_t>(k)].parent) path.push_back(k);
    timeline out = tl;
    out.steps.clear();
    for (std::size_t k = path.size() - 1; k-- > 0;) {
      const auto& from = nodes_[static_cast<std::size_t>(path[k + 1])];
      const auto& to = nodes_[static_cast<std::size_t>(path[k])];
      out.steps.push_back(to.how);
      // Storages the step freed explicitly, or drop_dead freed after it.
      state mid = from.st;
      if (runs_op(to.how.kind)) (void)apply(mid, pos_[static_cast<std::size_t>(to.how.id)], to.how.kind == step_kind::recompute);
      else mid.held[static_cast<std::size_t>(p_.storage_of(to.how.id))] = no_id;
      for (storage_id s = 0; s < p_.num_storages(); ++s)
        if (mid.held[static_cast<std::size_t>(s)] != no_id && to.st.held[static_cast<std::size_t>(s)] == no_id)
          out.steps.push_back({step_kind::free, p_.storage_root(s)});
    }
    relink(p_, out);
    return out;
  }

  const problem& p_;
  remat_plans space_;
  impl_choice choice_;
  std::vector<op_id> order_;
  std::int32_t n_ = 0;
  std::vector<std::int32_t> pos_, impl_, last_need_, tensor_need_, recompute_until_;
  bool unit_costs_ = false;
  std::vector<node> nodes_;
  std::unordered_map<std::string, std::int64_t> index_;
};

}  // namespace detail

// The cheapest plan over tl's order whose peak is at most `budget` (feasible == false: none).
inline remat_reference remat_brute_force(const problem& p, const timeline& tl, std::int64_t budget,
                                         remat_plans space = remat_plans::any, std::int64_t max_states = 4'000'000) {
  return detail::remat_search(p, tl, space).solve(budget, false, max_states, tl);
}

// The cheapest plan over tl's order, implementations chosen jointly (remat::monet_ilp's reference).
inline remat_reference remat_brute_force_joint(const problem& p, const timeline& tl, std::int64_t budget, impl_choice choice,
                                               remat_plans space = remat_plans::staged, std::int64_t max_states = 4'000'000) {
  choice.choose = true;
  return detail::remat_search(p, tl, space, std::move(choice)).solve(budget, false, max_states, tl);
}

// The smallest budget any plan over tl's order meets with implementations chosen jointly: every op on
// its least-workspace alternative (memory depends on the choice through workspaces only), recomputes
// as choice.may_recompute allows.
inline remat_reference remat_min_peak_joint(const problem& p, const timeline& tl, impl_choice choice, remat_plans space = remat_plans::staged,
                                            std::int64_t max_states = 4'000'000) {
  timeline lean = tl;
  for (auto& s : lean.steps) {
    if (!runs_op(s.kind)) continue;
    s.impl = -1;
    const auto ims = p.implementations(s.id);
    for (std::size_t k = 0; k < ims.size(); ++k) {
      const auto& cur = s.impl < 0 ? implementation{"", p.cost(s.id), p.workspace(s.id)} : ims[static_cast<std::size_t>(s.impl)];
      if (ims[k].workspace < cur.workspace || (ims[k].workspace == cur.workspace && ims[k].cost < cur.cost)) s.impl = static_cast<std::int32_t>(k);
    }
  }
  choice.choose = false;
  return detail::remat_search(p, lean, space, std::move(choice)).solve(0, true, max_states, lean);
}

// The smallest budget any plan over tl's order meets (unlimited recomputation): the plan of least peak.
inline remat_reference remat_min_peak(const problem& p, const timeline& tl, remat_plans space = remat_plans::any,
                                      std::int64_t max_states = 4'000'000) {
  return detail::remat_search(p, tl, space).solve(0, true, max_states, tl);
}

}  // namespace memplan::testing
