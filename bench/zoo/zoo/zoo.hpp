#pragma once
// The model zoo: parametric training graphs for tests and benchmarks (bench/zoo/README in
// docs/benchmarks.md). Every builder returns a memplan::graph::dataflow_graph whose op order is the
// order PyTorch would run (the given order).
#include <zoo/chain.hpp>
#include <zoo/layers.hpp>
#include <zoo/lstm.hpp>
#include <zoo/random_dag.hpp>
#include <zoo/resnet.hpp>
#include <zoo/small.hpp>
#include <zoo/training.hpp>
