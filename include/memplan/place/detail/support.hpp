#pragma once
// Shared machinery of the offline placers: the referee gate every policy passes through before it
// returns, an index of placed buffers by lifetime, and gap search among the placed buffers that
// overlap a new one in time.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <memory_resource>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <memplan/base/deadline.hpp>
#include <memplan/base/error.hpp>
#include <memplan/core/buffer.hpp>
#include <memplan/core/context.hpp>
#include <memplan/place/lower_bound.hpp>

namespace memplan::place::detail {

inline constexpr std::int64_t unplaced = -1;

// The problem with its capacity lifted: composite policies (best_of, default_placer) run their members
// on it and enforce the capacity once, on the winner.
// A searching placer (exact, default_placer) adjusted by a plan context: the context's time limit,
// else the placer's own, cut to the context's stop; in deterministic mode the placer's own time limit
// on a work clock (base/deadline.hpp: time counted from the work done, so the same input gives the
// same placement on any machine and the search costs about what the clock would give it), cut to
// the context's placement_work_share of it; the
// context's progress callback when the placer has none; the context's arena target as the placer's
// accept level (Placer: time_limit_s, count_work, progress members, seconds(); accept and
// minimise_to_accept where it has them).
template <class Placer>
Placer with_context(Placer q, const plan_context& ctx) {
  if (ctx.deterministic) {
    q.count_work = true;
    if (ctx.placement_work_share != 1.0) q.time_limit_s = ctx.placement_work_share * q.seconds();
  } else {
    q.time_limit_s = ctx.time_limit_or(q.seconds());
  }
  if (!q.progress) q.progress = ctx.progress;
  if constexpr (requires { q.accept; q.minimise_to_accept; }) {
    // Minimise down to the context's arena target, no further. (Compared with minimising as usual and
    // only stopping there: the search probes at the target, which it reaches far more often in its
    // time: over the training exports at 0.35, 0.5 and 0.7 of their arena, plan() met 8 of 46 budgets
    // with less recompute and 1 with more, and took about half the time on the slowest.)
    if (ctx.arena_target > 0 && q.accept < 0) {
      q.accept = ctx.arena_target;
      q.minimise_to_accept = true;
    }
  }
  return q;
}

inline buffer_problem without_capacity(const buffer_problem& p) {
  buffer_problem q = p;
  q.capacity = std::numeric_limits<std::int64_t>::max();
  return q;
}

// The error of a capacity proven out of reach (a search refuted it), shared by exact and the default
// placer; `detail` adds what proved it, when that is more than max load.
inline error capacity_refuted(const std::string& placer, std::int64_t capacity, std::int64_t proven, std::int64_t best_arena,
                              const std::string& detail = {}) {
  return error(errc::infeasible, "placer " + placer + ": no placement fits the capacity " + std::to_string(capacity) +
                                     ": proven lower bound " + std::to_string(proven) + " (best arena reached " +
                                     std::to_string(best_arena) + (detail.empty() ? "" : "; " + detail) + ")");
}

// Every policy returns through here: arena and bound filled in, capacity enforced with a clear error,
// and the independent referee check() run; an unchecked placement never leaves a policy.
inline buffer_placement finish(const buffer_problem& p, std::vector<std::int64_t> offsets, std::string placer,
                               std::string note = {}, std::int64_t lower_bound = -1, bool proven_optimal = false) {
  buffer_placement out;
  out.offsets = std::move(offsets);
  for (std::size_t i = 0; i < p.buffers.size() && i < out.offsets.size(); ++i)
    out.arena = std::max(out.arena, out.offsets[i] + p.buffers[i].size);
  out.lower_bound = lower_bound >= 0 ? lower_bound : arena_lower_bound(p);
  out.optimal = proven_optimal || out.arena == out.lower_bound;
  out.placer = std::move(placer);
  out.note = std::move(note);
  if (out.arena > p.capacity)
    throw error(errc::infeasible, "placer " + out.placer + ": best arena reached " + std::to_string(out.arena) +
                                      " bytes exceeds the capacity " + std::to_string(p.capacity) +
                                      " (lower bound " + std::to_string(out.lower_bound) + ")");
  if (auto why = check(p, out))
    throw error(errc::invalid_plan, "placer " + out.placer + " produced an invalid placement: " + *why);
  return out;
}

// The lowest offset from `off` up (aligned for b) at which b runs into none of the pinned buffers
// (indices into p.buffers) live at the same time: it hops over each pin in its way until none is.
inline std::int64_t above_pins(const buffer_problem& p, const std::vector<std::size_t>& pins, const buffer& b, std::int64_t off) {
  for (bool moved = true; moved;) {
    moved = false;
    for (auto j : pins) {
      const auto& q = p.buffers[j];
      if (q.size == 0 || q.upper <= b.lower || b.upper <= q.lower) continue;
      if (q.fixed_offset < off + b.size && off < q.fixed_offset + q.size) {
        off = align_up(q.fixed_offset + q.size, effective_alignment(p, b));
        moved = true;
      }
    }
  }
  return off;
}

// place(p, until) of a one-pass placer (greedy_by_size, greedy_by_breadth, best_fit): its
// offsets(p, until, &cut) pass through finish; when the deadline cut the pass, the rest was stacked on
// top (valid) and the note says so.
template <class OnePass>
buffer_placement place_one_pass(const OnePass& placer, const buffer_problem& p, const deadline& until) {
  validate(p);
  bool cut = false;
  auto offsets = placer.offsets(p, until, &cut);
  return finish(p, std::move(offsets), placer.name(), cut ? "time limit hit: the buffers not placed by then were stacked on top" : "");
}

// max over buffers of offset + size (0 when empty).
inline std::int64_t arena_of(const buffer_problem& p, const std::vector<std::int64_t>& offsets) {
  std::int64_t a = 0;
  for (std::size_t i = 0; i < p.buffers.size() && i < offsets.size(); ++i) a = std::max(a, offsets[i] + p.buffers[i].size);
  return a;
}

// Compressed time axis: the distinct lifetime endpoints; section k is [times[k], times[k+1]).
struct time_axis {
  std::vector<std::int64_t> times;
  explicit time_axis(const buffer_problem& p) {
    times.reserve(2 * p.buffers.size());
    for (const auto& b : p.buffers) {
      times.push_back(b.lower);
      times.push_back(b.upper);
    }
    std::sort(times.begin(), times.end());
    times.erase(std::unique(times.begin(), times.end()), times.end());
  }
  [[nodiscard]] int index(std::int64_t t) const {
    return static_cast<int>(std::lower_bound(times.begin(), times.end(), t) - times.begin());
  }
  [[nodiscard]] int sections() const { return times.empty() ? 0 : static_cast<int>(times.size()) - 1; }
};

// Index of placed buffers by lifetime. A query [l, u) overlaps [a, b) iff a <= l < b (the buffer is
// live at l: found by a stabbing query on a segment tree over sections) or l < a < u (it starts inside:
// found in a start-ordered map). Both parts are output-sensitive: O(log T + k) for k answers.
class interval_index {
 public:
  interval_index(const buffer_problem& p, const time_axis& axis) : p_(&p), axis_(&axis) {
    size_ = std::max(1, axis.sections());
    tree_.resize(4 * static_cast<std::size_t>(size_));
  }

  void insert(std::size_t i) {
    const auto& b = p_->buffers[i];
    const int lo = axis_->index(b.lower), hi = axis_->index(b.upper);  // sections [lo, hi)
    add(1, 0, size_, lo, hi, i);
    starts_.insert({lo, i});
  }

  // Calls f(j) once for every inserted buffer j whose lifetime overlaps [lower, upper).
  template <class F>
  void for_each_overlapping(std::int64_t lower, std::int64_t upper, F&& f) const {
    const int lo = axis_->index(lower), hi = axis_->index(upper);
    if (lo < size_) {
      int node = 1, l = 0, r = size_;
      while (true) {
        for (auto j : tree_[static_cast<std::size_t>(node)]) f(j);
        if (r - l == 1) break;
        const int m = (l + r) / 2;
        if (lo < m) { node = 2 * node; r = m; } else { node = 2 * node + 1; l = m; }
      }
    }
    for (auto it = starts_.upper_bound({lo, std::numeric_limits<std::size_t>::max()});
         it != starts_.end() && it->first < hi; ++it)
      f(it->second);
  }

 private:
  void add(int node, int l, int r, int lo, int hi, std::size_t i) {
    if (hi <= l || r <= lo) return;
    if (lo <= l && r <= hi) { tree_[static_cast<std::size_t>(node)].push_back(i); return; }
    const int m = (l + r) / 2;
    add(2 * node, l, m, lo, hi, i);
    add(2 * node + 1, m, r, lo, hi, i);
  }

  const buffer_problem* p_;
  const time_axis* axis_;
  int size_ = 1;
  std::vector<std::vector<std::size_t>> tree_;
  std::set<std::pair<int, std::size_t>> starts_;
};

enum class fit { first, best };

// Offset for a buffer of `size` aligned to `align` among occupied address ranges [start, end) (any order):
// `first` = the lowest gap that fits, `best` = the smallest gap that fits (ties: lowest), else on top.
inline std::int64_t find_gap(std::vector<std::pair<std::int64_t, std::int64_t>>& occupied, std::int64_t size,
                             std::int64_t align, fit rule, bool sorted = false) {
  if (!sorted) std::sort(occupied.begin(), occupied.end());
  std::int64_t cur = 0;  // end of the merged occupied prefix
  std::int64_t best = -1, best_gap = std::numeric_limits<std::int64_t>::max();
  for (const auto& [s, e] : occupied) {
    const auto pos = align_up(cur, align);
    if (s > pos && s - pos >= size) {
      const auto gap = s - pos;
      if (rule == fit::first) return pos;
      if (gap < best_gap) { best_gap = gap; best = pos; }
    }
    cur = std::max(cur, e);
  }
  return best >= 0 ? best : align_up(cur, align);
}

// Occupied address ranges by time, for gap search among the placed buffers live during [l, u). A
// segment tree over the sections of the time axis keeps, per node, merged address-interval sets:
// `cover` = the buffers whose lifetime covers the node's whole range (stored at the O(log S) nodes
// that decompose the lifetime), `any` = a superset of the buffers stored at the node or below, made
// only of buffers that overlap the node's range. The placed buffers overlapping a query [l, u) are
// then covered by the `any` sets of the query's decomposition nodes plus the `cover` sets on the two
// boundary paths to the root, and every set read holds only buffers overlapping [l, u): the union is
// exact. Sets stay small because adjacent ranges merge (a tightly packed stack is one interval), so a
// query costs O(log S) small sets instead of one entry per overlapping buffer (the naive index's
// O(k log k) for k live buffers made 100k-buffer lists quadratic).
class occupancy_index {
 public:
  using range = std::pair<std::int64_t, std::int64_t>;  // [start, end) of addresses

  explicit occupancy_index(const time_axis& axis) : axis_(&axis) {
    leaves_ = 1;
    while (leaves_ < std::max(1, axis.sections())) leaves_ *= 2;
    cover_.resize(2 * static_cast<std::size_t>(leaves_));
    any_.resize(2 * static_cast<std::size_t>(leaves_));
  }

  // Marks [start, end) occupied during [lower, upper).
  void insert(std::int64_t lower, std::int64_t upper, std::int64_t start, std::int64_t end) {
    int l = axis_->index(lower) + leaves_, r = axis_->index(upper) + leaves_;
    if (l >= r || start >= end) return;
    for (int a = l >> 1, b = (r - 1) >> 1; a > 0; a >>= 1, b >>= 1) {
      add(any_, a, start, end);
      if (b != a) add(any_, b, start, end);
    }
    for (; l < r; l >>= 1, r >>= 1) {
      if (l & 1) { add(cover_, l, start, end); add(any_, l, start, end); ++l; }
      if (r & 1) { --r; add(cover_, r, start, end); add(any_, r, start, end); }
    }
    work_ += 192;  // (about: two paths of set updates; deterministic mode's work clock)
  }

  // Work done since the last call, in work_clock units (about one range looked at each): what a pass
  // charges to its deadline, so that it counts on a work clock too.
  [[nodiscard]] std::int64_t take_work() noexcept { return std::exchange(work_, 0); }

  // The offset a buffer of `size` aligned to `align` takes among the addresses occupied during
  // [lower, upper): `first` = the lowest gap that fits, `best` = the smallest gap that fits (ties: the
  // lowest), else on top of everything occupied then (find_gap's rule on the union of the sets read).
  // A gap of the union lies inside a gap of every set, so the free windows are narrowed set by set,
  // keeping only windows that still fit: the largest set is scanned once, the others only inside the
  // windows left (a cursor galloping forward). Merging every set first cost one pass over all their
  // ranges per buffer: quadratic on training graphs, whose saved activations keep thousands of ranges
  // live (docs/placement.md).
  [[nodiscard]] std::int64_t gap(std::int64_t lower, std::int64_t upper, std::int64_t size, std::int64_t align, fit rule) {
    constexpr auto open = std::numeric_limits<std::int64_t>::max();  // a window with no end: above everything
    spans_.clear();
    int l = axis_->index(lower) + leaves_, r = axis_->index(upper) + leaves_;
    const auto take = [&](const std::vector<ranges>& sets, int x) {
      const auto& set = sets[static_cast<std::size_t>(x)];
      if (!set.empty()) spans_.push_back({set.data(), set.data() + set.size()});
    };
    if (l < r) {
      for (int a = l >> 1, b = (r - 1) >> 1; a > 0; a >>= 1, b >>= 1) {  // the two paths, equal depths
        take(cover_, a);
        if (b != a) take(cover_, b);
      }
      for (; l < r; l >>= 1, r >>= 1) {
        if (l & 1) take(any_, l++);
        if (r & 1) take(any_, --r);
      }
    }
    // Largest first: it prunes the most windows (the answer does not depend on the order).
    std::sort(spans_.begin(), spans_.end(), [](const span& a, const span& b) { return a.second - a.first > b.second - b.first; });
    windows_.assign(1, {0, open});
    for (const auto& [first, last] : spans_) {
      next_.clear();
      const auto keep = [&](std::int64_t a, std::int64_t b) {
        const auto pos = align_up(a, align);
        if (b == open || (b > pos && b - pos >= size)) next_.push_back({a, b});
      };
      const range* it = first;  // windows are sorted and disjoint: the cursor only moves forward
      work_ += 48 + static_cast<std::int64_t>(windows_.size());  // the set's sort and gallop, its windows
      for (const auto& [a, b] : windows_) {
        it = first_ending_after(it, last, a);  // the ranges overlapping [a, b) start here
        std::int64_t cur = a;
        for (auto x = it; x != last && x->first < b; ++x) {  // the last may reach into the next window
          ++work_;
          if (x->first > cur) keep(cur, x->first);
          cur = std::max(cur, x->second);
        }
        if (cur < b) keep(cur, b);
      }
      windows_.swap(next_);
    }
    std::int64_t best = -1, best_gap = open;
    for (const auto& [a, b] : windows_) {
      const auto pos = align_up(a, align);
      if (b == open) return best >= 0 ? best : pos;
      if (rule == fit::first) return pos;
      if (b - pos < best_gap) { best_gap = b - pos; best = pos; }
    }
    return best;  // not reached: the open window is always last
  }

 private:
  using ranges = std::vector<range>;  // sorted, disjoint, non-touching
  static void add(std::vector<ranges>& sets, int x, std::int64_t start, std::int64_t end) {
    auto& m = sets[static_cast<std::size_t>(x)];
    // First range ending at or after start (it may touch or overlap [start, end)).
    auto it = std::lower_bound(m.begin(), m.end(), start, [](const auto& r, std::int64_t v) { return r.second < v; });
    if (it != m.end() && it->first <= start && it->second >= end) return;  // already covered
    auto last = it;
    while (last != m.end() && last->first <= end) {
      start = std::min(start, last->first);
      end = std::max(end, last->second);
      ++last;
    }
    if (it == last) {
      m.insert(it, {start, end});
    } else {
      *it = {start, end};
      m.erase(it + 1, last);
    }
  }
  using span = std::pair<const range*, const range*>;
  // The first range in [at, end) whose end is after v (ranges sorted and disjoint): galloping search
  // from `at`, O(log d) for a skip of d ranges.
  static const range* first_ending_after(const range* at, const range* end, std::int64_t v) {
    if (at == end || at->second > v) return at;
    std::ptrdiff_t step = 1;
    const range* lo = at;  // lo->second <= v
    while (end - lo > step && lo[step].second <= v) {
      lo += step;
      step *= 2;
    }
    const range* hi = end - lo > step ? lo + step : end;
    return std::upper_bound(lo + 1, hi, v, [](std::int64_t x, const range& r) { return x < r.second; });
  }
  const time_axis* axis_;
  int leaves_ = 1;
  std::vector<ranges> cover_, any_;
  std::vector<span> spans_;               // the sets gap() reads
  std::vector<range> windows_, next_;     // its free windows that still fit, before and after a set
  std::int64_t work_ = 0;                 // see take_work
};

// The order of a sweep's allocations at one step: by buffer index, larger first, or longer-lived first.
enum class sweep_ties { by_index, larger_first, longer_first };
inline std::vector<std::int64_t> stack_on_top(const buffer_problem& p, const std::vector<std::size_t>& rest,
                                              std::vector<std::int64_t> offsets, sweep_ties ties = sweep_ties::by_index,
                                              fit rule = fit::best);
// place_in_order's loop from position `from` of `order`, on an index that already holds the pins and
// every buffer of `offsets` that is not `unplaced` (those are skipped). With `ceiling`: when a buffer's
// end would pass it, the loop stops there and sets *over (the offsets are then partial: the caller
// discards them). default_placer's order search rejects any order whose arena is higher than its best
// so far, so its passes stop at the buffer that exceeds it, not at the end.
template <class Deadline>
void place_rest(occupancy_index& index, const buffer_problem& p, const std::vector<std::size_t>& order, std::size_t from, fit rule,
                std::vector<std::int64_t>& offsets, const Deadline* until, bool* cut,
                std::int64_t ceiling = std::numeric_limits<std::int64_t>::max(), bool* over = nullptr) {
  // The index's work goes to the deadline (it counts on a work clock) at each check and at the end.
  const auto charge = [&] {
    if constexpr (!std::is_same_v<Deadline, std::nullptr_t>)
      if (until) until->charge(index.take_work());
  };
  for (std::size_t at = from; at < order.size(); ++at) {
    if constexpr (!std::is_same_v<Deadline, std::nullptr_t>) {
      if (until && ((at - from) & 255) == 255 && (charge(), until->expired())) {
        if (cut) *cut = true;
        offsets = stack_on_top(p, std::vector<std::size_t>(order.begin() + static_cast<std::ptrdiff_t>(at), order.end()), std::move(offsets));
        return;
      }
    }
    const auto i = order[at];
    if (offsets[i] != unplaced) continue;
    const auto& b = p.buffers[i];
    if (b.size == 0) { offsets[i] = 0; continue; }
    offsets[i] = index.gap(b.lower, b.upper, b.size, effective_alignment(p, b), rule);
    if (offsets[i] > ceiling - b.size) {
      if (over) *over = true;
      charge();
      return;
    }
    index.insert(b.lower, b.upper, offsets[i], offsets[i] + b.size);
  }
  charge();
}
// Places buffers one at a time in `order` at the first or best gap among already placed buffers that
// overlap in time (pinned buffers are placed first, at their offsets). Buffers not in `order` and not
// pinned keep offset `unplaced`. Zero-size buffers go to offset 0: they overlap nothing.
// With `until`: when it expires, the buffers of `order` not placed yet are stacked above everything
// placed by an O(r log r) best-fit sweep over time (valid, without reuse of the gaps below the stack)
// and *cut is set.
template <class Deadline = std::nullptr_t>
std::vector<std::int64_t> place_in_order(const buffer_problem& p, const std::vector<std::size_t>& order, fit rule,
                                         std::vector<std::int64_t> offsets = {}, const Deadline* until = nullptr,
                                         bool* cut = nullptr) {
  const auto n = p.buffers.size();
  if (offsets.empty()) offsets.assign(n, unplaced);
  const time_axis axis(p);
  occupancy_index index(axis);
  for (std::size_t i = 0; i < n; ++i) {
    if (p.buffers[i].fixed_offset >= 0) offsets[i] = p.buffers[i].fixed_offset;
    if (offsets[i] != unplaced && p.buffers[i].size > 0)
      index.insert(p.buffers[i].lower, p.buffers[i].upper, offsets[i], offsets[i] + p.buffers[i].size);
  }
  place_rest(index, p, order, 0, rule, offsets, until, cut);
  return offsets;
}

// Memory for the nodes of node-based containers that grow and shrink many times over (a sweep's free
// lists): freed blocks go on a list per size and are handed out again; chunks are returned at the end.
// Faster than malloc and than std::pmr::unsynchronized_pool_resource here (whose deallocate searches
// its chunks: 6 % of a 100k-buffer sweep).
class node_recycler : public std::pmr::memory_resource {
 public:
  node_recycler() = default;
  node_recycler(const node_recycler&) = delete;
  node_recycler& operator=(const node_recycler&) = delete;

 private:
  struct list { std::size_t bytes; void* head; };
  void* do_allocate(std::size_t bytes, std::size_t align) override {
    bytes = std::max(bytes, sizeof(void*));
    for (auto& l : lists_)
      if (l.bytes == bytes && l.head) {
        void* p = l.head;
        l.head = *static_cast<void**>(p);
        return p;
      }
    return arena_.allocate(bytes, std::max(align, alignof(void*)));
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t) override {
    bytes = std::max(bytes, sizeof(void*));
    for (auto& l : lists_)
      if (l.bytes == bytes) {
        *static_cast<void**>(p) = l.head;
        l.head = p;
        return;
      }
    *static_cast<void**>(p) = nullptr;
    lists_.push_back({bytes, p});
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }
  std::pmr::monotonic_buffer_resource arena_;
  std::vector<list> lists_;  // one per node size (a few)
};

// Free blocks by address for a first-fit sweep: a treap keyed by start whose nodes keep the longest
// block of their subtree, so the lowest block that holds a size is found in O(log n) expected (the
// priorities come from a fixed generator: the same input, the same tree). Each block carries an id.
class blocks_by_address {
 public:
  static constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
  void insert(std::int64_t start, std::int64_t length, std::uint32_t id) {
    std::uint32_t x;
    if (!spare_.empty()) {
      x = spare_.back();
      spare_.pop_back();
    } else {
      if (nodes_.size() >= none) throw error(errc::limit_exceeded, "blocks_by_address: more than 2^32 - 1 free blocks");
      x = static_cast<std::uint32_t>(nodes_.size());
      nodes_.emplace_back();
    }
    seed_ ^= seed_ << 13;
    seed_ ^= seed_ >> 7;
    seed_ ^= seed_ << 17;
    nodes_[x] = {start, length, length, seed_, none, none, id};
    auto [lo, hi] = split(root_, start);
    root_ = merge(merge(lo, x), hi);
  }
  void erase(std::int64_t start) {
    auto [lo, rest] = split(root_, start);
    auto [mid, hi] = split(rest, start + 1);
    if (mid != none) spare_.push_back(mid);  // (one node: starts are distinct)
    root_ = merge(lo, hi);
  }
  // The id of the lowest block in which `size` fits at an offset aligned to `align`, or none. A block
  // of at least size + align - 1 bytes always holds it; lower blocks of at least `size` are tried
  // first, up to 1,024 that fail on their alignment (then the lowest certain fit: a bound on the work
  // that first_fit_by_allocation, which it equals otherwise, does not have).
  [[nodiscard]] std::uint32_t lowest_fit(std::int64_t size, std::int64_t align) const {
    int failures = 0;
    auto found = none;
    const auto walk = [&](const auto& self, std::uint32_t x, std::int64_t at_least) -> bool {  // true: stop
      if (x == none || nodes_[x].longest < at_least) return false;
      if (self(self, nodes_[x].left, at_least)) return true;
      const auto& b = nodes_[x];
      if (b.length >= at_least) {
        if (align_up(b.start, align) + size <= b.start + b.length) {
          found = b.id;
          return true;
        }
        if (++failures > 1024) return true;
      }
      return self(self, nodes_[x].right, at_least);
    };
    walk(walk, root_, size);
    if (found == none && failures > 1024) walk(walk, root_, size + align - 1);
    return found;
  }

 private:
  struct node {
    std::int64_t start = 0, length = 0, longest = 0;  // longest: of the subtree
    std::uint32_t priority = 0, left = none, right = none, id = none;
  };
  void update(std::uint32_t x) {
    auto& n = nodes_[x];
    n.longest = n.length;
    if (n.left != none) n.longest = std::max(n.longest, nodes_[n.left].longest);
    if (n.right != none) n.longest = std::max(n.longest, nodes_[n.right].longest);
  }
  // (starts < key, starts >= key)
  std::pair<std::uint32_t, std::uint32_t> split(std::uint32_t x, std::int64_t key) {
    if (x == none) return {none, none};
    if (nodes_[x].start < key) {
      auto [lo, hi] = split(nodes_[x].right, key);
      nodes_[x].right = lo;
      update(x);
      return {x, hi};
    }
    auto [lo, hi] = split(nodes_[x].left, key);
    nodes_[x].left = hi;
    update(x);
    return {lo, x};
  }
  std::uint32_t merge(std::uint32_t a, std::uint32_t b) {
    if (a == none) return b;
    if (b == none) return a;
    if (nodes_[a].priority > nodes_[b].priority) {
      nodes_[a].right = merge(nodes_[a].right, b);
      update(a);
      return a;
    }
    nodes_[b].left = merge(a, nodes_[b].left);
    update(b);
    return b;
  }
  std::vector<node> nodes_;
  std::vector<std::uint32_t> spare_;
  std::uint32_t root_ = none;
  std::uint32_t seed_ = 2463534242u;
};

// The buffers `rest` (unplaced, unpinned) go above the top of everything placed: a free list replayed
// over time (frees before allocations at equal steps, the allocations of a step in the order `ties`),
// each buffer in the smallest free block that holds it (`fit::best`) or the lowest (`fit::first`),
// offsets shifted by that top.
inline std::vector<std::int64_t> stack_on_top(const buffer_problem& p, const std::vector<std::size_t>& rest,
                                              std::vector<std::int64_t> offsets, sweep_ties ties, fit rule) {
  std::int64_t base = 0, align = p.alignment;
  for (std::size_t i = 0; i < p.buffers.size(); ++i) {
    if (offsets[i] != unplaced) base = std::max(base, offsets[i] + p.buffers[i].size);
    align = std::max(align, effective_alignment(p, p.buffers[i]));
  }
  base = align_up(base, align);  // any offset inside the stack keeps its alignment after the shift
  std::vector<char> stacked(p.buffers.size(), 0);
  for (auto i : rest) {
    if (offsets[i] != unplaced) continue;
    if (p.buffers[i].size == 0) { offsets[i] = 0; continue; }
    stacked[i] = 1;
  }
  auto evs = memplan::detail::lifetime_events(p, [&](std::size_t i) { return stacked[i] != 0; });
  if (ties != sweep_ties::by_index) {
    const auto key = [&](std::size_t i) {
      const auto& b = p.buffers[i];
      return ties == sweep_ties::larger_first ? b.size : b.upper - b.lower;
    };
    for (std::size_t a = 0, z = 0; a < evs.size(); a = z) {
      for (z = a + 1; z < evs.size() && evs[z].t == evs[a].t && evs[z].kind == evs[a].kind;) ++z;
      if (evs[a].kind == 1 && z - a > 1)
        std::stable_sort(evs.begin() + static_cast<std::ptrdiff_t>(a), evs.begin() + static_cast<std::ptrdiff_t>(z),
                         [&](const auto& x, const auto& y) { return key(x.i) > key(y.i); });
    }
  }
  // Best fit (a buffer takes the smallest free block that holds it, the lowest of equal ones). The
  // blocks below the top, used and free, form a list in address order, so a freed block merges with
  // free neighbours in O(1); only the free ones are in a tree, by (size, start). Per buffer that is
  // about three tree operations where a second tree of free blocks by start cost six (stop 50: 33 ms
  // -> 20 ms at 100k buffers, the same offsets); a first fit through the lowest 64 free blocks had
  // cost 50 ms there and left an arena 2.1x max load on dnn_like sets. First fit keeps the free blocks
  // in blocks_by_address instead of the size tree.
  constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
  struct block {
    std::int64_t start, end;
    std::uint32_t prev, next;  // neighbours in address order
    bool free;
  };
  std::vector<block> blocks;
  std::vector<std::uint32_t> spare;                          // indices of blocks merged away, reused
  std::vector<std::uint32_t> holds(p.buffers.size(), none);  // a stacked buffer's block while it is live
  std::uint32_t last = none;                                 // the highest block (its end is the top)
  node_recycler pool;  // the tree's nodes come and go: recycled, not malloc'd
  using free_key = std::tuple<std::int64_t, std::int64_t, std::uint32_t>;  // (size, start, block)
  std::pmr::set<free_key> by_size(&pool);  // best fit
  blocks_by_address by_address;           // first fit
  const auto add_free = [&](std::uint32_t k) {
    if (rule == fit::best) by_size.emplace(blocks[k].end - blocks[k].start, blocks[k].start, k);
    else by_address.insert(blocks[k].start, blocks[k].end - blocks[k].start, k);
  };
  const auto remove_free = [&](std::uint32_t k) {
    if (rule == fit::best) by_size.erase({blocks[k].end - blocks[k].start, blocks[k].start, k});
    else by_address.erase(blocks[k].start);
  };
  // A new block between prev and next (none: the list's end).
  const auto make = [&](std::int64_t start, std::int64_t end, std::uint32_t prev, std::uint32_t next, bool free) {
    std::uint32_t k;
    if (!spare.empty()) {
      k = spare.back();
      spare.pop_back();
      blocks[k] = {start, end, prev, next, free};
    } else {
      if (blocks.size() >= none) throw error(errc::limit_exceeded, "stack_on_top: more than 2^32 - 1 blocks");
      k = static_cast<std::uint32_t>(blocks.size());
      blocks.push_back({start, end, prev, next, free});
    }
    if (prev != none) blocks[prev].next = k;
    if (next != none) blocks[next].prev = k;
    else last = k;
    if (free) add_free(k);
    return k;
  };
  const auto unlink = [&](std::uint32_t k) {
    const auto& b = blocks[k];
    if (b.prev != none) blocks[b.prev].next = b.next;
    if (b.next != none) blocks[b.next].prev = b.prev;
    else last = b.prev;
    spare.push_back(k);
  };
  const auto drop_free = [&](std::uint32_t k) {
    remove_free(k);
    unlink(k);
  };
  std::int64_t top = 0;
  for (const auto& e : evs) {
    const auto& b = p.buffers[e.i];
    if (e.kind == 0) {
      const auto k = holds[e.i];
      auto start = blocks[k].start, end = blocks[k].end;
      if (const auto next = blocks[k].next; next != none && blocks[next].free) {
        end = blocks[next].end;
        drop_free(next);
      }
      if (const auto prev = blocks[k].prev; prev != none && blocks[prev].free) {
        start = blocks[prev].start;
        drop_free(prev);
      }
      if (blocks[k].next == none) {  // the highest block: the top comes down instead
        top = start;
        unlink(k);
        continue;
      }
      blocks[k] = {start, end, blocks[k].prev, blocks[k].next, true};
      add_free(k);
      continue;
    }
    const auto a = effective_alignment(p, b);
    auto k = none;
    auto hit = by_size.end();
    if (rule == fit::first) {
      k = by_address.lowest_fit(b.size, a);
    } else {
      // The smallest blocks of at least the size, a few of them for the alignment; then the smallest
      // one that holds the size whatever its start's alignment.
      auto fits = [&](std::pmr::set<free_key>::iterator it) {
        return align_up(std::get<1>(*it), a) + b.size <= std::get<1>(*it) + std::get<0>(*it);
      };
      auto it = by_size.lower_bound({b.size, std::numeric_limits<std::int64_t>::min(), 0});
      for (int looked = 0; it != by_size.end() && looked < 4 && !fits(it); ++it, ++looked) {}
      if (it != by_size.end() && !fits(it)) it = by_size.lower_bound({b.size + a - 1, std::numeric_limits<std::int64_t>::min(), 0});
      if (it != by_size.end()) k = std::get<2>(*(hit = it));
    }
    std::int64_t pos;
    if (k != none) {
      const auto s = blocks[k].start, end = blocks[k].end;
      pos = align_up(s, a);
      if (rule == fit::best) by_size.erase(hit);  // (by its iterator: no second search)
      else by_address.erase(s);
      // Block k now holds the buffer; the padding below it and the rest above it stay free.
      blocks[k] = {pos, pos + b.size, blocks[k].prev, blocks[k].next, false};
      if (s < pos) make(s, pos, blocks[k].prev, k, true);
      if (pos + b.size < end) make(pos + b.size, end, k, blocks[k].next, true);
      holds[e.i] = k;
    } else {
      pos = align_up(top, a);
      if (pos > top) make(top, pos, last, none, true);
      holds[e.i] = make(pos, pos + b.size, last, none, false);
      top = pos + b.size;
    }
    offsets[e.i] = base + pos;
  }
  return offsets;
}

// What a composite placer keeps back from its passes' deadline, by the number of buffers (measured at
// 100k buffers on the 2-core host, stop 50: the referee's final check 0.08-0.09 us a buffer, the
// best-fit sweep that stacks a cut pass's remaining buffers 0.2-0.5 us; stop 49 saw 0.25 and 0.6 us
// on a slower day of the same host: kept with a margin for that).
inline double check_seconds(std::size_t buffers) { return 0.5e-6 * static_cast<double>(buffers); }
inline double wrap_up_seconds(std::size_t buffers) { return 1.5e-6 * static_cast<double>(buffers); }
// A greedy pass costs about 1 us a buffer to set up and 4-5 us a buffer in all at 100k buffers; with
// less time left than that, a cut pass (its rest stacked on top) is usually worse than the sweep.
inline double greedy_pass_seconds(std::size_t buffers) { return 5e-6 * static_cast<double>(buffers); }

// The cheapest valid passes: an allocator replayed over time (frees before allocations at equal
// steps), best fit or first fit, O(n log n). What a composite placer starts from when its time limit cannot
// pay for a whole greedy pass (on dnn_like sets of 100k buffers best fit lands 0.1 % above max load in
// 20-25 ms, where a cut greedy pass stacks most of its buffers on top). Same interface as the greedy
// placers' offsets(). Without pins, first fit with a step's allocations larger first places exactly
// as first_fit_by_allocation's greedy pass (the lowest gap among the buffers live at a buffer's start
// is the lowest free block then; tested), unless more than 1,024 lower blocks fail on alignment alone,
// in O(n log n) where that pass searches the live buffers; first_fit_by_allocation uses it.
struct allocator_sweep {
  fit rule = fit::best;
  sweep_ties ties = sweep_ties::by_index;
  [[nodiscard]] std::string name() const {
    return std::string(rule == fit::best ? "best_fit_sweep" : "first_fit_sweep") +
           (ties == sweep_ties::by_index ? "" : ties == sweep_ties::larger_first ? "(larger first)" : "(longer first)");
  }
  template <class Deadline>
  [[nodiscard]] std::vector<std::int64_t> offsets(const buffer_problem& p, const Deadline& until, bool* = nullptr) const {
    if constexpr (requires { until.charge(std::int64_t{}); })
      until.charge(64 * static_cast<std::int64_t>(p.buffers.size()));  // O(n log n): about, for a work clock
    std::vector<std::int64_t> offsets(p.buffers.size(), unplaced);
    std::vector<std::size_t> rest;
    for (std::size_t i = 0; i < p.buffers.size(); ++i) {
      if (p.buffers[i].fixed_offset >= 0) offsets[i] = p.buffers[i].fixed_offset;
      else rest.push_back(i);
    }
    return stack_on_top(p, rest, std::move(offsets), ties, rule);
  }
};

// The sweeps a composite placer starts from when a whole greedy pass does not fit: the best-fit sweep,
// then, while `until` (the caller's deadline less the final check: a sweep places every buffer, nothing
// is left to stack) leaves half as much again as the first took, the same with the allocations of a
// step larger first and longer-lived first, and first fit (larger first) (`consider` keeps the best).
// The order within a step matters on training-shaped lists (dnn_like, 100k buffers: 0.126 % above max
// load by index, 0.042 % larger first, 0.038 % longer first) and first fit on compiler traces
// (idealloc's pangu set: 19.4 % best fit in every order, 12.2 % first fit); no sweep is best on every set.
template <class Consider>
void sweeps(const deadline& until, Consider&& consider) {
  const auto started = until.now();  // (on until's clock: a work clock in deterministic mode)
  consider(allocator_sweep{});
  const auto took = std::chrono::duration<double>(until.now() - started).count();
  for (const auto& sweep : {allocator_sweep{.rule = fit::first, .ties = sweep_ties::larger_first},
                            allocator_sweep{.ties = sweep_ties::larger_first}, allocator_sweep{.ties = sweep_ties::longer_first}})
    if (until.seconds_left() > 1.5 * took) consider(sweep);
}

// Buffers that are not pinned, in index order.
inline std::vector<std::size_t> free_buffers(const buffer_problem& p) {
  std::vector<std::size_t> v;
  for (std::size_t i = 0; i < p.buffers.size(); ++i)
    if (p.buffers[i].fixed_offset < 0) v.push_back(i);
  return v;
}

// For policies that do not model pins natively (gergov, mincost_flow): keep the policy's relative
// address order and settle every buffer, in order of its offset, at the lowest gap left by the pins
// and the buffers settled before it. Also carries one placement's layout to a problem with the same
// buffers in other sizes (default_placer's families of pieces). With `until`: as place_in_order.
inline std::vector<std::int64_t> settle_around_pins(const buffer_problem& p, const std::vector<std::int64_t>& offsets,
                                                    const deadline* until = nullptr) {
  std::vector<std::size_t> order = free_buffers(p);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return offsets[a] != offsets[b] ? offsets[a] < offsets[b] : a < b;
  });
  return place_in_order(p, order, fit::first, {}, until);
}

// The canonical placement of an order (MiniMalloc's): every buffer of `order` at the aligned maximum
// end of the buffers before it in `order` (and the pins) that live at the same time, so no gap below a
// buffer is used. O(n log n): a tree over the time axis whose nodes keep the highest end inserted over
// their whole range (`cover`) and anywhere below them (`top`). Carries one placement's arrangement to
// buffers with the same lifetimes and other sizes: with every size at most the original's, no offset
// rises (default_placer's families of pieces).
inline std::vector<std::int64_t> push_down(const buffer_problem& p, const std::vector<std::size_t>& order) {
  std::vector<std::int64_t> offsets(p.buffers.size(), unplaced);
  const time_axis axis(p);
  int leaves = 1;
  while (leaves < std::max(1, axis.sections())) leaves *= 2;
  std::vector<std::int64_t> cover(2 * static_cast<std::size_t>(leaves), 0), top(cover.size(), 0);
  const auto at = [](std::vector<std::int64_t>& v, int x) -> std::int64_t& { return v[static_cast<std::size_t>(x)]; };
  const auto insert = [&](const buffer& b, std::int64_t end) {
    int l = axis.index(b.lower) + leaves, r = axis.index(b.upper) + leaves;
    for (int a = l >> 1, c = (r - 1) >> 1; a > 0; a >>= 1, c >>= 1) {
      at(top, a) = std::max(at(top, a), end);
      at(top, c) = std::max(at(top, c), end);
    }
    for (; l < r; l >>= 1, r >>= 1) {
      if (l & 1) { at(cover, l) = std::max(at(cover, l), end); at(top, l) = std::max(at(top, l), end); ++l; }
      if (r & 1) { --r; at(cover, r) = std::max(at(cover, r), end); at(top, r) = std::max(at(top, r), end); }
    }
  };
  const auto highest = [&](const buffer& b) {
    std::int64_t h = 0;
    int l = axis.index(b.lower) + leaves, r = axis.index(b.upper) + leaves;
    for (int a = l >> 1, c = (r - 1) >> 1; a > 0; a >>= 1, c >>= 1) h = std::max({h, at(cover, a), at(cover, c)});
    for (; l < r; l >>= 1, r >>= 1) {
      if (l & 1) h = std::max(h, at(top, l++));
      if (r & 1) h = std::max(h, at(top, --r));
    }
    return h;
  };
  for (std::size_t i = 0; i < p.buffers.size(); ++i) {
    const auto& b = p.buffers[i];
    if (b.size == 0) offsets[i] = b.fixed_offset >= 0 ? b.fixed_offset : 0;
    else if (b.fixed_offset >= 0) insert(b, (offsets[i] = b.fixed_offset) + b.size);
  }
  for (auto i : order) {
    const auto& b = p.buffers[i];
    if (offsets[i] != unplaced) continue;
    offsets[i] = align_up(highest(b), effective_alignment(p, b));
    insert(b, offsets[i] + b.size);
  }
  return offsets;
}

inline bool has_pins(const buffer_problem& p) {
  return std::any_of(p.buffers.begin(), p.buffers.end(), [](const buffer& b) { return b.fixed_offset >= 0; });
}


}  // namespace memplan::place::detail
