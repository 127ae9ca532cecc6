#pragma once
// zoo::training_builder -- records a forward pass op by op and derives the rest of a training step the
// way PyTorch's autograd + optimizer would run it, so that the resulting graph looks like a real trace:
//  * forward ops in the order they were recorded;
//  * the loss, then a seed op (aten.ones_like) producing d(loss);
//  * one backward op per forward op (an autograd node), in reverse forward order, reading only the
//    gradients of its outputs and the tensors it saved (minimal dependencies), writing one gradient per
//    input that requires one (several outputs at once, like aten.convolution_backward);
//  * "pass-through" inputs (the operands of add, the `self` of addmm) receive the output's gradient
//    itself, as AddBackward does -- no allocation;
//  * a tensor consumed by several ops gets its partial gradients summed as they arrive (autograd's
//    InputBuffer): in place (aten.add_, inplace_of the running sum) when the running sum is owned by this
//    tensor, out of place (aten.add) when it is a pass-through gradient shared with another tensor;
//    weights shared over time steps (LSTM) accumulate in place into one gradient buffer (Chen §5.3);
//  * an SGD update per weight (aten.add_: w -= lr * dw) written in place into the weight (inplace_of),
//    after the whole backward pass, in parameter order (optimizer.step()).
// Sizes are bytes (float32 = 4 B per element unless an output says otherwise); costs are FLOPs.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/graph/dataflow_graph.hpp>

namespace memplan::zoo {

using shape_t = std::vector<std::int64_t>;
inline constexpr std::int64_t float32_bytes = 4;
inline constexpr std::int64_t int64_bytes = 8;

inline std::int64_t elements(const shape_t& s) {
  std::int64_t n = 1;
  for (auto d : s) {
    if (d <= 0) throw error(errc::invalid_argument, "zoo: non-positive dimension in a tensor shape");
    n *= d;
  }
  return n;
}

struct output_spec {
  std::string name;
  shape_t shape;
  std::int64_t elem_bytes = float32_bytes;
  bool differentiable = true;  // false: auxiliary outputs (batch-norm statistics, pooling indices, ...)
};

struct op_spec {
  std::string name;  // unique; the backward op is named name + "_bw"
  std::string type;  // e.g. "aten.convolution"
  std::vector<graph::tensor_ref> inputs;
  std::vector<output_spec> outputs;
  std::vector<std::size_t> save_inputs;   // indices of inputs the backward op reads
  std::vector<std::size_t> save_outputs;  // indices of outputs the backward op reads
  std::vector<std::size_t> passthrough;   // inputs whose gradient is output 0's gradient itself
  double flops = 0.0;
  double backward_flops = -1.0;           // < 0: 2 x flops (input and weight gradients)
  std::int64_t workspace = 0, backward_workspace = 0;
  std::string backward_type;              // empty: type + "_backward"
};

class training_builder {
 public:
  explicit training_builder(std::string name) : g_(std::move(name)) {}

  // A tensor that exists before the step and needs no gradient (data, labels).
  graph::tensor_ref input(const std::string& name, const shape_t& shape, std::int64_t elem_bytes = float32_bytes) {
    auto t = g_.add_tensor(name, elements(shape) * elem_bytes, tensor_kind::input, {shape, dtype(elem_bytes)});
    info_.push_back({false, false});
    return t;
  }
  // A trainable parameter: resident, receives a gradient and an SGD update.
  graph::tensor_ref weight(const std::string& name, const shape_t& shape) {
    auto t = g_.add_tensor(name, elements(shape) * float32_bytes, tensor_kind::weight, {shape, "float32"});
    info_.push_back({true, true});
    weights_.push_back(t);
    return t;
  }

  // Records a forward op; returns its outputs.
  std::vector<graph::tensor_ref> forward(op_spec spec) {
    if (finished_) throw error(errc::invalid_argument, "zoo: forward op '" + spec.name + "' recorded after finish()");
    if (spec.outputs.empty()) throw error(errc::invalid_argument, "zoo: op '" + spec.name + "' has no outputs");
    bool any_grad = false;
    for (auto t : spec.inputs) any_grad = any_grad || info(t).requires_grad;
    for (auto i : spec.save_inputs) check_index(spec, i, spec.inputs.size(), "saved input");
    for (auto i : spec.save_outputs) check_index(spec, i, spec.outputs.size(), "saved output");
    for (auto i : spec.passthrough) {
      check_index(spec, i, spec.inputs.size(), "pass-through input");
      const auto& o = spec.outputs[0];
      if (g_.tensor_bytes(spec.inputs[i]) != elements(o.shape) * o.elem_bytes)
        throw error(errc::invalid_argument, "zoo: op '" + spec.name + std::string("': pass-through input ").append(std::to_string(i)) +
                                                " and output 0 differ in size");
    }
    std::vector<graph::tensor_ref> outs;
    for (const auto& o : spec.outputs) {
      outs.push_back(g_.add_tensor(o.name, elements(o.shape) * o.elem_bytes, tensor_kind::activation,
                                   {o.shape, dtype(o.elem_bytes)}));
      info_.push_back({any_grad && o.differentiable, false});
    }
    g_.add_op(spec.name, spec.inputs, outs, {spec.type, op_phase::forward, spec.flops, spec.workspace});
    records_.push_back({std::move(spec), outs});
    return outs;
  }

  // The scalar loss (a forward output); derives backward and updates and returns the graph.
  graph::dataflow_graph finish(graph::tensor_ref loss) {
    if (finished_) throw error(errc::invalid_argument, "zoo: finish() called twice");
    finished_ = true;
    if (!info(loss).requires_grad)
      throw error(errc::invalid_argument, "zoo: the loss '" + *g_.tensor_name(loss) + "' does not depend on any weight");
    grad_.assign(g_.num_tensors(), {});
    // Seed: d(loss)/d(loss) = 1 (what loss.backward() allocates).
    auto seed = g_.add_tensor("d:" + *g_.tensor_name(loss), g_.tensor_bytes(loss), tensor_kind::gradient);
    g_.add_op("backward_seed", {loss}, {seed}, {"aten.ones_like", op_phase::backward, 1.0, 0});
    grad_[idx(loss)] = {seed, true, true};
    for (auto r = records_.rbegin(); r != records_.rend(); ++r) backward_of(*r);
    for (std::size_t k = 0; k < weights_.size(); ++k) {
      const auto w = weights_[k];
      const auto& gr = grad_[idx(w)];
      if (!gr.present) continue;  // a weight that does not reach the loss is not updated
      const std::string name = *g_.tensor_name(w);
      auto upd = g_.add_tensor(name + ":updated", g_.tensor_bytes(w), tensor_kind::weight, g_.tensor_attrs(w));
      g_.add_op("sgd:" + name, {w, gr.tensor}, {upd},
                {"aten.add_", op_phase::update, 2.0 * static_cast<double>(g_.tensor_bytes(w) / float32_bytes), 0});
      g_.set_inplace_of(upd, w);
    }
    return std::move(g_);
  }

  [[nodiscard]] const graph::dataflow_graph& graph() const { return g_; }
  [[nodiscard]] std::int64_t bytes(graph::tensor_ref t) const { return g_.tensor_bytes(t); }
  [[nodiscard]] const shape_t& shape(graph::tensor_ref t) const { return g_.tensor_attrs(t).shape; }
  [[nodiscard]] bool requires_grad(graph::tensor_ref t) const { return info(t).requires_grad; }

 private:
  struct tensor_info {
    bool requires_grad;
    bool is_weight;
  };
  struct record {
    op_spec spec;
    std::vector<graph::tensor_ref> outs;
  };
  struct grad_state {
    graph::tensor_ref tensor{};
    bool present = false;
    bool owned = false;  // produced for this tensor alone: may be accumulated into in place
  };

  static std::string dtype(std::int64_t elem_bytes) {
    return elem_bytes == 8 ? "int64" : elem_bytes == 4 ? "float32" : elem_bytes == 2 ? "float16" : "uint8";
  }
  static std::size_t idx(graph::tensor_ref t) { return static_cast<std::size_t>(t.index); }
  const tensor_info& info(graph::tensor_ref t) const {
    if (t.index < 0 || idx(t) >= info_.size()) throw error(errc::invalid_argument, "zoo: unknown tensor reference");
    return info_[idx(t)];
  }
  static void check_index(const op_spec& s, std::size_t i, std::size_t n, const char* what) {
    if (i >= n)
      throw error(errc::invalid_argument, "zoo: op '" + s.name + "': " + what + std::string(" index ").append(std::to_string(i)) + " out of range");
  }

  // Adds a (partial) gradient for tensor t, summing with what arrived before (autograd's InputBuffer).
  void accumulate(graph::tensor_ref t, graph::tensor_ref g, bool owned) {
    auto& cur = grad_[idx(t)];
    if (!cur.present) {
      cur = {g, true, owned};
      return;
    }
    const std::string tn = *g_.tensor_name(t);
    const auto k = ++acc_count_;
    const auto b = g_.tensor_bytes(t);
    auto sum = g_.add_tensor("d:" + tn + std::string("#acc").append(std::to_string(k)), b, tensor_kind::gradient);
    const auto flops = static_cast<double>(b / float32_bytes);
    if (cur.owned) {
      g_.add_op(std::string("grad_acc").append(std::to_string(k)) + ":" + tn, {cur.tensor, g}, {sum}, {"aten.add_", op_phase::backward, flops, 0});
      g_.set_inplace_of(sum, cur.tensor);
    } else {
      g_.add_op(std::string("grad_acc").append(std::to_string(k)) + ":" + tn, {cur.tensor, g}, {sum}, {"aten.add", op_phase::backward, flops, 0});
    }
    cur = {sum, true, true};
  }

  void backward_of(const record& r) {
    const auto& s = r.spec;
    std::vector<graph::tensor_ref> ins;  // gradients of outputs, then saved tensors (each once)
    auto add_in = [&](graph::tensor_ref t) {
      for (auto x : ins)
        if (x == t) return;
      ins.push_back(t);
    };
    bool any_out_grad = false;
    for (auto o : r.outs)
      if (grad_[idx(o)].present) { add_in(grad_[idx(o)].tensor); any_out_grad = true; }
    if (!any_out_grad) return;  // nothing downstream reaches the loss
    const auto g0 = grad_[idx(r.outs[0])];
    auto is_pass = [&](std::size_t i) {
      for (auto p : s.passthrough)
        if (p == i) return true;
      return false;
    };
    // Inputs that get a computed gradient (each distinct tensor once).
    std::vector<graph::tensor_ref> computed;
    for (std::size_t i = 0; i < s.inputs.size(); ++i) {
      const auto t = s.inputs[i];
      if (!info(t).requires_grad || is_pass(i)) continue;
      bool seen = false;
      for (auto c : computed) seen = seen || c == t;
      if (!seen) computed.push_back(t);
    }
    if (!computed.empty()) {
      for (auto i : s.save_inputs) add_in(s.inputs[i]);
      for (auto i : s.save_outputs) add_in(r.outs[i]);
      std::vector<graph::tensor_ref> outs;
      for (auto t : computed)
        outs.push_back(g_.add_tensor("d:" + *g_.tensor_name(t) + "@" + s.name, g_.tensor_bytes(t), tensor_kind::gradient,
                                     g_.tensor_attrs(t)));
      const double flops = s.backward_flops >= 0 ? s.backward_flops : 2.0 * s.flops;
      g_.add_op(s.name + "_bw", ins, outs,
                {s.backward_type.empty() ? s.type + "_backward" : s.backward_type, op_phase::backward, flops,
                 s.backward_workspace});
      for (std::size_t k = 0; k < computed.size(); ++k) accumulate(computed[k], outs[k], true);
    }
    if (g0.present)
      for (auto i : s.passthrough)
        if (info(s.inputs[i]).requires_grad) accumulate(s.inputs[i], g0.tensor, false);
  }

  graph::dataflow_graph g_;
  std::vector<tensor_info> info_;
  std::vector<graph::tensor_ref> weights_;
  std::vector<record> records_;
  std::vector<grad_state> grad_;
  std::size_t acc_count_ = 0;
  bool finished_ = false;
};

}  // namespace memplan::zoo
