#pragma once
// ad::program -> memplan::graph::dataflow_graph: what the planners see of a training step. One graph
// tensor per program tensor (same name, exact bytes, kind, shape, inplace_of) and one graph op per node
// in the given order (op i == node i), with the node's phase, FLOPs as cost and workspace bytes.
// A tensor read twice by one node (e.g. mul(x, x)) is listed once among the op's inputs; executors
// keep using node.inputs for the kernel's argument order.
#include <algorithm>
#include <string>
#include <vector>

#include <memplan/ad/program_types.hpp>
#include <memplan/ad/validate.hpp>
#include <memplan/graph/dataflow_graph.hpp>

namespace memplan::ad {

inline graph::dataflow_graph to_dataflow_graph(const program& p) {
  validate(p);
  graph::dataflow_graph g(p.name);
  std::vector<graph::tensor_ref> ref;
  ref.reserve(p.tensors.size());
  for (const auto& t : p.tensors) ref.push_back(g.add_tensor(t.name, t.bytes(), t.kind, {t.shape, "float32"}));
  for (std::size_t t = 0; t < p.tensors.size(); ++t)
    if (p.tensors[t].inplace_of >= 0) g.set_inplace_of(ref[t], ref[static_cast<std::size_t>(p.tensors[t].inplace_of)]);
  for (const auto& n : p.nodes) {
    std::vector<graph::tensor_ref> ins, outs;
    for (auto t : n.inputs) {
      const auto r = ref[static_cast<std::size_t>(t)];
      if (std::find(ins.begin(), ins.end(), r) == ins.end()) ins.push_back(r);
    }
    for (auto t : n.outputs) outs.push_back(ref[static_cast<std::size_t>(t)]);
    g.add_op(n.name, std::move(ins), std::move(outs),
             graph::op_attributes{"ad." + std::string(to_string(n.kind)), n.phase, n.flops, n.workspace_bytes});
  }
  return g;
}

}  // namespace memplan::ad
