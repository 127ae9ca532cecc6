// io/svg.hpp: the heap map is well-formed XML with one rectangle per live interval.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <memplan/core/problem_builder.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/core/verify.hpp>
#include <memplan/io/json.hpp>
#include <memplan/io/svg.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/schedule/given.hpp>
#include "../support/bundled_model.hpp"
#include "io_support.hpp"

using iotest::data_dir;
using iotest::numbered;

using namespace memplan;

namespace {


// "t" + std::to_string(i) without the false -Wrestrict of g++ 12 at -O3 (GCC PR 105329).

struct xml_summary {
  bool balanced = true;
  std::string problem;
  int rects = 0, block_rects = 0, legend_rects = 0, titles = 0;
};

// A tiny XML checker: every tag closed in order, attribute quotes balanced; counts <rect>s.
xml_summary check_xml(const std::string& s) {
  xml_summary r;
  std::vector<std::string> stack;
  std::size_t i = 0;
  while ((i = s.find('<', i)) != std::string::npos) {
    const auto end = s.find('>', i);
    if (end == std::string::npos) { r.balanced = false; r.problem = "unterminated tag"; return r; }
    std::string tag = s.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty()) { r.balanced = false; r.problem = "empty tag"; return r; }
    if (tag[0] == '?' || tag[0] == '!') continue;
    if (std::count(tag.begin(), tag.end(), '"') % 2 != 0) { r.balanced = false; r.problem = "odd quotes in <" + tag + ">"; return r; }
    if (tag[0] == '/') {
      const auto name = tag.substr(1);
      if (stack.empty() || stack.back() != name) { r.balanced = false; r.problem = "</" + name + "> closes nothing open"; return r; }
      stack.pop_back();
      continue;
    }
    const bool self = tag.back() == '/';
    const auto name = tag.substr(0, tag.find_first_of(" /"));
    if (name == "rect") {
      ++r.rects;
      if (tag.find("class=\"b\"") != std::string::npos) ++r.block_rects;
      if (tag.find("class=\"legend\"") != std::string::npos) ++r.legend_rects;
    }
    if (name == "title") ++r.titles;
    if (!self) stack.push_back(name);
  }
  if (!stack.empty()) { r.balanced = false; r.problem = "<" + stack.back() + "> never closed"; }
  return r;
}

memory_plan greedy_by_size_plan(const problem& p) { return plan(p, schedule::given{} | place::greedy_by_size{}); }

}  // namespace

TEST_CASE("heap map of the small graph: well-formed, one block per storage and workspace, legend, lines") {
  const auto p = io::read_graph(data_dir + "/small.json");
  const auto mp = greedy_by_size_plan(p);
  const auto svg = io::heap_svg(p, mp);
  const auto x = check_xml(svg);
  INFO(x.problem);
  CHECK(x.balanced);
  // Independent count: make_plan allocates each non-empty storage once and frees it once, and
  // every op with a workspace adds one block.
  int expected = 0;
  for (storage_id s = 0; s < p.num_storages(); ++s) expected += p.storage_bytes(s) > 0 ? 1 : 0;
  for (op_id o = 0; o < p.num_ops(); ++o) expected += p.workspace(o) > 0 ? 1 : 0;
  CHECK(x.block_rects == expected);
  CHECK(x.titles == expected);  // one tooltip per block
  // Kinds present: input, weight, optimizer_state, activation, output, gradient + workspace.
  CHECK(x.legend_rects == 7);
  CHECK(x.rects == x.block_rects + x.legend_rects + 2);  // + background + plot frame
  CHECK(svg.find("small-train: heap map") != std::string::npos);
  CHECK(svg.find(">peak ") != std::string::npos);
  CHECK(svg.find(">arena ") != std::string::npos);
  CHECK(svg.find("address (") != std::string::npos);
  CHECK(svg.find("workspace of mm1") != std::string::npos);
  // The peak step is marked, with what is live there, largest first.
  REQUIRE(mp.peak_tick >= 0);
  CHECK(svg.find("at the peak (step " + std::to_string(mp.peak_tick) + ")") != std::string::npos);
}

TEST_CASE("heap map: the lower-bound line appears when the bound is below the peak, and only then") {
  const auto p = io::read_graph(data_dir + "/small.json");
  auto mp = greedy_by_size_plan(p);
  mp.stats.lower_bound = mp.stats.peak / 2;
  CHECK(io::heap_svg(p, mp).find(">lower bound ") != std::string::npos);
  mp.stats.lower_bound = mp.stats.peak;
  CHECK(io::heap_svg(p, mp).find(">lower bound ") == std::string::npos);
}

TEST_CASE("heap blocks: inside the arena, disjoint when live together, live bytes match the profile") {
  std::mt19937 rng(3);
  for (int i = 0; i < 20; ++i) {
    problem_builder b("g");
    std::vector<tensor_id> avail{b.add_tensor("in", 100 + rng() % 1000, tensor_kind::input),
                                 b.add_tensor("w", 100 + rng() % 1000, tensor_kind::weight)};
    const int n = 3 + static_cast<int>(rng() % 30);
    for (int o = 0; o < n; ++o) {
      // One rng() call per statement: the order of evaluation of arguments is unspecified.
      const auto bytes = static_cast<std::int64_t>(rng() % 2000);
      const auto kind = rng() % 9 == 0 ? tensor_kind::output : tensor_kind::activation;
      auto t = b.add_tensor(numbered("t", o), bytes, kind);
      const std::vector<tensor_id> ins{avail[rng() % avail.size()], avail[rng() % avail.size()]};
      const auto ws = rng() % 4 == 0 ? static_cast<std::int64_t>(1 + rng() % 300) : 0;
      b.add_op(numbered("o", o), ins, {t}, "x", op_phase::forward, 0, ws);
      avail.push_back(t);
    }
    const auto p = b.build();
    const auto mp = greedy_by_size_plan(p);
    const auto blocks = io::heap_blocks(p, mp);
    std::vector<std::int64_t> live(static_cast<std::size_t>(p.num_ops()), 0);
    for (std::size_t a = 0; a < blocks.size(); ++a) {
      const auto& x = blocks[a];
      CHECK(x.begin < x.end);
      CHECK(x.offset >= 0);
      CHECK(x.offset + x.bytes <= mp.arena);
      for (auto k = x.begin; k < x.end; ++k) live[static_cast<std::size_t>(k)] += x.bytes;
      for (std::size_t c = a + 1; c < blocks.size(); ++c) {
        const auto& y = blocks[c];
        const bool together = x.begin < y.end && y.begin < x.end;
        const bool share = x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes;
        CHECK_FALSE((together && share));
      }
    }
    const auto prof = profile(p, mp.order());
    CHECK(live == prof.live);
    io::svg_options plain;
    plain.tooltips = false;
    CHECK(check_xml(io::heap_svg(p, mp, plain)).balanced);
  }
}

TEST_CASE("heap blocks follow offload and prefetch steps") {
  problem_builder b("offload");
  auto x = b.add_tensor("x", 100, tensor_kind::input);
  auto a = b.add_tensor("a", 400, tensor_kind::activation);
  auto c = b.add_tensor("c", 50, tensor_kind::activation);
  auto d = b.add_tensor("d", 10, tensor_kind::output);
  b.add_op("f", {x}, {a});
  b.add_op("g", {x}, {c});
  b.add_op("h", {a, c}, {d});
  const auto p = b.build();
  memory_plan mp;
  // f, offload a, g, prefetch a, h, free a, free c
  mp.steps = {{step_kind::compute, 0}, {step_kind::offload, a}, {step_kind::compute, 1}, {step_kind::prefetch, a},
              {step_kind::compute, 2}, {step_kind::free, a},    {step_kind::free, c}};
  relink(p, mp);
  // x 0, a 100 (and again at 100 when prefetched), c 500, d 550
  REQUIRE(mp.mats.size() == 5);
  mp.mats[0].offset = 0;
  mp.mats[1].offset = 100;
  mp.mats[2].offset = 500;
  mp.mats[3].offset = 100;
  mp.mats[4].offset = 550;
  mp.arena = 560;
  mp.stats.arena = 560;
  mp.stats.peak = 560;
  mp.stats.transfer_bytes = 800;
  const auto v = verify(p, mp);
  INFO(v.violation);
  REQUIRE(v.ok);
  const auto blocks = io::heap_blocks(p, mp);
  int a_blocks = 0;
  for (const auto& bl : blocks)
    if (bl.tensor == a) {
      ++a_blocks;
      CHECK(((bl.begin == 0 && bl.end == 1) || (bl.begin == 2 && bl.end == 3)));
    }
  CHECK(a_blocks == 2);
  CHECK(blocks.size() == 5);  // x, a twice, c, d
  CHECK(check_xml(io::heap_svg(p, mp)).block_rects == 5);
}

TEST_CASE("names with XML specials are escaped") {
  problem_builder b("a<b>&\"c\"");
  auto x = b.add_tensor("x<&>'\"", 10, tensor_kind::input);
  auto y = b.add_tensor("y", 10, tensor_kind::output);
  b.add_op("op&<", {x}, {y});
  const auto p = b.build();
  const auto svg = io::heap_svg(p, greedy_by_size_plan(p));
  CHECK(check_xml(svg).balanced);
  CHECK(svg.find("x&lt;&amp;&gt;&apos;&quot;") != std::string::npos);
  CHECK(svg.find("a&lt;b&gt;&amp;&quot;c&quot;: heap map") != std::string::npos);
}

TEST_CASE("heap map of a bundled model stays compact") {
  const auto path = testing::bundled_model("resnet18-train-b32.json.gz");
  if (path.empty()) return;
  const auto p = io::read_graph(path);
  const auto mp = greedy_by_size_plan(p);
  const auto svg = io::heap_svg(p, mp);
  const auto x = check_xml(svg);
  CHECK(x.balanced);
  CHECK(x.block_rects == static_cast<int>(io::heap_blocks(p, mp).size()));
  CHECK(svg.size() < 400 * static_cast<std::size_t>(x.block_rects) + 20000);
}
