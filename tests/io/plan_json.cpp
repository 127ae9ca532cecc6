// io/plan_json.hpp and io/report.hpp: plans and reports as JSON.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include <memplan/core/problem_builder.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/core/verify.hpp>
#include <memplan/io/explain.hpp>
#include <memplan/io/json.hpp>
#include <memplan/io/plan_json.hpp>
#include <memplan/io/report.hpp>
#include <memplan/place/best_fit.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/schedule/given.hpp>
#include "../support/conv_head.hpp"
#include "io_support.hpp"

using iotest::data_dir;
using iotest::numbered;

using namespace memplan;

namespace {


// "t" + std::to_string(i) without the false -Wrestrict of g++ 12 at -O3 (GCC PR 105329).

void check_same_plan(const memory_plan& a, const memory_plan& b) {
  CHECK(a.steps == b.steps);
  CHECK(a.mats == b.mats);
  CHECK(a.arena == b.arena);
  CHECK(a.alignment == b.alignment);
  CHECK(a.stats.peak == b.stats.peak);
  CHECK(a.stats.lower_bound == b.stats.lower_bound);
  CHECK(a.stats.gap == b.stats.gap);
  CHECK(a.stats.arena == b.stats.arena);
  CHECK(a.stats.fragmentation == b.stats.fragmentation);
  CHECK(a.stats.given_peak == b.stats.given_peak);
  CHECK(a.stats.recompute_cost == b.stats.recompute_cost);
  CHECK(a.stats.transfer_bytes == b.stats.transfer_bytes);
  CHECK(a.stats.scheduler == b.stats.scheduler);
  CHECK(a.stats.placer == b.stats.placer);
  CHECK(a.stats.notes == b.stats.notes);
}

memory_plan plan_of(const problem& p, std::int64_t alignment = 1) {
  plan_context o;
  o.alignment = alignment;
  return plan(p, schedule::given{} | place::best_fit{}, o);
}

// The plan as a version-1 file (one offset per tensor, one workspace offset per op): what earlier
// memplan releases wrote. Valid for plans that materialize each storage once.
io::json as_version1(const problem& p, const memory_plan& mp) {
  auto j = io::plan_to_json(p, mp);
  j["version"] = 1;
  j.erase("initial");
  io::json offs = io::json::object(), ws = io::json::object();
  for (tensor_id t = 0; t < p.num_tensors(); ++t)
    if (p.storage_bytes(p.storage_of(t)) > 0) offs[p.tensor_name(t)] = first_offset(p, mp, t);
  for (const auto& st : mp.steps)
    if (runs_op(st.kind) && p.workspace(st.id) > 0) ws[p.op_name(st.id)] = st.workspace_offset;
  for (auto& st : j["steps"]) {
    st.erase("offsets");
    st.erase("workspace");
  }
  j["offsets"] = offs;
  j["workspace_offsets"] = ws;
  return j;
}

}  // namespace

TEST_CASE("plan round trip: names in the file, same plan back, still verified") {
  for (const auto* f : {"/example.json", "/small.json"})
    for (std::int64_t align : {1, 64}) {
      CAPTURE(f);
      const auto p = io::read_graph(data_dir + f);
      const auto mp = plan_of(p, align);
      const auto j = io::plan_to_json(p, mp);
      CHECK(j["format"] == "memplan-plan");
      CHECK(j["version"] == 2);
      CHECK(j["graph"] == p.name());
      CHECK(j["steps"][0]["kind"] == "compute");
      CHECK(j["steps"][0]["op"] == p.op_name(mp.steps[0].id));
      CHECK(j["initial"].size() > 0);
      const auto back = io::parse_plan(p, j.dump(1), "plan.json");
      check_same_plan(mp, back);
      CHECK(verify(p, back).ok);
      CHECK_FALSE(mp.stats.lower_bound_by.empty());
      CHECK(back.stats.lower_bound_by == mp.stats.lower_bound_by);
      CHECK(back.stats.impl_lower_bound == mp.stats.impl_lower_bound);
      // Plan files of version 1 keep loading: the same plan.
      const auto v1 = io::parse_plan(p, as_version1(p, mp).dump(1), "plan-v1.json");
      check_same_plan(mp, v1);
      CHECK(verify(p, v1).ok);
    }
}

TEST_CASE("plan JSON names workspaces by op and frees by tensor") {
  const auto p = io::read_graph(data_dir + "/small.json");
  const auto mp = plan_of(p);
  const auto j = io::plan_to_json(p, mp);
  int workspaces = 0;
  for (const auto& s : j["steps"])
    if (s.contains("workspace")) {
      ++workspaces;
      CHECK((s["op"] == "mm1" || s["op"] == "mm2_bw_x"));
    }
  CHECK(workspaces == 2);
  bool saw_free = false;
  for (const auto& s : j["steps"])
    if (s["kind"] == "free") {
      saw_free = true;
      CHECK(p.find_tensor(s["tensor"].get<std::string>()));
    }
  CHECK(saw_free);
  // Every non-empty storage materialized by a step has its offset there; the control tensor (0 bytes)
  // and in-place tensors (written into their base's storage) have none of their own.
  for (const auto& s : j["steps"]) {
    if (!s.contains("offsets")) continue;
    CHECK(!s["offsets"].contains("after_fwd"));
    CHECK(!s["offsets"].contains("w1_new"));
  }
  CHECK(j["initial"].contains("w1"));
}

TEST_CASE("random graphs: plan -> JSON -> plan is identical and verify agrees on tampered copies") {
  std::mt19937 rng(99);
  for (int i = 0; i < 25; ++i) {
    problem_builder b(numbered("r", i));
    std::vector<tensor_id> avail{b.add_tensor("in", 64 + rng() % 512, tensor_kind::input)};
    const int n = 4 + static_cast<int>(rng() % 20);
    for (int o = 0; o < n; ++o) {
      std::vector<tensor_id> ins{avail[rng() % avail.size()], avail[rng() % avail.size()]};
      auto t = b.add_tensor(numbered("t", o), 1 + rng() % 1000, o + 1 == n ? tensor_kind::output : tensor_kind::activation);
      b.add_op(numbered("op", o), ins, {t}, "x", op_phase::forward, 1.0, rng() % 3 == 0 ? 1 + rng() % 100 : 0);
      avail.push_back(t);
    }
    const auto p = b.build();
    const auto mp = plan(p, schedule::given{} | place::greedy_by_size{});
    const auto back = io::parse_plan(p, io::plan_to_json(p, mp).dump(), "r.json");
    check_same_plan(mp, back);
    CHECK(verify(p, back).ok);
    // Moving one buffer onto another one that is live at the same time must be caught.
    auto j = io::plan_to_json(p, mp);
    const auto lt = storage_lifetimes(p, mp.order());
    for (storage_id s = 0; s < p.num_storages(); ++s)
      for (storage_id u = s + 1; u < p.num_storages(); ++u) {
        const auto& a = lt[static_cast<std::size_t>(s)];
        const auto& c = lt[static_cast<std::size_t>(u)];
        if (!a.live() || !c.live() || a.last < c.first || c.last < a.first) continue;
        auto bad = j;
        const auto target = first_offset(p, mp, p.storage_root(s));
        for (auto& st : bad["steps"])
          if (st.contains("offsets") && st["offsets"].contains(p.tensor_name(p.storage_root(u)))) st["offsets"][p.tensor_name(p.storage_root(u))] = target;
        if (bad["initial"].contains(p.tensor_name(p.storage_root(u)))) bad["initial"][p.tensor_name(p.storage_root(u))] = target;
        const auto r = verify(p, io::plan_from_json(p, bad, "bad.json"));
        if (target + p.storage_bytes(u) <= mp.arena) {
          CHECK(!r.ok);
          CHECK(r.violation.find("overlaps") != std::string::npos);
        }
        s = p.num_storages();  // one pair per graph
        break;
      }
  }
}

TEST_CASE("plan files that do not fit the graph or are not plans are rejected by name") {
  const auto p = io::read_graph(data_dir + "/example.json");
  const auto good = io::plan_to_json(p, plan_of(p));
  struct bad_case {
    const char* what;
    io::json doc;
    errc code;
    std::string message;
  };
  auto with = [&](auto edit) { auto j = good; edit(j); return j; };
  const std::vector<bad_case> cases{
      {"wrong format", with([](io::json& j) { j["format"] = "memplan-graph"; }), errc::parse_error, "\"format\" is \"memplan-graph\""},
      {"wrong version", with([](io::json& j) { j["version"] = 9; }), errc::parse_error, "\"version\" is 9"},
      {"unknown op", with([](io::json& j) { j["steps"][0]["op"] = "warp_drive"; }), errc::invalid_plan,
       "steps[0] (compute): op 'warp_drive' is not in graph 'format-example'"},
      {"unknown tensor in a free", with([](io::json& j) {
         for (auto& s : j["steps"])
           if (s["kind"] == "free") { s["tensor"] = "ghost"; break; }
       }), errc::invalid_plan, "tensor 'ghost' is not in graph"},
      {"unknown tensor in initial", with([](io::json& j) { j["initial"]["phantom"] = 0; }), errc::invalid_plan,
       "\"initial\" names tensor 'phantom'"},
      {"missing initial offset", with([](io::json& j) { j["initial"].erase("x"); }), errc::invalid_plan,
       "\"initial\" has no offset for tensor 'x'"},
      {"missing offset", with([](io::json& j) { j["steps"][0]["offsets"].erase("t1"); }), errc::invalid_plan,
       "steps[0].offsets has no offset for tensor 't1'"},
      {"no offsets at all", with([](io::json& j) { j["steps"][0].erase("offsets"); }), errc::invalid_plan,
       "steps[0] (compute) materializes 't1' but gives no offset"},
      {"unknown implementation", with([](io::json& j) { j["steps"][0]["impl"] = "fast"; }), errc::invalid_plan,
       "has no implementation 'fast'"},
      {"version-1 file: unknown op in workspace offsets", with([&](io::json& j) {
         j = as_version1(p, io::plan_from_json(p, j, "x"));
         j["workspace_offsets"]["nop"] = 0;
       }), errc::invalid_plan, "\"workspace_offsets\" names op 'nop'"},
      {"version-1 file: missing offset", with([&](io::json& j) {
         j = as_version1(p, io::plan_from_json(p, j, "x"));
         j["offsets"].erase("t1");
       }), errc::invalid_plan, "no offset for tensor 't1'"},
      {"unknown step kind", with([](io::json& j) { j["steps"][1]["kind"] = "teleport"; }), errc::parse_error,
       "steps[1]: unknown step kind 'teleport'"},
      {"offset not an integer", with([](io::json& j) { j["steps"][0]["offsets"]["t1"] = "zero"; }), errc::parse_error,
       "steps[0].offsets['t1'] is \"zero\", not an integer"},
      {"missing steps", with([](io::json& j) { j.erase("steps"); }), errc::parse_error, "has no \"steps\""},
      {"missing stats", with([](io::json& j) { j.erase("stats"); }), errc::parse_error, "has no \"stats\""},
      {"step without op", with([](io::json& j) { j["steps"][0].erase("op"); }), errc::parse_error, "steps[0] has no \"op\""},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    try {
      (void)io::plan_from_json(p, c.doc, "plan.json");
      FAIL("accepted: ", c.what);
    } catch (const error& e) {
      CAPTURE(e.what());
      CHECK(e.code() == c.code);
      CHECK(std::string(e.what()).find(c.message) != std::string::npos);
    }
  }
  CHECK_THROWS_AS((void)io::parse_plan(p, "{ not json", "plan.json"), error);
}

TEST_CASE("report: figures from the plan, JSON with every key") {
  const auto p = io::read_graph(data_dir + "/small.json");
  const auto mp = plan_of(p, 256);
  const auto r = io::make_report(p, mp, 0.25, true);
  CHECK(r.graph == "small-train");
  CHECK(r.ops == 11);
  CHECK(r.tensors == 18);
  CHECK(r.planned_peak == mp.stats.peak);
  CHECK(r.arena_bytes == mp.arena);
  CHECK(r.arena_bytes >= r.planned_peak);
  CHECK(r.given_peak == 8260);  // tools/memplan_graph.py
  CHECK(r.fragmentation == doctest::Approx(static_cast<double>(mp.arena - mp.stats.peak) / static_cast<double>(mp.arena)));
  CHECK(r.lower_bound <= r.planned_peak);
  CHECK(r.alignment == 256);
  const auto j = io::report_to_json(r);
  for (const auto* k : {"graph", "ops", "tensors", "given_peak", "planned_peak", "arena_bytes", "fragmentation", "lower_bound", "gap",
                        "plan_seconds", "scheduler", "placer", "notes"})
    CHECK_MESSAGE(j.contains(k), k);
  CHECK(j["plan_seconds"] == 0.25);
  CHECK(j["lower_bound_by"] == mp.stats.lower_bound_by);
  std::ostringstream os;
  io::print_report(os, r);
  const auto text = os.str();
  CHECK(text.find("(" + mp.stats.lower_bound_by + " bound)") != std::string::npos);
  CHECK(text.find("small-train") != std::string::npos);
  CHECK(text.find("given order") != std::string::npos);
  CHECK(text.find("fragmentation") != std::string::npos);
  CHECK(io::human_bytes(512) == "512 B");
  CHECK(io::human_bytes(1536) == "1.50 KiB");
  CHECK(io::human_bytes(782497252) == "746.25 MiB");
}

TEST_CASE("report: the time line names every kind of stage that ran, the offloader's too") {
  const auto p = io::read_graph(data_dir + "/small.json");
  auto r = io::make_report(p, plan_of(p, 1), 2.5, true);
  r.schedule_seconds = 0.25;
  r.place_seconds = 0.5;
  r.checkpoint_seconds = r.offload_seconds = 0.0;
  const auto line = [&] {
    std::ostringstream os;
    io::print_report(os, r);
    const auto text = os.str();
    const auto at = text.find("\ntime ");
    REQUIRE(at != std::string::npos);
    return text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  };
  CHECK(line() == "time           2.500 s (schedule 0.250 s, place 0.500 s)");
  r.offload_seconds = 1.5;
  CHECK(line() == "time           2.500 s (schedule 0.250 s, offload 1.500 s, place 0.500 s)");
  r.checkpoint_seconds = 0.125;
  CHECK(line() == "time           2.500 s (schedule 0.250 s, checkpoint 0.125 s, offload 1.500 s, place 0.500 s)");
}

TEST_CASE("report, explain and plan file: the bound for the plan's implementations, when it says more") {
  // conv keeps its fast own implementation (1000 B of workspace); the lean one is twice as slow.
  const auto p = testing::conv_head("lean-but-slow", 1000, {{"slow", 20.0, 0}});
  const auto mp = plan(p, schedule::given{} | place::greedy_by_size{});
  REQUIRE(mp.stats.impl_lower_bound == 1200);
  const auto j = io::plan_to_json(p, mp);
  CHECK(j["stats"]["impl_lower_bound"] == 1200);
  CHECK(io::parse_plan(p, j.dump(1), "plan.json").stats.impl_lower_bound == 1200);
  const auto r = io::make_report(p, mp);
  CHECK(r.impl_lower_bound == 1200);
  CHECK(r.impl_gap == 0.0);
  const auto rj = io::report_to_json(r);
  CHECK(rj["impl_lower_bound"] == 1200);
  CHECK(rj["impl_gap"] == 0.0);
  std::ostringstream os;
  io::print_report(os, r);
  CHECK(os.str().find("impl bound     1.17 KiB (1200 B), gap 0.00 % for the plan's implementations") != std::string::npos);
  std::ostringstream ex;
  io::explain(ex, p, mp);
  CHECK(ex.str().find("lower bound 204 B (204 B) (" + mp.stats.lower_bound_by + ")\n") != std::string::npos);
  CHECK(ex.str().find("bound for the plan's implementations 1.17 KiB (1200 B): the rest of the gap needs") != std::string::npos);
  // Without alternatives the plan file and the report leave it out.
  const auto plain = testing::conv_head("plain", 1000, {});
  const auto pp = plan(plain, schedule::given{} | place::greedy_by_size{});
  CHECK(!io::plan_to_json(plain, pp)["stats"].contains("impl_lower_bound"));
  std::ostringstream os2;
  io::print_report(os2, io::make_report(plain, pp));
  CHECK(os2.str().find("impl bound") == std::string::npos);
}
