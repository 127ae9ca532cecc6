// The CLI's MILP backend when memplan::cbc is linked: the *_ilp policies solve with CBC, in a child
// process (solver::cbc::isolate): a CBC crash or hang then costs the solve, which falls back to the
// policy's warm start, and never the `memplan` process.
#include <memplan/solver/cbc.hpp>

#include "backends.hpp"

namespace memplan::cli {
solver::any_backend milp_backend() { return solver::cbc{.isolate = true}; }
}  // namespace memplan::cli
