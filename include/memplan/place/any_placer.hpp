#pragma once
// place::any_placer -- a type-erased placer (copyable, immutable), for run-time choice of a policy
// (CLI --placer NAME, best_of over a list).
#include <concepts>
#include <memory>
#include <type_traits>
#include <string>
#include <utility>

#include <memplan/place/buffer.hpp>

namespace memplan::place {

class any_placer {
 public:
  template <class P>
    requires(!std::same_as<std::remove_cvref_t<P>, any_placer>) && placer<P>
  any_placer(P p) : self_(std::make_shared<model<P>>(std::move(p))) {}  // NOLINT: implicit by design

  [[nodiscard]] std::string name() const { return self_->name(); }
  [[nodiscard]] buffer_placement place(const buffer_problem& p) const { return self_->place(p); }

 private:
  struct concept_t {
    virtual ~concept_t() = default;
    [[nodiscard]] virtual std::string name() const = 0;
    [[nodiscard]] virtual buffer_placement place(const buffer_problem& p) const = 0;
  };
  template <class P>
  struct model final : concept_t {
    explicit model(P p) : impl(std::move(p)) {}
    [[nodiscard]] std::string name() const override { return impl.name(); }
    [[nodiscard]] buffer_placement place(const buffer_problem& p) const override { return impl.place(p); }
    P impl;
  };
  std::shared_ptr<const concept_t> self_;
};

static_assert(placer<any_placer>);

}  // namespace memplan::place
