#pragma once
// memplan's one deadline: every searching policy polls it inside its loops. A limit below zero (or
// above 1e9 s, which would overflow the clock) never expires (the policy then stops on its own work
// limits only).
//
// A deadline reads either the steady clock or a work_clock: a count of the work done, charged by the
// search loops themselves (deadline::charge), each unit worth a fixed number of virtual seconds. On a
// work clock, time is a function of the work alone, so a search that shares its time out by the
// clock (slices, phases, a reserve for the final check) makes the same decisions on any machine and
// load: deterministic mode (plan_context::deterministic) runs the placers' searches that way, with
// their usual time limits, instead of on node counts that cost 13 us on one problem and 200 us on
// another.
#include <algorithm>
#include <chrono>
#include <cstdint>

namespace memplan {

// Work done, in units of about half a nanosecond of the placers' inner loops on this project's 2-core
// CI machine (the loops weigh their steps: detail/canonical_search.hpp, detail/support.hpp), each
// counted as `seconds_per_unit` virtual seconds, so that a virtual second is near a real one there.
// Not thread-safe: one per search.
class work_clock {
 public:
  static constexpr double default_seconds_per_unit = 0.5e-9;
  explicit work_clock(double seconds_per_unit = default_seconds_per_unit) noexcept : spu_(seconds_per_unit) {}
  void charge(std::int64_t units) noexcept { units_ += units; }
  [[nodiscard]] std::int64_t units() const noexcept { return units_; }
  [[nodiscard]] double seconds() const noexcept { return static_cast<double>(units_) * spu_; }

 private:
  std::int64_t units_ = 0;
  double spu_;
};

class deadline {
 public:
  using clock = std::chrono::steady_clock;

  // Expires `seconds` after now; seconds < 0 or >= 1e9: never.
  static deadline after(double seconds) { return deadline(seconds, nullptr); }
  // The same on a work clock: `seconds` of work charged to `work` from now on (nullptr: the steady clock).
  static deadline after(double seconds, work_clock* work) { return deadline(seconds, work); }
  static deadline never() { return deadline(-1.0, nullptr); }

  // Now on this deadline's clock (the steady clock's, or the work clock's virtual time).
  [[nodiscard]] clock::time_point now() const {
    if (!work_) return clock::now();
    return clock::time_point(std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(work_->seconds())));
  }
  // Work done, for the loops that do it (nothing on the steady clock).
  void charge(std::int64_t units) const noexcept {
    if (work_) work_->charge(units);
  }
  [[nodiscard]] bool counts_work() const noexcept { return work_ != nullptr; }
  [[nodiscard]] double elapsed() const { return std::chrono::duration<double>(now() - start_).count(); }
  [[nodiscard]] bool limited() const noexcept { return limit_ >= 0.0 && limit_ < 1e9; }
  [[nodiscard]] bool expired() const { return limited() && now() >= at_; }
  [[nodiscard]] double limit() const noexcept { return limit_; }
  // Seconds until expiry (never negative); a large number when unlimited.
  [[nodiscard]] double seconds_left() const {
    if (!limited()) return 1e18;
    const double s = std::chrono::duration<double>(at_ - now()).count();
    return s > 0 ? s : 0.0;
  }
  // The same deadline `seconds` earlier (now at the latest; unlimited stays unlimited): the time kept
  // back for work that must follow, such as a final check.
  [[nodiscard]] deadline kept_back(double seconds) const {
    if (!limited()) return *this;
    const double left = seconds_left() - seconds;
    return deadline(left > 0 ? left : 0.0, work_);
  }
  // A deadline for a part of the remaining time: min(this, now + seconds). On the same clock.
  [[nodiscard]] deadline slice(double seconds) const {
    if (seconds < 0) return *this;
    return deadline(limited() && seconds_left() < seconds ? seconds_left() : seconds, work_);
  }

 private:
  deadline(double seconds, work_clock* work) : work_(work), start_(now()), at_(start_), limit_(seconds) {
    if (limited()) at_ = start_ + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(seconds));
  }
  work_clock* work_;
  clock::time_point start_, at_;
  double limit_;
};

// Paces a loop of similar steps under a deadline (issue 12: wall <= limit + 10 %): a step starts only
// while the time left covers the longest step so far, so the last step does not run far past the
// limit. The first step always starts; without a limit every step does. Call next() before each step.
class step_pacer {
 public:
  explicit step_pacer(const deadline& d) : d_(&d) {}
  // expected_first (> 0): the length the first step is expected to take (a rerun of work timed once):
  // it too then starts only when the time left covers that. The later steps are paced by the steps
  // measured, as without it (a rerun cut to a shorter window than the work it repeats is shorter).
  step_pacer(const deadline& d, double expected_first) : d_(&d), expected_first_(std::max(0.0, expected_first)) {}
  // reserved_steps: time for that many more steps of the longest length is left over as well (a last
  // resort that must still run after the loop).
  [[nodiscard]] bool next(int reserved_steps = 0) {
    if (!d_->limited()) return true;
    const auto now = d_->now();
    if (!started_) {
      started_ = true;
      last_ = now;
      return expected_first_ <= 0.0 || (!d_->expired() && d_->seconds_left() >= expected_first_ * (1.0 + reserved_steps));
    }
    const double step = std::chrono::duration<double>(now - last_).count();
    if (step > longest_) longest_ = step;
    last_ = now;
    return !d_->expired() && d_->seconds_left() >= longest_ * (1.0 + reserved_steps);
  }
  // The longest step so far (seconds; 0 before the second next()).
  [[nodiscard]] double longest() const noexcept { return longest_; }

 private:
  const deadline* d_;
  bool started_ = false;
  deadline::clock::time_point last_{};
  double longest_ = 0.0;
  double expected_first_ = 0.0;
};

}  // namespace memplan
