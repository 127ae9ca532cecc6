// io/dot.hpp: one box per op, one edge per (producer, consumer) pair, labels escaped.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include <memplan/core/problem_builder.hpp>
#include <memplan/io/dot.hpp>
#include <memplan/io/json.hpp>
#include "io_support.hpp"

using iotest::data_dir;

using namespace memplan;

namespace {


std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto i = s.find(what); i != std::string::npos; i = s.find(what, i + what.size())) ++n;
  return n;
}

}  // namespace

TEST_CASE("DOT of the small graph: ops as boxes, tensors as labelled edges, every tensor present") {
  const auto p = io::read_graph(data_dir + "/small.json");
  const auto dot = io::to_dot(p);
  CHECK(dot.rfind("digraph \"small-train\" {", 0) == 0);
  CHECK(dot.substr(dot.size() - 2) == "}\n");
  CHECK(count(dot, "{") == count(dot, "}"));
  // Independent edge count: a tensor gives one edge per consumer, plus one to its own node when
  // nothing consumes it.
  std::size_t edges = 0, tensor_nodes = 0;
  for (tensor_id t = 0; t < p.num_tensors(); ++t) {
    edges += p.consumers(t).size();
    if (p.consumers(t).empty() && p.producer(t) != no_id) ++edges;
    if (p.consumers(t).empty() || p.producer(t) == no_id) ++tensor_nodes;
  }
  CHECK(count(dot, " -> ") == edges);
  CHECK(count(dot, "shape=ellipse") == tensor_nodes);
  for (op_id o = 0; o < p.num_ops(); ++o) CHECK(dot.find("  o" + std::to_string(o) + " [label=\"" + p.op_name(o)) != std::string::npos);
  CHECK(dot.find("label=\"h\\n1.00 KiB\"") != std::string::npos);     // edge mm1 -> relu
  CHECK(dot.find("style=dashed") != std::string::npos);                // the control tensor
  CHECK(dot.find("(in place of w1)") != std::string::npos);
  CHECK(dot.find("#f4cccc") != std::string::npos);                     // a backward op
}

TEST_CASE("DOT escapes quotes and backslashes") {
  problem_builder b("q\"uote\\");
  auto x = b.add_tensor("x\"1", 4, tensor_kind::input);
  auto y = b.add_tensor("y", 4, tensor_kind::output);
  b.add_op("op\"\\", {x}, {y});
  const auto dot = io::to_dot(b.build(), {.tensor_labels = true, .left_to_right = true});
  CHECK(dot.find("digraph \"q\\\"uote\\\\\"") != std::string::npos);
  CHECK(dot.find("op\\\"\\\\") != std::string::npos);
  CHECK(dot.find("rankdir=LR") != std::string::npos);
  // Every quote that is not escaped opens or closes a string: an even number per line.
  std::size_t start = 0;
  while (start < dot.size()) {
    const auto end = dot.find('\n', start);
    const auto line = dot.substr(start, end - start);
    std::size_t quotes = 0;
    for (std::size_t i = 0; i < line.size(); ++i)
      if (line[i] == '\\') ++i;
      else if (line[i] == '"') ++quotes;
    CHECK_MESSAGE(quotes % 2 == 0, line);
    start = end + 1;
  }
}
