#pragma once
// cut_lower_bound: a lower bound on the peak of ANY topological order, from minimum cuts.
//
// While op v runs, the ops already run form a set R that contains v and every ancestor of v, no
// descendant of v, and is closed under predecessors. Under the memory rule (graph-format.md) a storage
// s is live at that moment iff it is resident, or its allocator is in R (or it exists from the start)
// and it is still needed: it holds an output, v touches it, or one of its users is not in R. So every
// order holds, at v's step,
//     live(v) >= resident + workspace(v) + touched(v) + min over R of cut(R),
// where cut(R) sums the storages whose allocator is in R and some user is not (or that hold an
// output). That minimum is a minimum s-t cut: one node per op (source side = R), an infinite arc from
// every op to each of its predecessors (R stays closed), and per storage a node behind an arc of
// capacity bytes(s) from its allocator, with infinite arcs to its users -- the storage node must sit
// on the sink side as soon as one user does, and then its arc is cut iff the allocator ran. Ancestors
// of v are merged into the source, descendants into the sink: only ops incomparable with v stay free,
// so the networks are small on training graphs (mostly chains). The bound is the max over v.
//
// It is at least lower_bound_peak (core/analysis.hpp), whose "allocated by an ancestor, used by a
// descendant" storages are exactly the cuts forced by the merged source and sink. Where orders may
// differ a lot (EfficientNet's branches, weight updates that may run anywhere after their gradient)
// the cut also charges what any order must keep while it postpones or advances the free ops.
//
// Pairs. The cut at v picks the best R for v alone; the order must also get through the other ops.
// Every order runs v before w or w before v, so
//     min( max(cut at v with w pending, cut at w with v run), max(cut at v with w run, cut at w with v pending) )
// is a bound as well (forcing ops into or out of R is one more infinite arc to the source or sink).
// On transformer-train-b1 this lifts the bound from 24 658 860 B (the single cut at the op before the
// peak assumes a weight gradient and its update already ran, which no order can afford) to 25 707 436 B:
// the default scheduler's peak, now proven optimal.
//
// Cost: per op one BFS for its ancestors / descendants (O(V + E)) and one pass over the storages for
// the cheap bounds (local, and an upper bound: every storage some R may cut); max-flows (Dinic on the
// contracted network) only for ops whose upper bound beats the best bound so far, best upper bound
// first, so most ops are skipped. Pairs: `pair_ops` ops times up to `pair_partners` free ops of each
// one's network, two to four flows each, skipped when the cheap upper bound of w shows the pair
// cannot lift the bound.
// `stop_at` (a known order's peak) ends the work once reached. Above `max_ops_exact` ops only a sample
// of ops is evaluated: the max over fewer ops is still a valid bound (`sampled` says so); a time limit
// stops it the same way.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include <memplan/core/analysis.hpp>
#include <memplan/core/bounds.hpp>
#include <memplan/core/problem.hpp>

namespace memplan {

struct cut_bound_options {
  std::int32_t max_ops_exact = 5000;   // above: evaluate a sample of ops (the bound stays valid)
  std::int32_t samples = 256;          // ops in the sample (evenly spaced in a topological order, plus
                                       // the op where lower_bound_peak is attained)
  bool pairs = true;                   // also branch on the order of pairs (v, w) at the best ops
  std::int32_t pair_ops = 8;           // that many ops (best single bounds first), each against the free
  std::int32_t pair_partners = 64;     // ops of its cut network (at most this many, most at stake first;
  std::int32_t pair_network_ops = 1024;  // networks with more free ops are skipped)
  // The peak of a known order (e.g. the scheduler's): once the bound reaches it, that order is proven
  // optimal and the work stops.
  std::int64_t stop_at = std::numeric_limits<std::int64_t>::max();
  double time_limit_s = -1;            // < 0: none; when it passes, the best bound so far (valid) is returned
};

struct cut_lower_bound_result {
  std::int64_t bytes = 0;        // no topological order peaks below this
  std::int32_t at_op = -1;       // the op where it is attained (-1: the resident bytes alone)
  bool sampled = false;          // not every op got its single cut (sample or time limit); still a valid bound
  bool pairs_complete = false;   // the pair stage ran to its end (or was not needed)
  std::int32_t cuts = 0;         // max-flows computed
  std::int64_t local_bytes = 0;  // at at_op: resident + workspace + touched storages + forced cuts
                                 // (lower_bound_peak's part at that op)
};

namespace detail {

// Dinic's max-flow on a small network (int64 capacities).
class max_flow {
 public:
  explicit max_flow(int n = 0) { reset(n); }
  void reset(int n) {
    head_.assign(static_cast<std::size_t>(n), -1);
    to_.clear();
    cap_.clear();
    next_.clear();
  }
  int add_node() {
    head_.push_back(-1);
    return static_cast<int>(head_.size()) - 1;
  }
  void add_arc(int u, int v, std::int64_t c) {
    push(u, v, c);
    push(v, u, 0);
  }
  std::int64_t run(int s, int t, std::int64_t enough = std::numeric_limits<std::int64_t>::max()) {
    std::int64_t flow = 0;
    const auto n = head_.size();
    level_.resize(n);
    it_.resize(n);
    while (flow < enough && bfs(s, t)) {
      for (std::size_t i = 0; i < n; ++i) it_[i] = head_[i];
      while (flow < enough) {
        const auto f = dfs(s, t, enough - flow);
        if (f == 0) break;
        flow += f;
      }
    }
    return flow;
  }

 private:
  void push(int u, int v, std::int64_t c) {
    to_.push_back(v);
    cap_.push_back(c);
    next_.push_back(head_[static_cast<std::size_t>(u)]);
    head_[static_cast<std::size_t>(u)] = static_cast<int>(to_.size()) - 1;
  }
  bool bfs(int s, int t) {
    std::fill(level_.begin(), level_.end(), -1);
    queue_.clear();
    queue_.push_back(s);
    level_[static_cast<std::size_t>(s)] = 0;
    for (std::size_t q = 0; q < queue_.size(); ++q) {
      const int u = queue_[q];
      for (int e = head_[static_cast<std::size_t>(u)]; e >= 0; e = next_[static_cast<std::size_t>(e)]) {
        const int w = to_[static_cast<std::size_t>(e)];
        if (cap_[static_cast<std::size_t>(e)] > 0 && level_[static_cast<std::size_t>(w)] < 0) {
          level_[static_cast<std::size_t>(w)] = level_[static_cast<std::size_t>(u)] + 1;
          queue_.push_back(w);
        }
      }
    }
    return level_[static_cast<std::size_t>(t)] >= 0;
  }
  // Iterative blocking-flow step: one augmenting path along the level graph.
  std::int64_t dfs(int s, int t, std::int64_t limit) {
    path_.clear();
    int u = s;
    while (true) {
      if (u == t) {
        std::int64_t f = limit;
        for (int e : path_) f = std::min(f, cap_[static_cast<std::size_t>(e)]);
        for (int e : path_) {
          cap_[static_cast<std::size_t>(e)] -= f;
          cap_[static_cast<std::size_t>(e ^ 1)] += f;
        }
        return f;
      }
      int& e = it_[static_cast<std::size_t>(u)];
      while (e >= 0) {
        const int w = to_[static_cast<std::size_t>(e)];
        if (cap_[static_cast<std::size_t>(e)] > 0 && level_[static_cast<std::size_t>(w)] == level_[static_cast<std::size_t>(u)] + 1) break;
        e = next_[static_cast<std::size_t>(e)];
      }
      if (e >= 0) {
        path_.push_back(e);
        u = to_[static_cast<std::size_t>(e)];
        continue;
      }
      if (path_.empty()) return 0;  // dead end at the source: no more paths in this phase
      level_[static_cast<std::size_t>(u)] = -1;  // dead end: prune it, step back
      const int back = path_.back();
      path_.pop_back();
      u = to_[static_cast<std::size_t>(back ^ 1)];
      it_[static_cast<std::size_t>(u)] = next_[static_cast<std::size_t>(it_[static_cast<std::size_t>(u)])];
    }
  }
  std::vector<int> head_, to_, next_, level_, it_, queue_, path_;
  std::vector<std::int64_t> cap_;
};

}  // namespace detail

namespace detail {

// Everything cut_lower_bound needs per op: its ancestors / descendants, the cheap bounds, and the
// min-cut network (optionally with a few more ops forced to have run or not).
class cut_evaluator {
 public:
  explicit cut_evaluator(const problem& p) : p_(&p), n_(static_cast<std::size_t>(p.num_ops())) {
    const auto S = static_cast<std::size_t>(p.num_storages());
    for (std::size_t s = 0; s < S; ++s)
      if (p.storage_bytes(static_cast<storage_id>(s)) > 0 && !p.resident(static_cast<storage_id>(s)))
        movable_.push_back(static_cast<storage_id>(s));
    side_.assign(n_, 0);
    node_.assign(n_, -1);
    touched_.assign(S, 0);
  }

  struct cheap { std::int64_t local = 0, upper = 0; };

  // Marks v's ancestors and descendants (one BFS each way).
  void classify(op_id v) {
    v_ = v;
    std::fill(side_.begin(), side_.end(), 0);
    side_[static_cast<std::size_t>(v)] = 3;
    mark(v, 1, true);
    mark(v, 2, false);
  }
  [[nodiscard]] bool free_op(op_id o) const { return side_[static_cast<std::size_t>(o)] == 0; }
  // The free ops in the network of the last bound() call.
  [[nodiscard]] const std::vector<op_id>& network_ops() const { return used_; }

  // local: resident + workspace + touched storages + storages cut in every R (allocated by v or an
  // ancestor, used by a descendant or holding an output); upper: + every storage some R may cut.
  [[nodiscard]] cheap cheap_bounds() {
    const auto& p = *p_;
    cheap c;
    c.local = p.resident_bytes() + min_workspace(p, v_);  // its least over the implementations
    for (auto s : p.touched(v_))
      if (!p.resident(s)) { c.local += p.storage_bytes(s); touched_[static_cast<std::size_t>(s)] = 1; }
    std::int64_t maybe = 0;
    for (auto s : movable_) {
      if (touched_[static_cast<std::size_t>(s)]) continue;
      const int a = state(p.storage_allocator(s));
      if (a < 0) continue;  // allocated after v: not live
      bool user_out = p.live_to_end(s), user_free = false;
      for (auto u : p.storage_users(s)) {
        const int su = state(u);
        if (su < 0) user_out = true;
        else if (su == 0) user_free = true;
      }
      if (a > 0 && user_out) c.local += p.storage_bytes(s);
      else if (user_out || user_free) maybe += p.storage_bytes(s);
    }
    for (auto s : p.touched(v_)) touched_[static_cast<std::size_t>(s)] = 0;
    c.upper = c.local + maybe;
    return c;
  }

  // The min cut at v (after classify(v)), with the free ops in `ran` forced to have run and those in
  // `pending` forced not to have: returns local + cut.
  std::int64_t bound(std::int64_t local, const std::vector<op_id>& ran = {}, const std::vector<op_id>& pending = {}) {
    const auto& p = *p_;
    for (auto s : p.touched(v_)) touched_[static_cast<std::size_t>(s)] = 1;
    mf_.reset(2);  // 0 = source (ops that ran), 1 = sink (ops still to run)
    used_.clear();
    const std::int64_t inf = std::numeric_limits<std::int64_t>::max() / 4;
    std::vector<int> users;
    for (auto s : movable_) {
      if (touched_[static_cast<std::size_t>(s)]) continue;
      const auto alloc = p.storage_allocator(s);
      const int a = state(alloc);
      if (a < 0) continue;
      bool user_out = p.live_to_end(s);
      users.clear();
      for (auto u : p.storage_users(s)) {
        const int su = state(u);
        if (su < 0) user_out = true;
        else if (su == 0 && u != alloc) users.push_back(op_node(u));
      }
      const auto bytes = p.storage_bytes(s);
      const int from = a > 0 ? 0 : op_node(alloc);
      if (user_out) {
        if (a == 0) mf_.add_arc(from, 1, bytes);  // live iff the allocator ran (a > 0: cut in every R, in local)
        continue;
      }
      if (users.empty()) continue;  // every user runs no later than v: never live at v
      if (users.size() == 1) { mf_.add_arc(from, users[0], bytes); continue; }  // live iff that user is pending
      const int x = mf_.add_node();
      mf_.add_arc(from, x, bytes);
      for (int u : users) mf_.add_arc(x, u, inf);
    }
    for (auto o : ran)
      if (free_op(o)) mf_.add_arc(0, op_node(o), inf);
    for (auto o : pending)
      if (free_op(o)) mf_.add_arc(op_node(o), 1, inf);
    // Closure: an op runs only after its predecessors. Free predecessors of network ops join the
    // network (the loop reaches the ones it adds); ancestors of v have run anyway.
    for (std::size_t k = 0; k < used_.size(); ++k) {
      const auto o = used_[k];
      for (auto q : p.preds(o))
        if (state(q) == 0) mf_.add_arc(op_node(o), op_node(q), inf);
    }
    for (auto s : p.touched(v_)) touched_[static_cast<std::size_t>(s)] = 0;
    const auto cut = mf_.run(0, 1);
    for (auto o : used_) node_[static_cast<std::size_t>(o)] = -1;
    return local + cut;
  }

 private:
  void mark(op_id v, std::uint8_t tag, bool up) {
    stack_.assign(1, v);
    while (!stack_.empty()) {
      const auto x = stack_.back();
      stack_.pop_back();
      for (auto y : up ? p_->preds(x) : p_->succs(x))
        if (side_[static_cast<std::size_t>(y)] == 0) { side_[static_cast<std::size_t>(y)] = tag; stack_.push_back(y); }
    }
  }
  // +1: surely ran (ancestor, v itself, or "exists from the start"), -1: surely pending (descendant), 0: free.
  [[nodiscard]] int state(op_id o) const {
    if (o == no_id) return 1;
    const auto c = side_[static_cast<std::size_t>(o)];
    return c == 1 || c == 3 ? 1 : c == 2 ? -1 : 0;
  }
  int op_node(op_id o) {
    auto& x = node_[static_cast<std::size_t>(o)];
    if (x < 0) { x = mf_.add_node(); used_.push_back(o); }
    return x;
  }
  const problem* p_;
  std::size_t n_;
  op_id v_ = 0;
  std::vector<storage_id> movable_;
  std::vector<std::uint8_t> side_;
  std::vector<int> node_;
  std::vector<char> touched_;
  std::vector<op_id> stack_, used_;
  max_flow mf_;
};

}  // namespace detail

inline cut_lower_bound_result cut_lower_bound(const problem& p, const cut_bound_options& o = {}) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  const auto out_of_time = [&] {
    return o.time_limit_s >= 0 && std::chrono::duration<double>(clock::now() - t0).count() >= o.time_limit_s;
  };
  const auto n = static_cast<std::size_t>(p.num_ops());
  cut_lower_bound_result res;
  res.bytes = p.resident_bytes();
  if (n == 0) return res;
  detail::cut_evaluator ev(p);
  // Which ops to evaluate: all, or an evenly spaced sample in topological order.
  const auto topo = topological_order(p);
  std::vector<op_id> ops;
  if (static_cast<std::int64_t>(n) <= o.max_ops_exact) {
    ops = topo;
  } else {
    res.sampled = true;
    const auto k = std::min(n, static_cast<std::size_t>(std::max<std::int32_t>(1, o.samples)));
    for (std::size_t i = 0; i < k; ++i) ops.push_back(topo[i * n / k]);
    if (const auto at = lower_bound_peak(p).at_op; at >= 0 && std::find(ops.begin(), ops.end(), at) == ops.end()) ops.push_back(at);
  }
  std::vector<detail::cut_evaluator::cheap> cb(n);
  std::vector<std::int64_t> exact(n, -1);
  const auto raise = [&](op_id v, std::int64_t bytes) {
    if (bytes > res.bytes) {
      res.bytes = bytes;
      res.at_op = v;
      res.local_bytes = cb[static_cast<std::size_t>(v)].local;
    }
  };
  for (auto v : ops) {
    if (out_of_time()) { res.sampled = true; break; }
    ev.classify(v);
    cb[static_cast<std::size_t>(v)] = ev.cheap_bounds();
    raise(v, cb[static_cast<std::size_t>(v)].local);
  }
  // Best upper bound first; stop once no op can beat the bound found.
  std::sort(ops.begin(), ops.end(), [&](op_id a, op_id b) {
    return cb[static_cast<std::size_t>(a)].upper != cb[static_cast<std::size_t>(b)].upper
               ? cb[static_cast<std::size_t>(a)].upper > cb[static_cast<std::size_t>(b)].upper
               : a < b;
  });
  for (auto v : ops) {
    const auto& c = cb[static_cast<std::size_t>(v)];
    if (c.upper <= res.bytes || res.bytes >= o.stop_at) break;
    if (out_of_time()) { res.sampled = true; break; }
    ev.classify(v);
    exact[static_cast<std::size_t>(v)] = ev.bound(c.local);
    ++res.cuts;
    raise(v, exact[static_cast<std::size_t>(v)]);
  }
  // Pairs: every order runs v before w or w before v, so
  //   min( max(cut at v with w pending, cut at w with v run), max(cut at v with w run, cut at w with v pending) )
  // is a bound too, at least the single cuts. Tried on the ops whose single bound is the best.
  res.pairs_complete = !res.sampled;
  if (o.pairs && !res.sampled && res.bytes < o.stop_at) {  // sampled: a big graph, the single cuts only
    // The ops with the best single bounds (a pair can lift an op whose single cut is below the best).
    std::vector<op_id> top;
    for (auto v : ops)
      if (exact[static_cast<std::size_t>(v)] >= 0) top.push_back(v);
    std::sort(top.begin(), top.end(), [&](op_id a, op_id b) {
      return exact[static_cast<std::size_t>(a)] != exact[static_cast<std::size_t>(b)] ? exact[static_cast<std::size_t>(a)] > exact[static_cast<std::size_t>(b)] : a < b;
    });
    if (top.size() > static_cast<std::size_t>(std::max(0, o.pair_ops))) top.resize(static_cast<std::size_t>(std::max(0, o.pair_ops)));
    for (auto v : top) {
      if (cb[static_cast<std::size_t>(v)].upper <= res.bytes) continue;  // no pair can lift it that far
      ev.classify(v);
      (void)ev.bound(cb[static_cast<std::size_t>(v)].local);
      std::vector<op_id> free = ev.network_ops();  // the free ops the cut at v is about
      if (free.size() > static_cast<std::size_t>(std::max(0, o.pair_network_ops))) continue;  // too costly per flow
      // Partners with the most at stake first (cheap upper bound at w), at most pair_partners of them.
      std::sort(free.begin(), free.end(), [&](op_id a, op_id b) {
        return cb[static_cast<std::size_t>(a)].upper != cb[static_cast<std::size_t>(b)].upper
                   ? cb[static_cast<std::size_t>(a)].upper > cb[static_cast<std::size_t>(b)].upper
                   : a < b;
      });
      if (free.size() > static_cast<std::size_t>(std::max(0, o.pair_partners))) free.resize(static_cast<std::size_t>(std::max(0, o.pair_partners)));
      for (auto w : free) {
        if (out_of_time()) { res.pairs_complete = false; return res; }
        ev.classify(v);
        const auto lv = cb[static_cast<std::size_t>(v)].local;
        const auto v_first = ev.bound(lv, {}, {w}), w_first = ev.bound(lv, {w}, {});
        res.cuts += 2;
        const auto uw = cb[static_cast<std::size_t>(w)].upper;
        if (uw > 0 && std::min(std::max(v_first, uw), std::max(w_first, uw)) <= res.bytes) continue;  // cannot lift
        ev.classify(w);
        const auto lw = ev.cheap_bounds().local;
        const auto a = std::max(v_first, ev.bound(lw, {v}, {}));
        const auto b = std::max(w_first, ev.bound(lw, {}, {v}));
        res.cuts += 2;
        raise(v, std::min(a, b));
        if (res.bytes >= o.stop_at) return res;
      }
    }
  }
  return res;
}

}  // namespace memplan
