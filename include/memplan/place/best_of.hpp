#pragma once
// place::best_of{p1, p2, ...} -- runs several placers and keeps the smallest arena (ties: the first
// listed); `placer` names the winner and `note` lists every member's arena. Members run without the
// capacity, which is enforced once on the winner (errc::infeasible with the best arena reached).
// Members that refuse the size of the problem (errc::limit_exceeded) are skipped and listed as such.
#include <concepts>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <memplan/core/error.hpp>
#include <memplan/place/any_placer.hpp>
#include <memplan/place/buffer.hpp>
#include <memplan/place/detail/support.hpp>

namespace memplan::place {

class best_of {
 public:
  template <class... P>
    requires((!std::same_as<std::remove_cvref_t<P>, best_of> && ...) && (placer<P> && ...))
  explicit best_of(P... members) : members_{any_placer(std::move(members))...} {}
  explicit best_of(std::vector<any_placer> members) : members_(std::move(members)) {}

  [[nodiscard]] std::string name() const { return "best_of"; }
  [[nodiscard]] const std::vector<any_placer>& members() const { return members_; }

  [[nodiscard]] buffer_placement place(const buffer_problem& p) const {
    validate(p);
    if (members_.empty()) throw error(errc::invalid_argument, "best_of: no placers to choose from");
    const auto relaxed = detail::without_capacity(p);
    buffer_placement best;
    bool have = false;
    std::int64_t bound = 0;
    std::string note;
    for (const auto& m : members_) {
      if (!note.empty()) note += ", ";
      try {
        auto pl = m.place(relaxed);
        note += pl.placer + "=" + std::to_string(pl.arena);
        bound = std::max(bound, pl.lower_bound);
        if (!have || pl.arena < best.arena) { best = std::move(pl); have = true; }
      } catch (const error& e) {
        if (e.code() != errc::limit_exceeded) throw;
        note += m.name() + " skipped (" + e.what() + ")";
      }
    }
    if (!have) throw error(errc::limit_exceeded, "best_of: every member refused the problem: " + note);
    const bool optimal = best.optimal || best.arena == bound;
    return detail::finish(p, std::move(best.offsets), best.placer, "best of: " + note, bound, optimal);
  }

 private:
  std::vector<any_placer> members_;
};

static_assert(placer<best_of>);

}  // namespace memplan::place
