#pragma once
// The CLI's one door to the policy registries (<memplan/registry/*.hpp>): every registered policy is
// offered by name, and a policy added there appears here. The registries are built in a translation
// unit of their own (registries.cpp): building them instantiates every policy behind any_stage, 62 s
// at -O2, which was in command_line.cpp's one job. Apart, the two compile side by side
// (docs/reliability.md, "Stop 85").
#include <memplan/core/any_stage.hpp>
#include <memplan/core/registry.hpp>

namespace memplan::cli {

const registry<any_scheduler>& schedulers();        // registries.cpp: memplan::schedulers()
const registry<any_checkpointer>& checkpointers();
const registry<any_offloader>& offloaders();
const registry<any_placer>& placers();

}  // namespace memplan::cli
