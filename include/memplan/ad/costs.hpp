#pragma once
// The costs of every node's implementations, as the planners see them (problem::cost,
// problem::implementations): a cost_table, one unit throughout.
//
//   flop_costs(p)   the fallback, needs no timing: cost = flops(node) * flop_factor of the
//                   implementation (implementations.hpp), in FLOPs -- the unit a program's op costs
//                   have always had, so an uncalibrated problem keeps its op costs.
//   calibrate(p)    (ad/calibrate.hpp) measured here, in seconds.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include <memplan/ad/implementations.hpp>
#include <memplan/ad/program_types.hpp>

namespace memplan::ad {

struct cost_table {
  enum class unit : std::uint8_t { flops, seconds };
  unit in = unit::flops;
  std::vector<std::vector<double>> cost;  // [node][implementation], implementation 0 = the default
  std::vector<std::uint8_t> measured;     // [node]: 1 when timed here, 0 when estimated

  // Cost of implementation `impl` of node `n` (-1: the default).
  [[nodiscard]] double of(std::size_t n, std::int32_t impl) const {
    return cost.at(n).at(static_cast<std::size_t>(impl < 0 ? 0 : impl));
  }
};

// The FLOP-based estimate of every implementation.
inline cost_table flop_costs(const program& p) {
  cost_table t;
  t.in = cost_table::unit::flops;
  for (const auto& n : p.nodes) {
    std::vector<double> c;
    for (const auto& im : implementations(n)) c.push_back(n.flops * im.flop_factor);
    t.cost.push_back(std::move(c));
    t.measured.push_back(0);
  }
  return t;
}

}  // namespace memplan::ad
