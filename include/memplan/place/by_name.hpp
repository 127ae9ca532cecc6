#pragma once
// place::by_name -- the placer of a given name, type-erased (for the CLI's --placer NAME).
#include <string>
#include <vector>

#include <memplan/core/error.hpp>
#include <memplan/place/any_placer.hpp>
#include <memplan/place/best_fit.hpp>
#include <memplan/place/best_of.hpp>
#include <memplan/place/bump.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/place/exact.hpp>
#include <memplan/place/gergov.hpp>
#include <memplan/place/greedy_by_breadth.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/place/mincost_flow.hpp>
#include <memplan/place/olla_ilp.hpp>
#include <memplan/place/online/caching_allocator.hpp>
#include <memplan/place/online/free_list.hpp>
#include <memplan/place/pyramid.hpp>
#include <memplan/solver/cbc.hpp>

namespace memplan::place {

inline const std::vector<std::string>& placer_names() {
  static const std::vector<std::string> names{"bump",   "greedy_by_size", "greedy_by_breadth", "best_fit",
                                              "gergov", "mincost_flow",   "pyramid",           "exact",
                                              "best_of", "default", "online_first_fit", "online_best_fit",
                                              "caching_allocator", "olla_ilp"};
  return names;
}

// time_limit (seconds) applies to the placers that search: exact and default; < 0 keeps their defaults.
inline any_placer by_name(const std::string& name, double time_limit = -1) {
  if (name == "bump") return bump{};
  if (name == "greedy_by_size") return greedy_by_size{};
  if (name == "greedy_by_breadth") return greedy_by_breadth{};
  if (name == "best_fit") return best_fit{};
  if (name == "gergov") return gergov{};
  if (name == "mincost_flow") return mincost_flow{};
  if (name == "pyramid") return pyramid{};
  if (name == "exact") return exact{.time_limit_s = time_limit};
  if (name == "best_of")
    return best_of{greedy_by_size{}, best_fit{}, greedy_by_breadth{}, pyramid{}, gergov{}, mincost_flow{}};
  if (name == "default") return default_placer{.time_limit_s = time_limit};
  if (name == "online_first_fit") return online::first_fit{};
  if (name == "online_best_fit") return online::best_fit{};
  if (name == "caching_allocator") return online::caching_allocator{};
  if (name == "olla_ilp") return time_limit >= 0 ? olla_ilp{.backend = solver::cbc{}, .time_limit_s = time_limit} : olla_ilp{.backend = solver::cbc{}};
  std::string valid;
  for (const auto& n : placer_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw error(errc::invalid_argument, "unknown placer '" + name + "'; valid names: " + valid);
}

}  // namespace memplan::place
