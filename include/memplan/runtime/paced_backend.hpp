#pragma once
// A host memory backend whose offload / prefetch copies last bytes / bandwidth: a device-host link
// emulated on a CPU, to measure an offload plan's step time against its simulated makespan
// (bench_runtime, examples/offload_chain.cpp). Each copy is a memcpy, then the copying thread waits
// until bytes / bandwidth has passed since the copy began, as a DMA engine's transfer would last.
// The wait spins: a sleep overshoots by tens of microseconds, longer than many such copies. With
// bandwidth <= 0 copies run at memcpy speed. std only.
#include <chrono>
#include <cstddef>
#include <cstring>

#include <memplan/runtime/arena.hpp>

namespace memplan::runtime {

struct paced_host_backend : host_backend {
  double bandwidth = 0.0;  // bytes per second of the emulated link (<= 0: memcpy speed)

  static constexpr const char* name() { return "host (paced link)"; }
  void to_host(void* dst, const std::byte* src, std::size_t n) const {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(dst, src, n);
    pace(t0, n);
  }
  void from_host(std::byte* dst, const void* src, std::size_t n) const {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(dst, src, n);
    pace(t0, n);
  }

 private:
  void pace(std::chrono::steady_clock::time_point t0, std::size_t n) const {
    if (!(bandwidth > 0)) return;
    const auto until = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                std::chrono::duration<double>(static_cast<double>(n) / bandwidth));
    while (std::chrono::steady_clock::now() < until) {
    }
  }
};

static_assert(memory_backend<paced_host_backend>);

}  // namespace memplan::runtime
