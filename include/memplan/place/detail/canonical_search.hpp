#pragma once
// The feasibility search behind place::exact: is there a placement with arena <= target? It walks
// *canonical* placements (after MiniMalloc, Moffitt ASPLOS 2023): push every unpinned buffer down until
// it rests on a buffer live at the same time (or on 0); no arena grows, and the placement is then fixed
// by the order of the buffers by offset, each sitting at the aligned maximum end of the overlapping
// buffers before it. The search branches on the next buffer of that order, at its lowest offset, and
// only allows orders sorted by (offset, preorder rank), so each canonical placement is reached once.
// Pinned buffers join the order at their fixed offsets; a branch that already covers one is dead.
//
// Pruning (each one keeps at least one optimal canonical placement reachable):
//  * dominance: a candidate at or above the lowest top another unplaced buffer could reach now would
//    leave a gap that buffer fills (lowering it keeps the placement valid and the sum of offsets drops);
//  * section inference: the unplaced buffers of a section (a maximal set of buffers live together) are
//    stacked above the lowest offset any of them can take and above the current offset, so that plus
//    their total size must fit the target. Kept incrementally: section totals in a range-add / range-max
//    tree (the check against the current offset is one O(log S) query instead of a scan of every
//    section), and the "unallocated floor" only re-examined in sections whose buffers just moved up,
//    each scan stopping at the first buffer that still fits;
//  * hatless pruning: when the placed buffer has no unplaced buffer live with it, its offset is the
//    same in every completion, so if its subtree fails the node fails;
//  * identical buffers (same lifetime, size, alignment, unpinned) are interchangeable: they are placed
//    in index order only;
//  * dynamic temporal decomposition: when no unplaced buffer crosses a section boundary the two sides
//    are solved one after the other, each with a fresh canonical order and a preorder recomputed from
//    the *remaining* section totals (MiniMalloc's SubSolve; recomputing the preorder is what makes the
//    hard instances E, H and I of its benchmark fall within a second here).
// Preorders are key strings over W (lifetime width), A (area = width x size) and T (largest remaining
// total of a section the buffer lives in), compared in turn, larger first; ties by buffer index.
//
// The constructor checks a deadline while it builds the overlap lists (O(n log n + pairs)); decide()
// checks its own at every node and candidate and stops at a node limit. Deterministic for a given node limit.
// The search is a loop over an explicit stack of frames (no recursion): its depth, one level per placed
// buffer, costs heap memory, not the caller's thread stack.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <span>
#include <vector>

#include <memplan/core/buffer.hpp>
#include <memplan/place/detail/support.hpp>

namespace memplan::place::detail {

// A lossy, fixed-size table of 128-bit fingerprints of search states proven to fail.
class failure_cache {
 public:
  void reset(std::size_t log2_entries) {
    keys_.assign(std::size_t{1} << log2_entries, {0, 0});
    mask_ = keys_.size() - 1;
  }
  [[nodiscard]] bool contains(std::uint64_t a, std::uint64_t b) const {
    const auto& e = keys_[a & mask_];
    return e.first == a && e.second == b;
  }
  void insert(std::uint64_t a, std::uint64_t b) { keys_[a & mask_] = {a, b}; }
  [[nodiscard]] bool empty() const { return keys_.empty(); }

 private:
  std::vector<std::pair<std::uint64_t, std::uint64_t>> keys_;
  std::size_t mask_ = 0;
};

inline std::uint64_t mix64(std::uint64_t x) {  // splitmix64 finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

class canonical_search {
 public:
  enum class outcome { found, infeasible, aborted };

  // Builds sections and overlap lists; stops early (ready() == false) when `until` expires.
  // `max_section_entries`: above this many (buffer, section) memberships the search is not built
  // (memory: 4 bytes each; too_big() says so).
  canonical_search(const buffer_problem& p, const deadline& until, std::int64_t max_section_entries = 50'000'000) : p_(&p) {
    const auto n = p.buffers.size();
    for (std::size_t i = 0; i < n; ++i)
      if (p.buffers[i].size > 0) active_.push_back(i);
    const auto m = active_.size();
    size_.resize(m);
    align_.resize(m);
    fixed_.resize(m);
    const time_axis axis(p);
    // Sections are the cross sections just before some buffer ends: the maximal cliques of the interval
    // graph. An elementary segment followed by no end lies inside the next cross section.
    const int elementary = std::max(0, axis.sections());
    std::vector<char> ends(static_cast<std::size_t>(elementary), 0);
    for (auto i : active_) ends[static_cast<std::size_t>(axis.index(p.buffers[i].upper) - 1)] = 1;
    std::vector<int> rank(static_cast<std::size_t>(elementary) + 1, 0);
    for (int e = 0; e < elementary; ++e)
      rank[static_cast<std::size_t>(e) + 1] = rank[static_cast<std::size_t>(e)] + ends[static_cast<std::size_t>(e)];
    sections_ = rank[static_cast<std::size_t>(elementary)];
    lo_.resize(m);
    hi_.resize(m);
    std::vector<int> local(n, -1);
    for (std::size_t k = 0; k < m; ++k) {
      const auto& b = p.buffers[active_[k]];
      local[active_[k]] = static_cast<int>(k);
      size_[k] = b.size;
      align_[k] = effective_alignment(p, b);
      fixed_[k] = b.fixed_offset;
      lo_[k] = rank[static_cast<std::size_t>(axis.index(b.lower))];
      hi_[k] = rank[static_cast<std::size_t>(axis.index(b.upper))];
    }
    std::int64_t entries = 0;
    for (std::size_t k = 0; k < m; ++k) entries += hi_[k] - lo_[k];
    if (entries > max_section_entries) { too_big_ = true; return; }
    // Overlaps by a sweep in order of lower ends, into one flat array (compressed rows): millions of
    // small vectors cost a page fault or a reallocation per few pushes, and the build overran a 0.2 s
    // limit by 10-30 % on a 4k-buffer training graph. A row's length, the buffers that overlap it,
    // comes from binary searches: #(lower < hi) - #(upper <= lo) - 1.
    std::vector<int> by_lower(m);
    for (std::size_t k = 0; k < m; ++k) by_lower[k] = static_cast<int>(k);
    std::sort(by_lower.begin(), by_lower.end(), [&](int a, int b) {
      return p.buffers[active_[static_cast<std::size_t>(a)]].lower < p.buffers[active_[static_cast<std::size_t>(b)]].lower;
    });
    {
      std::vector<std::int64_t> lowers(m), uppers(m);
      for (std::size_t k = 0; k < m; ++k) {
        lowers[k] = p.buffers[active_[k]].lower;
        uppers[k] = p.buffers[active_[k]].upper;
      }
      std::sort(lowers.begin(), lowers.end());
      std::sort(uppers.begin(), uppers.end());
      overlaps_.start.assign(m + 1, 0);
      for (std::size_t k = 0; k < m; ++k) {
        const auto& b = p.buffers[active_[k]];
        const auto starts_before_end = std::lower_bound(lowers.begin(), lowers.end(), b.upper) - lowers.begin();
        const auto ends_before_start = std::upper_bound(uppers.begin(), uppers.end(), b.lower) - uppers.begin();
        overlaps_.start[k + 1] = overlaps_.start[k] + static_cast<std::size_t>(starts_before_end - ends_before_start - 1);
      }
      overlaps_.allocate();
    }
    // Filled in the sweep's order (each row lists the earlier-starting overlaps first, then the later).
    std::vector<std::size_t> fill(overlaps_.start.begin(), overlaps_.start.end() - 1);
    std::vector<int> live;
    // The clock is read every 64k list entries (a millisecond or so, page faults included).
    constexpr std::size_t check_every = 1 << 16;
    std::size_t work = 0;
    for (int k : by_lower) {
      const auto& b = p.buffers[active_[static_cast<std::size_t>(k)]];
      std::size_t w = 0;
      for (int j : live)
        if (p.buffers[active_[static_cast<std::size_t>(j)]].upper > b.lower) live[w++] = j;
      live.resize(w);
      for (int j : live) {
        overlaps_.items[fill[static_cast<std::size_t>(k)]++] = j;
        overlaps_.items[fill[static_cast<std::size_t>(j)]++] = k;
      }
      live.push_back(k);
      work += 2 * live.size();  // the filter and the row entries
      if (work > check_every) {
        until.charge(static_cast<std::int64_t>(work));
        work = 0;
        if (until.expired()) return;
      }
    }
    section_total_.assign(static_cast<std::size_t>(sections_), 0);
    {  // a section's row length is the number of buffers covering it: a difference array, O(m + S)
      const auto S = static_cast<std::size_t>(sections_);
      std::vector<std::int64_t> delta(S + 1, 0);
      for (std::size_t k = 0; k < m; ++k) {
        ++delta[static_cast<std::size_t>(lo_[k])];
        --delta[static_cast<std::size_t>(hi_[k])];
      }
      section_buffers_.start.assign(S + 1, 0);
      std::int64_t covering = 0;
      for (std::size_t s = 0; s < S; ++s) {
        covering += delta[s];
        section_buffers_.start[s + 1] = section_buffers_.start[s] + static_cast<std::size_t>(covering);
      }
    }
    section_buffers_.allocate();
    fill.assign(section_buffers_.start.begin(), section_buffers_.start.end() - 1);
    for (std::size_t k = 0; k < m; ++k) {
      for (int s = lo_[k]; s < hi_[k]; ++s) {
        section_total_[static_cast<std::size_t>(s)] += size_[k];
        section_buffers_.items[fill[static_cast<std::size_t>(s)]++] = static_cast<int>(k);
      }
      work += static_cast<std::size_t>(hi_[k] - lo_[k]);
      if (work > check_every) {
        until.charge(static_cast<std::int64_t>(work));
        work = 0;
        if (until.expired()) return;
      }
    }
    // Interchangeable buffers are placed in index order: each waits for the previous one of its kind.
    prev_same_.assign(m, -1);
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>, int> last;
    for (std::size_t k = 0; k < m; ++k) {
      if (fixed_[k] >= 0) continue;
      const auto& b = p.buffers[active_[k]];
      auto [it, fresh] = last.emplace(std::make_tuple(b.lower, b.upper, size_[k], align_[k]), static_cast<int>(k));
      if (!fresh) { prev_same_[k] = it->second; it->second = static_cast<int>(k); }
    }
    // Buffers crossing each boundary between sections (dynamic decomposition splits where none does).
    initial_cuts_.assign(static_cast<std::size_t>(std::max(0, sections_ - 1)), 0);
    for (std::size_t k = 0; k < m; ++k)
      if (hi_[k] - lo_[k] > 1) {  // a difference array: O(m + S)
        ++initial_cuts_[static_cast<std::size_t>(lo_[k])];
        if (hi_[k] - 1 < sections_ - 1) --initial_cuts_[static_cast<std::size_t>(hi_[k] - 1)];
      }
    for (std::size_t s = 1; s < initial_cuts_.size(); ++s) initial_cuts_[s] += initial_cuts_[s - 1];
    until.charge(static_cast<std::int64_t>(work + 16 * m));  // the rest of the fill, the sorts and the map
    ready_ = true;
  }

  [[nodiscard]] bool ready() const { return ready_; }
  [[nodiscard]] bool too_big() const { return too_big_; }
  // Offsets of a known placement: preorder key 'O' ranks buffers by them, lowest first.
  void set_hint(std::vector<std::int64_t> offsets) { hint_ = std::move(offsets); }
  [[nodiscard]] std::size_t size() const { return active_.size(); }
  [[nodiscard]] std::int64_t nodes() const { return nodes_; }
  // The most frames live at once in any decide() so far (nodes and splits on the way down).
  [[nodiscard]] std::size_t max_depth() const { return max_depth_; }

  // Searches placements with arena <= target under the preorder `keys`; on `found`, offsets (indexed
  // like the problem's buffers; zero-size buffers at 0 or their pin) hold one.
  outcome decide(std::int64_t target, const std::string& keys, std::int64_t node_limit, const deadline& until,
                 std::vector<std::int64_t>& offsets) {
    if (!ready_ || until.expired()) return outcome::aborted;  // (the constructor may have run out of time)
    const auto m = active_.size();
    target_ = target;
    keys_ = keys;
    memo_ = &memo_for(target, keys);
    node_limit_ = node_limit < 0 ? -1 : nodes_ + node_limit;
    until_ = &until;
    for (std::size_t k = 0; k < m; ++k)
      if (size_[k] > target || (fixed_[k] >= 0 && fixed_[k] + size_[k] > target)) return outcome::infeasible;
    for (auto t : section_total_)
      if (t > target) return outcome::infeasible;
    rank_.assign(m, 0);
    off_.assign(m, -1);
    best_.assign(m, -1);
    min_off_.assign(m, 0);
    total_ = section_total_;
    // A witness per section: an unplaced buffer that can still start low enough for the section's
    // remaining buffers to fit above it (see search()).
    witness_.assign(static_cast<std::size_t>(sections_), -1);
    witness_at_.assign(static_cast<std::size_t>(sections_), 0);
    hat_at_.assign(m, 0);
    witnessing_.assign(m, {});
    for (int sec = 0; sec < sections_; ++sec) {
      const auto ss = static_cast<std::size_t>(sec);
      if (total_[ss] == 0) continue;
      const auto row = section_buffers_[ss];
      for (std::size_t at = 0; at < row.size(); ++at)
        if (const int o = row[at]; (fixed_[static_cast<std::size_t>(o)] >= 0 ? fixed_[static_cast<std::size_t>(o)] : 0) <= target - total_[ss]) {
          witness_[ss] = o;
          witness_at_[ss] = at;
          witnessing_[static_cast<std::size_t>(o)].push_back(sec);
          break;
        }
      if (witness_[ss] < 0) return outcome::infeasible;
    }
    cuts_ = initial_cuts_;
    until.charge(static_cast<std::int64_t>(4 * m) + sections_);  // the state's reset and the witnesses (about)
    part all;
    all.lo = 0;
    all.hi = sections_;
    for (std::size_t k = 0; k < m; ++k) all.buffers.push_back(static_cast<int>(k));
    const auto r = run(all);
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
  // Unplaced buffers whose lifetimes lie in sections [lo, hi), overlapped by no unplaced buffer outside.
  struct part {
    int lo = 0, hi = 0;
    std::vector<int> buffers;
  };

  // Ranks the part's buffers by the current preorder keys (T from the remaining section totals, read
  // from a sparse table of range maxima over the part's sections).
  void rank_part(const part& pt) {
    const int width = pt.hi - pt.lo;
    std::vector<std::vector<std::int64_t>> table(1, std::vector<std::int64_t>(total_.begin() + pt.lo, total_.begin() + pt.hi));
    for (int w = 1; 2 * w <= width; w *= 2) {
      const auto& prev = table.back();
      std::vector<std::int64_t> next(static_cast<std::size_t>(width - 2 * w + 1));
      for (std::size_t i = 0; i < next.size(); ++i) next[i] = std::max(prev[i], prev[i + static_cast<std::size_t>(w)]);
      table.push_back(std::move(next));
    }
    const auto range_max = [&](int lo, int hi) {  // sections [lo, hi) of the part, lo < hi
      lo -= pt.lo;
      hi -= pt.lo;
      std::size_t level = 0;
      while ((2 << level) <= hi - lo) ++level;
      return std::max(table[level][static_cast<std::size_t>(lo)], table[level][static_cast<std::size_t>(hi - (1 << level))]);
    };
    struct key { std::int64_t w, a, t, o; int k; };
    std::vector<key> ks;
    ks.reserve(pt.buffers.size());
    for (int k : pt.buffers) {
      const auto sk = static_cast<std::size_t>(k);
      const auto& b = p_->buffers[active_[sk]];
      const auto w = b.upper - b.lower;
      // The area is only a sort key: it saturates where lifetime x size leaves int64 (sizes reach 2^61).
      std::int64_t area = 0;
      if (__builtin_mul_overflow(w, size_[sk], &area)) area = std::numeric_limits<std::int64_t>::max();
      ks.push_back({w, area, range_max(std::max(lo_[sk], pt.lo), std::min(hi_[sk], pt.hi)),
                    hint_.empty() ? 0 : -hint_[active_[sk]], k});
    }
    std::sort(ks.begin(), ks.end(), [&](const key& x, const key& y) {
      for (char c : keys_) {
        const auto a = c == 'W' ? x.w : c == 'A' ? x.a : c == 'O' ? x.o : x.t;
        const auto b = c == 'W' ? y.w : c == 'A' ? y.a : c == 'O' ? y.o : y.t;
        if (a != b) return a > b;
      }
      return x.k < y.k;
    });
    for (std::size_t r = 0; r < ks.size(); ++r) rank_[static_cast<std::size_t>(ks[r].k)] = static_cast<int>(r);
  }

  // The search runs as a loop over an explicit stack of frames, not as recursion: its depth is one
  // level per placed buffer (up to exact::max_buffers), and recursing that deep overflowed a 256 KB
  // thread stack at -O2 on idealloc's resnet50 (1,042 buffers), and the 8 MB main stack at -O0 under
  // ASan. A frame is either a node (branching on the next buffer of the canonical order) or a split
  // (solving independent pieces of a part in turn). Frames are kept in a deque (references stay valid
  // while it grows) and reused, with their vectors' capacity, by later nodes and later decide() calls.
  struct frame {
    enum class kind : std::uint8_t { node, split } what = kind::node;
    const part* pt = nullptr;
    // node: the canonical restriction from its parent, the state fingerprint, the candidates left (a
    // heap), the one being tried and what taking it changed (undone when its subtree returns).
    std::int64_t last_off = 0;
    int last_rank = -1;
    std::uint64_t h1 = 0, h2 = 0;
    std::vector<cand> cands;
    cand c{};
    std::vector<change> raised, rewitnessed;  // rewitnessed: (section, previous witness), undone in reverse
    std::size_t base = 0;  // the node's block maxima in scratch_
    int blocks = 0;
    std::int64_t part_max = 0;
    int tried = 0;
    bool early = false, hatless = false, descended = false;
    outcome result = outcome::infeasible;
    // split: the cut points, the next piece and its buffers, their ranks before rank_part.
    std::vector<int> cutpoints;
    std::size_t next_cut = 0;
    int from = 0;
    part sub;
    std::vector<int> saved;
  };
  std::deque<frame> frames_;
  std::size_t depth_ = 0;  // frames_[0, depth_) are live
  std::size_t max_depth_ = 0;

  frame& push_frame(frame::kind what, const part& pt) {
    if (depth_ == frames_.size()) frames_.emplace_back();
    auto& f = frames_[depth_++];
    max_depth_ = std::max(max_depth_, depth_);
    f.what = what;
    f.pt = &pt;
    return f;
  }

  // Solves `all` (a split frame at the bottom). Each step either finishes the top frame with an
  // outcome, handed to its parent, or pushes a child frame and returns nothing, so the child starts.
  outcome run(const part& all) {
    depth_ = 0;
    push_frame(frame::kind::split, all);
    std::optional<outcome> r;  // empty: the top frame has just been pushed and must start
    for (;;) {
      auto& top = frames_[depth_ - 1];
      if (!r) {
        r = top.what == frame::kind::split ? start_split(top) : start_node(top);
        continue;
      }
      if (--depth_ == 0) return *r;
      auto& parent = frames_[depth_ - 1];
      r = parent.what == frame::kind::split ? next_piece(parent, *r) : next_candidate(parent, *r);
    }
  }

  // Splits the part where no unplaced buffer crosses a section boundary and solves the pieces in turn,
  // each with its own preorder and a fresh canonical order; all must succeed.
  std::optional<outcome> start_split(frame& f) {
    const part& pt = *f.pt;
    f.cutpoints.clear();
    for (int s = pt.lo; s + 1 < pt.hi; ++s)
      if (cuts_[static_cast<std::size_t>(s)] == 0) f.cutpoints.push_back(s + 1);
    f.cutpoints.push_back(pt.hi);
    f.next_cut = 0;
    f.from = pt.lo;
    return open_piece(f);
  }

  // The next non-empty piece as a child node, or found when none is left.
  std::optional<outcome> open_piece(frame& f) {
    while (f.next_cut < f.cutpoints.size()) {
      const int to = f.cutpoints[f.next_cut++];
      part& sub = f.sub;
      sub.lo = f.from;
      sub.hi = to;
      sub.buffers.clear();
      for (int k : f.pt->buffers) {
        const auto sk = static_cast<std::size_t>(k);
        if (off_[sk] < 0 && lo_[sk] < to && f.from < hi_[sk]) sub.buffers.push_back(k);
      }
      f.from = to;
      until_->charge(static_cast<std::int64_t>(f.pt->buffers.size()));
      if (sub.buffers.empty()) continue;
      f.saved.resize(sub.buffers.size());
      for (std::size_t i = 0; i < f.saved.size(); ++i) f.saved[i] = rank_[static_cast<std::size_t>(sub.buffers[i])];
      rank_part(sub);
      until_->charge(static_cast<std::int64_t>(8 * sub.buffers.size()) + (sub.hi - sub.lo));  // the sort and the table
      auto& child = push_frame(frame::kind::node, sub);
      child.last_off = 0;
      child.last_rank = -1;
      return std::nullopt;
    }
    return outcome::found;
  }

  // A piece returned r: its ranks are restored, and the split goes on only if it was found.
  std::optional<outcome> next_piece(frame& f, outcome r) {
    for (std::size_t i = 0; i < f.saved.size(); ++i) rank_[static_cast<std::size_t>(f.sub.buffers[i])] = f.saved[i];
    if (r != outcome::found) return r;
    return open_piece(f);
  }

  // A node: the fingerprint and the candidates, then the first candidate's subtree.
  std::optional<outcome> start_node(frame& f) {
    const part& pt = *f.pt;
    ++nodes_;
    if (node_limit_ >= 0 && nodes_ > node_limit_) return outcome::aborted;  // node_limit_ is absolute
    if (until_->expired()) return outcome::aborted;  // a clock read is cheap next to a node's O(part) work
    until_->charge(node_scan_weight * static_cast<std::int64_t>(pt.buffers.size()));  // the fingerprint's pass
    // One pass: the lowest top any unplaced buffer can reach, and the fingerprint of everything the
    // subtree below depends on (the part, the canonical restriction, each unplaced buffer with its
    // lowest offset and rank): equal fingerprints explore equal subtrees.
    std::int64_t min_height = std::numeric_limits<std::int64_t>::max();
    std::uint64_t h1 = mix64(static_cast<std::uint64_t>(pt.lo) << 32 | static_cast<std::uint32_t>(pt.hi));
    std::uint64_t h2 = mix64(static_cast<std::uint64_t>(f.last_off) ^ mix64(static_cast<std::uint64_t>(f.last_rank) + 0x9e3779b97f4a7c15ULL));
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
      const auto x = mix64(static_cast<std::uint64_t>(min_off_[sk]) * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(k));
      h1 += mix64(x ^ static_cast<std::uint64_t>(rank_[sk]));
      h2 += mix64(x + 0x632be59bd9b4e019ULL * static_cast<std::uint64_t>(rank_[sk] + 1));
    }
    if (!any) return outcome::found;  // every buffer of this part stored its offset when placed
    if (memo_->contains(h1, h2)) return outcome::infeasible;
    f.h1 = h1;
    f.h2 = h2;
    f.cands.clear();
    for (int k : pt.buffers) {
      const auto sk = static_cast<std::size_t>(k);
      if (off_[sk] >= 0) continue;
      if (prev_same_[sk] >= 0 && off_[static_cast<std::size_t>(prev_same_[sk])] < 0) continue;  // its twin first
      const std::int64_t key = fixed_[sk] >= 0 ? fixed_[sk] : min_off_[sk];
      const int rank = rank_[sk];
      if (key < f.last_off || (key == f.last_off && rank < f.last_rank)) continue;  // not canonical
      if (key >= min_height) continue;                                               // dominated
      if (key + size_[sk] > target_) continue;
      f.cands.push_back({key, rank, k});
    }
    until_->charge(node_scan_weight * static_cast<std::int64_t>(pt.buffers.size()));  // the candidates' pass
    if (f.cands.empty()) {
      memo_->insert(h1, h2);
      return outcome::infeasible;
    }
    // The largest remaining section total of the part, and per block of 128 sections (O(width / 128)
    // memory per level of the search) prefix / suffix maxima of the block maxima, for the check of
    // the part against a candidate's offset.
    const int width = pt.hi - pt.lo;
    until_->charge(2 * static_cast<std::int64_t>(width));  // the block maxima
    f.part_max = 0;
    for (int i = pt.lo; i < pt.hi; ++i) f.part_max = std::max(f.part_max, total_[static_cast<std::size_t>(i)]);
    f.blocks = (width + block - 1) / block;
    f.base = scratch_.size();
    scratch_.resize(f.base + 3 * static_cast<std::size_t>(f.blocks) + 2, 0);
    for (int i = 0; i < width; ++i) bmax(f, i / block) = std::max(bmax(f, i / block), total_[static_cast<std::size_t>(pt.lo + i)]);
    pre(f, 0) = 0;
    for (int j = 0; j < f.blocks; ++j) pre(f, j + 1) = std::max(pre(f, j), bmax(f, j));
    suf(f, f.blocks) = 0;
    for (int j = f.blocks - 1; j >= 0; --j) suf(f, j) = std::max(suf(f, j + 1), bmax(f, j));
    // Candidates in (offset, preorder) order, popped from a heap: a dive usually needs only the first.
    std::make_heap(f.cands.begin(), f.cands.end(), later);
    f.result = outcome::infeasible;
    f.tried = 0;
    return try_candidates(f);
  }

  static bool later(const cand& a, const cand& b) { return a.key != b.key ? a.key > b.key : a.rank > b.rank; }

  // Work-clock units (base/deadline.hpp: about 0.5 ns each) per buffer of a node's two passes (hashing
  // the unplaced ones) and per witness-list entry or section buffer scanned; one per section total or
  // overlapping buffer walked. Fitted on the exact search's wall time over nine MiniMalloc sets and
  // the offload and recompute timelines of five batch-32 exports: within 0.8-1.1x of it, where
  // equal weights spread over 0.84-3.1 ns a unit (docs/reliability.md).
  static constexpr std::int64_t node_scan_weight = 16, witness_weight = 2;

  // scratch_[base + j] = max over blocks [0, j), scratch_[base + blocks + 1 + j] = over blocks [j, blocks),
  // scratch_[base + 2 * blocks + 2 + j] = over block j. (Indices, not pointers: deeper nodes grow scratch_.)
  static constexpr int block = 128;
  std::int64_t& pre(const frame& f, int j) { return scratch_[f.base + static_cast<std::size_t>(j)]; }
  std::int64_t& suf(const frame& f, int j) { return scratch_[f.base + static_cast<std::size_t>(f.blocks + 1 + j)]; }
  std::int64_t& bmax(const frame& f, int j) { return scratch_[f.base + static_cast<std::size_t>(2 * f.blocks + 2 + j)]; }

  // Max total of sections [a, b), a < b, as they are between candidates (by blocks inside the part).
  std::int64_t inside(const frame& f, int a, int b) {
    const part& pt = *f.pt;
    std::int64_t best = 0;
    const int ra = a - pt.lo, rb = b - pt.lo;
    const int first = (ra + block - 1) / block, last = rb / block;  // full blocks [first, last)
    if (first >= last || a < pt.lo || b > pt.hi) {  // (the latter never: a part holds its buffers' spans)
      for (int i = a; i < b; ++i) best = std::max(best, total_[static_cast<std::size_t>(i)]);
      return best;
    }
    for (int i = ra; i < first * block; ++i) best = std::max(best, total_[static_cast<std::size_t>(pt.lo + i)]);
    for (int j = first; j < last; ++j) best = std::max(best, bmax(f, j));
    for (int i = last * block; i < rb; ++i) best = std::max(best, total_[static_cast<std::size_t>(pt.lo + i)]);
    return best;
  }

  // Max total of the part's sections outside [a, b) (absolute section indices; read before c leaves
  // the totals, so the blocks hold for every candidate of this node).
  std::int64_t outside(const frame& f, int a, int b) {
    const part& pt = *f.pt;
    const int width = pt.hi - pt.lo;
    std::int64_t best = 0;
    const int ra = a - pt.lo, rb = b - pt.lo;
    const int ba = ra / block;  // sections [0, ra): full blocks before ba, then a partial scan
    best = std::max(best, pre(f, ba));
    for (int i = ba * block; i < ra; ++i) best = std::max(best, total_[static_cast<std::size_t>(pt.lo + i)]);
    const int bb = (rb + block - 1) / block;  // sections [rb, width): a partial scan, then full blocks from bb
    best = std::max(best, suf(f, std::min(bb, f.blocks)));
    for (int i = rb; i < std::min(bb * block, width); ++i) best = std::max(best, total_[static_cast<std::size_t>(pt.lo + i)]);
    return best;
  }

  // Unallocated floor (MiniMalloc): a section's remaining buffers stack above the lowest offset any of
  // them can take, so some unplaced buffer of it must start at or below target - its total. Each
  // section keeps such a witness; only sections whose witness was just placed (c) or raised need a new
  // one (the others' witnesses and limits did not change), found by a scan. Returns false when a
  // section has none left (or the deadline passed: `late`).
  bool rewitness(frame& f, int w, bool& late) {
    auto& list = witnessing_[static_cast<std::size_t>(w)];
    until_->charge(witness_weight * static_cast<std::int64_t>(list.size()));
    for (std::size_t i = 0; i < list.size(); ++i) {
      if ((i & 63) == 63 && until_->expired()) { late = true; return false; }  // long lists on big problems
      const int sec = list[i];
      const auto ss = static_cast<std::size_t>(sec);
      if (witness_[ss] != w) continue;  // stale entry: the section chose another witness since
      const auto limit = target_ - total_[ss];
      const auto key_w = fixed_[static_cast<std::size_t>(w)] >= 0 ? fixed_[static_cast<std::size_t>(w)] : min_off_[static_cast<std::size_t>(w)];
      if (off_[static_cast<std::size_t>(w)] < 0 && key_w <= limit) continue;  // still a witness
      int next = -1;
      if (total_[ss] > 0) {
        // Any unplaced buffer low enough will do (whether one exists is what prunes), so the scan
        // starts where the last one was found and wraps around: from the row's start, it passed
        // every buffer placed since each time, quadratic along a dive (an Inception-v3 recompute
        // plan's 1,809 buffers at max load: 71 % of the search's time, 1 ms per node).
        const auto row = section_buffers_[ss];
        std::size_t at = witness_at_[ss], scanned = 0;
        for (; scanned < row.size(); ++scanned, at = at + 1 == row.size() ? 0 : at + 1) {
          const auto so = static_cast<std::size_t>(row[at]);
          if (off_[so] < 0 && (fixed_[so] >= 0 ? fixed_[so] : min_off_[so]) <= limit) { next = row[at]; break; }
        }
        until_->charge(witness_weight * static_cast<std::int64_t>(scanned + 1));
        if (next < 0) return false;
        witness_at_[ss] = at;
      }
      f.rewitnessed.push_back({sec, w});
      witness_[ss] = next;
      if (next >= 0) witnessing_[static_cast<std::size_t>(next)].push_back(sec);
    }
    return true;
  }

  // Takes the node's candidates in turn until one's subtree must be searched (pushed as a child) or
  // the node is finished.
  std::optional<outcome> try_candidates(frame& f) {
    const part& pt = *f.pt;
    while (!f.cands.empty()) {
      // A node of a big part can try many candidates, each with real work: the deadline is checked
      // here too, not only per node.
      if (++f.tried > 1 && until_->expired()) { f.result = outcome::aborted; break; }
      std::pop_heap(f.cands.begin(), f.cands.end(), later);
      f.c = f.cands.back();
      f.cands.pop_back();
      const cand& c = f.c;
      const auto k = static_cast<std::size_t>(c.k);
      const auto top = c.key + size_[k];
      off_[k] = c.key;
      best_[k] = c.key;
      f.raised.clear();
      f.rewitnessed.clear();
      // The section checks first: they read the section totals only (through the blocks), and on a big
      // training graph they reject most candidates (inception_v3-train-b32: 258k of 303k) before the
      // walk over c's overlapping buffers (about 1,300 there) and the update of its span's totals.
      // Inside c's span every unplaced buffer lies above c; everywhere in the part above c's offset.
      // (c is unplaced, so each section of its span counts it: the max after taking it out is the max
      // before minus its size. Its span lies in the part.)
      // Work: the block checks (partial blocks scanned at the ends), then c's span and overlaps as walked.
      until_->charge(8 + std::min(hi_[k] - lo_[k], block) / 4);
      const std::int64_t span_max = inside(f, lo_[k], hi_[k]) - size_[k];
      bool dead = span_max > 0 && top + span_max > target_;
      if (!dead && c.key > f.last_off && c.key + f.part_max > target_ &&
          c.key + std::max(outside(f, lo_[k], hi_[k]), span_max) > target_)
        dead = true;
      f.hatless = true;
      f.early = dead;  // rejected before c was taken out of the section totals
      std::int64_t walked = 0;
      if (dead) {  // hatless is still needed below (is any buffer live with c unplaced?)
        // Any one will do, so the walk starts where it last found one and wraps around: from the
        // row's start it passed every buffer placed since, on each rejected candidate (most of them;
        // an Inception-v3 recompute plan at 1.3 % above max load: half of the search's time).
        const auto row = overlaps_[k];
        for (std::size_t at = hat_at_[k], i = 0; i < row.size(); ++i, at = at + 1 == row.size() ? 0 : at + 1) {
          ++walked;
          if (off_[static_cast<std::size_t>(row[at])] < 0) { f.hatless = false; hat_at_[k] = at; break; }
        }
      } else {
        for (int sec = lo_[k]; sec < hi_[k]; ++sec) total_[static_cast<std::size_t>(sec)] -= size_[k];
        walked = 2 * (hi_[k] - lo_[k]);  // taken out here, put back in close_candidate
        for (int o : overlaps_[k]) {
          ++walked;
          const auto so = static_cast<std::size_t>(o);
          if (off_[so] >= 0) continue;
          f.hatless = false;
          if (min_off_[so] >= top) continue;
          f.raised.push_back({o, min_off_[so]});
          min_off_[so] = (top + align_[so] - 1) & ~(align_[so] - 1);  // align_up for a power of two
          if (fixed_[so] >= 0 ? min_off_[so] > fixed_[so] : min_off_[so] + size_[so] > target_) { dead = true; break; }
        }
      }
      until_->charge(walked + 2 * static_cast<std::int64_t>(f.raised.size()));
      bool late = false;  // the deadline passed inside this candidate's checks
      if (!dead) dead = !rewitness(f, c.k, late);
      for (std::size_t i = 0; i < f.raised.size() && !dead; ++i) dead = !rewitness(f, f.raised[i].k, late);
      f.descended = !dead;
      if (!dead) {
        bool split = false;
        for (int s = lo_[k]; s + 1 < hi_[k]; ++s)
          if (--cuts_[static_cast<std::size_t>(s)] == 0 && s >= pt.lo && s + 1 < pt.hi) split = true;
        auto& child = push_frame(split ? frame::kind::split : frame::kind::node, pt);
        child.last_off = c.key;
        child.last_rank = c.rank;
        return std::nullopt;
      }
      if (close_candidate(f, late ? outcome::aborted : outcome::infeasible)) break;
    }
    return finish_node(f);
  }

  // The current candidate's subtree returned r.
  std::optional<outcome> next_candidate(frame& f, outcome r) {
    if (close_candidate(f, r)) return finish_node(f);
    return try_candidates(f);
  }

  // Undoes what taking the current candidate changed; true when the node is finished (f.result).
  bool close_candidate(frame& f, outcome r) {
    const auto k = static_cast<std::size_t>(f.c.k);
    if (f.descended)
      for (int s = lo_[k]; s + 1 < hi_[k]; ++s) ++cuts_[static_cast<std::size_t>(s)];
    for (auto it = f.rewitnessed.rbegin(); it != f.rewitnessed.rend(); ++it) {
      const auto ss = static_cast<std::size_t>(it->k);
      if (witness_[ss] >= 0) witnessing_[static_cast<std::size_t>(witness_[ss])].pop_back();  // pushed last
      witness_[ss] = static_cast<int>(it->old);
    }
    if (!f.early) for (int s = lo_[k]; s < hi_[k]; ++s) total_[static_cast<std::size_t>(s)] += size_[k];
    for (auto it = f.raised.rbegin(); it != f.raised.rend(); ++it) min_off_[static_cast<std::size_t>(it->k)] = it->old;
    off_[k] = -1;
    if (r != outcome::infeasible) { f.result = r; return true; }
    return f.hatless;  // its offset is forced in every completion, and they all failed
  }

  outcome finish_node(frame& f) {
    scratch_.resize(f.base);
    if (f.result == outcome::infeasible) memo_->insert(f.h1, f.h2);
    return f.result;
  }

  const buffer_problem* p_;
  bool ready_ = false, too_big_ = false;
  std::vector<std::size_t> active_;
  std::vector<std::int64_t> size_, align_, fixed_;
  std::vector<int> lo_, hi_, prev_same_;
  // Lists of ints in one array: row r is items[start[r], start[r + 1]).
  // The items are left uninitialised until the fill writes them: zeroing tens of MB first would take
  // its page faults in one go, outside the loops that watch the clock.
  struct rows {
    std::vector<std::size_t> start;
    std::unique_ptr<int[]> items;
    void allocate() { items.reset(new int[start.back()]); }
    [[nodiscard]] std::span<const int> operator[](std::size_t r) const { return {items.get() + start[r], start[r + 1] - start[r]}; }
  };
  rows overlaps_, section_buffers_;
  int sections_ = 0;
  std::vector<std::int64_t> section_total_;
  // search state
  std::int64_t target_ = 0, node_limit_ = -1, nodes_ = 0;
  std::string keys_;
  const deadline* until_ = nullptr;
  std::vector<int> rank_, cuts_, initial_cuts_;
  std::vector<int> witness_;                     // per section: an unplaced buffer low enough, or -1
  std::vector<std::size_t> witness_at_;          // per section: where in its row the last witness was found
  std::vector<std::size_t> hat_at_;              // per buffer: where in its overlaps an unplaced one was last found
  std::vector<std::vector<int>> witnessing_;     // per buffer: sections it was chosen for (a stack)
  std::vector<std::int64_t> off_, min_off_, total_, best_;
  std::vector<std::int64_t> scratch_;  // per-node arrays, used as a stack
  std::vector<std::int64_t> hint_;
  // Failed states per (target, preorder): a restart with a doubled node limit skips every subtree
  // the previous runs finished. The few most recently used tables are kept.
  failure_cache& memo_for(std::int64_t target, const std::string& keys) {
    ++clock_;
    for (auto& t : tables_)
      if (t.target == target && t.keys == keys) { t.used = clock_; return t.cache; }
    if (tables_.size() < 6) tables_.emplace_back();
    auto& t = *std::min_element(tables_.begin(), tables_.end(), [](const table& a, const table& b) { return a.used < b.used; });
    t.target = target;
    t.keys = keys;
    t.used = clock_;
    std::size_t log2 = 10;
    while (log2 < 19 && (std::size_t{1} << log2) < 256 * std::max<std::size_t>(1, active_.size())) ++log2;
    t.cache.reset(log2);
    return t.cache;
  }
  struct table { std::int64_t target = -1; std::string keys; std::uint64_t used = 0; failure_cache cache; };
  std::vector<table> tables_;
  std::uint64_t clock_ = 0;
  failure_cache* memo_ = nullptr;
};

}  // namespace memplan::place::detail
