#pragma once
// An allocation trace with scopes, as a dataflow graph (docs/format.md): MemoMalloc §3.1 ties every
// allocation to the operator in whose scope it was made; the same ties make the trace a graph that
// memplan's schedulers and checkpointers can work on, not only its placers.
//
// Each scope instance (recording_resource::set_scope) is one op, in the order the scopes began. Each
// allocation is one tensor of its bytes, produced by the op it was allocated in and consumed by the op in
// whose scope it was freed (the last op that used it); one freed in its own op is a temporary of that op
// (an output nobody reads, dead after it, like a workspace); one never freed is a graph output.
// Allocations made before the first scope belong to an op "trace.begin". Under the graph's memory rule
// (alloc at the producer, free after the last consumer) the given order's peak is the trace's live peak
// when every op frees the tensors it used last after it allocated its own (what frameworks do); it can
// only be higher otherwise. Views (trace.views) alias their allocation and add no tensor.
#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/base/kinds.hpp>
#include <memplan/graph/dataflow_graph.hpp>
#include <memplan/runtime/trace.hpp>

namespace memplan::runtime {

inline graph::dataflow_graph to_dataflow_graph(const allocation_trace& t, const std::string& name = "trace") {
  graph::dataflow_graph g(name);
  const bool has_begin = std::any_of(t.allocations.begin(), t.allocations.end(), [](const auto& r) { return r.scope < 0; });
  const auto ops = t.scopes.size() + (has_begin ? 1 : 0);
  auto op_of = [&](std::int32_t scope) { return static_cast<std::size_t>(scope + (has_begin ? 1 : 0)); };
  std::vector<std::vector<graph::tensor_ref>> ins(ops), outs(ops);
  std::unordered_map<std::string, int> tensor_names, op_names;
  auto unique = [](std::unordered_map<std::string, int>& used, std::string n) {
    const int k = used[n]++;
    return k == 0 ? n : n + "#" + std::to_string(k);
  };
  for (std::size_t i = 0; i < t.allocations.size(); ++i) {
    const auto& r = t.allocations[i];
    if (r.scope >= static_cast<std::int32_t>(t.scopes.size()) || r.free_scope >= static_cast<std::int32_t>(t.scopes.size()) ||
        (r.freed() && r.free_scope < r.scope))
      throw error(errc::invalid_argument, "trace graph: allocation " + std::to_string(i) + " has scopes out of order");
    const auto tensor = g.add_tensor(unique(tensor_names, r.tag.empty() ? "alloc" + std::to_string(i) : r.tag), r.size,
                                     r.freed() ? tensor_kind::activation : tensor_kind::output);
    outs[op_of(r.scope)].push_back(tensor);
    if (r.freed() && r.free_scope != r.scope) ins[op_of(r.free_scope)].push_back(tensor);
  }
  for (std::size_t k = 0; k < ops; ++k) {
    const auto scope_name = has_begin && k == 0 ? std::string("trace.begin") : t.scopes[k - (has_begin ? 1 : 0)];
    graph::op_attributes a;
    a.type = scope_name;
    g.add_op(unique(op_names, scope_name), std::move(ins[k]), std::move(outs[k]), a);
  }
  return g;
}

}  // namespace memplan::runtime
