#pragma once
// schedule::given: the graph's own order (what the framework ran) -- the baseline every report
// compares to. Fails, naming the op, when the given order breaks a precedence (e.g. an in-place
// writer listed before a reader of the tensor it overwrites).
#include <numeric>
#include <string>

#include <memplan/core/analysis.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/stage.hpp>

namespace memplan::schedule {

struct given {
  [[nodiscard]] std::string name() const { return "given"; }
  [[nodiscard]] schedule_result run(const problem& p, const plan_context& = {}) const {
    schedule_result s;
    s.order = given_order(p);
    if (auto bad = check_topological(p, s.order))
      throw error(errc::invalid_graph, "the given order of '" + p.name() + "' is not executable: " + *bad);
    s.peak = peak_of(p, s.order);
    s.policy = name();
    return s;
  }
};

static_assert(scheduler<given>);

}  // namespace memplan::schedule
