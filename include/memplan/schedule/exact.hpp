#pragma once
// schedule::exact -- the minimum peak over all topological orders, proven, for small graphs.
//
// Branch and bound over sets of executed ops: the bytes live after a prefix depend only on the SET
// of ops it ran (a storage is live iff allocated by a run op -- or preexisting -- and still needed by
// an op not run yet, or resident / live to the end), so the search memoizes each visited set with
// the smallest prefix peak it was reached with (a later visit with a larger one cannot do better).
// Pruning: the incumbent (the best list-scheduler order), the global lower_bound_peak, and per set
// (a) the cheapest next step among the ready ops and (b) for every op still to run, what must be
// live when it runs (its own storages, its workspace, and every live storage still needed by it
// or a descendant). Dominance: a ready op that does not raise the prefix peak and does not grow
// live memory can always be run first (moving it to the front of any completion changes every
// later step by its net growth <= 0), so it is the only branch.
//
// Limits: at most 64 ops (sets are 64-bit words) and `max_states` memoized sets; beyond either,
// errc::limit_exceeded naming the size and the limit. When the time limit passes, the best order
// found is returned with optimal = false and a note.
#include <algorithm>
#include <limits>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <memplan/core/analysis.hpp>
#include <memplan/base/error.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/schedule/detail/memory_facts.hpp>
#include <memplan/schedule/list_scheduler.hpp>
#include <memplan/base/deadline.hpp>
#include <memplan/base/progress.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/stage.hpp>

namespace memplan::schedule {

struct exact {
  double time_limit_s = 10.0;           // default limit (plan_context::time_limit_s overrides; < 0: none)
  std::int32_t max_ops = 64;            // at most 64
  std::int64_t max_states = 4'000'000;  // memoized sets of executed ops (the work limit)

  [[nodiscard]] std::string name() const { return "exact"; }

  [[nodiscard]] schedule_result run(const problem& p, const plan_context& ctx = {}) const {
    const auto n = p.num_ops();
    const auto limit = std::min<std::int32_t>(max_ops, 64);
    if (n > limit)
      throw error(errc::limit_exceeded, "schedule::exact: graph '" + p.name() + "' has " + std::to_string(n) +
                                            " ops, more than its limit of " + std::to_string(limit) +
                                            " ops; use a heuristic (default, best_of) or olla_ilp");
    search s(p, *this, ctx);
    return s.solve();
  }

 private:
  using mask = std::uint64_t;
  static mask bit(op_id o) { return mask{1} << static_cast<unsigned>(o); }

  class search {
   public:
    search(const problem& p, const exact& cfg, const plan_context& ctx)
        : p_(p), cfg_(cfg), ctx_(ctx), mf_(p), clock_(deadline::after(ctx.time_limit_or(cfg.time_limit_s))) {
      const auto n = static_cast<std::size_t>(p.num_ops());
      full_ = n == 64 ? ~mask{0} : (bit(static_cast<op_id>(n)) - 1);
      pred_.assign(n, 0);
      desc_.assign(n, 0);
      for (std::size_t o = 0; o < n; ++o)
        for (auto q : p.preds(static_cast<op_id>(o))) pred_[o] |= bit(q);
      const auto topo = topological_order(p);
      for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
        auto& d = desc_[static_cast<std::size_t>(*it)];
        d = bit(*it);
        for (auto w : p.succs(*it)) d |= desc_[static_cast<std::size_t>(w)];
      }
      for (storage_id s = 0; s < p.num_storages(); ++s) {
        if (p.storage_bytes(s) == 0 || p.resident(s)) continue;
        if (p.live_at_start_only(s)) continue;
        tracked st;
        st.s = s;
        st.bytes = p.storage_bytes(s);
        st.alloc = p.preexisting(s) ? mask{0} : bit(p.storage_allocator(s));
        for (auto u : p.storage_users(s)) st.users |= bit(u);
        st.to_end = p.live_to_end(s);
        storages_.push_back(st);
      }
      local_.assign(n, 0);
      for (std::size_t o = 0; o < n; ++o) {
        local_[o] = p.resident_bytes() + p.workspace(static_cast<op_id>(o));
        for (const auto& st : storages_)
          if (st.users & bit(static_cast<op_id>(o))) local_[o] += st.bytes;
      }
    }

    schedule_result solve() {
      schedule_result r;
      r.policy = "exact";
      const auto n = p_.num_ops();
      if (n == 0) {
        r.peak = p_.resident_bytes();
        r.lower_bound = r.peak;
        r.optimal = true;
        return r;
      }
      // Incumbent: the best memory-aware list schedule.
      for (auto h : {peak_aware(), min_net_growth(), lookahead(), max_free(), depth_first()}) {
        auto o = h.order(p_);
        const auto pk = peak_of(p_, o);
        if (best_order_.empty() || pk < ub_) { ub_ = pk; best_order_ = std::move(o); }
      }
      lb_ = ctx_.order_bound(p_);
      report(ctx_.progress, "exact", "incumbent from list schedulers", clock_.elapsed(), ub_, lb_);
      if (ub_ > lb_) {
        path_.reserve(static_cast<std::size_t>(n));
        dfs(0, mf_.initial_live, 0);
      }
      r.order = best_order_;
      r.peak = peak_of(p_, r.order);
      if (aborted_) {
        r.lower_bound = lb_;
        r.optimal = r.peak == lb_;
        r.note = "exact: time limit " + std::to_string(clock_.limit()) + " s hit after " + std::to_string(memo_.size()) +
                 " states; best found, not proven optimal";
      } else {
        r.lower_bound = r.peak;  // proven minimum
        r.optimal = true;
        r.note = ub_ <= lb_ && memo_.empty() ? "exact: a list schedule reached the lower bound"
                                             : "exact: proven optimal, " + std::to_string(memo_.size()) + " states";
      }
      return r;
    }

   private:
    struct tracked {
      storage_id s = 0;
      std::int64_t bytes = 0;
      mask alloc = 0, users = 0;
      bool to_end = false;
    };

    // Live bytes after running `done` (storages only), for the per-set bound.
    [[nodiscard]] bool live_after(const tracked& st, mask done) const {
      const bool allocated = st.alloc == 0 || (st.alloc & done);
      return allocated && (st.to_end || (st.users & ~done));
    }

    // Bytes live after running op o from set S (live = live bytes after S).
    [[nodiscard]] std::int64_t after(op_id o, mask S, std::int64_t live) const {
      const auto S2 = S | bit(o);
      live += mf_.alloc[static_cast<std::size_t>(o)];
      for (auto s : p_.touched(o)) {
        const auto si = static_cast<std::size_t>(s);
        if (!mf_.freeable[si]) continue;
        mask users = 0;
        for (auto u : p_.storage_users(s)) users |= bit(u);
        if ((users & ~S2) == 0) live -= p_.storage_bytes(s);
      }
      return live;
    }

    void dfs(mask S, std::int64_t live, std::int64_t g) {
      if (aborted_) return;
      if (S == full_) {
        if (g < ub_) {
          ub_ = g;
          best_order_ = path_;
          report(ctx_.progress, "exact", "improved", clock_.elapsed(), ub_, lb_);
        }
        return;
      }
      if ((nodes_++ & 1023) == 0 && clock_.expired()) { aborted_ = true; return; }
      if (auto it = memo_.find(S); it != memo_.end()) {
        if (it->second <= g) return;
        it->second = g;
      } else {
        if (static_cast<std::int64_t>(memo_.size()) >= cfg_.max_states)
          throw error(errc::limit_exceeded, "schedule::exact: graph '" + p_.name() + "' (" + std::to_string(p_.num_ops()) +
                                                " ops) needs more than " + std::to_string(cfg_.max_states) +
                                                " search states (max_states); use a heuristic (default, best_of) or olla_ilp");
        memo_.emplace(S, g);
      }
      const auto n = p_.num_ops();
      const std::int64_t step0 = S == 0 ? mf_.step0_only : 0;
      // Ready ops and their steps.
      struct cand { std::int64_t step, after; op_id o; };
      cand c[64];
      int nc = 0;
      std::int64_t next_min = std::numeric_limits<std::int64_t>::max();
      for (op_id o = 0; o < n; ++o) {
        if ((S & bit(o)) || (pred_[static_cast<std::size_t>(o)] & ~S)) continue;
        const auto step = live + mf_.alloc[static_cast<std::size_t>(o)] + p_.workspace(o) + step0;
        c[nc++] = {step, after(o, S, live), o};
        next_min = std::min(next_min, step);
      }
      if (std::max(g, next_min) >= ub_) return;
      // (b) what every remaining op must see live.
      std::int64_t h = 0;
      const auto rest = full_ & ~S;
      for (op_id v = 0; v < n; ++v) {
        if (!(rest & bit(v))) continue;
        auto need = local_[static_cast<std::size_t>(v)];
        const auto dv = desc_[static_cast<std::size_t>(v)];
        for (const auto& st : storages_) {
          if (st.users & bit(v)) continue;  // counted in local_
          if (!live_after(st, S)) continue;
          if (st.to_end || (st.users & rest & dv)) need += st.bytes;
        }
        h = std::max(h, need);
        if (h >= ub_) return;
      }
      // Dominance: a free, non-growing op goes first.
      for (int k = 0; k < nc; ++k)
        if (c[k].step <= g && c[k].after <= live) {
          c[0] = c[k];
          nc = 1;
          break;
        }
      std::sort(c, c + nc, [](const cand& a, const cand& b) { return a.step != b.step ? a.step < b.step : a.o < b.o; });
      for (int k = 0; k < nc; ++k) {
        const auto g2 = std::max(g, c[k].step);
        if (g2 >= ub_) break;  // sorted by step: the rest are no better
        path_.push_back(c[k].o);
        dfs(S | bit(c[k].o), c[k].after, g2);
        path_.pop_back();
        if (aborted_) return;
      }
    }

    const problem& p_;
    const exact& cfg_;
    const plan_context& ctx_;
    detail::memory_facts mf_;
    deadline clock_;
    mask full_ = 0;
    std::vector<mask> pred_, desc_;
    std::vector<tracked> storages_;
    std::vector<std::int64_t> local_;
    std::unordered_map<mask, std::int64_t> memo_;
    std::vector<op_id> path_, best_order_;
    std::int64_t ub_ = 0, lb_ = 0, nodes_ = 0;
    bool aborted_ = false;
  };
};

static_assert(scheduler<exact>);

}  // namespace memplan::schedule
