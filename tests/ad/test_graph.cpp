// ad::program -> graph::dataflow_graph, cross-checked with the core: the core's peak of the given
// order equals the eager runner's measured peak, for every model.
#include <doctest/doctest.h>

#include <numeric>

#include <memplan/core/adapt.hpp>
#include <memplan/ad/eager.hpp>
#include <memplan/ad/graph.hpp>
#include <memplan/ad/models/cnn.hpp>
#include <memplan/ad/models/mlp.hpp>
#include <memplan/ad/models/transformer.hpp>
#include <memplan/core/analysis.hpp>
#include <memplan/core/problem.hpp>

using namespace memplan::ad;

TEST_CASE("to_dataflow_graph: same tensors, ops, bytes, kinds and in-place links, core peak == eager peak") {
  for (int which = 0; which < 3; ++which) {
    CAPTURE(which);
    const model m = which == 0   ? models::mlp({.batch = 16}, sgd{0.1f, 0.9f})
                    : which == 1 ? models::cnn({.batch = 4}, adam{})
                                 : models::transformer({.batch = 4}, adam{});
    const auto g = to_dataflow_graph(m.step);
    REQUIRE(g.num_ops() == m.step.nodes.size());
    REQUIRE(g.num_tensors() == m.step.tensors.size());
    for (std::size_t t = 0; t < m.step.tensors.size(); ++t) {
      const memplan::graph::tensor_ref r{static_cast<std::int32_t>(t)};
      CHECK(g.tensor_bytes(r) == m.step.tensors[t].bytes());
      CHECK(g.tensor_kind_of(r) == m.step.tensors[t].kind);
      CHECK(g.inplace_of(r).has_value() == (m.step.tensors[t].inplace_of >= 0));
    }
    for (std::size_t i = 0; i < m.step.nodes.size(); ++i) {
      const memplan::graph::op_ref o{static_cast<std::int32_t>(i)};
      CHECK(g.op_phase_of(o) == m.step.nodes[i].phase);
      CHECK(g.op_workspace(o) == m.step.nodes[i].workspace_bytes);
      CHECK(g.op_cost(o) == m.step.nodes[i].flops);
    }
    const auto prob = memplan::make_problem(g);
    std::vector<memplan::op_id> order(m.step.nodes.size());
    std::iota(order.begin(), order.end(), 0);
    eager_runner r(m.step);
    rng gen(3);
    for (auto& v : r.data(m.features)) v = which == 2 ? static_cast<float>(gen.below(16)) : static_cast<float>(gen.normal());
    for (auto& v : r.data(m.labels)) v = static_cast<float>(gen.below(m.classes));
    r.run();
    CHECK(memplan::peak_of(prob, order) == r.peak_bytes());
  }
}
