#include <doctest/doctest.h>

#include <memplan/core/adapt.hpp>
#include <memplan/core/problem_builder.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/graph/dataflow_graph.hpp>

#include "../support/random_dag.hpp"

using namespace memplan;

namespace {
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const memplan::error& e) {
    return e.what();
  }
  return "<no error>";
}
}  // namespace

TEST_CASE("problem: dense ids, CSR, storages and residency") {
  graph::dataflow_graph g("tiny");
  auto x = g.add_tensor("x", 8, tensor_kind::input);
  auto w = g.add_tensor("w", 4, tensor_kind::weight);
  auto a = g.add_tensor("a", 16);
  auto b = g.add_tensor("b", 2);
  auto c = g.add_tensor("c", 16);
  auto loss = g.add_tensor("loss", 1, tensor_kind::output);
  auto w2 = g.add_tensor("w2", 4, tensor_kind::weight);
  g.add_op("f", {x, w}, {a, b}, {.type = "aten.f", .phase = op_phase::forward, .cost = 3, .workspace = 5});
  g.add_op("relu_", {a}, {c});
  g.set_inplace_of(c, a);
  g.add_op("l", {c, b}, {loss});
  g.add_op("upd", {w, b}, {w2}, {.type = "sgd", .phase = op_phase::update});
  g.set_inplace_of(w2, w);
  const auto p = make_problem(g);
  CHECK(p.name() == "tiny");
  CHECK(p.num_ops() == 4);
  CHECK(p.num_tensors() == 7);
  CHECK(p.num_storages() == 5);  // x, w(+w2), a(+c), b, loss
  CHECK(p.storage_of(2) == p.storage_of(4));
  CHECK(p.storage_of(1) == p.storage_of(6));
  CHECK(p.resident(p.storage_of(0)));
  CHECK(p.resident(p.storage_of(1)));
  CHECK_FALSE(p.resident(p.storage_of(2)));
  CHECK(p.live_to_end(p.storage_of(5)));
  CHECK(p.resident_bytes() == 12);
  CHECK(p.inputs(0).size() == 2);
  CHECK(p.outputs(0).size() == 2);
  CHECK(p.consumers(3).size() == 2);  // b feeds l and upd
  CHECK(p.workspace(0) == 5);
  CHECK(p.cost(0) == 3);
  CHECK(p.phase(0) == op_phase::forward);
  CHECK(p.op_type(3) == "sgd");
  CHECK(p.producer(0) == no_id);
  CHECK(p.producer(4) == 1);
  // in-place order: upd overwrites w, which f reads: f -> upd is a precedence
  auto pu = p.preds(3);
  CHECK(std::find(pu.begin(), pu.end(), 0) != pu.end());
  CHECK(p.find_op("l") == std::optional<op_id>(2));
  CHECK(p.find_tensor("nope") == std::nullopt);
}

TEST_CASE("problem: validation names the culprit") {
  SUBCASE("cycle is printed") {
    problem_builder b("cyc");
    auto t0 = b.add_tensor("t0", 1, tensor_kind::activation);
    auto t1 = b.add_tensor("t1", 1, tensor_kind::activation);
    auto t2 = b.add_tensor("t2", 1, tensor_kind::activation);
    b.add_op("A", {t2}, {t0});
    b.add_op("B", {t0}, {t1});
    b.add_op("C", {t1}, {t2});
    auto msg = error_of([&] { (void)b.build(); });
    CHECK(msg.find("cycle") != std::string::npos);
    CHECK(msg.find("'A'") != std::string::npos);
    CHECK(msg.find("'B'") != std::string::npos);
    CHECK(msg.find("'C'") != std::string::npos);
  }
  SUBCASE("activation without producer") {
    graph::dataflow_graph g;
    auto t = g.add_tensor("orphan", 4);
    auto y = g.add_tensor("y", 4);
    g.add_op("op", {t}, {y});
    CHECK(error_of([&] { (void)make_problem(g); }).find("'orphan' (activation) has no producer") != std::string::npos);
  }
  SUBCASE("dangling consumer: op reads an unknown tensor") {
    problem_builder b;
    b.add_tensor("x", 1, tensor_kind::input);
    b.add_op("reader", {7}, {});
    CHECK(error_of([&] { (void)b.build(); }).find("'reader' reads a tensor that is not in the graph") != std::string::npos);
  }
  SUBCASE("duplicate names") {
    problem_builder b;
    b.add_tensor("x", 1, tensor_kind::input);
    b.add_tensor("x", 1, tensor_kind::input);
    CHECK(error_of([&] { (void)b.build(); }).find("duplicate tensor name 'x'") != std::string::npos);
    problem_builder c;
    auto x = c.add_tensor("x", 1, tensor_kind::input);
    auto y = c.add_tensor("y", 1, tensor_kind::activation);
    auto z = c.add_tensor("z", 1, tensor_kind::activation);
    c.add_op("op", {x}, {y});
    c.add_op("op", {x}, {z});
    CHECK(error_of([&] { (void)c.build(); }).find("duplicate op name 'op'") != std::string::npos);
  }
  SUBCASE("negative and overflowing sizes") {
    problem_builder b;
    b.add_tensor("neg", -1, tensor_kind::input);
    CHECK(error_of([&] { (void)b.build(); }).find("'neg' has negative size -1") != std::string::npos);
    problem_builder c;
    c.add_tensor("big1", std::numeric_limits<std::int64_t>::max() / 2, tensor_kind::input);
    c.add_tensor("big2", std::numeric_limits<std::int64_t>::max() / 2, tensor_kind::input);
    CHECK(error_of([&] { (void)c.build(); }).find("overflows") != std::string::npos);
  }
  SUBCASE("two producers") {
    graph::dataflow_graph g;
    auto x = g.add_tensor("x", 1, tensor_kind::input);
    auto y = g.add_tensor("y", 1);
    g.add_op("p1", {x}, {y});
    CHECK(error_of([&] { g.add_op("p2", {x}, {y}); }).find("produced by both 'p1' and 'p2'") != std::string::npos);
  }
  SUBCASE("control tensor with bytes") {
    problem_builder b;
    b.add_tensor("c", 3, tensor_kind::control);
    CHECK(error_of([&] { (void)b.build(); }).find("control tensor 'c' must have 0 bytes") != std::string::npos);
  }
  SUBCASE("in-place cycle / unproduced in-place tensor") {
    problem_builder b;
    auto a = b.add_tensor("a", 1, tensor_kind::weight);
    auto c = b.add_tensor("c", 1, tensor_kind::weight);
    b.set_inplace_of(a, c);
    b.set_inplace_of(c, a);
    CHECK(error_of([&] { (void)b.build(); }).find("inplace_of") != std::string::npos);
  }
}

TEST_CASE("problem: adapt keeps descriptors and uses external lookups") {
  graph::dataflow_graph g("lk");
  auto x = g.add_tensor("x", 1, tensor_kind::input);
  auto y = g.add_tensor("y", 1);
  auto op = g.add_op("f", {x}, {y});
  std::vector<std::int64_t> sizes{100, 200};
  auto ad = adapt(g, lookups<std::vector<std::int64_t>, std::function<double(graph::op_ref)>>{
                         sizes, [](graph::op_ref) { return 7.0; }, {}});
  CHECK(ad.problem.bytes(0) == 100);
  CHECK(ad.problem.bytes(1) == 200);
  CHECK(ad.problem.cost(0) == 7.0);
  CHECK(ad.op_descriptor[0] == op);
  CHECK(ad.tensor_descriptor[1] == y);
}

TEST_CASE("problem: with_edges adds precedence and rejects cycles") {
  graph::dataflow_graph g("edges");
  auto x = g.add_tensor("x", 1, tensor_kind::input);
  auto a = g.add_tensor("a", 1);
  auto b = g.add_tensor("b", 1);
  auto c = g.add_tensor("c", 1);
  g.add_op("A", {x}, {a});
  g.add_op("B", {x}, {b});
  g.add_op("C", {a}, {c});
  const auto p = make_problem(g);
  CHECK(p.preds(1).empty());
  const std::pair<op_id, op_id> ok[] = {{2, 1}};  // C before B: fine
  const auto q = with_edges(p, ok);
  REQUIRE(q.preds(1).size() == 1);
  CHECK(q.preds(1)[0] == 2);
  const std::pair<op_id, op_id> bad[] = {{2, 0}};  // C before A: A -> C -> A
  CHECK(error_of([&] { (void)with_edges(p, bad); }).find("cycle") != std::string::npos);
}

TEST_CASE("problem: random graphs build deterministically") {
  for (std::uint64_t seed = 0; seed < 50; ++seed) {
    auto g = testing::random_dag(seed, {.ops = 30});
    auto p1 = make_problem(g);
    auto p2 = make_problem(g);
    REQUIRE(p1.num_ops() == 30);
    for (op_id o = 0; o < p1.num_ops(); ++o) {
      auto a = p1.preds(o);
      auto b = p2.preds(o);
      CHECK(std::vector<op_id>(a.begin(), a.end()) == std::vector<op_id>(b.begin(), b.end()));
    }
  }
}
