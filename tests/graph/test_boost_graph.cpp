#include <doctest/doctest.h>

#include <memplan/core/pipeline.hpp>
#include <memplan/graph/boost_graph.hpp>
#include <memplan/schedule/given.hpp>

#include "../support/stack_placer.hpp"

namespace {
struct op_props {
  std::string name;
};
struct use_props {
  std::string tensor;  // which tensor of the source this edge carries
  std::int64_t bytes;
};
using bgraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, op_props, use_props>;
}  // namespace

static_assert(memplan::dataflow_graph<memplan::boost_dataflow_view<bgraph>>);

TEST_CASE("boost adapter: out-edges grouped by source form tensors with many consumers") {
  bgraph g;
  auto load = boost::add_vertex({"load"}, g);
  auto conv = boost::add_vertex({"conv"}, g);
  auto relu = boost::add_vertex({"relu"}, g);
  auto add = boost::add_vertex({"add"}, g);
  boost::add_edge(load, conv, {"x", 100}, g);
  boost::add_edge(load, add, {"x", 100}, g);  // same tensor x, second consumer
  boost::add_edge(conv, relu, {"y", 40}, g);
  boost::add_edge(relu, add, {"z", 40}, g);
  memplan::boost_dataflow_view view(g);
  CHECK(view.tensors().size() == 3);
  CHECK(view.consumers(memplan::boost_tensor_ref{0}).size() == 2);
  CHECK(*view.tensor_name(memplan::boost_tensor_ref{0}) == "load:x");  // unique: source + key
  auto p = memplan::make_problem(view);
  CHECK(p.num_ops() == 4);
  CHECK(p.op_name(2) == "relu");
  const std::vector<memplan::op_id> order{0, 1, 2, 3};
  CHECK(memplan::peak_of(p, order) == 100 + 40 + 40);
  auto plan = memplan::plan(view, memplan::schedule::given{} | memplan::testing::stack_placer{});
  CHECK(memplan::verify(p, plan).ok);
}

TEST_CASE("boost adapter: inconsistent sizes of one tensor are an error") {
  bgraph g;
  auto a = boost::add_vertex({"a"}, g);
  auto b = boost::add_vertex({"b"}, g);
  auto c = boost::add_vertex({"c"}, g);
  boost::add_edge(a, b, {"t", 8}, g);
  boost::add_edge(a, c, {"t", 9}, g);
  CHECK_THROWS_AS(memplan::boost_dataflow_view<bgraph>{g}, memplan::error);
}
