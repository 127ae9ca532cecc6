#pragma once
// Allocation traces and the recording memory resource (MemoMalloc §3.1, "Profiling").
//
// A program runs once under `recording_resource`; every allocation is forwarded to an upstream resource
// and recorded: its size, alignment, its position in the sequence of allocation/free events, when it was
// freed, and an optional tag naming the op or tensor it serves. The trace then becomes a
// `buffer_problem` (lifetimes in events), a placer solves it, and `replaying_resource`
// (runtime/replay.hpp) serves the same allocations of later runs from one slab.
//
// Lifetimes are exact. MemoMalloc instruments the system allocator, which only sees pointers, and
// reused addresses make frees ambiguous; it tags the top 16 bits of each pointer with an allocation
// id (§3.1, Listing 4). The recorder owns the map from live pointers to allocation ids instead: an
// address is in the map only while its allocation is live, so a later allocation at the same address
// is a different id. Views (interior pointers, slices) resolve to the allocation that contains them
// (`owner`), and `note_view` records which tensor names alias an allocation, so that a plan counts
// each allocation once (no "overplanning", §3.1) and tags can still name every tensor.
//
// The recorder is not thread safe: record each thread (request) with its own recorder.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory_resource>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/core/buffer.hpp>

namespace memplan::runtime {

inline constexpr std::int64_t never_freed = -1;

// One allocation of a trace. `begin` and `end` are positions in the event sequence (every allocation
// and every free is one event); the allocation is live over [begin, end).
struct allocation_record {
  std::int64_t size = 0;
  std::int64_t alignment = 1;
  std::int64_t begin = 0;           // event index of the allocation
  std::int64_t end = never_freed;   // event index of its free; never_freed: it escapes the trace
  std::string tag;                  // the op / tensor it serves ("" when untagged)
  std::int32_t scope = -1;          // the scope (operator instance) active at the allocation, -1: none
  std::int32_t free_scope = -1;     // the scope active at its free (the op that used it last)

  [[nodiscard]] bool freed() const noexcept { return end >= 0; }
};

// A tensor name that is a view of (aliases) an allocation: §3.1's resolved aliases.
struct view_record {
  std::int32_t allocation = -1;
  std::int64_t offset = 0;  // bytes from the allocation's start
  std::string tag;
};

struct allocation_trace {
  std::vector<allocation_record> allocations;  // in allocation order: allocation i is the i-th request
  std::vector<view_record> views;
  std::vector<std::string> scopes;             // operator instances in the order they began (set_scope)
  std::int64_t events = 0;                     // allocations + frees recorded

  // Allocations a replay serves from its slab: non-empty and freed within the trace. Empty ones and
  // those that escape (are still live at the end, e.g. a returned tensor) go to the upstream resource,
  // as MemoMalloc leaves tensors that escape the graph to the framework (§3.3).
  [[nodiscard]] static bool planned(const allocation_record& r) noexcept { return r.size > 0 && r.freed(); }
};

// The placement problem of a trace: one buffer per planned allocation, live over [begin, end) events.
struct trace_problem {
  buffer_problem problem;
  std::vector<std::int32_t> allocation;  // buffer -> allocation index in the trace
};

inline trace_problem to_buffer_problem(const allocation_trace& t, std::int64_t alignment = 64) {
  trace_problem tp;
  tp.problem.alignment = alignment;
  for (std::size_t i = 0; i < t.allocations.size(); ++i) {
    const auto& r = t.allocations[i];
    if (!allocation_trace::planned(r)) continue;
    tp.problem.buffers.push_back({r.begin, r.end, r.size, r.alignment, -1});
    tp.allocation.push_back(static_cast<std::int32_t>(i));
  }
  return tp;
}

// Peak of live requested bytes over the trace (all allocations, planned or not).
inline std::int64_t live_peak(const allocation_trace& t) {
  std::vector<std::int64_t> diff(static_cast<std::size_t>(t.events) + 1, 0);
  for (const auto& r : t.allocations) {
    diff[static_cast<std::size_t>(r.begin)] += r.size;
    if (r.freed()) diff[static_cast<std::size_t>(r.end)] -= r.size;
  }
  std::int64_t live = 0, peak = 0;
  for (auto d : diff) peak = std::max(peak, live += d);
  return peak;
}

// Records every allocation that passes through it (see the top of this file).
class recording_resource final : public std::pmr::memory_resource {
 public:
  explicit recording_resource(std::pmr::memory_resource* upstream = std::pmr::new_delete_resource()) : upstream_(upstream) {}
  recording_resource(const recording_resource&) = delete;
  recording_resource& operator=(const recording_resource&) = delete;

  // C-style API: allocate with a tag naming the op / tensor; deallocate needs only the pointer.
  [[nodiscard]] void* allocate_tagged(std::size_t bytes, std::size_t alignment, std::string_view tag) {
    void* p = upstream_->allocate(bytes, alignment);
    record(p, bytes, alignment, tag);
    return p;
  }
  void deallocate(void* p) {
    const auto it = live_.find(address(p));
    if (it == live_.end())
      throw error(errc::invalid_argument, "recording_resource: free of a pointer that is not a live allocation");
    const auto& r = trace_.allocations[static_cast<std::size_t>(it->second)];
    upstream_->deallocate(p, static_cast<std::size_t>(r.size), static_cast<std::size_t>(r.alignment));
    end(it);
  }
  using std::pmr::memory_resource::allocate;
  using std::pmr::memory_resource::deallocate;

  // Begins the scope of an operator (e.g. its name, before it runs: MemoMalloc's auxiliary stack of the
  // operator in whose scope an allocation is made, §3.1). Untagged allocations get its name as tag;
  // every allocation and free records the scope instance it happened in (trace_graph.hpp turns scopes
  // into ops). Each call begins a new instance, also under a name seen before.
  void set_scope(std::string_view name) {
    scope_ = name;
    trace_.scopes.emplace_back(name);
  }

  // The live allocation containing p (a view or interior pointer resolves to its base), or -1.
  [[nodiscard]] std::int32_t owner(const void* p) const {
    const auto a = address(p);
    auto it = live_.upper_bound(a);
    if (it == live_.begin()) return -1;
    --it;
    const auto& r = trace_.allocations[static_cast<std::size_t>(it->second)];
    const auto size = static_cast<std::uintptr_t>(r.size > 0 ? r.size : 1);
    return a - it->first < size ? it->second : -1;
  }
  // Records that the tensor `tag` is a view into the live allocation containing p; returns its id.
  std::int32_t note_view(const void* p, std::string_view tag) {
    const auto id = owner(p);
    if (id < 0) throw error(errc::invalid_argument, "recording_resource: view '" + std::string(tag) + "' points into no live allocation");
    const auto base = std::prev(live_.upper_bound(address(p)))->first;
    trace_.views.push_back({id, static_cast<std::int64_t>(address(p) - base), std::string(tag)});
    return id;
  }

  [[nodiscard]] const allocation_trace& trace() const noexcept { return trace_; }
  [[nodiscard]] std::size_t live_count() const noexcept { return live_.size(); }
  // Takes the trace out and starts a new one (allocations still live are forgotten: they escape).
  allocation_trace take() {
    live_.clear();
    scope_.clear();
    return std::exchange(trace_, {});
  }

 private:
  static std::uintptr_t address(const void* p) noexcept { return reinterpret_cast<std::uintptr_t>(p); }

  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    void* p = upstream_->allocate(bytes, alignment);
    record(p, bytes, alignment, scope_);
    return p;
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t alignment) override {
    const auto it = live_.find(address(p));
    if (it != live_.end()) end(it);
    upstream_->deallocate(p, bytes, alignment);
  }
  [[nodiscard]] bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }

  void record(void* p, std::size_t bytes, std::size_t alignment, std::string_view tag) {
    const auto id = static_cast<std::int32_t>(trace_.allocations.size());
    trace_.allocations.push_back({static_cast<std::int64_t>(bytes), static_cast<std::int64_t>(alignment), trace_.events++,
                                  never_freed, std::string(tag), current_scope(), -1});
    // Zero-byte allocations may share an address with a live one; only non-empty ones are keyed.
    if (bytes > 0) live_[address(p)] = id;
  }
  [[nodiscard]] std::int32_t current_scope() const noexcept { return static_cast<std::int32_t>(trace_.scopes.size()) - 1; }
  void end(std::map<std::uintptr_t, std::int32_t>::iterator it) {
    auto& r = trace_.allocations[static_cast<std::size_t>(it->second)];
    r.end = trace_.events++;
    r.free_scope = current_scope();
    live_.erase(it);
  }

  std::pmr::memory_resource* upstream_;
  allocation_trace trace_;
  std::map<std::uintptr_t, std::int32_t> live_;  // start address -> allocation id, live allocations only
  std::string scope_;
};

}  // namespace memplan::runtime
