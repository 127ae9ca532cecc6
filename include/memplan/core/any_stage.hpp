#pragma once
// Type-erased stages (copyable, immutable; copies share the policy), for run-time choice of a policy
// (the CLI's --scheduler / --checkpointer / --offloader / --placer NAME, the registries):
//   any_scheduler      -- any scheduler
//   any_placer         -- any buffer placer (the context reaches placers that take one)
//   any_checkpointer, any_offloader -- any timeline stage of that kind
// Each is itself a stage of its kind, so `any_scheduler | any_checkpointer | any_placer` composes.
#include <concepts>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include <memplan/core/buffer.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/timeline.hpp>

namespace memplan {

class any_scheduler {
 public:
  template <class S>
    requires(!std::same_as<std::remove_cvref_t<S>, any_scheduler>) && scheduler<S>
  any_scheduler(S s) : self_(std::make_shared<model<S>>(std::move(s))) {}  // NOLINT: implicit by design

  [[nodiscard]] std::string name() const { return self_->name(); }
  [[nodiscard]] schedule_result run(const problem& p, const plan_context& ctx = {}) const { return self_->run(p, ctx); }

 private:
  struct concept_t {
    virtual ~concept_t() = default;
    [[nodiscard]] virtual std::string name() const = 0;
    [[nodiscard]] virtual schedule_result run(const problem& p, const plan_context& ctx) const = 0;
  };
  template <class S>
  struct model final : concept_t {
    explicit model(S s) : impl(std::move(s)) {}
    [[nodiscard]] std::string name() const override { return impl.name(); }
    [[nodiscard]] schedule_result run(const problem& p, const plan_context& ctx) const override { return run_scheduler(impl, p, ctx); }
    S impl;
  };
  std::shared_ptr<const concept_t> self_;
};

class any_placer {
 public:
  template <class P>
    requires(!std::same_as<std::remove_cvref_t<P>, any_placer>) && buffer_placer<P>
  any_placer(P p) : self_(std::make_shared<model<P>>(std::move(p))) {}  // NOLINT: implicit by design

  [[nodiscard]] std::string name() const { return self_->name(); }
  [[nodiscard]] buffer_placement place(const buffer_problem& bp) const { return self_->place(bp, plan_context{}); }
  [[nodiscard]] buffer_placement place(const buffer_problem& bp, const plan_context& ctx) const { return self_->place(bp, ctx); }

 private:
  struct concept_t {
    virtual ~concept_t() = default;
    [[nodiscard]] virtual std::string name() const = 0;
    [[nodiscard]] virtual buffer_placement place(const buffer_problem& bp, const plan_context& ctx) const = 0;
  };
  template <class P>
  struct model final : concept_t {
    explicit model(P p) : impl(std::move(p)) {}
    [[nodiscard]] std::string name() const override { return impl.name(); }
    [[nodiscard]] buffer_placement place(const buffer_problem& bp, const plan_context& ctx) const override {
      if constexpr (context_placer<P>) return impl.place(bp, ctx);
      else return impl.place(bp);
    }
    P impl;
  };
  std::shared_ptr<const concept_t> self_;
};

template <stage_kind K>
class any_timeline_stage {
 public:
  static constexpr stage_kind kind = K;

  template <class S>
    requires(!std::same_as<std::remove_cvref_t<S>, any_timeline_stage>) && timeline_stage<S> && (S::kind == K)
  any_timeline_stage(S s) : self_(std::make_shared<model<S>>(std::move(s))) {}  // NOLINT: implicit by design

  [[nodiscard]] std::string name() const { return self_->name(); }
  [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const { return self_->run(p, std::move(tl), ctx); }

 private:
  struct concept_t {
    virtual ~concept_t() = default;
    [[nodiscard]] virtual std::string name() const = 0;
    [[nodiscard]] virtual timeline run(const problem& p, timeline tl, const plan_context& ctx) const = 0;
  };
  template <class S>
  struct model final : concept_t {
    explicit model(S s) : impl(std::move(s)) {}
    [[nodiscard]] std::string name() const override { return impl.name(); }
    [[nodiscard]] timeline run(const problem& p, timeline tl, const plan_context& ctx) const override {
      return impl.run(p, std::move(tl), ctx);
    }
    S impl;
  };
  std::shared_ptr<const concept_t> self_;
};

using any_checkpointer = any_timeline_stage<stage_kind::checkpointer>;
using any_offloader = any_timeline_stage<stage_kind::offloader>;

static_assert(scheduler<any_scheduler>);
static_assert(context_placer<any_placer>);
static_assert(timeline_stage<any_checkpointer>);
static_assert(timeline_stage<any_offloader>);

namespace schedule { using memplan::any_scheduler; }
namespace place { using memplan::any_placer; }

}  // namespace memplan
