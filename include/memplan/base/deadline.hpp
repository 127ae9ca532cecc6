#pragma once
// memplan's one deadline: every searching policy polls it inside its loops. A limit below zero (or
// above 1e9 s, which would overflow the clock) never expires (the policy then stops on its own work
// limits only).
#include <chrono>

namespace memplan {

class deadline {
 public:
  using clock = std::chrono::steady_clock;

  // Expires `seconds` after now; seconds < 0 or >= 1e9: never.
  static deadline after(double seconds) { return deadline(seconds); }
  static deadline never() { return deadline(-1.0); }

  [[nodiscard]] double elapsed() const { return std::chrono::duration<double>(clock::now() - start_).count(); }
  [[nodiscard]] bool limited() const noexcept { return limit_ >= 0.0 && limit_ < 1e9; }
  [[nodiscard]] bool expired() const { return limited() && clock::now() >= at_; }
  [[nodiscard]] double limit() const noexcept { return limit_; }
  // Seconds until expiry (never negative); a large number when unlimited.
  [[nodiscard]] double seconds_left() const {
    if (!limited()) return 1e18;
    const double s = std::chrono::duration<double>(at_ - clock::now()).count();
    return s > 0 ? s : 0.0;
  }
  // The same deadline `seconds` earlier (now at the latest; unlimited stays unlimited): the time kept
  // back for work that must follow, such as a final check.
  [[nodiscard]] deadline kept_back(double seconds) const {
    if (!limited()) return *this;
    const double left = seconds_left() - seconds;
    return after(left > 0 ? left : 0.0);
  }
  // A deadline for a part of the remaining time: min(this, now + seconds).
  [[nodiscard]] deadline slice(double seconds) const {
    if (seconds < 0) return *this;
    return after(limited() && seconds_left() < seconds ? seconds_left() : seconds);
  }

 private:
  explicit deadline(double seconds) : start_(clock::now()), at_(start_), limit_(seconds) {
    if (limited()) at_ = start_ + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(seconds));
  }
  clock::time_point start_, at_;
  double limit_;
};

// Paces a loop of similar steps under a deadline (issue 12: wall <= limit + 10 %): a step starts only
// while the time left covers the longest step so far, so the last step does not run far past the
// limit. The first step always starts; without a limit every step does. Call next() before each step.
class step_pacer {
 public:
  explicit step_pacer(const deadline& d) : d_(&d) {}
  // reserved_steps: time for that many more steps of the longest length is left over as well (a last
  // resort that must still run after the loop).
  [[nodiscard]] bool next(int reserved_steps = 0) {
    if (!d_->limited()) return true;
    const auto now = deadline::clock::now();
    if (!started_) {
      started_ = true;
      last_ = now;
      return true;
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
};

}  // namespace memplan
