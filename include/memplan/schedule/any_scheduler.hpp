#pragma once
// schedule::any_scheduler -- a type-erased scheduler (copyable, immutable) for run-time choice of a
// policy (CLI --scheduler NAME, schedule::by_name).
#include <concepts>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include <memplan/core/plan.hpp>
#include <memplan/core/problem.hpp>

namespace memplan::schedule {

class any_scheduler {
 public:
  template <class S>
    requires(!std::same_as<std::remove_cvref_t<S>, any_scheduler>) && scheduler<S>
  any_scheduler(S s) : self_(std::make_shared<model<S>>(std::move(s))) {}  // NOLINT: implicit by design

  [[nodiscard]] std::string name() const { return self_->name(); }
  [[nodiscard]] schedule_result run(const problem& p) const { return self_->run(p); }

 private:
  struct concept_t {
    virtual ~concept_t() = default;
    [[nodiscard]] virtual std::string name() const = 0;
    [[nodiscard]] virtual schedule_result run(const problem& p) const = 0;
  };
  template <class S>
  struct model final : concept_t {
    explicit model(S s) : impl(std::move(s)) {}
    [[nodiscard]] std::string name() const override { return impl.name(); }
    [[nodiscard]] schedule_result run(const problem& p) const override { return impl.run(p); }
    S impl;
  };
  std::shared_ptr<const concept_t> self_;
};

static_assert(scheduler<any_scheduler>);

}  // namespace memplan::schedule
