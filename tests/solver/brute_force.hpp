#pragma once
// An independent reference for the solver tests: enumerates every assignment of a pure-integer
// model whose variables all have small finite bounds, and keeps the best feasible one. It reads the
// model only through its public accessors and checks feasibility with its own arithmetic.
#include <memplan/solver/milp.hpp>

#include <cmath>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <vector>

namespace memplan_test {

struct brute_result {
  bool feasible = false;
  double objective = 0;
  std::vector<double> values{};
  std::size_t feasible_count = 0;
};

inline bool brute_feasible(const memplan::solver::model& m, const std::vector<double>& x) {
  using namespace memplan::solver;
  for (std::size_t r = 0; r < m.num_constraints(); ++r) {
    const row_view c = m.constraint_at(row{r});
    double lhs = 0;
    for (const term& t : c.terms) lhs += t.coef * x[t.v.index];
    const double eps = 1e-9 * (1 + std::abs(c.rhs));
    if (c.sense == sense::le && lhs > c.rhs + eps) return false;
    if (c.sense == sense::ge && lhs < c.rhs - eps) return false;
    if (c.sense == sense::eq && std::abs(lhs - c.rhs) > eps) return false;
  }
  return true;
}

inline brute_result brute_force(const memplan::solver::model& m) {
  using namespace memplan::solver;
  const std::size_t n = m.num_vars();
  std::vector<double> lo(n), hi(n), x(n);
  for (std::size_t j = 0; j < n; ++j) {
    const var_info& vi = m.vars()[j];
    if (vi.kind == var_kind::continuous || std::isinf(vi.lower) || std::isinf(vi.upper) || vi.upper - vi.lower > 20) {
      throw std::logic_error("brute_force: only small bounded integer models");
    }
    lo[j] = vi.lower;
    hi[j] = vi.upper;
    x[j] = lo[j];
  }
  const double sign = m.sense() == objective_sense::maximize ? -1.0 : 1.0;
  brute_result best;
  for (;;) {
    if (brute_feasible(m, x)) {
      ++best.feasible_count;
      double obj = m.objective().constant();
      for (const term& t : m.objective().terms()) obj += t.coef * x[t.v.index];
      if (!best.feasible || sign * obj < sign * best.objective) {
        best.feasible = true;
        best.objective = obj;
        best.values = x;
      }
    }
    std::size_t j = 0;  // odometer increment
    while (j < n && x[j] >= hi[j]) {
      x[j] = lo[j];
      ++j;
    }
    if (j == n) break;
    x[j] += 1;
  }
  return best;
}

}  // namespace memplan_test
