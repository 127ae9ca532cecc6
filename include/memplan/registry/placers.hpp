#pragma once
// The placers by name (the CLI's --placer NAME): registry<any_placer>. One line per policy.
#include <memplan/core/any_stage.hpp>
#include <memplan/core/best_of.hpp>
#include <memplan/core/context.hpp>
#include <memplan/core/registry.hpp>
#include <memplan/place/best_fit.hpp>
#include <memplan/place/bump.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/place/exact.hpp>
#include <memplan/place/gergov.hpp>
#include <memplan/place/greedy_by_breadth.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/place/mincost_flow.hpp>
#include <memplan/place/olla_ilp.hpp>
#include <memplan/place/online/caching_allocator.hpp>
#include <memplan/place/online/free_list.hpp>
#include <memplan/place/pyramid.hpp>

namespace memplan {

inline const registry<any_placer>& placers() {
  static const auto r = [] {
    registry<any_placer> g("placer");
    g.add("bump", "one address after another, no reuse (the no-planning baseline)", [] { return any_placer(place::bump{}); });
    g.add("greedy_by_size", "largest buffer first, lowest gap that fits (MemoMalloc greedy-by-size)", [] { return any_placer(place::greedy_by_size{}); });
    g.add("greedy_by_breadth", "buffers of the busiest steps first", [] { return any_placer(place::greedy_by_breadth{}); });
    g.add("best_fit", "in allocation order, the smallest gap that fits", [] { return any_placer(place::best_fit{}); });
    g.add("gergov", "Gergov's interval-graph colouring (MemoMalloc §2.3)", [] { return any_placer(place::gergov{}); });
    g.add("mincost_flow", "min-cost flow over buffer chains (MemoMalloc), up to 1,000 buffers", [] { return any_placer(place::mincost_flow{}); });
    g.add("pyramid", "OLLA Function 5 pyramid, completed greedily", [] { return any_placer(place::pyramid{}); });
    g.add("exact", "branch and bound over canonical placements (MiniMalloc-style), proves the minimum",
          [] { return any_placer(place::exact{}); });
    g.add("best_of", "smallest arena of the greedy placers",
          [] { return any_placer(best_of{place::greedy_by_size{}, place::best_fit{}, place::greedy_by_breadth{}, place::pyramid{}, place::gergov{}, place::mincost_flow{}}); });
    g.add("default", "greedy placers, then exact search until the arena meets its lower bound",
          [] { return any_placer(place::default_placer{}); });
    g.add("online_first_fit", "an online first-fit allocator (baseline)", [] { return any_placer(place::online::first_fit{}); });
    g.add("online_best_fit", "an online best-fit allocator (baseline)", [] { return any_placer(place::online::best_fit{}); });
    g.add("caching_allocator", "a model of PyTorch's CUDA caching allocator (baseline)", [] { return any_placer(place::online::caching_allocator{}); });
    g.add("olla_ilp", "OLLA eq. 15 MILP with the context's solver (CBC), pyramid pre-placement; default placer without one",
          [] { return any_placer(place::olla_ilp{}); });
    return g;
  }();
  return r;
}

}  // namespace memplan
