#pragma once
// Every scheduling policy of memplan::schedule (except olla_ilp, which needs the solver layer).
#include <memplan/schedule/any_scheduler.hpp>
#include <memplan/schedule/best_of.hpp>
#include <memplan/schedule/by_name.hpp>
#include <memplan/schedule/default_scheduler.hpp>
#include <memplan/schedule/early_updates.hpp>
#include <memplan/schedule/exact.hpp>
#include <memplan/schedule/given.hpp>
#include <memplan/schedule/list_scheduler.hpp>
#include <memplan/schedule/local_search.hpp>
#include <memplan/schedule/options.hpp>
