#pragma once
// `memplan zoo NAME [--depth N] [--batch B] [--steps T] [--image I] [--seed S] [-o FILE]`: writes a
// generated graph of bench/zoo in the graph format, so that anyone can reproduce the benchmarks'
// figures (docs/benchmarks.md): resnet (Chen's configuration, any depth 2 + 3k), lstm (Chen §5.3),
// chain (Beaumont's linear chain of a ResNet), random_dag.
#include <iostream>
#include <string>

#include <memplan/io/json.hpp>
#include <zoo/zoo.hpp>

namespace memplan::cli {

struct zoo_args {
  std::string name, output;
  std::int64_t depth = 50, batch = -1, steps = 64, image = 224, layers = 16;
  std::uint64_t seed = 1;
};

inline std::string zoo_names() { return "resnet, lstm, chain, random_dag"; }

inline int run_zoo(const zoo_args& a) {
  graph::dataflow_graph g;
  if (a.name == "resnet") {
    g = zoo::resnet(a.depth, a.batch > 0 ? a.batch : 32, a.image);
  } else if (a.name == "lstm") {
    zoo::lstm_config c;
    c.steps = a.steps;
    if (a.batch > 0) c.batch = a.batch;
    g = zoo::lstm(c);
  } else if (a.name == "chain") {
    g = zoo::chain(zoo::chain_params::from_resnet(zoo::resnet_config::from_depth(a.depth, a.batch > 0 ? a.batch : 32, a.image)));
  } else if (a.name == "random_dag") {
    zoo::random_dag_config c;
    c.layers = a.layers;
    c.seed = a.seed;
    g = zoo::random_dag(c);
  } else {
    throw error(errc::invalid_argument, "unknown zoo graph '" + a.name + "'; valid names: " + zoo_names());
  }
  const auto j = io::write_graph(g);
  if (a.output.empty() || a.output == "-") std::cout << j.dump(1) << "\n";
  else {
    io::save_json(a.output, j, 1);
    std::cout << "wrote " << g.name() << " (" << g.ops().size() << " ops) to " << a.output << "\n";
  }
  return 0;
}

}  // namespace memplan::cli
