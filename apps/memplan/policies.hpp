#pragma once
// The CLI's one door to the policy registries (<memplan/registry/*.hpp>): every registered policy is
// offered by name, and a policy added there appears here.
#include <memplan/core/any_stage.hpp>
#include <memplan/registry/checkpointers.hpp>
#include <memplan/registry/offloaders.hpp>
#include <memplan/registry/placers.hpp>
#include <memplan/registry/schedulers.hpp>
