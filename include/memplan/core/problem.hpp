#pragma once
// memplan::problem: the normalized, immutable form every algorithm works on. Built once from any
// conforming graph in O(ops + tensors) (plus hashing of the user's descriptors): dense ids, CSR
// fan-in / fan-out, 64-bit sizes (overflow checked), kinds, per-op cost / workspace / implementation
// alternatives, storages (a tensor plus everything `inplace_of` it), precedence edges.
#include <algorithm>
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

#include <memplan/core/error.hpp>
#include <memplan/graph/kinds.hpp>
#include <memplan/graph/traits.hpp>

namespace memplan {

using op_id = std::int32_t;
using tensor_id = std::int32_t;
using storage_id = std::int32_t;
inline constexpr std::int32_t no_id = -1;

// One way to run an op (MONeT §3: workspace vs time, in-place variants).
struct implementation {
  std::string name;
  double cost = 0.0;
  std::int64_t workspace = 0;
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

  // A copy with extra precedence edges (a runs before b), e.g. OLLA's early-update control edges
  // (Function 3). Throws if an edge creates a cycle.
  [[nodiscard]] problem with_edges(std::span<const std::pair<op_id, op_id>> edges) const;

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
  std::vector<std::int32_t> in_off_, out_off_, pred_off_, succ_off_, impl_off_, touch_off_;
  std::vector<tensor_id> in_, out_;
  std::vector<op_id> pred_, succ_;
  std::vector<implementation> impl_;
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
};

// Builds a problem from flat, id-based input and validates it. Used by make_problem (any graph) and
// by the JSON reader. Every error names the culprit.
class problem_builder {
 public:
  explicit problem_builder(std::string name = {}, problem_options opt = {}) : opt_(opt) { p_.name_ = std::move(name); }

  tensor_id add_tensor(std::string name, std::int64_t bytes, tensor_kind kind) {
    tensors_.push_back({std::move(name), bytes, kind, no_id});
    return static_cast<tensor_id>(tensors_.size() - 1);
  }
  void set_inplace_of(tensor_id t, tensor_id base) { tensors_.at(static_cast<std::size_t>(t)).inplace_of = base; }
  op_id add_op(std::string name, std::vector<tensor_id> ins, std::vector<tensor_id> outs, std::string type = "op",
               op_phase phase = op_phase::other, double cost = 0.0, std::int64_t workspace = 0,
               std::vector<implementation> impls = {}) {
    ops_.push_back({std::move(name), std::move(type), phase, cost, workspace, std::move(ins), std::move(outs), std::move(impls)});
    return static_cast<op_id>(ops_.size() - 1);
  }
  void add_edge(op_id before, op_id after) { edges_.emplace_back(before, after); }

  // Validates and returns the problem. Throws memplan::error(errc::invalid_graph, ...) on bad input.
  problem build();

 private:
  struct tensor_in { std::string name; std::int64_t bytes; tensor_kind kind; tensor_id inplace_of; };
  struct op_in {
    std::string name, type;
    op_phase phase;
    double cost;
    std::int64_t workspace;
    std::vector<tensor_id> ins, outs;
    std::vector<implementation> impls;
  };
  problem p_;
  problem_options opt_;
  std::vector<tensor_in> tensors_;
  std::vector<op_in> ops_;
  std::vector<std::pair<op_id, op_id>> edges_;
};

namespace detail {

inline std::string join_cycle(const problem& p, const std::vector<op_id>& cyc) {
  std::string s;
  for (auto o : cyc) s += "'" + p.op_name(o) + "' -> ";
  s += "'" + p.op_name(cyc.front()) + "'";
  return s;
}

// Builds CSR (off, data) from per-row vectors.
template <class T>
void to_csr(const std::vector<std::vector<T>>& rows, std::vector<std::int32_t>& off, std::vector<T>& data) {
  off.assign(rows.size() + 1, 0);
  std::size_t total = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    total += rows[i].size();
    if (total > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
      throw error(errc::invalid_graph, "graph too large: more than 2^31 edges");
    off[i + 1] = static_cast<std::int32_t>(total);
  }
  data.clear();
  data.reserve(total);
  for (const auto& r : rows) data.insert(data.end(), r.begin(), r.end());
}

// Finds a cycle among ops with the given successor lists (iterative DFS); empty when acyclic.
inline std::vector<op_id> find_cycle(const std::vector<std::vector<op_id>>& succ) {
  const auto n = succ.size();
  std::vector<std::uint8_t> color(n, 0);  // 0 new, 1 on stack, 2 done
  std::vector<op_id> parent(n, no_id);
  std::vector<std::pair<op_id, std::size_t>> stack;
  for (std::size_t s = 0; s < n; ++s) {
    if (color[s]) continue;
    stack.push_back({static_cast<op_id>(s), 0});
    color[s] = 1;
    while (!stack.empty()) {
      auto& [v, i] = stack.back();
      const auto& out = succ[static_cast<std::size_t>(v)];
      if (i < out.size()) {
        op_id w = out[i++];
        if (color[static_cast<std::size_t>(w)] == 1) {  // back edge v -> w: cycle w .. v
          std::vector<op_id> cyc{v};
          for (op_id x = v; x != w;) { x = parent[static_cast<std::size_t>(x)]; cyc.push_back(x); }
          std::reverse(cyc.begin(), cyc.end());
          return cyc;
        }
        if (color[static_cast<std::size_t>(w)] == 0) {
          color[static_cast<std::size_t>(w)] = 1;
          parent[static_cast<std::size_t>(w)] = v;
          stack.push_back({w, 0});
        }
      } else {
        color[static_cast<std::size_t>(v)] = 2;
        stack.pop_back();
      }
    }
  }
  return {};
}

}  // namespace detail

inline problem problem_builder::build() {
  problem& p = p_;
  const auto nt = tensors_.size();
  const auto no = ops_.size();
  if (nt > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max() / 2) ||
      no > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max() / 2))
    throw error(errc::invalid_graph, "graph too large for 32-bit ids");

  // ---- tensors: names, sizes, kinds ----
  p.tensor_name_.resize(nt);
  p.bytes_.resize(nt);
  p.kind_.resize(nt);
  p.inplace_of_.resize(nt);
  p.tensor_by_name_.reserve(nt);
  std::int64_t total = 0;
  for (std::size_t t = 0; t < nt; ++t) {
    auto& ti = tensors_[t];
    if (ti.name.empty()) ti.name = "t" + std::to_string(t);
    if (!p.tensor_by_name_.emplace(ti.name, static_cast<tensor_id>(t)).second)
      throw error(errc::invalid_graph, "duplicate tensor name '" + ti.name + "'");
    if (ti.bytes < 0)
      throw error(errc::invalid_graph, "tensor '" + ti.name + "' has negative size " + std::to_string(ti.bytes));
    if (ti.kind == tensor_kind::control && ti.bytes != 0)
      throw error(errc::invalid_graph, "control tensor '" + ti.name + "' must have 0 bytes, has " + std::to_string(ti.bytes));
    if (total > std::numeric_limits<std::int64_t>::max() / 2 - ti.bytes)
      throw error(errc::invalid_graph, "tensor '" + ti.name + "': total size of the graph overflows 64 bits");
    total += ti.bytes;
    p.tensor_name_[t] = ti.name;
    p.bytes_[t] = ti.bytes;
    p.kind_[t] = ti.kind;
    p.inplace_of_[t] = ti.inplace_of;
    if (ti.inplace_of != no_id && (ti.inplace_of < 0 || static_cast<std::size_t>(ti.inplace_of) >= nt))
      throw error(errc::invalid_graph, "tensor '" + ti.name + "' is inplace_of an unknown tensor");
  }
  p.total_bytes_ = total;

  // ---- ops: names, CSR in/out, producers and consumers ----
  p.op_name_.resize(no);
  p.op_type_.resize(no);
  p.phase_.resize(no);
  p.cost_.resize(no);
  p.workspace_.resize(no);
  p.op_by_name_.reserve(no);
  p.producer_.assign(nt, no_id);
  std::vector<std::vector<tensor_id>> ins(no), outs(no);
  std::vector<std::vector<op_id>> cons(nt);
  std::vector<std::vector<implementation>> impls(no);
  for (std::size_t o = 0; o < no; ++o) {
    auto& oi = ops_[o];
    if (oi.name.empty()) oi.name = "op" + std::to_string(o);
    if (!p.op_by_name_.emplace(oi.name, static_cast<op_id>(o)).second)
      throw error(errc::invalid_graph, "duplicate op name '" + oi.name + "'");
    if (oi.workspace < 0)
      throw error(errc::invalid_graph, "op '" + oi.name + "' has negative workspace " + std::to_string(oi.workspace));
    if (oi.workspace > std::numeric_limits<std::int64_t>::max() / 4)
      throw error(errc::invalid_graph, "op '" + oi.name + "': workspace " + std::to_string(oi.workspace) + " overflows");
    if (!(oi.cost >= 0.0) || oi.cost == std::numeric_limits<double>::infinity())
      throw error(errc::invalid_graph, "op '" + oi.name + "' has invalid cost " + std::to_string(oi.cost));
    for (const auto& im : oi.impls)
      if (im.workspace < 0 || !(im.cost >= 0.0))
        throw error(errc::invalid_graph, "op '" + oi.name + "': implementation '" + im.name + "' has a negative cost or workspace");
    p.op_name_[o] = oi.name;
    p.op_type_[o] = oi.type;
    p.phase_[o] = oi.phase;
    p.cost_[o] = oi.cost;
    p.workspace_[o] = oi.workspace;
    impls[o] = oi.impls;
    for (auto t : oi.ins) {
      if (t < 0 || static_cast<std::size_t>(t) >= nt)
        throw error(errc::invalid_graph, "op '" + oi.name + "' reads a tensor that is not in the graph (dangling consumer)");
      // An op reading the same tensor twice reads it once as far as memory is concerned.
      if (std::find(ins[o].begin(), ins[o].end(), t) == ins[o].end()) {
        ins[o].push_back(t);
        cons[static_cast<std::size_t>(t)].push_back(static_cast<op_id>(o));
      }
    }
    for (auto t : oi.outs) {
      if (t < 0 || static_cast<std::size_t>(t) >= nt)
        throw error(errc::invalid_graph, "op '" + oi.name + "' writes a tensor that is not in the graph");
      auto& pr = p.producer_[static_cast<std::size_t>(t)];
      if (pr != no_id)
        throw error(errc::invalid_graph, "tensor '" + tensors_[static_cast<std::size_t>(t)].name + "' is produced by both '" +
                                             ops_[static_cast<std::size_t>(pr)].name + "' and '" + oi.name + "'");
      if (std::find(ins[o].begin(), ins[o].end(), t) != ins[o].end())
        throw error(errc::invalid_graph, "op '" + oi.name + "' both reads and produces tensor '" +
                                             tensors_[static_cast<std::size_t>(t)].name + "' (use inplace_of for in-place ops)");
      pr = static_cast<op_id>(o);
      outs[o].push_back(t);
    }
  }
  // Tensors without a producer must be of a kind that exists before the run.
  for (std::size_t t = 0; t < nt; ++t)
    if (p.producer_[t] == no_id && !may_be_resident(p.kind_[t]))
      throw error(errc::invalid_graph, "tensor '" + p.tensor_name_[t] + "' (" + std::string(to_string(p.kind_[t])) +
                                           ") has no producer; only input, weight and optimizer_state tensors may");

  // ---- storages: union along inplace_of chains ----
  std::vector<tensor_id> root(nt);
  for (std::size_t t = 0; t < nt; ++t) {
    tensor_id r = static_cast<tensor_id>(t);
    std::size_t steps = 0;
    while (p.inplace_of_[static_cast<std::size_t>(r)] != no_id) {
      r = p.inplace_of_[static_cast<std::size_t>(r)];
      if (++steps > nt) throw error(errc::invalid_graph, "tensor '" + p.tensor_name_[t] + "': inplace_of forms a cycle");
    }
    root[t] = r;
    if (p.inplace_of_[t] != no_id && p.producer_[t] == no_id)
      throw error(errc::invalid_graph, "tensor '" + p.tensor_name_[t] + "' is inplace_of '" +
                                           p.tensor_name_[static_cast<std::size_t>(p.inplace_of_[t])] + "' but has no producer");
  }
  p.storage_of_.assign(nt, no_id);
  std::vector<std::vector<tensor_id>> st_rows;
  for (std::size_t t = 0; t < nt; ++t)
    if (root[t] == static_cast<tensor_id>(t)) {
      p.storage_of_[t] = static_cast<storage_id>(st_rows.size());
      st_rows.push_back({static_cast<tensor_id>(t)});
    }
  for (std::size_t t = 0; t < nt; ++t)
    if (root[t] != static_cast<tensor_id>(t)) {
      p.storage_of_[t] = p.storage_of_[static_cast<std::size_t>(root[t])];
      st_rows[static_cast<std::size_t>(p.storage_of_[t])].push_back(static_cast<tensor_id>(t));
    }
  const auto ns = st_rows.size();
  p.storage_bytes_.assign(ns, 0);
  p.resident_.assign(ns, 0);
  p.to_end_.assign(ns, 0);
  for (std::size_t s = 0; s < ns; ++s) {
    for (auto t : st_rows[s]) {
      p.storage_bytes_[s] = std::max(p.storage_bytes_[s], p.bytes_[static_cast<std::size_t>(t)]);
      if (p.kind_[static_cast<std::size_t>(t)] == tensor_kind::output) p.to_end_[s] = 1;
    }
    const auto r = static_cast<std::size_t>(st_rows[s][0]);
    if (p.producer_[r] == no_id && (opt_.inputs_resident || p.kind_[r] != tensor_kind::input)) p.resident_[s] = 1;
    if (p.resident_[s]) p.resident_bytes_ += p.storage_bytes_[s];
  }
  detail::to_csr(st_rows, p.st_off_, p.st_);

  // ---- precedence: data edges, in-place order (graph-format.md), extra edges ----
  std::vector<std::vector<op_id>> succ(no);
  auto edge = [&](op_id a, op_id b) {
    if (a != b && a != no_id && b != no_id) succ[static_cast<std::size_t>(a)].push_back(b);
  };
  for (std::size_t o = 0; o < no; ++o)
    for (auto t : ins[o]) edge(p.producer_[static_cast<std::size_t>(t)], static_cast<op_id>(o));
  for (std::size_t t = 0; t < nt; ++t) {
    const auto base = p.inplace_of_[t];
    if (base == no_id) continue;
    const auto writer = p.producer_[t];
    // The in-place writer runs after every other reader of the overwritten tensor, and after its producer.
    for (auto c : cons[static_cast<std::size_t>(base)]) edge(c, writer);
    edge(p.producer_[static_cast<std::size_t>(base)], writer);
  }
  for (auto [a, b] : edges_) {
    if (a < 0 || b < 0 || static_cast<std::size_t>(a) >= no || static_cast<std::size_t>(b) >= no)
      throw error(errc::invalid_graph, "precedence edge names an op that is not in the graph");
    edge(a, b);
  }
  p.extra_edges_ = edges_;
  for (auto& s : succ) {
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
  }
  if (auto cyc = detail::find_cycle(succ); !cyc.empty()) {
    std::string msg = "graph has a cycle: ";
    for (auto o : cyc) msg += "'" + p.op_name_[static_cast<std::size_t>(o)] + "' -> ";
    msg += "'" + p.op_name_[static_cast<std::size_t>(cyc.front())] + "'";
    throw error(errc::invalid_graph, msg);
  }
  std::vector<std::vector<op_id>> pred(no);
  for (std::size_t a = 0; a < no; ++a)
    for (auto b : succ[a]) pred[static_cast<std::size_t>(b)].push_back(static_cast<op_id>(a));

  // ---- storage users and per-op touched storages ----
  std::vector<std::vector<op_id>> users(ns);
  std::vector<std::vector<storage_id>> touched(no);
  for (std::size_t o = 0; o < no; ++o) {
    auto add = [&](tensor_id t) {
      const auto s = p.storage_of_[static_cast<std::size_t>(t)];
      if (std::find(touched[o].begin(), touched[o].end(), s) == touched[o].end()) {
        touched[o].push_back(s);
        users[static_cast<std::size_t>(s)].push_back(static_cast<op_id>(o));
      }
    };
    for (auto t : ins[o]) add(t);
    for (auto t : outs[o]) add(t);
  }

  detail::to_csr(ins, p.in_off_, p.in_);
  detail::to_csr(outs, p.out_off_, p.out_);
  detail::to_csr(cons, p.cons_off_, p.cons_);
  detail::to_csr(succ, p.succ_off_, p.succ_);
  detail::to_csr(pred, p.pred_off_, p.pred_);
  detail::to_csr(impls, p.impl_off_, p.impl_);
  detail::to_csr(users, p.su_off_, p.su_);
  detail::to_csr(touched, p.touch_off_, p.touch_);
  return std::move(p_);
}

inline problem problem::with_edges(std::span<const std::pair<op_id, op_id>> edges) const {
  problem_builder b(name_);
  problem_options opt;
  // Preserve the residency decision of inputs.
  for (storage_id s = 0; s < num_storages(); ++s)
    if (preexisting(s) && !resident(s)) opt.inputs_resident = false;
  b = problem_builder(name_, opt);
  for (tensor_id t = 0; t < num_tensors(); ++t) b.add_tensor(tensor_name(t), bytes(t), kind(t));
  for (tensor_id t = 0; t < num_tensors(); ++t)
    if (inplace_of(t) != no_id) b.set_inplace_of(t, inplace_of(t));
  for (op_id o = 0; o < num_ops(); ++o) {
    auto in = inputs(o);
    auto out = outputs(o);
    auto im = implementations(o);
    b.add_op(op_name(o), {in.begin(), in.end()}, {out.begin(), out.end()}, op_type(o), phase(o), cost(o), workspace(o),
             {im.begin(), im.end()});
  }
  for (auto [a, c] : extra_edges_) b.add_edge(a, c);
  for (auto [a, c] : edges) b.add_edge(a, c);
  return b.build();
}

// ---- lookups: sizes, costs and workspaces live outside the graph -------------------------------
// A lookup is an invocable f(descriptor), a property-map-like object m[descriptor] or get(m, d),
// a container indexed by a dense handle's .index (std::vector for memplan::graph::dataflow_graph),
// or memplan::use_graph (read the CPO: tensor_bytes / op_cost / op_workspace).
struct use_graph_t {};
inline constexpr use_graph_t use_graph{};

namespace detail {
template <class L, class D>
decltype(auto) lookup(const L& l, const D& d) {
  if constexpr (std::is_invocable_v<const L&, const D&>) return std::invoke(l, d);
  else if constexpr (requires { l[d]; }) return l[d];
  else if constexpr (requires { l[d.index]; }) return l[static_cast<std::size_t>(d.index)];  // dense handles
  else if constexpr (requires { l.at(d); }) return l.at(d);
  else if constexpr (requires { get(l, d); }) return get(l, d);
  else static_assert(_cpo::dependent_false<L, D>, "memplan lookup: pass an invocable f(descriptor), a container indexable by the descriptor, or a property map with get(map, descriptor)");
}
}  // namespace detail

template <class Bytes = use_graph_t, class Cost = use_graph_t, class Workspace = use_graph_t>
struct lookups {
  Bytes bytes{};
  Cost cost{};
  Workspace workspace{};
};

// A problem together with the maps from dense ids back to the user's descriptors.
template <class OpD, class TensorD>
struct adapted_problem {
  memplan::problem problem;
  std::vector<OpD> op_descriptor;          // op id -> user's op descriptor
  std::vector<TensorD> tensor_descriptor;  // tensor id -> user's tensor descriptor
};

namespace detail {
template <class D>
concept hashable = requires(const D& d) { { std::hash<D>{}(d) } -> std::convertible_to<std::size_t>; } && std::equality_comparable<D>;
template <class D>
concept less_comparable = requires(const D& a, const D& b) { { a < b } -> std::convertible_to<bool>; };
template <class D>
using descriptor_map = std::conditional_t<hashable<D>, std::unordered_map<D, std::int32_t>, std::map<D, std::int32_t>>;
}  // namespace detail

// Reads any graph through the CPOs into a validated problem. O(ops + tensors + edges).
template <op_graph G, class Bytes = use_graph_t, class Cost = use_graph_t, class Workspace = use_graph_t>
auto adapt(const G& g, const lookups<Bytes, Cost, Workspace>& lk = {}, problem_options opt = {}, std::string name = {}) {
  using OpD = op_descriptor_t<G>;
  using TD = tensor_descriptor_t<G>;
  static_assert(detail::hashable<TD> || detail::less_comparable<TD>,
                "memplan::adapt: tensor descriptors must be hashable (std::hash) or ordered (operator<)");
  static_assert(detail::hashable<OpD> || detail::less_comparable<OpD>,
                "memplan::adapt: op descriptors must be hashable (std::hash) or ordered (operator<)");
  adapted_problem<OpD, TD> out;
  if constexpr (requires { { g.name() } -> std::convertible_to<std::string>; })
    if (name.empty()) name = g.name();
  problem_builder b(std::move(name), opt);
  detail::descriptor_map<TD> tid;
  for (auto&& t : ::memplan::tensors(g)) {
    std::int64_t bytes = 0;
    if constexpr (std::is_same_v<Bytes, use_graph_t>) bytes = ::memplan::tensor_bytes(g, t);
    else bytes = static_cast<std::int64_t>(detail::lookup(lk.bytes, t));
    auto nm = ::memplan::tensor_name(g, t);
    auto id = b.add_tensor(nm ? *nm : std::string{}, bytes, ::memplan::tensor_kind_of(g, t));
    if (!tid.emplace(t, id).second)
      throw error(errc::invalid_graph, "tensor '" + (nm ? *nm : std::to_string(id)) + "' is listed twice by tensors(g)");
    out.tensor_descriptor.push_back(t);
  }
  auto tensor_of = [&](const TD& t, const std::string& op) {
    auto it = tid.find(t);
    if (it == tid.end())
      throw error(errc::invalid_graph, "op '" + op + "' uses a tensor that tensors(g) does not list (dangling tensor)");
    return it->second;
  };
  for (std::size_t i = 0; i < out.tensor_descriptor.size(); ++i)
    if (auto base = ::memplan::inplace_of(g, out.tensor_descriptor[i]))
      b.set_inplace_of(static_cast<tensor_id>(i), tensor_of(*base, "inplace_of"));
  for (auto&& o : ::memplan::ops(g)) {
    auto nm = ::memplan::op_name(g, o);
    std::string name_s = nm ? *nm : "op" + std::to_string(out.op_descriptor.size());
    std::vector<tensor_id> ins, outs;
    for (auto&& t : ::memplan::inputs(g, o)) ins.push_back(tensor_of(t, name_s));
    for (auto&& t : ::memplan::outputs(g, o)) outs.push_back(tensor_of(t, name_s));
    double cost = 0;
    std::int64_t ws = 0;
    if constexpr (std::is_same_v<Cost, use_graph_t>) cost = ::memplan::op_cost(g, o);
    else cost = static_cast<double>(detail::lookup(lk.cost, o));
    if constexpr (std::is_same_v<Workspace, use_graph_t>) ws = ::memplan::op_workspace(g, o);
    else ws = static_cast<std::int64_t>(detail::lookup(lk.workspace, o));
    b.add_op(std::move(name_s), std::move(ins), std::move(outs), ::memplan::op_type(g, o), ::memplan::op_phase_of(g, o), cost, ws);
    out.op_descriptor.push_back(o);
  }
  out.problem = b.build();
  // When the graph also answers producer/consumers, they must agree with inputs/outputs.
  if constexpr (tensor_graph<G>) {
    detail::descriptor_map<OpD> oid;
    for (std::size_t i = 0; i < out.op_descriptor.size(); ++i) oid.emplace(out.op_descriptor[i], static_cast<op_id>(i));
    const auto& p = out.problem;
    for (std::size_t i = 0; i < out.tensor_descriptor.size(); ++i) {
      const auto t = static_cast<tensor_id>(i);
      auto pr = ::memplan::producer(g, out.tensor_descriptor[i]);
      const op_id claimed = pr ? oid.at(*pr) : no_id;
      if (claimed != p.producer(t))
        throw error(errc::invalid_graph, "tensor '" + p.tensor_name(t) + "': producer(g, t) disagrees with the ops' outputs");
      std::size_t n = 0;
      for (auto&& c : ::memplan::consumers(g, out.tensor_descriptor[i])) {
        auto it = oid.find(c);
        auto cs = p.consumers(t);
        if (it == oid.end() || std::find(cs.begin(), cs.end(), it->second) == cs.end())
          throw error(errc::invalid_graph, "tensor '" + p.tensor_name(t) + "' lists a consumer that does not read it (dangling consumer)");
        ++n;
      }
      if (n < p.consumers(t).size())
        throw error(errc::invalid_graph, "tensor '" + p.tensor_name(t) + "': consumers(g, t) misses an op that reads it");
    }
  }
  return out;
}

// The problem only.
template <op_graph G, class Bytes = use_graph_t, class Cost = use_graph_t, class Workspace = use_graph_t>
problem make_problem(const G& g, const lookups<Bytes, Cost, Workspace>& lk = {}, problem_options opt = {}) {
  return adapt(g, lk, opt).problem;
}

}  // namespace memplan
