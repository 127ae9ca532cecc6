#include <memplan/solver/cbc.hpp>

#include "milp_backend.hpp"

namespace memplan::testing {
solver::any_backend milp_backend() { return solver::cbc{}; }
}  // namespace memplan::testing
