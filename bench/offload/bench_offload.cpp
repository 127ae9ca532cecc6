// Offloading benchmark (docs/offload.md). Prints, does not assert:
//  * Beaumont et al. Fig. 4 as far as memplan reproduces it: for training graphs at batch 32 (the
//    bundled PyTorch exports of ResNet-50, DenseNet-121 and Inception-v3, 224x224 / 299x299, DAGs
//    rather than the paper's chains), makespan / lower bound (Prop. 3, strengthened) against the
//    memory limit, from the least peak offloading reaches to the no-offload peak, for GREEDY, VDNN,
//    memplan's refined search and the best of them; the median and worst ratios per policy;
//  * real training exports at 0.5x and 0.7x of the no-offload peak with PCIe-like bandwidth (12 GB/s):
//    offload-only (default offloader), recompute-only (default checkpointer) and combined, placed and
//    verified: arena, makespan, ratio to the no-limit compute time and to the lower bound.
// Costs of the exports are roofline seconds (meta.cost_unit = seconds); --device-flops matters only
// for graphs whose costs are FLOPs.
//
// Usage: memplan_bench_offload [--quick] [--points N] [--bandwidth B] [--only SUBSTRING] [--figure-only]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include <memplan/core/adapt.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/core/verify.hpp>
#include <memplan/io/gzip.hpp>
#include <memplan/io/json.hpp>
#include <memplan/offload/combined.hpp>
#include <memplan/offload/default_offloader.hpp>
#include <memplan/offload/policies.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/remat/default_checkpointer.hpp>
#include <memplan/schedule/given.hpp>

using namespace memplan;
using clock_type = std::chrono::steady_clock;

namespace {

double secs_since(clock_type::time_point t0) { return std::chrono::duration<double>(clock_type::now() - t0).count(); }
double mib(std::int64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); }

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct options {
  bool quick = false;
  int points = 8;
  double bandwidth = 12e9, device_flops = 15e12;
  std::string only;
  bool figure_only = false;  // Fig. 4 only, not the real exports at 0.7x / 0.5x
};

void figure4(const std::string& file, const options& o) {
  const auto p = io::read_graph(file);
  const auto tl = given_timeline(p);
  const device_timing timing{.bandwidth = o.bandwidth, .device_flops = o.device_flops};
  const auto m = offload::make_model(p, tl, timing);
  const auto least = offload::least_peak(m);
  std::printf("\n%s: %d ops, %zu offloadable values (%lld adjacent pairs read back in production order), peak %.1f MiB, least offload peak %.1f MiB, compute %.4f s\n",
              p.name().c_str(), p.num_ops(), m.candidates.size(), static_cast<long long>(offload::chain_order_breaks(m)), mib(tl.peak), mib(least),
              m.compute_time);
  // "best" is what the default offloader picks here: the best of greedy, vdnn and refined (DYNPROG
  // runs in it on chains only, and these are not chains); dynprog beside it, and how often it alone
  // would have been better.
  std::printf("  %10s %10s | %8s %8s %8s %8s %8s | %s\n", "limit MiB", "LB s", "greedy", "vdnn", "refined", "dynprog", "best", "(makespan / lower bound)");
  constexpr int columns = 5;
  const char* names[columns] = {"greedy", "vdnn", "refined", "dynprog", "best"};
  std::vector<double> ratios[columns];
  int dynprog_below = 0;
  for (int k = 0; k <= o.points; ++k) {
    const auto target = least + static_cast<std::int64_t>(static_cast<double>(k) / o.points * static_cast<double>(tl.peak - least));
    plan_context c;
    c.timing = timing;
    c.memory_target = target;
    c.deterministic = true;  // refined's local search runs its rounds, whatever the machine's speed (no work limit below)
    const auto lb = offload::makespan_lower_bound(m, target);
    double ms[columns];
    const auto t0 = clock_type::now();
    ms[0] = offload::greedy{}.run(p, tl, c).makespan;
    ms[1] = offload::vdnn{}.run(p, tl, c).makespan;
    const auto rf = offload::refined{.time_limit_s = -1.0}.run(p, tl, c);
    ms[2] = rf.makespan;
    ms[3] = offload::dynprog{}.run(p, tl, c).makespan;
    ms[4] = std::min({ms[0], ms[1], ms[2]});
    dynprog_below += ms[3] < ms[4];
    const auto meets = rf.peak <= target;
    std::printf("  %10.1f %10.4f |", mib(target), lb);
    for (int i = 0; i < columns; ++i) {
      std::printf(" %8.4f", ms[i] / lb);
      ratios[i].push_back(ms[i] / lb);
    }
    std::printf(" | %.2f s%s\n", secs_since(t0), meets ? "" : "  (target not met)");
  }
  std::printf("  median ratio:");
  for (int i = 0; i < columns; ++i) std::printf(" %s %.4f", names[i], median(ratios[i]));
  std::printf("; worst:");
  for (int i = 0; i < columns; ++i) std::printf(" %s %.4f", names[i], *std::max_element(ratios[i].begin(), ratios[i].end()));
  std::printf("\n  dynprog below best on %d of %d limits\n", dynprog_below, o.points + 1);
}

void real_budgets(const std::string& file, const options& o) {
  const auto p = io::read_graph(file);
  plan_context base;
  base.timing = {.bandwidth = o.bandwidth, .device_flops = o.device_flops};
  const auto a0 = plan(p, schedule::given{} | offload::none{} | place::default_placer{}, base);
  std::printf("\n%s: no-offload arena %.1f MiB, compute %.4f s\n", p.name().c_str(), mib(a0.arena), a0.makespan);
  for (double f : {0.7, 0.5}) {
    plan_context c = base;
    c.budget = static_cast<std::int64_t>(f * static_cast<double>(a0.stats.peak));
    auto run = [&](const char* what, auto pipeline) {
      const auto t0 = clock_type::now();
      try {
        const auto mp = plan(p, pipeline, c);
        std::printf("  %.1fx %-10s arena %8.1f MiB  makespan %.4f s  (x%.4f compute, x%.4f LB)  moved %8.1f MiB  host %7.1f MiB  %s  %.2f s\n", f,
                    what, mib(mp.arena), mp.makespan, mp.makespan / a0.makespan,
                    mp.makespan_lower_bound > 0 ? mp.makespan / mp.makespan_lower_bound : 0.0, mib(mp.stats.transfer_bytes) / 2, mib(mp.host_peak),
                    verify(p, mp) ? "verified" : "INVALID", secs_since(t0));
        return mp.makespan;
      } catch (const error& e) {
        std::printf("  %.1fx %-10s %s\n", f, what, e.what());
        return std::numeric_limits<double>::infinity();
      }
    };
    const auto off = run("offload", schedule::given{} | offload::default_offloader{} | place::default_placer{});
    const auto rec = run("recompute", schedule::given{} | remat::default_checkpointer{} | offload::none{} | place::default_placer{});
    const auto both = run("combined", schedule::given{} | offload::combined<>{} | place::default_placer{});
    if (std::isinf(std::min(off, rec)))
      std::printf("  %.1fx combined / best of the two alone: neither alone meets the budget%s\n", f, std::isinf(both) ? " (nor combined)" : "");
    else
      std::printf("  %.1fx combined / best of the two alone: %.4f\n", f, both / std::min(off, rec));
  }
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) o.quick = true;
    else if (!std::strcmp(argv[i], "--points") && i + 1 < argc) o.points = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--bandwidth") && i + 1 < argc) o.bandwidth = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) o.only = argv[++i];
    else if (!std::strcmp(argv[i], "--figure-only")) o.figure_only = true;
    else {
      std::fprintf(stderr, "usage: memplan_bench_offload [--quick] [--points N] [--bandwidth B] [--only SUBSTRING] [--figure-only]\n");
      return 2;
    }
  }
  if (o.quick) o.points = std::min(o.points, 4);
  const std::filesystem::path models = std::filesystem::path(MEMPLAN_SOURCE_DIR) / "data" / "models";
  std::printf("Offloading (Beaumont et al.): bandwidth %.3g B/s, device %.3g FLOP/s\n", o.bandwidth, o.device_flops);
  std::printf("== Fig. 4: makespan / lower bound against the memory limit ==\n");
  for (const auto* name : {"resnet50-train-b32", "densenet121-train-b32", "inception_v3-train-b32"})
    if (o.only.empty() || std::string(name).find(o.only) != std::string::npos) figure4((models / (std::string(name) + ".json.gz")).string(), o);
  if (o.figure_only) return 0;
  std::printf("\n== real training exports at 0.7x and 0.5x of the no-offload peak ==\n");
  std::vector<std::string> reals = o.quick ? std::vector<std::string>{"resnet18-train-b32"}
                                           : std::vector<std::string>{"resnet18-train-b32", "resnet50-train-b32", "vgg16-train-b32",
                                                                      "mobilenet_v2-train-b32", "transformer-train-b32"};
  for (const auto& name : reals)
    if (o.only.empty() || name.find(o.only) != std::string::npos) real_budgets((models / (name + ".json.gz")).string(), o);
  return 0;
}
