#pragma once
// memplan::adapt / make_problem: read any conforming graph (graph/traits.hpp CPOs) into a validated
// problem, with sizes, costs and workspaces from the graph or from lookups kept outside it.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/base/ids.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/problem_builder.hpp>
#include <memplan/graph/traits.hpp>

namespace memplan {

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
  if constexpr (requires { { g.cost_unit() } -> std::convertible_to<std::string>; }) b.set_cost_unit(g.cost_unit());
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
    b.add_op(std::move(name_s), std::move(ins), std::move(outs), ::memplan::op_type(g, o), ::memplan::op_phase_of(g, o), cost, ws,
             ::memplan::op_implementations(g, o), ::memplan::op_recomputable(g, o));
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
