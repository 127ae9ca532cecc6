#pragma once
// For programs other than the CLI that run place_csv.hpp (its tests, bench_place): place_csv.hpp
// looks placer names up through memplan::cli::placers(), which the CLI defines in a translation unit
// of its own (registries.cpp, policies.hpp says why); here it is the library's registry. It defines
// a function: include it in one translation unit of the program only.
#include <memplan/registry/placers.hpp>

#include "policies.hpp"

const memplan::registry<memplan::any_placer>& memplan::cli::placers() { return memplan::placers(); }
