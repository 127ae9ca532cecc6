// Variants (core/variants.hpp) through the files: the graph format's implementations[].inputs is read,
// checked and written back; a plan names the variants its graph took, and reading it against the graph
// file takes them again, so the plan verifies there; the bundled MobileNet-V2 export carries the
// output-activated hardtanh_backward of tools/export_torch.py; on the bundled SqueezeNet the group
// search of plan_choosing_variants takes some concatenations' variants and not others.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <memplan/core/pipeline.hpp>
#include <memplan/core/plan_variants.hpp>
#include <memplan/core/variants.hpp>
#include <memplan/core/verify.hpp>
#include <memplan/io/gzip.hpp>
#include <memplan/io/json.hpp>
#include <memplan/io/plan_json.hpp>
#include <memplan/place/default_placer.hpp>
#include <memplan/remat/default_checkpointer.hpp>
#include <memplan/schedule/default_scheduler.hpp>

#include "../support/bundled_model.hpp"

using namespace memplan;

namespace {

std::string graph_text(const std::string& variant) {
  return R"({"format": "memplan-graph", "version": 1, "name": "v",
    "tensors": [{"id": "x", "bytes": 64, "kind": "input"}, {"id": "a", "bytes": 64, "kind": "activation"},
                {"id": "c", "bytes": 64, "kind": "activation"}, {"id": "y", "bytes": 64, "kind": "output"},
                {"id": "g", "bytes": 64, "kind": "output"}],
    "ops": [{"id": "f", "op": "f", "inputs": ["x"], "outputs": ["a"], "cost": 1},
            {"id": "copy", "op": "clone", "inputs": ["a"], "outputs": ["c"], "cost": 1},
            {"id": "h", "op": "h", "inputs": ["a"], "outputs": ["y"], "cost": 1},
            {"id": "b", "op": "b", "inputs": ["c"], "outputs": ["g"], "cost": 1,
             "implementations": [)" +
         variant + "]}]}";
}

std::string error_of(const std::string& text) {
  try {
    (void)io::parse_graph(text, "v.json");
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("graph JSON: a variant's inputs are read, checked and written back") {
  const auto p = io::parse_graph(graph_text(R"({"name": "from_a", "cost": 1, "workspace": 0, "inputs": ["a"]}, {"name": "fast", "cost": 0.5})"));
  const auto b = *p.find_op("b");
  REQUIRE(p.variants(b).size() == 1);
  CHECK(p.variants(b)[0].inputs == std::vector<std::string>{"a"});
  REQUIRE(p.implementations(b).size() == 1);
  CHECK(p.implementations(b)[0].name == "fast");
  const auto j = io::write_graph(p);
  CHECK(j["ops"][3]["implementations"][1]["inputs"] == nlohmann::ordered_json::array({"a"}));
  const auto again = io::parse_graph(j.dump());
  CHECK(again.variants(*again.find_op("b"))[0] == p.variants(b)[0]);

  CHECK(error_of(graph_text(R"({"name": "v", "inputs": "a"})")).find("implementations[0]: 'inputs' is not a list") != std::string::npos);
  CHECK(error_of(graph_text(R"({"name": "v", "inputs": []})")).find("\"inputs\" is empty") != std::string::npos);
  CHECK(error_of(graph_text(R"({"name": "v", "inputs": ["zz"]})")).find("implementations[0] reads unknown tensor 'zz'") != std::string::npos);
  CHECK(error_of(graph_text(R"({"name": "v", "inputs": ["g"]})")).find("variant 'v' reads the op's own output 'g'") != std::string::npos);
}

TEST_CASE("a plan names its variants and verifies against the graph file it came from") {
  const auto p = io::parse_graph(graph_text(R"({"name": "from_a", "cost": 1, "inputs": ["a"]})"));
  const auto r = choose_variants(p);
  REQUIRE(r.taken == std::vector<variant_choice>{{"b", "from_a"}});
  CHECK(r.removed_ops == std::vector<std::string>{"copy"});
  const auto mp = plan(r.rewritten, schedule::default_scheduler{} | place::default_placer{});
  REQUIRE(verify(r.rewritten, mp).ok);
  const auto text = io::plan_to_json(r.rewritten, mp, r.taken).dump();
  const auto back = io::parse_plan_with_variants(p, text, "v.plan.json");
  CHECK(back.variants == r.taken);
  CHECK(back.graph.num_ops() == p.num_ops() - 1);
  CHECK(verify(back.graph, back.plan).ok);
  // Read against the graph without its variants, the plan never runs the clone: verify says so.
  CHECK(!verify(p, io::parse_plan(p, text)).ok);
  // A plan without "variants" reads as before.
  const auto plain = plan(p, schedule::default_scheduler{} | place::default_placer{});
  const auto same = io::parse_plan_with_variants(p, io::plan_to_json(p, plain).dump());
  CHECK(same.variants.empty());
  CHECK(same.graph.num_ops() == p.num_ops());
  CHECK(verify(same.graph, same.plan).ok);
  // A variant the graph does not have: the plan is invalid, named.
  auto bad = io::plan_to_json(r.rewritten, mp, r.taken);
  bad["variants"][0]["implementation"] = "nope";
  try {
    (void)io::parse_plan_with_variants(p, bad.dump(), "v.plan.json");
    FAIL("no error");
  } catch (const error& e) {
    CHECK(e.code() == errc::invalid_plan);
    CHECK(std::string(e.what()).find("v.plan.json: op 'b' has no variant 'nope' (it has: from_a)") != std::string::npos);
  }
}

TEST_CASE("bundled MobileNet-V2: the output-activated hardtanh_backward removes the 35 saved clones") {
  const auto file = testing::bundled_model("mobilenet_v2-train-b1.json.gz");
  if (file.empty()) return;
  const auto p = io::read_graph(file);
  const auto r = choose_variants(p);
  CHECK(r.taken.size() == 35);
  CHECK(r.removed_ops.size() == 35);
  for (const auto& o : r.removed_ops) CHECK(p.op_type(*p.find_op(o)) == "aten.clone");
  // The clones are near a quarter of the given order's peak at batch 1 (101.3 -> 77.5 MB; 30 % at batch 32).
  CHECK(static_cast<double>(r.given_peak_after) < 0.8 * static_cast<double>(r.given_peak_before));
  const auto mp = plan(r.rewritten, schedule::default_scheduler{} | place::default_placer{});
  CHECK(verify(r.rewritten, mp).ok);
  const auto back = io::parse_plan_with_variants(p, io::plan_to_json(r.rewritten, mp, r.taken).dump());
  CHECK(verify(back.graph, back.plan).ok);
}

TEST_CASE("bundled SqueezeNet at half its peak: some concatenations' variants taken, not all, and the plan reads back") {
  const auto file = testing::bundled_model("squeezenet1_0-train-b1.json.gz");
  if (file.empty()) return;
  const auto p = io::read_graph(file);
  plan_context ctx;
  ctx.budget = plan(p, schedule::default_scheduler{} | place::default_placer{}).stats.peak / 2;
  ctx.deterministic = true;
  auto make = [&](const problem& q) {
    return plan(q, schedule::default_scheduler{} | remat::default_checkpointer{} | place::default_placer{}, ctx);
  };
  const auto r = plan_choosing_variants(p, make, {.time_limit_s = -1.0, .max_plans = 16});
  INFO(r.note);
  // 16 from_concatenation variants in 8 groups (one per fire module's concatenation).
  const auto loose = choose_variants(p, variant_rule::no_peak_higher);
  REQUIRE(loose.taken.size() == 16);
  CHECK(memplan::detail::variant_groups(p, {}, loose.taken).size() == 8);
  CHECK(!r.variants.taken.empty());
  CHECK(r.variants.taken.size() < 16);
  CHECK(r.plan.arena <= ctx.budget);
  CHECK(verify(r.variants.rewritten, r.plan).ok);
  CHECK(r.note.find("groups taken") != std::string::npos);
  // Better than either whole set by plan_choosing_variants' rules (neither set alone beats it).
  for (const auto* whole : {&p, &loose.rewritten}) CHECK(memplan::better_plan(r.variants.rewritten, r.plan, *whole, make(*whole)));
  // The plan names its variants; read against the graph file's problem it verifies.
  const auto back = io::parse_plan_with_variants(p, io::plan_to_json(r.variants.rewritten, r.plan, r.variants.taken).dump());
  CHECK(verify(back.graph, back.plan).ok);
}
