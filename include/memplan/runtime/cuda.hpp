#pragma once
// CUDA memory backend for runtime::arena / runtime::executor (CMake target memplan::cuda; the only
// memplan header that includes the CUDA runtime). One cudaMalloc for the whole arena; offload and
// prefetch are cudaMemcpy to / from host staging; poisoning writes the NaN pattern from a host buffer.
//
//   memplan::runtime::executor<memplan::runtime::cuda_backend> ex(problem, plan, {}, {/*device*/ 0});
//
// Kernels handed to the executor receive DEVICE pointers.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/runtime/arena.hpp>

namespace memplan::runtime {

namespace detail {
inline void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw error(errc::runtime_error, std::string("CUDA ") + what + ": " + cudaGetErrorString(e));
}
}  // namespace detail

// Number of CUDA devices visible (0 when there is no GPU or no driver).
inline int cuda_device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

struct cuda_backend {
  int device = 0;
  static constexpr const char* name() { return "cuda"; }

  [[nodiscard]] std::byte* allocate(std::size_t bytes, std::size_t /*alignment: cudaMalloc gives 256*/) const {
    detail::cuda_check(cudaSetDevice(device), "cudaSetDevice");
    void* p = nullptr;
    detail::cuda_check(cudaMalloc(&p, bytes == 0 ? 256 : bytes), "cudaMalloc");
    return static_cast<std::byte*>(p);
  }
  void deallocate(std::byte* p, std::size_t, std::size_t) const noexcept { (void)cudaFree(p); }
  void to_host(void* dst, const std::byte* src, std::size_t n) const {
    detail::cuda_check(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  }
  void from_host(std::byte* dst, const void* src, std::size_t n) const {
    detail::cuda_check(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
  void poison(std::byte* p, std::size_t n, std::size_t phase) const {
    // Build the pattern once on the host in chunks (phase-shifted like host_backend) and copy it.
    constexpr std::size_t chunk = std::size_t{1} << 20;
    std::vector<unsigned char> buf(std::min(n, chunk) + 4);
    unsigned char w[4];
    std::memcpy(w, &poison_word, 4);
    for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = w[(i + phase) % 4];
    for (std::size_t done = 0; done < n;) {
      const auto len = std::min(chunk, n - done);
      // keep the phase: chunk is a multiple of 4, so every chunk starts at the same phase
      detail::cuda_check(cudaMemcpy(p + done, buf.data(), len, cudaMemcpyHostToDevice), "cudaMemcpy poison");
      done += len;
    }
  }
};

static_assert(memory_backend<cuda_backend>);

}  // namespace memplan::runtime
