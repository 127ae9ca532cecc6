#pragma once
// Options shared by the schedulers that search (local_search, exact, default_scheduler) and by the
// run-time registry schedule::by_name: a time limit and a progress callback.
#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>

namespace memplan::schedule {

// What a searching scheduler reports while it runs (an improvement, a finished sub-policy, ...).
struct progress_event {
  std::string_view policy;       // who reports
  std::string_view message;      // what happened, in words
  double seconds = 0.0;          // since that policy started
  std::int64_t best_peak = -1;   // best peak known so far (-1: none yet)
  std::int64_t lower_bound = 0;  // best lower bound known so far
};

using progress_callback = std::function<void(const progress_event&)>;

// Options of schedule::by_name (and of the policies it builds). time_limit_s < 0 keeps each
// policy's own default.
struct options {
  double time_limit_s = -1.0;
  progress_callback progress{};
};

namespace detail {

// A deadline that is cheap to poll.
class deadline {
 public:
  using clock = std::chrono::steady_clock;
  explicit deadline(double seconds) : start_(clock::now()), limit_(seconds) {}
  [[nodiscard]] double elapsed() const { return std::chrono::duration<double>(clock::now() - start_).count(); }
  [[nodiscard]] bool passed() const { return limit_ >= 0.0 && elapsed() >= limit_; }
  [[nodiscard]] double limit() const noexcept { return limit_; }

 private:
  clock::time_point start_;
  double limit_;
};

inline void report(const progress_callback& cb, std::string_view policy, std::string_view message, double seconds,
                   std::int64_t best, std::int64_t lb) {
  if (cb) cb(progress_event{policy, message, seconds, best, lb});
}

}  // namespace detail
}  // namespace memplan::schedule
