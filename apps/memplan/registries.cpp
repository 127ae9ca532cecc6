// The four policy registries, built here in one translation unit of their own (policies.hpp says why):
// apart from each other they took 27 + 27 + 23 + 13 s at -O2 against 62 s together (the policies
// share their headers and much of their code).
#include <memplan/registry/checkpointers.hpp>
#include <memplan/registry/offloaders.hpp>
#include <memplan/registry/placers.hpp>
#include <memplan/registry/schedulers.hpp>

#include "policies.hpp"

const memplan::registry<memplan::any_scheduler>& memplan::cli::schedulers() { return memplan::schedulers(); }
const memplan::registry<memplan::any_checkpointer>& memplan::cli::checkpointers() { return memplan::checkpointers(); }
const memplan::registry<memplan::any_offloader>& memplan::cli::offloaders() { return memplan::offloaders(); }
const memplan::registry<memplan::any_placer>& memplan::cli::placers() { return memplan::placers(); }
