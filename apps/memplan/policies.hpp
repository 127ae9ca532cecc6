#pragma once
// The CLI's one door to the policy registries: a scheduler and a placer by name. Schedulers come
// from schedule::by_name (schedule/by_name.hpp) and placers from place::by_name (place/by_name.hpp),
// so the CLI offers every registered policy and a policy added there appears here.
#include <string>
#include <vector>

#include <memplan/core/error.hpp>
#include <memplan/place/any_placer.hpp>
#include <memplan/place/by_name.hpp>
#include <memplan/schedule/any_scheduler.hpp>
#include <memplan/schedule/by_name.hpp>
#include <memplan/schedule/options.hpp>

namespace memplan::cli {

inline std::vector<std::string> scheduler_names() { return schedule::scheduler_names(); }
inline std::vector<std::string> placer_names() { return place::placer_names(); }

inline std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// "  name: description" lines for --help.
inline std::string scheduler_help() {
  std::string s;
  for (const auto& e : schedule::registry()) s += "  " + e.name + ": " + e.description + "\n";
  return s;
}

// time_limit (seconds) < 0 keeps each policy's own default.
inline schedule::any_scheduler make_scheduler(const std::string& name, double time_limit,
                                              schedule::progress_callback progress = {}) {
  schedule::options o;
  o.time_limit_s = time_limit;
  o.progress = std::move(progress);
  return schedule::by_name(name, o);
}

inline place::any_placer make_placer(const std::string& name, double time_limit) { return place::by_name(name, time_limit); }

}  // namespace memplan::cli
