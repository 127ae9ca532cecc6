#pragma once
// memplan's built-in graph: named ops and tensors, tensor kinds, multi-output ops, tensors with many
// consumers, zero-size control edges, in-place tensors. It satisfies memplan::dataflow_graph.
// (The class lives in memplan::graph because memplan::dataflow_graph names the concept.)
#include <compare>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/graph/index_range.hpp>
#include <memplan/base/kinds.hpp>
#include <memplan/graph/traits.hpp>

namespace memplan::graph {

struct op_ref {
  std::int32_t index = -1;
  friend constexpr auto operator<=>(op_ref, op_ref) = default;
};
struct tensor_ref {
  std::int32_t index = -1;
  friend constexpr auto operator<=>(tensor_ref, tensor_ref) = default;
};

struct op_attributes {
  std::string type = "op";  // the operator's name, e.g. "aten.convolution"
  op_phase phase = op_phase::other;
  double cost = 0.0;              // seconds or FLOPs, consistent within a graph
  std::int64_t workspace = 0;     // scratch bytes while the op runs
  bool recomputable = true;       // false: outputs are not a function of the inputs (random numbers)
  std::vector<implementation> implementations{};  // alternatives to (cost, workspace)
};

struct tensor_attributes {
  std::vector<std::int64_t> shape;  // optional, informational
  std::string dtype;                // optional, informational
};

class dataflow_graph {
 public:
  dataflow_graph() = default;
  explicit dataflow_graph(std::string name) : name_(std::move(name)) {}

  // What op costs measure: "seconds", "flops" or "units" (docs/format.md, meta.cost_unit).
  void set_cost_unit(std::string unit) { cost_unit_ = std::move(unit); }
  [[nodiscard]] const std::string& cost_unit() const noexcept { return cost_unit_; }

  // ---- building ------------------------------------------------------------------------------
  tensor_ref add_tensor(std::string name, std::int64_t bytes, tensor_kind kind = tensor_kind::activation,
                        tensor_attributes attrs = {}) {
    if (tensor_index_.count(name)) throw error(errc::invalid_graph, "duplicate tensor name '" + name + "'");
    tensor_ref t{static_cast<std::int32_t>(tensors_.size())};
    tensor_index_.emplace(name, t.index);
    tensors_.push_back({std::move(name), bytes, kind, std::nullopt, std::nullopt, {}, std::move(attrs)});
    return t;
  }

  // A control edge: a zero-size tensor that only orders `from` before `to`.
  tensor_ref add_control_edge(op_ref from, op_ref to) {
    check(from);
    check(to);
    auto t = add_tensor("ctrl:" + ops_[from.index].name + "->" + ops_[to.index].name + "#" + std::to_string(tensors_.size()),
                        0, tensor_kind::control);
    ops_[from.index].outputs.push_back(t);
    tensors_[t.index].producer = from;
    ops_[to.index].inputs.push_back(t);
    tensors_[t.index].consumers.push_back(to);
    return t;
  }

  op_ref add_op(std::string name, std::vector<tensor_ref> ins, std::vector<tensor_ref> outs, op_attributes attrs = {}) {
    if (op_index_.count(name)) throw error(errc::invalid_graph, "duplicate op name '" + name + "'");
    op_ref op{static_cast<std::int32_t>(ops_.size())};
    for (auto t : ins) check(t);
    for (auto t : outs) {
      check(t);
      if (tensors_[t.index].producer)
        throw error(errc::invalid_graph, "tensor '" + tensors_[t.index].name + "' is produced by both '" +
                                             ops_[tensors_[t.index].producer->index].name + "' and '" + name + "'");
    }
    for (auto t : outs) tensors_[t.index].producer = op;
    for (auto t : ins) tensors_[t.index].consumers.push_back(op);
    op_index_.emplace(name, op.index);
    ops_.push_back({std::move(name), std::move(ins), std::move(outs), std::move(attrs)});
    return op;
  }

  // `t` is written into the storage of `base` (an in-place op such as add_ or an optimizer update).
  void set_inplace_of(tensor_ref t, tensor_ref base) {
    check(t);
    check(base);
    tensors_[t.index].inplace_of = base;
  }

  void set_name(std::string n) { name_ = std::move(n); }

  // ---- reading (the memplan CPOs find these members) -------------------------------------------
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] std::size_t num_ops() const noexcept { return ops_.size(); }
  [[nodiscard]] std::size_t num_tensors() const noexcept { return tensors_.size(); }

  [[nodiscard]] index_range<op_ref> ops() const { return index_range<op_ref>(static_cast<std::int32_t>(ops_.size())); }
  [[nodiscard]] index_range<tensor_ref> tensors() const {
    return index_range<tensor_ref>(static_cast<std::int32_t>(tensors_.size()));
  }
  [[nodiscard]] std::span<const tensor_ref> inputs(op_ref op) const { return at(op).inputs; }
  [[nodiscard]] std::span<const tensor_ref> outputs(op_ref op) const { return at(op).outputs; }
  [[nodiscard]] std::optional<op_ref> producer(tensor_ref t) const { return at(t).producer; }
  [[nodiscard]] std::span<const op_ref> consumers(tensor_ref t) const { return at(t).consumers; }
  [[nodiscard]] std::int64_t tensor_bytes(tensor_ref t) const { return at(t).bytes; }
  [[nodiscard]] tensor_kind tensor_kind_of(tensor_ref t) const { return at(t).kind; }
  [[nodiscard]] std::optional<std::string> tensor_name(tensor_ref t) const { return at(t).name; }
  [[nodiscard]] std::optional<tensor_ref> inplace_of(tensor_ref t) const { return at(t).inplace_of; }
  [[nodiscard]] const tensor_attributes& tensor_attrs(tensor_ref t) const { return at(t).attrs; }
  [[nodiscard]] std::optional<std::string> op_name(op_ref op) const { return at(op).name; }
  [[nodiscard]] std::string op_type(op_ref op) const { return at(op).attrs.type; }
  [[nodiscard]] op_phase op_phase_of(op_ref op) const { return at(op).attrs.phase; }
  [[nodiscard]] double op_cost(op_ref op) const { return at(op).attrs.cost; }
  [[nodiscard]] std::int64_t op_workspace(op_ref op) const { return at(op).attrs.workspace; }
  [[nodiscard]] bool op_recomputable(op_ref op) const { return at(op).attrs.recomputable; }
  [[nodiscard]] std::vector<implementation> op_implementations(op_ref op) const { return at(op).attrs.implementations; }

  [[nodiscard]] std::optional<op_ref> find_op(const std::string& n) const {
    auto it = op_index_.find(n);
    return it == op_index_.end() ? std::nullopt : std::optional<op_ref>(op_ref{it->second});
  }
  [[nodiscard]] std::optional<tensor_ref> find_tensor(const std::string& n) const {
    auto it = tensor_index_.find(n);
    return it == tensor_index_.end() ? std::nullopt : std::optional<tensor_ref>(tensor_ref{it->second});
  }

 private:
  struct op_data {
    std::string name;
    std::vector<tensor_ref> inputs, outputs;
    op_attributes attrs;
  };
  struct tensor_data {
    std::string name;
    std::int64_t bytes;
    tensor_kind kind;
    std::optional<op_ref> producer;
    std::optional<tensor_ref> inplace_of;
    std::vector<op_ref> consumers;
    tensor_attributes attrs;
  };
  void check(op_ref op) const {
    if (op.index < 0 || static_cast<std::size_t>(op.index) >= ops_.size())
      throw error(errc::invalid_argument, "op reference " + std::to_string(op.index) + " is not in graph '" + name_ + "'");
  }
  void check(tensor_ref t) const {
    if (t.index < 0 || static_cast<std::size_t>(t.index) >= tensors_.size())
      throw error(errc::invalid_argument, "tensor reference " + std::to_string(t.index) + " is not in graph '" + name_ + "'");
  }
  const op_data& at(op_ref op) const { check(op); return ops_[static_cast<std::size_t>(op.index)]; }
  const tensor_data& at(tensor_ref t) const { check(t); return tensors_[static_cast<std::size_t>(t.index)]; }

  std::string name_;
  std::string cost_unit_;
  std::vector<op_data> ops_;
  std::vector<tensor_data> tensors_;
  std::unordered_map<std::string, std::int32_t> op_index_, tensor_index_;
};

}  // namespace memplan::graph

template <>
struct std::hash<memplan::graph::op_ref> {
  std::size_t operator()(memplan::graph::op_ref r) const noexcept { return std::hash<std::int32_t>{}(r.index); }
};
template <>
struct std::hash<memplan::graph::tensor_ref> {
  std::size_t operator()(memplan::graph::tensor_ref r) const noexcept { return std::hash<std::int32_t>{}(r.index); }
};

static_assert(memplan::dataflow_graph<memplan::graph::dataflow_graph>);
