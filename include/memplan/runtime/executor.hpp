#pragma once
// Runs a memory_plan for real. Every tensor lives at its planned offset in ONE arena; `compute` and
// `recompute` steps call the op's kernel with pointers into the arena; `offload`/`prefetch` copy a
// storage to and from a host staging buffer; `free` releases nothing (the arena is static) but, in
// debug mode, poisons the freed bytes with NaN so a wrong plan corrupts the numbers.
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
};

struct run_stats {
  std::int64_t high_water = 0;      // highest arena byte any live tensor or workspace touched (+1)
  std::int64_t transfer_bytes = 0;  // bytes copied by offload + prefetch
  std::int64_t recomputed_ops = 0;
  std::int64_t steps = 0;
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

  // One pass over the plan's steps (e.g. one training step).
  template <kernel_fn K>
  run_stats run(K&& kernel) {
    run_stats rs;
    const auto& p = *p_;
    cur_ = initial_mats(p, plan_);
    on_device_ = initially_on_device(p);
    // Preexisting storages are touched from the start.
    for (std::size_t m = 0; m < cur_.size(); ++m)
      if (cur_[m] >= 0) touch(rs, cur_[m]);
    std::vector<std::byte*> in, out;
    for (const auto& st : plan_.steps) {
      ++rs.steps;
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
          release(st.tensor());
          break;
        case step_kind::offload: {
          const auto s = static_cast<std::size_t>(p.storage_of(st.tensor()));
          const auto bytes = p.storage_bytes(p.storage_of(st.tensor()));
          staging_[s].resize(static_cast<std::size_t>(bytes));
          if (bytes > 0) arena_.backend().to_host(staging_[s].data(), tensor_data(st.tensor()), static_cast<std::size_t>(bytes));
          rs.transfer_bytes += bytes;
          release(st.tensor());
          break;
        }
        case step_kind::prefetch: {
          const auto s = static_cast<std::size_t>(p.storage_of(st.tensor()));
          const auto bytes = p.storage_bytes(p.storage_of(st.tensor()));
          if (bytes > 0) arena_.backend().from_host(tensor_data(st.tensor()), staging_[s].data(), static_cast<std::size_t>(bytes));
          rs.transfer_bytes += bytes;
          break;
        }
      }
    }
    return rs;
  }

 private:
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
  std::vector<std::vector<std::byte>> staging_;
  std::vector<std::int32_t> cur_;
  std::vector<std::uint8_t> on_device_;
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
