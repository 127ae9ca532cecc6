// Tests of memplan/solver/cbc.hpp against independent references: exhaustive enumeration
// (brute_force.hpp), permutations for assignment, subsets for set cover. Random instances use fixed
// seeds. No test asserts a duration.
#include <memplan/solver/cbc.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "brute_force.hpp"

namespace s = memplan::solver;
using memplan::errc;

namespace {

s::options exact() {
  s::options o;
  o.relative_gap = 0;
  o.absolute_gap = 1e-9;
  return o;
}

// Checks an incumbent independently: feasible by the model's checker and by our own arithmetic, and
// objective consistent with the values.
void check_incumbent(const s::model& m, const s::solution& r) {
  REQUIRE(r.has_incumbent());
  REQUIRE(r.values.size() == m.num_vars());
  const auto v = m.violation(r.values);
  INFO("violation: " << v.value_or("none"));
  CHECK_FALSE(v.has_value());
  CHECK(memplan_test::brute_feasible(m, r.values));
  CHECK(r.objective == doctest::Approx(m.objective_value(r.values)));
  CHECK(r.backend == "cbc");
  CHECK(r.seconds >= 0);
}

struct knapsack {
  std::vector<int> weight, value;
  int capacity = 0;
};

knapsack random_knapsack(std::mt19937& rng) {
  knapsack k;
  const int n = std::uniform_int_distribution<int>(1, 12)(rng);
  int total = 0;
  for (int i = 0; i < n; ++i) {
    k.weight.push_back(std::uniform_int_distribution<int>(1, 30)(rng));
    k.value.push_back(std::uniform_int_distribution<int>(1, 40)(rng));
    total += k.weight.back();
  }
  k.capacity = std::uniform_int_distribution<int>(0, total)(rng);
  return k;
}

// max sum value[i] x[i] subject to sum weight[i] x[i] <= capacity, x binary.
s::model knapsack_model(const knapsack& k) {
  s::model m;
  const std::vector<s::var> x = m.add_binaries(k.weight.size(), "x");
  s::expr w, v;
  for (std::size_t i = 0; i < x.size(); ++i) {
    w.add_term(x[i], k.weight[i]);
    v.add_term(x[i], k.value[i]);
  }
  m.add(w <= k.capacity, "capacity");
  m.maximize(v);
  return m;
}

// Market split (Cornuejols & Dawande): sum_j a_ij x_j = floor(sum_j a_ij / 2) for 4 rows and 30
// binaries. Hard for branch and bound, and mostly infeasible: CBC finds no solution quickly.
s::model market_split(std::vector<s::var>& x, std::uint32_t seed = 42) {
  std::mt19937 rng(seed);
  s::model m("market split");
  x = m.add_binaries(30, "x");
  for (int i = 0; i < 4; ++i) {
    s::expr e;
    double total = 0;
    for (const s::var v : x) {
      const auto a = static_cast<double>(rng() % 100);
      e.add_term(v, a);
      total += a;
    }
    m.add(e == std::floor(total / 2), "split" + std::to_string(i));
  }
  return m;
}

}  // namespace

TEST_CASE("solver::cbc is a backend and says it is available") {
  static_assert(s::backend<s::cbc>);
  static_assert(s::cbc::available());
  CHECK(s::cbc{}.name() == "cbc");
  CHECK(s::any_backend(s::cbc{}).available());
}

TEST_CASE("solver::cbc: random knapsacks (maximize) equal brute force") {
  std::mt19937 rng(20261122);
  for (int instance = 0; instance < 40; ++instance) {
    const knapsack k = random_knapsack(rng);
    const s::model m = knapsack_model(k);
    const memplan_test::brute_result ref = memplan_test::brute_force(m);
    const s::solution r = s::cbc{}.solve(m, exact());
    INFO("instance " << instance << " n=" << k.weight.size() << " capacity=" << k.capacity);
    REQUIRE(ref.feasible);  // x = 0 always fits
    CHECK(r.status == s::status::optimal);
    check_incumbent(m, r);
    CHECK(r.objective == doctest::Approx(ref.objective));
    CHECK(r.bound >= r.objective - 1e-6);  // maximize: the bound is above
    CHECK(r.gap == doctest::Approx(0).epsilon(1e-9));
  }
}

TEST_CASE("solver::cbc: random assignment problems (equalities) equal the best permutation") {
  std::mt19937 rng(7);
  for (int instance = 0; instance < 20; ++instance) {
    const int n = std::uniform_int_distribution<int>(1, 6)(rng);
    std::vector<std::vector<int>> cost(n, std::vector<int>(n));
    for (auto& row : cost) {
      for (int& c : row) c = std::uniform_int_distribution<int>(-20, 50)(rng);
    }
    s::model m;
    std::vector<std::vector<s::var>> x(n);
    for (int i = 0; i < n; ++i) x[i] = m.add_binaries(n, "x" + std::to_string(i));
    s::expr obj;
    for (int i = 0; i < n; ++i) {
      s::expr row_sum, col_sum;
      for (int j = 0; j < n; ++j) {
        row_sum += x[i][j];
        col_sum += x[j][i];
        obj += cost[i][j] * x[i][j];
      }
      m.add(row_sum == 1, "worker" + std::to_string(i));
      m.add(col_sum == 1, "job" + std::to_string(i));
    }
    m.minimize(obj);

    std::vector<int> perm(n);
    std::iota(perm.begin(), perm.end(), 0);
    int best = std::numeric_limits<int>::max();
    do {
      int c = 0;
      for (int i = 0; i < n; ++i) c += cost[i][perm[i]];
      best = std::min(best, c);
    } while (std::next_permutation(perm.begin(), perm.end()));

    const s::solution r = s::cbc{}.solve(m, exact());
    INFO("instance " << instance << " n=" << n);
    CHECK(r.status == s::status::optimal);
    check_incumbent(m, r);
    CHECK(r.objective == doctest::Approx(best));
    CHECK(r.bound <= r.objective + 1e-6);  // minimize: the bound is below
  }
}

TEST_CASE("solver::cbc: random set covers (>= rows, some infeasible) equal subset enumeration") {
  std::mt19937 rng(99);
  int infeasible = 0;
  for (int instance = 0; instance < 30; ++instance) {
    const int elements = std::uniform_int_distribution<int>(1, 8)(rng);
    const int sets = std::uniform_int_distribution<int>(1, 10)(rng);
    std::vector<std::uint32_t> cover(sets);
    std::vector<int> cost(sets);
    for (int k = 0; k < sets; ++k) {
      for (int e = 0; e < elements; ++e) {
        if (std::uniform_int_distribution<int>(0, 3)(rng) == 0) cover[k] |= 1u << e;
      }
      cost[k] = std::uniform_int_distribution<int>(1, 9)(rng);
    }
    s::model m;
    const std::vector<s::var> x = m.add_binaries(sets, "set");
    for (int e = 0; e < elements; ++e) {
      s::expr covered;
      for (int k = 0; k < sets; ++k) {
        if (cover[k] & (1u << e)) covered += x[k];
      }
      m.add(covered >= 1, "element" + std::to_string(e));
    }
    s::expr obj;
    for (int k = 0; k < sets; ++k) obj += cost[k] * x[k];
    m.minimize(obj);

    int best = -1;
    for (std::uint32_t subset = 0; subset < (1u << sets); ++subset) {
      std::uint32_t covered = 0;
      int c = 0;
      for (int k = 0; k < sets; ++k) {
        if (subset & (1u << k)) {
          covered |= cover[k];
          c += cost[k];
        }
      }
      if (covered == (1u << elements) - 1 && (best < 0 || c < best)) best = c;
    }

    const s::solution r = s::cbc{}.solve(m, exact());
    INFO("instance " << instance << " elements=" << elements << " sets=" << sets);
    if (best < 0) {
      ++infeasible;
      CHECK(r.status == s::status::infeasible);
      CHECK_FALSE(r.has_incumbent());
    } else {
      CHECK(r.status == s::status::optimal);
      check_incumbent(m, r);
      CHECK(r.objective == doctest::Approx(best));
    }
  }
  CHECK(infeasible > 0);  // the property test covers both outcomes
  CHECK(infeasible < 30);
}

TEST_CASE("solver::cbc: random general-integer models with <=, >=, == and both senses equal brute force") {
  std::mt19937 rng(12345);
  int infeasible = 0;
  for (int instance = 0; instance < 60; ++instance) {
    s::model m;
    const int n = std::uniform_int_distribution<int>(1, 4)(rng);
    std::vector<s::var> x;
    for (int j = 0; j < n; ++j) {
      const int lo = std::uniform_int_distribution<int>(-3, 1)(rng);
      const int hi = lo + std::uniform_int_distribution<int>(0, 5)(rng);
      x.push_back(j % 2 == 0 && lo <= 0 && hi >= 1 && instance % 3 == 0 ? m.add_binary() : m.add_integer(lo, hi));
    }
    const int rows = std::uniform_int_distribution<int>(0, 4)(rng);
    for (int r = 0; r < rows; ++r) {
      s::expr e;
      for (const s::var v : x) e += std::uniform_int_distribution<int>(-4, 4)(rng) * v;
      const int rhs = std::uniform_int_distribution<int>(-6, 6)(rng);
      switch (std::uniform_int_distribution<int>(0, 2)(rng)) {
        case 0: m.add(e <= rhs); break;
        case 1: m.add(e >= rhs); break;
        default: m.add(e == rhs); break;
      }
    }
    s::expr obj = std::uniform_int_distribution<int>(-5, 5)(rng);
    for (const s::var v : x) obj += std::uniform_int_distribution<int>(-5, 5)(rng) * v;
    if (instance % 2 == 0) {
      m.minimize(obj);
    } else {
      m.maximize(obj);
    }

    const memplan_test::brute_result ref = memplan_test::brute_force(m);
    const s::solution r = s::cbc{}.solve(m, exact());
    INFO("instance " << instance << " n=" << n << " rows=" << rows);
    if (!ref.feasible) {
      ++infeasible;
      CHECK(r.status == s::status::infeasible);
    } else {
      CHECK(r.status == s::status::optimal);
      check_incumbent(m, r);
      CHECK(r.objective == doctest::Approx(ref.objective));
    }
  }
  CHECK(infeasible > 0);
  CHECK(infeasible < 60);
}

TEST_CASE("solver::cbc: mixed continuous model (LP optimum at a vertex)") {
  s::model m;
  const s::var x = m.add_continuous(0, s::infinity, "x"), y = m.add_continuous(0, s::infinity, "y");
  m.add(x + 2 * y <= 4, "a");
  m.add(3 * x + y <= 6, "b");
  m.maximize(x + y);
  const s::solution r = s::cbc{}.solve(m, exact());
  CHECK(r.status == s::status::optimal);
  check_incumbent(m, r);
  CHECK(r[x] == doctest::Approx(1.6));
  CHECK(r[y] == doctest::Approx(1.2));
  CHECK(r.objective == doctest::Approx(2.8));

  // the same with y integer: y in {0, 1}: best is x = 5/3, y = 1 -> 8/3
  s::model mi;
  const s::var xi = mi.add_continuous(0, s::infinity, "x"), yi = mi.add_integer(0, s::infinity, "y");
  mi.add(xi + 2 * yi <= 4);
  mi.add(3 * xi + yi <= 6);
  mi.maximize(xi + yi);
  const s::solution ri = s::cbc{}.solve(mi, exact());
  CHECK(ri.status == s::status::optimal);
  check_incumbent(mi, ri);
  CHECK(ri.objective == doctest::Approx(8.0 / 3.0));
  CHECK(ri[yi] == 1);  // snapped to an exact integer
}

TEST_CASE("solver::cbc: infeasible and unbounded models") {
  s::model m;
  const s::var x = m.add_binary("x"), y = m.add_binary("y");
  m.add(x + y >= 3, "too much");
  m.minimize(x);
  const s::solution r = s::cbc{}.solve(m, exact());
  CHECK(r.status == s::status::infeasible);
  CHECK_FALSE(r.has_incumbent());
  CHECK(r.values.empty());
  try {
    s::require_incumbent(r, "test");
    FAIL("no exception");
  } catch (const memplan::error& e) {
    CHECK(e.code() == errc::infeasible);
  }

  // integer parity: 2a + 4b == 7 has no integer solution, while the LP relaxation is feasible
  s::model parity;
  const s::var a = parity.add_integer(-10, 10, "a"), b = parity.add_integer(-10, 10, "b");
  parity.add(2 * a + 4 * b == 7);
  CHECK(s::cbc{}.solve(parity, exact()).status == s::status::infeasible);

  s::model u;
  const s::var z = u.add_integer(0, s::infinity, "z"), w = u.add_continuous(-s::infinity, 3, "w");
  u.add(z - w >= 1);
  u.maximize(z + w);
  const s::solution ru = s::cbc{}.solve(u, exact());
  CHECK(ru.status == s::status::unbounded);
  CHECK_FALSE(ru.has_incumbent());
}

TEST_CASE("solver::cbc: empty models and constraints without variables") {
  s::model empty;
  s::solution r = s::cbc{}.solve(empty, {});
  CHECK(r.status == s::status::optimal);
  CHECK(r.objective == 0);
  CHECK(r.values.empty());

  s::model constant;
  constant.minimize(s::expr(4.5));
  constant.add(s::expr(1) <= 2, "trivially true");
  r = s::cbc{}.solve(constant, {});
  CHECK(r.status == s::status::optimal);
  CHECK(r.objective == 4.5);

  s::model broken;
  const s::var x = broken.add_binary("x");
  broken.add(x - x >= 1, "impossible");  // normalizes to 0 >= 1
  r = s::cbc{}.solve(broken, {});
  CHECK(r.status == s::status::infeasible);
  CHECK(r.message.find("'impossible'") != std::string::npos);

  s::model free;  // variables but no constraints
  std::vector<s::var> ys;
  for (int i = 0; i < 5; ++i) ys.push_back(free.add_integer(2, 5));
  free.minimize(s::sum(ys) + 1);
  r = s::cbc{}.solve(free, exact());
  CHECK(r.status == s::status::optimal);
  CHECK(r.objective == 11);
}

TEST_CASE("solver::cbc: tiny time limit without an incumbent gives no_solution and a clear error") {
  std::vector<s::var> x;
  const s::model m = market_split(x);
  s::options o;
  o.time_limit_s = 0.05;
  const s::solution r = s::cbc{}.solve(m, o);
  CHECK(r.status == s::status::no_solution);
  CHECK_FALSE(r.has_incumbent());
  CHECK(r.message == "time limit of 0.05 s hit before any feasible solution");
  try {
    s::require_incumbent(r, "place::olla_ilp");
    FAIL("no exception");
  } catch (const memplan::error& e) {
    CHECK(e.code() == errc::solver_error);
    CHECK(std::string(e.what()) == "place::olla_ilp: time limit of 0.05 s hit before any feasible solution");
  }

  s::options nodes;
  nodes.node_limit = 0;
  const s::solution rn = s::cbc{}.solve(m, nodes);
  CHECK(rn.status == s::status::no_solution);
  CHECK(rn.message == "node limit of 0 nodes hit before any feasible solution");
}

TEST_CASE("solver::cbc: time limits never turn a feasible model into 'infeasible' or a wrong bound") {
  // A lifetime model shaped like OLLA eq. 1-4 and 13 for a chain of E tensors over T steps: C/P
  // binaries, peak >= resident bytes at each step. It is feasible (optimum found without a limit).
  // Measured on CBC 2.10: a clock that runs out inside preprocessing or the root LP makes CBC answer
  // "infeasible" (limits 0.25 and 0.3 s, 5 runs out of 5, with cbc.hpp's deadline guard disabled);
  // cbc.hpp must not pass that on. Timing-dependent: it can miss the bug, never fail spuriously.
  const int E = 80, T = 80;
  s::model m("chain lifetimes");
  std::vector<s::var> C, P;
  for (int i = 0; i < E * T; ++i) {
    C.push_back(m.add_binary());
    P.push_back(m.add_binary());
  }
  const s::var peak = m.add_continuous(0, s::infinity, "peak");
  std::mt19937 rng(1);
  std::vector<double> size(E);
  for (double& bytes : size) bytes = 1 + static_cast<double>(rng() % 1000);
  for (int e = 0; e < E; ++e) {
    s::expr once;
    for (int t = 0; t < T; ++t) {
      const int k = e * T + t;
      m.add(C[k] + P[k] <= 1);                           // eq. 1
      if (t > 0) m.add(P[k] <= P[k - 1] + C[k - 1]);     // eq. 2
      if (t == 0) m.fix(P[k], 0);
      once += C[k];
      if (e > 0) m.add(C[k] <= P[k - T]);                // eq. 4: tensor e-1 is resident
    }
    m.add(once == 1);                                    // eq. 3
  }
  for (int t = 0; t < T; ++t) {
    s::expr resident;
    for (int e = 0; e < E; ++e) resident += size[e] * (C[e * T + t] + P[e * T + t]);
    m.add(resident <= peak);                             // eq. 13
  }
  m.minimize(peak);
  const s::solution full = s::cbc{}.solve(m, {});
  REQUIRE(full.status == s::status::optimal);
  for (const double limit : {0.05, 0.15, 0.25, 0.3, 0.35, 0.45}) {
    s::options o;
    o.time_limit_s = limit;
    const s::solution r = s::cbc{}.solve(m, o);
    INFO("time limit " << limit << ": " << std::string(s::to_string(r.status)) << ", " << r.message);
    CHECK(r.status != s::status::infeasible);
    CHECK(r.status != s::status::error);
    if (r.has_incumbent()) {
      check_incumbent(m, r);
      CHECK(r.objective >= full.objective - 1e-6);
    }
    if (!std::isnan(r.bound)) CHECK(r.bound <= full.objective + 1e-6);  // a valid dual bound
  }
}

TEST_CASE("solver::cbc: a feasible warm start is the incumbent under node limit 0 and a tiny time limit") {
  // A feasible market split: the right-hand side is A x* for a random x*, plus an objective so that
  // x* is not trivially optimal.
  std::mt19937 rng(5);
  s::model m("planted");
  const std::vector<s::var> x = m.add_binaries(30, "x");
  std::vector<double> planted(30);
  for (double& p : planted) p = static_cast<double>(rng() % 2);
  for (int i = 0; i < 4; ++i) {
    s::expr e;
    double rhs = 0;
    for (std::size_t j = 0; j < x.size(); ++j) {
      const auto a = static_cast<double>(rng() % 100);
      e.add_term(x[j], a);
      rhs += a * planted[j];
    }
    m.add(e == rhs, "split" + std::to_string(i));
  }
  s::expr obj;
  for (const s::var v : x) obj += static_cast<double>(rng() % 10) * v;
  m.minimize(obj);
  const double start_obj = m.objective_value(planted);

  s::options root_only;
  root_only.node_limit = 0;
  // Without the warm start, CBC's root heuristics find nothing on this instance ...
  CHECK(s::cbc{}.solve(m, root_only).status == s::status::no_solution);

  // ... with it, the planted assignment (or better) is the incumbent.
  m.set_start(planted);

  const s::solution r = s::cbc{}.solve(m, root_only);
  CHECK(r.has_incumbent());
  check_incumbent(m, r);
  CHECK(r.objective <= start_obj + 1e-9);

  s::options tiny;
  tiny.time_limit_s = 0.01;
  const s::solution rt = s::cbc{}.solve(m, tiny);
  CHECK(rt.has_incumbent());
  check_incumbent(m, rt);
  CHECK(rt.objective <= start_obj + 1e-9);
}

TEST_CASE("solver::cbc: partial and infeasible warm starts are accepted and do not change the optimum") {
  std::mt19937 rng(31);
  for (int instance = 0; instance < 10; ++instance) {
    const knapsack k = random_knapsack(rng);
    s::model m;
    const std::vector<s::var> x = m.add_binaries(k.weight.size());
    s::expr w, v;
    for (std::size_t i = 0; i < x.size(); ++i) {
      w.add_term(x[i], k.weight[i]);
      v.add_term(x[i], k.value[i]);
    }
    m.add(w <= k.capacity);
    m.maximize(v);
    const double best = memplan_test::brute_force(m).objective;

    // fixing a variable is honoured (the reference reads the same bounds)
    s::model fixed = m;
    fixed.fix(x.back(), 1);
    const memplan_test::brute_result fixed_ref = memplan_test::brute_force(fixed);
    const s::solution fixed_r = s::cbc{}.solve(fixed, exact());
    if (fixed_ref.feasible) {
      CHECK(fixed_r.status == s::status::optimal);
      CHECK(fixed_r.objective == doctest::Approx(fixed_ref.objective));
      CHECK(fixed_r[x.back()] == 1);
    } else {
      CHECK(fixed_r.status == s::status::infeasible);
    }

    m.set_start(x[0], 1);  // partial (and possibly infeasible when weight[0] > capacity)
    const s::solution partial = s::cbc{}.solve(m, exact());
    CHECK(partial.status == s::status::optimal);
    CHECK(partial.objective == doctest::Approx(best));

    for (const s::var xi : x) m.set_start(xi, 1);  // full; infeasible unless everything fits
    const s::solution full = s::cbc{}.solve(m, exact());
    CHECK(full.status == s::status::optimal);
    check_incumbent(m, full);
    CHECK(full.objective == doctest::Approx(best));
  }
}

TEST_CASE("solver::cbc: options (gap, threads, verbosity 0) and determinism") {
  std::mt19937 rng(77);
  const knapsack k = random_knapsack(rng);
  s::model m;
  const std::vector<s::var> x = m.add_binaries(k.weight.size());
  s::expr w, v;
  for (std::size_t i = 0; i < x.size(); ++i) {
    w.add_term(x[i], k.weight[i]);
    v.add_term(x[i], k.value[i]);
  }
  m.add(w <= k.capacity);
  m.maximize(v);
  const double best = memplan_test::brute_force(m).objective;

  const s::solution a = s::cbc{}.solve(m, exact());
  const s::solution b = s::cbc{}.solve(m, exact());
  CHECK(a.values == b.values);
  CHECK(a.objective == b.objective);

  s::options two = exact();
  two.threads = 2;
  CHECK(s::cbc{}.solve(m, two).objective == doctest::Approx(best));

  s::options loose;
  loose.relative_gap = 0.5;  // any incumbent within 50% of the bound may stop the search
  const s::solution l = s::cbc{}.solve(m, loose);
  REQUIRE(l.has_incumbent());
  check_incumbent(m, l);
  CHECK(l.objective >= 0.5 * best - 1e-9);

  CHECK_THROWS_AS((void)s::cbc{}.solve(m, {.time_limit_s = -1}), memplan::error);

  // expert arguments reach CbcMain1 and do not change the optimum
  const s::cbc no_cuts{.arguments = {"-cuts", "off", "-preprocess", "off"}};
  CHECK(no_cuts.solve(m, exact()).objective == doctest::Approx(best));

  const s::any_backend erased = s::cbc{};
  CHECK(erased.solve(m, exact()).objective == doctest::Approx(best));
}

TEST_CASE("solver::cbc: concurrent solves from several threads are each correct") {
  std::vector<s::model> models;
  std::vector<double> expected;
  std::mt19937 rng(2024);
  for (int i = 0; i < 4; ++i) {
    const knapsack k = random_knapsack(rng);
    s::model m;
    const std::vector<s::var> x = m.add_binaries(k.weight.size());
    s::expr w, v;
    for (std::size_t j = 0; j < x.size(); ++j) {
      w.add_term(x[j], k.weight[j]);
      v.add_term(x[j], k.value[j]);
    }
    m.add(w <= k.capacity);
    m.maximize(v);
    expected.push_back(memplan_test::brute_force(m).objective);
    models.push_back(std::move(m));
  }
  std::vector<double> got(models.size(), -1);
  const s::cbc backend;  // one backend value shared by all threads
  {
    std::vector<std::jthread> threads;
    for (std::size_t i = 0; i < models.size(); ++i) {
      threads.emplace_back([&, i] { got[i] = backend.solve(models[i], exact()).objective; });
    }
  }
  for (std::size_t i = 0; i < models.size(); ++i) CHECK(got[i] == doctest::Approx(expected[i]));
}

// Isolation (cbc{.isolate = true}): the solve runs in a forked child; a crash or a hang there costs
// the solve, not this process.
TEST_CASE("solver::cbc isolated: the same answers as in process, on random knapsacks") {
  std::mt19937 rng(20261123);
  for (int instance = 0; instance < 8; ++instance) {
    const s::model m = knapsack_model(random_knapsack(rng));
    const s::solution here = s::cbc{}.solve(m, exact());
    const s::solution child = s::cbc{.isolate = true}.solve(m, exact());
    INFO("instance " << instance << ": " << child.message);
    CHECK(child.status == here.status);
    check_incumbent(m, child);
    CHECK(child.values == here.values);
    CHECK(child.objective == here.objective);
    CHECK(child.message == here.message);
    CHECK(child.backend == "cbc");
  }
  // Infeasible models keep their verdict and message.
  s::model bad;
  const auto y = bad.add_binary("y");
  bad.add(1.0 * y >= 2.0, "impossible");
  bad.minimize(1.0 * y);
  const auto r = s::cbc{.isolate = true}.solve(bad, exact());
  CHECK(r.status == s::status::infeasible);
}

namespace {
// A small model with a full feasible warm start (x = 0).
s::model knapsack_with_start() {
  s::model m("with_start");
  const auto x = m.add_binaries(6, "x");
  s::expr w, v;
  for (std::size_t i = 0; i < x.size(); ++i) {
    w.add_term(x[i], static_cast<double>(3 + i));
    v.add_term(x[i], static_cast<double>(2 + i % 3));
  }
  m.add(w <= 10.0, "capacity");
  m.maximize(v);
  m.set_start(std::vector<double>(6, 0.0));
  return m;
}
}  // namespace

TEST_CASE("solver::cbc isolated: a crash in CBC's child process is reported, and the caller goes on") {
  s::model m = knapsack_with_start();
  const auto r = s::cbc{.isolate = true, .inject_fault = s::cbc::fault::crash}.solve(m, exact());
  INFO(r.message);
  CHECK(r.message.find("crashed in its child process") != std::string::npos);
  // The full feasible warm start is returned as the incumbent.
  CHECK(r.status == s::status::feasible);
  check_incumbent(m, r);
  CHECK(r.objective == 0.0);
  // Without a warm start: an error, no incumbent.
  s::model bare("bare");
  const auto z = bare.add_binary("z");
  bare.maximize(1.0 * z);
  const auto e = s::cbc{.isolate = true, .inject_fault = s::cbc::fault::crash}.solve(bare, exact());
  CHECK(e.status == s::status::error);
  CHECK_FALSE(e.has_incumbent());
  // And the next solve in this process works.
  CHECK(s::cbc{.isolate = true}.solve(bare, exact()).status == s::status::optimal);
}

TEST_CASE("solver::cbc isolated: a hang past the time limit is killed by the watchdog") {
  s::model m = knapsack_with_start();
  s::options o = exact();
  o.time_limit_s = 0.2;
  const auto r = s::cbc{.isolate = true, .watchdog_grace_s = 0.3, .inject_fault = s::cbc::fault::hang}.solve(m, o);
  INFO(r.message);
  CHECK(r.message.find("past its time limit") != std::string::npos);
  CHECK(r.message.find("killed") != std::string::npos);
  CHECK(r.status == s::status::feasible);  // the warm start
  check_incumbent(m, r);
  // It returned (no duration is asserted: the watchdog's deadline is limit + grace).
  CHECK(r.seconds >= 0.5 - 1e-3);
}
