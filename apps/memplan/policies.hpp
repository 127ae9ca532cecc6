#pragma once
// The CLI's one door to the policy registries: a scheduler and a placer by name.
// Schedulers come from schedule::by_name (include/memplan/schedule/registry.hpp) and placers from
// place::by_name (include/memplan/place/by_name.hpp), so the CLI offers every registered policy.
#include <string>
#include <vector>

#include <memplan/core/error.hpp>
#include <memplan/place/any_placer.hpp>
#include <memplan/place/by_name.hpp>
#include <memplan/schedule/any_scheduler.hpp>
#include <memplan/schedule/given.hpp>

#if __has_include(<memplan/schedule/registry.hpp>)
#include <memplan/schedule/registry.hpp>
#define MEMPLAN_CLI_SCHEDULE_REGISTRY 1
#endif

namespace memplan::cli {

inline std::vector<std::string> scheduler_names() {
#if defined(MEMPLAN_CLI_SCHEDULE_REGISTRY)
  return schedule::scheduler_names();
#else
  return {"given", "default"};
#endif
}

inline std::vector<std::string> placer_names() { return place::placer_names(); }

inline std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// time_limit (seconds) < 0 keeps each policy's own default.
inline schedule::any_scheduler make_scheduler(const std::string& name, double time_limit) {
#if defined(MEMPLAN_CLI_SCHEDULE_REGISTRY)
  schedule::options o;
  o.time_limit_s = time_limit;
  return schedule::by_name(name, o);
#else
  (void)time_limit;
  if (name == "given" || name == "default") return schedule::given{};
  throw error(errc::invalid_argument, "unknown scheduler '" + name + "'; valid names: " + joined(scheduler_names()));
#endif
}

inline place::any_placer make_placer(const std::string& name, double time_limit) { return place::by_name(name, time_limit); }

}  // namespace memplan::cli
