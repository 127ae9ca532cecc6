#pragma once
// The implementations a node can run with (MONeT §4: each operator has several implementations
// that trade workspace memory for time). Index 0 is the default -- the kernel of ops.hpp, with the
// node's own workspace_bytes -- and -1 means the default too; the others are in impl_kernels.hpp:
//
//   kernel                                   0 (default)     1                  2
//   matmul                                   eigen           packed             loop
//   conv2d, conv2d_grad_weight               im2col_gemm     im2col_tiled       direct
//   conv2d_grad_input                        gemm_col2im     tiled_col2im       direct
//   every other kernel                       default
//
// Each implementation's workspace is exact: the bytes its kernel writes and reads, no more (tested by
// poisoning the bytes past it). Its cost is measured on the machine by ad/calibrate.hpp; without a
// calibration, cost = flops(node) * flop_factor, a FLOP-based estimate whose factors were measured
// on the development machine (docs/autodiff.md, "Implementations").
#include <cstdint>
#include <string>
#include <vector>

#include <memplan/ad/impl_kernels.hpp>
#include <memplan/ad/kernel_facts.hpp>
#include <memplan/ad/ops.hpp>
#include <memplan/ad/program_types.hpp>
#include <memplan/base/error.hpp>

namespace memplan::ad {

struct impl_info {
  std::string name;
  std::int64_t workspace_bytes = 0;
  double flop_factor = 1.0;  // FLOP-based cost estimate: flops(node) * flop_factor
};

// Implementation indices of the kernels that have alternatives.
namespace impl {
inline constexpr std::int32_t standard = 0;  // the default of every kernel
inline constexpr std::int32_t matmul_packed = 1, matmul_loop = 2;
inline constexpr std::int32_t conv_tiled = 1, conv_direct = 2;  // conv2d and its two gradients
}  // namespace impl

// How many implementations a kernel has (1: the default only).
inline constexpr std::int32_t implementation_count(kernel k) noexcept {
  switch (k) {
    case kernel::matmul:
    case kernel::conv2d:
    case kernel::conv2d_grad_input:
    case kernel::conv2d_grad_weight: return 3;
    default: return 1;
  }
}

// FLOP factors of the fallback cost estimate: the time of the implementation over the default's on
// the same node, median over every node of the MLP (batch 64), CNN (batch 32) and transformer
// (batch 32), three calibrations, g++ 12 -O2 on the 2-core development machine (docs/autodiff.md).
// The default's factor is 1: without calibration an op costs its FLOPs.
inline constexpr double matmul_packed_flop_factor = 2.0, matmul_loop_flop_factor = 5.0;
inline constexpr double conv_tiled_flop_factor = 1.4, conv_direct_flop_factor = 3.0;

namespace detail {
inline const char* default_impl_name(kernel k) {
  switch (k) {
    case kernel::matmul: return "eigen";
    case kernel::conv2d:
    case kernel::conv2d_grad_weight: return "im2col_gemm";
    case kernel::conv2d_grad_input: return "gemm_col2im";
    default: return "default";
  }
}
}  // namespace detail

// Workspace bytes of implementation `impl` of node n (-1 and 0: the node's own workspace_bytes).
inline std::int64_t impl_workspace_bytes(const node& n, std::int32_t impl) {
  if (impl < -1 || impl >= implementation_count(n.kind))
    throw error(errc::invalid_argument, "ad: node '" + n.name + "' (" + std::string(to_string(n.kind)) + ") has no implementation " +
                                            std::to_string(impl) + " (it has " + std::to_string(implementation_count(n.kind)) + ")");
  if (impl <= impl::standard) return n.workspace_bytes;
  constexpr auto f = static_cast<std::int64_t>(sizeof(float));
  if (n.kind == kernel::matmul) return impl == impl::matmul_packed ? packed_blocking(detail::attr_as<matmul_attr>(n)).workspace_floats() * f : 0;
  return impl == impl::conv_tiled ? conv_tiled_workspace_floats(detail::attr_as<conv_attr>(n)) * f : 0;  // convolutions
}

// Every implementation of node n, the default first.
inline std::vector<impl_info> implementations(const node& n) {
  std::vector<impl_info> v{{detail::default_impl_name(n.kind), n.workspace_bytes, 1.0}};
  if (n.kind == kernel::matmul) {
    v.push_back({"packed", impl_workspace_bytes(n, impl::matmul_packed), matmul_packed_flop_factor});
    v.push_back({"loop", impl_workspace_bytes(n, impl::matmul_loop), matmul_loop_flop_factor});
  } else if (implementation_count(n.kind) == 3) {
    v.push_back({n.kind == kernel::conv2d_grad_input ? "tiled_col2im" : "im2col_tiled", impl_workspace_bytes(n, impl::conv_tiled),
                 conv_tiled_flop_factor});
    v.push_back({"direct", impl_workspace_bytes(n, impl::conv_direct), conv_direct_flop_factor});
  }
  return v;
}

// The index of the implementation of node n called `name` (-1: none).
inline std::int32_t find_implementation(const node& n, const std::string& name) {
  const auto v = implementations(n);
  for (std::size_t k = 0; k < v.size(); ++k)
    if (v[k].name == name) return static_cast<std::int32_t>(k);
  return -1;
}

}  // namespace memplan::ad
