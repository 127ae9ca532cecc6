#pragma once
// memplan's one exception type. Every error names what it is about (node, tensor, step, file line)
// so that a user can find the culprit without a debugger.
#include <stdexcept>
#include <string>

namespace memplan {

enum class errc {
  invalid_graph,      // cycle, dangling tensor, duplicate name, bad size
  invalid_argument,   // bad option or parameter
  invalid_plan,       // a plan that verify rejected
  infeasible,         // a budget or capacity that cannot be met
  limit_exceeded,     // a problem beyond an exact method's size limit
  solver_error,       // MILP backend missing, failed, or timed out without an incumbent
  parse_error,        // malformed JSON / CSV input
  io_error,           // file cannot be read or written
  runtime_error,      // executor / arena failures
  not_better,         // a plan that cannot beat plan_context::to_beat or offload_to_beat (only where one is given)
};

inline const char* to_string(errc c) noexcept {
  switch (c) {
    case errc::invalid_graph: return "invalid graph";
    case errc::invalid_argument: return "invalid argument";
    case errc::invalid_plan: return "invalid plan";
    case errc::infeasible: return "infeasible";
    case errc::limit_exceeded: return "limit exceeded";
    case errc::solver_error: return "solver error";
    case errc::parse_error: return "parse error";
    case errc::io_error: return "I/O error";
    case errc::runtime_error: return "runtime error";
    case errc::not_better: return "not better";
  }
  return "error";
}

class error : public std::runtime_error {
 public:
  error(errc code, const std::string& what) : std::runtime_error(what), code_(code) {}
  [[nodiscard]] errc code() const noexcept { return code_; }

 private:
  errc code_;
};

}  // namespace memplan
