#pragma once
// Running an ad::program under a memory plan: the bridge between ad/ and runtime/.
//
//   auto m = ad::models::cnn({.batch = 32}, ad::adam{0.01f});
//   ad::planned_runner r(m.step, memplan::schedule::default_scheduler{} | memplan::place::default_placer{});
//   ad::data_stream<ad::shapes16> data(ad::shapes16{}, 1001);
//   for (int s = 0; s < 80; ++s) ad::train_step(r, m, data);   // same numbers as eager_runner, bit for bit
//
// Every tensor of the program lives at its planned offset in ONE arena (runtime::executor); the
// adapter plan_kernel maps op id -> node (to_dataflow_graph keeps op i == node i, tensor i == tensor i)
// and hands run_node its float pointers in the node's own argument order, undoing the problem's
// de-duplication of a tensor read twice by one node. Resident tensors (inputs, weights, optimizer
// state) start with the values eager_runner gives them: both go through fill_initial with the same
// initializer, over the same set of tensors (resident_tensors()). Plans must be 64-byte aligned
// (ad::tensor_alignment): the kernels require it and run_node checks it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <memplan/ad/graph.hpp>
#include <memplan/ad/models/model.hpp>
#include <memplan/ad/initializer.hpp>
#include <memplan/ad/program_types.hpp>
#include <memplan/ad/run_node.hpp>
#include <memplan/ad/tensor.hpp>
#include <memplan/ad/validate.hpp>
#include <memplan/base/error.hpp>
#include <memplan/core/adapt.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/core/stage.hpp>
#include <memplan/core/plan.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/base/kinds.hpp>
#include <memplan/runtime/executor.hpp>

namespace memplan::ad {

// The alignment every plan of an ad::program must use.
inline constexpr std::int64_t plan_alignment = static_cast<std::int64_t>(tensor_alignment);

// The storages that exist before a step runs and persist across steps (inputs, weights, optimizer
// state): never produced, of a resident kind, not an in-place alias. Exactly the tensors
// eager_runner allocates and initializes in its constructor.
inline std::vector<std::int32_t> resident_tensors(const program& p) {
  std::vector<bool> produced(p.tensors.size(), false);
  for (const auto& nd : p.nodes)
    for (auto t : nd.outputs) produced[static_cast<std::size_t>(t)] = true;
  std::vector<std::int32_t> r;
  for (std::size_t t = 0; t < p.tensors.size(); ++t) {
    const auto& ti = p.tensors[t];
    if (!produced[t] && may_be_resident(ti.kind) && ti.inplace_of < 0) r.push_back(static_cast<std::int32_t>(t));
  }
  return r;
}

// The resident tensors with trainable or optimizer state (weights, optimizer_state): what must be
// bitwise equal between two runs of the same training.
inline std::vector<std::int32_t> state_tensors(const program& p) {
  std::vector<std::int32_t> r;
  for (auto t : resident_tensors(p)) {
    const auto k = p.tensors[static_cast<std::size_t>(t)].kind;
    if (k == tensor_kind::weight || k == tensor_kind::optimizer_state) r.push_back(t);
  }
  return r;
}

// The first values of every resident tensor, written through `data(t) -> std::span<float>`:
// the initialization eager_runner performs, for any runner.
template <class Runner>
void initialize_resident(const program& p, Runner& r) {
  for (auto t : resident_tensors(p)) fill_initial(p.tensors[static_cast<std::size_t>(t)].init, r.data(t));
}

// Concatenated values of the state tensors (weights, then optimizer state, in tensor id order).
template <class Runner>
std::vector<float> read_state(const program& p, Runner& r) {
  std::vector<float> v;
  for (auto t : state_tensors(p)) {
    auto s = r.data(t);
    v.insert(v.end(), s.begin(), s.end());
  }
  return v;
}

// The planner's view of a program: problem + the plan of a pipeline, at 64-byte alignment.
struct planned_program {
  problem prob;
  memory_plan plan;
};

template <stage S>
planned_program plan_program(const program& prog, const S& pipe, plan_context ctx = {}) {
  if (ctx.alignment < plan_alignment) ctx.alignment = plan_alignment;
  auto prob = make_problem(to_dataflow_graph(prog));
  auto mp = plan(prob, pipe, ctx);
  return {std::move(prob), std::move(mp)};
}

// Which nodes a pass runs: eager_runner's phase selection (phase `other` always runs).
struct phase_mask {
  bool forward = true, backward = true, update = true;
  [[nodiscard]] bool selects(op_phase ph) const noexcept {
    return (ph == op_phase::forward && forward) || (ph == op_phase::backward && backward) ||
           (ph == op_phase::update && update) || ph == op_phase::other;
  }
};

// The runtime::executor kernel for an ad::program: op id -> node, std::byte* -> float* in the
// node's argument order. Nodes outside the phase mask are skipped (a forward-only pass writes no
// gradient and updates no weight).
class plan_kernel {
 public:
  plan_kernel(const program& prog, const problem& pb) : prog_(&prog) {
    if (static_cast<std::size_t>(pb.num_ops()) != prog.nodes.size() ||
        static_cast<std::size_t>(pb.num_tensors()) != prog.tensors.size())
      throw error(errc::invalid_argument, "ad::plan_kernel: problem '" + pb.name() + "' has " + std::to_string(pb.num_ops()) +
                                              " ops and " + std::to_string(pb.num_tensors()) + " tensors, program '" + prog.name +
                                              "' has " + std::to_string(prog.nodes.size()) + " nodes and " +
                                              std::to_string(prog.tensors.size()) + " tensors");
    in_slot_.resize(prog.nodes.size());
    out_slot_.resize(prog.nodes.size());
    for (std::size_t i = 0; i < prog.nodes.size(); ++i) {
      const auto& nd = prog.nodes[i];
      const auto o = static_cast<op_id>(i);
      if (pb.op_name(o) != nd.name)
        throw error(errc::invalid_argument, "ad::plan_kernel: op " + std::to_string(i) + " of the problem is '" + pb.op_name(o) +
                                                "', node " + std::to_string(i) + " of the program is '" + nd.name + "'");
      auto slot_of = [&](std::span<const tensor_id> list, std::int32_t t, const char* what) {
        for (std::size_t j = 0; j < list.size(); ++j)
          if (list[j] == t) return static_cast<std::int32_t>(j);
        throw error(errc::invalid_argument, "ad::plan_kernel: node '" + nd.name + "' " + what + " tensor '" +
                                                prog.tensors[static_cast<std::size_t>(t)].name + "' which op " +
                                                std::to_string(i) + " of the problem does not list");
      };
      for (auto t : nd.inputs) in_slot_[i].push_back(slot_of(pb.inputs(o), t, "reads"));
      for (auto t : nd.outputs) out_slot_[i].push_back(slot_of(pb.outputs(o), t, "writes"));
    }
  }

  void set_phases(phase_mask m) noexcept { mask_ = m; }

  void operator()(op_id o, std::span<std::byte* const> in, std::span<std::byte* const> out, std::byte* ws) {
    const auto i = static_cast<std::size_t>(o);
    const auto& nd = prog_->nodes.at(i);
    if (!mask_.selects(nd.phase)) return;
    ins_.clear();
    outs_.clear();
    for (auto j : in_slot_[i]) ins_.push_back(reinterpret_cast<const float*>(in[static_cast<std::size_t>(j)]));
    for (auto j : out_slot_[i]) outs_.push_back(reinterpret_cast<float*>(out[static_cast<std::size_t>(j)]));
    run_node(nd, ins_.data(), outs_.data(), ws);
  }

 private:
  const program* prog_;
  std::vector<std::vector<std::int32_t>> in_slot_, out_slot_;
  phase_mask mask_{};
  std::vector<const float*> ins_;
  std::vector<float*> outs_;
};

struct planned_options {
  bool poison = false;       // NaN-fill the arena and every range the plan frees (runtime::executor)
  bool verify_plan = true;   // off only to show what a corrupted plan does (tests)
};

// eager_runner's interface, executed under a memory plan: data(t) is the arena view of a resident or
// output tensor, run() one pass over the plan's steps. Owns the program, problem and plan.
class planned_runner {
 public:
  planned_runner(program prog, problem pb, memory_plan mp, planned_options o = {})
      : s_(std::make_unique<state>(std::move(prog), std::move(pb), std::move(mp), o)) {
    initialize_resident(s_->prog, *this);
  }
  template <stage S>
  planned_runner(const program& prog, const S& pipe, planned_options o = {})
      : planned_runner(prog, plan_program(prog, pipe), o) {}
  planned_runner(const program& prog, planned_program pp, planned_options o = {})
      : planned_runner(prog, std::move(pp.prob), std::move(pp.plan), o) {}

  [[nodiscard]] const program& prog() const noexcept { return s_->prog; }
  [[nodiscard]] const problem& prob() const noexcept { return s_->prob; }
  [[nodiscard]] const memory_plan& plan() const noexcept { return s_->ex.plan(); }
  [[nodiscard]] const runtime::executor<>& executor() const noexcept { return s_->ex; }

  // The values of tensor t in the arena: resident tensors always, outputs after a run. Other
  // tensors share their bytes with others over the step and have no lasting value.
  [[nodiscard]] std::span<float> data(std::int32_t t) {
    const auto& pb = s_->prob;
    if (t < 0 || t >= pb.num_tensors())
      throw error(errc::invalid_argument, "ad::planned_runner: unknown tensor id " + std::to_string(t));
    const auto s = pb.storage_of(t);
    if (!pb.resident(s) && !pb.preexisting(s) && !pb.live_to_end(s))
      throw error(errc::runtime_error, "ad::planned_runner: tensor '" + pb.tensor_name(t) +
                                           "' is neither resident nor an output: the plan reuses its bytes");
    const auto n = s_->prog.tensors[static_cast<std::size_t>(t)].numel();
    if (n == 0) return {};
    return {reinterpret_cast<float*>(s_->ex.tensor_data(t)), static_cast<std::size_t>(n)};
  }
  [[nodiscard]] std::span<float> data(std::string_view name) { return data(s_->prog.find(name)); }

  // One pass over the plan's steps, running the nodes of the selected phases.
  runtime::run_stats run(bool forward = true, bool backward = true, bool update = true) {
    s_->kernel.set_phases({forward, backward, update});
    s_->last = s_->ex.run(s_->kernel);
    return s_->last;
  }
  runtime::run_stats run_forward() { return run(true, false, false); }
  [[nodiscard]] const runtime::run_stats& last_stats() const noexcept { return s_->last; }

 private:
  struct state {
    state(program p, problem b, memory_plan m, planned_options o)
        : prog((validate(p), std::move(p))),
          prob(std::move(b)),
          ex(prob, checked(std::move(m)), {.poison = o.poison, .verify_plan = o.verify_plan}),
          kernel(prog, prob) {}
    static memory_plan checked(memory_plan m) {
      if (m.alignment <= 0 || m.alignment % plan_alignment != 0)
        throw error(errc::invalid_argument, "ad::planned_runner: the plan's alignment is " + std::to_string(m.alignment) +
                                                " bytes; ad kernels need every tensor at a multiple of " +
                                                std::to_string(plan_alignment) + " (plan with .alignment = 64)");
      return m;
    }
    program prog;
    problem prob;
    runtime::executor<> ex;
    plan_kernel kernel;
    runtime::run_stats last{};
  };
  std::unique_ptr<state> s_;
};

// train_step / evaluate (ad/models/model.hpp) take a planned_runner as they take an eager_runner.

}  // namespace memplan::ad
