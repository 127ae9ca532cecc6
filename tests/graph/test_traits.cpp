#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include <memplan/core/adapt.hpp>
#include <memplan/core/analysis.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/graph/traits.hpp>

// A third-party graph adapted with a handful of free functions found by ADL.
namespace thirdparty {
struct node {
  std::string name;
  std::vector<int> in, out;
  friend bool operator<(const node& a, const node& b) { return a.name < b.name; }
  friend bool operator==(const node& a, const node& b) { return a.name == b.name; }
};
struct buf {
  int id;
  long long bytes;  // found by the default tensor_bytes (a `bytes` field)
  friend bool operator==(const buf& a, const buf& b) { return a.id == b.id; }
  friend bool operator<(const buf& a, const buf& b) { return a.id < b.id; }
};
struct net {
  std::vector<node> nodes;
  std::vector<buf> bufs;
};
inline const std::vector<node>& ops(const net& n) { return n.nodes; }
inline const std::vector<buf>& tensors(const net& n) { return n.bufs; }
inline std::vector<buf> inputs(const net& n, const node& v) {
  std::vector<buf> r;
  for (int i : v.in) r.push_back(n.bufs[static_cast<std::size_t>(i)]);
  return r;
}
inline std::vector<buf> outputs(const net& n, const node& v) {
  std::vector<buf> r;
  for (int i : v.out) r.push_back(n.bufs[static_cast<std::size_t>(i)]);
  return r;
}
inline memplan::tensor_kind tensor_kind_of(const net&, const buf& b) {
  return b.id == 0 ? memplan::tensor_kind::input : memplan::tensor_kind::activation;
}
inline std::optional<std::string> op_name(const net&, const node& v) { return v.name; }
}  // namespace thirdparty

// A graph with member functions only (the first lookup step).
struct member_graph {
  std::vector<int> ops() const { return {0, 1}; }
  std::vector<int> tensors() const { return {10, 11, 12}; }
  std::vector<int> inputs(int op) const { return {op == 0 ? 10 : 11}; }
  std::vector<int> outputs(int op) const { return {op == 0 ? 11 : 12}; }
  std::optional<int> producer(int t) const { return t == 10 ? std::nullopt : std::optional<int>(t - 11); }
  std::vector<int> consumers(int t) const { return t == 12 ? std::vector<int>{} : std::vector<int>{t - 10}; }
  std::int64_t tensor_bytes(int t) const { return t; }
  memplan::tensor_kind tensor_kind_of(int t) const { return t == 10 ? memplan::tensor_kind::input : memplan::tensor_kind::activation; }
};

struct not_a_graph {};

static_assert(memplan::op_graph<thirdparty::net>);
static_assert(!memplan::tensor_graph<thirdparty::net>);  // no producer/consumers: still adaptable
static_assert(memplan::sized_tensors<thirdparty::net>);
static_assert(memplan::dataflow_graph<member_graph>);
static_assert(!memplan::op_graph<not_a_graph>);

TEST_CASE("traits: a third-party struct graph adapts through ADL free functions") {
  thirdparty::net n;
  n.bufs = {{0, 16}, {1, 32}, {2, 8}, {3, 4}};
  n.nodes = {{"conv", {0}, {1}}, {"relu", {1}, {2}}, {"pool", {2}, {3}}};
  auto ad = memplan::adapt(n);
  const auto& p = ad.problem;
  CHECK(p.num_ops() == 3);
  CHECK(p.op_name(1) == "relu");
  CHECK(p.bytes(1) == 32);
  CHECK(p.kind(0) == memplan::tensor_kind::input);
  CHECK(ad.op_descriptor[2].name == "pool");
  const std::vector<memplan::op_id> order{0, 1, 2};
  CHECK(memplan::peak_of(p, order) == 16 + 32 + 8);
}

TEST_CASE("traits: member functions are found first, and producer/consumers are cross-checked") {
  member_graph g;
  auto p = memplan::make_problem(g);
  CHECK(p.num_tensors() == 3);
  CHECK(p.bytes(2) == 12);
  CHECK(p.producer(2) == 1);
  CHECK(memplan::tensor_bytes(g, 11) == 11);
  CHECK(memplan::op_type(g, 0) == "op");  // default
  CHECK(memplan::op_phase_of(g, 0) == memplan::op_phase::other);
  CHECK_FALSE(memplan::inplace_of(g, 11).has_value());
}

struct lying_graph : member_graph {
  std::optional<int> producer(int) const { return std::nullopt; }
};

TEST_CASE("traits: a producer() that disagrees with the ops is reported") {
  lying_graph g;
  try {
    (void)memplan::make_problem(g);
    FAIL("expected an error");
  } catch (const memplan::error& e) {
    CHECK(std::string(e.what()).find("producer(g, t) disagrees") != std::string::npos);
  }
}
