#pragma once
// CUDA memory backend for runtime::arena / runtime::executor (CMake target memplan::cuda; the only
// memplan header that includes the CUDA runtime). One cudaMalloc for the whole arena. Offload and
// prefetch copies run on a copy stream of their own (non-blocking, one per device) between the arena
// and page-locked host staging (allocate_host: cudaMallocHost), so that they are DMA transfers that
// overlap the kernels launched after them. Each copy first waits, through an event, for the work
// already submitted to `compute_stream` (the stream the kernels run on; by default the legacy default
// stream): a kernel call returns before the kernel has run, so the value an offload reads, or the
// bytes a prefetch overwrites, may still be in use on the device. The call returns once the copy has
// completed (the executor's copy thread makes it asynchronous to the host). Poisoning writes the NaN
// pattern from a host buffer.
//
//   memplan::runtime::executor<memplan::runtime::cuda_backend> ex(problem, plan, {}, {/*device*/ 0});
//
// Kernels handed to the executor receive DEVICE pointers.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/runtime/arena.hpp>

namespace memplan::runtime {

namespace detail {
inline void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw error(errc::runtime_error, std::string("CUDA ") + what + ": " + cudaGetErrorString(e));
}

// The copy stream of `device`: non-blocking (no implicit ordering with the legacy default stream, so
// copies overlap kernels), created on first use, one per device for the whole process. Never destroyed:
// destroying a stream during static destruction, after the CUDA runtime may have shut down, is an error.
inline cudaStream_t copy_stream(int device) {
  static std::mutex m;
  static std::map<int, cudaStream_t> streams;
  const std::lock_guard<std::mutex> lock(m);
  if (const auto it = streams.find(device); it != streams.end()) return it->second;
  cudaStream_t s = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  streams.emplace(device, s);
  return s;
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
  // The stream the kernels run on: every copy waits for the work submitted to it before it starts.
  cudaStream_t compute_stream = cudaStreamLegacy;
  static constexpr const char* name() { return "cuda"; }

  [[nodiscard]] std::byte* allocate(std::size_t bytes, std::size_t /*alignment: cudaMalloc gives 256*/) const {
    detail::cuda_check(cudaSetDevice(device), "cudaSetDevice");
    void* p = nullptr;
    detail::cuda_check(cudaMalloc(&p, bytes == 0 ? 256 : bytes), "cudaMalloc");
    return static_cast<std::byte*>(p);
  }
  void deallocate(std::byte* p, std::size_t, std::size_t) const noexcept { (void)cudaFree(p); }
  void to_host(void* dst, const std::byte* src, std::size_t n) const { copy(dst, src, n, cudaMemcpyDeviceToHost, "to host"); }
  void from_host(std::byte* dst, const void* src, std::size_t n) const { copy(dst, src, n, cudaMemcpyHostToDevice, "to device"); }
  // Page-locked staging for offloaded values (memplan::runtime::host_staging_backend).
  [[nodiscard]] std::byte* allocate_host(std::size_t bytes) const {
    detail::cuda_check(cudaSetDevice(device), "cudaSetDevice");
    void* p = nullptr;
    detail::cuda_check(cudaMallocHost(&p, bytes == 0 ? 1 : bytes), "cudaMallocHost");
    return static_cast<std::byte*>(p);
  }
  void deallocate_host(std::byte* p, std::size_t) const noexcept { (void)cudaFreeHost(p); }
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

 private:
  // On this device's copy stream, after the work submitted to compute_stream so far; returns when done.
  // The calling thread (the executor's copy thread) gets the device set first: it is per thread.
  void copy(void* dst, const void* src, std::size_t n, cudaMemcpyKind kind, const char* what) const {
    detail::cuda_check(cudaSetDevice(device), "cudaSetDevice");
    const auto stream = detail::copy_stream(device);
    cudaEvent_t submitted = nullptr;
    detail::cuda_check(cudaEventCreateWithFlags(&submitted, cudaEventDisableTiming), "cudaEventCreate");
    struct destroy {
      cudaEvent_t e;
      ~destroy() { (void)cudaEventDestroy(e); }
    } guard{submitted};
    detail::cuda_check(cudaEventRecord(submitted, compute_stream), "cudaEventRecord");
    detail::cuda_check(cudaStreamWaitEvent(stream, submitted, 0), "cudaStreamWaitEvent");
    detail::cuda_check(cudaMemcpyAsync(dst, src, n, kind, stream), (std::string("cudaMemcpyAsync ") + what).c_str());
    detail::cuda_check(cudaStreamSynchronize(stream), (std::string("cudaStreamSynchronize ") + what).c_str());
  }
};

static_assert(host_staging_backend<cuda_backend>);

}  // namespace memplan::runtime
