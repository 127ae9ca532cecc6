// The bundled PyTorch exports (tools/export_torch.py v2) can be recomputed where it is sound: a
// training batch norm is a normalization plus a separate running-statistics update, so a plan may
// drop the normalized activation (and the relu_ written over it) after the forward pass and
// recompute both for the backward pass; the statistics update and dropout's random masks are never
// recomputed. Every plan here goes through memplan::verify.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include <memplan/core/pipeline.hpp>
#include <memplan/core/verify.hpp>
#include <memplan/io/gzip.hpp>
#include <memplan/io/json.hpp>
#include <memplan/schedule/given.hpp>

#include "../support/bundled_model.hpp"
#include "../support/stack_placer.hpp"

using namespace memplan;

namespace {

std::int32_t step_of(const memory_plan& mp, step_kind k, std::int32_t id) {
  for (std::size_t i = 0; i < mp.steps.size(); ++i)
    if (mp.steps[i].kind == k && mp.steps[i].id == id) return static_cast<std::int32_t>(i);
  return -1;
}

op_id first_op(const problem& p, const std::string& type, op_id from = 0) {
  for (op_id o = from; o < p.num_ops(); ++o)
    if (p.op_type(o) == type) return o;
  return no_id;
}

bool reads(const problem& p, op_id o, storage_id s) {
  return std::any_of(p.inputs(o).begin(), p.inputs(o).end(), [&](tensor_id t) { return p.storage_of(t) == s; });
}

// A plan of the given order with a private offset for every materialization (nothing reused), so
// that an inserted recomputation can take its storage's old offset.
memory_plan stack_plan(const problem& p) { return plan(p, schedule::given{} | testing::stack_placer{}); }

// Frees tensor t's storage right after op `after` and recomputes `ops` right before op `before`.
memory_plan with_recompute(const problem& p, const memory_plan& good, tensor_id t, op_id after, op_id before,
                           std::initializer_list<op_id> ops) {
  auto mp = good;
  const auto at = step_of(mp, step_kind::compute, before);
  std::vector<step> ins{step{step_kind::free, t}};
  double cost = 0;
  for (auto o : ops) {
    ins.push_back(step{step_kind::recompute, o});
    cost += p.cost(o);
  }
  mp.steps.insert(mp.steps.begin() + at, ins.begin(), ins.end());
  // the free goes right after `after` (before `before` in the given order)
  const auto f = step_of(mp, step_kind::free, t);
  const auto a = step_of(mp, step_kind::compute, after);
  auto fs = mp.steps[static_cast<std::size_t>(f)];
  mp.steps.erase(mp.steps.begin() + f);
  mp.steps.insert(mp.steps.begin() + a + 1, fs);
  relink(p, mp, true);
  mp.stats.peak = mp.peak;
  mp.stats.recompute_cost = cost;
  return mp;
}

}  // namespace

TEST_CASE("bundled resnet18 training: batch norm + relu_ recompute for the backward pass, the stats update never") {
  const auto path = testing::bundled_model("resnet18-train-b1.json.gz");
  if (path.empty()) return;
  const auto p = io::read_graph(path);
  CHECK(p.cost_unit() == "seconds");
  const auto good = stack_plan(p);
  REQUIRE(verify(p, good).ok);

  // o3 native_batch_norm (conv1's output -> y), o4 its running-stats update, o5 relu_ over y
  const auto bn = first_op(p, "aten.native_batch_norm");
  REQUIRE(bn != no_id);
  const auto upd = bn + 1, relu = bn + 2;
  REQUIRE(p.op_type(upd) == "memplan.batch_norm_running_stats");
  REQUIRE(p.op_type(relu) == "aten.relu_");
  CHECK(p.recomputable(bn));
  const auto y = p.outputs(relu)[0];  // relu_'s output, in place over the normalized y
  const auto s = p.storage_of(y);
  // the last forward reader of that storage, and its first reader in the backward pass
  op_id last_fwd = no_id, first_bwd = no_id;
  for (op_id o = relu + 1; o < p.num_ops(); ++o) {
    if (!reads(p, o, s)) continue;
    if (p.phase(o) == op_phase::forward) last_fwd = o;
    else if (first_bwd == no_id) first_bwd = o;
  }
  REQUIRE(last_fwd != no_id);
  REQUIRE(first_bwd != no_id);

  // free y after the forward pass, recompute the normalization and relu_ (in place again) before
  // the backward reads it: valid, and the freed interval lowers no peak below the lower bound.
  const auto mp = with_recompute(p, good, y, last_fwd, first_bwd, {bn, relu});
  const auto r = verify(p, mp);
  INFO(r.violation);
  CHECK(r.ok);
  CHECK(mp.stats.recompute_cost > 0);

  // recomputing the statistics update is refused: it reads running_mean, which it overwrote itself.
  auto twice = good;
  twice.steps.insert(twice.steps.begin() + step_of(twice, step_kind::compute, first_bwd), step{step_kind::recompute, upd});
  relink(p, twice, true);
  const auto v = verify(p, twice);
  CHECK_FALSE(v.ok);
  CHECK(v.violation.find("overwritten in place") != std::string::npos);
}

TEST_CASE("bundled transformer training: dropout masks are never recomputed") {
  const auto path = testing::bundled_model("transformer-train-b1.json.gz");
  if (path.empty()) return;
  const auto p = io::read_graph(path);
  const auto good = stack_plan(p);
  REQUIRE(verify(p, good).ok);
  int masks = 0;
  for (op_id o = 0; o < p.num_ops(); ++o) {
    CHECK(p.recomputable(o) == (p.op_type(o) != "aten.bernoulli_"));
    masks += p.op_type(o) == "aten.bernoulli_";
  }
  CHECK(masks == 8);
  // the first mask: free it after its first reader, recompute it (with the empty_like under it) before the next
  const auto mask_op = first_op(p, "aten.bernoulli_");
  const auto alloc = mask_op - 1;
  REQUIRE(p.op_type(alloc) == "aten.empty_like");
  CHECK(p.recomputable(alloc));
  const auto m = p.outputs(mask_op)[0];
  op_id r1 = no_id, r2 = no_id;
  for (op_id o = mask_op + 1; o < p.num_ops() && r2 == no_id; ++o)
    if (reads(p, o, p.storage_of(m))) (r1 == no_id ? r1 : r2) = o;
  REQUIRE(r2 != no_id);
  const auto mp = with_recompute(p, good, m, r1, r2, {alloc, mask_op});
  const auto v = verify(p, mp);
  CHECK_FALSE(v.ok);
  CHECK(v.violation.find("not recomputable") != std::string::npos);
}
