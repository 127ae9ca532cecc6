#pragma once
// The optional backends of the CLI, each defined in its own translation unit chosen by CMake
// (backend_cbc.cpp or backend_no_cbc.cpp).
#include <memplan/solver/milp.hpp>

namespace memplan::cli {
// The MILP backend for the *_ilp policies: solver::cbc when the CLI links memplan::cbc, else none.
solver::any_backend milp_backend();
}  // namespace memplan::cli
