#pragma once
// `memplan explain GRAPH PLAN.json` (either order): the plan told in words (io/explain.hpp).
#include <iostream>
#include <string>

#include <memplan/base/error.hpp>
#include <memplan/io/explain.hpp>
#include <memplan/io/json.hpp>
#include <memplan/io/plan_json.hpp>

namespace memplan::cli {

struct explain_args {
  std::string first, second;
  int top = 15;
};

inline int run_explain(const explain_args& a) {
  if (a.top < 0) throw error(errc::invalid_argument, "--top must be >= 0");
  // The spelling is `explain PLAN GRAPH`, verify's is `GRAPH PLAN`: accept both. The graph
  // is whichever file reads as a graph.
  std::string graph = a.first, plan = a.second;
  problem p;
  try {
    p = io::read_graph(graph);
  } catch (const error& first_error) {
    try {
      p = io::read_graph(a.second);
    } catch (const error&) {
      throw first_error;
    }
    std::swap(graph, plan);
  }
  const auto pv = io::read_plan_with_variants(p, plan);
  io::explain(std::cout, pv.graph, pv.plan, {.top = a.top});
  return 0;
}

}  // namespace memplan::cli
