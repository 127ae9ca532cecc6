#include <doctest/doctest.h>

#include <memplan/core/pipeline.hpp>
#include <memplan/core/verify.hpp>
#include <memplan/graph/dataflow_graph.hpp>
#include <memplan/schedule/given.hpp>

#include "../support/random_dag.hpp"
#include "../support/stack_placer.hpp"

using namespace memplan;

namespace {
// x(in) -> f -> a(8) -> g -> b(8) -> h -> y(out 4);  f also needs workspace 16; w weight read by g.
graph::dataflow_graph chain() {
  graph::dataflow_graph g("chain");
  auto x = g.add_tensor("x", 8, tensor_kind::input);
  auto w = g.add_tensor("w", 8, tensor_kind::weight);
  auto a = g.add_tensor("a", 8);
  auto b = g.add_tensor("b", 8);
  auto y = g.add_tensor("y", 4, tensor_kind::output);
  g.add_op("f", {x}, {a}, {.workspace = 16});
  g.add_op("g", {a, w}, {b});
  g.add_op("h", {b}, {y});
  return g;
}

memory_plan valid_plan(const problem& p, std::int64_t alignment = 1) {
  return plan(p, schedule::given{} | testing::stack_placer{}, {.alignment = alignment});
}

std::string violation(const problem& p, const memory_plan& mp) {
  auto r = verify(p, mp);
  return r.ok ? "<valid>" : r.violation;
}

// The first materialization of tensor t's storage.
std::size_t mat_of(const problem& p, const memory_plan& mp, tensor_id t) {
  for (std::size_t m = 0; m < mp.mats.size(); ++m)
    if (mp.mats[m].storage == p.storage_of(t)) return m;
  FAIL("no materialization");
  return 0;
}

std::int32_t step_index(const memory_plan& mp, step_kind k, std::int32_t id) {
  for (std::size_t i = 0; i < mp.steps.size(); ++i)
    if (mp.steps[i].kind == k && mp.steps[i].id == id) return static_cast<std::int32_t>(i);
  return -1;
}
}  // namespace

TEST_CASE("verify: a planned chain is valid and its stats are re-derived") {
  const auto p = make_problem(chain());
  const auto mp = valid_plan(p);
  CHECK(verify(p, mp).ok);
  CHECK(mp.stats.peak == 8 + 8 + 8 + 16);  // x, w, a + workspace of f
  CHECK(mp.stats.arena >= mp.stats.peak);
  CHECK(mp.order() == std::vector<op_id>{0, 1, 2});
  CHECK(mp.stats.given_peak == mp.stats.peak);
}

TEST_CASE("verify: mutation tests -- each broken invariant is rejected with a precise message") {
  const auto p = make_problem(chain());
  const auto good = valid_plan(p);
  REQUIRE(verify(p, good).ok);

  SUBCASE("order: an op before its predecessor") {
    auto mp = good;
    std::swap(mp.steps[static_cast<std::size_t>(step_index(mp, step_kind::compute, 0))],
              mp.steps[static_cast<std::size_t>(step_index(mp, step_kind::compute, 1))]);
    auto v = violation(p, mp);
    CHECK(v.find("'g'") != std::string::npos);
    CHECK((v.find("runs before its predecessor 'f'") != std::string::npos || v.find("has not been produced") != std::string::npos));
    CHECK(verify(p, mp).step == 0);
  }
  SUBCASE("an op computed twice") {
    auto mp = good;
    mp.steps.push_back({step_kind::compute, 2});
    CHECK(violation(p, mp).find("already computed at step") != std::string::npos);
  }
  SUBCASE("an op never computed") {
    auto mp = good;
    mp.steps.erase(mp.steps.begin() + step_index(mp, step_kind::compute, 2));
    auto v = violation(p, mp);
    CHECK(v.find("'h' is never computed") != std::string::npos);
  }
  SUBCASE("reading a freed tensor") {
    auto mp = good;
    const auto fa = step_index(mp, step_kind::free, 2);
    REQUIRE(fa > 0);
    auto st = mp.steps[static_cast<std::size_t>(fa)];
    mp.steps.erase(mp.steps.begin() + fa);
    mp.steps.insert(mp.steps.begin() + step_index(mp, step_kind::compute, 1), st);  // free a before g reads it
    CHECK(violation(p, mp).find("reads tensor 'a' was freed at step") != std::string::npos);
  }
  SUBCASE("two live tensors overlap") {
    auto mp = good;
    mp.mats[mat_of(p, mp, 3)].offset = mp.mats[mat_of(p, mp, 2)].offset;  // b onto a while g runs (both live)
    auto v = violation(p, mp);
    CHECK(v.find("overlaps live tensor 'a'") != std::string::npos);
    CHECK(v.find("step 1 (compute 'g')") != std::string::npos);
  }
  SUBCASE("workspace overlaps a live tensor") {
    auto mp = good;
    mp.steps[static_cast<std::size_t>(step_index(mp, step_kind::compute, 0))].workspace_offset = mp.mats[mat_of(p, mp, 2)].offset;
    CHECK(violation(p, mp).find("workspace of 'f'") != std::string::npos);
  }
  SUBCASE("misaligned offset") {
    auto mp = valid_plan(p, 8);
    REQUIRE(verify(p, mp).ok);
    mp.mats[mat_of(p, mp, 4)].offset += 4;
    mp.arena += 8;
    mp.stats.arena = mp.arena;
    CHECK(violation(p, mp).find("tensor 'y' (materialization 4) at offset") != std::string::npos);
    CHECK(violation(p, mp).find("not aligned to 8") != std::string::npos);
  }
  SUBCASE("offset outside the arena") {
    auto mp = good;
    mp.arena -= 1;
    mp.stats.arena = mp.arena;
    CHECK(violation(p, mp).find("outside the arena") != std::string::npos);
  }
  SUBCASE("claimed peak is not the real one") {
    auto mp = good;
    mp.stats.peak -= 1;
    CHECK(violation(p, mp).find("claims a peak of") != std::string::npos);
  }
  SUBCASE("claimed lower bound above the peak") {
    auto mp = good;
    mp.stats.lower_bound = mp.stats.peak + 1;
    CHECK(violation(p, mp).find("lower bound") != std::string::npos);
  }
  SUBCASE("claimed arena differs") {
    auto mp = good;
    mp.stats.arena += 1;
    CHECK(violation(p, mp).find("stats claim an arena") != std::string::npos);
  }
  SUBCASE("freeing a resident weight") {
    auto mp = good;
    mp.steps.push_back({step_kind::free, 1});
    CHECK(violation(p, mp).find("frees a resident tensor") != std::string::npos);
  }
  SUBCASE("freeing an output") {
    auto mp = good;
    mp.steps.push_back({step_kind::free, 4});
    CHECK(violation(p, mp).find("holds an output") != std::string::npos);
  }
  SUBCASE("double free") {
    auto mp = good;
    const auto fa = step_index(mp, step_kind::free, 2);
    mp.steps.insert(mp.steps.begin() + fa, mp.steps[static_cast<std::size_t>(fa)]);
    CHECK(violation(p, mp).find("not live") != std::string::npos);
  }
  SUBCASE("offloaded tensor used without prefetch") {
    auto mp = good;
    mp.steps.insert(mp.steps.begin() + step_index(mp, step_kind::compute, 1), step{step_kind::offload, 2});
    mp.stats.transfer_bytes = 8;
    CHECK(violation(p, mp).find("reads tensor 'a' is offloaded to the host") != std::string::npos);
  }
  SUBCASE("prefetch of a tensor that is not on the host") {
    auto mp = good;
    mp.steps.insert(mp.steps.begin() + 1, step{step_kind::prefetch, 2});
    CHECK(violation(p, mp).find("not on the host") != std::string::npos);
  }
  SUBCASE("recompute before compute, and recompute over a value that holds no longer") {
    auto mp = good;
    auto rf = step{step_kind::recompute, 0};
    rf.workspace_offset = mp.steps[static_cast<std::size_t>(step_index(mp, step_kind::compute, 0))].workspace_offset;
    mp.steps.insert(mp.steps.begin(), rf);
    CHECK(violation(p, mp).find("never computed") != std::string::npos);
  }
  SUBCASE("a recompute of a value still live leaves it; naming a materialization it does not create is caught") {
    auto mp2 = good;
    const auto at = static_cast<std::size_t>(step_index(mp2, step_kind::compute, 0)) + 1;
    auto rf = step{step_kind::recompute, 0};
    rf.workspace_offset = mp2.steps[at - 1].workspace_offset;
    mp2.steps.insert(mp2.steps.begin() + static_cast<std::ptrdiff_t>(at), rf);
    mp2.stats.recompute_cost = p.cost(0);
    CHECK(verify(p, mp2).ok);
    mp2.steps[at].mat = 2;
    CHECK(violation(p, mp2).find("creates none") != std::string::npos);
  }
  SUBCASE("a step that materializes into another storage's materialization") {
    auto mp = good;
    auto& g = mp.steps[static_cast<std::size_t>(step_index(mp, step_kind::compute, 1))];
    g.mat = static_cast<std::int32_t>(mat_of(p, mp, 2));  // g writes b into a's materialization
    CHECK(violation(p, mp).find("which belongs to 'a'") != std::string::npos);
  }
  SUBCASE("a materialization no step creates, and one created twice") {
    auto mp = good;
    mp.mats.push_back({p.storage_of(3), 0, 0, 0});
    CHECK(violation(p, mp).find("is created by no step") != std::string::npos);
    auto mp2 = good;
    mp2.steps[static_cast<std::size_t>(step_index(mp2, step_kind::compute, 2))].mat =
        mp2.steps[static_cast<std::size_t>(step_index(mp2, step_kind::compute, 1))].mat;
    CHECK(!verify(p, mp2).ok);
  }
  SUBCASE("the preexisting storages are the first materializations") {
    auto mp = good;
    std::swap(mp.mats[0], mp.mats[1]);
    CHECK(violation(p, mp).find("should be preexisting tensor 'x'") != std::string::npos);
  }
  SUBCASE("an implementation that does not exist") {
    auto mp = good;
    mp.steps[static_cast<std::size_t>(step_index(mp, step_kind::compute, 1))].impl = 0;
    CHECK(violation(p, mp).find("implementation 0 does not exist") != std::string::npos);
  }
  SUBCASE("transfer bytes claimed wrongly") {
    auto mp = good;
    mp.stats.transfer_bytes = 1;
    CHECK(violation(p, mp).find("transfer bytes") != std::string::npos);
  }
}

TEST_CASE("verify: offload/prefetch and recompute plans are accepted when right") {
  const auto p = make_problem(chain());
  auto mp = valid_plan(p);
  // offload a after f, prefetch it before g: valid, 16 bytes moved.
  const auto g_at = step_index(mp, step_kind::compute, 1);
  mp.steps.insert(mp.steps.begin() + g_at, step{step_kind::prefetch, 2});
  mp.steps.insert(mp.steps.begin() + g_at, step{step_kind::offload, 2});
  relink(p, mp, /*inherit_offsets=*/true);  // the prefetched a goes back where it was
  mp.stats.transfer_bytes = 16;
  CHECK(verify(p, mp).ok);
  CHECK(mp.mats.size() == 6);
  // free a after f, recompute f before g: valid, recompute cost counted.
  auto rc = valid_plan(p);
  const auto g2 = step_index(rc, step_kind::compute, 1);
  rc.steps.insert(rc.steps.begin() + g2, step{step_kind::recompute, 0});
  rc.steps.insert(rc.steps.begin() + g2, step{step_kind::free, 2});
  relink(p, rc, true);
  rc.stats.recompute_cost = p.cost(0);
  CHECK(verify(p, rc).ok);
  // The recomputed a may live elsewhere: its own materialization, its own offset.
  auto moved = rc;
  moved.mats[static_cast<std::size_t>(moved.steps[static_cast<std::size_t>(step_index(moved, step_kind::recompute, 0))].mat)].offset =
      moved.arena;  // above everything
  moved.arena += 8;
  moved.stats.arena = moved.arena;
  CHECK(verify(p, moved).ok);
  rc.stats.recompute_cost += 1;
  CHECK(violation(p, rc).find("recompute cost") != std::string::npos);
}

TEST_CASE("verify: a resident storage must end where it started") {
  const auto p = make_problem(chain());
  auto mp = valid_plan(p);
  // offload the weight after g and prefetch it right back, at another offset.
  const auto h_at = step_index(mp, step_kind::compute, 2);
  mp.steps.insert(mp.steps.begin() + h_at, step{step_kind::prefetch, 1});
  mp.steps.insert(mp.steps.begin() + h_at, step{step_kind::offload, 1});
  relink(p, mp, true);
  mp.stats.transfer_bytes = 16;
  CHECK(verify(p, mp).ok);
  const auto back = mp.steps[static_cast<std::size_t>(step_index(mp, step_kind::prefetch, 1))].mat;
  mp.mats[static_cast<std::size_t>(back)].offset = mp.arena;
  mp.arena += 8;
  mp.stats.arena = mp.arena;
  CHECK(violation(p, mp).find("resident tensor 'w' ends at offset") != std::string::npos);
}

TEST_CASE("verify: every plan on random DAGs verifies, corrupting it is caught") {
  int caught = 0, tried = 0;
  for (std::uint64_t seed = 0; seed < 100; ++seed) {
    const auto p = make_problem(testing::random_dag(seed, {.ops = 20}));
    auto mp = valid_plan(p, 4);
    REQUIRE_MESSAGE(verify(p, mp).ok, verify(p, mp).violation);
    // Put one activation onto another whose lifetime overlaps: must be rejected.
    const auto lt = storage_lifetimes(p, mp.order());
    for (storage_id s = 0; s < p.num_storages() && tried <= caught; ++s)
      for (storage_id r = 0; r < s; ++r) {
        const auto& a = lt[static_cast<std::size_t>(s)];
        const auto& b = lt[static_cast<std::size_t>(r)];
        if (!a.live() || !b.live() || a.last < b.first || b.last < a.first) continue;
        auto bad = mp;
        bad.mats[mat_of(p, mp, p.storage_root(s))].offset = mp.mats[mat_of(p, mp, p.storage_root(r))].offset;
        ++tried;
        caught += !verify(p, bad).ok;
        break;
      }
  }
  CHECK(tried > 50);
  CHECK(caught == tried);
}

TEST_CASE("verify: recomputing an in-place op is valid while its base is readable, never an op marked not recomputable") {
  graph::dataflow_graph g("inplace-recompute");
  auto x = g.add_tensor("x", 8, tensor_kind::input);
  auto a = g.add_tensor("a", 8);
  auto a2 = g.add_tensor("a2", 8);
  auto r = g.add_tensor("r", 8);
  auto y = g.add_tensor("y", 4, tensor_kind::output);
  g.add_op("p", {x}, {a});
  g.add_op("relu_", {a}, {a2});
  g.set_inplace_of(a2, a);
  g.add_op("use", {a2}, {r}, {.recomputable = false});
  g.add_op("late", {a2, r}, {y});
  const auto p = make_problem(g);
  auto good = valid_plan(p);
  REQUIRE(verify(p, good).ok);
  // free {a, a2} after `use`, then recompute p and relu_ (in place again) before `late`.
  auto mp = good;
  const auto at = step_index(mp, step_kind::compute, 3);
  mp.steps.insert(mp.steps.begin() + at, step{step_kind::recompute, 1});
  mp.steps.insert(mp.steps.begin() + at, step{step_kind::recompute, 0});
  mp.steps.insert(mp.steps.begin() + at, step{step_kind::free, 1});
  relink(p, mp, true);
  mp.stats.recompute_cost = p.cost(0) + p.cost(1);
  CHECK(verify(p, mp).ok);
  // relu_ again after it already wrote a2: it reads a, which a2 overwrote -- no second update.
  auto twice = good;
  const auto u = step_index(twice, step_kind::compute, 2);
  twice.steps.insert(twice.steps.begin() + u, step{step_kind::recompute, 1});
  relink(p, twice, true);
  CHECK(violation(p, twice).find("reads tensor 'a' was overwritten in place by 'a2'") != std::string::npos);
  // `use` draws random numbers: it is never recomputed.
  auto rnd = good;
  const auto l = step_index(rnd, step_kind::compute, 3);
  rnd.steps.insert(rnd.steps.begin() + l, step{step_kind::recompute, 2});
  rnd.steps.insert(rnd.steps.begin() + l, step{step_kind::free, 3});
  relink(p, rnd, true);
  CHECK(violation(p, rnd).find("marked not recomputable") != std::string::npos);
}
