#pragma once
// ad::validate: everything an executor relies on in an ad::program, checked once.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <memplan/ad/kernel_facts.hpp>
#include <memplan/ad/program_types.hpp>
#include <memplan/base/error.hpp>
#include <memplan/base/kinds.hpp>

namespace memplan::ad {

// Checks everything an executor relies on; throws memplan::error(invalid_graph) naming the culprit:
// ids in range, unique names, one producer per non-resident tensor, producers before consumers in the
// given order, in-place outputs written after every other reader of their storage, attributes of the
// right kind, and every tensor as large as the kernel reads (outputs: exactly as large as it writes).
inline void validate(const program& p) {
  const auto nt = static_cast<std::int32_t>(p.tensors.size());
  auto tname = [&](std::int32_t t) { return "tensor '" + p.tensors[static_cast<std::size_t>(t)].name + "'"; };
  std::vector<std::int32_t> producer(static_cast<std::size_t>(nt), -1), last_reader(static_cast<std::size_t>(nt), -1);
  {
    std::vector<std::string> names;
    for (const auto& t : p.tensors) names.push_back(t.name);
    std::sort(names.begin(), names.end());
    if (auto it = std::adjacent_find(names.begin(), names.end()); it != names.end())
      throw error(errc::invalid_graph, "ad::program '" + p.name + "': duplicate tensor name '" + *it + "'");
    names.clear();
    for (const auto& n : p.nodes) names.push_back(n.name);
    std::sort(names.begin(), names.end());
    if (auto it = std::adjacent_find(names.begin(), names.end()); it != names.end())
      throw error(errc::invalid_graph, "ad::program '" + p.name + "': duplicate node name '" + *it + "'");
  }
  for (std::int32_t t = 0; t < nt; ++t) {
    const auto& ti = p.tensors[static_cast<std::size_t>(t)];
    for (auto d : ti.shape)
      if (d < 0) throw error(errc::invalid_graph, "ad::program: " + tname(t) + " has a negative dimension");
    if (ti.inplace_of >= nt || ti.inplace_of == t)
      throw error(errc::invalid_graph, "ad::program: " + tname(t) + " is inplace_of an invalid tensor");
    if (ti.inplace_of >= 0 && p.tensors[static_cast<std::size_t>(ti.inplace_of)].numel() != ti.numel())
      throw error(errc::invalid_graph, "ad::program: " + tname(t) + " is in place of a tensor of another size");
  }
  for (std::size_t i = 0; i < p.nodes.size(); ++i) {
    const auto& n = p.nodes[i];
    const auto who = "ad::program '" + p.name + "': node '" + n.name + "' (" + std::string(to_string(n.kind)) + ")";
    const auto e = extents(n);
    if (e.in.size() != n.inputs.size() || e.out.size() != n.outputs.size())
      throw error(errc::invalid_graph, who + " has " + std::to_string(n.inputs.size()) + " inputs and " +
                                           std::to_string(n.outputs.size()) + " outputs, its kernel takes " +
                                           std::to_string(e.in.size()) + " and " + std::to_string(e.out.size()));
    if (n.workspace_bytes < workspace_bytes(n.kind, n.attr))
      throw error(errc::invalid_graph, who + " declares less workspace than its kernel needs");
    for (std::size_t k = 0; k < n.inputs.size(); ++k) {
      const auto t = n.inputs[k];
      if (t < 0 || t >= nt) throw error(errc::invalid_graph, who + ": input " + std::to_string(k) + " is not a tensor id");
      const auto& ti = p.tensors[static_cast<std::size_t>(t)];
      if (producer[static_cast<std::size_t>(t)] < 0 && !may_be_resident(ti.kind))
        throw error(errc::invalid_graph, who + " reads " + tname(t) + " before any node produced it");
      if (e.in[k] > ti.numel())
        throw error(errc::invalid_graph, who + " reads " + std::to_string(e.in[k]) + " floats of " + tname(t) + " which has " +
                                             std::to_string(ti.numel()));
      last_reader[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(i);
    }
    for (std::size_t k = 0; k < n.outputs.size(); ++k) {
      const auto t = n.outputs[k];
      if (t < 0 || t >= nt) throw error(errc::invalid_graph, who + ": output " + std::to_string(k) + " is not a tensor id");
      const auto& ti = p.tensors[static_cast<std::size_t>(t)];
      if (producer[static_cast<std::size_t>(t)] >= 0)
        throw error(errc::invalid_graph, who + " produces " + tname(t) + " which node '" +
                                             p.nodes[static_cast<std::size_t>(producer[static_cast<std::size_t>(t)])].name +
                                             "' already produced");
      if (e.out[k] != ti.numel())
        throw error(errc::invalid_graph, who + " writes " + std::to_string(e.out[k]) + " floats into " + tname(t) +
                                             " which has " + std::to_string(ti.numel()));
      producer[static_cast<std::size_t>(t)] = static_cast<std::int32_t>(i);
    }
  }
  // In-place rule (graph-format.md): the writer of an in-place tensor runs after every other reader of
  // the tensor it overwrites.
  for (std::int32_t t = 0; t < nt; ++t) {
    const auto base = p.tensors[static_cast<std::size_t>(t)].inplace_of;
    if (base < 0) continue;
    const auto w = producer[static_cast<std::size_t>(t)];
    if (w < 0) throw error(errc::invalid_graph, "ad::program: in-place " + tname(t) + " has no producer");
    for (std::size_t i = static_cast<std::size_t>(w) + 1; i < p.nodes.size(); ++i)
      for (auto in : p.nodes[i].inputs)
        if (in == base)
          throw error(errc::invalid_graph, "ad::program: node '" + p.nodes[i].name + "' reads " + tname(base) +
                                               " after node '" + p.nodes[static_cast<std::size_t>(w)].name +
                                               "' overwrote it in place");
  }
  for (std::int32_t t = 0; t < nt; ++t) {
    const auto& ti = p.tensors[static_cast<std::size_t>(t)];
    if (producer[static_cast<std::size_t>(t)] < 0 && !may_be_resident(ti.kind) && last_reader[static_cast<std::size_t>(t)] < 0 &&
        ti.kind != tensor_kind::control)
      throw error(errc::invalid_graph, "ad::program: " + tname(t) + " is neither resident nor produced");
  }
  if (p.loss >= nt) throw error(errc::invalid_graph, "ad::program: loss is not a tensor id");
}

}  // namespace memplan::ad
