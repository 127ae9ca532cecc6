#pragma once
// The device's clock, for timed plans (offloading, Beaumont et al.): one compute engine running the
// op steps in order and one copy engine moving storages between the device and the host, working in
// parallel. An op step lasts its cost converted to seconds; a transfer lasts bytes / bandwidth.
//
//   * cost_unit "seconds" (the exporter's roofline costs): cost is the duration;
//   * cost_unit "flops": cost / device_flops (device_flops must be set);
//   * "units" or unsaid: one cost unit is one second (what a hand-made graph means by its costs).
//
// std only; core/verify.hpp checks a timed plan's durations against this model.
#include <cstdint>
#include <string>

#include <memplan/base/error.hpp>
#include <memplan/core/problem.hpp>

namespace memplan {

struct device_timing {
  double bandwidth = 0.0;     // bytes per second between device and host memory (0: no copy engine)
  double device_flops = 0.0;  // FLOP per second, to convert costs given in FLOPs (0: not given)
  std::int64_t host_limit = -1;  // bytes of host memory the offloaded values may use (-1: no limit)
  friend bool operator==(const device_timing&, const device_timing&) = default;
};

// Seconds per cost unit of the problem's op costs under `t`. Throws errc::invalid_argument when the
// costs are FLOPs and no device_flops is given.
inline double seconds_per_cost(const problem& p, const device_timing& t) {
  if (p.cost_unit() == "flops") {
    if (!(t.device_flops > 0))
      throw error(errc::invalid_argument, "the op costs of '" + p.name() + "' are FLOPs: give the device's FLOP/s (--device-flops)");
    return 1.0 / t.device_flops;
  }
  return 1.0;
}

// Seconds a transfer of `bytes` takes (throws when there is no bandwidth to move them).
inline double transfer_seconds(std::int64_t bytes, const device_timing& t) {
  if (bytes == 0) return 0.0;
  if (!(t.bandwidth > 0)) throw error(errc::invalid_argument, "a transfer needs a bandwidth (bytes per second, --bandwidth)");
  return static_cast<double>(bytes) / t.bandwidth;
}

// Two times equal up to rounding (relative 1e-9, absolute 1e-12 s).
inline bool same_time(double a, double b) {
  const double d = a > b ? a - b : b - a;
  const double m = (a > 0 ? a : -a) > (b > 0 ? b : -b) ? (a > 0 ? a : -a) : (b > 0 ? b : -b);
  return d <= 1e-12 + 1e-9 * m;
}
// a <= b up to rounding.
inline bool time_le(double a, double b) { return a <= b || same_time(a, b); }

}  // namespace memplan
