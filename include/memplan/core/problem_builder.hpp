#pragma once
// problem_builder: builds a memplan::problem from flat, id-based input and validates it (used by
// memplan::adapt for any graph and by the JSON reader); with_ops / with_edges: a copy of a problem with
// ops' fields rewritten / extra precedence edges. Every error names the culprit.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/base/ids.hpp>
#include <memplan/base/kinds.hpp>
#include <memplan/core/problem.hpp>

namespace memplan {

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
               std::vector<implementation> impls = {}, bool recomputable = true) {
    ops_.push_back({std::move(name), std::move(type), phase, cost, workspace, std::move(ins), std::move(outs), std::move(impls),
                    recomputable});
    return static_cast<op_id>(ops_.size() - 1);
  }
  // What the costs measure: "seconds", "flops" or "units".
  void set_cost_unit(std::string unit) { p_.cost_unit_ = std::move(unit); }
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
    bool recomputable = true;
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
    // Placement works in int64 with room for alignment padding and sums (core/buffer.hpp refuses
    // buffers above max / 4): a larger tensor is refused here, by name, not later as "buffer k".
    if (ti.bytes > std::numeric_limits<std::int64_t>::max() / 4)
      throw error(errc::invalid_graph, "tensor '" + ti.name + "': size " + std::to_string(ti.bytes) +
                                           " overflows memplan's arena arithmetic (at most 2^61 - 1 bytes per tensor)");
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
  p.recomputable_.resize(no);
  p.op_by_name_.reserve(no);
  p.producer_.assign(nt, no_id);
  std::vector<std::vector<tensor_id>> ins(no), outs(no);
  std::vector<std::vector<op_id>> cons(nt);
  std::vector<std::vector<implementation>> impls(no), variants(no);
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
    for (std::size_t k = 0; k < oi.impls.size(); ++k) {
      const auto& im = oi.impls[k];
      if (im.name.empty()) throw error(errc::invalid_graph, "op '" + oi.name + "': implementation " + std::to_string(k) + " has no name");
      if (im.workspace < 0 || !(im.cost >= 0.0) || im.cost == std::numeric_limits<double>::infinity())
        throw error(errc::invalid_graph, "op '" + oi.name + "': implementation '" + im.name + "' has a negative or infinite cost or workspace");
      if (im.workspace > std::numeric_limits<std::int64_t>::max() / 4)
        throw error(errc::invalid_graph, "op '" + oi.name + "': implementation '" + im.name + "': workspace overflows");
      for (std::size_t j = 0; j < k; ++j)
        if (oi.impls[j].name == im.name)
          throw error(errc::invalid_graph, "op '" + oi.name + "' lists implementation '" + im.name + "' twice");
    }
    p.op_name_[o] = oi.name;
    p.op_type_[o] = oi.type;
    p.phase_[o] = oi.phase;
    p.cost_[o] = oi.cost;
    p.workspace_[o] = oi.workspace;
    p.recomputable_[o] = oi.recomputable ? 1 : 0;
    for (auto& im : oi.impls) (im.inputs.empty() ? impls[o] : variants[o]).push_back(im);
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
    // A variant reads tensors of the graph, none twice, none of the op's outputs, and still every tensor
    // the op overwrites in place (it writes the new version either way).
    for (const auto& v : variants[o]) {
      const auto at = "op '" + oi.name + "': variant '" + v.name + "'";
      std::vector<tensor_id> vin;
      for (const auto& n : v.inputs) {
        auto it = p.tensor_by_name_.find(n);
        if (it == p.tensor_by_name_.end()) throw error(errc::invalid_graph, at + " reads unknown tensor '" + n + "'");
        if (std::find(vin.begin(), vin.end(), it->second) != vin.end()) continue;  // read twice: read once
        if (std::find(outs[o].begin(), outs[o].end(), it->second) != outs[o].end())
          throw error(errc::invalid_graph, at + " reads the op's own output '" + n + "'");
        vin.push_back(it->second);
      }
      for (auto t : outs[o]) {
        const auto base = tensors_[static_cast<std::size_t>(t)].inplace_of;
        if (base != no_id && std::find(vin.begin(), vin.end(), base) == vin.end())
          throw error(errc::invalid_graph, at + " does not read '" + tensors_[static_cast<std::size_t>(base)].name +
                                               "', which the op overwrites in place");
      }
    }
  }
  // Tensors without a producer must be of a kind that exists before the run.
  for (std::size_t t = 0; t < nt; ++t)
    if (p.producer_[t] == no_id && !may_be_resident(p.kind_[t]))
      throw error(errc::invalid_graph, "tensor '" + p.tensor_name_[t] + "' (" + std::string(to_string(p.kind_[t])) +
                                           ") has no producer; only input, weight and optimizer_state tensors may");

  // ---- storages: union along inplace_of chains ----
  // Each chain is walked once: a walk stops at the first tensor whose root is known and gives its
  // root to every tensor on the way (linear in the number of tensors, even for one chain of 100k
  // in-place writes).
  std::vector<tensor_id> root(nt, no_id);
  std::vector<std::uint8_t> on_walk(nt, 0);
  std::vector<tensor_id> walk;
  for (std::size_t t = 0; t < nt; ++t) {
    walk.clear();
    tensor_id r = static_cast<tensor_id>(t);
    while (root[static_cast<std::size_t>(r)] == no_id && p.inplace_of_[static_cast<std::size_t>(r)] != no_id) {
      if (on_walk[static_cast<std::size_t>(r)]) throw error(errc::invalid_graph, "tensor '" + p.tensor_name_[t] + "': inplace_of forms a cycle");
      on_walk[static_cast<std::size_t>(r)] = 1;
      walk.push_back(r);
      r = p.inplace_of_[static_cast<std::size_t>(r)];
    }
    if (root[static_cast<std::size_t>(r)] != no_id) r = root[static_cast<std::size_t>(r)];
    for (auto w : walk) root[static_cast<std::size_t>(w)] = r;
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
  p.options_ = opt_;
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
  detail::to_csr(variants, p.variant_off_, p.variant_);
  detail::to_csr(users, p.su_off_, p.su_);
  detail::to_csr(touched, p.touch_off_, p.touch_);
  return std::move(p_);
}

// One op's rewritable fields, for with_ops.
struct op_fields {
  double cost = 0.0;
  std::int64_t workspace = 0;
  std::vector<implementation> impls;
  std::vector<tensor_id> inputs{};  // what it reads (extra reads keep values on the device longer)
};

// A copy of a problem with each op's cost, workspace, implementations and inputs rewritten by
// edit(const problem& p, op_id o, op_fields& f) (f starts as o's own fields; called in op order) and
// extra precedence edges (a runs before b) added; tensors, in-place links, names, phases,
// recomputability, the problem's edges, cost unit and instrumentation kept (each tensor's bytes too,
// unless `tensor_bytes`, one per tensor, gives others). Revalidated: throws if an edge creates a cycle or
// an edited field is invalid.
template <class Edit>
problem with_ops(const problem& p, Edit&& edit, std::span<const std::pair<op_id, op_id>> edges = {},
                 std::span<const std::int64_t> tensor_bytes = {}) {
  problem_builder b(p.name(), p.options());
  b.set_cost_unit(p.cost_unit());
  for (tensor_id t = 0; t < p.num_tensors(); ++t)
    b.add_tensor(p.tensor_name(t), tensor_bytes.empty() ? p.bytes(t) : tensor_bytes[static_cast<std::size_t>(t)], p.kind(t));
  for (tensor_id t = 0; t < p.num_tensors(); ++t)
    if (p.inplace_of(t) != no_id) b.set_inplace_of(t, p.inplace_of(t));
  for (op_id o = 0; o < p.num_ops(); ++o) {
    const auto in = p.inputs(o);
    const auto out = p.outputs(o);
    const auto im = p.implementations(o);
    op_fields f{p.cost(o), p.workspace(o), {im.begin(), im.end()}, {in.begin(), in.end()}};
    edit(p, o, f);
    for (const auto& v : p.variants(o)) f.impls.push_back(v);  // variants travel unchanged
    b.add_op(p.op_name(o), std::move(f.inputs), {out.begin(), out.end()}, p.op_type(o), p.phase(o), f.cost, f.workspace,
             std::move(f.impls), p.recomputable(o));
  }
  for (auto [a, c] : p.extra_edges()) b.add_edge(a, c);
  for (auto [a, c] : edges) b.add_edge(a, c);
  auto q = b.build();
  q.instrument(p.counters());
  return q;
}

// A copy with extra precedence edges (a runs before b), e.g. OLLA's early-update control edges
// (Function 3). Throws if an edge creates a cycle.
inline problem with_edges(const problem& p, std::span<const std::pair<op_id, op_id>> edges) {
  return with_ops(p, [](const problem&, op_id, op_fields&) {}, edges);
}

}  // namespace memplan
