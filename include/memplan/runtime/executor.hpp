#pragma once
// Runs a memory_plan for real. Every tensor lives at its planned offset in ONE arena; `compute` and
// `recompute` steps call the op's kernel with pointers into the arena; `offload`/`prefetch` copy a
// storage to and from a host staging buffer; `free` releases nothing (the arena is static) but, in
// debug mode, poisons the freed bytes with NaN so a wrong plan corrupts the numbers.
//
// Copies overlap compute (executor_options::copy_thread, the default): offloads and prefetches run on a
// copy thread (runtime/copy_engine.hpp, the model's one copy engine) in the plan's order. An offload is
// issued at its copy's start in a timed plan -- before the first op step still running at its `begin`,
// never before the last step that writes the value -- and, in an untimed plan, right after that step;
// its `offload` step (where the plan reuses the bytes) waits for it to complete. A prefetch is issued at
// its step. An op step waits only for copies in flight over bytes it touches: a prefetch of what it
// reads, or any copy over what it writes (its outputs, its workspace). So the bytes and the order of
// every kernel are the synchronous run's, and results are bitwise equal to it.
//
// A kernel is any callable  void(op_id, std::span<std::byte* const> inputs,
//                                 std::span<std::byte* const> outputs, std::byte* workspace)
// receiving pointers in the order of problem::inputs(op) / problem::outputs(op); or, to run the
// implementation the plan chose for each op step (problem::implementations, -1: the op's own),
//                            void(op_id, std::int32_t impl, inputs, outputs, workspace).
//
// eager_executor is the reference: every storage gets its own allocation, freed after its last use
// in the given order -- what an ordinary framework run does.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <memplan/core/analysis.hpp>
#include <memplan/base/error.hpp>
#include <memplan/core/plan.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/core/verify.hpp>
#include <memplan/runtime/arena.hpp>
#include <memplan/runtime/copy_engine.hpp>

namespace memplan::runtime {

template <class K>
concept impl_kernel_fn = std::invocable<K&, op_id, std::int32_t, std::span<std::byte* const>, std::span<std::byte* const>, std::byte*>;
template <class K>
concept kernel_fn = impl_kernel_fn<K> || std::invocable<K&, op_id, std::span<std::byte* const>, std::span<std::byte* const>, std::byte*>;

struct executor_options {
  bool poison = false;  // NaN-fill the arena at start, and every range the plan frees / offloads
  // Run only plans that memplan::verify accepts. Turning it off exists for one purpose: to show,
  // in tests, what a corrupted plan does to the numbers.
  bool verify_plan = true;
  // Offload / prefetch copies on a copy thread, overlapping compute (see above); false: each copy
  // runs on the calling thread at its step, compute waiting for it.
  bool copy_thread = true;
};

struct run_stats {
  std::int64_t high_water = 0;      // highest arena byte any live tensor or workspace touched (+1)
  std::int64_t transfer_bytes = 0;  // bytes copied by offload + prefetch
  std::int64_t recomputed_ops = 0;
  std::int64_t steps = 0;
  double copy_wait_seconds = 0.0;   // time the computing thread waited for copies (copy_thread)
};

template <memory_backend Backend = host_backend>
class executor {
 public:
  // The plan is verified first: an executor never runs a plan the referee rejects. The executor
  // keeps its own copy of the plan; the problem must outlive it (a temporary problem is refused at
  // compile time).
  executor(const problem& p, memory_plan plan, executor_options opt = {}, Backend backend = {})
      : p_(&p), plan_(std::move(plan)), opt_(opt), arena_(plan_.arena, plan_.alignment, backend) {
    if (opt_.verify_plan) verify_or_throw(p, plan_);
    staging_.resize(static_cast<std::size_t>(p.num_storages()));
    cur_ = initial_mats(p, plan_);
    schedule_copies();
    if (opt_.poison) arena_.poison_all();
  }
  executor(const problem&& p, memory_plan plan, executor_options opt = {}, Backend backend = {}) = delete;

  [[nodiscard]] const arena<Backend>& memory() const noexcept { return arena_; }
  [[nodiscard]] const memory_plan& plan() const noexcept { return plan_; }

  // Where a tensor lives now: resident tensors (fill them before run(), read them after) and, after a
  // run, outputs. nullptr for a tensor whose storage is not on the device.
  [[nodiscard]] std::byte* tensor_data(tensor_id t) const {
    const auto s = p_->storage_of(t);
    const auto m = cur_[static_cast<std::size_t>(s)];
    if (m < 0) return nullptr;
    return arena_.at(plan_.mats[static_cast<std::size_t>(m)].offset, p_->storage_bytes(s));
  }

  // One pass over the plan's steps (e.g. one training step). Every copy has completed when it returns
  // (or throws).
  template <kernel_fn K>
  run_stats run(K&& kernel) {
    run_stats rs;
    const auto& p = *p_;
    cur_ = initial_mats(p, plan_);
    on_device_ = initially_on_device(p);
    const bool async = opt_.copy_thread && !issue_order_.empty();
    if (async && !engine_) engine_ = std::make_unique<copy_engine>();
    // A kernel that throws leaves no copy running over the arena.
    struct drain_on_exit {
      copy_engine* e;
      ~drain_on_exit() {
        if (!e) return;
        try {
          e->drain();
        } catch (...) {  // the run is failing already; its own exception is the one to see
        }
      }
    } guard{async ? engine_.get() : nullptr};
    inflight_.clear();
    std::size_t next_copy = 0;
    // Preexisting storages are touched from the start.
    for (std::size_t m = 0; m < cur_.size(); ++m)
      if (cur_[m] >= 0) touch(rs, cur_[m]);
    std::vector<std::byte*> in, out;
    for (std::size_t i = 0; i < plan_.steps.size(); ++i) {
      const auto& st = plan_.steps[i];
      ++rs.steps;
      if (async)
        for (; next_copy < issue_order_.size() && issue_pos_[next_copy] <= static_cast<std::int32_t>(i); ++next_copy)
          issue(static_cast<std::size_t>(issue_order_[next_copy]), rs);
      // New materializations of this step (outputs, a prefetched value) become current.
      std::int32_t next = st.mat;
      step_creations(p, st, on_device_, [&](storage_id s, tensor_id) {
        cur_[static_cast<std::size_t>(s)] = next;
        touch(rs, next++);
      });
      switch (st.kind) {
        case step_kind::compute:
        case step_kind::recompute: {
          const auto o = st.op();
          in.clear();
          out.clear();
          for (auto t : p.inputs(o)) in.push_back(ptr(t));
          for (auto t : p.outputs(o)) out.push_back(ptr(t));
          std::byte* ws = nullptr;
          const auto wsb = step_workspace(p, st);
          if (async) wait_for_copies_under(o, wsb > 0 ? st.workspace_offset : -1, wsb, rs);
          if (wsb > 0) {
            ws = arena_.at(st.workspace_offset, wsb);
            rs.high_water = std::max(rs.high_water, st.workspace_offset + wsb);
            if (opt_.poison) arena_.poison(st.workspace_offset, wsb);
          }
          if constexpr (impl_kernel_fn<K>) kernel(o, st.impl, std::span<std::byte* const>(in), std::span<std::byte* const>(out), ws);
          else kernel(o, std::span<std::byte* const>(in), std::span<std::byte* const>(out), ws);
          if (st.kind == step_kind::recompute) ++rs.recomputed_ops;
          if (wsb > 0 && opt_.poison) arena_.poison(st.workspace_offset, wsb);
          break;
        }
        case step_kind::free:
          if (async && opt_.poison) wait_for_copies_over(current_range(st.tensor()), true, rs);
          release(st.tensor());
          break;
        case step_kind::offload: {
          if (async) {
            // The plan reuses the bytes from here on: the copy must be complete.
            wait_for(tickets_[i], rs);
            release(st.tensor());
            break;
          }
          const auto s = static_cast<std::size_t>(p.storage_of(st.tensor()));
          const auto bytes = p.storage_bytes(p.storage_of(st.tensor()));
          if (bytes > 0) arena_.backend().to_host(staging_[s].data(), tensor_data(st.tensor()), static_cast<std::size_t>(bytes));
          rs.transfer_bytes += bytes;
          release(st.tensor());
          break;
        }
        case step_kind::prefetch: {
          if (async) break;  // issued above, before this step's materialization
          const auto s = static_cast<std::size_t>(p.storage_of(st.tensor()));
          const auto bytes = p.storage_bytes(p.storage_of(st.tensor()));
          if (bytes > 0) arena_.backend().from_host(tensor_data(st.tensor()), staging_[s].data(), static_cast<std::size_t>(bytes));
          rs.transfer_bytes += bytes;
          break;
        }
      }
    }
    if (async) {
      guard.e = nullptr;
      const auto t0 = std::chrono::steady_clock::now();
      engine_->drain();
      rs.copy_wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      inflight_.clear();
    }
    return rs;
  }

 private:
  struct range {
    std::int64_t offset = 0, bytes = 0;
  };
  struct copy_in_flight {
    copy_engine::ticket ticket = 0;
    range r;
    bool writes_device = false;  // a prefetch
  };

  // When each offload / prefetch is handed to the copy thread (see the header comment): issue_order_
  // lists the transfer steps in the order they are issued, issue_pos_ the step before which each is.
  void schedule_copies() {
    const auto& p = *p_;
    const auto& steps = plan_.steps;
    const auto n = steps.size();
    tickets_.assign(n, 0);
    std::vector<std::int32_t> last_write(static_cast<std::size_t>(p.num_storages()), -1);
    struct item {
      std::int32_t pos;
      double begin;
      std::int32_t step;
    };
    std::vector<item> items;
    for (std::size_t j = 0; j < n; ++j) {
      const auto& st = steps[j];
      if (runs_op(st.kind)) {
        for (auto t : p.outputs(st.id)) last_write[static_cast<std::size_t>(p.storage_of(t))] = static_cast<std::int32_t>(j);
        continue;
      }
      if (st.kind == step_kind::free) continue;
      const auto s = p.storage_of(st.tensor());
      const auto bytes = p.storage_bytes(s);
      if (bytes == 0) continue;
      // Staging is sized here, once (both modes): the copy thread never sees it reallocated.
      auto& buf = staging_[static_cast<std::size_t>(s)];
      if (buf.size() != static_cast<std::size_t>(bytes)) buf = detail::staging_block<Backend>(static_cast<std::size_t>(bytes), arena_.backend());
      auto pos = static_cast<std::int32_t>(j);
      if (st.kind == step_kind::offload) {
        const auto ready = last_write[static_cast<std::size_t>(s)] + 1;
        pos = ready;
        if (plan_.timed) {
          // The first op step after the value is written that still runs at the copy's start.
          pos = static_cast<std::int32_t>(j);
          for (auto k = static_cast<std::size_t>(ready); k < j; ++k)
            if (runs_op(steps[k].kind) && !time_le(steps[k].end, st.begin)) {
              pos = static_cast<std::int32_t>(k);
              break;
            }
        }
      }
      items.push_back({pos, plan_.timed ? st.begin : 0.0, static_cast<std::int32_t>(j)});
    }
    // Deterministic: by issue step, then (timed) the copy's start, then the step.
    std::sort(items.begin(), items.end(), [](const item& a, const item& b) {
      if (a.pos != b.pos) return a.pos < b.pos;
      if (a.begin != b.begin) return a.begin < b.begin;
      return a.step < b.step;
    });
    issue_order_.clear();
    issue_pos_.clear();
    for (const auto& it : items) {
      issue_order_.push_back(it.step);
      issue_pos_.push_back(it.pos);
    }
  }

  // Hands transfer step j to the copy thread.
  void issue(std::size_t j, run_stats& rs) {
    const auto& st = plan_.steps[j];
    const auto s = p_->storage_of(st.tensor());
    const auto bytes = p_->storage_bytes(s);
    auto* host = staging_[static_cast<std::size_t>(s)].data();
    const auto n = static_cast<std::size_t>(bytes);
    const Backend b = arena_.backend();
    range r;
    if (st.kind == step_kind::offload) {
      const auto m = cur_[static_cast<std::size_t>(s)];
      if (m < 0)
        throw error(errc::runtime_error, "executor: offload of '" + p_->tensor_name(st.tensor()) + "', which is not on the device");
      r = {plan_.mats[static_cast<std::size_t>(m)].offset, bytes};
      const std::byte* dev = arena_.at(r.offset, bytes);
      tickets_[j] = engine_->submit([b, host, dev, n] { b.to_host(host, dev, n); });
    } else {
      r = {plan_.mats[static_cast<std::size_t>(st.mat)].offset, bytes};
      std::byte* dev = arena_.at(r.offset, bytes);
      tickets_[j] = engine_->submit([b, host, dev, n] { b.from_host(dev, host, n); });
    }
    inflight_.push_back({tickets_[j], r, st.kind == step_kind::prefetch});
    rs.transfer_bytes += bytes;
  }

  void wait_for(copy_engine::ticket t, run_stats& rs) {
    if (t == 0 || engine_->completed() >= t) return;
    const auto t0 = std::chrono::steady_clock::now();
    engine_->wait(t);
    rs.copy_wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  // Where storage of tensor t lies now (bytes 0: not on the device).
  [[nodiscard]] range current_range(tensor_id t) const {
    const auto s = p_->storage_of(t);
    const auto m = cur_[static_cast<std::size_t>(s)];
    if (m < 0) return {};
    return {plan_.mats[static_cast<std::size_t>(m)].offset, p_->storage_bytes(s)};
  }

  // Waits for the copies in flight over `r`: every one when the caller writes there, prefetches (which
  // write) when it only reads.
  void wait_for_copies_over(range r, bool writes, run_stats& rs) {
    prune_copies();
    wait_for(latest_copy_over(r, writes, 0), rs);
  }
  // Forgets the copies the engine has completed (once per query, before the range scans).
  void prune_copies() {
    const auto done = engine_->completed();
    std::erase_if(inflight_, [&](const copy_in_flight& c) { return c.ticket <= done; });
  }
  copy_engine::ticket latest_copy_over(range r, bool writes, copy_engine::ticket t) const {
    if (r.bytes <= 0) return t;
    for (const auto& c : inflight_)
      if ((writes || c.writes_device) && c.r.offset < r.offset + r.bytes && r.offset < c.r.offset + c.r.bytes)
        t = std::max(t, c.ticket);
    return t;
  }
  // Before op o runs: its inputs must have arrived, and no copy may still read or write its outputs'
  // or workspace's bytes. One wait for the latest such copy (the engine runs them in order).
  void wait_for_copies_under(op_id o, std::int64_t ws_offset, std::int64_t ws_bytes, run_stats& rs) {
    if (inflight_.empty()) return;
    prune_copies();
    copy_engine::ticket t = 0;
    for (auto x : p_->inputs(o)) t = latest_copy_over(current_range(x), false, t);
    for (auto x : p_->outputs(o)) t = latest_copy_over(current_range(x), true, t);
    if (ws_bytes > 0) t = latest_copy_over({ws_offset, ws_bytes}, true, t);
    wait_for(t, rs);
  }

  std::byte* ptr(tensor_id t) const {
    if (p_->storage_bytes(p_->storage_of(t)) == 0) return nullptr;  // control / empty tensors
    return tensor_data(t);
  }
  void touch(run_stats& rs, std::int32_t m) const {
    const auto& mm = plan_.mats[static_cast<std::size_t>(m)];
    const auto bytes = p_->storage_bytes(mm.storage);
    if (bytes > 0) rs.high_water = std::max(rs.high_water, mm.offset + bytes);
  }
  // A free or offload: the storage leaves the device (its bytes poisoned in debug runs).
  void release(tensor_id t) {
    const auto s = static_cast<std::size_t>(p_->storage_of(t));
    const auto m = cur_[s];
    if (m >= 0 && opt_.poison) {
      const auto bytes = p_->storage_bytes(p_->storage_of(t));
      if (bytes > 0) arena_.poison(plan_.mats[static_cast<std::size_t>(m)].offset, bytes);
    }
    cur_[s] = no_id;
  }

  const problem* p_;
  memory_plan plan_;
  executor_options opt_;
  arena<Backend> arena_;
  std::vector<detail::staging_block<Backend>> staging_;  // host copies of offloaded values (per storage)
  std::vector<std::int32_t> cur_;
  std::vector<std::uint8_t> on_device_;
  std::vector<std::int32_t> issue_order_, issue_pos_;
  std::vector<copy_engine::ticket> tickets_;
  std::vector<copy_in_flight> inflight_;
  // Declared after the arena and the staging buffers: destroyed first, so no copy outlives them.
  std::unique_ptr<copy_engine> engine_;
};

// The reference run: every storage its own host allocation, freed right after its last use in the
// given order (an ordinary eager framework). Resident storages persist across run() calls.
class eager_executor {
 public:
  explicit eager_executor(const problem&& p) = delete;
  explicit eager_executor(const problem& p) : p_(&p), order_(given_order(p)) {
    if (auto bad = check_topological(p, order_))
      throw error(errc::invalid_graph, "eager run: the given order is not executable: " + *bad);
    buffers_.resize(static_cast<std::size_t>(p.num_storages()));
    const auto lt = storage_lifetimes(p, order_);
    frees_.resize(order_.size());
    for (storage_id s = 0; s < p.num_storages(); ++s) {
      const auto& l = lt[static_cast<std::size_t>(s)];
      if (p.preexisting(s)) allocate(s);
      if (l.live() && !p.preexisting(s) && !p.live_to_end(s)) frees_[static_cast<std::size_t>(l.last)].push_back(s);
    }
  }

  [[nodiscard]] std::byte* tensor_data(tensor_id t) {
    const auto s = static_cast<std::size_t>(p_->storage_of(t));
    if (!buffers_[s]) allocate(static_cast<storage_id>(s));
    return buffers_[s].get();
  }

  // Peak bytes held by the eager allocations (exact sizes, no allocator rounding).
  [[nodiscard]] std::int64_t peak_bytes() const noexcept { return peak_; }

  template <kernel_fn K>
  void run(K&& kernel) {
    const auto& p = *p_;
    // Outputs of the previous run are dropped now: this run produces them again.
    for (storage_id s = 0; s < p.num_storages(); ++s)
      if (p.live_to_end(s) && !p.preexisting(s)) release(s);
    std::vector<std::byte*> in, out;
    for (std::size_t i = 0; i < order_.size(); ++i) {
      const auto o = order_[i];
      in.clear();
      out.clear();
      for (auto t : p.inputs(o)) in.push_back(ptr(t));
      for (auto t : p.outputs(o)) out.push_back(ptr(t));
      const auto wsb = p.workspace(o);
      std::unique_ptr<std::byte[]> wsbuf;
      if (wsb > 0) {
        wsbuf.reset(new std::byte[static_cast<std::size_t>(wsb)]);
        live_ += wsb;
      }
      peak_ = std::max(peak_, live_);
      kernel(o, std::span<std::byte* const>(in), std::span<std::byte* const>(out), wsbuf.get());
      if (wsb > 0) live_ -= wsb;
      for (auto s : frees_[i]) release(s);
    }
  }

 private:
  std::byte* ptr(tensor_id t) {
    if (p_->storage_bytes(p_->storage_of(t)) == 0) return nullptr;
    return tensor_data(t);
  }
  void allocate(storage_id s) {
    const auto bytes = p_->storage_bytes(s);
    if (bytes == 0 || buffers_[static_cast<std::size_t>(s)]) return;
    buffers_[static_cast<std::size_t>(s)].reset(new std::byte[static_cast<std::size_t>(bytes)]);
    live_ += bytes;
    peak_ = std::max(peak_, live_);
  }
  void release(storage_id s) {
    if (!buffers_[static_cast<std::size_t>(s)]) return;
    buffers_[static_cast<std::size_t>(s)].reset();
    live_ -= p_->storage_bytes(s);
  }

  const problem* p_;
  std::vector<op_id> order_;
  std::vector<std::unique_ptr<std::byte[]>> buffers_;
  std::vector<std::vector<storage_id>> frees_;
  std::int64_t live_ = 0, peak_ = 0;
};

}  // namespace memplan::runtime
