#pragma once
// memplan::problem: the normalized, immutable form every algorithm works on: dense ids, CSR fan-in /
// fan-out, 64-bit sizes, kinds, per-op cost / workspace / implementation alternatives, storages (a
// tensor plus everything `inplace_of` it), precedence edges. It is built and validated by
// problem_builder (core/problem_builder.hpp), from any conforming graph by memplan::adapt /
// make_problem (core/adapt.hpp), or from a file by the JSON reader (io/).
#include <algorithm>
#include <atomic>
#include <functional>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <memplan/base/ids.hpp>
#include <memplan/base/kinds.hpp>

namespace memplan {

// Counts of the analyses run on a problem, for tests and benchmarks that check that a pipeline
// derives each thing once (problem::instrument). Atomic: a problem may be planned from many threads.
struct analysis_counters {
  std::atomic<std::int64_t> lifetimes{0};     // storage lifetimes of an order (any: profiles of candidate orders too)
  std::atomic<std::int64_t> timelines{0};     // timelines built or re-derived (make_timeline, derive)
  std::atomic<std::int64_t> lower_bounds{0};  // lower_bound_peak
  std::atomic<std::int64_t> topological_checks{0};
};

// Options of the normalization.
struct problem_options {
  // Tensors of kind input with no producer stay resident to the end (the default, as in
  // graph-format.md). When false they are live from the start only until their last use.
  bool inputs_resident = true;
};

class problem_builder;

class problem {
 public:
  problem() = default;

  // ---- sizes -------------------------------------------------------------------------------
  [[nodiscard]] std::int32_t num_ops() const noexcept { return static_cast<std::int32_t>(op_name_.size()); }
  [[nodiscard]] std::int32_t num_tensors() const noexcept { return static_cast<std::int32_t>(tensor_name_.size()); }
  [[nodiscard]] std::int32_t num_storages() const noexcept { return static_cast<std::int32_t>(storage_bytes_.size()); }
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  // What the ops' costs measure (graph format "meta": {"cost_unit": ...}): "seconds", "flops", or
  // "units" (one per op when the graph gives no costs). Empty: not said.
  [[nodiscard]] const std::string& cost_unit() const noexcept { return cost_unit_; }

  // ---- ops -----------------------------------------------------------------------------------
  [[nodiscard]] std::span<const tensor_id> inputs(op_id o) const { return row(in_off_, in_, o); }
  [[nodiscard]] std::span<const tensor_id> outputs(op_id o) const { return row(out_off_, out_, o); }
  // Distinct ops that must run before / after o (data edges, control tensors and in-place order).
  [[nodiscard]] std::span<const op_id> preds(op_id o) const { return row(pred_off_, pred_, o); }
  [[nodiscard]] std::span<const op_id> succs(op_id o) const { return row(succ_off_, succ_, o); }
  [[nodiscard]] const std::string& op_name(op_id o) const { return op_name_[idx(o)]; }
  [[nodiscard]] const std::string& op_type(op_id o) const { return op_type_[idx(o)]; }
  [[nodiscard]] op_phase phase(op_id o) const { return phase_[idx(o)]; }
  [[nodiscard]] double cost(op_id o) const { return cost_[idx(o)]; }
  [[nodiscard]] std::int64_t workspace(op_id o) const { return workspace_[idx(o)]; }
  [[nodiscard]] std::span<const implementation> implementations(op_id o) const { return row(impl_off_, impl_, o); }
  // The op's variants: implementations that read other tensors (implementation::inputs, MONeT's
  // output-activated backward). Kept apart: every planner treats implementations() as sharing the op's
  // inputs; a variant is taken only by rewriting the problem (core/variants.hpp).
  [[nodiscard]] std::span<const implementation> variants(op_id o) const { return row(variant_off_, variant_, o); }
  // False for ops whose outputs are not a function of their inputs (random number generation): never
  // recomputed (graph format: "recomputable": false).
  [[nodiscard]] bool recomputable(op_id o) const { return recomputable_[idx(o)] != 0; }
  // Storages an op reads or writes (its inputs' and outputs' storages, each once, non-empty ones).
  [[nodiscard]] std::span<const storage_id> touched(op_id o) const { return row(touch_off_, touch_, o); }

  // ---- tensors -------------------------------------------------------------------------------
  [[nodiscard]] const std::string& tensor_name(tensor_id t) const { return tensor_name_[idx(t)]; }
  [[nodiscard]] std::int64_t bytes(tensor_id t) const { return bytes_[idx(t)]; }
  [[nodiscard]] tensor_kind kind(tensor_id t) const { return kind_[idx(t)]; }
  [[nodiscard]] op_id producer(tensor_id t) const { return producer_[idx(t)]; }
  [[nodiscard]] std::span<const op_id> consumers(tensor_id t) const { return row(cons_off_, cons_, t); }
  [[nodiscard]] tensor_id inplace_of(tensor_id t) const { return inplace_of_[idx(t)]; }
  [[nodiscard]] storage_id storage_of(tensor_id t) const { return storage_of_[idx(t)]; }

  // ---- storages (graph-format.md memory rule) --------------------------------------------------
  [[nodiscard]] std::int64_t storage_bytes(storage_id s) const { return storage_bytes_[idx(s)]; }
  [[nodiscard]] std::span<const tensor_id> storage_tensors(storage_id s) const { return row(st_off_, st_, s); }
  [[nodiscard]] tensor_id storage_root(storage_id s) const { return storage_tensors(s)[0]; }
  // Live for the whole run (no producer: inputs, weights, optimizer state).
  [[nodiscard]] bool resident(storage_id s) const { return resident_[idx(s)] != 0; }
  // Exists before the first op but is freed after its last use (inputs when !inputs_resident).
  [[nodiscard]] bool preexisting(storage_id s) const { return producer_[idx(storage_root(s))] == no_id; }
  // Preexisting and freed after its last use, but no op uses it (nor is it an output): by the memory
  // rule it is live while the first op runs, and only then.
  [[nodiscard]] bool live_at_start_only(storage_id s) const {
    return preexisting(s) && !resident(s) && storage_users(s).empty() && !live_to_end(s);
  }
  // Holds a tensor of kind output: live from its producer to the end.
  [[nodiscard]] bool live_to_end(storage_id s) const { return to_end_[idx(s)] != 0; }
  // Ops that read or write the storage.
  [[nodiscard]] std::span<const op_id> storage_users(storage_id s) const { return row(su_off_, su_, s); }
  // The op that allocates it (producer of its root tensor), or no_id when preexisting.
  [[nodiscard]] op_id storage_allocator(storage_id s) const { return producer_[idx(storage_root(s))]; }
  [[nodiscard]] std::int64_t resident_bytes() const noexcept { return resident_bytes_; }
  [[nodiscard]] std::int64_t total_bytes() const noexcept { return total_bytes_; }

  // ---- names -> ids ----------------------------------------------------------------------------
  [[nodiscard]] std::optional<op_id> find_op(std::string_view n) const {
    auto it = op_by_name_.find(std::string(n));
    return it == op_by_name_.end() ? std::nullopt : std::optional<op_id>(it->second);
  }
  [[nodiscard]] std::optional<tensor_id> find_tensor(std::string_view n) const {
    auto it = tensor_by_name_.find(std::string(n));
    return it == tensor_by_name_.end() ? std::nullopt : std::optional<tensor_id>(it->second);
  }

  // The precedence edges added on top of the data edges (problem_builder::add_edge, with_edges).
  [[nodiscard]] std::span<const std::pair<op_id, op_id>> extra_edges() const noexcept { return extra_edges_; }
  // Whether non-resident inputs were normalized as freed after their last use.
  [[nodiscard]] const problem_options& options() const noexcept { return options_; }

  // Instrumentation: the analyses of core/ count their runs on this problem into `c` (nullptr: off).
  void instrument(analysis_counters* c) noexcept { counters_ = c; }
  [[nodiscard]] analysis_counters* counters() const noexcept { return counters_; }

  // "op 'name'" / "tensor 'name'" for messages.
  [[nodiscard]] std::string describe_op(op_id o) const { return "op '" + op_name(o) + "'"; }
  [[nodiscard]] std::string describe_tensor(tensor_id t) const { return "tensor '" + tensor_name(t) + "'"; }

 private:
  friend class problem_builder;
  template <class T>
  static std::span<const T> row(const std::vector<std::int32_t>& off, const std::vector<T>& data, std::int32_t i) {
    return {data.data() + off[static_cast<std::size_t>(i)],
            static_cast<std::size_t>(off[static_cast<std::size_t>(i) + 1] - off[static_cast<std::size_t>(i)])};
  }
  static std::size_t idx(std::int32_t i) { return static_cast<std::size_t>(i); }

  std::string name_;
  std::vector<std::string> op_name_, op_type_;
  std::vector<op_phase> phase_;
  std::vector<double> cost_;
  std::vector<std::int64_t> workspace_;
  std::vector<std::uint8_t> recomputable_;
  std::string cost_unit_;
  std::vector<std::int32_t> in_off_, out_off_, pred_off_, succ_off_, impl_off_, variant_off_, touch_off_;
  std::vector<tensor_id> in_, out_;
  std::vector<op_id> pred_, succ_;
  std::vector<implementation> impl_, variant_;
  std::vector<storage_id> touch_;

  std::vector<std::string> tensor_name_;
  std::vector<std::int64_t> bytes_;
  std::vector<tensor_kind> kind_;
  std::vector<op_id> producer_;
  std::vector<std::int32_t> cons_off_;
  std::vector<op_id> cons_;
  std::vector<tensor_id> inplace_of_;
  std::vector<storage_id> storage_of_;

  std::vector<std::int64_t> storage_bytes_;
  std::vector<std::int32_t> st_off_, su_off_;
  std::vector<tensor_id> st_;
  std::vector<op_id> su_;
  std::vector<std::uint8_t> resident_, to_end_;
  std::int64_t resident_bytes_ = 0, total_bytes_ = 0;

  std::unordered_map<std::string, op_id> op_by_name_;
  std::unordered_map<std::string, tensor_id> tensor_by_name_;
  std::vector<std::pair<op_id, op_id>> extra_edges_;
  problem_options options_{};
  analysis_counters* counters_ = nullptr;
};

}  // namespace memplan

