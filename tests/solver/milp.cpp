// Tests of memplan/solver/milp.hpp: expression algebra, model storage and statistics, validation
// messages, the assignment checker, options, solution helpers, none/any_backend, require_incumbent.
#include <memplan/solver/milp.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "brute_force.hpp"

namespace s = memplan::solver;
using memplan::errc;

namespace {

// The coefficient of v in a normalized expression (0 if absent).
double coef(const s::expr& e, s::var v) {
  double c = 0;
  for (const s::term& t : e.terms()) {
    if (t.v.index == v.index) c += t.coef;
  }
  return c;
}

// Runs f, expects memplan::error with `code` whose message contains every part.
template <class F>
void expect_error(F&& f, errc code, std::initializer_list<std::string> parts) {
  try {
    f();
    FAIL("no exception thrown");
  } catch (const memplan::error& e) {
    CHECK(e.code() == code);
    const std::string what = e.what();
    for (const std::string& p : parts) {
      INFO("message: " << what << " | expected part: " << p);
      CHECK(what.find(p) != std::string::npos);
    }
  }
}

}  // namespace

TEST_CASE("solver::expr: algebra, normalization, evaluation") {
  s::model m;
  const s::var x = m.add_binary("x"), y = m.add_integer(-5, 5, "y"), z = m.add_continuous(0, 10, "z");

  s::expr e = 2 * x + 3 * y - x + 1;
  e.normalize();
  CHECK(e.terms().size() == 2);
  CHECK(coef(e, x) == 1);
  CHECK(coef(e, y) == 3);
  CHECK(e.constant() == 1);

  s::expr f = -(x - 2 * z + 4) * 2;  // -2x + 4z - 8
  f.normalize();
  CHECK(coef(f, x) == -2);
  CHECK(coef(f, z) == 4);
  CHECK(f.constant() == -8);

  s::expr g = (x + y) / 2 - (x + y) * 0.5;  // cancels exactly
  g.normalize();
  CHECK(g.empty());
  CHECK(g.constant() == 0);

  const std::vector<s::var> vs{x, y, z, x};
  s::expr h = s::sum(vs);
  h.normalize();
  CHECK(coef(h, x) == 2);
  CHECK(coef(h, z) == 1);
  CHECK(h.terms().front().v.index == x.index);  // sorted by index
  CHECK(h.terms().back().v.index == z.index);

  const std::vector<double> values{1, -2, 2.5};
  CHECK(h.evaluate(values) == doctest::Approx(2 - 2 + 2.5));
  CHECK((3 * y + 0.5 * z - 1).evaluate(values) == doctest::Approx(-6 + 1.25 - 1));
  expect_error([&] { (void)s::expr(s::var{7}).evaluate(values); }, errc::invalid_argument, {"variable id 7"});

  s::expr acc;
  acc.add_term(x, 2).add_term(x, -2).add_constant(3);
  acc += y;
  acc -= 2 * z;
  acc *= 2;
  acc.normalize();
  CHECK(coef(acc, x) == 0);
  CHECK(acc.terms().size() == 2);
  CHECK(coef(acc, y) == 2);
  CHECK(coef(acc, z) == -4);
  CHECK(acc.constant() == 6);
}

TEST_CASE("solver::constraint: both sides move left, constants move right") {
  s::model m;
  const s::var x = m.add_binary("x"), y = m.add_binary("y");
  s::constraint c = x + 1 <= y + 3;  // x - y <= 2
  c.lhs.normalize();
  CHECK(c.sense == s::sense::le);
  CHECK(c.rhs == 2);
  CHECK(coef(c.lhs, x) == 1);
  CHECK(coef(c.lhs, y) == -1);
  CHECK(c.lhs.constant() == 0);

  s::constraint d = 3 >= x;  // 3 - x >= 0  ->  -x >= -3
  CHECK(d.sense == s::sense::ge);
  CHECK(d.rhs == -3);
  CHECK(coef(d.lhs, x) == -1);

  s::constraint e = 2 * x == y - 1;
  CHECK(e.sense == s::sense::eq);
  CHECK(e.rhs == -1);
}

TEST_CASE("solver::model: storage, names and statistics") {
  s::model m("tiny");
  CHECK(m.name() == "tiny");
  const s::var a = m.add_binary("a"), b = m.add_integer(0, 7), c = m.add_continuous(-1, s::infinity, "c");
  const std::vector<s::var> bs = m.add_binaries(3, "u");
  CHECK(m.var_name(bs[2]) == "u[2]");
  CHECK(m.var_name(b) == "x#1");
  CHECK(m.info(c).lower == -1);
  CHECK(std::isinf(m.info(c).upper));
  CHECK(m.info(b).kind == s::var_kind::integer);

  const s::row r0 = m.add(a + b + b + 0 * c <= 4, "cap");
  const s::row r1 = m.add_ge(s::sum(bs), 1);
  const s::row r2 = m.add_eq(a - c, 0.5, "link");
  CHECK(m.num_constraints() == 3);
  const s::row_view v0 = m.constraint_at(r0);
  REQUIRE(v0.terms.size() == 2);  // b merged, zero coefficient dropped
  CHECK(v0.terms[1].coef == 2);
  CHECK(v0.name == "cap");
  CHECK(m.row_name(r1) == "r#1");
  CHECK(m.constraint_at(r2).sense == s::sense::eq);
  CHECK(m.constraint_at(r2).rhs == 0.5);

  m.maximize(a + 2 * c + 7);
  CHECK(m.sense() == s::objective_sense::maximize);
  CHECK(m.objective().constant() == 7);

  const s::model_stats st = m.stats();
  CHECK(st.vars == 6);
  CHECK(st.binaries == 4);
  CHECK(st.integers == 1);
  CHECK(st.continuous == 1);
  CHECK(st.constraints == 3);
  CHECK(st.nonzeros == 2 + 3 + 2);

  // integer bounds are rounded inwards
  const s::var d = m.add_integer(0.5, 3.7, "d");
  CHECK(m.info(d).lower == 1);
  CHECK(m.info(d).upper == 3);
}

TEST_CASE("solver::model: every bad input names its culprit") {
  s::model m;
  const s::var x = m.add_binary("x");
  const double nan = std::numeric_limits<double>::quiet_NaN();

  expect_error([&] { m.add_integer(3, 2, "n"); }, errc::invalid_argument, {"variable 'n'", "lower bound 3 > upper bound 2"});
  expect_error([&] { m.add_continuous(nan, 2, "w"); }, errc::invalid_argument, {"variable 'w'", "NaN"});
  expect_error([&] { m.add_continuous(s::infinity, s::infinity, "w"); }, errc::invalid_argument, {"variable 'w'", "+inf"});
  expect_error([&] { m.add_var(s::var_kind::binary, 0, 2, "bb"); }, errc::invalid_argument, {"variable 'bb'", "binary"});

  expect_error([&] { m.add(nan * x <= 1, "capacity"); }, errc::invalid_argument,
               {"constraint 'capacity'", "coefficient of variable 'x'", "nan"});
  expect_error([&] { m.add(s::infinity * x <= 1, "cap2"); }, errc::invalid_argument, {"constraint 'cap2'", "inf"});
  expect_error([&] { m.add(x <= s::infinity, "open"); }, errc::invalid_argument, {"constraint 'open'", "not a finite number"});
  expect_error([&] { m.add(x + s::var{42} >= 0, "foreign"); }, errc::invalid_argument,
               {"constraint 'foreign'", "unknown variable id 42", "model has 1 variables"});
  expect_error([&] { m.add(x >= nan); }, errc::invalid_argument, {"constraint 'r#0'"});
  expect_error([&] { m.minimize(x + s::var{9}); }, errc::invalid_argument, {"objective", "unknown variable id 9"});
  expect_error([&] { m.maximize(x * nan); }, errc::invalid_argument, {"objective", "coefficient of variable 'x'"});

  const s::var y = m.add_integer(0, 4, "y");
  expect_error([&] { m.set_start(y, 5); }, errc::invalid_argument, {"warm start of variable 'y'", "outside bounds [0, 4]"});
  expect_error([&] { m.set_start(y, 1.5); }, errc::invalid_argument, {"warm start of variable 'y'", "not integral"});
  expect_error([&] { m.set_start(s::var{5}, 1); }, errc::invalid_argument, {"warm start", "unknown variable id 5"});
  expect_error([&] { m.set_start(std::vector<double>{1}); }, errc::invalid_argument, {"1 values for 2 variables"});
  expect_error([&] { (void)m.info(s::var{3}); }, errc::invalid_argument, {"unknown variable id 3"});
  expect_error([&] { (void)m.constraint_at(s::row{0}); }, errc::invalid_argument, {"unknown constraint id 0"});

  // nothing of the above was stored
  CHECK(m.num_vars() == 2);
  CHECK(m.num_constraints() == 0);
  CHECK(m.start().empty());
}

TEST_CASE("solver::model: set_bounds and fix") {
  s::model m;
  const s::var x = m.add_binary("x"), y = m.add_integer(0, 9, "y");
  m.fix(x, 1);
  CHECK(m.info(x).lower == 1);
  CHECK(m.info(x).upper == 1);
  m.set_bounds(y, 2.5, 7.2);  // rounded inwards
  CHECK(m.info(y).lower == 3);
  CHECK(m.info(y).upper == 7);
  expect_error([&] { m.set_bounds(y, 5, 4); }, errc::invalid_argument, {"variable 'y'", "lower bound 5 > upper bound 4"});
  expect_error([&] { m.fix(x, 0.5); }, errc::invalid_argument, {"variable 'x'", "binary"});
  expect_error([&] { m.fix(s::var{8}, 0); }, errc::invalid_argument, {"model::set_bounds", "unknown variable id 8"});
  m.set_start(y, 6);
  expect_error([&] { m.fix(y, 4); }, errc::invalid_argument, {"variable 'y'", "exclude its warm-start value 6"});
  CHECK(m.info(y).lower == 3);  // unchanged after the error
  m.fix(y, 6);
  CHECK(m.info(y).upper == 6);
}

TEST_CASE("solver::model: warm start, partial and full") {
  s::model m;
  const s::var x = m.add_binary("x"), y = m.add_integer(0, 4, "y");
  m.set_start(y, 3);
  CHECK(m.start().size() == 1);
  CHECK_FALSE(m.full_start().has_value());
  m.set_start(y, 2);  // overwrite, not append
  m.set_start(x, 1);
  CHECK(m.start().size() == 2);
  REQUIRE(m.full_start().has_value());
  CHECK(*m.full_start() == std::vector<double>{1, 2});
  m.clear_start();
  CHECK(m.start().empty());
  m.set_start(std::vector<double>{0, 4});
  CHECK(*m.full_start() == std::vector<double>{0, 4});
}

TEST_CASE("solver::model::violation finds the first broken bound, integrality or constraint") {
  s::model m;
  const s::var x = m.add_binary("x"), y = m.add_integer(0, 4, "y"), z = m.add_continuous(0, 1, "z");
  m.add(x + y <= 3, "cap");
  m.add(y - z >= 1, "low");
  m.add(x + z == 1, "eq");
  CHECK_FALSE(m.violation(std::vector<double>{1, 2, 0}).has_value());
  CHECK(m.violation(std::vector<double>{1, 2}).value().find("2 values for 3") != std::string::npos);
  CHECK(m.violation(std::vector<double>{1, 5, 0}).value().find("'y' = 5 outside") != std::string::npos);
  CHECK(m.violation(std::vector<double>{1, 1.5, 0}).value().find("'y' = 1.5 is not integral") != std::string::npos);
  CHECK(m.violation(std::vector<double>{1, 3, 0}).value().find("'cap'") != std::string::npos);
  CHECK(m.violation(std::vector<double>{0, 1, 1}).value().find("'low'") != std::string::npos);
  CHECK(m.violation(std::vector<double>{0, 2, 0.5}).value().find("'eq'") != std::string::npos);
  CHECK(m.objective_value(std::vector<double>{1, 2, 0}) == 0);
}

TEST_CASE("solver::options: validation") {
  s::validate(s::options{});
  auto bad = [](s::options o, const std::string& part) {
    expect_error([&] { s::validate(o); }, errc::invalid_argument, {"solver options", part});
  };
  bad({.time_limit_s = 0}, "time_limit_s");
  bad({.time_limit_s = std::numeric_limits<double>::quiet_NaN()}, "time_limit_s");
  bad({.relative_gap = -1}, "relative_gap");
  bad({.absolute_gap = s::infinity}, "absolute_gap");
  bad({.threads = 0}, "threads");
  bad({.verbosity = -1}, "verbosity");
  bad({.node_limit = -1}, "node_limit");
}

TEST_CASE("solver::relative_gap and solution accessors") {
  CHECK(s::relative_gap(10, 10) == 0);
  CHECK(s::relative_gap(10, 9) == doctest::Approx(0.1));
  CHECK(s::relative_gap(-10, -11) == doctest::Approx(0.1));
  CHECK(std::isinf(s::relative_gap(0, -1)));
  CHECK(std::isinf(s::relative_gap(5, -s::infinity)));
  CHECK(std::isnan(s::relative_gap(5, std::numeric_limits<double>::quiet_NaN())));

  s::solution sol;
  sol.status = s::status::feasible;
  sol.values = {1, 0.9999999, 3};
  CHECK(sol.is_one(s::var{0}));
  CHECK(sol.int_value(s::var{1}) == 1);
  CHECK(sol.value(2 * s::var{2} + 1) == 7);
  expect_error([&] { (void)sol[s::var{3}]; }, errc::invalid_argument, {"unknown variable id 3"});
  sol.status = s::status::no_solution;
  expect_error([&] { (void)sol[s::var{0}]; }, errc::solver_error, {"no incumbent", "no solution"});
}

TEST_CASE("solver::require_incumbent turns statuses into memplan errors") {
  s::solution sol;
  sol.backend = "test";
  sol.status = s::status::optimal;
  CHECK(&s::require_incumbent(sol, "ctx") == &sol);
  sol.status = s::status::feasible;
  CHECK(&s::require_incumbent(sol, "ctx") == &sol);

  sol.status = s::status::infeasible;
  expect_error([&] { s::require_incumbent(sol, "schedule::olla_ilp"); }, errc::infeasible,
               {"schedule::olla_ilp: ", "infeasible"});
  sol.status = s::status::no_solution;
  sol.message = "time limit of 5 s hit before any feasible solution";
  expect_error([&] { s::require_incumbent(sol, "place::olla_ilp"); }, errc::solver_error,
               {"place::olla_ilp: time limit of 5 s hit before any feasible solution"});
  sol.status = s::status::unbounded;
  expect_error([&] { s::require_incumbent(sol, "x"); }, errc::solver_error, {"unbounded"});
  sol.status = s::status::error;
  sol.message = "boom";
  expect_error([&] { s::require_incumbent(sol, ""); }, errc::solver_error, {"boom"});
}

namespace {
// A backend for tests: exhaustive enumeration (brute_force.hpp). It shows that any type satisfying
// solver::backend plugs into any_backend.
struct enumerate_backend {
  [[nodiscard]] static bool available() { return true; }
  [[nodiscard]] std::string_view name() const { return "enumerate"; }
  [[nodiscard]] s::solution solve(const s::model& m, const s::options& o) const {
    s::validate(o);
    const memplan_test::brute_result r = memplan_test::brute_force(m);
    s::solution sol;
    sol.backend = "enumerate";
    sol.status = r.feasible ? s::status::optimal : s::status::infeasible;
    if (r.feasible) {
      sol.objective = sol.bound = r.objective;
      sol.gap = 0;
      sol.values = r.values;
    }
    return sol;
  }
};
static_assert(s::backend<enumerate_backend>);
}  // namespace

TEST_CASE("solver::none and any_backend") {
  s::model m;
  const s::var x = m.add_binary("x"), y = m.add_binary("y");
  m.add(x + y <= 1);
  m.maximize(2 * x + 3 * y);

  static_assert(!s::none::available());
  const s::solution n = s::none{}.solve(m, {});
  CHECK(n.status == s::status::error);
  CHECK(n.message.find("CBC is not available: build with -DMEMPLAN_WITH_CBC=ON and coinor-libcbc-dev") != std::string::npos);
  expect_error([&] { s::require_incumbent(n, "schedule::olla_ilp"); }, errc::solver_error,
               {"schedule::olla_ilp: no MILP backend", "CBC is not available"});

  const s::any_backend def;  // default: none
  CHECK_FALSE(def.available());
  CHECK(def.name() == "none");
  CHECK(def.solve(m, {}).status == s::status::error);
  expect_error([&] { (void)def.solve(m, {.threads = 0}); }, errc::invalid_argument, {"threads"});

  s::any_backend b = enumerate_backend{};
  const s::any_backend copy = b;  // copyable value
  b = s::none{};
  CHECK(copy.available());
  CHECK(copy.name() == "enumerate");
  const s::solution r = copy.solve(m, {});
  CHECK(r.status == s::status::optimal);
  CHECK(r.objective == 3);
  CHECK(r.values == std::vector<double>{0, 1});
  CHECK_FALSE(b.available());
}
