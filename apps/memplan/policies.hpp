#pragma once
// The CLI's one door to the policy registries (<memplan/registry/*.hpp>): every registered policy is
// offered by name, and a policy added there appears here.
#include <string>
#include <vector>

#include <memplan/core/any_stage.hpp>
#include <memplan/registry/placers.hpp>
#include <memplan/registry/schedulers.hpp>

namespace memplan::cli {

inline std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace memplan::cli
