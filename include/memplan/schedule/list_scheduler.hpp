#pragma once
// schedule::list_scheduler -- memory-aware list scheduling, no solver. At each step one ready op
// (all predecessors done) is chosen by a priority rule computed from the live-memory state:
//
//   depth_first     the tie-break order alone (a DFS post-order from the sinks: every op right
//                   after the ops it needs, one branch finished before the next is started, the
//                   branch with the smallest result first)
//   min_net_growth  smallest net growth = bytes the op allocates - bytes it frees
//   max_free        most bytes freed (then least allocated)
//   lookahead       net growth plus the (negative part of) net growth of the successors that the
//                   op makes ready: prefers an op that unblocks the consumer freeing a large storage
//
// and, with peak_aware, the choice is restricted to the ops that do not raise the peak reached so
// far (live + allocated + workspace <= running peak); when none exists, the op raising it least is
// taken. Ties go to the tie-break rank (dfs post-order, or the given order).
//
// Net growth is maintained incrementally with per-storage remaining-user counts: a storage's count
// drops to 1 exactly once, which changes the priority of one op. The ready set is a segment tree
// over a static rank (by allocation + workspace for peak_aware), so every step, insertion and key
// change is O(log V): O((V + E) log V) in all.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include <memplan/core/analysis.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/schedule/detail/memory_facts.hpp>
#include <memplan/schedule/early_updates.hpp>

namespace memplan::schedule {

enum class priority : std::uint8_t { depth_first, min_net_growth, max_free, lookahead };
enum class tie_break : std::uint8_t { dfs, given };

inline constexpr const char* to_string(priority r) noexcept {
  switch (r) {
    case priority::depth_first: return "depth_first";
    case priority::min_net_growth: return "min_net_growth";
    case priority::max_free: return "max_free";
    case priority::lookahead: return "lookahead";
  }
  return "min_net_growth";
}

namespace detail {

// Post-order of a depth-first search over predecessors, started from the sinks in id order: a
// topological order in which every op comes right after the ops it needs. Among the predecessors
// of an op, the one allocating the fewest bytes is visited first (Sethi-Ullman spirit: hold small
// results while the large ones are computed, then consume the large ones at once). Iterative:
// deep graphs.
inline std::vector<std::int32_t> dfs_rank(const problem& p, const std::vector<std::int64_t>& alloc) {
  const auto n = static_cast<std::size_t>(p.num_ops());
  std::vector<std::int32_t> rank(n, -1);
  std::vector<std::uint8_t> seen(n, 0);
  // Predecessor lists sorted by allocation (CSR copy).
  std::vector<std::int32_t> off(n + 1, 0);
  for (std::size_t o = 0; o < n; ++o) off[o + 1] = off[o] + static_cast<std::int32_t>(p.preds(static_cast<op_id>(o)).size());
  std::vector<op_id> pred(static_cast<std::size_t>(off[n]));
  for (std::size_t o = 0; o < n; ++o) {
    auto pr = p.preds(static_cast<op_id>(o));
    auto* b = pred.data() + off[o];
    std::copy(pr.begin(), pr.end(), b);
    std::stable_sort(b, b + pr.size(), [&](op_id x, op_id y) { return alloc[static_cast<std::size_t>(x)] < alloc[static_cast<std::size_t>(y)]; });
  }
  std::vector<std::pair<op_id, std::int32_t>> stack;
  std::int32_t next = 0;
  for (std::size_t root = 0; root < n; ++root) {
    if (!p.succs(static_cast<op_id>(root)).empty() || seen[root]) continue;
    seen[root] = 1;
    stack.push_back({static_cast<op_id>(root), off[root]});
    while (!stack.empty()) {
      auto& [v, i] = stack.back();
      if (i < off[static_cast<std::size_t>(v) + 1]) {
        const auto w = pred[static_cast<std::size_t>(i++)];
        if (!seen[static_cast<std::size_t>(w)]) {
          seen[static_cast<std::size_t>(w)] = 1;
          stack.push_back({w, off[static_cast<std::size_t>(w)]});
        }
      } else {
        rank[static_cast<std::size_t>(v)] = next++;
        stack.pop_back();
      }
    }
  }
  return rank;  // every op reaches a sink, so every op is ranked
}

// Priority key of a ready op: smaller is better.
struct ready_key {
  std::int64_t k1 = std::numeric_limits<std::int64_t>::max();
  std::int64_t k2 = std::numeric_limits<std::int64_t>::max();
  std::int32_t tie = std::numeric_limits<std::int32_t>::max();
  op_id op = no_id;
  friend bool operator<(const ready_key& a, const ready_key& b) {
    if (a.k1 != b.k1) return a.k1 < b.k1;
    if (a.k2 != b.k2) return a.k2 < b.k2;
    return a.tie < b.tie;
  }
};

// Min-segment tree over static ranks holding the keys of the ready ops; also the smallest ready rank.
class ready_tree {
 public:
  explicit ready_tree(std::size_t n) {
    size_ = 1;
    while (size_ < std::max<std::size_t>(n, 1)) size_ *= 2;
    key_.assign(2 * size_, ready_key{});
    first_.assign(2 * size_, none);
  }
  void set(std::size_t r, const ready_key& k) {
    auto i = r + size_;
    key_[i] = k;
    first_[i] = static_cast<std::int32_t>(r);
    pull(i);
  }
  void erase(std::size_t r) {
    auto i = r + size_;
    key_[i] = ready_key{};
    first_[i] = none;
    pull(i);
  }
  // Best key among ranks [0, r_end).
  [[nodiscard]] ready_key best_prefix(std::size_t r_end) const {
    ready_key best;
    std::size_t lo = size_, hi = r_end + size_;
    while (lo < hi) {
      if (lo & 1) { if (key_[lo] < best) best = key_[lo]; ++lo; }
      if (hi & 1) { --hi; if (key_[hi] < best) best = key_[hi]; }
      lo /= 2;
      hi /= 2;
    }
    return best;
  }
  [[nodiscard]] ready_key best() const { return key_[1]; }
  [[nodiscard]] std::int32_t first_ready() const { return first_[1]; }
  [[nodiscard]] const ready_key& at(std::size_t r) const { return key_[r + size_]; }

 private:
  static constexpr std::int32_t none = std::numeric_limits<std::int32_t>::max();
  void pull(std::size_t i) {
    for (i /= 2; i >= 1; i /= 2) {
      key_[i] = key_[2 * i + 1] < key_[2 * i] ? key_[2 * i + 1] : key_[2 * i];
      first_[i] = std::min(first_[2 * i], first_[2 * i + 1]);
    }
  }
  std::size_t size_ = 1;
  std::vector<ready_key> key_;
  std::vector<std::int32_t> first_;
};

}  // namespace detail

struct list_scheduler {
  priority rule = priority::min_net_growth;
  bool peak_aware = false;
  tie_break ties = tie_break::dfs;
  bool early_updates = false;  // schedule under OLLA §4.3 early weight-update control edges (Function 3)
  // Build the order from the end: an op is placed (before the ops placed so far) once all its
  // successors are; placing it makes the storages it touches live (if no later op did) and kills
  // the storages it allocates. Producers are thus placed as late as their consumers allow -- what
  // the forward greedy misses when an op computed early holds its result until the backward pass.
  // Keys: min_net_growth and lookahead use the reverse net growth (bytes made live - bytes
  // killed), max_free the bytes killed, depth_first the tie-break; peak_aware does not apply.
  bool reverse = false;

  [[nodiscard]] std::string name() const {
    std::string n = reverse ? "reverse_" + std::string(rule == priority::lookahead ? to_string(priority::min_net_growth) : to_string(rule))
                    : (peak_aware && rule == priority::min_net_growth) ? std::string("peak_aware")
                                                                      : (peak_aware ? "peak_aware_" : "") + std::string(to_string(rule));
    if (ties == tie_break::given) n += "+given_ties";
    if (early_updates) n += "+early_updates";
    return n;
  }

  [[nodiscard]] schedule_result run(const problem& p, const plan_context& = {}) const {
    schedule_result r;
    r.policy = name();
    if (early_updates) {
      const auto q = early_weight_updates(p);
      r.order = order(q);
    } else {
      r.order = order(p);
    }
    r.peak = peak_of(p, r.order);
    return r;
  }

  // The order alone (the problem must be acyclic, which every built problem is).
  [[nodiscard]] std::vector<op_id> order(const problem& p) const {
    if (reverse) return reverse_order(p);
    const auto n = static_cast<std::size_t>(p.num_ops());
    std::vector<op_id> out;
    out.reserve(n);
    if (n == 0) return out;
    const detail::memory_facts mf(p);
    std::vector<std::int32_t> tie(n);
    if (ties == tie_break::dfs) tie = detail::dfs_rank(p, mf.alloc);
    else std::iota(tie.begin(), tie.end(), 0);

    // Static rank of the leaves: by allocation + workspace (peak_aware prefix queries), then tie.
    std::vector<op_id> by_rank(n);
    std::iota(by_rank.begin(), by_rank.end(), op_id{0});
    auto step_cost = [&](op_id o) { return mf.alloc[static_cast<std::size_t>(o)] + p.workspace(o); };
    if (peak_aware)
      std::sort(by_rank.begin(), by_rank.end(), [&](op_id a, op_id b) {
        const auto ca = step_cost(a), cb = step_cost(b);
        return ca != cb ? ca < cb : tie[static_cast<std::size_t>(a)] < tie[static_cast<std::size_t>(b)];
      });
    else
      std::sort(by_rank.begin(), by_rank.end(),
                [&](op_id a, op_id b) { return tie[static_cast<std::size_t>(a)] < tie[static_cast<std::size_t>(b)]; });
    std::vector<std::int32_t> rank(n);
    std::vector<std::int64_t> rank_cost(n);
    for (std::size_t i = 0; i < n; ++i) {
      rank[static_cast<std::size_t>(by_rank[i])] = static_cast<std::int32_t>(i);
      rank_cost[i] = step_cost(by_rank[i]);
    }

    std::vector<std::int32_t> remaining(static_cast<std::size_t>(p.num_storages()));
    for (storage_id s = 0; s < p.num_storages(); ++s)
      remaining[static_cast<std::size_t>(s)] = static_cast<std::int32_t>(p.storage_users(s).size());
    std::vector<std::int32_t> pending(n);
    std::vector<std::uint8_t> state(n, 0);  // 0 waiting, 1 ready, 2 done
    for (std::size_t o = 0; o < n; ++o) pending[o] = static_cast<std::int32_t>(p.preds(static_cast<op_id>(o)).size());

    // Bytes o would free if it ran now; `minus` discounts one use of the storages `other` touches
    // (the state right after `other` ran, for the lookahead).
    auto frees = [&](op_id o, op_id other) {
      std::int64_t f = 0;
      for (auto s : p.touched(o)) {
        if (!mf.freeable[static_cast<std::size_t>(s)]) continue;
        auto left = remaining[static_cast<std::size_t>(s)];
        if (other != no_id) {
          auto t = p.touched(other);
          if (std::find(t.begin(), t.end(), s) != t.end()) --left;
        }
        if (left == 1) f += p.storage_bytes(s);
      }
      return f;
    };
    auto key_of = [&](op_id o) {
      detail::ready_key k;
      k.op = o;
      k.tie = tie[static_cast<std::size_t>(o)];
      const auto a = mf.alloc[static_cast<std::size_t>(o)];
      switch (rule) {
        case priority::depth_first: k.k1 = 0; k.k2 = 0; break;
        case priority::min_net_growth: k.k1 = a - frees(o, no_id); k.k2 = 0; break;
        case priority::max_free: k.k1 = -frees(o, no_id); k.k2 = a; break;
        case priority::lookahead: {
          const auto net = a - frees(o, no_id);
          std::int64_t bonus = 0;
          for (auto u : p.succs(o))
            if (pending[static_cast<std::size_t>(u)] == 1)  // o is the last op u waits for
              bonus += std::min<std::int64_t>(0, mf.alloc[static_cast<std::size_t>(u)] - frees(u, o));
          k.k1 = net + bonus;
          k.k2 = net;
          break;
        }
      }
      return k;
    };

    detail::ready_tree tree(n);
    auto refresh = [&](op_id o) {
      if (state[static_cast<std::size_t>(o)] == 1) tree.set(static_cast<std::size_t>(rank[static_cast<std::size_t>(o)]), key_of(o));
    };
    // The one op u still waits for, if it waits for exactly one.
    auto blocker = [&](op_id u) -> op_id {
      if (pending[static_cast<std::size_t>(u)] != 1) return no_id;
      for (auto q : p.preds(u))
        if (state[static_cast<std::size_t>(q)] != 2) return q;
      return no_id;
    };
    for (std::size_t o = 0; o < n; ++o)
      if (pending[o] == 0) state[o] = 1;
    for (std::size_t o = 0; o < n; ++o) refresh(static_cast<op_id>(o));

    std::int64_t live = mf.initial_live;
    std::int64_t running_peak = mf.initial_live + mf.step0_only;
    for (std::size_t step = 0; step < n; ++step) {
      op_id v = no_id;
      if (peak_aware) {
        // Ops whose step (live + alloc + workspace) stays within the peak reached so far.
        const auto budget = running_peak - live;
        const auto end = static_cast<std::size_t>(std::upper_bound(rank_cost.begin(), rank_cost.end(), budget) - rank_cost.begin());
        const auto k = tree.best_prefix(end);
        v = k.op != no_id ? k.op : by_rank[static_cast<std::size_t>(tree.first_ready())];
      } else {
        v = tree.best().op;
      }
      const auto vi = static_cast<std::size_t>(v);
      tree.erase(static_cast<std::size_t>(rank[vi]));
      state[vi] = 2;
      out.push_back(v);
      running_peak = std::max(running_peak, live + mf.alloc[vi] + p.workspace(v) + (step == 0 ? mf.step0_only : 0));
      live += mf.alloc[vi];
      for (auto s : p.touched(v)) {
        const auto si = static_cast<std::size_t>(s);
        const auto left = --remaining[si];
        if (!mf.freeable[si]) continue;
        if (left == 0) live -= p.storage_bytes(s);
        if (left == 1 || (rule == priority::lookahead && left == 2))
          for (auto u : p.storage_users(s)) {
            if (state[static_cast<std::size_t>(u)] == 2) continue;
            refresh(u);
            if (rule == priority::lookahead)
              if (auto b = blocker(u); b != no_id) refresh(b);
          }
      }
      for (auto w : p.succs(v)) {
        const auto wi = static_cast<std::size_t>(w);
        if (--pending[wi] == 0) {
          state[wi] = 1;
          refresh(w);
        } else if (rule == priority::lookahead && pending[wi] == 1) {
          if (auto b = blocker(w); b != no_id) refresh(b);
        }
      }
    }
    return out;
  }

  // The reverse list schedule (see `reverse`): O((V + E) log V) like the forward one.
  [[nodiscard]] std::vector<op_id> reverse_order(const problem& p) const {
    const auto n = static_cast<std::size_t>(p.num_ops());
    std::vector<op_id> out;
    out.reserve(n);
    if (n == 0) return out;
    const detail::memory_facts mf(p);
    std::vector<std::int32_t> tie(n);
    if (ties == tie_break::dfs) tie = detail::dfs_rank(p, mf.alloc);
    else std::iota(tie.begin(), tie.end(), 0);
    for (auto& t : tie) t = -t;  // placing from the end: the latest op of the tie order first
    const auto ns = static_cast<std::size_t>(p.num_storages());
    // A storage is live at the boundary once a placed op touches it (or from the end when it is
    // live to the end), until its allocator is placed. Resident ones are not tracked.
    std::vector<std::uint8_t> live_now(ns, 0), tracked(ns, 0);
    for (storage_id s = 0; s < p.num_storages(); ++s) {
      const auto si = static_cast<std::size_t>(s);
      if (p.storage_bytes(s) == 0 || p.resident(s)) continue;
      tracked[si] = 1;
      if (p.live_to_end(s)) live_now[si] = 1;
    }
    std::vector<std::int64_t> newly(n, 0);  // bytes op o would make live if placed now
    for (std::size_t o = 0; o < n; ++o)
      for (auto s : p.touched(static_cast<op_id>(o)))
        if (tracked[static_cast<std::size_t>(s)] && !live_now[static_cast<std::size_t>(s)]) newly[o] += p.storage_bytes(s);
    std::vector<std::int32_t> pending(n);
    std::vector<std::uint8_t> state(n, 0);
    for (std::size_t o = 0; o < n; ++o) pending[o] = static_cast<std::int32_t>(p.succs(static_cast<op_id>(o)).size());
    std::vector<std::int32_t> rank(n);
    {
      std::vector<op_id> by(n);
      std::iota(by.begin(), by.end(), op_id{0});
      std::sort(by.begin(), by.end(), [&](op_id a, op_id b) { return tie[static_cast<std::size_t>(a)] < tie[static_cast<std::size_t>(b)]; });
      for (std::size_t i = 0; i < n; ++i) rank[static_cast<std::size_t>(by[i])] = static_cast<std::int32_t>(i);
    }
    auto key_of = [&](op_id o) {
      detail::ready_key k;
      k.op = o;
      k.tie = tie[static_cast<std::size_t>(o)];
      const auto nw = newly[static_cast<std::size_t>(o)], kill = mf.alloc[static_cast<std::size_t>(o)];
      switch (rule) {
        case priority::depth_first: k.k1 = 0; k.k2 = 0; break;
        case priority::max_free: k.k1 = -kill; k.k2 = nw; break;
        default: k.k1 = nw - kill; k.k2 = nw + p.workspace(o); break;
      }
      return k;
    };
    detail::ready_tree tree(n);
    auto refresh = [&](op_id o) {
      if (state[static_cast<std::size_t>(o)] == 1) tree.set(static_cast<std::size_t>(rank[static_cast<std::size_t>(o)]), key_of(o));
    };
    for (std::size_t o = 0; o < n; ++o)
      if (pending[o] == 0) { state[o] = 1; refresh(static_cast<op_id>(o)); }
    for (std::size_t step = 0; step < n; ++step) {
      const auto v = tree.best().op;
      const auto vi = static_cast<std::size_t>(v);
      tree.erase(static_cast<std::size_t>(rank[vi]));
      state[vi] = 2;
      out.push_back(v);
      for (auto s : p.touched(v)) {
        const auto si = static_cast<std::size_t>(s);
        if (!tracked[si] || live_now[si]) continue;
        live_now[si] = 1;
        for (auto u : p.storage_users(s)) {
          if (state[static_cast<std::size_t>(u)] == 2) continue;
          newly[static_cast<std::size_t>(u)] -= p.storage_bytes(s);
          refresh(u);
        }
      }
      for (auto q : p.preds(v))
        if (--pending[static_cast<std::size_t>(q)] == 0) {
          state[static_cast<std::size_t>(q)] = 1;
          refresh(q);
        }
    }
    std::reverse(out.begin(), out.end());
    return out;
  }
};

static_assert(scheduler<list_scheduler>);

// The named heuristics (registry/schedulers.hpp lists them by these names: memplan::schedulers()).
inline list_scheduler depth_first() { return {priority::depth_first, false, tie_break::dfs, false, false}; }
inline list_scheduler min_net_growth() { return {priority::min_net_growth, false, tie_break::dfs, false, false}; }
inline list_scheduler max_free() { return {priority::max_free, false, tie_break::dfs, false, false}; }
inline list_scheduler lookahead() { return {priority::lookahead, false, tie_break::dfs, false, false}; }
inline list_scheduler peak_aware() { return {priority::min_net_growth, true, tie_break::dfs, false, false}; }
inline list_scheduler reverse_min_net_growth() { return {priority::min_net_growth, false, tie_break::dfs, false, true}; }

}  // namespace memplan::schedule
