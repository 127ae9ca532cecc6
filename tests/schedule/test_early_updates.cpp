#include <doctest/doctest.h>

#include <memplan/core/adapt.hpp>
#include <memplan/schedule/early_updates.hpp>
#include <memplan/schedule/exact.hpp>
#include <memplan/schedule/given.hpp>
#include <memplan/schedule/list_scheduler.hpp>

#include "../../bench/schedule/training_graphs.hpp"
#include "../support/brute_force.hpp"
#include "../support/random_dag.hpp"
#include "check.hpp"

using namespace memplan;

namespace {
problem small_mlp(int blocks = 3) {
  bench::training_graph_options o;
  o.name = "mlp";
  o.blocks = blocks;
  o.residual_every = 0;
  o.inplace_relu = false;
  o.workspace = false;
  o.act_bytes = 1024;
  o.weight_bytes = 4096;
  return make_problem(bench::training_graph(o));
}
}  // namespace

TEST_CASE("early_weight_updates: one control edge per update op, to a later-level anchor (OLLA Fn. 3-4)") {
  const auto p = small_mlp();
  const auto edges = schedule::early_update_edges(p);
  const auto fwd = compute_levels(p).asap;
  const auto bwd = schedule::backward_levels(p);
  int updates = 0;
  for (op_id o = 0; o < p.num_ops(); ++o) updates += p.phase(o) == op_phase::update;
  CHECK(updates == 3);
  // The last layer's update has no op of a larger level than the earlier backward ops; the first
  // layer's update is the last op of its chain and has no anchor.
  CHECK(edges.size() == 2);
  for (auto [u, a] : edges) {
    CHECK(p.phase(u) == op_phase::update);
    CHECK(fwd[static_cast<std::size_t>(a)] > fwd[static_cast<std::size_t>(u)]);
  }
  // update of the last layer: anchored at the earliest-running backward op after it, the data
  // gradient of the layer below (largest backward level among the candidates).
  const auto u2 = *p.find_op("update_W2_0");
  bool found = false;
  for (auto [u, a] : edges)
    if (u == u2) {
      found = true;
      CHECK(p.op_name(a) == "bwd_dgrad1_0");
      for (op_id o = 0; o < p.num_ops(); ++o)
        if (fwd[static_cast<std::size_t>(o)] > fwd[static_cast<std::size_t>(u2)]) CHECK(bwd[static_cast<std::size_t>(o)] <= bwd[static_cast<std::size_t>(a)]);
    }
  CHECK(found);
}

TEST_CASE("early_weight_updates: orders of the transform are orders of the original, frees gradients early") {
  const auto p = small_mlp(6);
  const auto q = schedule::early_weight_updates(p);
  CHECK(q.num_ops() == p.num_ops());
  CHECK(q.num_tensors() == p.num_tensors());
  const auto order = topological_order(q);  // id order under the extra edges
  CHECK(!check_topological(p, order));
  CHECK(peak_of(q, order) == peak_of(p, order));  // control edges carry no bytes
  // The given order runs every update last and keeps every weight gradient; the transform's
  // smallest-id order runs each update right after its gradient.
  CHECK(peak_of(p, order) < schedule::given{}.run(p).peak);
}

TEST_CASE("early_weight_updates: graphs without update ops are unchanged, random graphs stay acyclic") {
  const auto p = make_problem(testing::random_dag(3, {.ops = 30}));
  CHECK(schedule::early_update_edges(p).empty());
  for (std::uint64_t seed = 0; seed < 30; ++seed) {
    graph::dataflow_graph g = testing::random_dag(seed, {.ops = 14});
    // mark the ops without successors' data as updates: the transform must still be acyclic
    const auto p0 = make_problem(g);
    graph::dataflow_graph h("upd-" + std::to_string(seed));
    std::vector<graph::tensor_ref> t;
    for (tensor_id i = 0; i < p0.num_tensors(); ++i) t.push_back(h.add_tensor(p0.tensor_name(i), p0.bytes(i), p0.kind(i)));
    for (tensor_id i = 0; i < p0.num_tensors(); ++i)
      if (p0.inplace_of(i) != no_id) h.set_inplace_of(t[static_cast<std::size_t>(i)], t[static_cast<std::size_t>(p0.inplace_of(i))]);
    for (op_id o = 0; o < p0.num_ops(); ++o) {
      std::vector<graph::tensor_ref> in, out;
      for (auto x : p0.inputs(o)) in.push_back(t[static_cast<std::size_t>(x)]);
      for (auto x : p0.outputs(o)) out.push_back(t[static_cast<std::size_t>(x)]);
      graph::op_attributes a;
      a.phase = (o % 4 == 3) ? op_phase::update : op_phase::forward;
      (void)h.add_op(p0.op_name(o), in, out, a);
    }
    const auto pu = make_problem(h);
    const auto q = schedule::early_weight_updates(pu);  // throws on a cycle
    const auto fwd = compute_levels(pu).asap;
    for (auto [u, a] : schedule::early_update_edges(pu)) CHECK(fwd[static_cast<std::size_t>(a)] > fwd[static_cast<std::size_t>(u)]);
    const auto r = testing::check_scheduler(pu, schedule::list_scheduler{schedule::priority::min_net_growth, true, schedule::tie_break::dfs, true, false});
    CHECK(!check_topological(q, r.order));  // it scheduled under the edges of q
    CHECK(schedule::exact{}.run(q).peak >= schedule::exact{}.run(pu).peak);  // orders of q are orders of pu
  }
}

TEST_CASE("spans: ASAP/ALAP of OLLA §4.1") {
  const auto p = small_mlp(2);
  const auto s = schedule::spans(p);
  const auto lv = compute_levels(p);
  for (std::size_t i = 0; i < s.size(); ++i) {
    CHECK(s[i].asap == lv.asap[i]);
    CHECK(s[i].alap == lv.alap[i]);
    CHECK(s[i].asap <= s[i].alap);
  }
}
