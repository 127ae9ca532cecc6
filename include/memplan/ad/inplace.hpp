#pragma once
// In-place activations (MONeT Appendix D, "in-place operations"; Gist's ReLU in place): an
// elementwise activation y = f(x) whose input x is needed by nobody after it can write y into x's
// storage, and its gradient dx = f'(y) * dy into dy's storage. The kernels are elementwise (each
// element read before it is written, at the same index), so aliasing the output onto the input gives
// the same bits; the storage, and so the memory, of one of the two tensors disappears.
//
// Why a program rewrite and not an implementation a plan chooses: in-place execution changes which
// tensors share a storage (tensor_info::inplace_of, problem::inplace_of), and a problem's storages are
// fixed -- an implementation can change an op's cost and workspace only. So the choice is made here,
// on the program, where it is legal and never worse: these activations' gradients read the output,
// never the input (backward.hpp), so x has no reader left after f and keeping it apart would only
// cost memory. The planners then see the merged storage (and, like MONeT's constraint C.3, can no
// longer keep x once f has run: it is gone).
#include <cstddef>
#include <cstdint>
#include <vector>

#include <memplan/ad/program_types.hpp>
#include <memplan/ad/validate.hpp>
#include <memplan/base/kinds.hpp>

namespace memplan::ad {

struct inplace_options {
  bool forward = true;   // relu / sigmoid / tanh: y in place of x
  bool backward = true;  // relu_grad / sigmoid_grad / tanh_grad: dx in place of dy
};

// Which slot of node n's inputs its output may overwrite (-1: none), by kernel.
inline int inplace_slot(kernel k, const inplace_options& o) {
  switch (k) {
    case kernel::relu:
    case kernel::sigmoid:
    case kernel::tanh: return o.forward ? 0 : -1;
    case kernel::relu_grad:
    case kernel::sigmoid_grad:
    case kernel::tanh_grad: return o.backward ? 1 : -1;  // (y, dy) -> dx
    default: return -1;
  }
}

// The program with every eligible activation (and activation gradient) in place. Eligible: the input
// is an activation or gradient produced by a node (not a feed, weight or output), not read by any
// node after this one in the given order, not read twice by this node, of the same size, and the
// output is a plain activation/gradient not already in place. Tensor and node ids are unchanged
// (only inplace_of is set), so a model's feed/loss ids stay valid. Returns a validated program.
inline program inplace_activations(program p, const inplace_options& o = {}) {
  const auto nt = p.tensors.size();
  std::vector<std::int32_t> last_reader(nt, -1);
  std::vector<bool> produced(nt, false);
  for (std::size_t i = 0; i < p.nodes.size(); ++i) {
    for (auto t : p.nodes[i].inputs) last_reader[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(i);
    for (auto t : p.nodes[i].outputs) produced[static_cast<std::size_t>(t)] = true;
  }
  auto plain = [](tensor_kind k) { return k == tensor_kind::activation || k == tensor_kind::gradient; };
  for (std::size_t i = 0; i < p.nodes.size(); ++i) {
    const auto& n = p.nodes[i];
    const int slot = inplace_slot(n.kind, o);
    if (slot < 0) continue;
    const auto x = n.inputs[static_cast<std::size_t>(slot)];
    const auto y = n.outputs[0];
    const auto& xi = p.tensors[static_cast<std::size_t>(x)];
    auto& yi = p.tensors[static_cast<std::size_t>(y)];
    int reads = 0;
    for (auto t : n.inputs) reads += t == x;
    if (!produced[static_cast<std::size_t>(x)] || !plain(xi.kind) || !plain(yi.kind) || yi.inplace_of >= 0 || reads != 1 ||
        last_reader[static_cast<std::size_t>(x)] != static_cast<std::int32_t>(i) || xi.numel() != yi.numel() || x == p.loss)
      continue;
    yi.inplace_of = x;
  }
  validate(p);
  return p;
}

}  // namespace memplan::ad
