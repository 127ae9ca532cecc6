#pragma once
// schedule::best_of{a, b, ...} -- runs several schedulers and keeps the lowest peak (ties: the
// first listed). `policy` names the winner; `note` lists every candidate's peak.
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>

#include <memplan/core/plan.hpp>
#include <memplan/core/problem.hpp>

namespace memplan::schedule {

template <scheduler... S>
  requires(sizeof...(S) >= 1)
class best_of {
 public:
  explicit best_of(S... s) : policies_(std::move(s)...) {}

  [[nodiscard]] std::string name() const {
    std::string n = "best_of(";
    std::apply([&](const auto&... s) { ((n += std::string(s.name()) + ","), ...); }, policies_);
    n.back() = ')';
    return n;
  }

  [[nodiscard]] schedule_result run(const problem& p) const {
    schedule_result best;
    bool have = false;
    std::string note;
    std::int64_t lb = 0;
    std::apply([&](const auto&... s) { (consider(p, s, best, have, note, lb), ...); }, policies_);
    best.lower_bound = std::max(best.lower_bound, lb);
    if (best.lower_bound > 0 && best.peak == best.lower_bound) best.optimal = true;
    best.note = "best_of: " + note + (best.note.empty() ? "" : "; winner: " + best.note);
    return best;
  }

  [[nodiscard]] const std::tuple<S...>& policies() const noexcept { return policies_; }

 private:
  template <class P>
  static void consider(const problem& p, const P& s, schedule_result& best, bool& have, std::string& note, std::int64_t& lb) {
    auto r = s.run(p);
    if (r.policy.empty()) r.policy = s.name();
    note += (note.empty() ? "" : ", ") + r.policy + "=" + std::to_string(r.peak);
    lb = std::max(lb, r.lower_bound);
    if (!have || r.peak < best.peak) {
      best = std::move(r);
      have = true;
    }
  }
  std::tuple<S...> policies_;
};

template <class... S>
best_of(S...) -> best_of<S...>;

}  // namespace memplan::schedule
