#pragma once
// A copy of a problem with each op's cost, workspace and implementations rewritten by a callback, in op
// order (tensors, in-place links, names, phases, recomputability, extra edges and the cost unit kept):
// the test graphs that add implementation alternatives to generated problems.
#include <cstdint>
#include <vector>

#include <memplan/core/problem.hpp>
#include <memplan/core/problem_builder.hpp>

namespace memplan::testing {

struct op_fields {
  double cost = 0.0;
  std::int64_t workspace = 0;
  std::vector<implementation> impls;
};

// edit(const problem& p, op_id o, op_fields& f): f starts as o's own fields.
template <class Edit>
problem with_ops(const problem& p, Edit&& edit) {
  problem_builder b(p.name(), p.options());
  b.set_cost_unit(p.cost_unit());
  for (tensor_id t = 0; t < p.num_tensors(); ++t) b.add_tensor(p.tensor_name(t), p.bytes(t), p.kind(t));
  for (tensor_id t = 0; t < p.num_tensors(); ++t)
    if (p.inplace_of(t) != no_id) b.set_inplace_of(t, p.inplace_of(t));
  for (op_id o = 0; o < p.num_ops(); ++o) {
    const auto in = p.inputs(o);
    const auto out = p.outputs(o);
    const auto im = p.implementations(o);
    op_fields f{p.cost(o), p.workspace(o), {im.begin(), im.end()}};
    edit(p, o, f);
    b.add_op(p.op_name(o), {in.begin(), in.end()}, {out.begin(), out.end()}, p.op_type(o), p.phase(o), f.cost, f.workspace,
             std::move(f.impls), p.recomputable(o));
  }
  for (auto [x, y] : p.extra_edges()) b.add_edge(x, y);
  return b.build();
}

}  // namespace memplan::testing
