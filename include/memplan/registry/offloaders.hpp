#pragma once
// The offloaders by name (the CLI's --offloader NAME): registry<any_offloader>. One line per policy.
#include <memplan/core/any_stage.hpp>
#include <memplan/core/registry.hpp>
#include <memplan/offload/combined.hpp>
#include <memplan/offload/default_offloader.hpp>
#include <memplan/offload/dynprog.hpp>
#include <memplan/offload/policies.hpp>

namespace memplan {

inline const registry<any_offloader>& offloaders() {
  static const auto r = [] {
    using namespace offload;
    registry<any_offloader> g("offloader");
    g.add("none", "offload nothing; the plan is timed (makespan = compute time)", [] { return any_offloader(none{}); });
    g.add("default", "best of greedy, dynprog, vdnn and refined: the least makespan that meets the budget",
          [] { return any_offloader(default_offloader{}); });
    g.add("greedy", "Beaumont et al. GREEDY (Thm. 2): the first values in production order, as few as fit",
          [] { return any_offloader(greedy{}); });
    g.add("dynprog", "Beaumont et al. DYNPROG: Algorithm 1 over the chain view of the timeline, 500 memory slots",
          [] { return any_offloader(dynprog{}); });
    g.add("vdnn", "the VDNN baseline: thresholds on compute time per byte of each value (all above, or every other)",
          [] { return any_offloader(vdnn{}); });
    g.add("refined", "greedy, then drop / add / swap one value while the makespan improves", [] { return any_offloader(refined{}); });
    g.add("brute_force", "every subset of the offloadable values (at most 16): the least makespan",
          [] { return any_offloader(brute_force{}); });
    g.add("combined", "keep / offload / recompute: the default checkpointer down to an intermediate target, refined offloading below it; the least makespan",
          [] { return any_offloader(combined<>{}); });
    return g;
  }();
  return r;
}

}  // namespace memplan
