#pragma once
// memplan/solver/cbc.hpp -- `solver::cbc`, a MILP backend over COIN-OR CBC 2.10. This is the only
// file of memplan that includes COIN-OR headers: include it only where the CMake target memplan::cbc is
// linked (it brings CBC's include paths and libraries). Code that does not need CBC never includes it:
// the *_ilp policies take their backend from the plan_context (plan_context::solver = solver::cbc{}).
//
// How it drives CBC: the model is loaded into an OsiClpSolverInterface, wrapped in a CbcModel and
// solved by CbcMain0/CbcMain1 -- the code path of the `cbc` executable, so CBC's default
// preprocessing, cut generators and primal heuristics all run -- with the arguments
//   -log N -timeMode elapsed -sec T -ratioGap R -allowableGap A [-threads K] [-maxNodes M]
//   <cbc::arguments...> -solve
// The warm start goes through CbcModel::setMIPStart, which CBC completes (it fixes the given
// integer variables and solves for the rest) and installs as the first incumbent.
//
// Isolation (`cbc{.isolate = true}`, POSIX; the CLI's default): the solve runs in a forked child
// process that sends the solution back through a pipe. CBC 2.10 has known crashes (SIGSEGV in
// CglPreProcess::postProcess when the clock stops preprocessing) and an LP can overrun the clock by
// minutes; isolated, a crash or a hang costs the solve, not the caller: the parent kills a child that
// runs `watchdog_grace_s` (or 10 % of the limit, whichever is more) past the time limit, and either
// failure returns status::error -- or the model's full feasible warm start, as status::feasible -- with
// a message that says what happened. The *_ilp policies then fall back as for any failed solve. With
// verbosity 0 the child's stderr goes to /dev/null (its failed assertions would print there).
#include <memplan/base/error.hpp>
#include <memplan/solver/milp.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cmath>
#include <cstddef>
#include <exception>
#include <limits>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#define MEMPLAN_CBC_CAN_ISOLATE 1
#else
#define MEMPLAN_CBC_CAN_ISOLATE 0
#endif

#include <CbcModel.hpp>
#include <CbcSolver.hpp>
#include <CoinError.hpp>
#include <CoinFinite.hpp>
#include <CoinPackedMatrix.hpp>
#include <OsiClpSolverInterface.hpp>

namespace memplan::solver {

namespace detail {

inline std::string cbc_num(double x) {
  std::ostringstream os;
  os.precision(10);
  os << x;
  return os.str();
}

// CbcMain1 parses its arguments through file-static state in CbcOrClpParam.cpp (CBC 2.10), so two
// concurrent calls may corrupt each other. Every solve owns its CbcModel and solver; only the call
// into CBC is serialized.
inline std::mutex& cbc_mutex() {
  static std::mutex m;
  return m;
}

#if MEMPLAN_CBC_CAN_ISOLATE
// The child's answer, through a pipe: fixed-size fields, then the message and the values.
inline void cbc_write_all(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // the parent is gone; nothing to do in the child
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

inline void cbc_send(int fd, const solution& s) {
  const std::array<double, 4> d{s.objective, s.bound, s.gap, s.seconds};
  const std::array<std::int64_t, 4> i{static_cast<std::int64_t>(s.status), s.nodes,
                                      static_cast<std::int64_t>(s.message.size()),
                                      static_cast<std::int64_t>(s.values.size())};
  cbc_write_all(fd, d.data(), sizeof d);
  cbc_write_all(fd, i.data(), sizeof i);
  cbc_write_all(fd, s.message.data(), s.message.size());
  cbc_write_all(fd, s.values.data(), s.values.size() * sizeof(double));
}

// Reads everything the child writes until it closes the pipe, or until `deadline` (false: the
// deadline passed first).
inline bool cbc_read_until_eof(int fd, std::string& out, std::chrono::steady_clock::time_point deadline, bool has_deadline) {
  std::array<char, 1 << 16> buf{};
  for (;;) {
    int wait_ms = -1;
    if (has_deadline) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) return false;
      wait_ms = static_cast<int>(std::min<long long>(left, 1 << 30));
    }
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, wait_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return false;
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;  // EOF (or an error: treated as the end of what the child sent)
    out.append(buf.data(), static_cast<std::size_t>(n));
  }
}

// Parses what cbc_send wrote; false when it is incomplete (the child died while writing).
inline bool cbc_receive(const std::string& in, solution& s) {
  std::array<double, 4> d{};
  std::array<std::int64_t, 4> i{};
  if (in.size() < sizeof d + sizeof i) return false;
  std::memcpy(d.data(), in.data(), sizeof d);
  std::memcpy(i.data(), in.data() + sizeof d, sizeof i);
  if (i[0] < 0 || i[0] > static_cast<std::int64_t>(status::error) || i[2] < 0 || i[3] < 0) return false;
  const auto msg = static_cast<std::size_t>(i[2]), nv = static_cast<std::size_t>(i[3]);
  if (in.size() != sizeof d + sizeof i + msg + nv * sizeof(double)) return false;
  s.objective = d[0], s.bound = d[1], s.gap = d[2], s.seconds = d[3];
  s.status = static_cast<status>(i[0]);
  s.nodes = i[1];
  s.message.assign(in.data() + sizeof d + sizeof i, msg);
  s.values.resize(nv);
  if (nv > 0) std::memcpy(s.values.data(), in.data() + sizeof d + sizeof i + msg, nv * sizeof(double));
  return true;
}
#endif

// CBC reports "no value" as +-1e50 or +-COIN_DBL_MAX.
inline double cbc_value_or_inf(double v) {
  if (std::isnan(v)) return v;
  if (v >= 1e49) return infinity;
  if (v <= -1e49) return -infinity;
  return v;
}

}  // namespace detail

class cbc {
 public:
  // Extra arguments for CbcMain1, placed before "-solve", for tuning a model family, e.g.
  // {"-cuts", "off"} or {"-preprocess", "off"} (see `cbc -?` for the list). Empty by default.
  std::vector<std::string> arguments{};
  // Solve in a forked child process (see the top of this file). Off by default in the library: fork()
  // in a multi-threaded caller copies only the calling thread, and the child then must not need a lock
  // another thread held (the watchdog still ends it). Ignored where fork() does not exist.
  bool isolate = false;
  // With isolate and a finite time limit: seconds the child may run past the limit before it is
  // killed (at least 10 % of the limit).
  double watchdog_grace_s = 2.0;
  // For tests of the isolation only: the child dies by a signal instead of solving (SIGKILL, which is
  // what any crash looks like to the parent, also under sanitizers that catch SIGSEGV themselves),
  // or hangs.
  enum class fault : std::uint8_t { none, crash, hang };
  fault inject_fault = fault::none;

  [[nodiscard]] static constexpr bool available() noexcept { return true; }
  [[nodiscard]] std::string_view name() const noexcept { return "cbc"; }

  [[nodiscard]] solution solve(const model& m, const options& o) const {
    validate(o);
#if MEMPLAN_CBC_CAN_ISOLATE
    if (isolate) return solve_isolated(m, o);
#endif
    return solve_here(m, o);
  }

 private:
  [[nodiscard]] solution solve_here(const model& m, const options& o) const {
    const auto t0 = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
    solution s;
    s.backend = "cbc";
    // Constraints without variables never reach CBC: either they hold or the model is infeasible.
    std::vector<std::size_t> rows;
    rows.reserve(m.num_constraints());
    for (std::size_t r = 0; r < m.num_constraints(); ++r) {
      const row_view c = m.constraint_at(row{r});
      if (!c.terms.empty()) {
        rows.push_back(r);
        continue;
      }
      const bool holds = c.sense == solver::sense::le   ? 0.0 <= c.rhs
                         : c.sense == solver::sense::ge ? 0.0 >= c.rhs
                                                        : c.rhs == 0.0;
      if (!holds) {
        s.status = status::infeasible;
        s.message = "constraint '" + m.row_name(row{r}) + "' has no variables and reads 0 " + to_string(c.sense) +
                    " " + detail::cbc_num(c.rhs);
        s.seconds = elapsed();
        return s;
      }
    }
    if (m.num_vars() == 0) {
      s.status = status::optimal;
      s.objective = s.bound = m.objective().constant();
      s.gap = 0;
      s.message = "empty model";
      s.seconds = elapsed();
      return s;
    }
    if (m.num_vars() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
        m.stats().nonzeros > static_cast<std::size_t>(std::numeric_limits<int>::max())) {
      throw error(errc::limit_exceeded, "solver::cbc: model '" + m.name() + "' has more variables or nonzeros than CBC's int indices hold");
    }
    try {
      run(m, o, arguments, rows, s, elapsed);
    } catch (const CoinError& e) {
      s = solution{};
      s.backend = "cbc";
      s.status = status::error;
      s.message = "CBC failed: " + e.className() + "::" + e.methodName() + ": " + e.message();
    }
    s.seconds = elapsed();
    return s;
  }

#if MEMPLAN_CBC_CAN_ISOLATE
  [[nodiscard]] solution solve_isolated(const model& m, const options& o) const {
    const auto t0 = std::chrono::steady_clock::now();
    auto failed = [&](std::string what) {
      solution s;
      s.backend = "cbc";
      s.status = status::error;
      s.message = std::move(what);
      // A full, feasible warm start is still an incumbent.
      if (auto start = m.full_start(); start && !m.violation(*start)) {
        s.values = std::move(*start);
        s.status = status::feasible;
        s.objective = m.objective_value(s.values);
        s.message += "; returning the feasible warm start";
      }
      s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return s;
    };
    // Output pending in this process's buffers would be written twice, once by each process.
    std::fflush(nullptr);
    int fds[2];
    if (::pipe(fds) != 0) return failed(std::string("solver::cbc: pipe() failed: ") + std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      return failed(std::string("solver::cbc: fork() failed: ") + std::strerror(errno));
    }
    if (pid == 0) {  // the child: solve, send, leave without running the parent's exit handlers
      ::close(fds[0]);
      // Silent means silent: CBC 2.10's failed assertions write to stderr before the abort, which
      // the parent reports in the solution's message.
      if (o.verbosity == 0)
        if (const int null = ::open("/dev/null", O_WRONLY); null >= 0) {
          ::dup2(null, 2);
          ::close(null);
        }
      if (inject_fault == fault::crash) ::raise(SIGKILL);
      if (inject_fault == fault::hang)
        for (;;) ::pause();
      solution s;
      try {
        s = solve_here(m, o);
      } catch (const std::exception& e) {
        s.backend = "cbc";
        s.status = status::error;
        s.message = std::string("CBC failed: ") + e.what();
      }
      detail::cbc_send(fds[1], s);
      ::close(fds[1]);
      std::fflush(nullptr);  // CBC's log (verbosity > 0); _exit() flushes nothing
      ::_exit(0);
    }
    ::close(fds[1]);
    const bool watchdog = std::isfinite(o.time_limit_s);
    const double grace = std::max(watchdog_grace_s, 0.1 * o.time_limit_s);
    const auto deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                   std::chrono::duration<double>(watchdog ? o.time_limit_s + grace : 0.0));
    std::string bytes;
    const bool finished = detail::cbc_read_until_eof(fds[0], bytes, deadline, watchdog);
    ::close(fds[0]);
    if (!finished) ::kill(pid, SIGKILL);
    int wstatus = 0;
    while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
    }
    if (!finished)
      return failed("CBC ran " + detail::cbc_num(grace) + " s past its time limit of " + detail::cbc_num(o.time_limit_s) +
                    " s; its child process was killed");
    solution s;
    s.backend = "cbc";
    if (detail::cbc_receive(bytes, s)) {
      s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return s;
    }
    if (WIFSIGNALED(wstatus))
      return failed("CBC crashed in its child process (signal " + std::to_string(WTERMSIG(wstatus)) + ", " +
                    ::strsignal(WTERMSIG(wstatus)) + ")");
    return failed("CBC's child process ended without an answer (exit status " +
                  std::to_string(WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1) + ")");
  }
#endif

  template <class Elapsed>
  static void run(const model& m, const options& o, const std::vector<std::string>& extra,
                  const std::vector<std::size_t>& rows, solution& s, Elapsed& elapsed) {
    const int n = static_cast<int>(m.num_vars());
    const bool maximize = m.sense() == objective_sense::maximize;
    const double flip = maximize ? -1.0 : 1.0;  // CBC minimizes flip * objective
    auto bound = [](double b) { return std::isinf(b) ? (b > 0 ? COIN_DBL_MAX : -COIN_DBL_MAX) : b; };

    std::vector<double> col_lb(n), col_ub(n), obj(n, 0.0);
    for (int j = 0; j < n; ++j) {
      const var_info& vi = m.vars()[static_cast<std::size_t>(j)];
      col_lb[j] = bound(vi.lower);
      col_ub[j] = bound(vi.upper);
    }
    for (const term& t : m.objective().terms()) obj[t.v.index] = flip * t.coef;

    std::vector<int> starts, lengths, index;
    std::vector<double> value, row_lb, row_ub;
    starts.reserve(rows.size() + 1);
    lengths.reserve(rows.size());
    row_lb.reserve(rows.size());
    row_ub.reserve(rows.size());
    for (const std::size_t r : rows) {
      const row_view c = m.constraint_at(row{r});
      starts.push_back(static_cast<int>(index.size()));
      lengths.push_back(static_cast<int>(c.terms.size()));
      for (const term& t : c.terms) {
        index.push_back(static_cast<int>(t.v.index));
        value.push_back(t.coef);
      }
      row_lb.push_back(c.sense == solver::sense::le ? -COIN_DBL_MAX : c.rhs);
      row_ub.push_back(c.sense == solver::sense::ge ? COIN_DBL_MAX : c.rhs);
    }
    starts.push_back(static_cast<int>(index.size()));
    const CoinPackedMatrix matrix(false, n, static_cast<int>(rows.size()), static_cast<CoinBigIndex>(index.size()),
                                  value.data(), index.data(), starts.data(), lengths.data());

    OsiClpSolverInterface lp;
    if (o.verbosity == 0) lp.messageHandler()->setLogLevel(0);
    lp.loadProblem(matrix, col_lb.data(), col_ub.data(), obj.data(), row_lb.data(), row_ub.data());
    if (std::isfinite(o.time_limit_s)) {
      // CBC checks its clock only between LP solves, and one LP of a large degenerate model can
      // take minutes; so Clp gets a wall-clock limit too, a little after CBC's own (CBC should stop
      // first whenever it can). An LP cut short by it makes CBC's verdicts unreliable; see
      // read_result().
      const double left = std::max(o.time_limit_s - elapsed(), 1e-3);
      lp.getModelPtr()->setMaximumWallSeconds(left + std::max(0.1, 0.05 * left));
    }
    for (int j = 0; j < n; ++j) {
      if (m.vars()[static_cast<std::size_t>(j)].kind != var_kind::continuous) lp.setInteger(j);
    }
    // CBC matches MIP-start values to columns by name.
    const bool has_start = !m.start().empty();
    if (has_start) {
      for (int j = 0; j < n; ++j) lp.setColName(j, "c" + std::to_string(j));
    }

    std::lock_guard<std::mutex> lock(detail::cbc_mutex());
    CbcModel cbc_model(lp);
    if (o.verbosity == 0) cbc_model.setLogLevel(0);
    CbcSolverUsefulData data;
    data.noPrinting_ = o.verbosity == 0;
    data.useSignalHandler_ = false;  // a library must not take over SIGINT
    CbcMain0(cbc_model, data);
    if (has_start) {
      std::vector<std::pair<std::string, double>> start;
      start.reserve(m.start().size());
      for (const auto& [v, x] : m.start()) start.emplace_back("c" + std::to_string(v.index), x);
      cbc_model.setMIPStart(start);
    }

    std::vector<std::string> args{"memplan", "-log", std::to_string(o.verbosity == 0 ? 0 : o.verbosity),
                                  "-timeMode", "elapsed"};
    if (std::isfinite(o.time_limit_s)) {
      const double left = std::max(o.time_limit_s - elapsed(), 1e-3);
      args.insert(args.end(), {"-sec", detail::cbc_num(left)});
      // Measured (CBC 2.10, clang build, 0.05 s limit): a clock that stops CGL preprocessing makes
      // CglPreProcess::postProcess crash (SIGSEGV). Under a second, preprocessing is off (then CBC
      // may report a weaker bound, never a wrong one); `arguments` (appended below) can override.
      if (left < 1.0) args.insert(args.end(), {"-preprocess", "off"});
    }
    args.insert(args.end(), {"-ratioGap", detail::cbc_num(o.relative_gap), "-allowableGap", detail::cbc_num(o.absolute_gap)});
    if (o.threads > 1) args.insert(args.end(), {"-threads", std::to_string(o.threads)});
    if (o.node_limit) {
      const auto cap = static_cast<std::int64_t>(std::numeric_limits<int>::max());
      args.insert(args.end(), {"-maxNodes", std::to_string(std::min(*o.node_limit, cap))});
    }
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"-solve", "-quit"});
    std::vector<const char*> argv;
    argv.reserve(args.size());
    for (const std::string& a : args) argv.push_back(a.c_str());
    CbcMain1(static_cast<int>(argv.size()), argv.data(), cbc_model, [](CbcModel*, int) { return 0; }, data);

    // Measured (CBC 2.10): when the clock runs out inside preprocessing or an LP, CBC may conclude
    // "infeasible" (or "optimal") for a feasible model. Verdicts reached at the deadline are not
    // trusted.
    const bool at_deadline =
        std::isfinite(o.time_limit_s) && elapsed() >= o.time_limit_s - std::max(1e-3, 0.01 * o.time_limit_s);
    read_result(m, o, cbc_model, flip, at_deadline, s);
  }

  static void read_result(const model& m, const options& o, CbcModel& cm, double flip, bool at_deadline,
                          solution& s) {
    const std::size_t n = m.num_vars();
    const double constant = m.objective().constant();
    s.nodes = cm.getNodeCount();
    const double* best = cm.bestSolution();
    const int secondary = cm.secondaryStatus();
    const bool time_hit = at_deadline || secondary == 4 || cm.isSecondsLimitReached();
    const bool node_hit = secondary == 3 || cm.isNodeLimitReached();
    auto limit_text = [&] {
      if (time_hit) return "time limit of " + detail::cbc_num(o.time_limit_s) + " s hit";
      if (node_hit) return "node limit of " + std::to_string(o.node_limit.value_or(-1)) + " nodes hit";
      if (secondary == 8) return std::string("iteration limit hit");
      if (secondary == 5) return std::string("stopped by an event");
      return "stopped (CBC status " + std::to_string(cm.status()) + "/" + std::to_string(secondary) + ")";
    };

    if (best != nullptr) {
      s.values.assign(best, best + n);
      s.status = cm.isProvenOptimal() && !at_deadline ? status::optimal : status::feasible;
      s.message = s.status == status::optimal ? (secondary == 2 ? "optimal within the requested gap" : "optimal")
                                              : limit_text() + "; returning the best incumbent";
    } else if (at_deadline) {
      s.status = status::no_solution;
      s.message = limit_text() + " before any feasible solution";
    } else if (cm.isProvenInfeasible()) {
      s.status = status::infeasible;
      s.message = "CBC proved the model infeasible";
    } else if (cm.isContinuousUnbounded()) {
      s.status = status::unbounded;
      s.message = "the LP relaxation is unbounded";
    } else if (cm.status() == 0) {
      // The search finished without an incumbent: nothing is feasible.
      s.status = status::infeasible;
      s.message = "CBC finished the search without a feasible solution";
    } else if (cm.status() == 1) {
      s.status = status::no_solution;
      s.message = limit_text() + " before any feasible solution";
    } else {
      s.status = status::error;
      s.message = "CBC abandoned the search (status " + std::to_string(cm.status()) + "/" + std::to_string(secondary) +
                  ", numerical difficulties?)";
    }

    // A full, feasible warm start is an incumbent even when CBC stopped before it installed it.
    if (auto start = m.full_start(); start && !m.violation(*start)) {
      const double start_obj = m.objective_value(*start);
      const bool better = s.has_incumbent() && flip * start_obj < flip * m.objective_value(s.values) - 1e-9;
      if (s.status == status::no_solution || better) {
        s.values = std::move(*start);
        s.status = status::feasible;
        s.message += "; returning the feasible warm start";
      }
    }

    if (s.has_incumbent()) {
      // Snap integer variables to integers so that callers can use them as offsets and indices.
      for (std::size_t j = 0; j < n; ++j) {
        if (m.vars()[j].kind != var_kind::continuous) s.values[j] = std::round(s.values[j]);
      }
      s.objective = m.objective_value(s.values);
      if (auto v = m.violation(s.values, 1e-6)) s.message += "; warning: incumbent after rounding: " + *v;
    }
    if (s.has_incumbent() || s.status == status::no_solution) {
      // Dual bound in the model's sense. At the deadline before any branching, CBC's bound may come
      // from an LP cut short (measured: above the LP optimum), so it is reported as unknown (NaN).
      double b = detail::cbc_value_or_inf(cm.getBestPossibleObjValue());
      if (at_deadline && s.nodes == 0) b = std::numeric_limits<double>::quiet_NaN();
      if (!std::isnan(b)) b = flip * b + constant;
      if (s.status == status::optimal && std::isinf(b)) b = s.objective;
      if (s.has_incumbent() && !std::isnan(b)) b = flip > 0 ? std::min(b, s.objective) : std::max(b, s.objective);
      s.bound = b;
      if (s.has_incumbent()) s.gap = relative_gap(s.objective, s.bound);
    }
  }
};

static_assert(backend<cbc>);

}  // namespace memplan::solver
