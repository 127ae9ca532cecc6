#pragma once
// plan_context: what every stage of a pipeline sees besides the problem and the timeline -- the
// memory budget and capacity, alignment, time limit, deterministic mode, progress callback, MILP
// backend, and a cache of per-problem analyses (computed once per pipeline run, whichever stage asks
// first). One context serves one pipeline run at a time: the cache is not synchronized.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <typeindex>
#include <typeinfo>
#include <vector>

#include <memplan/base/deadline.hpp>
#include <memplan/base/progress.hpp>
#include <memplan/core/analysis.hpp>
#include <memplan/core/bounds.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/timing.hpp>
#include <memplan/solver/milp.hpp>

namespace memplan {

struct timeline;

// Analyses of one problem, each computed at most once.
class analysis_cache {
 public:
  explicit analysis_cache(const problem& p) : p_(&p) {}
  // A cache for `view`, a copy of bounds_from's problem whose ops' own workspaces differ but whose
  // least workspace per op does not (scheduling_problem): the bounds, which take each op's least
  // workspace, are bounds_from's (one computation for both problems; bounds_from must outlive this
  // cache); the given order's peak is view's own.
  analysis_cache(const problem& view, analysis_cache& bounds_from) : p_(&view), bounds_from_(&bounds_from) {}

  [[nodiscard]] const problem& of() const noexcept { return *p_; }

  // lower_bound_peak: valid for every order (no recomputation, no offloading).
  const peak_lower_bound& order_bound(std::int32_t max_ops_for_reachability = 30000) {
    if (bounds_from_) return bounds_from_->order_bound(max_ops_for_reachability);
    if (!order_bound_) order_bound_ = lower_bound_peak(*p_, max_ops_for_reachability);
    return *order_bound_;
  }
  // op_local_bound: valid for every plan whatever it recomputes or offloads.
  std::int64_t op_local() {
    if (bounds_from_) return bounds_from_->op_local();
    if (!op_local_) op_local_ = op_local_bound(*p_);
    return *op_local_;
  }
  // Peak of the graph's given order (-1 when that order is not executable).
  std::int64_t given_peak() {
    if (!given_peak_) {
      given_peak_ = peak_if_topological(*p_, given_order(*p_));
    }
    return *given_peak_;
  }

 private:
  const problem* p_;
  analysis_cache* bounds_from_ = nullptr;
  std::optional<peak_lower_bound> order_bound_;
  std::optional<std::int64_t> op_local_, given_peak_;
};

// Results a stage derives from inputs it can name in full, kept under a key that holds all of them
// (so a hit is exactly what the computation would give, whatever the problem): remat's chain tables
// (remat/chain.hpp, make_chain_table), which every rerun of plan()'s budget loop and the plans of
// each variant set (plan_choosing_variants) rebuilt from the same chains (12-27 % of `memplan plan
// --budget`'s time on the batch-32 exports). Type-erased so that core does not know the stages'
// types; a key found with another type is not a hit. At most bytes_limit bytes are kept (by the sizes
// keep() is told); past it a result is not kept. Not synchronized, as the analysis cache.
class stage_memo {
 public:
  static constexpr std::size_t bytes_limit = std::size_t{256} << 20;
  template <class T>
  [[nodiscard]] std::shared_ptr<const T> find(const std::string& key) const {
    const auto it = entries_.find(key);
    if (it == entries_.end() || it->second.type != std::type_index(typeid(T))) return nullptr;
    return std::static_pointer_cast<const T>(it->second.value);
  }
  template <class T>
  void keep(std::string key, std::shared_ptr<const T> value, std::size_t bytes) {
    if (!value || bytes > bytes_limit - bytes_) return;
    if (entries_.try_emplace(std::move(key), entry{std::type_index(typeid(T)), std::move(value)}).second) bytes_ += bytes;
  }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

 private:
  struct entry {
    std::type_index type;
    std::shared_ptr<const void> value;
  };
  std::map<std::string, entry> entries_;
  std::size_t bytes_ = 0;
};

// Which implementation each op runs where a timeline is born from an order (core/implementations.hpp).
enum class implementation_choice {
  own,        // every op its own (cost, workspace), as the graph gives it
  no_slower,  // alternatives no slower than the op's own: the least workspace, then faster ones that fit the peak
};

// A plan that another must beat (plan_context::to_beat), by better_plan's measures
// (core/implementations.hpp): its makespan where both plans are timed, else its total step cost.
struct plan_to_beat {
  double makespan = -1.0;   // seconds; < 0: not timed
  double step_cost = -1.0;  // < 0: none to beat
};

struct plan_context {
  // ---- memory ----
  // Bytes the final arena must fit (`memplan plan --budget`). Checkpointers and offloaders work to
  // meet it; the pipeline fails with errc::infeasible when it cannot. -1: no budget.
  std::int64_t budget = -1;
  // Hard arena limit (the device's memory); -1: none. The arena limit is min(budget, capacity).
  std::int64_t capacity = -1;
  // Every offset a multiple of this (a power of two).
  std::int64_t alignment = 1;
  // The peak a checkpointer or offloader aims at (-1: the arena limit). plan() lowers it below the
  // budget when the placed arena overshoots, and runs those stages again.
  std::int64_t memory_target = -1;
  // An arena the searching placers (exact, default) may stop at: a placement at or below it ends their
  // search, one above it is minimised as usual (-1: none). plan() sets it to the budget where it runs
  // the placer without the limit to learn the overshoot (a checkpointer or offloader in the pipeline):
  // the placer improves the arena until the bound or the budget, not past the budget.
  std::int64_t arena_target = -1;

  // A plan to beat (plan_choosing_variants sets it to its best plan so far for each plan after the
  // first). With a budget and a checkpointer or offloader, when the first run's plan is already worse
  // than it by more than to_beat_margin (known before the placers run), plan() neither places it nor
  // reruns the checkpointer or offloader at lower targets, and throws errc::not_better instead: the
  // plan could not be kept, the reruns recompute or offload more, and of the 14 budget loops that
  // reran on the batch-32 exports at 0.4-0.7x (docs/recompute.md) none found a plan more than 1.75 %
  // cheaper than its first run's. Inception-v3 b32 at 0.5x of its arena: its second variant set's
  // plan, 2.8 % costlier before its reruns, took 1.6 s of the 3.1 s.
  plan_to_beat to_beat{};
  double to_beat_margin = 0.025;  // a fraction of the plan to beat's makespan or step cost
  // Seconds a step must beat: an offloader whose makespan lower bound at its target (Prop. 3,
  // offload/model.hpp) is at or above it gives up before its search with errc::not_better. plan()'s
  // checkpointer-then-offloader composition sets it where it asks whether offloading alone beats the
  // checkpointer's plan, so that a slow copy engine costs one bound, not a search. < 0: none.
  double offload_to_beat = -1.0;
  // > 0: every offloader offloads more than its own choice: that choice at its target, plus the first
  // ceil(offload_fill x r) of the r offloadable values it left out (in production order); 1: every
  // value its model allows (GREEDY's last prefix, the choice that moves most). plan()'s last resort
  // at the least target, where the fastest choice that meets it in the model placed above the
  // budget: tests/io/data/chain6.json at its floor of 46,656 B and 1e5 B/s, `refined` chose 4 of 6
  // values, whose buffers place at 48,192 B at best (proven by exact search), where offloading all 6
  // places at 46,656 B. plan() then bisects the fill for a faster plan that still fits.
  double offload_fill = 0.0;
  // Where a checkpointer that chooses among plans (remat::best_solver_free, so the default) leaves
  // the others that meet the memory target, in the order it would have chosen them (at most
  // max_runners_up). plan() sets it for its first run when the pipeline's one checkpointer or
  // offloader has only placers after it: when the chosen plan's placed arena overshoots the limit,
  // it places these before aiming lower, since a near-equal plan may place at its peak where the
  // chosen one does not (Inception-v3 b32 at 0.6x of its arena: greedy+keep_inplace_chains, 5.38 %,
  // placed 3 % above its peak; greedy, 5.41 %, at its peak; aimed lower instead, the plan kept
  // recomputed 5.68 %). nullptr: none wanted.
  std::vector<timeline>* runners_up = nullptr;
  static constexpr std::size_t max_runners_up = 3;
  // In deterministic mode, the share of their own work limit the searching placers (place::exact,
  // place::default_placer) get, > 0. plan() gives the runners-up's placements a quarter, as the clock
  // gives them a quarter of the first placement's time: in full, one that did not fit ran the whole
  // search for nothing. `memplan place`'s second search of a set left far above its bound gives 4
  // (apps/memplan/place_csv.hpp), as the clock gives it 3.2 s for the default placer's 0.8 s.
  double placement_work_share = 1.0;

  // ---- operator implementations (ops that list alternatives; MONeT §4) ----
  // Checkpointers that choose implementations themselves (remat::monet_greedy, monet_ilp) choose afresh.
  implementation_choice implementations = implementation_choice::no_slower;

  // ---- the device's clock (offloaders: op durations, transfer bandwidth, host limit) ----
  device_timing timing{};

  // ---- time and work ----
  // For every stage that searches: < 0 keeps each policy's own default, 0 stops after its first
  // result, > 0 is the limit in seconds.
  double time_limit_s = -1.0;
  // Count work (iterations, nodes, and for the exact and default placers a work clock: their own time
  // limits in virtual seconds of work done, base/deadline.hpp) instead of wall-clock time, so that the
  // result does not depend on the machine's speed or load. Policies then ignore the context's time
  // limits, and plan() leaves the
  // stats' *_seconds at 0: equal inputs and options give equal plans and byte-identical plan files
  // (`memplan plan --deterministic`). Without it, any policy that stops on a deadline (local search,
  // the exact and default placers, the exact scheduler, the ILP policies) returns whatever it had
  // found when the clock ran out, which depends on the machine's speed and load; policies that never
  // search (given, the list schedulers, the greedy placers) are deterministic in both modes.
  bool deterministic = false;
  // A stop for the whole plan (ignored in deterministic mode): every searching stage's time limit is
  // cut to what is left on it (time_limit_or), the min-cut bound's too, so plan() ends near it, late
  // only by the work a stage does before it first looks at its clock. plan_choosing_variants gives its
  // group search's plans the search's own deadline this way (core/plan_variants.hpp).
  deadline stop = deadline::never();
  progress_callback progress{};

  // ---- services ----
  // The MILP backend of the *_ilp policies (e.g. solver::cbc{} from <memplan/solver/cbc.hpp>, target
  // memplan::cbc). The default, solver::none, makes them fall back to their heuristic and say so.
  solver::any_backend solver{};
  // Per-problem analyses; plan() creates one when this is empty.
  std::shared_ptr<analysis_cache> cache{};
  // Stages' results kept by their inputs (stage_memo); plan() creates one when this is empty. Plans
  // that share one (copies of a context do) reuse each other's: e.g. a graph's variant sets, or the
  // budgets of a frontier. Any plans may share one (the keys hold every input), one thread at a time.
  std::shared_ptr<stage_memo> memo{};

  // ---- report ----
  bool compute_given_peak = true;            // stats.given_peak from the graph's own order
  std::int32_t lower_bound_max_ops = 30000;  // reachability part of lower_bound_peak up to this size
  // Certify the plan's lower bound with the min-cut bound too (core/cut_bound.hpp, valid for every
  // order and implementation choice) when nothing was recomputed or offloaded and lower_bound_peak and
  // the scheduler's bound leave a gap. It is tight where lower_bound_peak is loose (EfficientNet-B0:
  // a 22-27 % gap becomes 0.3-0.5 %) and costs up to cut_bound_time_limit_s per plan (random DAGs:
  // 0.02 s at 100 ops, 0.14 s at 200, 0.7 s at 400), so it is off in the library by default (tests and
  // searches plan many graphs); `memplan plan` turns it on. Deterministic mode: no time limit, and
  // graphs above 1,500 ops get the bound's sample of single cuts (still a valid bound).
  bool cut_bound = false;
  double cut_bound_time_limit_s = 0.5;

  [[nodiscard]] std::int64_t arena_limit() const noexcept {
    std::int64_t l = std::numeric_limits<std::int64_t>::max();
    if (budget >= 0) l = budget;
    if (capacity >= 0 && capacity < l) l = capacity;
    return l;
  }
  [[nodiscard]] std::int64_t peak_target() const noexcept { return memory_target >= 0 ? memory_target : arena_limit(); }
  [[nodiscard]] bool has_memory_limit() const noexcept { return budget >= 0 || capacity >= 0 || memory_target >= 0; }

  // The time limit a searching policy uses, given its own default: none in deterministic mode, and
  // never past `stop` (< 0: none).
  [[nodiscard]] double time_limit_or(double own_default) const { return within_stop(time_limit_s >= 0 ? time_limit_s : own_default); }
  // `seconds` (< 0: none) cut to what is left before `stop`; none in deterministic mode. Past the
  // stop, a clock that has already run out (1 ns), not 0: a limit of 0 asks for a policy's first
  // result, which the *_ilp policies compute without a clock (checkmate_ilp's on-demand plan took
  // 2.7 s at 3,200 ops for a plan() whose stop had passed).
  [[nodiscard]] double within_stop(double seconds) const {
    if (deterministic) return -1.0;
    if (!stop.limited()) return seconds;
    const double left = stop.seconds_left();
    if (left <= 0) return 1e-9;
    return seconds < 0 ? left : std::min(seconds, left);
  }

  // lower_bound_peak of p, from the cache when it is p's.
  [[nodiscard]] std::int64_t order_bound(const problem& p) const {
    if (cache && &cache->of() == &p) return cache->order_bound(lower_bound_max_ops).bytes;
    return lower_bound_peak(p, lower_bound_max_ops).bytes;
  }

  // Peak of p's given order (-1: not executable), from the cache when it is p's.
  [[nodiscard]] std::int64_t given_peak(const problem& p) const {
    if (cache && &cache->of() == &p) return cache->given_peak();
    return peak_if_topological(p, given_order(p));
  }

  // The cache for p (one is made, unshared, when the context has none or it belongs to another problem).
  [[nodiscard]] std::shared_ptr<analysis_cache> cache_for(const problem& p) const {
    if (cache && &cache->of() == &p) return cache;
    return std::make_shared<analysis_cache>(p);
  }
};

}  // namespace memplan
