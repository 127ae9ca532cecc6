// The CLI's MILP backend when memplan::cbc is not linked: none (the *_ilp policies fall back and say so).
#include "backends.hpp"

namespace memplan::cli {
solver::any_backend milp_backend() { return solver::none{}; }
}  // namespace memplan::cli
