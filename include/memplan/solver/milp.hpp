#pragma once
// memplan/solver/milp.hpp -- a small mixed-integer linear programming (MILP) model builder, the
// `solution` a backend returns, and the `backend` concept. Standard library only: this header knows
// nothing about CBC. A backend lives in its own header (<memplan/solver/cbc.hpp>); code that builds
// models (schedule::olla_ilp, place::olla_ilp, remat ILPs) includes only this header and takes a
// backend value, `solver::none{}` by default, so that it compiles and degrades without any solver.
//
//   solver::model m;
//   auto x = m.add_binary("x"), y = m.add_integer(0, 10, "y");
//   m.add(3 * x + 2 * y <= 12, "capacity");
//   m.maximize(5 * x + y);
//   solver::solution s = solver::cbc{}.solve(m, {.time_limit_s = 10});
#include <memplan/base/error.hpp>

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace memplan::solver {

inline constexpr double infinity = std::numeric_limits<double>::infinity();

// ---- variables ---------------------------------------------------------------------------------

enum class var_kind : std::uint8_t { binary, integer, continuous };

inline const char* to_string(var_kind k) noexcept {
  switch (k) {
    case var_kind::binary: return "binary";
    case var_kind::integer: return "integer";
    case var_kind::continuous: return "continuous";
  }
  return "?";
}

// A handle to a model's variable: its index in the model (0, 1, 2, ... in creation order). It has
// no comparison operators on purpose: `x == y` must build a constraint, not compare handles; compare
// `x.index` instead.
struct var {
  std::size_t index = std::numeric_limits<std::size_t>::max();
};

struct var_info {
  var_kind kind = var_kind::continuous;
  double lower = 0;
  double upper = infinity;
  std::string name{};  // may be empty; messages then say "x#<index>"
};

// ---- linear expressions ------------------------------------------------------------------------

struct term {
  var v;
  double coef = 0;
};

// sum_i coef_i * x_i + constant. Terms are kept in insertion order and may repeat a variable until
// normalize() (called by model when it stores an expression) merges them. Implicit conversions
// from `var` and `double` make `2 * x + y - 3` work.
class expr {
 public:
  expr() = default;
  expr(double constant) : constant_(constant) {}                  // NOLINT(google-explicit-constructor)
  expr(var v, double coef = 1.0) : terms_{term{v, coef}} {}       // NOLINT(google-explicit-constructor)

  [[nodiscard]] const std::vector<term>& terms() const noexcept { return terms_; }
  [[nodiscard]] double constant() const noexcept { return constant_; }
  [[nodiscard]] bool empty() const noexcept { return terms_.empty(); }

  void reserve(std::size_t n) { terms_.reserve(n); }
  expr& add_term(var v, double coef) {
    terms_.push_back(term{v, coef});
    return *this;
  }
  expr& add_constant(double c) {
    constant_ += c;
    return *this;
  }

  expr& operator+=(const expr& e) {
    terms_.insert(terms_.end(), e.terms_.begin(), e.terms_.end());
    constant_ += e.constant_;
    return *this;
  }
  expr& operator-=(const expr& e) {
    terms_.reserve(terms_.size() + e.terms_.size());
    for (const term& t : e.terms_) terms_.push_back(term{t.v, -t.coef});
    constant_ -= e.constant_;
    return *this;
  }
  expr& operator*=(double c) {
    for (term& t : terms_) t.coef *= c;
    constant_ *= c;
    return *this;
  }
  expr& operator/=(double c) { return *this *= 1.0 / c; }

  // Merges repeated variables, drops zero coefficients, sorts by variable index.
  expr& normalize() {
    std::stable_sort(terms_.begin(), terms_.end(),
                     [](const term& a, const term& b) { return a.v.index < b.v.index; });
    std::size_t out = 0;
    for (std::size_t i = 0; i < terms_.size();) {
      term merged = terms_[i];
      std::size_t j = i + 1;
      for (; j < terms_.size() && terms_[j].v.index == merged.v.index; ++j) merged.coef += terms_[j].coef;
      if (merged.coef != 0.0 || std::isnan(merged.coef)) terms_[out++] = merged;  // keep NaN for validation
      i = j;
    }
    terms_.resize(out);
    return *this;
  }

  // Value under an assignment (values[i] for variable i).
  [[nodiscard]] double evaluate(std::span<const double> values) const {
    double s = constant_;
    for (const term& t : terms_) {
      if (t.v.index >= values.size()) {
        throw error(errc::invalid_argument, "expr::evaluate: variable id " + std::to_string(t.v.index) +
                                                " is outside the " + std::to_string(values.size()) +
                                                " given values");
      }
      s += t.coef * values[t.v.index];
    }
    return s;
  }

 private:
  std::vector<term> terms_;
  double constant_ = 0;
};

inline expr operator+(expr a, const expr& b) { return a += b; }
inline expr operator-(expr a, const expr& b) { return a -= b; }
inline expr operator-(expr a) { return a *= -1.0; }
inline expr operator*(expr a, double c) { return a *= c; }
inline expr operator*(double c, expr a) { return a *= c; }
inline expr operator/(expr a, double c) { return a /= c; }

// sum over a range of things convertible to expr (vars, exprs, numbers).
template <class Range>
  requires requires(Range&& r) {
    std::begin(r);
    std::end(r);
    expr(*std::begin(r));
  }
expr sum(Range&& r) {
  expr e;
  for (auto&& x : r) e += expr(x);
  return e;
}

// ---- constraints -------------------------------------------------------------------------------

enum class sense : std::uint8_t { le, ge, eq };

inline const char* to_string(sense s) noexcept {
  switch (s) {
    case sense::le: return "<=";
    case sense::ge: return ">=";
    case sense::eq: return "==";
  }
  return "?";
}

// lhs (constant-free) <sense> rhs. Built by `a <= b`, `a >= b`, `a == b` on expressions: everything
// moves to the left, the constant to the right.
struct constraint {
  expr lhs{};
  solver::sense sense = solver::sense::le;
  double rhs = 0;
};

namespace detail {
inline constraint make_constraint(expr a, const expr& b, sense s) {
  a -= b;
  const double rhs = -a.constant();
  a.add_constant(rhs);  // constant becomes exactly 0 unless it was not finite
  return constraint{std::move(a), s, rhs};
}
}  // namespace detail

inline constraint operator<=(expr a, const expr& b) { return detail::make_constraint(std::move(a), b, sense::le); }
inline constraint operator>=(expr a, const expr& b) { return detail::make_constraint(std::move(a), b, sense::ge); }
inline constraint operator==(expr a, const expr& b) { return detail::make_constraint(std::move(a), b, sense::eq); }

// ---- model -------------------------------------------------------------------------------------

enum class objective_sense : std::uint8_t { minimize, maximize };

// A constraint's handle: its index in the model.
struct row {
  std::size_t index = std::numeric_limits<std::size_t>::max();
};

// A stored constraint: normalized terms (sorted, unique, nonzero), sense, right-hand side, name.
struct row_view {
  std::span<const term> terms{};
  solver::sense sense = solver::sense::le;
  double rhs = 0;
  std::string_view name{};
};

struct model_stats {
  std::size_t vars = 0, binaries = 0, integers = 0, continuous = 0;  // integers: non-binary
  std::size_t constraints = 0, nonzeros = 0;                          // nonzeros: constraint matrix
};

// Every input is validated when it is added, so a stored model is always well formed: finite
// coefficients and right-hand sides, known variables, lower <= upper, a warm start within bounds.
// Bad input throws memplan::error(errc::invalid_argument) naming the variable or constraint.
class model {
 public:
  model() = default;
  explicit model(std::string name) : name_(std::move(name)) {}

  [[nodiscard]] const std::string& name() const noexcept { return name_; }

  // -- variables
  var add_var(var_kind kind, double lower, double upper, std::string name = {}) {
    const std::size_t id = vars_.size();
    check_bounds(kind, lower, upper, [&] { return "variable '" + (name.empty() ? "x#" + std::to_string(id) : name) + "'"; });
    vars_.push_back(var_info{kind, lower, upper, std::move(name)});
    if (kind == var_kind::binary) ++binaries_;
    if (kind == var_kind::integer) ++integers_;
    return var{id};
  }
  var add_binary(std::string name = {}) { return add_var(var_kind::binary, 0, 1, std::move(name)); }
  var add_integer(double lower, double upper, std::string name = {}) {
    return add_var(var_kind::integer, lower, upper, std::move(name));
  }
  var add_continuous(double lower, double upper, std::string name = {}) {
    return add_var(var_kind::continuous, lower, upper, std::move(name));
  }
  // n binaries named prefix[0], prefix[1], ... (unnamed if prefix is empty).
  std::vector<var> add_binaries(std::size_t n, std::string_view prefix = {}) {
    std::vector<var> out;
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      out.push_back(add_binary(prefix.empty() ? std::string{} : std::string(prefix) + "[" + std::to_string(i) + "]"));
    }
    return out;
  }

  // New bounds for an existing variable, e.g. to fix it (lower == upper) once a value is known.
  // A warm-start value outside the new bounds is an error.
  void set_bounds(var v, double lower, double upper) {
    var_info& vi = vars_[check_var(v, "model::set_bounds")];
    check_bounds(vi.kind, lower, upper, [&] { return "variable '" + var_name(v) + "'"; });
    if (v.index < start_pos_.size() && start_pos_[v.index] != npos) {
      const double x = start_[start_pos_[v.index]].second;
      if (x < lower - 1e-9 || x > upper + 1e-9) {
        throw error(errc::invalid_argument, "variable '" + var_name(v) + "': new bounds [" + num(lower) + ", " +
                                                num(upper) + "] exclude its warm-start value " + num(x));
      }
    }
    vi.lower = lower;
    vi.upper = upper;
  }
  void fix(var v, double value) { set_bounds(v, value, value); }

  [[nodiscard]] std::size_t num_vars() const noexcept { return vars_.size(); }
  [[nodiscard]] const var_info& info(var v) const { return vars_.at(check_var(v, "model::info")); }
  [[nodiscard]] std::span<const var_info> vars() const noexcept { return vars_; }
  // The variable's name, or "x#<index>" when it has none.
  [[nodiscard]] std::string var_name(var v) const {
    const var_info& i = info(v);
    return i.name.empty() ? "x#" + std::to_string(v.index) : i.name;
  }

  // -- constraints
  row add(constraint c, std::string name = {}) {
    const std::size_t id = senses_.size();
    auto culprit = [&] { return "constraint '" + (name.empty() ? "r#" + std::to_string(id) : name) + "'"; };
    validate_terms(c.lhs, culprit);
    if (!std::isfinite(c.rhs) || !std::isfinite(c.lhs.constant())) {
      throw error(errc::invalid_argument, culprit() + ": right-hand side is " + num(c.rhs) + ", not a finite number");
    }
    c.lhs.normalize();
    row_terms_.insert(row_terms_.end(), c.lhs.terms().begin(), c.lhs.terms().end());
    row_start_.push_back(row_terms_.size());
    senses_.push_back(c.sense);
    rhs_.push_back(c.rhs);
    row_names_.push_back(std::move(name));
    return row{id};
  }
  row add_le(expr e, double rhs, std::string name = {}) { return add(std::move(e) <= rhs, std::move(name)); }
  row add_ge(expr e, double rhs, std::string name = {}) { return add(std::move(e) >= rhs, std::move(name)); }
  row add_eq(expr e, double rhs, std::string name = {}) { return add(std::move(e) == rhs, std::move(name)); }

  [[nodiscard]] std::size_t num_constraints() const noexcept { return senses_.size(); }
  [[nodiscard]] row_view constraint_at(row r) const {
    if (r.index >= senses_.size()) {
      throw error(errc::invalid_argument, "model::constraint_at: unknown constraint id " + std::to_string(r.index) +
                                              " (model has " + std::to_string(senses_.size()) + " constraints)");
    }
    const std::size_t b = row_start_[r.index], e = row_start_[r.index + 1];
    return row_view{std::span<const term>(row_terms_).subspan(b, e - b), senses_[r.index], rhs_[r.index],
                    row_names_[r.index]};
  }
  // The constraint's name, or "r#<index>" when it has none.
  [[nodiscard]] std::string row_name(row r) const {
    const row_view v = constraint_at(r);
    return v.name.empty() ? "r#" + std::to_string(r.index) : std::string(v.name);
  }

  // -- objective (default: minimize 0)
  void minimize(expr e) { set_objective(objective_sense::minimize, std::move(e)); }
  void maximize(expr e) { set_objective(objective_sense::maximize, std::move(e)); }
  void set_objective(objective_sense s, expr e) {
    auto culprit = [] { return std::string("objective"); };
    validate_terms(e, culprit);
    if (!std::isfinite(e.constant())) {
      throw error(errc::invalid_argument, "objective: constant term is " + num(e.constant()) + ", not a finite number");
    }
    e.normalize();
    objective_ = std::move(e);
    sense_ = s;
  }
  [[nodiscard]] const expr& objective() const noexcept { return objective_; }
  [[nodiscard]] objective_sense sense() const noexcept { return sense_; }

  // -- warm start: a full or partial assignment, e.g. from a heuristic. Backends complete a partial
  // one (the other variables are solved for); an infeasible one is ignored by the backend.
  void set_start(var v, double value) {
    const std::size_t i = check_var(v, "warm start");
    const var_info& vi = vars_[i];
    auto culprit = [&] { return "warm start of variable '" + var_name(v) + "'"; };
    if (!std::isfinite(value)) throw error(errc::invalid_argument, culprit() + ": value " + num(value) + " is not finite");
    if (value < vi.lower - 1e-9 || value > vi.upper + 1e-9) {
      throw error(errc::invalid_argument, culprit() + ": value " + num(value) + " outside bounds [" + num(vi.lower) +
                                              ", " + num(vi.upper) + "]");
    }
    if (vi.kind != var_kind::continuous && std::abs(value - std::round(value)) > 1e-9) {
      throw error(errc::invalid_argument, culprit() + ": value " + num(value) + " is not integral for a " +
                                              to_string(vi.kind) + " variable");
    }
    if (start_pos_.size() < vars_.size()) start_pos_.resize(vars_.size(), npos);
    if (start_pos_[i] == npos) {
      start_pos_[i] = start_.size();
      start_.push_back({v, value});
    } else {
      start_[start_pos_[i]].second = value;
    }
  }
  // A full assignment: values[i] for variable i.
  void set_start(std::span<const double> values) {
    if (values.size() != vars_.size()) {
      throw error(errc::invalid_argument, "warm start: " + std::to_string(values.size()) + " values for " +
                                              std::to_string(vars_.size()) + " variables");
    }
    for (std::size_t i = 0; i < values.size(); ++i) set_start(var{i}, values[i]);
  }
  void clear_start() {
    start_.clear();
    start_pos_.clear();
  }
  // (variable, value) pairs in the order they were first set.
  [[nodiscard]] std::span<const std::pair<var, double>> start() const noexcept { return start_; }
  // The warm start as a full assignment when every variable has a value, else nullopt.
  [[nodiscard]] std::optional<std::vector<double>> full_start() const {
    if (start_.size() != vars_.size()) return std::nullopt;
    std::vector<double> x(vars_.size());
    for (const auto& [v, value] : start_) x[v.index] = value;
    return x;
  }

  [[nodiscard]] model_stats stats() const noexcept {
    return model_stats{vars_.size(), binaries_, integers_, vars_.size() - binaries_ - integers_,
                       senses_.size(), row_terms_.size()};
  }

  // An independent check of an assignment: the first violated bound, integrality or constraint, in
  // words, or nullopt when `values` is feasible within `tol` (absolute, scaled by max(1, |rhs|)).
  [[nodiscard]] std::optional<std::string> violation(std::span<const double> values, double tol = 1e-6) const {
    if (values.size() != vars_.size()) {
      return std::to_string(values.size()) + " values for " + std::to_string(vars_.size()) + " variables";
    }
    for (std::size_t i = 0; i < vars_.size(); ++i) {
      const var_info& vi = vars_[i];
      const double x = values[i];
      if (!std::isfinite(x)) return "variable '" + var_name(var{i}) + "' = " + num(x);
      if (x < vi.lower - tol || x > vi.upper + tol) {
        return "variable '" + var_name(var{i}) + "' = " + num(x) + " outside [" + num(vi.lower) + ", " + num(vi.upper) + "]";
      }
      if (vi.kind != var_kind::continuous && std::abs(x - std::round(x)) > tol) {
        return "variable '" + var_name(var{i}) + "' = " + num(x) + " is not integral";
      }
    }
    for (std::size_t r = 0; r < senses_.size(); ++r) {
      const row_view c = constraint_at(row{r});
      double lhs = 0;
      for (const term& t : c.terms) lhs += t.coef * values[t.v.index];
      const double eps = tol * std::max(1.0, std::abs(c.rhs));
      const bool ok = c.sense == solver::sense::le   ? lhs <= c.rhs + eps
                      : c.sense == solver::sense::ge ? lhs >= c.rhs - eps
                                             : std::abs(lhs - c.rhs) <= eps;
      if (!ok) {
        return "constraint '" + row_name(row{r}) + "': " + num(lhs) + " " + to_string(c.sense) + " " + num(c.rhs) +
               " is violated";
      }
    }
    return std::nullopt;
  }
  [[nodiscard]] double objective_value(std::span<const double> values) const { return objective_.evaluate(values); }

 private:
  static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();
  static bool is_01(double b) { return b == 0.0 || b == 1.0; }
  static std::string num(double x) {
    std::ostringstream os;
    os.precision(10);
    os << x;
    return os.str();
  }
  // Validates bounds for a variable of `kind`; rounds an integer variable's bounds inwards.
  template <class Culprit>
  static void check_bounds(var_kind kind, double& lower, double& upper, Culprit culprit) {
    if (std::isnan(lower) || std::isnan(upper)) {
      throw error(errc::invalid_argument, culprit() + ": a bound is NaN");
    }
    if (lower == infinity || upper == -infinity) {
      throw error(errc::invalid_argument, culprit() + ": lower bound +inf or upper bound -inf");
    }
    if (lower > upper) {
      throw error(errc::invalid_argument, culprit() + ": lower bound " + num(lower) + " > upper bound " + num(upper));
    }
    if (kind == var_kind::binary && (!is_01(lower) || !is_01(upper))) {
      throw error(errc::invalid_argument,
                  culprit() + ": a binary variable's bounds must be 0 or 1, got [" + num(lower) + ", " + num(upper) + "]");
    }
    if (kind == var_kind::integer) {
      // An integer variable whose bounds admit no integer is infeasible, not malformed: keep it.
      lower = std::isinf(lower) ? lower : std::ceil(lower - 1e-9) + 0.0;  // + 0.0: no "-0" in messages
      upper = std::isinf(upper) ? upper : std::floor(upper + 1e-9) + 0.0;
    }
  }
  std::size_t check_var(var v, std::string_view where) const {
    if (v.index >= vars_.size()) {
      throw error(errc::invalid_argument, std::string(where) + ": unknown variable id " + std::to_string(v.index) +
                                              " (model has " + std::to_string(vars_.size()) + " variables)");
    }
    return v.index;
  }
  template <class Culprit>
  void validate_terms(const expr& e, Culprit culprit) const {
    for (const term& t : e.terms()) {
      if (t.v.index >= vars_.size()) {
        throw error(errc::invalid_argument, culprit() + ": unknown variable id " + std::to_string(t.v.index) +
                                                " (model has " + std::to_string(vars_.size()) + " variables)");
      }
      if (!std::isfinite(t.coef)) {
        throw error(errc::invalid_argument,
                    culprit() + ": coefficient of variable '" + var_name(t.v) + "' is " + num(t.coef));
      }
    }
  }

  std::string name_;
  std::vector<var_info> vars_;
  std::size_t binaries_ = 0, integers_ = 0;
  std::vector<term> row_terms_;           // CSR: row r's terms are [row_start_[r], row_start_[r+1])
  std::vector<std::size_t> row_start_{0};
  std::vector<solver::sense> senses_;
  std::vector<double> rhs_;
  std::vector<std::string> row_names_;
  expr objective_;
  objective_sense sense_ = objective_sense::minimize;
  std::vector<std::pair<var, double>> start_;
  std::vector<std::size_t> start_pos_;  // variable -> index in start_, npos if unset
};

// ---- options -----------------------------------------------------------------------------------

struct options {
  // Wall-clock seconds for the whole solve; infinity (the default): no time limit. validate()
  // rejects 0, negative values and NaN (for the root node only, set node_limit = 0 instead).
  double time_limit_s = infinity;
  double relative_gap = 1e-4;    // stop when |incumbent - bound| <= relative_gap * |incumbent|
  double absolute_gap = 1e-6;    // ... or when |incumbent - bound| <= absolute_gap
  int threads = 1;               // > 1 may make results depend on timing
  int verbosity = 0;             // 0: silent; 1: the backend's log; 2+: more
  std::optional<std::int64_t> node_limit = std::nullopt;  // branch-and-bound nodes; 0: root only
};

// Throws errc::invalid_argument naming the bad option.
inline void validate(const options& o) {
  auto bad = [](const std::string& what) { throw error(errc::invalid_argument, "solver options: " + what); };
  if (!(o.time_limit_s > 0)) bad("time_limit_s must be > 0 seconds (got " + std::to_string(o.time_limit_s) + ")");
  if (!(o.relative_gap >= 0) || std::isinf(o.relative_gap)) bad("relative_gap must be finite and >= 0");
  if (!(o.absolute_gap >= 0) || std::isinf(o.absolute_gap)) bad("absolute_gap must be finite and >= 0");
  if (o.threads < 1) bad("threads must be >= 1 (got " + std::to_string(o.threads) + ")");
  if (o.verbosity < 0) bad("verbosity must be >= 0 (got " + std::to_string(o.verbosity) + ")");
  if (o.node_limit && *o.node_limit < 0) bad("node_limit must be >= 0 (got " + std::to_string(*o.node_limit) + ")");
}

// ---- solution ----------------------------------------------------------------------------------

enum class status : std::uint8_t {
  optimal,      // proven optimal within the requested gaps
  feasible,     // stopped by a limit with an incumbent
  infeasible,   // proven infeasible
  unbounded,    // the LP relaxation is unbounded (the MILP is unbounded or infeasible)
  no_solution,  // stopped by a limit before any incumbent
  error,        // backend missing or failed; see message
};

inline const char* to_string(status s) noexcept {
  switch (s) {
    case status::optimal: return "optimal";
    case status::feasible: return "feasible";
    case status::infeasible: return "infeasible";
    case status::unbounded: return "unbounded";
    case status::no_solution: return "no solution";
    case status::error: return "error";
  }
  return "?";
}

// |objective - bound| / |objective|; 0 when they are equal, +inf when objective is 0 and bound is not,
// NaN when either is unknown (NaN).
inline double relative_gap(double objective, double bound) noexcept {
  if (std::isnan(objective) || std::isnan(bound)) return std::numeric_limits<double>::quiet_NaN();
  const double d = std::abs(objective - bound);
  if (d == 0) return 0;
  if (std::isinf(d)) return infinity;
  return objective == 0 ? infinity : d / std::abs(objective);
}

struct solution {
  solver::status status = status::error;
  double objective = std::numeric_limits<double>::quiet_NaN();  // incumbent's value, model's sense
  double bound = std::numeric_limits<double>::quiet_NaN();      // dual bound, model's sense
  double gap = std::numeric_limits<double>::quiet_NaN();        // relative_gap(objective, bound)
  std::vector<double> values{};                                 // per variable, if has_incumbent()
  double seconds = 0;                                           // wall time of the solve
  std::int64_t nodes = 0;                                       // branch-and-bound nodes, if known
  std::string backend{};
  std::string message{};

  [[nodiscard]] bool has_incumbent() const noexcept {
    return status == status::optimal || status == status::feasible;
  }
  [[nodiscard]] double value(var v) const {
    if (!has_incumbent()) {
      throw error(errc::solver_error, "solution::value: no incumbent (status " + std::string(to_string(status)) + ")");
    }
    if (v.index >= values.size()) {
      throw error(errc::invalid_argument, "solution::value: unknown variable id " + std::to_string(v.index) + " (" +
                                              std::to_string(values.size()) + " values)");
    }
    return values[v.index];
  }
  [[nodiscard]] double operator[](var v) const { return value(v); }
  // Rounded value of a binary/integer variable; is_one: binary variable is 1.
  [[nodiscard]] std::int64_t int_value(var v) const { return static_cast<std::int64_t>(std::llround(value(v))); }
  [[nodiscard]] bool is_one(var v) const { return value(v) > 0.5; }
  [[nodiscard]] double value(const expr& e) const {
    if (!has_incumbent()) {
      throw error(errc::solver_error, "solution::value: no incumbent (status " + std::string(to_string(status)) + ")");
    }
    return e.evaluate(values);
  }
};

// Where a caller needs an incumbent: returns `s` if it has one, else throws a memplan::error that
// says why, prefixed by `context` (e.g. "schedule::olla_ilp"):
//   infeasible  -> errc::infeasible
//   no_solution -> errc::solver_error, e.g. "time limit of 10 s hit before any feasible solution"
//   unbounded, error (backend missing or failed) -> errc::solver_error
inline const solution& require_incumbent(const solution& s, std::string_view context) {
  const std::string prefix = context.empty() ? std::string() : std::string(context) + ": ";
  const std::string detail = s.message.empty() ? std::string() : " (" + s.message + ")";
  switch (s.status) {
    case status::optimal:
    case status::feasible: return s;
    case status::infeasible: throw error(errc::infeasible, prefix + "the MILP model is infeasible" + detail);
    case status::unbounded:
      throw error(errc::solver_error, prefix + "the MILP model is unbounded (its LP relaxation is)" + detail);
    case status::no_solution:
    case status::error:
      throw error(errc::solver_error,
                  prefix + (s.message.empty() ? std::string("the MILP backend returned no solution") : s.message));
  }
  throw error(errc::solver_error, prefix + "unknown solver status");
}

// ---- backends ----------------------------------------------------------------------------------

// A MILP backend: a small copyable value whose solve() owns all its solver state (so one backend
// value may be used from several threads). available() is false for a backend that was not built;
// its solve() then returns status::error with a message saying how to get it.
template <class B>
concept backend = requires(const B& b, const model& m, const options& o) {
  { b.solve(m, o) } -> std::same_as<solution>;
  { b.name() } -> std::convertible_to<std::string_view>;
  { b.available() } -> std::same_as<bool>;
} && std::copyable<B>;

inline constexpr std::string_view no_backend_message =
    "no MILP backend: CBC is not available: build with -DMEMPLAN_WITH_CBC=ON and coinor-libcbc-dev, "
    "link memplan::cbc, include <memplan/solver/cbc.hpp> and pass memplan::solver::cbc{} (plan_context::solver)";

// The default backend of every ILP policy: no solver. Policies check available() and fall back to
// their heuristic (and say so in the plan's stats); require_incumbent() turns its answer into
// errc::solver_error.
struct none {
  [[nodiscard]] static constexpr bool available() noexcept { return false; }
  [[nodiscard]] std::string_view name() const noexcept { return "none"; }
  [[nodiscard]] solution solve(const model& m, const options& o) const {
    validate(o);
    (void)m;
    solution s;
    s.status = status::error;
    s.backend = "none";
    s.message = std::string(no_backend_message);
    return s;
  }
};

// A type-erased backend, so that policies can hold "some backend" as a plain member without being
// templates: `schedule::olla_ilp{.backend = solver::cbc{}}`. Default: solver::none. Copies share the
// (immutable) backend value.
class any_backend {
 public:
  any_backend() : any_backend(none{}) {}
  template <class B>
    requires(!std::same_as<std::remove_cvref_t<B>, any_backend> && backend<std::remove_cvref_t<B>>)
  any_backend(B&& b)  // NOLINT(google-explicit-constructor)
      : self_(std::make_shared<const holder<std::remove_cvref_t<B>>>(std::forward<B>(b))) {}

  [[nodiscard]] solution solve(const model& m, const options& o) const { return self_->solve(m, o); }
  [[nodiscard]] std::string_view name() const { return self_->name(); }
  [[nodiscard]] bool available() const { return self_->available(); }

 private:
  struct base {
    virtual ~base() = default;
    [[nodiscard]] virtual solution solve(const model& m, const options& o) const = 0;
    [[nodiscard]] virtual std::string_view name() const = 0;
    [[nodiscard]] virtual bool available() const = 0;
  };
  template <class B>
  struct holder final : base {
    explicit holder(B b) : value(std::move(b)) {}
    solution solve(const model& m, const options& o) const override { return value.solve(m, o); }
    std::string_view name() const override { return value.name(); }
    bool available() const override { return value.available(); }
    B value;
  };
  std::shared_ptr<const base> self_;
};

static_assert(backend<none>);
static_assert(backend<any_backend>);

}  // namespace memplan::solver
