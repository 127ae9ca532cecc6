// Recording and replaying memory resources (runtime/trace.hpp, runtime/replay.hpp): traces, plans,
// replays of the same program (all from the slab), divergent programs (fallback, never an overlap),
// threads with one slab each.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include <memplan/place/best_fit.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/place/lower_bound.hpp>
#include <memplan/runtime/replay.hpp>
#include <memplan/runtime/trace.hpp>

#include "allocation_script.hpp"

using namespace memplan;
using namespace memplan::runtime;
using memplan::test::overlap_checker;
using memplan::test::random_script;
using memplan::test::run_script;
using memplan::test::script;
using memplan::test::script_op;

namespace {
allocation_trace record(const script& s) {
  recording_resource rec;
  overlap_checker chk;
  auto rr = run_script(s, rec, chk);
  auto t = rec.take();
  memplan::test::release(rr, *std::pmr::new_delete_resource(), chk);
  return t;
}
std::int64_t planned_count(const allocation_trace& t) {
  return std::count_if(t.allocations.begin(), t.allocations.end(), [](const auto& r) { return allocation_trace::planned(r); });
}
}  // namespace

TEST_CASE("the recorder captures sizes, alignments, event order, lifetimes and tags") {
  recording_resource rec;
  void* a = rec.allocate_tagged(100, 64, "conv1.out");
  rec.set_scope("relu1");
  void* b = rec.allocate(200, 16);
  rec.deallocate(a);
  void* c = rec.allocate(100, 64);  // the upstream may reuse a's address: still a new allocation
  rec.deallocate(b, 200, 16);
  const auto& t = rec.trace();
  REQUIRE(t.allocations.size() == 3);
  CHECK(t.allocations[0].size == 100);
  CHECK(t.allocations[0].alignment == 64);
  CHECK(t.allocations[0].tag == "conv1.out");
  CHECK(t.allocations[1].tag == "relu1");
  CHECK(t.allocations[0].begin == 0);
  CHECK(t.allocations[1].begin == 1);
  CHECK(t.allocations[0].end == 2);
  CHECK(t.allocations[2].begin == 3);
  CHECK(t.allocations[1].end == 4);
  CHECK_FALSE(t.allocations[2].freed());
  CHECK(t.events == 5);
  // A view into c resolves to c (§3.1: aliases are resolved, not planned twice).
  CHECK(rec.owner(static_cast<char*>(c) + 40) == 2);
  CHECK(rec.note_view(static_cast<char*>(c) + 40, "c[10:]") == 2);
  CHECK(t.views.back().offset == 40);
  CHECK(rec.owner(a) != 0);  // a is dead: no live allocation is called 0 any more
  CHECK(live_peak(t) == 300);
  const auto tp = to_buffer_problem(t);
  REQUIRE(tp.problem.buffers.size() == 2);  // c escapes: left to upstream
  CHECK(tp.problem.buffers[0].lower == 0);
  CHECK(tp.problem.buffers[0].upper == 2);
  rec.deallocate(c);
}

TEST_CASE("the live offset table agrees with a map under random inserts and erases") {
  std::mt19937_64 rng(7);
  runtime::detail::offset_table table(200);
  std::map<std::int64_t, std::int32_t> ref;
  for (int k = 0; k < 20000; ++k) {
    const bool add = ref.size() < 200 && (ref.empty() || rng() % 2);
    if (add) {
      std::int64_t off = static_cast<std::int64_t>(rng() % 100000) * 64;
      if (ref.count(off)) continue;
      const auto rank = static_cast<std::int32_t>(rng() % 1000);
      table.insert(off, rank);
      ref[off] = rank;
    } else {
      auto it = ref.begin();
      std::advance(it, static_cast<long>(rng() % ref.size()));
      REQUIRE(table.erase(it->first) == it->second);
      REQUIRE(table.erase(it->first) == -1);
      ref.erase(it);
    }
  }
}

TEST_CASE("replaying the recorded program serves every planned allocation from the slab") {
  std::mt19937_64 rng(1);
  for (int trial = 0; trial < 40; ++trial) {
    const auto s = random_script(rng, 30 + trial * 5);
    const auto t = record(s);
    auto plan = std::make_shared<const replay_plan>(plan_trace(t, place::greedy_by_size{}));
    CHECK(plan->planned == planned_count(t));
    replaying_resource<> mem(plan);
    CHECK(mem.reserved_bytes() == plan->arena);
    for (int run = 0; run < 3; ++run) {
      overlap_checker chk;
      const auto rr = run_script(s, mem, chk);
      memplan::test::release(rr, mem, chk);  // escaping allocations came from upstream
    }
    const auto& st = mem.stats();
    CHECK(st.divergent_runs == 0);
    CHECK(st.runs == 3);  // cyclic: each repetition started a run by itself
    CHECK(st.hits == 3 * plan->planned);
    CHECK(st.misses == 0);
    CHECK(st.unplanned == 3 * (static_cast<std::int64_t>(t.allocations.size()) - plan->planned));
  }
}

TEST_CASE("any placer's plan replays, the slab is the placement's arena") {
  std::mt19937_64 rng(2);
  const auto s = random_script(rng, 200);
  const auto t = record(s);
  const auto a = plan_trace(t, place::greedy_by_size{});
  const auto b = plan_trace(t, place::best_fit{});
  CHECK(a.arena >= place::arena_lower_bound(to_buffer_problem(t).problem));
  replaying_resource<> mem(std::make_shared<const replay_plan>(b));
  overlap_checker chk;
  memplan::test::release(run_script(s, mem, chk), mem, chk);
  CHECK(mem.stats().misses == 0);
  CHECK(mem.reserved_bytes() == b.arena);
}

namespace {
// Perturbations of a script that a later run might do.
script change_a_size(script s, std::mt19937_64& rng) {
  std::vector<std::size_t> allocs;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i].alloc) allocs.push_back(i);
  s[allocs[rng() % allocs.size()]].bytes += 64;
  return s;
}
script delay_a_free(script s, std::mt19937_64& rng) {  // a free moves later (past allocations)
  std::vector<std::size_t> frees;
  for (std::size_t i = 0; i + 1 < s.size(); ++i)
    if (!s[i].alloc) frees.push_back(i);
  if (frees.empty()) return s;
  const auto i = frees[rng() % frees.size()];
  const auto op = s[i];
  s.erase(s.begin() + static_cast<std::ptrdiff_t>(i));
  const auto j = i + rng() % (s.size() - i + 1);
  s.insert(s.begin() + static_cast<std::ptrdiff_t>(j), op);
  return s;
}
script free_early(script s, std::mt19937_64& rng) {  // a free moves earlier (never before its alloc)
  std::vector<std::size_t> frees;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (!s[i].alloc) frees.push_back(i);
  if (frees.empty()) return s;
  const auto i = frees[rng() % frees.size()];
  const auto op = s[i];
  std::size_t born = 0;
  while (!(s[born].alloc && s[born].id == op.id)) ++born;
  s.erase(s.begin() + static_cast<std::ptrdiff_t>(i));
  const auto j = born + 1 + rng() % (i - born);
  s.insert(s.begin() + static_cast<std::ptrdiff_t>(j), op);
  return s;
}
script swap_two_allocs(script s, std::mt19937_64& rng) {  // two allocations trade places (their ids stay)
  std::vector<std::size_t> allocs;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i].alloc) allocs.push_back(i);
  const auto a = allocs[rng() % allocs.size()], b = allocs[rng() % allocs.size()];
  std::swap(s[a].bytes, s[b].bytes);
  std::swap(s[a].alignment, s[b].alignment);
  return s;
}
script extra_allocations(script s, std::mt19937_64& rng) {  // the run allocates more than the trace
  std::int32_t next = 0;
  for (const auto& op : s)
    if (op.alloc) next = std::max(next, op.id + 1);
  const auto pos = rng() % (s.size() + 1);
  s.insert(s.begin() + static_cast<std::ptrdiff_t>(pos), {script_op{true, 512, 8, next}, script_op{false, 0, 0, next}});
  return s;
}
}  // namespace

TEST_CASE("divergent runs fall back to upstream and never hand out overlapping live memory (property)") {
  std::mt19937_64 rng(3);
  int divergent = 0, total = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const auto s = random_script(rng, 60);
    const auto t = record(s);
    auto plan = std::make_shared<const replay_plan>(plan_trace(t, place::greedy_by_size{}));
    replaying_resource<> mem(plan);
    for (int k = 0; k < 6; ++k) {
      script v;
      switch (k) {
        case 0: v = change_a_size(s, rng); break;
        case 1: v = delay_a_free(s, rng); break;
        case 2: v = free_early(s, rng); break;
        case 3: v = swap_two_allocs(s, rng); break;
        case 4: v = extra_allocations(s, rng); break;
        default: v = delay_a_free(delay_a_free(free_early(s, rng), rng), rng); break;
      }
      const auto before = mem.stats().divergent_runs;
      mem.begin_run();
      overlap_checker chk;
      {
        const auto rr = run_script(v, mem, chk);  // throws on overlap, misalignment, overwritten data
        memplan::test::release(rr, mem, chk);
      }
      CHECK(mem.live_slab_allocations() == 0);
      CHECK(mem.stats().bad_frees == 0);
      divergent += mem.stats().divergent_runs > before;
      ++total;
      if (k == 0) CHECK(mem.stats().divergent_runs > before);  // a different size always diverges
      if (k == 4) CHECK(mem.stats().misses > 0);
    }
    // Back on the recorded program: the slab serves everything again.
    mem.begin_run();
    const auto hits = mem.stats().hits, misses = mem.stats().misses;
    overlap_checker chk;
    memplan::test::release(run_script(s, mem, chk), mem, chk);
    CHECK(mem.stats().hits - hits == plan->planned);
    CHECK(mem.stats().misses == misses);
  }
  CHECK(divergent > total / 4);
  MESSAGE(divergent << " of " << total << " perturbed runs diverged, none overlapped");
}

TEST_CASE("a run that starts while slab memory is still live starts divergent") {
  std::mt19937_64 rng(4);
  const auto s = random_script(rng, 20, 1024, 0.0);
  const auto t = record(s);
  replaying_resource<> mem(std::make_shared<const replay_plan>(plan_trace(t, place::greedy_by_size{})));
  void* p = mem.allocate(static_cast<std::size_t>(t.allocations[0].size), static_cast<std::size_t>(t.allocations[0].alignment));
  if (t.allocations[0].size > 0) CHECK(mem.owns(p));
  mem.begin_run();
  CHECK(mem.diverged());
  overlap_checker chk;
  chk.on_alloc(p, static_cast<std::size_t>(t.allocations[0].size), 8);
  memplan::test::release(run_script(s, mem, chk), mem, chk);
  mem.deallocate(p, static_cast<std::size_t>(t.allocations[0].size), static_cast<std::size_t>(t.allocations[0].alignment));
  mem.begin_run();
  CHECK_FALSE(mem.diverged());
}

TEST_CASE("threads replay one shared plan, each with its own slab, without locks") {
  std::mt19937_64 rng(5);
  const auto s = random_script(rng, 300);
  const auto plan = std::make_shared<const replay_plan>(plan_trace(record(s), place::greedy_by_size{}));
  std::vector<replay_stats> stats(4);
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < stats.size(); ++k)
    threads.emplace_back([&, k] {
      replaying_resource<> mem(plan);
      for (int run = 0; run < 20; ++run) {
        overlap_checker chk;
        memplan::test::release(run_script(s, mem, chk), mem, chk);
      }
      stats[k] = mem.stats();
    });
  for (auto& th : threads) th.join();
  for (const auto& st : stats) {
    CHECK(st.hits == 20 * plan->planned);
    CHECK(st.misses == 0);
  }
}
