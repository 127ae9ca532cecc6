// Trains the small residual CNN (ad::models::cnn) on the generated shapes16 task under the memory
// plan of memplan::olla::optimize -- one arena, every tensor at its planned offset -- and under a
// recomputation plan fitting half of that plan's peak (remat::default_checkpointer; the smallest
// budget memplan meets when half cannot be), next to the eager reference run, and checks that all
// three train to the same bits.
//
//   train_planned [heap.svg] [steps]      (defaults: train_planned_heap.svg, 80 steps)
//
// Prints the loss curve, the eager peak vs the planned arena, the test accuracy, and writes the
// plan's heap map as SVG.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include <memplan/ad/data.hpp>
#include <memplan/ad/models/cnn.hpp>
#include <memplan/ad/run_plan.hpp>
#include <memplan/io/svg.hpp>
#include <memplan/olla.hpp>
#include <memplan/remat/default_checkpointer.hpp>
#include <memplan/remat/frontier.hpp>
#include <memplan/place/online/caching_allocator.hpp>
#include <memplan/schedule/given.hpp>

int main(int argc, char** argv) try {
  using namespace memplan;
  const std::string svg = argc > 1 ? argv[1] : "train_planned_heap.svg";
  const int steps = argc > 2 ? std::atoi(argv[2]) : 80;
  if (steps < 1) {
    std::fprintf(stderr, "usage: train_planned [heap.svg] [steps >= 1]\n");
    return 2;
  }

  // The model: one training step (forward, backward, Adam update) as an ad::program. Batch 4 with 16
  // channels: activations and gradients are of a size, so both the order (when each gradient is made
  // and freed) and the addresses matter -- planning saves memory visibly here. (At batch 32 with 8
  // channels the activations dominate, the tape's own order is already optimal, and the plan saves
  // only the caching allocator's rounding and fragmentation: 2.8 %.)
  const auto m = ad::models::cnn({.batch = 4, .width_mult = 16}, ad::adam{0.01f});
  // Its dataflow graph -> problem -> OLLA's plan (reorder + place), 64-byte aligned for the kernels.
  auto prob = make_problem(ad::to_dataflow_graph(m.step));
  auto plan = olla::optimize(prob, {.alignment = ad::plan_alignment});
  std::printf("model %s: %zu nodes, %zu tensors; plan by %s + %s\n", m.step.name.c_str(), m.step.nodes.size(),
              m.step.tensors.size(), plan.stats.scheduler.c_str(), plan.stats.placer.c_str());

  // Recomputation: the same training step in half of the plan's peak, trading compute for memory.
  const auto sched = schedule::default_scheduler{};
  // Each op keeps its default kernel (choose_implementations off, the default), so that one eager run is
  // the reference for both plans; tests/ad_planned trains under plans that choose kernels.
  const remat::default_checkpointer ckpt{};
  plan_context half{.budget = plan.stats.peak / 2, .alignment = ad::plan_alignment};
  memory_plan remat_plan;
  try {
    remat_plan = memplan::plan(prob, sched | ckpt | place::default_placer{}, half);
  } catch (const error& e) {
    if (e.code() != errc::infeasible) throw;
    std::printf("half of the peak cannot be met (%s); using the smallest budget memplan meets\n", e.what());
    plan_context ctx{.alignment = ad::plan_alignment};
    const auto pts = remat::frontier(prob, sched, ckpt, place::default_placer{}, {.points = 6}, ctx);
    half.budget = pts.back().budget;
    for (const auto& f : pts)
      if (f.budget >= 0 && f.budget < half.budget) half.budget = f.budget;
    remat_plan = memplan::plan(prob, sched | ckpt | place::default_placer{}, half);
  }

  ad::eager_runner eager(m.step);
  ad::planned_runner planned(m.step, prob, plan, {.poison = true});
  ad::planned_runner recomputing(m.step, prob, remat_plan, {.poison = true});
  ad::data_stream<ad::shapes16> de(ad::shapes16{}, 1001), dp(ad::shapes16{}, 1001), dr(ad::shapes16{}, 1001);
  const int every = steps >= 20 ? steps / 10 : 1;
  bool same = true;
  std::printf("\n step   loss (planned)   loss (recomputing)   loss (eager)\n");
  for (int s = 1; s <= steps; ++s) {
    const float lp = ad::train_step(planned, m, dp), lr = ad::train_step(recomputing, m, dr), le = ad::train_step(eager, m, de);
    same = same && std::memcmp(&lp, &le, sizeof lp) == 0 && std::memcmp(&lr, &le, sizeof lr) == 0;
    if (s % every == 0 || s == 1)
      std::printf("%5d   %14.6f   %18.6f   %12.6f\n", s, static_cast<double>(lp), static_cast<double>(lr), static_cast<double>(le));
  }
  const auto eager_peak = eager.peak_bytes();  // one full training step, exact tensor sizes
  const auto ws = ad::read_state(m.step, planned), we = ad::read_state(m.step, eager), wr = ad::read_state(m.step, recomputing);
  same = same && ws.size() == we.size() && std::memcmp(ws.data(), we.data(), ws.size() * sizeof(float)) == 0;
  same = same && wr.size() == we.size() && std::memcmp(wr.data(), we.data(), wr.size() * sizeof(float)) == 0;

  ad::data_stream<ad::shapes16> tp(ad::shapes16{}, 2002), te(ad::shapes16{}, 2002);
  const double acc_p = ad::evaluate(planned, m, tp, 8), acc_e = ad::evaluate(eager, m, te, 8);

  const double reduction = 100.0 * (1.0 - static_cast<double>(plan.arena) / static_cast<double>(eager_peak));
  // What an eager framework's allocator would hold: the given order through a simulation of
  // PyTorch's caching allocator (512-byte rounding, block splitting, no reuse across streams).
  const auto caching = memplan::plan(prob, schedule::given{} | place::online::caching_allocator{}, {.alignment = ad::plan_alignment});
  const double reduction_caching = 100.0 * (1.0 - static_cast<double>(plan.arena) / static_cast<double>(caching.arena));
  std::printf("\nmemory per training step:\n");
  std::printf("  eager under a caching allocator (simulated, what a framework holds) %10lld B\n", static_cast<long long>(caching.arena));
  std::printf("  eager peak (an ideal allocator: live bytes only, given order)         %10lld B\n", static_cast<long long>(eager_peak));
  std::printf("  planned arena (reordered, one block, 64-byte aligned offsets)         %10lld B\n", static_cast<long long>(plan.arena));
  std::printf("  planning saves %.1f %% against the caching allocator, %.1f %% against the ideal allocator\n",
              reduction_caching, reduction);
  std::printf("  planned order's peak %lld B, lower bound %lld B, resident (weights+optimizer+batch) %lld B\n",
              static_cast<long long>(plan.stats.peak), static_cast<long long>(plan.stats.lower_bound),
              static_cast<long long>(eager.resident_bytes()));
  std::printf("  executor high-water %lld B\n", static_cast<long long>(planned.last_stats().high_water));
  std::int64_t recomputed = 0;
  for (const auto& st : remat_plan.steps) recomputed += st.kind == step_kind::recompute;
  std::printf("  with recomputation, budget %lld B (%.0f %% of the planned peak): arena %lld B, high-water %lld B,\n"
              "    %lld ops recomputed per step, %.1f %% extra compute (%s)\n",
              static_cast<long long>(half.budget), 100.0 * static_cast<double>(half.budget) / static_cast<double>(plan.stats.peak),
              static_cast<long long>(remat_plan.arena), static_cast<long long>(recomputing.last_stats().high_water),
              static_cast<long long>(recomputed), 100.0 * remat_plan.stats.recompute_cost / remat_plan.stats.compute_cost,
              remat_plan.stats.checkpointer.c_str());
  std::printf("test accuracy: planned %.4f, eager %.4f\n", acc_p, acc_e);
  std::printf("planned == recomputing == eager bit for bit (losses, weights, optimizer state): %s\n", same ? "yes" : "NO");

  io::write_heap_svg(svg, prob, plan, {.title = "residual CNN training step (batch 4, 16 channels) under olla::optimize"});
  std::printf("heap map written to %s\n", svg.c_str());
  return same && acc_p == acc_e ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_planned: %s\n", e.what());
  return 1;
}
