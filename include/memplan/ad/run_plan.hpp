#pragma once
// Running an ad::program under a memory plan: the bridge between ad/ and runtime/.
//
//   auto m = ad::models::cnn({.batch = 32}, ad::adam{0.01f});
//   ad::planned_runner r(m.step, memplan::schedule::default_scheduler{} | memplan::place::default_placer{});
//   ad::data_stream<ad::shapes16> data(ad::shapes16{}, 1001);
//   for (int s = 0; s < 80; ++s) ad::train_step(r, m, data);   // same numbers as eager_runner, bit for bit
//
// Every tensor of the program lives at its planned offset in ONE arena (runtime::executor); the
// adapter plan_kernel maps op id -> node (make_problem / to_dataflow_graph keep op i == node i, tensor
// i == tensor i) and hands run_node its float pointers in the node's own argument order, undoing the
// problem's de-duplication of a tensor read twice by one node, and runs the implementation the plan
// chose for the step (step.impl, an index into problem::implementations(op), mapped by name onto the
// node's implementations; -1: the default). An eager run with the same choices
// (eager_options::impl = implementation_choices(...)) gives the same bits. Resident tensors (inputs, weights, optimizer
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

#include <memplan/ad/costs.hpp>
#include <memplan/ad/graph.hpp>
#include <memplan/ad/implementations.hpp>
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

// The planner's view of a program: problem (with the nodes' implementations, costed by `costs`) +
// the plan of a pipeline, at 64-byte alignment.
struct planned_program {
  problem prob;
  memory_plan plan;
};

template <stage S>
planned_program plan_program(const program& prog, const S& pipe, plan_context ctx, const cost_table& costs) {
  if (ctx.alignment < plan_alignment) ctx.alignment = plan_alignment;
  auto prob = make_problem(prog, costs);
  auto mp = plan(prob, pipe, ctx);
  return {std::move(prob), std::move(mp)};
}
template <stage S>
planned_program plan_program(const program& prog, const S& pipe, plan_context ctx = {}) {
  return plan_program(prog, pipe, std::move(ctx), flop_costs(prog));
}

// For every op of a problem of `prog`: problem implementation index -> the node's implementation
// index (implementations.hpp), matched by name. Throws errc::invalid_argument when the problem lists
// an implementation the node does not have, or gives an implementation (or the op itself) less
// workspace than the node's kernel writes.
inline std::vector<std::vector<std::int32_t>> implementation_map(const program& prog, const problem& pb) {
  std::vector<std::vector<std::int32_t>> map(prog.nodes.size());
  for (std::size_t i = 0; i < prog.nodes.size() && i < static_cast<std::size_t>(pb.num_ops()); ++i) {
    const auto& nd = prog.nodes[i];
    const auto o = static_cast<op_id>(i);
    if (pb.workspace(o) < workspace_bytes(nd.kind, nd.attr))
      throw error(errc::invalid_argument, "ad: op '" + pb.op_name(o) + "' has " + std::to_string(pb.workspace(o)) +
                                              " bytes of workspace, its kernel writes " +
                                              std::to_string(workspace_bytes(nd.kind, nd.attr)));
    for (const auto& im : pb.implementations(o)) {
      const auto k = find_implementation(nd, im.name);
      if (k < 0)
        throw error(errc::invalid_argument, "ad: op '" + pb.op_name(o) + "' lists implementation '" + im.name + "', node '" +
                                                nd.name + "' (" + std::string(to_string(nd.kind)) + ") has none of that name");
      if (im.workspace < impl_workspace_bytes(nd, k))
        throw error(errc::invalid_argument, "ad: implementation '" + im.name + "' of op '" + pb.op_name(o) + "' has " +
                                                std::to_string(im.workspace) + " bytes of workspace, its kernel writes " +
                                                std::to_string(impl_workspace_bytes(nd, k)));
      map[i].push_back(k);
    }
  }
  return map;
}

// The implementation every node runs under a plan, as node implementation indices (-1: default) for
// eager_options::impl: the one of its op's compute step. A plan that runs one op with two different
// implementations (a recompute step choosing another) cannot be mirrored by one eager run: throws
// errc::invalid_argument.
inline std::vector<std::int32_t> implementation_choices(const program& prog, const problem& pb, const memory_plan& mp) {
  const auto map = implementation_map(prog, pb);
  std::vector<std::int32_t> choice(prog.nodes.size(), -1);
  std::vector<bool> seen(prog.nodes.size(), false);
  auto normal = [](std::int32_t k) { return k < 0 ? impl::standard : k; };
  for (const auto& st : mp.steps) {
    if (!runs_op(st.kind)) continue;
    const auto i = static_cast<std::size_t>(st.op());
    if (i >= prog.nodes.size()) throw error(errc::invalid_argument, "ad::implementation_choices: the plan runs an op the program does not have");
    const auto k = st.impl < 0 ? -1 : map[i].at(static_cast<std::size_t>(st.impl));
    if (seen[i] && normal(choice[i]) != normal(k))
      throw error(errc::invalid_argument, "ad::implementation_choices: the plan runs node '" + prog.nodes[i].name +
                                              "' with implementations " + std::to_string(normal(choice[i])) + " and " +
                                              std::to_string(normal(k)) + "; one eager run cannot mirror that");
    if (!seen[i]) choice[i] = k;
    seen[i] = true;
  }
  return choice;
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
    impl_ = implementation_map(prog, pb);
  }

  void set_phases(phase_mask m) noexcept { mask_ = m; }

  // Runs op o with the implementation the plan chose (impl: an index into problem::implementations(o),
  // -1: the default).
  void operator()(op_id o, std::int32_t impl, std::span<std::byte* const> in, std::span<std::byte* const> out, std::byte* ws) {
    const auto i = static_cast<std::size_t>(o);
    const auto& nd = prog_->nodes.at(i);
    if (!mask_.selects(nd.phase)) return;
    ins_.clear();
    outs_.clear();
    for (auto j : in_slot_[i]) ins_.push_back(reinterpret_cast<const float*>(in[static_cast<std::size_t>(j)]));
    for (auto j : out_slot_[i]) outs_.push_back(reinterpret_cast<float*>(out[static_cast<std::size_t>(j)]));
    run_node(nd, impl < 0 ? -1 : impl_[i].at(static_cast<std::size_t>(impl)), ins_.data(), outs_.data(), ws);
  }
  // The default implementation (executors that pass no choice, e.g. runtime::eager_executor).
  void operator()(op_id o, std::span<std::byte* const> in, std::span<std::byte* const> out, std::byte* ws) {
    (*this)(o, -1, in, out, ws);
  }

 private:
  const program* prog_;
  std::vector<std::vector<std::int32_t>> in_slot_, out_slot_;
  std::vector<std::vector<std::int32_t>> impl_;  // per op: problem implementation -> node implementation
  phase_mask mask_{};
  std::vector<const float*> ins_;
  std::vector<float*> outs_;
};

struct planned_options {
  bool poison = false;       // NaN-fill the arena and every range the plan frees (runtime::executor)
  bool verify_plan = true;   // off only to show what a corrupted plan does (tests)
  bool copy_thread = true;   // offload / prefetch copies overlap compute (runtime::executor_options)
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
  // The implementation each node runs under this plan (for eager_options::impl).
  [[nodiscard]] std::vector<std::int32_t> implementation_choices() const {
    return ad::implementation_choices(s_->prog, s_->prob, s_->ex.plan());
  }

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
          ex(prob, checked(std::move(m)), {.poison = o.poison, .verify_plan = o.verify_plan, .copy_thread = o.copy_thread}),
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
