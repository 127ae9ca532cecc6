#pragma once
// ad::step_builder: appends tensors and nodes to an ad::program with the node facts (workspace,
// FLOPs) filled in. Shared by the tape (forward recording), the backward construction and the
// optimizers (update nodes).
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <memplan/ad/initializer.hpp>
#include <memplan/ad/kernel_facts.hpp>
#include <memplan/ad/program_types.hpp>
#include <memplan/ad/tensor.hpp>
#include <memplan/base/kinds.hpp>

namespace memplan::ad {

class step_builder {
 public:
  explicit step_builder(program& p) : p_(p) {}

  std::int32_t add_tensor(std::string name, shape_t shape, tensor_kind kind, initializer init = {},
                          std::int32_t inplace_of = -1) {
    p_.tensors.push_back({std::move(name), std::move(shape), kind, inplace_of, init});
    return static_cast<std::int32_t>(p_.tensors.size() - 1);
  }
  std::int32_t add_node(std::string name, kernel k, node_attr attr, std::vector<std::int32_t> ins,
                        std::vector<std::int32_t> outs, op_phase phase) {
    node n;
    n.name = std::move(name);
    n.kind = k;
    n.workspace_bytes = workspace_bytes(k, attr);
    n.flops = flops(k, attr);
    n.attr = std::move(attr);
    n.inputs = std::move(ins);
    n.outputs = std::move(outs);
    n.phase = phase;
    p_.nodes.push_back(std::move(n));
    return static_cast<std::int32_t>(p_.nodes.size() - 1);
  }
  [[nodiscard]] const tensor_info& tensor(std::int32_t t) const { return p_.tensors.at(static_cast<std::size_t>(t)); }
  [[nodiscard]] program& prog() { return p_; }

 private:
  program& p_;
};

}  // namespace memplan::ad
