#pragma once
// Progress of long work (searches, solver runs, sweeps), reported through a callback in the plan
// context -- never printed by the library. The CLI prints it on stderr with -v.
#include <cstdint>
#include <functional>
#include <string_view>

namespace memplan {

struct progress_event {
  std::string_view policy;       // who reports
  std::string_view message;      // what happened, in words
  double seconds = 0.0;          // since that policy started
  std::int64_t best = -1;        // best objective known so far (peak, arena, ...; -1: none yet)
  std::int64_t lower_bound = 0;  // best lower bound known so far
};

using progress_callback = std::function<void(const progress_event&)>;

inline void report(const progress_callback& cb, std::string_view policy, std::string_view message, double seconds,
                   std::int64_t best = -1, std::int64_t lower_bound = 0) {
  if (cb) cb(progress_event{policy, message, seconds, best, lower_bound});
}

}  // namespace memplan
