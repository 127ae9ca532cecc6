#pragma once
// Test support: an ad::program run the way a framework runs it, with every non-resident storage and
// every workspace allocated from a std::pmr::memory_resource when its op runs and returned after its
// last use. Resident storages (inputs, weights, optimizer state) are the runner's own, as in
// ad::eager_runner; outputs (tensor_kind::output) are kept and returned by release_outputs().
#include <cstdint>
#include <cstring>
#include <memory_resource>
#include <span>
#include <string>
#include <vector>

#include <memplan/ad/run_plan.hpp>
#include <memplan/ad/run_node.hpp>
#include <memplan/ad/tensor.hpp>
#include <memplan/runtime/trace.hpp>

namespace memplan::test {

class pmr_runner {
 public:
  explicit pmr_runner(const ad::program& p) : p_(p) {
    const auto n = p_.tensors.size();
    own_.resize(n);
    ptr_.assign(n, nullptr);
    resident_.assign(n, false);
    for (auto t : ad::resident_tensors(p_)) {
      resident_[static_cast<std::size_t>(t)] = true;
      own_[static_cast<std::size_t>(t)] = ad::float_buffer(p_.tensors[static_cast<std::size_t>(t)].numel());
      ptr_[static_cast<std::size_t>(t)] = own_[static_cast<std::size_t>(t)].data();
    }
    ad::initialize_resident(p_, *this);
  }

  [[nodiscard]] std::span<float> data(std::int32_t t) {
    const auto r = static_cast<std::size_t>(p_.storage_of(t));
    return {ptr_[r], static_cast<std::size_t>(p_.tensors[static_cast<std::size_t>(t)].numel())};
  }

  // Runs the nodes in `order` (node ids), allocating from mem. A recording resource gets each
  // allocation tagged with its node's name (MemoMalloc's operator scope, §3.1).
  void run(std::pmr::memory_resource& mem, const std::vector<std::int32_t>& order) {
    auto* rec = dynamic_cast<runtime::recording_resource*>(&mem);
    std::vector<std::int32_t> last(p_.tensors.size(), -1);
    for (std::size_t k = 0; k < order.size(); ++k) {
      const auto& nd = p_.nodes[static_cast<std::size_t>(order[k])];
      for (auto t : nd.inputs) last[static_cast<std::size_t>(p_.storage_of(t))] = static_cast<std::int32_t>(k);
      for (auto t : nd.outputs) last[static_cast<std::size_t>(p_.storage_of(t))] = static_cast<std::int32_t>(k);
    }
    std::vector<const float*> ins;
    std::vector<float*> outs;
    for (std::size_t k = 0; k < order.size(); ++k) {
      const auto& nd = p_.nodes[static_cast<std::size_t>(order[k])];
      if (rec) rec->set_scope(nd.name);
      ins.clear();
      outs.clear();
      for (auto t : nd.inputs) ins.push_back(ptr_[static_cast<std::size_t>(p_.storage_of(t))]);
      for (auto t : nd.outputs) {
        const auto r = static_cast<std::size_t>(p_.storage_of(t));
        if (!ptr_[r] && p_.tensors[r].bytes() > 0) {
          ptr_[r] = static_cast<float*>(mem.allocate(bytes(r), ad::tensor_alignment));
          std::span<float> s{ptr_[r], static_cast<std::size_t>(p_.tensors[r].numel())};
          for (auto& x : s) x = ad::poison_value();  // a kernel reading what it did not write shows NaN
        }
        outs.push_back(ptr_[r]);
      }
      const auto ws = ad::impl_workspace_bytes(nd, -1);
      void* w = ws > 0 ? mem.allocate(static_cast<std::size_t>(ws), ad::tensor_alignment) : nullptr;
      ad::run_node(nd, -1, ins.data(), outs.data(), w);
      if (w) mem.deallocate(w, static_cast<std::size_t>(ws), ad::tensor_alignment);
      auto release = [&](std::int32_t t) {
        const auto r = static_cast<std::size_t>(p_.storage_of(t));
        if (last[r] != static_cast<std::int32_t>(k) || resident_[r] || !ptr_[r] || p_.tensors[r].kind == tensor_kind::output) return;
        mem.deallocate(ptr_[r], bytes(r), ad::tensor_alignment);
        ptr_[r] = nullptr;
      };
      for (auto t : nd.inputs) release(t);
      for (auto t : nd.outputs) release(t);
    }
  }

  // Copies the outputs' values out and returns their memory to mem.
  std::vector<float> release_outputs(std::pmr::memory_resource& mem) {
    std::vector<float> v;
    for (std::size_t r = 0; r < ptr_.size(); ++r) {
      if (resident_[r] || !ptr_[r]) continue;
      v.insert(v.end(), ptr_[r], ptr_[r] + p_.tensors[r].numel());
      mem.deallocate(ptr_[r], bytes(r), ad::tensor_alignment);
      ptr_[r] = nullptr;
    }
    return v;
  }

 private:
  [[nodiscard]] std::size_t bytes(std::size_t r) const { return static_cast<std::size_t>(p_.tensors[r].bytes()); }

  const ad::program& p_;
  std::vector<ad::float_buffer> own_;
  std::vector<float*> ptr_;  // by storage (root tensor)
  std::vector<bool> resident_;
};

}  // namespace memplan::test
