#pragma once
// Every scheduling policy of memplan::schedule (umbrella header). olla_ilp solves with the MILP
// backend of the plan context (solver::cbc from <memplan/solver/cbc.hpp>, target memplan::cbc).
#include <memplan/core/any_stage.hpp>
#include <memplan/core/best_of.hpp>
#include <memplan/schedule/default_scheduler.hpp>
#include <memplan/schedule/early_updates.hpp>
#include <memplan/schedule/exact.hpp>
#include <memplan/schedule/given.hpp>
#include <memplan/schedule/list_scheduler.hpp>
#include <memplan/schedule/local_search.hpp>
#include <memplan/schedule/olla_ilp.hpp>
