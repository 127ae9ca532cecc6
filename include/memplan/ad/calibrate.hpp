#pragma once
// ad::calibrate: the cost of every node's implementations measured on the machine that runs it
// (the fallback without timing is flop_costs, ad/costs.hpp).
//
//   calibrate(p)    measured on the machine that runs it, in seconds: every node's kernel, each of its
//                   implementations, on the node's own shapes over scratch buffers (random values;
//                   zeros in the slots that carry indices: labels, token ids, argmax), the median of
//                   `repeats` samples, each sample repeating the kernel until it lasts at least
//                   `min_sample_seconds`. The time limit is checked after each node: the nodes left when
//                   `time_limit_s` has run out are estimated from their FLOPs at the seconds per
//                   FLOP the measured defaults showed (the fallback), and flagged not measured. A
//                   time limit <= 0 measures nothing: the result is flop_costs(p).
//
// Either table is consistent within itself (one unit for every op, as the planners expect).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <memplan/ad/costs.hpp>
#include <memplan/ad/implementations.hpp>
#include <memplan/ad/kernel_facts.hpp>
#include <memplan/ad/program_types.hpp>
#include <memplan/ad/run_node.hpp>
#include <memplan/ad/tensor.hpp>

namespace memplan::ad {

struct calibration_options {
  int repeats = 5;                  // timed samples per (node, implementation); the median is kept
  double min_sample_seconds = 2e-4; // one sample repeats the kernel until it lasts this long
  double time_limit_s = 20.0;       // for the whole program; nodes not reached by then are estimated (<= 0: none timed)
  std::uint64_t seed = 1;           // of the scratch inputs
};

namespace detail {
// Input slots that carry integers (class labels, token ids, max-pool argmax): filled with zeros,
// which is a valid index for every kernel.
inline bool index_slot(kernel k, std::size_t slot) {
  switch (k) {
    case kernel::softmax_xent:
    case kernel::softmax_xent_grad:
    case kernel::embedding: return slot == 1;
    case kernel::embedding_grad:
    case kernel::max_pool2d_grad: return slot == 0;
    default: return false;
  }
}

// Scratch operands of one node: every input and output slot its own 64-byte aligned buffer.
struct node_buffers {
  std::vector<float_buffer> in, out;
  std::vector<const float*> in_ptr;
  std::vector<float*> out_ptr;
  node_buffers(const program& p, const node& n, std::uint64_t seed) {
    rng g(seed);
    for (std::size_t k = 0; k < n.inputs.size(); ++k) {
      in.emplace_back(std::max<std::int64_t>(p.tensors[static_cast<std::size_t>(n.inputs[k])].numel(), 1));
      for (auto& v : in.back().span()) v = index_slot(n.kind, k) ? 0.0f : static_cast<float>(g.uniform(-1.0, 1.0));
      in_ptr.push_back(in.back().data());
    }
    for (auto t : n.outputs) {
      out.emplace_back(std::max<std::int64_t>(p.tensors[static_cast<std::size_t>(t)].numel(), 1));
      out.back().fill(0.0f);
      out_ptr.push_back(out.back().data());
    }
  }
};

// Seconds per call of one implementation: the median of `repeats` samples.
inline double time_kernel(const node& n, std::int32_t impl, node_buffers& b, float* ws, const calibration_options& o) {
  using clock = std::chrono::steady_clock;
  auto call = [&] { run_node(n, impl, b.in_ptr.data(), b.out_ptr.data(), ws); };
  call();  // warm-up: caches, page faults
  auto t0 = clock::now();
  call();
  const double once = std::chrono::duration<double>(clock::now() - t0).count();
  const auto reps = once >= o.min_sample_seconds ? 1 : static_cast<std::int64_t>(o.min_sample_seconds / std::max(once, 1e-9)) + 1;
  std::vector<double> samples;
  for (int r = 0; r < std::max(1, o.repeats); ++r) {
    t0 = clock::now();
    for (std::int64_t i = 0; i < reps; ++i) call();
    samples.push_back(std::chrono::duration<double>(clock::now() - t0).count() / static_cast<double>(reps));
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}
}  // namespace detail

// Measures every implementation of every node (see the top of this file).
inline cost_table calibrate(const program& p, const calibration_options& o = {}) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto t = flop_costs(p);
  t.in = cost_table::unit::seconds;
  double measured_seconds = 0.0, measured_flops = 0.0;
  float_buffer ws;
  for (std::size_t i = 0; i < p.nodes.size() && o.time_limit_s > 0.0; ++i) {
    const auto& n = p.nodes[i];
    detail::node_buffers b(p, n, o.seed + i);
    for (std::int32_t k = 0; k < implementation_count(n.kind); ++k) {
      const auto floats = (impl_workspace_bytes(n, k) + 3) / 4;
      if (static_cast<std::int64_t>(ws.size()) < floats) ws = float_buffer(floats);
      t.cost[i][static_cast<std::size_t>(k)] = detail::time_kernel(n, k, b, ws.data(), o);
    }
    t.measured[i] = 1;
    measured_seconds += t.cost[i][0];
    measured_flops += n.flops;
    if (std::chrono::duration<double>(clock::now() - start).count() > o.time_limit_s) break;
  }
  if (measured_flops <= 0.0) return flop_costs(p);
  const double seconds_per_flop = measured_seconds / measured_flops;
  for (std::size_t i = 0; i < p.nodes.size(); ++i)
    if (!t.measured[i])
      for (auto& c : t.cost[i]) c *= seconds_per_flop;  // flops * factor -> seconds
  return t;
}

}  // namespace memplan::ad
