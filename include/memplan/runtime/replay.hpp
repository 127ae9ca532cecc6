#pragma once
// Replaying a planned allocation trace (MemoMalloc §3.2-§3.3): one slab per thread / request, the i-th
// allocation of a run served at `slab + offset[i]`, frees in O(1), no locks, no caching.
//
//   auto trace = recorder.take();                                  // runtime/trace.hpp
//   auto plan  = std::make_shared<const replay_plan>(plan_trace(trace, place::greedy_by_size{}));  // §3.2
//   replaying_resource<> mem(plan);                                 // one per thread
//   ... the program allocates through &mem ...; mem.begin_run(); ... next iteration ...
//
// A later run need not repeat the trace. Before it serves allocation i from the slab the resource checks
// that (a) the request has the recorded size and at most the recorded alignment and (b) every planned
// allocation the trace had freed before allocation i is freed in this run too (frees may come earlier or
// in another order, not later). Then every slab allocation live now was live at allocation i in the trace,
// and the placement keeps i clear of all of them: the slab never hands out memory that overlaps a live
// allocation. The first request that fails a check makes the run *divergent*: it and every later
// allocation of the run go to the upstream resource (counted as misses); slab memory already handed out
// stays valid and is freed as usual. MemoMalloc assumes the profiled order; this check is what makes a
// different run safe instead of corrupt.
//
// Costs: allocate is O(1) amortized (the free check advances a cursor over the free order, one step
// per planned free over a run), deallocate O(1) expected (an open-addressing table of the live slab
// allocations, sized once from the plan's maximum of allocations live together). No allocation or lock
// on the hot path; the plan is immutable and may be shared by any number of threads, each with its own
// resource. The resource itself is not thread safe (one per thread, as MemoMalloc's slab per request).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <string>
#include <type_traits>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/core/buffer.hpp>
#include <memplan/runtime/arena.hpp>
#include <memplan/runtime/slab_backend.hpp>
#include <memplan/runtime/trace.hpp>

// Under AddressSanitizer the slab's free bytes are poisoned: a use after free of slab memory, or a
// read past the end of a slab allocation into its neighbour, is reported like one of heap memory.
#if defined(__SANITIZE_ADDRESS__)
#define MEMPLAN_SLAB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEMPLAN_SLAB_ASAN 1
#endif
#endif
#if defined(MEMPLAN_SLAB_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace memplan::runtime {

namespace detail {
inline void slab_poison([[maybe_unused]] const void* p, [[maybe_unused]] std::size_t n) noexcept {
#if defined(MEMPLAN_SLAB_ASAN)
  ASAN_POISON_MEMORY_REGION(p, n);
#endif
}
inline void slab_unpoison([[maybe_unused]] const void* p, [[maybe_unused]] std::size_t n) noexcept {
#if defined(MEMPLAN_SLAB_ASAN)
  ASAN_UNPOISON_MEMORY_REGION(p, n);
#endif
}
}  // namespace detail

// What the replay does with the i-th allocation request of a run.
struct replay_entry {
  std::int64_t size = 0;          // the request must have exactly this size
  std::int64_t alignment = 1;     // and at most this alignment
  std::int64_t offset = -1;       // in the slab; -1: left to the upstream resource (empty or escaping)
  std::int32_t free_rank = -1;    // planned: position of its free among the trace's planned frees
  std::int32_t frees_before = 0;  // planned frees the trace had done before this allocation
  [[nodiscard]] bool planned() const noexcept { return offset >= 0; }
};

struct replay_plan {
  std::vector<replay_entry> entries;  // one per allocation of the trace, in allocation order
  std::int64_t arena = 0;             // slab bytes
  std::int64_t alignment = 64;        // slab alignment (every planned offset is aligned to its entry's)
  std::int32_t planned = 0;           // entries served from the slab (= number of free ranks)
  std::int32_t max_live = 0;          // most planned allocations live together
  std::string placer;                 // which placer produced the offsets
};

// The replay plan of a trace under a placement of its buffer problem. The placement is checked by the
// referee (core/buffer.hpp) first: a plan is never built from overlapping offsets.
inline replay_plan make_replay_plan(const allocation_trace& t, const trace_problem& tp, const buffer_placement& pl) {
  if (auto bad = check(tp.problem, pl)) throw error(errc::invalid_plan, "replay plan: " + *bad);
  replay_plan rp;
  rp.arena = pl.arena;
  rp.placer = pl.placer;
  rp.alignment = std::max<std::int64_t>(64, tp.problem.alignment);
  rp.entries.resize(t.allocations.size());
  for (std::size_t i = 0; i < t.allocations.size(); ++i) {
    rp.entries[i].size = t.allocations[i].size;
    rp.entries[i].alignment = t.allocations[i].alignment;
  }
  // Planned frees in event order give the ranks; frees_before counts those before an allocation.
  std::vector<std::pair<std::int64_t, std::int32_t>> ends;  // (free event, allocation)
  for (std::size_t b = 0; b < tp.allocation.size(); ++b) {
    const auto a = static_cast<std::size_t>(tp.allocation[b]);
    if (t.allocations[a].size == 0) continue;  // empty: upstream (it could share an offset with a live one)
    auto& e = rp.entries[a];
    e.offset = pl.offsets[b];
    e.alignment = std::max(e.alignment, effective_alignment(tp.problem, tp.problem.buffers[b]));
    rp.alignment = std::max(rp.alignment, e.alignment);
    ends.emplace_back(t.allocations[a].end, tp.allocation[b]);
  }
  std::sort(ends.begin(), ends.end());
  for (std::size_t r = 0; r < ends.size(); ++r) rp.entries[static_cast<std::size_t>(ends[r].second)].free_rank = static_cast<std::int32_t>(r);
  rp.planned = static_cast<std::int32_t>(ends.size());
  std::int32_t live = 0;
  std::size_t done = 0;
  for (std::size_t i = 0; i < t.allocations.size(); ++i) {
    while (done < ends.size() && ends[done].first < t.allocations[i].begin) { ++done; --live; }
    rp.entries[i].frees_before = static_cast<std::int32_t>(done);
    if (rp.entries[i].planned()) rp.max_live = std::max(rp.max_live, ++live);
  }
  return rp;
}

// Record → plan in one call: the trace's buffer problem placed by `placer`, any buffer placer of place/
// (MemoMalloc §3.2 uses greedy_by_size, near optimal and fast enough to run before every pass). The
// placer is an argument so that runtime/ depends on core/ only.
template <buffer_placer Placer>
replay_plan plan_trace(const allocation_trace& t, const Placer& placer, std::int64_t alignment = 64) {
  const auto tp = to_buffer_problem(t, alignment);
  return make_replay_plan(t, tp, placer.place(tp.problem));
}

struct replay_stats {
  std::int64_t runs = 0;              // runs started (begin_run, or automatically: cyclic)
  std::int64_t hits = 0;              // allocations served from the slab
  std::int64_t misses = 0;            // allocations served by upstream because the run left the trace
  std::int64_t unplanned = 0;         // allocations the plan leaves to upstream (empty, escaping)
  std::int64_t divergent_runs = 0;    // runs that left the trace
  std::int64_t bad_frees = 0;         // frees of slab addresses that are not live slab allocations (ignored)
  std::int64_t last_divergence = -1;  // allocation index in its run of the latest divergence
  std::string reason;                 // the latest divergence, in words
};

struct replay_options {
  // When every entry of the plan has been served and the slab is empty again, the next allocation
  // starts a new run by itself (a program that repeats its trace needs no begin_run calls).
  bool cyclic = true;
};

namespace detail {
// Live slab allocations: offset -> free rank. Open addressing with linear probing and backward-shift
// deletion; the capacity is fixed at construction (a power of two >= 2 x the most live allocations), so
// inserts never allocate and probes stay short.
class offset_table {
 public:
  explicit offset_table(std::int32_t max_live) {
    std::size_t cap = 8;
    while (cap < 2 * static_cast<std::size_t>(max_live) + 1) cap *= 2;
    slots_.assign(cap, slot{});
    mask_ = cap - 1;
  }
  void insert(std::int64_t offset, std::int32_t rank) noexcept {
    auto i = home(offset);
    while (slots_[i].key != 0) i = (i + 1) & mask_;
    slots_[i] = {offset + 1, rank};
  }
  // Removes offset; returns its rank, or -1 when it is not in the table.
  std::int32_t erase(std::int64_t offset) noexcept {
    const auto key = offset + 1;
    auto i = home(offset);
    while (slots_[i].key != key) {
      if (slots_[i].key == 0) return -1;
      i = (i + 1) & mask_;
    }
    const auto rank = slots_[i].rank;
    // Backward shift: move later members of the probe run into the hole when their home allows it.
    auto hole = i;
    for (auto j = (i + 1) & mask_; slots_[j].key != 0; j = (j + 1) & mask_) {
      const auto h = home(slots_[j].key - 1);
      const bool movable = hole <= j ? (h <= hole || h > j) : (h <= hole && h > j);
      if (movable) {
        slots_[hole] = slots_[j];
        hole = j;
      }
    }
    slots_[hole] = slot{};
    return rank;
  }

 private:
  struct slot {
    std::int64_t key = 0;  // offset + 1; 0: empty
    std::int32_t rank = -1;
  };
  [[nodiscard]] std::size_t home(std::int64_t offset) const noexcept {
    auto x = static_cast<std::uint64_t>(offset);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return static_cast<std::size_t>(x) & mask_;
  }
  std::vector<slot> slots_;
  std::size_t mask_ = 0;
};
}  // namespace detail

// Backend: where the slab lives (slab_host_backend: huge pages, pre-faulted; host_backend; cuda_backend
// from runtime/cuda.hpp for device memory -- then the pointers it returns are device pointers).
template <memory_backend Backend = slab_host_backend>
class replaying_resource final : public std::pmr::memory_resource {
 public:
  explicit replaying_resource(std::shared_ptr<const replay_plan> plan, std::pmr::memory_resource* upstream = std::pmr::new_delete_resource(),
                              replay_options opt = {}, Backend backend = {})
      : plan_(std::move(plan)), upstream_(upstream), opt_(opt),
        slab_(plan_ ? plan_->arena : 0, plan_ ? plan_->alignment : 64, backend),
        live_table_(plan_ ? plan_->max_live : 0) {
    if (!plan_) throw error(errc::invalid_argument, "replaying_resource: no plan");
    entries_ = plan_->entries.data();
    count_ = plan_->entries.size();
    freed_.assign(static_cast<std::size_t>(plan_->planned), 0);
    if constexpr (host_slab) detail::slab_poison(slab_.data(), static_cast<std::size_t>(slab_.size()));
    begin_run();
  }
  ~replaying_resource() override {
    if constexpr (host_slab) detail::slab_unpoison(slab_.data(), static_cast<std::size_t>(slab_.size()));
  }
  replaying_resource(const replaying_resource&) = delete;
  replaying_resource& operator=(const replaying_resource&) = delete;

  // Starts a run (a forward pass, a training step, a request): allocation 0 of the plan comes next.
  // Slab allocations still live from the previous run would overlap this one's, so such a run starts
  // divergent (everything from upstream) and says so.
  void begin_run() {
    ++stats_.runs;
    next_ = 0;
    checked_ = 0;
    done_ = 0;
    std::fill(freed_.begin(), freed_.end(), std::uint8_t{0});
    diverged_ = false;
    if (live_ > 0) diverge(std::to_string(live_) + " slab allocations of the previous run are still live");
  }

  [[nodiscard]] const replay_plan& plan() const noexcept { return *plan_; }
  [[nodiscard]] const replay_stats& stats() const noexcept { return stats_; }
  [[nodiscard]] bool diverged() const noexcept { return diverged_; }
  [[nodiscard]] std::size_t position() const noexcept { return next_; }   // next allocation index of the run
  [[nodiscard]] std::int64_t live_slab_allocations() const noexcept { return live_; }
  [[nodiscard]] std::int64_t reserved_bytes() const noexcept { return slab_.size(); }
  [[nodiscard]] std::byte* slab() const noexcept { return slab_.data(); }
  [[nodiscard]] bool owns(const void* p) const noexcept {
    const auto a = reinterpret_cast<std::uintptr_t>(p), b = reinterpret_cast<std::uintptr_t>(slab_.data());
    return a >= b && a - b < static_cast<std::uintptr_t>(slab_.size());
  }

 private:
  // Host memory is poisoned for ASan; device memory (cuda_backend) is not the host's to poison.
  static constexpr bool host_slab = std::is_base_of_v<host_backend, Backend>;

  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    if (next_ == count_ && opt_.cyclic && live_ == 0 && !diverged_) begin_run();
    if (!diverged_) {
      if (next_ < count_) {
        const auto& e = entries_[next_];
        if (static_cast<std::int64_t>(bytes) == e.size && static_cast<std::int64_t>(alignment) <= e.alignment) {
          if (e.planned()) {
            if (frees_done(e.frees_before)) {
              ++next_;
              ++live_;
              ++stats_.hits;
              live_table_.insert(e.offset, e.free_rank);
              if constexpr (host_slab) detail::slab_unpoison(slab_.data() + e.offset, bytes);
              return slab_.data() + e.offset;
            }
            diverge("allocation " + std::to_string(next_) + " comes before " + std::to_string(e.frees_before - done_) +
                    " of the frees the trace had done by then");
          } else {
            ++next_;
            ++stats_.unplanned;
            return upstream_->allocate(bytes, alignment);
          }
        } else {
          diverge("allocation " + std::to_string(next_) + " asks for " + std::to_string(bytes) + " bytes aligned to " +
                  std::to_string(alignment) + "; the trace has " + std::to_string(e.size) + " aligned to " + std::to_string(e.alignment));
        }
      } else {
        diverge("more allocations than the trace's " + std::to_string(count_));
      }
    }
    ++stats_.misses;
    return upstream_->allocate(bytes, alignment);
  }

  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    if (!owns(p)) {
      upstream_->deallocate(p, bytes, alignment);
      return;
    }
    const auto rank = live_table_.erase(static_cast<std::byte*>(p) - slab_.data());
    if (rank < 0) {
      ++stats_.bad_frees;
      return;
    }
    if constexpr (host_slab) detail::slab_poison(p, bytes);
    --live_;
    if (diverged_) return;
    freed_[static_cast<std::size_t>(rank)] = 1;
    if (rank < checked_) ++done_;
  }

  [[nodiscard]] bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }

  // Have the first `needed` planned frees of the trace (by rank) all happened in this run?
  bool frees_done(std::int32_t needed) noexcept {
    for (; checked_ < needed; ++checked_) done_ += freed_[static_cast<std::size_t>(checked_)];
    return done_ == needed;
  }

  void diverge(std::string why) {
    diverged_ = true;
    ++stats_.divergent_runs;
    stats_.last_divergence = static_cast<std::int64_t>(next_);
    stats_.reason = std::move(why);
  }

  std::shared_ptr<const replay_plan> plan_;
  std::pmr::memory_resource* upstream_;
  replay_options opt_;
  arena<Backend> slab_;
  detail::offset_table live_table_;
  const replay_entry* entries_ = nullptr;
  std::size_t count_ = 0;
  std::vector<std::uint8_t> freed_;  // by free rank: freed in this run
  std::size_t next_ = 0;             // next allocation index of the run
  std::int32_t checked_ = 0;         // ranks [0, checked_) have been looked at by frees_done
  std::int32_t done_ = 0;            // of those, freed in this run
  std::int64_t live_ = 0;            // live slab allocations
  bool diverged_ = false;
  replay_stats stats_;
};

}  // namespace memplan::runtime
