#include "milp_backend.hpp"

namespace memplan::testing {
solver::any_backend milp_backend() { return solver::none{}; }
}  // namespace memplan::testing
