#pragma once
// ad::eager_runner: the reference ("eager") execution of an ad::program. Every storage gets its own
// 64-byte aligned allocation when its first tensor is produced and is freed right after its last
// use in the run; resident storages (inputs, weights, optimizer states) live as long as the runner.
// In-place outputs (optimizer updates) write into the storage of the tensor they replace.
// With `poison`, every fresh allocation and the workspace are filled with NaN first, so a kernel that
// reads memory it did not write shows up as NaN in the results. Each node runs the implementation
// chosen for it in `impl` (ad/implementations.hpp; default: every node its default), e.g. the
// choices of a memory plan (ad::implementation_choices, ad/run_plan.hpp).
#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <memplan/ad/implementations.hpp>
#include <memplan/ad/initializer.hpp>
#include <memplan/ad/program_types.hpp>
#include <memplan/ad/run_node.hpp>
#include <memplan/ad/tensor.hpp>
#include <memplan/ad/validate.hpp>
#include <memplan/base/error.hpp>
#include <memplan/base/kinds.hpp>

namespace memplan::ad {

struct eager_options {
  bool poison = false;
  std::vector<std::int32_t> impl{};  // per node: the implementation it runs (-1: the default); empty: all defaults
};

class eager_runner {
 public:
  explicit eager_runner(const program& p, eager_options o = {}) : p_(p), opt_(std::move(o)) {
    validate(p_);
    if (!opt_.impl.empty() && opt_.impl.size() != p_.nodes.size())
      throw error(errc::invalid_argument, "ad::eager_runner: " + std::to_string(opt_.impl.size()) + " implementation choices for " +
                                              std::to_string(p_.nodes.size()) + " nodes");
    for (std::size_t i = 0; i < opt_.impl.size(); ++i) (void)impl_workspace_bytes(p_.nodes[i], opt_.impl[i]);  // throws if unknown
    const auto n = p_.tensors.size();
    root_.resize(n);
    resident_.assign(n, false);
    keep_.assign(n, false);
    buf_.resize(n);
    std::vector<bool> produced(n, false);
    for (const auto& nd : p_.nodes)
      for (auto t : nd.outputs) produced[static_cast<std::size_t>(t)] = true;
    for (std::size_t t = 0; t < n; ++t) {
      root_[t] = p_.storage_of(static_cast<std::int32_t>(t));
      const auto& ti = p_.tensors[t];
      if (!produced[t] && may_be_resident(ti.kind) && ti.inplace_of < 0) {
        resident_[t] = true;
        buf_[t] = float_buffer(ti.numel());
        fill_initial(ti.init, buf_[t].span());
        resident_bytes_ += ti.bytes();
      }
      if (ti.kind == tensor_kind::output) keep_[t] = true;
    }
  }

  [[nodiscard]] const program& prog() const noexcept { return p_; }
  // The implementation node i runs (-1: its default).
  [[nodiscard]] std::int32_t implementation(std::size_t i) const { return opt_.impl.empty() ? -1 : opt_.impl.at(i); }

  // Keeps the storage of tensor t alive after a run so that it can be read (e.g. a gradient).
  void keep(std::int32_t t) { keep_.at(static_cast<std::size_t>(root(t))) = true; }

  // The values of tensor t: resident tensors always, others after a run that produced and kept them.
  [[nodiscard]] std::span<float> data(std::int32_t t) {
    const auto r = static_cast<std::size_t>(root(t));
    if (!buf_[r].data())
      throw error(errc::runtime_error, "ad::eager_runner: tensor '" + p_.tensors[static_cast<std::size_t>(t)].name +
                                           "' has no value now (not resident, not kept, or not computed yet)");
    return {buf_[r].data(), static_cast<std::size_t>(p_.tensors[static_cast<std::size_t>(t)].numel())};
  }
  [[nodiscard]] std::span<float> data(std::string_view name) { return data(p_.find(name)); }

  // Runs the nodes of the selected phases in the given order.
  void run(bool forward = true, bool backward = true, bool update = true) {
    auto selected = [&](const node& n) {
      return (n.phase == op_phase::forward && forward) || (n.phase == op_phase::backward && backward) ||
             (n.phase == op_phase::update && update) || n.phase == op_phase::other;
    };
    // Previous run's kept values go first: every run starts from the resident storages only.
    for (std::size_t t = 0; t < buf_.size(); ++t)
      if (!resident_[t] && buf_[t].data()) buf_[t] = float_buffer();
    live_bytes_ = resident_bytes_;
    peak_bytes_ = resident_bytes_;
    std::vector<std::int32_t> last(p_.tensors.size(), -1);
    for (std::size_t i = 0; i < p_.nodes.size(); ++i) {
      if (!selected(p_.nodes[i])) continue;
      for (auto t : p_.nodes[i].inputs) last[static_cast<std::size_t>(root(t))] = static_cast<std::int32_t>(i);
      for (auto t : p_.nodes[i].outputs) last[static_cast<std::size_t>(root(t))] = static_cast<std::int32_t>(i);
    }
    std::vector<const float*> ins;
    std::vector<float*> outs;
    for (std::size_t i = 0; i < p_.nodes.size(); ++i) {
      const auto& nd = p_.nodes[i];
      if (!selected(nd)) continue;
      ins.clear();
      outs.clear();
      for (auto t : nd.inputs) {
        const auto r = static_cast<std::size_t>(root(t));
        if (!buf_[r].data())
          throw error(errc::runtime_error, "ad::eager_runner: node '" + nd.name + "' reads '" +
                                               p_.tensors[static_cast<std::size_t>(t)].name + "' which was not computed in this run");
        ins.push_back(buf_[r].data());
      }
      for (auto t : nd.outputs) {
        const auto r = static_cast<std::size_t>(root(t));
        if (!buf_[r].data()) {
          buf_[r] = float_buffer(p_.tensors[r].numel());
          if (opt_.poison) buf_[r].fill(poison_value());
          live_bytes_ += p_.tensors[r].bytes();
        }
        outs.push_back(buf_[r].data());
      }
      const auto im = implementation(i);
      const auto ws_bytes = impl_workspace_bytes(nd, im);
      if (ws_bytes > 0) {
        const auto floats = (ws_bytes + 3) / 4;
        if (ws_.size() < floats) ws_ = float_buffer(floats);
        if (opt_.poison) ws_.fill(poison_value());
      }
      peak_bytes_ = std::max(peak_bytes_, live_bytes_ + ws_bytes);
      run_node(nd, im, ins.data(), outs.data(), ws_.data());
      auto release = [&](std::int32_t t) {
        const auto r = static_cast<std::size_t>(root(t));
        if (last[r] == static_cast<std::int32_t>(i) && !resident_[r] && !keep_[r] && buf_[r].data()) {
          buf_[r] = float_buffer();
          live_bytes_ -= p_.tensors[r].bytes();
        }
      };
      for (auto t : nd.inputs) release(t);
      for (auto t : nd.outputs) release(t);
    }
  }
  void run_forward() { run(true, false, false); }

  // Peak of live tensor bytes (+ the running node's workspace, of its chosen implementation) in the
  // last run, memory rule of graph-format.md with the given order.
  [[nodiscard]] std::int64_t peak_bytes() const noexcept { return peak_bytes_; }
  [[nodiscard]] std::int64_t resident_bytes() const noexcept { return resident_bytes_; }

 private:
  [[nodiscard]] std::int32_t root(std::int32_t t) const {
    if (t < 0 || static_cast<std::size_t>(t) >= root_.size())
      throw error(errc::invalid_argument, "ad::eager_runner: unknown tensor id " + std::to_string(t));
    return root_[static_cast<std::size_t>(t)];
  }

  program p_;
  eager_options opt_;
  std::vector<std::int32_t> root_;
  std::vector<bool> resident_, keep_;
  std::vector<float_buffer> buf_;
  float_buffer ws_;
  std::int64_t resident_bytes_ = 0, live_bytes_ = 0, peak_bytes_ = 0;
};

}  // namespace memplan::ad
