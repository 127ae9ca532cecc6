#pragma once
// ad::program -> what the planners see of a training step.
//
// to_dataflow_graph(p): a memplan::graph::dataflow_graph with one graph tensor per program tensor
// (same name, exact bytes, kind, shape, inplace_of) and one graph op per node in the given order
// (op i == node i), with the node's phase, cost and workspace bytes. A tensor read twice by one node
// (e.g. mul(x, x)) is listed once among the op's inputs; executors keep using node.inputs for the
// kernel's argument order. The graph type has no field for implementation alternatives.
//
// make_problem(p): the same problem memplan::make_problem(to_dataflow_graph(p)) gives, plus every
// node's implementations (ad/implementations.hpp) in problem::implementations(op), default first,
// for nodes that have more than one; the op's own cost and workspace are the default's. Costs come
// from a cost_table: flop_costs(p) when none is given (op cost = FLOPs, as before), or calibrate(p)
// (seconds measured on this machine).
#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include <memplan/ad/costs.hpp>
#include <memplan/ad/implementations.hpp>
#include <memplan/ad/program_types.hpp>
#include <memplan/ad/validate.hpp>
#include <memplan/base/error.hpp>
#include <memplan/base/ids.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/problem_builder.hpp>
#include <memplan/graph/dataflow_graph.hpp>

namespace memplan::ad {

namespace detail {
inline void check_costs(const program& p, const cost_table& c) {
  if (c.cost.size() != p.nodes.size())
    throw error(errc::invalid_argument, "ad: the cost table has " + std::to_string(c.cost.size()) + " nodes, program '" + p.name +
                                            "' has " + std::to_string(p.nodes.size()));
  for (std::size_t i = 0; i < p.nodes.size(); ++i)
    if (c.cost[i].size() != static_cast<std::size_t>(implementation_count(p.nodes[i].kind)))
      throw error(errc::invalid_argument, "ad: the cost table lists " + std::to_string(c.cost[i].size()) +
                                              " implementations of node '" + p.nodes[i].name + "', which has " +
                                              std::to_string(implementation_count(p.nodes[i].kind)));
}
// The node's inputs, each tensor once (the problem's view of an op that reads a tensor twice).
inline std::vector<std::int32_t> distinct_inputs(const node& n) {
  std::vector<std::int32_t> ins;
  for (auto t : n.inputs)
    if (std::find(ins.begin(), ins.end(), t) == ins.end()) ins.push_back(t);
  return ins;
}
}  // namespace detail

inline graph::dataflow_graph to_dataflow_graph(const program& p, const cost_table& costs) {
  validate(p);
  detail::check_costs(p, costs);
  graph::dataflow_graph g(p.name);
  std::vector<graph::tensor_ref> ref;
  ref.reserve(p.tensors.size());
  for (const auto& t : p.tensors) ref.push_back(g.add_tensor(t.name, t.bytes(), t.kind, {t.shape, "float32"}));
  for (std::size_t t = 0; t < p.tensors.size(); ++t)
    if (p.tensors[t].inplace_of >= 0) g.set_inplace_of(ref[t], ref[static_cast<std::size_t>(p.tensors[t].inplace_of)]);
  for (std::size_t i = 0; i < p.nodes.size(); ++i) {
    const auto& n = p.nodes[i];
    std::vector<graph::tensor_ref> ins, outs;
    for (auto t : detail::distinct_inputs(n)) ins.push_back(ref[static_cast<std::size_t>(t)]);
    for (auto t : n.outputs) outs.push_back(ref[static_cast<std::size_t>(t)]);
    g.add_op(n.name, std::move(ins), std::move(outs),
             graph::op_attributes{"ad." + std::string(to_string(n.kind)), n.phase, costs.of(i, -1), n.workspace_bytes});
  }
  return g;
}
inline graph::dataflow_graph to_dataflow_graph(const program& p) { return to_dataflow_graph(p, flop_costs(p)); }

inline problem make_problem(const program& p, const cost_table& costs) {
  validate(p);
  detail::check_costs(p, costs);
  problem_builder b(p.name);
  for (const auto& t : p.tensors) b.add_tensor(t.name, t.bytes(), t.kind);
  for (std::size_t t = 0; t < p.tensors.size(); ++t)
    if (p.tensors[t].inplace_of >= 0) b.set_inplace_of(static_cast<tensor_id>(t), p.tensors[t].inplace_of);
  for (std::size_t i = 0; i < p.nodes.size(); ++i) {
    const auto& n = p.nodes[i];
    std::vector<implementation> impls;
    if (implementation_count(n.kind) > 1) {
      const auto alts = implementations(n);
      for (std::size_t k = 0; k < alts.size(); ++k)
        impls.push_back({alts[k].name, costs.of(i, static_cast<std::int32_t>(k)), alts[k].workspace_bytes});
    }
    std::vector<tensor_id> ins, outs;
    for (auto t : detail::distinct_inputs(n)) ins.emplace_back(t);
    for (auto t : n.outputs) outs.emplace_back(t);
    b.add_op(n.name, std::move(ins), std::move(outs), "ad." + std::string(to_string(n.kind)), n.phase, costs.of(i, -1),
             n.workspace_bytes, std::move(impls));
  }
  return b.build();
}
inline problem make_problem(const program& p) { return make_problem(p, flop_costs(p)); }

}  // namespace memplan::ad
