#pragma once
// place::exact -- branch and bound that proves the minimum arena, or returns its best placement with the
// remaining gap when its node or time limit hits.
//
// Search space (after MiniMalloc, Moffitt ASPLOS 2023): *canonical* placements. Push every unpinned
// buffer down as far as it goes: each then sits at offset 0 or directly on (the aligned end of) a buffer
// live at the same time, and no arena grows. Listing the buffers by increasing offset, each one's offset
// is the aligned maximum end of the overlapping buffers listed before it -- so a placement is determined
// by an order, and the search branches on which buffer comes next, at its lowest possible offset, only
// allowing orders sorted by (offset, static preorder) (each canonical placement is reached exactly once).
// Pinned buffers join the order at their fixed offset; a branch where one of them would already be
// covered is dead.
// Pruning: (a) dominance: a candidate whose offset is at or above the lowest height some other unplaced
// buffer could reach now would leave a gap that buffer could fill; (b) section inference: the buffers
// still to place in a section (a maximal time interval without endpoints) stack above max(floor of the
// section, current offset), so floor + their total size must fit the target; (c) the target itself.
// Optimisation is a sequence of such feasibility searches: at the lower bound (arena_lower_bound: the
// max resident bytes, OLLA eq. 13 / the max clique of the interval graph) first -- the usual answer is
// zero fragmentation -- then a binary search between the proven bound and the incumbent from the greedy
// heuristics. A search that finishes without a placement proves the target infeasible and raises the
// bound. Static preorders (MiniMalloc's "WAT", "TAW", "TWA": lifetime width, area, section total) are
// tried round robin with a doubling node budget, as MiniMalloc does.
//
// Deterministic for a given node_limit; a time_limit that cuts the search may change the outcome.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/place/best_fit.hpp>
#include <memplan/place/buffer.hpp>
#include <memplan/place/detail/support.hpp>
#include <memplan/place/greedy_by_breadth.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/place/lower_bound.hpp>

namespace memplan::place {

namespace detail {

// Feasibility search: is there a placement with arena <= target? (canonical orders, see above)
class canonical_search {
 public:
  enum class outcome { found, infeasible, aborted };

  explicit canonical_search(const buffer_problem& p) : p_(&p) {
    const auto n = p.buffers.size();
    for (std::size_t i = 0; i < n; ++i)
      if (p.buffers[i].size > 0) active_.push_back(i);
    const auto m = active_.size();
    size_.resize(m);
    align_.resize(m);
    fixed_.resize(m);
    const time_axis axis(p);
    // Sections are the cross sections just before some buffer ends (as in MiniMalloc's sweep): the
    // maximal cliques of the interval graph. An elementary segment followed by no end is contained in
    // the next cross section (same buffers or fewer, none placed above), so checking it adds nothing.
    const int elementary = std::max(0, axis.sections());
    std::vector<char> ends(static_cast<std::size_t>(elementary), 0);
    for (auto i : active_) ends[static_cast<std::size_t>(axis.index(p.buffers[i].upper) - 1)] = 1;
    std::vector<int> rank(static_cast<std::size_t>(elementary) + 1, 0);  // kept sections before segment s
    for (int e = 0; e < elementary; ++e)
      rank[static_cast<std::size_t>(e) + 1] = rank[static_cast<std::size_t>(e)] + ends[static_cast<std::size_t>(e)];
    sections_ = rank[static_cast<std::size_t>(elementary)];
    lo_.resize(m);
    hi_.resize(m);
    std::vector<std::size_t> local(n, 0);
    for (std::size_t k = 0; k < m; ++k) {
      const auto& b = p.buffers[active_[k]];
      local[active_[k]] = k;
      size_[k] = b.size;
      align_[k] = effective_alignment(p, b);
      fixed_[k] = b.fixed_offset;
      lo_[k] = rank[static_cast<std::size_t>(axis.index(b.lower))];
      hi_[k] = rank[static_cast<std::size_t>(axis.index(b.upper))];
    }
    overlaps_.resize(m);
    interval_index index(p, axis);
    for (std::size_t k = 0; k < m; ++k) {
      const auto& b = p.buffers[active_[k]];
      index.for_each_overlapping(b.lower, b.upper, [&](std::size_t j) {
        overlaps_[k].push_back(static_cast<int>(local[j]));
        overlaps_[local[j]].push_back(static_cast<int>(k));
      });
      index.insert(active_[k]);
    }
    section_total_.assign(static_cast<std::size_t>(sections_), 0);
    section_buffers_.resize(static_cast<std::size_t>(sections_));
    for (std::size_t k = 0; k < m; ++k)
      for (int s = lo_[k]; s < hi_[k]; ++s) {
        section_total_[static_cast<std::size_t>(s)] += size_[k];
        section_buffers_[static_cast<std::size_t>(s)].push_back(static_cast<int>(k));
      }
  }

  [[nodiscard]] std::size_t size() const { return active_.size(); }
  [[nodiscard]] std::int64_t nodes() const { return nodes_; }

  // Static preorder from a heuristic string over W (lifetime width), A (area), T (max section total).
  [[nodiscard]] std::vector<int> preorder(const std::string& keys) const {
    const auto m = active_.size();
    std::vector<std::int64_t> total(m, 0);
    for (std::size_t k = 0; k < m; ++k)
      for (int s = lo_[k]; s < hi_[k]; ++s) total[k] = std::max(total[k], section_total_[static_cast<std::size_t>(s)]);
    std::vector<int> order(m);
    for (std::size_t k = 0; k < m; ++k) order[k] = static_cast<int>(k);
    auto width = [&](int k) { return p_->buffers[active_[static_cast<std::size_t>(k)]].upper - p_->buffers[active_[static_cast<std::size_t>(k)]].lower; };
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      for (char c : keys) {
        std::int64_t x = 0, y = 0;
        if (c == 'W') { x = width(a); y = width(b); }
        if (c == 'A') { x = width(a) * size_[static_cast<std::size_t>(a)]; y = width(b) * size_[static_cast<std::size_t>(b)]; }
        if (c == 'T') { x = total[static_cast<std::size_t>(a)]; y = total[static_cast<std::size_t>(b)]; }
        if (x != y) return x > y;
      }
      return a < b;
    });
    return order;
  }

  // Searches placements with arena <= target; on `found`, offsets (indexed like the problem's buffers,
  // zero-size buffers at 0 or their pin) hold one.
  outcome decide(std::int64_t target, const std::vector<int>& preorder, std::int64_t node_budget, const deadline& until,
                 std::vector<std::int64_t>& offsets) {
    const auto m = active_.size();
    target_ = target;
    budget_ = node_budget < 0 ? -1 : nodes_ + node_budget;
    until_ = &until;
    rank_.assign(m, 0);
    for (std::size_t r = 0; r < m; ++r) rank_[static_cast<std::size_t>(preorder[r])] = static_cast<int>(r);
    off_.assign(m, -1);
    best_.assign(m, -1);
    min_off_.assign(m, 0);
    floor_.assign(static_cast<std::size_t>(sections_), 0);
    total_ = section_total_;
    stamp_.assign(static_cast<std::size_t>(sections_), 0);
    cuts_.assign(static_cast<std::size_t>(std::max(0, sections_ - 1)), 0);
    for (std::size_t k = 0; k < m; ++k)
      for (int s = lo_[k]; s + 1 < hi_[k]; ++s) ++cuts_[static_cast<std::size_t>(s)];
    for (std::size_t k = 0; k < m; ++k)
      if (size_[k] > target || (fixed_[k] >= 0 && fixed_[k] + size_[k] > target)) return outcome::infeasible;
    for (auto t : total_)
      if (t > target) return outcome::infeasible;
    part all;
    all.lo = 0;
    all.hi = sections_;
    for (std::size_t k = 0; k < m; ++k) all.buffers.push_back(static_cast<int>(k));
    const auto r = solve_split(all);
    if (r == outcome::found) {
      offsets.assign(p_->buffers.size(), 0);
      for (std::size_t i = 0; i < p_->buffers.size(); ++i)
        if (p_->buffers[i].fixed_offset >= 0) offsets[i] = p_->buffers[i].fixed_offset;
      for (std::size_t k = 0; k < m; ++k) offsets[active_[k]] = best_[k];
    }
    return r;
  }

 private:
  struct cand { std::int64_t key; int rank; int k; };
  struct change { int k; std::int64_t old; };
  // A set of unplaced buffers whose lifetimes lie in sections [lo, hi) and that no unplaced buffer
  // outside it overlaps: it can be solved on its own (MiniMalloc's dynamic temporal decomposition).
  struct part {
    int lo = 0, hi = 0;
    std::vector<int> buffers;
  };

  // Splits `pt` where no unplaced buffer crosses a section boundary and solves the pieces one by one
  // (each restarts its canonical order); all must succeed.
  outcome solve_split(const part& pt) {
    std::vector<int> cutpoints;
    for (int s = pt.lo; s + 1 < pt.hi; ++s)
      if (cuts_[static_cast<std::size_t>(s)] == 0) cutpoints.push_back(s + 1);
    if (cutpoints.empty()) return search(pt, 0, -1);
    cutpoints.push_back(pt.hi);
    int from = pt.lo;
    for (int to : cutpoints) {
      part sub;
      sub.lo = from;
      sub.hi = to;
      for (int k : pt.buffers) {
        const auto sk = static_cast<std::size_t>(k);
        if (off_[sk] < 0 && lo_[sk] < to && from < hi_[sk]) sub.buffers.push_back(k);
      }
      from = to;
      if (sub.buffers.empty()) continue;
      if (auto r = search(sub, 0, -1); r != outcome::found) return r;
    }
    return outcome::found;
  }

  outcome search(const part& pt, std::int64_t last_off, int last_rank) {
    if (++nodes_ > budget_ && budget_ >= 0) return outcome::aborted;  // budget_ is absolute
    if ((nodes_ & 255) == 0 && until_->expired()) return outcome::aborted;
    std::int64_t min_height = std::numeric_limits<std::int64_t>::max();
    bool any = false;
    for (int k : pt.buffers) {
      const auto sk = static_cast<std::size_t>(k);
      if (off_[sk] >= 0) continue;
      any = true;
      std::int64_t key = min_off_[sk];
      if (fixed_[sk] >= 0) {
        if (key > fixed_[sk]) return outcome::infeasible;  // a pinned buffer is already covered
        key = fixed_[sk];
      }
      min_height = std::min(min_height, key + size_[sk]);
    }
    if (!any) return outcome::found;  // every buffer of this part stored its offset when placed
    std::vector<cand> cands;
    for (int k : pt.buffers) {
      const auto sk = static_cast<std::size_t>(k);
      if (off_[sk] >= 0) continue;
      const std::int64_t key = fixed_[sk] >= 0 ? fixed_[sk] : min_off_[sk];
      const int rank = rank_[sk];
      if (key < last_off || (key == last_off && rank < last_rank)) continue;  // not canonical
      if (key >= min_height) continue;                                         // dominated
      if (key + size_[sk] > target_) continue;
      cands.push_back({key, rank, k});
    }
    // Candidates in (offset, preorder) order, popped from a heap: a dive usually needs only the first.
    const auto later = [](const cand& a, const cand& b) { return a.key != b.key ? a.key > b.key : a.rank > b.rank; };
    std::make_heap(cands.begin(), cands.end(), later);
    std::vector<change> offs, floors;
    std::vector<int> affected;
    while (!cands.empty()) {
      std::pop_heap(cands.begin(), cands.end(), later);
      const cand c = cands.back();
      cands.pop_back();
      const auto k = static_cast<std::size_t>(c.k);
      const auto top = c.key + size_[k];
      off_[k] = c.key;
      best_[k] = c.key;
      offs.clear();
      floors.clear();
      affected.clear();
      ++epoch_;
      bool dead = false;
      for (int o : overlaps_[k]) {
        const auto so = static_cast<std::size_t>(o);
        if (off_[so] >= 0 || min_off_[so] >= top) continue;
        offs.push_back({o, min_off_[so]});
        min_off_[so] = (top + align_[so] - 1) & ~(align_[so] - 1);  // align_up for a power of two
        if (fixed_[so] >= 0 ? min_off_[so] > fixed_[so] : min_off_[so] + size_[so] > target_) dead = true;
        // Sections of o outside c's span (inside it the floor is top already, see below).
        auto mark = [&](int from, int to) {
          for (int s = from; s < to; ++s)
            if (stamp_[static_cast<std::size_t>(s)] != epoch_) {
              stamp_[static_cast<std::size_t>(s)] = epoch_;
              affected.push_back(s);
            }
        };
        mark(lo_[so], std::min(hi_[so], lo_[k]));
        mark(std::max(lo_[so], hi_[k]), hi_[so]);
      }
      for (int s = lo_[k]; s < hi_[k]; ++s) {
        const auto ss = static_cast<std::size_t>(s);
        floors.push_back({s, floor_[ss]});
        floor_[ss] = std::max(floor_[ss], top);
        total_[ss] -= size_[k];
      }
      // Unallocated floor (MiniMalloc): a section's remaining buffers start no lower than their least
      // min offset. Inside c's own span every remaining buffer overlaps c, so the floor is already top
      // there; elsewhere the scan stops at the first buffer that cannot raise the floor above what the
      // check uses anyway (max of floor and c's offset).
      for (int s : affected) {
        const auto ss = static_cast<std::size_t>(s);
        if (total_[ss] == 0 || (lo_[k] <= s && s < hi_[k])) continue;
        const auto known = std::max(floor_[ss], c.key);
        std::int64_t least = std::numeric_limits<std::int64_t>::max();
        for (int o : section_buffers_[ss]) {
          const auto so = static_cast<std::size_t>(o);
          if (off_[so] >= 0) continue;
          least = std::min(least, min_off_[so]);
          if (least <= known) break;
        }
        if (least != std::numeric_limits<std::int64_t>::max() && least > floor_[ss]) {
          floors.push_back({s, floor_[ss]});
          floor_[ss] = least;
        }
      }
      if (!dead) {
        for (int s = pt.lo; s < pt.hi; ++s) {
          const auto ss = static_cast<std::size_t>(s);
          if (total_[ss] > 0 && std::max(floor_[ss], c.key) + total_[ss] > target_) { dead = true; break; }
        }
      }
      outcome r = outcome::infeasible;
      if (!dead) {
        bool split = false;
        for (int s = lo_[k]; s + 1 < hi_[k]; ++s)
          if (--cuts_[static_cast<std::size_t>(s)] == 0 && s >= pt.lo && s + 1 < pt.hi) split = true;
        r = split ? solve_split(pt) : search(pt, c.key, c.rank);
        for (int s = lo_[k]; s + 1 < hi_[k]; ++s) ++cuts_[static_cast<std::size_t>(s)];
      }
      for (auto it = floors.rbegin(); it != floors.rend(); ++it) floor_[static_cast<std::size_t>(it->k)] = it->old;
      for (int s = lo_[k]; s < hi_[k]; ++s) total_[static_cast<std::size_t>(s)] += size_[k];
      for (auto it = offs.rbegin(); it != offs.rend(); ++it) min_off_[static_cast<std::size_t>(it->k)] = it->old;
      off_[k] = -1;
      if (r != outcome::infeasible) return r;
    }
    return outcome::infeasible;
  }

  const buffer_problem* p_;
  std::vector<std::size_t> active_;
  std::vector<std::int64_t> size_, align_, fixed_;
  std::vector<int> lo_, hi_;
  std::vector<std::vector<int>> overlaps_, section_buffers_;
  int sections_ = 0;
  std::vector<std::int64_t> section_total_;
  // search state
  std::int64_t target_ = 0, budget_ = -1, nodes_ = 0;
  std::uint64_t epoch_ = 0;
  const deadline* until_ = nullptr;
  std::vector<int> rank_, cuts_;
  std::vector<std::uint64_t> stamp_;
  std::vector<std::int64_t> off_, min_off_, floor_, total_, best_;
};

}  // namespace detail

struct exact {
  double time_limit = 10.0;          // seconds of search; <= 0: only the heuristics and the bound
  std::int64_t node_limit = -1;      // total search nodes, < 0: unlimited
  std::size_t max_buffers = 10000;   // above this the search is skipped (the heuristics' best is returned)
  std::int64_t max_overlaps = 20'000'000;  // likewise above this many pairs of buffers live together (memory)
  // >= 0: any arena <= accept is good enough (the decision problem MiniMalloc solves for a capacity):
  // searched right after a short try at the bound, and the search stops once it is met; optimality is
  // then claimed only if proven.
  std::int64_t accept = -1;

  [[nodiscard]] std::string name() const { return "exact"; }

  // Number of pairs of non-empty buffers live at a common step (the search stores them). O(n log n).
  static std::int64_t overlapping_pairs(const buffer_problem& p) {
    std::vector<std::pair<std::int64_t, int>> ev;  // (time, -1 end first / +1 start)
    for (const auto& b : p.buffers)
      if (b.size > 0) { ev.emplace_back(b.lower, 1); ev.emplace_back(b.upper, -1); }
    std::sort(ev.begin(), ev.end());
    std::int64_t live = 0, pairs = 0;
    for (const auto& [t, d] : ev) {
      if (d > 0) pairs += live;
      live += d;
    }
    return pairs;
  }

  [[nodiscard]] buffer_placement place(const buffer_problem& p) const {
    validate(p);
    const auto started = detail::deadline::after(time_limit);
    const auto relaxed = detail::without_capacity(p);
    // Incumbent: the best of the greedy heuristics.
    buffer_placement incumbent;
    for (auto&& pl : {greedy_by_size{}.place(relaxed), best_fit{}.place(relaxed), greedy_by_breadth{}.place(relaxed)})
      if (incumbent.offsets.empty() || pl.arena < incumbent.arena) incumbent = pl;
    return improve(p, incumbent, started.seconds_left());
  }

  // Searches below a given valid placement of p (without its capacity) for `seconds` (the time_limit is
  // ignored here); used by default_placer to reuse its heuristics' best.
  [[nodiscard]] buffer_placement improve(const buffer_problem& p, const buffer_placement& incumbent, double seconds) const {
    validate(p);
    if (incumbent.offsets.size() != p.buffers.size())
      throw error(errc::invalid_argument, "exact::improve: the incumbent has " + std::to_string(incumbent.offsets.size()) +
                                              " offsets for " + std::to_string(p.buffers.size()) + " buffers");
    const auto until = detail::deadline::after(std::max(0.0, seconds));
    std::vector<std::int64_t> best = incumbent.offsets;
    std::int64_t best_arena = 0;
    for (std::size_t i = 0; i < p.buffers.size(); ++i) best_arena = std::max(best_arena, best[i] + p.buffers[i].size);
    std::int64_t proven = arena_lower_bound(p);
    std::int64_t nodes = 0;
    std::string how = "incumbent from greedy heuristics";
    bool accepted = accept >= 0 && best_arena <= accept;
    const std::int64_t want = std::min(best_arena - 1, p.capacity);  // search arenas <= want
    if (best_arena > proven && seconds > 0 && node_limit != 0 && !(accept >= 0 && best_arena <= accept)) {
      const auto pairs = overlapping_pairs(p);
      if (p.buffers.size() > max_buffers || pairs > max_overlaps) {
        how = "search skipped: " + std::to_string(p.buffers.size()) + " buffers, " + std::to_string(pairs) +
              " overlapping pairs (limits " + std::to_string(max_buffers) + ", " + std::to_string(max_overlaps) + ")";
      } else {
        detail::canonical_search search(p);
        const std::vector<std::vector<int>> orders{search.preorder("WAT"), search.preorder("TAW"), search.preorder("TWA")};
        std::int64_t lo = proven, hi = want;
        // Targets: the bound first (zero fragmentation is the usual optimum: 80 % of the time, or 10 %
        // when an accept level above it is given, which comes second with 80 % of what is left), then
        // a binary search between the proven bound and the incumbent with half of what is left each.
        const bool accept_above = accept > lo;
        int step = 0;
        while (lo <= hi && !until.expired() && (node_limit < 0 || nodes < node_limit)) {
          std::int64_t target = lo + (hi - lo) / 2;
          double share = 0.5;
          if (step == 0) { target = lo; share = accept_above ? 0.1 : 0.8; }
          if (step == 1 && accept_above && accept >= lo) { target = std::min(accept, hi); share = 0.8; }
          ++step;
          const auto slice = detail::deadline::after(until.seconds_left() * share);
          std::vector<std::int64_t> found;
          auto r = detail::canonical_search::outcome::aborted;
          std::int64_t budget = static_cast<std::int64_t>(std::max<std::size_t>(search.size(), 16));
          while (r == detail::canonical_search::outcome::aborted && !slice.expired()) {
            budget *= 2;
            bool done = false;
            for (const auto& order : orders) {
              auto left = node_limit < 0 ? budget : std::min(budget, node_limit - nodes);
              if (left <= 0) { done = true; break; }
              const auto before = search.nodes();
              r = search.decide(target, order, left, slice, found);
              nodes += search.nodes() - before;
              if (r != detail::canonical_search::outcome::aborted) break;
            }
            if (done || (node_limit >= 0 && nodes >= node_limit)) break;
          }
          if (r == detail::canonical_search::outcome::found) {
            std::int64_t arena = 0;
            for (std::size_t i = 0; i < p.buffers.size(); ++i) arena = std::max(arena, found[i] + p.buffers[i].size);
            best = std::move(found);
            best_arena = arena;
            hi = arena - 1;
            how = "canonical search";
            if (accept >= 0 && arena <= accept) { accepted = true; break; }
          } else if (r == detail::canonical_search::outcome::infeasible) {
            proven = target + 1;
            lo = target + 1;
          } else {
            lo = target + 1;  // unknown: look higher for a better incumbent, the bound stays
            if (until.expired() || (node_limit >= 0 && nodes >= node_limit)) break;
          }
        }
      }
    }
    proven = std::min(proven, best_arena);
    std::string note = how + ", " + std::to_string(nodes) + " nodes; ";
    if (best_arena == proven) note += "proven optimal";
    else
      note += std::string(accepted ? "accepted (arena <= " + std::to_string(accept) + ")" : "limit hit") + ": arena " + std::to_string(best_arena) + " vs proven bound " + std::to_string(proven) + " (gap " +
              std::to_string(best_arena - proven) + " bytes)";
    if (best_arena > p.capacity) {
      if (proven > p.capacity)
        throw error(errc::infeasible, "placer exact: no placement fits the capacity " + std::to_string(p.capacity) +
                                          ": proven lower bound " + std::to_string(proven) + " (best arena reached " +
                                          std::to_string(best_arena) + ")");
    }
    return detail::finish(p, std::move(best), name(), note, proven, best_arena == proven);
  }
};

}  // namespace memplan::place
