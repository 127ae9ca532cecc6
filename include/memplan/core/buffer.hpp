#pragma once
// The placement contract: buffers with fixed lifetimes [lower, upper) and sizes; find offsets so that
// no two buffers whose lifetimes overlap share an address (OLLA §2.3, eq. 6-8; MemoMalloc §2.3). A
// timeline's materializations and workspaces become such buffers (core/timeline.hpp); the MiniMalloc
// benchmark format (id,lower,upper,size) is one too. Every placer of place/ solves it.
#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <memplan/base/error.hpp>

namespace memplan {

struct buffer {
  std::int64_t lower = 0;          // first step where the buffer is live (inclusive)
  std::int64_t upper = 0;          // first step where it is dead again (exclusive); lower < upper
  std::int64_t size = 0;           // bytes, >= 0
  std::int64_t alignment = 1;      // power of two; the offset must be a multiple of it (and of the problem's)
  std::int64_t fixed_offset = -1;  // >= 0: the buffer is pinned at this offset
};

struct buffer_problem {
  std::vector<buffer> buffers;
  std::int64_t alignment = 1;  // global alignment, power of two
  std::int64_t capacity = std::numeric_limits<std::int64_t>::max();  // arena must fit in this
};

struct buffer_placement {
  std::vector<std::int64_t> offsets;  // one per buffer, same order as buffer_problem::buffers
  std::int64_t arena = 0;             // max over buffers of offset + size (0 when empty)
  std::int64_t lower_bound = 0;       // a proven lower bound on the arena of any placement
  bool optimal = false;               // arena == the proven minimum
  std::string placer;                 // which policy produced it (best_of names the winner)
  std::string note;                   // fallbacks, time-outs, ... in words
};

// Alignment of buffer i under the problem: the larger of the two powers of two.
inline std::int64_t effective_alignment(const buffer_problem& p, const buffer& b) {
  return b.alignment > p.alignment ? b.alignment : p.alignment;
}

inline std::int64_t align_up(std::int64_t x, std::int64_t a) { return (x + a - 1) / a * a; }

namespace detail {
// One event of a sweep over lifetimes: buffer i opens at its lower end (kind 1) or closes at its upper
// end (kind 0).
struct lifetime_event {
  std::int64_t t;
  int kind;
  std::size_t i;
};

// The lifetime events of the buffers i with keep(i), by time, closes before opens at equal times
// (lifetimes are [lower, upper)), then by buffer index: the order of every sweep over buffers (the
// referee, the bounds, the fallback placements). The step indices of real traces span fewer steps than
// there are events (0.2-0.8 times on the bundled and idealloc sets), so when the times span at most the
// number of events a counting sort over them (O(n + T), stable in the index; its counts take no more
// memory than the events) replaces the comparison sort: at 100k buffers the sorts were most of a
// deadline's fixed cost. MiniMalloc's sets (a few hundred buffers over 2^20 steps) take std::sort.
template <class Keep>
std::vector<lifetime_event> lifetime_events(const buffer_problem& p, Keep keep) {
  std::vector<std::size_t> ids;
  std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = std::numeric_limits<std::int64_t>::min();
  for (std::size_t i = 0; i < p.buffers.size(); ++i) {
    if (!keep(i)) continue;
    ids.push_back(i);
    lo = std::min(lo, p.buffers[i].lower);
    hi = std::max(hi, p.buffers[i].upper);
  }
  std::vector<lifetime_event> evs(2 * ids.size());
  if (ids.empty()) return evs;
  // hi - lo < 2^62: validate() keeps lifetimes within +-2^61.
  if (const auto span = static_cast<std::uint64_t>(hi - lo); span <= static_cast<std::uint64_t>(evs.size()) + 64) {
    const auto key = [&](std::int64_t t, int kind) { return 2 * static_cast<std::size_t>(t - lo) + static_cast<std::size_t>(kind); };
    std::vector<std::size_t> at(2 * static_cast<std::size_t>(span) + 3, 0);  // bucket starts
    for (auto i : ids) {
      ++at[key(p.buffers[i].lower, 1) + 1];
      ++at[key(p.buffers[i].upper, 0) + 1];
    }
    for (std::size_t k = 1; k < at.size(); ++k) at[k] += at[k - 1];
    for (auto i : ids) {  // ascending i: stable within a bucket
      evs[at[key(p.buffers[i].lower, 1)]++] = {p.buffers[i].lower, 1, i};
      evs[at[key(p.buffers[i].upper, 0)]++] = {p.buffers[i].upper, 0, i};
    }
    return evs;
  }
  std::size_t k = 0;
  for (auto i : ids) {
    evs[k++] = {p.buffers[i].lower, 1, i};
    evs[k++] = {p.buffers[i].upper, 0, i};
  }
  std::sort(evs.begin(), evs.end(), [](const lifetime_event& a, const lifetime_event& b) {
    return a.t != b.t ? a.t < b.t : a.kind != b.kind ? a.kind < b.kind : a.i < b.i;
  });
  return evs;
}
}  // namespace detail

// Validates the input: sizes, lifetimes, alignments and pinned offsets. Throws memplan::error naming the
// buffer (errc::invalid_argument; errc::infeasible for pinned buffers that overlap while live together)
// as name(i) says: "buffer i" by default; plan() names the tensor or op the buffer holds.
template <class Name>
void validate(const buffer_problem& p, Name&& name) {
  auto pow2 = [](std::int64_t a) { return a > 0 && (a & (a - 1)) == 0; };
  if (!pow2(p.alignment))
    throw error(errc::invalid_argument, "buffer problem: alignment " + std::to_string(p.alignment) + " is not a power of two");
  if (p.capacity < 0) throw error(errc::invalid_argument, "buffer problem: negative capacity");
  for (std::size_t i = 0; i < p.buffers.size(); ++i) {
    const auto& b = p.buffers[i];
    const std::string who = name(i);
    if (b.size < 0) throw error(errc::invalid_argument, who + ": negative size " + std::to_string(b.size));
    if (b.lower >= b.upper)
      throw error(errc::invalid_argument, who + ": empty lifetime [" + std::to_string(b.lower) + ", " + std::to_string(b.upper) + ")");
    // Placers take lifetime lengths (upper - lower) and sums of them: both ends within +-2^61.
    constexpr std::int64_t time_limit = std::int64_t{1} << 61;
    if (b.lower < -time_limit || b.upper > time_limit)
      throw error(errc::invalid_argument, who + ": lifetime [" + std::to_string(b.lower) + ", " + std::to_string(b.upper) +
                                              ") reaches beyond +-2^61, which the placers' arithmetic does not hold");
    if (!pow2(b.alignment))
      throw error(errc::invalid_argument, who + ": alignment " + std::to_string(b.alignment) + " is not a power of two");
    if (b.fixed_offset >= 0 && b.fixed_offset % effective_alignment(p, b) != 0)
      throw error(errc::invalid_argument, who + ": fixed offset " + std::to_string(b.fixed_offset) + " breaks its alignment");
    if (b.size > std::numeric_limits<std::int64_t>::max() / 4)
      throw error(errc::invalid_argument, who + ": size " + std::to_string(b.size) + " overflows");
    if (b.fixed_offset > std::numeric_limits<std::int64_t>::max() / 2)
      throw error(errc::invalid_argument, who + ": fixed offset " + std::to_string(b.fixed_offset) + " overflows the arena arithmetic");
  }
  // The worst arena any placer can build: every buffer stacked above the highest pinned one, each
  // padded to its alignment and rounded up as an allocator model rounds it (up to a 20 MiB segment,
  // place/online/caching_allocator.hpp; 64 MiB are allowed). Refused when that can leave 2^62 - 1,
  // so that no offset + size inside a placer overflows int64.
  {
    constexpr std::int64_t half = std::numeric_limits<std::int64_t>::max() / 2;
    constexpr std::int64_t rounding = std::int64_t{1} << 26;
    std::int64_t worst = 0;
    for (const auto& b : p.buffers)
      if (b.fixed_offset >= 0) worst = std::max(worst, b.fixed_offset + b.size);
    for (std::size_t i = 0; i < p.buffers.size(); ++i) {
      const auto& b = p.buffers[i];
      const auto term = b.size + (effective_alignment(p, b) - 1) + rounding;
      if (worst > half - term)
        throw error(errc::limit_exceeded, "buffer problem: " + std::to_string(p.buffers.size()) +
                                              " buffers with their sizes and alignment padding could need an arena beyond 2^62 "
                                              "bytes (first past it: " + name(i) + ", " + std::to_string(b.size) +
                                              " bytes, alignment " + std::to_string(effective_alignment(p, b)) +
                                              "); memplan's offsets are int64");
      worst += term;
    }
  }
  // Pinned buffers that are live together must not overlap: no placer can move them apart. A sweep
  // over lifetimes with the live pinned buffers ordered by offset (O(k log k) for k pinned buffers).
  std::vector<std::size_t> pinned;
  for (std::size_t i = 0; i < p.buffers.size(); ++i)
    if (p.buffers[i].fixed_offset >= 0 && p.buffers[i].size > 0) pinned.push_back(i);
  if (pinned.size() < 2) return;
  std::vector<std::pair<std::int64_t, std::ptrdiff_t>> events;  // (time, ~i: end | i: start); ends sort first
  events.reserve(2 * pinned.size());
  for (auto i : pinned) {
    events.emplace_back(p.buffers[i].lower, static_cast<std::ptrdiff_t>(i));
    events.emplace_back(p.buffers[i].upper, ~static_cast<std::ptrdiff_t>(i));
  }
  std::sort(events.begin(), events.end());
  std::map<std::int64_t, std::size_t> live;  // offset -> buffer
  auto overlap = [&](std::size_t a, std::size_t b) {
    const auto& x = p.buffers[a];
    const auto& y = p.buffers[b];
    return error(errc::infeasible, name(a) + " and " + name(b) + " are pinned at overlapping offsets [" +
                                       std::to_string(x.fixed_offset) + ", " + std::to_string(x.fixed_offset + x.size) + ") and [" +
                                       std::to_string(y.fixed_offset) + ", " + std::to_string(y.fixed_offset + y.size) +
                                       ") while both are live");
  };
  for (const auto& [time, code] : events) {
    if (code < 0) {
      live.erase(p.buffers[static_cast<std::size_t>(~code)].fixed_offset);
      continue;
    }
    const auto i = static_cast<std::size_t>(code);
    const auto& b = p.buffers[i];
    auto next = live.lower_bound(b.fixed_offset);
    if (next != live.end() && next->first < b.fixed_offset + b.size) throw overlap(next->second, i);
    if (next != live.begin()) {
      const auto prev = std::prev(next);
      if (prev->first + p.buffers[prev->second].size > b.fixed_offset) throw overlap(prev->second, i);
    }
    live.emplace(b.fixed_offset, i);
  }
}

inline void validate(const buffer_problem& p) {
  validate(p, [](std::size_t i) { return "buffer " + std::to_string(i); });
}

// Independent referee for a buffer placement: returns the first violation in words, or nothing.
// O(n log n): one sort by offset and one sweep over lifetimes; the first violation found is returned.
std::optional<std::string> check(const buffer_problem& p, const buffer_placement& pl);

// A buffer placer is a small copyable value with a name and a place() that solves a buffer_problem.
// (Every buffer placer is also a pipeline stage of kind placer: core/stage.hpp.)
template <class P>
// (The member requirements come first: checking them first keeps std::copyable from recursing through
// the converting constructors of type-erased placers.)
concept buffer_placer = requires(const P& p, const buffer_problem& bp) {
  { p.place(bp) } -> std::same_as<buffer_placement>;
  { p.name() } -> std::convertible_to<std::string>;
} && std::copyable<P>;

}  // namespace memplan

#include <algorithm>

#include <memplan/base/bit_tree.hpp>
#include <memplan/base/radix_sort.hpp>

namespace memplan {

inline std::optional<std::string> check(const buffer_problem& p, const buffer_placement& pl) {
  const auto n = p.buffers.size();
  if (pl.offsets.size() != n)
    return "placement has " + std::to_string(pl.offsets.size()) + " offsets for " + std::to_string(n) + " buffers";
  std::int64_t arena = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& b = p.buffers[i];
    const auto off = pl.offsets[i];
    if (off < 0) return "buffer " + std::to_string(i) + ": negative offset " + std::to_string(off);
    if (off % effective_alignment(p, b) != 0)
      return "buffer " + std::to_string(i) + ": offset " + std::to_string(off) + " not aligned to " +
             std::to_string(effective_alignment(p, b));
    if (b.fixed_offset >= 0 && off != b.fixed_offset)
      return "buffer " + std::to_string(i) + ": pinned at " + std::to_string(b.fixed_offset) + " but placed at " +
             std::to_string(off);
    arena = std::max(arena, off + b.size);
  }
  if (arena != pl.arena)
    return "placement claims arena " + std::to_string(pl.arena) + " but buffers end at " + std::to_string(arena);
  if (arena > p.capacity)
    return "arena " + std::to_string(arena) + " exceeds capacity " + std::to_string(p.capacity);
  // Sweep over time: buffers are opened at lower and closed at upper; the open buffers are kept ordered
  // by (offset, index) -- their ranks in one sort, in a bit tree -- and each new buffer is checked
  // against its neighbours only: the open ones never overlap, so if it overlaps any, it overlaps the
  // one just below or just above it.
  std::vector<std::pair<std::uint64_t, std::size_t>> sorted;  // (offset, buffer), in buffer order
  sorted.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    if (p.buffers[i].size > 0) sorted.emplace_back(static_cast<std::uint64_t>(pl.offsets[i]), i);  // >= 0: checked above
  base::sort_by_key(sorted);  // stable: by (offset, buffer)
  std::vector<std::size_t> by_offset(sorted.size()), rank(n, 0);
  for (std::size_t r = 0; r < sorted.size(); ++r) {
    by_offset[r] = sorted[r].second;
    rank[sorted[r].second] = r;
  }
  base::bit_tree open(by_offset.size());
  for (const auto& e : detail::lifetime_events(p, [&](std::size_t i) { return p.buffers[i].size > 0; })) {
    const auto off = pl.offsets[e.i];
    if (e.kind == 0) { open.erase(rank[e.i]); continue; }
    const auto end = off + p.buffers[e.i].size;
    if (const auto above = open.next(rank[e.i]); above != base::bit_tree::npos && pl.offsets[by_offset[above]] < end)
      return "buffers " + std::to_string(e.i) + " and " + std::to_string(by_offset[above]) + " are live together at step " +
             std::to_string(e.t) + " and overlap at offset " + std::to_string(pl.offsets[by_offset[above]]);
    if (const auto below = open.prev(rank[e.i]); below != base::bit_tree::npos) {
      const auto j = by_offset[below];
      if (pl.offsets[j] + p.buffers[j].size > off)
        return "buffers " + std::to_string(j) + " and " + std::to_string(e.i) + " are live together at step " +
               std::to_string(e.t) + " and overlap at offset " + std::to_string(off);
    }
    open.insert(rank[e.i]);
  }
  return std::nullopt;
}

}  // namespace memplan

// The placers of place/ name these types as place::buffer_problem etc. too.
namespace memplan::place {
using memplan::align_up;
using memplan::buffer;
using memplan::buffer_placement;
using memplan::buffer_problem;
using memplan::check;
using memplan::effective_alignment;
using memplan::validate;
}  // namespace memplan::place
