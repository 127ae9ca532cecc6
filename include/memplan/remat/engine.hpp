#pragma once
// The rematerialization engine every checkpointer of remat/ drives: it replays the fixed order of a
// timeline's compute steps and writes a new timeline in which values may be freed early and
// recomputed just in time. A policy steers it with three decisions:
//
//   drop(s, pos)        after the scheduled use of storage s at position pos: free it now although it
//                       is used again later (Chen's dropped results, §4.1); it is recomputed before
//                       its next use;
//   keep(s, pos, need)  after a recomputation burst before the op at position pos, started because
//                       storage `need` was missing: keep storage s, recomputed in that burst, until
//                       its next use (true), or free it now (false); a policy may also define
//                       begin_burst(need, pos), called before the burst runs;
//   evict               when `target` is set: before an op or recompute would push the live bytes above
//                       it, free the live storage with the lowest DTR-style score
//                       recompute cost / (bytes x steps to its next use) (Kirisame et al., DTR),
//                       knowing the exact next use since the order is fixed.
//
// Recomputation is just in time and recursive: before an op runs, every tensor it reads (and every
// in-place base it writes) must be on the device holding that value; a missing one is recomputed
// from its producer, whose missing inputs are recomputed first (in topological order, each op once
// per burst, in the order's own relative order). A value is only dropped or evicted when it can be
// recomputed later: `recreatable(t, pos)` is the static set of positions (a few intervals) where t
// can be recreated from what is on the device (its producer is recomputable, what it reads is there
// or recreatable, and no in-place write holds that storage then). An in-place write closes the window
// of the value it overwrites, and the window opens again once every version of that storage has been
// used for the last time: the storage is free then, so the old value can be rebuilt into it. That is
// what lets a block `y = clone(x); relu_(x)` drop y (ReLU/SiLU backward reads the pre-activation
// clone) and rebuild it in the backward pass, instead of keeping it from the forward pass on. And
// wherever a tensor is its storage's current version but not on the device, that storage is free, so
// the tensor can be rebuilt into it by replaying its in-place chain (batch norm, then add_, then
// relu_: a ResNet block's output), even though the older versions cannot be rebuilt there on their own.
//
// Cost: O(steps + uses) for the replay, plus the bursts (each op at most once per burst) and, with a
// target, O(live) per eviction.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <memplan/base/deadline.hpp>
#include <memplan/base/error.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/timeline.hpp>

namespace memplan::remat {

// What the engine reports beside the timeline.
struct engine_stats {
  std::int64_t recomputed_ops = 0;
  double recompute_cost = 0.0;
  std::int64_t drops = 0, evictions = 0, bursts = 0;
  bool target_missed = false;  // some op could not be brought under the target
  bool aborted = false;        // the deadline passed during the replay: it returned no timeline
};

// The default policy: drop nothing, keep what a burst recomputed until its next use.
struct keep_all {
  [[nodiscard]] bool drop(storage_id, std::int32_t) const { return false; }
  [[nodiscard]] bool keep(storage_id, std::int32_t, storage_id) const { return true; }
};

// The cost an engine charges for an op: its cost, or one unit when the graph gives none.
inline double op_cost_or_unit(const problem& p, op_id o) {
  double any = 0;
  for (op_id q = 0; q < p.num_ops() && any == 0; ++q) any = p.cost(q);
  return any > 0 ? p.cost(o) : 1.0;
}

namespace detail {

inline constexpr std::int32_t never = std::numeric_limits<std::int32_t>::max();

// Tensors op o reads or overwrites in place: its inputs and the bases of its in-place outputs (each
// once). What must be on the device, holding that version, when o runs or runs again.
inline std::vector<tensor_id> required_tensors(const problem& p, op_id o) {
  std::vector<tensor_id> r(p.inputs(o).begin(), p.inputs(o).end());
  for (auto t : p.outputs(o))
    if (p.inplace_of(t) != no_id && std::find(r.begin(), r.end(), p.inplace_of(t)) == r.end()) r.push_back(p.inplace_of(t));
  return r;
}

class engine {
 public:
  engine(const problem& p, const timeline& in) : p_(p) {
    order_ = in.order();
    const auto n = static_cast<std::int32_t>(order_.size());
    const auto ns = static_cast<std::size_t>(p.num_storages());
    pos_.assign(static_cast<std::size_t>(p.num_ops()), -1);
    for (std::int32_t i = 0; i < n; ++i) pos_[static_cast<std::size_t>(order_[static_cast<std::size_t>(i)])] = i;
    // Uses of each storage in positions (scheduled reads and writes), sorted.
    uses_.assign(ns, {});
    for (std::int32_t i = 0; i < n; ++i)
      for (auto s : p.touched(order_[static_cast<std::size_t>(i)])) uses_[static_cast<std::size_t>(s)].push_back(i);
    next_.assign(ns, 0);
    // Implementations: each op runs (and is recomputed) with the one its compute step chose in the
    // incoming timeline (MONeT §4's delta); its cost and workspace follow.
    impl_.assign(static_cast<std::size_t>(p.num_ops()), -1);
    for (const auto& s : in.steps)
      if (s.kind == step_kind::compute && s.id >= 0 && s.id < p.num_ops()) impl_[static_cast<std::size_t>(s.id)] = s.impl;
    ws_.assign(static_cast<std::size_t>(p.num_ops()), 0);
    for (op_id o = 0; o < p.num_ops(); ++o) ws_[static_cast<std::size_t>(o)] = step_workspace(p, op_step(o));
    // Costs: one unit per op when the graph gives none.
    bool any_cost = false;
    for (op_id o = 0; o < p.num_ops() && !any_cost; ++o) any_cost = step_cost(p, op_step(o)) > 0;
    cost_.assign(static_cast<std::size_t>(p.num_ops()), 1.0);
    if (any_cost)
      for (op_id o = 0; o < p.num_ops(); ++o) cost_[static_cast<std::size_t>(o)] = step_cost(p, op_step(o));
    // What each op reads (required_tensors), once: the replay asks for it at every step and in every
    // burst, and a vector a call was 3-5 % of `memplan plan --budget`'s time in allocations.
    req_at_.assign(static_cast<std::size_t>(p.num_ops()) + 1, 0);
    req_.clear();
    for (op_id o = 0; o < p.num_ops(); ++o) {
      const auto r = required_tensors(p, o);
      req_.insert(req_.end(), r.begin(), r.end());
      req_at_[static_cast<std::size_t>(o) + 1] = req_.size();
    }
    compute_until();
  }

  [[nodiscard]] const std::vector<op_id>& order() const noexcept { return order_; }
  [[nodiscard]] std::int32_t position(op_id o) const { return pos_[static_cast<std::size_t>(o)]; }
  [[nodiscard]] const std::vector<std::int32_t>& uses(storage_id s) const { return uses_[static_cast<std::size_t>(s)]; }
  [[nodiscard]] double cost(op_id o) const { return cost_[static_cast<std::size_t>(o)]; }
  // The implementation op o runs with (its compute step's in the incoming timeline), its workspace.
  [[nodiscard]] std::int32_t impl(op_id o) const { return impl_[static_cast<std::size_t>(o)]; }
  [[nodiscard]] std::int64_t workspace(op_id o) const { return ws_[static_cast<std::size_t>(o)]; }
  [[nodiscard]] step op_step(op_id o, step_kind k = step_kind::compute) const {
    step st{k, o};
    st.impl = impl_.empty() ? -1 : impl_[static_cast<std::size_t>(o)];
    return st;
  }
  // Can tensor t be recomputed at position `pos` when it is not on the device?
  [[nodiscard]] bool recreatable(tensor_id t, std::int32_t pos) const { return window_at(recreate_[static_cast<std::size_t>(t)], pos) != nullptr; }
  // Is t overwritten in place by a later version of its storage?
  [[nodiscard]] bool overwritten_in_place(tensor_id t) const { return overwritten_[static_cast<std::size_t>(t)] != never; }
  // The version of storage s it holds right after the op at position `pos` ran (in the order).
  [[nodiscard]] tensor_id held_at(storage_id s, std::int32_t pos) const {
    tensor_id h = p_.storage_root(s);
    std::int32_t at = -1;
    for (auto t : p_.storage_tensors(s)) {
      const auto q = p_.producer(t);
      const auto qp = q == no_id ? -1 : pos_[static_cast<std::size_t>(q)];
      if (qp <= pos && qp >= at) { h = t; at = qp; }
    }
    return h;
  }
  // What bringing t back costs: its producer and, for an in-place version, the chain of writes below
  // it (batch norm, then add_, then relu_), plus the producers of the inputs `gone(r)` says are
  // missing then (an overwritten pre-activation a clone reads).
  template <class Gone>
  [[nodiscard]] double rebuild_cost(tensor_id t, Gone&& gone) const {
    double c = 0;
    for (tensor_id v = t; v != no_id && p_.producer(v) != no_id; v = p_.inplace_of(v)) {
      const auto q = p_.producer(v);
      c += cost(q);
      for (auto r : p_.inputs(q))
        if (r != p_.inplace_of(v) && p_.producer(r) != no_id && gone(r)) c += cost(p_.producer(r));
    }
    return c;
  }
  // Can it be recomputed at all (at some position)?
  [[nodiscard]] bool ever_recreatable(tensor_id t) const { return !recreate_[static_cast<std::size_t>(t)].empty(); }
  // May storage s be freed now (at position `now`) and recreated for its next use? Yes when the value
  // it holds can be recreated at every position up to that use; or, across a closed window (an
  // in-place write holds the storage in between), when no op that reads the value runs before the
  // window opens again: a burst only replays ops placed before its position, so none can need the
  // value while the window is closed.
  [[nodiscard]] bool droppable(storage_id s, std::int32_t next_use) const {
    if (p_.resident(s) || p_.live_to_end(s) || p_.preexisting(s) || p_.storage_bytes(s) == 0) return false;
    const auto h = holds_.empty() ? p_.storage_root(s) : tensor_id(holds_[static_cast<std::size_t>(s)]);
    const auto* w = window_at(recreate_[static_cast<std::size_t>(h)], next_use);
    if (!w) return false;
    return w->first <= now_ || first_reader_[static_cast<std::size_t>(h)] >= w->first;
  }
  // Live state, for policies that look at it.
  [[nodiscard]] bool on_device(storage_id s) const { return on_[static_cast<std::size_t>(s)] != 0; }
  [[nodiscard]] std::int64_t live_bytes() const noexcept { return live_; }
  [[nodiscard]] std::int32_t next_use(storage_id s, std::int32_t after) const {
    const auto& u = uses_[static_cast<std::size_t>(s)];
    auto it = std::upper_bound(u.begin(), u.end(), after);
    return it == u.end() ? never : *it;
  }

  // Replays the order under `pol`, evicting above `target` when `evict` is set. Eviction is the
  // expensive part (O(live) per decision), and so is what it leads to (values evicted early come back
  // in bursts, each rebuilding what it needs): with `until`, the replay stops when that deadline passes
  // and returns an empty timeline (stats' aborted), which callers drop. (Before, it went on without
  // evicting: on a 3,197-op random training graph the rest of one such replay -- 66,949 recomputes --
  // took checkmate_ilp's warm start 16 % past a 0.2 s limit.)
  template <class Policy>
  timeline run(Policy& pol, std::int64_t target, bool evict, engine_stats* stats = nullptr, const deadline* until = nullptr) {
    init_state();
    target_ = target;
    evict_ = evict;
    until_ = until;
    st_ = {};
    const auto n = static_cast<std::int32_t>(order_.size());
    for (std::int32_t i = 0; i < n; ++i) {
      if (until_ && until_->expired()) {
        st_.aborted = st_.target_missed = true;
        if (stats) *stats = st_;
        steps_.clear();
        return timeline{};
      }
      now_ = i;
      const auto o = order_[static_cast<std::size_t>(i)];
      // Pins: what o reads or writes (counted, so that bursts can add and remove their own).
      for (auto s : pinned_) --pin_[static_cast<std::size_t>(s)];
      pinned_.clear();
      for (auto t : required(o)) pinned_.push_back(p_.storage_of(t));
      for (auto t : p_.outputs(o)) pinned_.push_back(p_.storage_of(t));
      for (auto s : pinned_) ++pin_[static_cast<std::size_t>(s)];
      // 1. Everything o reads is on the device (a burst of recomputes when not).
      std::vector<storage_id> burst_made;
      storage_id need = no_id;
      for (auto t : required(o))
        if (!readable(t)) {
          if (need == no_id) {
            need = p_.storage_of(t);
            if constexpr (requires { pol.begin_burst(need, i); }) pol.begin_burst(need, i);
          }
          burst(t, burst_made, pol, need);
        }
      // After the burst: keep what the policy keeps (and what o needs), free the rest.
      for (auto s : burst_made) {
        if (!on_device(s)) continue;
        if (pinned(s)) continue;
        const auto nu = next_use(s, i - 1);
        if (nu == never || (droppable(s, nu) && !pol.keep(s, i, need))) free(s);
      }
      // 2. Room for o's new outputs and workspace.
      make_room(new_bytes(o) + workspace(o));
      // 3. Run it.
      emit_op(step_kind::compute, o);
      // 4. Frees: storages o touched whose last use this was, and the policy's drops.
      for (auto s : p_.touched(o)) {
        const auto su = static_cast<std::size_t>(s);
        while (next_[su] < uses_[su].size() && uses_[su][next_[su]] <= i) ++next_[su];
        if (!on_device(s)) continue;
        const auto nu = next_[su] < uses_[su].size() ? uses_[su][next_[su]] : never;
        if (nu == never) {
          if (!p_.resident(s) && !p_.live_to_end(s)) free(s);
        } else if (droppable(s, nu) && pol.drop(s, i)) {
          free(s);
          ++st_.drops;
        }
      }
      // Preexisting storages nobody uses live while the first op runs, and only then.
      if (i == 0)
        for (storage_id s = 0; s < p_.num_storages(); ++s)
          if (p_.live_at_start_only(s)) free(s);
    }
    // Outputs of recomputes that nobody needs were freed already; preexisting inputs freed after their last use.
    timeline out;
    steps_hint_ = steps_.size();
    out.steps = std::move(steps_);
    out.stages = {};
    relink(p_, out);
    if (stats) *stats = st_;
    return out;
  }

  // Tensors an op reads or overwrites in place: its inputs and the bases of its in-place outputs.
  [[nodiscard]] std::span<const tensor_id> required(op_id o) const {
    const auto u = static_cast<std::size_t>(o);
    return {req_.data() + req_at_[u], req_at_[u + 1] - req_at_[u]};
  }

 private:
  // ---- static: where each tensor can be recreated, and read ----
  // Position sets are a few sorted, disjoint half-open intervals [begin, end).
  using windows = std::vector<std::pair<std::int32_t, std::int32_t>>;
  static const std::pair<std::int32_t, std::int32_t>* window_at(const windows& w, std::int32_t pos) {
    for (const auto& x : w)
      if (x.first <= pos && pos < x.second) return &x;
    return nullptr;
  }
  static windows intersect(const windows& a, const windows& b) {
    windows r;
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
      const auto lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
      if (lo < hi) r.push_back({lo, hi});
      (a[i].second < b[j].second ? i : j)++;
    }
    return r;
  }
  static windows unite(const windows& a, const windows& b) {
    windows all(a);
    all.insert(all.end(), b.begin(), b.end());
    std::sort(all.begin(), all.end());
    windows r;
    for (const auto& x : all) {
      if (x.first >= x.second) continue;
      if (!r.empty() && x.first <= r.back().second) r.back().second = std::max(r.back().second, x.second);
      else r.push_back(x);
    }
    return r;
  }
  // recreate_[t]: where t can be recomputed from scratch (its producer recomputable, everything that
  //   producer needs readable or recreatable there, no in-place write holding an output's or a read
  //   value's storage then); empty for tensors without a recomputable producer.
  // avail_[t]: where t is either on the device holding its value or recreatable: a storage that is
  //   never dropped stays until its last use, and one that is dropped or evicted is only dropped while
  //   it can be recreated for its next use (droppable).
  // first_reader_[t]: the earliest position of an op that reads t (or overwrites it in place);
  // overwritten_[t]: the position of the in-place write that overwrites t (never: none).
  void compute_until() {
    const auto nt = static_cast<std::size_t>(p_.num_tensors());
    const auto n = static_cast<std::int32_t>(order_.size());
    overwritten_.assign(nt, never);  // where t's in-place successor is written
    auto& overwritten = overwritten_;
    for (tensor_id t = 0; t < p_.num_tensors(); ++t) {
      const auto base = p_.inplace_of(t);
      if (base != no_id && p_.producer(t) != no_id)
        overwritten[static_cast<std::size_t>(base)] = pos_[static_cast<std::size_t>(p_.producer(t))];
    }
    auto last_use = [&](tensor_id t) {
      const auto s = p_.storage_of(t);
      if (p_.resident(s) || p_.live_to_end(s)) return n;
      const auto& u = uses_[static_cast<std::size_t>(s)];
      return u.empty() ? 0 : u.back();
    };
    auto below = [](std::int32_t e) { return e > 0 ? windows{{0, e}} : windows{}; };
    // Where t's storage does not hold a later version: before the in-place write, and after the
    // storage's last use (every version's), when nothing holds it.
    auto own_storage = [&](tensor_id t) {
      const auto ov = overwritten[static_cast<std::size_t>(t)];
      if (ov == never) return windows{{0, never}};
      const auto s = p_.storage_of(t);
      if (p_.resident(s) || p_.live_to_end(s) || p_.preexisting(s)) return below(ov);
      return unite(below(ov), windows{{last_use(t) + 1, never}});
    };
    recreate_.assign(nt, {});
    fresh_.assign(nt, {});
    avail_.assign(nt, {});
    first_reader_.assign(nt, never);
    auto set_avail = [&](tensor_id t) {
      const auto tu = static_cast<std::size_t>(t);
      avail_[tu] = unite(recreate_[tu], below(std::min(overwritten[tu], last_use(t) + 1)));
    };
    for (tensor_id t = 0; t < p_.num_tensors(); ++t)
      if (p_.producer(t) == no_id) set_avail(t);
    // current(t): where t is the version its storage holds in the order (from its producer to the
    // in-place write that overwrites it, which reads it as its base). When t is not on the device
    // there, its storage is free, so t can be rebuilt into it from scratch -- an in-place chain
    // (batch norm, then add_, then relu_) replayed into the free storage -- even where an older
    // version of the storage could not be.
    auto current = [&](tensor_id t) {
      const auto s = p_.storage_of(t);
      if (p_.resident(s) || p_.live_to_end(s) || p_.preexisting(s) || p_.producer(t) == no_id) return windows{};
      const auto ov = overwritten[static_cast<std::size_t>(t)];
      return windows{{pos_[static_cast<std::size_t>(p_.producer(t))] + 1, ov == never ? never : ov + 1}};
    };
    for (auto q : order_) {
      const auto qp = pos_[static_cast<std::size_t>(q)];
      // ins: where every input that is not an in-place base holds its value or can be recreated.
      windows ins = p_.recomputable(q) ? windows{{0, never}} : windows{};
      std::vector<tensor_id> bases;
      for (auto r : required(q)) {
        auto& fr = first_reader_[static_cast<std::size_t>(r)];
        fr = std::min(fr, qp);
        bool is_base = false;
        for (auto t : p_.outputs(q)) is_base |= p_.inplace_of(t) == r;
        if (is_base) {
          bases.push_back(r);
          continue;
        }
        // Any other input must still hold its value (its storage cannot hold two versions).
        const auto ru = static_cast<std::size_t>(r);
        if (!ins.empty()) ins = intersect(ins, intersect(avail_[ru], own_storage(r)));
      }
      // An in-place base may be recreated into its storage and overwritten at once.
      windows with_bases = ins;
      for (auto b : bases) with_bases = intersect(with_bases, avail_[static_cast<std::size_t>(b)]);
      // Where the new (not in-place) outputs other than x hold no later version: a recompute leaves a
      // live output as it is, so it must not meet one.
      auto others_own = [&](tensor_id x) {
        windows w{{0, never}};
        for (auto y : p_.outputs(q))
          if (y != x && p_.inplace_of(y) == no_id) w = intersect(w, own_storage(y));
        return w;
      };
      for (auto t : p_.outputs(q)) {
        const auto tu = static_cast<std::size_t>(t);
        const auto others = others_own(t);
        if (p_.inplace_of(t) == no_id) {
          fresh_[tu] = intersect(with_bases, others);
          recreate_[tu] = intersect(fresh_[tu], unite(own_storage(t), current(t)));
        } else {
          // Rebuilt into its free storage, its base is rebuilt there first.
          windows f = intersect(ins, others);
          for (auto b : bases) f = intersect(f, b == p_.inplace_of(t) ? fresh_[static_cast<std::size_t>(b)] : avail_[static_cast<std::size_t>(b)]);
          fresh_[tu] = f;
          recreate_[tu] = unite(intersect(with_bases, others), intersect(current(t), f));
        }
        set_avail(t);
      }
    }
  }

  // ---- state ----
  void init_state() {
    const auto ns = static_cast<std::size_t>(p_.num_storages());
    on_.assign(ns, 0);
    holds_.assign(ns, no_id);
    std::fill(next_.begin(), next_.end(), 0);
    steps_.clear();
    steps_.reserve(std::max(steps_hint_, 2 * order_.size()));
    victims_.clear();
    in_victims_.assign(ns, 0);
    burst_seen_.assign(static_cast<std::size_t>(p_.num_ops()), 0);
    last_need_.assign(ns, -1);
    made_here_.assign(ns, 0);
    pin_.assign(ns, 0);
    pinned_.clear();
    live_ = 0;
    for (storage_id s = 0; s < p_.num_storages(); ++s)
      if (p_.preexisting(s)) {
        on_[static_cast<std::size_t>(s)] = 1;
        holds_[static_cast<std::size_t>(s)] = p_.storage_root(s);
        live_ += p_.storage_bytes(s);
      }
  }
  [[nodiscard]] bool readable(tensor_id t) const {
    const auto s = static_cast<std::size_t>(p_.storage_of(t));
    return on_[s] && holds_[s] == t;
  }
  [[nodiscard]] std::int64_t new_bytes(op_id o) const {
    std::int64_t b = 0;
    for (auto t : p_.outputs(o)) {
      const auto s = p_.storage_of(t);
      if (p_.inplace_of(t) == no_id && !on_device(s)) b += p_.storage_bytes(s);
    }
    return b;
  }
  // Steps are written in place, field by field: a step built on the stack and pushed was read back
  // with 16-byte loads across its 4-byte stores (a store-forwarding stall: `push_back` was 13 % of a
  // SqueezeNet b32 budget plan, most of it on that load).
  void emit_op(step_kind k, op_id o) {
    auto& st = steps_.emplace_back();
    st.kind = k;
    st.id = o;
    st.impl = impl(o);  // (op_step's, written in place; impl_ has an entry per op)
    for (auto t : p_.outputs(o)) {
      const auto s = static_cast<std::size_t>(p_.storage_of(t));
      if (p_.inplace_of(t) != no_id) {
        if (k == step_kind::recompute && on_[s] && holds_[s] == t) continue;
        holds_[s] = t;
        continue;
      }
      if (on_[s]) continue;  // a recompute leaves a live output as it is
      on_[s] = 1;
      holds_[s] = t;
      live_ += p_.storage_bytes(p_.storage_of(t));
      if (!in_victims_[s]) {
        in_victims_[s] = 1;
        victims_.push_back(static_cast<storage_id>(static_cast<std::int32_t>(s)));
      }
    }
    if (k == step_kind::recompute) {
      ++st_.recomputed_ops;
      st_.recompute_cost += cost(o);
    }
  }
  void free(storage_id s) {
    const auto su = static_cast<std::size_t>(s);
    if (!on_[su]) return;
    auto& st = steps_.emplace_back();
    st.kind = step_kind::free;
    st.id = p_.storage_root(s);
    on_[su] = 0;
    live_ -= p_.storage_bytes(s);
  }

  // ---- recomputation bursts ----
  // Recomputes what is needed for tensor t to be readable; the storages it puts on the device are
  // appended to `made` (for the caller's keep/free decision).
  template <class Policy>
  void burst(tensor_id t, std::vector<storage_id>& made, Policy& pol, storage_id need) {
    std::vector<op_id> ops;
    // Per-op and per-storage marks, kept between bursts and cleared entry by entry below (each burst
    // allocated and zeroed three arrays the size of the graph, for the few ops it replays).
    auto& seen = burst_seen_;
    collect(t, ops, seen);
    if (ops.empty()) return;
    if constexpr (requires { pol.rebuild_siblings(); })
      if (pol.rebuild_siblings()) add_siblings(ops, seen, pol, need);
    // The order's relative order: a topological order that also runs a reader of a storage's old value
    // before the in-place write that overwrites it (the depth-first order of collect need not).
    std::sort(ops.begin(), ops.end(), [&](op_id a, op_id b) { return pos_[static_cast<std::size_t>(a)] < pos_[static_cast<std::size_t>(b)]; });
    ++st_.bursts;
    // Within the burst, a value is needed until the last burst op that reads it.
    auto& last_need = last_need_;
    for (std::size_t k = 0; k < ops.size(); ++k)
      for (auto r : required(ops[k])) last_need[static_cast<std::size_t>(p_.storage_of(r))] = static_cast<std::int32_t>(k);
    auto& made_here = made_here_;
    // (Cleared on every way out from here, so the next burst starts from clean marks; a run that throws
    // before this point leaves some set, and init_state resets them all at the next run.)
    struct clear_marks {
      engine& e;
      const std::vector<op_id>& ops;
      ~clear_marks() {
        for (auto q : ops) {
          e.burst_seen_[static_cast<std::size_t>(q)] = 0;
          for (auto r : e.required(q)) e.last_need_[static_cast<std::size_t>(e.p_.storage_of(r))] = -1;
          for (auto x : e.p_.outputs(q)) e.made_here_[static_cast<std::size_t>(e.p_.storage_of(x))] = 0;
        }
      }
    } clear{*this, ops};
    // Pin what the burst still needs (released op by op).
    for (auto q : ops)
      for (auto r : required(q)) ++pin_[static_cast<std::size_t>(p_.storage_of(r))];
    for (std::size_t k = 0; k < ops.size(); ++k) {
      const auto q = ops[k];
      for (auto x : p_.outputs(q)) ++pin_[static_cast<std::size_t>(p_.storage_of(x))];
      make_room(new_bytes(q) + workspace(q));
      for (auto x : p_.outputs(q)) --pin_[static_cast<std::size_t>(p_.storage_of(x))];
      for (auto x : p_.outputs(q)) {
        const auto s = p_.storage_of(x);
        if (p_.inplace_of(x) == no_id && !on_device(s)) {
          made.push_back(s);
          made_here[static_cast<std::size_t>(s)] = 1;
        }
      }
      emit_op(step_kind::recompute, q);
      for (auto r : required(q)) --pin_[static_cast<std::size_t>(p_.storage_of(r))];
      // Values made in this burst and needed by no later burst op nor the op being prepared: freed
      // now unless the policy keeps them for their next use.
      for (auto r : required(q)) {
        const auto s = p_.storage_of(r);
        const auto su = static_cast<std::size_t>(s);
        if (last_need[su] != static_cast<std::int32_t>(k) || !made_here[su] || pinned(s) || !on_device(s)) continue;
        const auto nu = next_use(s, now_ - 1);
        if (nu == never || (droppable(s, nu) && !pol.keep(s, now_, need))) free(s);
      }
    }
  }
  // Siblings: an in-place write of the burst (silu_ after a batch norm) overwrites a version that a
  // dropped value was made from in the order (the pre-activation clone the activation's backward
  // reads). Rebuilt later on its own, that value needs the old version back, so its burst replays the
  // batch norm a second time; made now, from the version this burst has anyway, it costs its own op
  // only, and it stays until its next use like any value a burst made (EfficientNet-B0 at half its
  // peak rebuilt two batch norms twice). Only readers whose outputs are a storage's one version, not
  // on the device, used again later and kept by the policy; whose other inputs are on the device.
  template <class Policy>
  void add_siblings(std::vector<op_id>& ops, std::vector<std::uint8_t>& seen, Policy& pol, storage_id need) {
    const auto n = ops.size();
    for (std::size_t k = 0; k < n; ++k) {
      const auto q = ops[k];
      for (auto x : p_.outputs(q)) {
        const auto b = p_.inplace_of(x);
        if (b == no_id) continue;
        for (auto r : p_.consumers(b)) {
          const auto ru = static_cast<std::size_t>(r);
          if (seen[ru] || !p_.recomputable(r) || pos_[ru] >= pos_[static_cast<std::size_t>(q)] || pos_[ru] >= now_ || p_.outputs(r).empty()) continue;
          bool ok = true;
          for (auto y : p_.outputs(r)) {
            const auto s = p_.storage_of(y);
            ok = ok && p_.inplace_of(y) == no_id && p_.storage_tensors(s).size() == 1 && !on_device(s) && next_use(s, now_ - 1) != never &&
                 pol.keep(s, now_, need);
          }
          for (auto in : required(r)) ok = ok && (in == b || readable(in));
          if (!ok) continue;
          seen[ru] = 1;
          ops.push_back(r);
        }
      }
    }
  }
  // The ops that rebuild t: its producer after those of its unreadable inputs, depth first, on an
  // explicit stack (a burst may rebuild a whole forward chain, one level per op: no call-stack depth).
  void collect(tensor_id t, std::vector<op_id>& ops, std::vector<std::uint8_t>& seen) {
    struct frame { op_id q; std::span<const tensor_id> reads; std::size_t next; };
    std::vector<frame> stack;
    const auto enter = [&](tensor_id x) {
      if (readable(x)) return;
      const auto q = p_.producer(x);
      const auto st = static_cast<std::size_t>(p_.storage_of(x));
      // Recreatable there, or rebuilt into its storage while that storage is free (fresh_).
      const bool into_free = !on_[st] && window_at(fresh_[static_cast<std::size_t>(x)], now_) != nullptr;
      if (q == no_id || !(recreatable(x, now_) || into_free) || (on_[st] && p_.inplace_of(x) == no_id))
        throw error(errc::runtime_error, "remat engine: tensor '" + p_.tensor_name(x) + "' is needed at step " + std::to_string(now_) +
                                             " but can no longer be recomputed (internal error of the policy's drops)");
      if (seen[static_cast<std::size_t>(q)]) return;
      stack.push_back({q, required(q), 0});
    };
    enter(t);
    while (!stack.empty()) {
      auto& f = stack.back();
      if (f.next < f.reads.size()) {
        const auto r = f.reads[f.next++];
        enter(r);  // (may grow the stack: f is not used after it)
        continue;
      }
      const auto q = f.q;
      stack.pop_back();
      if (seen[static_cast<std::size_t>(q)]) continue;
      seen[static_cast<std::size_t>(q)] = 1;
      ops.push_back(q);
    }
  }

  // ---- eviction under the target ----
  [[nodiscard]] bool pinned(storage_id s) const { return pin_[static_cast<std::size_t>(s)] > 0; }
  void make_room(std::int64_t need) {
    if (!evict_ || target_ == std::numeric_limits<std::int64_t>::max()) {
      if (live_ + need > target_) st_.target_missed = true;
      return;
    }
    if (live_ + need <= target_) return;
    if (until_ && until_->expired()) {
      evict_ = false;
      st_.target_missed = true;
      return;
    }
    // Candidates: live storages that may be dropped, scored once for this decision.
    struct cand { double score; storage_id s; };
    std::vector<cand> cs;
    std::size_t w = 0;
    for (std::size_t r = 0; r < victims_.size(); ++r) {
      const auto s = victims_[r];
      const auto su = static_cast<std::size_t>(s);
      if (!on_[su]) { in_victims_[su] = 0; continue; }  // freed since: compact
      victims_[w++] = s;
      if (pin_[su] > 0) continue;
      const auto nu = next_use(s, now_ - 1);
      if (nu == never || !droppable(s, nu)) continue;
      // DTR: the cheapest to bring back per byte-step of memory freed; bringing it back also needs
      // its producer's inputs that are gone now.
      const double c = rebuild_cost(tensor_id(holds_[su]), [&](tensor_id r) { return !readable(r); });
      cs.push_back({(c + 1e-12) / (static_cast<double>(p_.storage_bytes(s)) * static_cast<double>(nu - now_ + 1)), s});
    }
    victims_.resize(w);
    std::sort(cs.begin(), cs.end(), [](const cand& a, const cand& b) { return a.score != b.score ? a.score < b.score : a.s < b.s; });
    for (const auto& c : cs) {
      if (live_ + need <= target_) break;
      free(c.s);
      ++st_.evictions;
    }
    if (live_ + need > target_) st_.target_missed = true;
  }

  const problem& p_;
  std::vector<op_id> order_;
  std::vector<std::int32_t> pos_;
  std::vector<std::vector<std::int32_t>> uses_;
  std::vector<std::size_t> next_;
  std::vector<double> cost_;
  std::vector<std::int32_t> impl_;
  std::vector<std::int64_t> ws_;
  std::vector<windows> recreate_, fresh_, avail_;
  std::vector<std::int32_t> first_reader_, overwritten_;
  // replay state
  std::vector<std::uint8_t> on_;
  std::vector<std::int32_t> holds_;
  std::vector<step> steps_;
  std::size_t steps_hint_ = 0;
  std::vector<std::uint8_t> burst_seen_;  // burst(): ops collected (all 0 between bursts)
  std::vector<std::int32_t> last_need_;   // burst(): the last burst op reading each storage (all -1 between)
  std::vector<std::uint8_t> made_here_;   // burst(): storages the burst made (all 0 between)  // the last replay's step count: run() hands steps_ out, the next reserves
  std::vector<tensor_id> req_;         // required(o) of every op, o's at [req_at_[o], req_at_[o + 1])
  std::vector<std::size_t> req_at_;
  std::vector<storage_id> pinned_, victims_;
  std::vector<std::uint8_t> in_victims_;
  std::vector<std::int32_t> pin_;  // storages the current op and burst still need
  std::int64_t live_ = 0, target_ = std::numeric_limits<std::int64_t>::max();
  bool evict_ = false;
  const deadline* until_ = nullptr;
  std::int32_t now_ = 0;
  engine_stats st_;
};

}  // namespace detail
}  // namespace memplan::remat
