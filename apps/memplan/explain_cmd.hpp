#pragma once
// `memplan explain GRAPH PLAN.json` (either order): the plan told in words (io/explain.hpp).
#include <iostream>
#include <string>

#include <memplan/base/error.hpp>
#include <memplan/io/explain.hpp>
#include <memplan/io/json.hpp>
#include <memplan/io/plan_json.hpp>
#include <memplan/core/verify.hpp>

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
  // A plan verify rejects is still explained (what it claims can help find what is wrong), but not
  // silently: the first violation goes to standard error and the exit status is verify's, 1.
  const auto ok = verify(pv.graph, pv.plan);
  if (!ok) std::cerr << "memplan: warning: " << plan << " is not a valid plan (memplan verify: " << ok.violation << "); explaining what it claims\n";
  io::explain(std::cout, pv.graph, pv.plan, {.top = a.top});
  return ok ? 0 : 1;
}

}  // namespace memplan::cli
