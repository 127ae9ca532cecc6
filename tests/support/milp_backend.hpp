#pragma once
// The MILP backend a test program has: solver::cbc when it links memplan::cbc (milp_backend_cbc.cpp),
// none otherwise (milp_backend_none.cpp). CMake picks the translation unit; no macro decides.
#include <memplan/solver/milp.hpp>

namespace memplan::testing {
solver::any_backend milp_backend();
}  // namespace memplan::testing
