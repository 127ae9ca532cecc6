// The CLI's MILP backend when memplan::cbc is linked: the *_ilp policies solve with CBC.
#include <memplan/solver/cbc.hpp>

#include "backends.hpp"

namespace memplan::cli {
solver::any_backend milp_backend() { return solver::cbc{}; }
}  // namespace memplan::cli
