#pragma once
// The bodies of memplan's fuzz targets, shared by the libFuzzer entry points (fuzz_*.cpp, clang with
// -fsanitize=fuzzer,address,undefined) and by test_fuzz_replay.cpp, which runs every seed and every
// regression input through them in the ordinary g++ build.
//
// A target may reject its input with memplan::error (that is what malformed input must give); any
// other exception, a crash, a sanitizer report, or a broken property (fuzz::finding) is a bug. The
// properties checked go beyond "does not crash": a graph that parses writes back and re-parses to the
// same graph and gets a verified plan; a plan that verify accepts satisfies the invariants checked
// again here by a simpler replay; a placement of a parsed buffer list passes place::check.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/core/pipeline.hpp>
#include <memplan/core/verify.hpp>
#include <memplan/io/buffers_csv.hpp>
#include <memplan/io/file.hpp>
#include <memplan/io/json.hpp>
#include <memplan/io/plan_json.hpp>
#include <memplan/place/best_fit.hpp>
#include <memplan/place/detail/support.hpp>
#include <memplan/place/greedy_by_size.hpp>
#include <memplan/schedule/given.hpp>

namespace memplan::fuzz {

// A broken property: a bug in memplan, whatever the input.
struct finding : std::logic_error {
  using std::logic_error::logic_error;
};

inline void require(bool ok, const std::string& what) {
  if (!ok) throw finding(what);
}

// In a libFuzzer target: print the broken property and abort, so that libFuzzer saves the input.
[[noreturn]] inline void report_and_abort(const finding& f) {
  std::fprintf(stderr, "memplan fuzz finding: %s\n", f.what());
  std::abort();
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The bytes of a file of the source tree (the fixed graphs the plan targets read plans against).
inline std::string source_file(const std::string& relative) { return io::read_text_file(std::string(MEMPLAN_SOURCE_DIR) + "/" + relative); }

// Graphs up to this many ops are planned after they parse (fuzz inputs are a few KiB: always).
inline constexpr std::int32_t max_ops_planned = 2000;

// The checks every successfully parsed graph goes through.
inline void check_parsed_graph(const problem& p) {
  // Writing the graph and reading it back gives the same graph.
  const auto text = io::write_graph(p).dump();
  const auto again = io::parse_graph(text, "<round trip>");
  require(again.num_ops() == p.num_ops() && again.num_tensors() == p.num_tensors() && again.num_storages() == p.num_storages(),
          "graph round trip changed the graph's size");
  for (tensor_id t = 0; t < p.num_tensors(); ++t)
    require(again.bytes(t) == p.bytes(t) && again.kind(t) == p.kind(t) && again.tensor_name(t) == p.tensor_name(t),
            "graph round trip changed tensor " + p.tensor_name(t));
  if (p.num_ops() > max_ops_planned) return;
  // A valid graph gets a verified plan, or a clear error when its sizes do not fit the arena
  // arithmetic (sums beyond 2^63).
  try {
    const auto mp = memplan::plan(p, schedule::given{} | place::best_fit{});
    const auto ok = verify(p, mp);
    require(ok.ok, "plan() returned a plan that verify rejects: " + ok.violation);
    // The plan file reads back to a plan that verify accepts.
    const auto back = io::parse_plan(p, io::plan_to_json(p, mp).dump(), "<plan round trip>");
    const auto ok2 = verify(p, back);
    require(ok2.ok, "plan file round trip gives a plan that verify rejects: " + ok2.violation);
  } catch (const error& e) {
    require(e.code() == errc::limit_exceeded || e.code() == errc::invalid_graph,
            std::string("plan() of a parsed graph failed with ") + to_string(e.code()) + ": " + e.what());
  }
}

// ---- graph JSON (plain) ----
inline int graph_json(const std::uint8_t* data, std::size_t size) {
  problem p;
  try {
    p = io::parse_graph(as_text(data, size), "<fuzz>");
  } catch (const error& e) {
    require(e.code() == errc::parse_error || e.code() == errc::invalid_graph,
            std::string("graph reader failed with ") + to_string(e.code()) + ": " + e.what());
    return 0;
  }
  check_parsed_graph(p);
  return 0;
}

// ---- graph JSON, gzip'd (the codec installed by <memplan/io/gzip.hpp> in the target) ----
inline int graph_json_gzip(const std::uint8_t* data, std::size_t size) {
  const auto& codec = io::detail::installed_gzip();
  require(codec.inflate != nullptr, "the gzip target was built without the gzip codec");
  std::string text;
  try {
    text = codec.inflate(as_text(data, size), "<fuzz.gz>");
  } catch (const error& e) {
    require(e.code() == errc::io_error, std::string("gunzip failed with ") + to_string(e.code()) + ": " + e.what());
    return 0;
  }
  if (text.size() > (1u << 20)) return 0;  // a gzip bomb: inflating it is zlib's business, not a graph
  return graph_json(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
}

// Replays a plan that verify accepted, with its own, simpler bookkeeping: every op computed once after
// its predecessors, offsets aligned and inside the arena, no two live materializations overlap.
inline void recheck_accepted_plan(const problem& p, const memory_plan& mp) {
  require(mp.alignment > 0 && (mp.alignment & (mp.alignment - 1)) == 0, "accepted plan has alignment " + std::to_string(mp.alignment));
  std::vector<char> computed(static_cast<std::size_t>(p.num_ops()), 0);
  for (const auto& s : mp.steps) {
    if (s.kind != step_kind::compute) continue;
    require(s.id >= 0 && s.id < p.num_ops(), "accepted plan computes op id " + std::to_string(s.id));
    require(!computed[static_cast<std::size_t>(s.id)], "accepted plan computes op " + p.op_name(s.id) + " twice");
    for (auto q : p.preds(s.id)) require(computed[static_cast<std::size_t>(q)], "accepted plan runs " + p.op_name(s.id) + " early");
    computed[static_cast<std::size_t>(s.id)] = 1;
  }
  for (auto c : computed) require(c, "accepted plan leaves an op out");
  for (const auto& m : mp.mats) {
    require(m.storage >= 0 && m.storage < p.num_storages(), "accepted plan has a materialization of a storage not in the graph");
    const auto bytes = p.storage_bytes(m.storage);
    if (bytes == 0) continue;
    require(m.offset >= 0 && m.offset % mp.alignment == 0 && m.offset <= mp.arena - bytes,
            "accepted plan places a materialization at " + std::to_string(m.offset) + " outside its arena " + std::to_string(mp.arena));
  }
  // Overlap: materializations whose tick ranges intersect must not intersect in address (derived
  // first/last ticks are recomputed by relink on a copy).
  memory_plan copy = mp;
  relink(p, copy, /*inherit_offsets=*/true);
  for (std::size_t a = 0; a < copy.mats.size(); ++a)
    for (std::size_t b = a + 1; b < copy.mats.size() && b < a + 64; ++b) {
      const auto& x = copy.mats[a];
      const auto& y = copy.mats[b];
      const auto xb = p.storage_bytes(x.storage), yb = p.storage_bytes(y.storage);
      if (xb == 0 || yb == 0 || x.last < x.first || y.last < y.first) continue;
      if (x.last < y.first || y.last < x.first) continue;
      require(x.offset + xb <= y.offset || y.offset + yb <= x.offset,
              "accepted plan overlaps materializations " + std::to_string(a) + " and " + std::to_string(b));
    }
}

// The graph the plan targets read plans against, and a verified plan of it.
struct plan_fixture {
  problem graph;
  memory_plan plan;
  static const plan_fixture& get() {
    static const plan_fixture f = [] {
      plan_fixture x;
      x.graph = io::parse_graph(source_file("tests/io/data/small.json"), "small.json");
      x.plan = memplan::plan(x.graph, schedule::given{} | place::best_fit{}, {.alignment = 64});
      return x;
    }();
    return f;
  }
};

// ---- plan JSON, read against tests/io/data/small.json, then verified ----
inline int plan_json(const std::uint8_t* data, std::size_t size) {
  const auto& fx = plan_fixture::get();
  memory_plan mp;
  try {
    mp = io::parse_plan(fx.graph, as_text(data, size), "<fuzz plan>");
  } catch (const error& e) {
    require(e.code() == errc::parse_error || e.code() == errc::invalid_plan,
            std::string("plan reader failed with ") + to_string(e.code()) + ": " + e.what());
    return 0;
  }
  if (verify(fx.graph, mp)) recheck_accepted_plan(fx.graph, mp);
  return 0;
}

// ---- verify on plans of the fixture graph mutated field by field from the fuzzer's bytes ----
// Each 11-byte record is one mutation: which field (byte 0), of which element (bytes 1-2), the new
// value (bytes 3-10, little-endian; often interpreted as a small delta so the plan stays near-valid).
inline int verify_mutated(const std::uint8_t* data, std::size_t size) {
  const auto& fx = plan_fixture::get();
  memory_plan mp = fx.plan;
  constexpr std::size_t record = 11;
  for (std::size_t at = 0; at + record <= size; at += record) {
    const std::uint8_t field = data[at];
    const std::size_t which = static_cast<std::size_t>(data[at + 1]) | (static_cast<std::size_t>(data[at + 2]) << 8);
    std::uint64_t raw = 0;
    for (int k = 0; k < 8; ++k) raw |= static_cast<std::uint64_t>(data[at + 3 + static_cast<std::size_t>(k)]) << (8 * k);
    const auto value = static_cast<std::int64_t>(raw);
    const auto small = static_cast<std::int64_t>(static_cast<std::int8_t>(data[at + 3]));  // -128..127
    const auto i32 = static_cast<std::int32_t>(static_cast<std::uint32_t>(raw));
    auto& steps = mp.steps;
    auto& mats = mp.mats;
    // Deltas wrap (two's complement) instead of overflowing: a field set to its minimum by one record
    // and decremented by the next is a mutation, not undefined behaviour in the harness.
    const auto wrap64 = [](std::int64_t a, std::int64_t b) { return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b)); };
    const auto wrap32 = [](std::int32_t a, std::int64_t b) { return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b)); };
    switch (field % 16) {
      case 0: if (!steps.empty()) steps[which % steps.size()].kind = static_cast<step_kind>(data[at + 3] % 5); break;
      case 1: if (!steps.empty()) { auto& id = steps[which % steps.size()].id; id = wrap32(id, small); } break;
      case 2: if (!steps.empty()) steps[which % steps.size()].id = i32; break;
      case 3: if (!steps.empty()) { auto& m = steps[which % steps.size()].mat; m = wrap32(m, small); } break;
      case 4: if (!steps.empty()) steps[which % steps.size()].impl = i32; break;
      case 5: if (!steps.empty()) steps[which % steps.size()].workspace_offset = value; break;
      case 6: if (!steps.empty()) { const auto a = which % steps.size(), b = raw % steps.size(); std::swap(steps[a], steps[b]); } break;
      case 7: if (!steps.empty()) steps.erase(steps.begin() + static_cast<std::ptrdiff_t>(which % steps.size())); break;
      case 8: if (!steps.empty()) steps.insert(steps.begin() + static_cast<std::ptrdiff_t>(raw % (steps.size() + 1)), steps[which % steps.size()]); break;
      case 9: if (!mats.empty()) mats[which % mats.size()].offset = value; break;
      case 10: if (!mats.empty()) { auto& o = mats[which % mats.size()].offset; o = wrap64(o, small * 64); } break;
      case 11: if (!mats.empty()) mats[which % mats.size()].storage = i32; break;
      case 12: mp.arena = (data[at + 1] & 1) ? value : wrap64(mp.arena, small * 64); break;
      case 13: mp.alignment = (data[at + 1] & 1) ? value : std::int64_t{1} << (data[at + 3] % 63); break;
      case 14: {
        auto& s = mp.stats;
        switch (which % 4) {
          case 0: s.peak = value; break;
          case 1: s.transfer_bytes = value; break;
          case 2: s.lower_bound = value; break;
          default: s.arena = value; break;
        }
        break;
      }
      default:
        if (!mats.empty()) mats.push_back(mats[which % mats.size()]);
        break;
    }
  }
  const auto r = verify(fx.graph, mp);
  if (r) recheck_accepted_plan(fx.graph, mp);
  // Writing an accepted plan and reading it back must give a plan verify accepts too.
  if (r) {
    const auto back = io::parse_plan(fx.graph, io::plan_to_json(fx.graph, mp).dump(), "<mutated round trip>");
    const auto r2 = verify(fx.graph, back);
    require(r2.ok, "an accepted mutated plan, written and read back, is rejected: " + r2.violation);
  }
  return 0;
}

// ---- MiniMalloc CSV, then two placers and place::check ----
inline int buffers_csv(const std::uint8_t* data, std::size_t size) {
  io::buffer_list list;
  try {
    std::istringstream in{std::string(as_text(data, size))};
    list = io::read_buffers_csv(in, "<fuzz.csv>");
  } catch (const error& e) {
    require(e.code() == errc::parse_error, std::string("CSV reader failed with ") + to_string(e.code()) + ": " + e.what());
    return 0;
  }
  if (list.problem.buffers.size() > 2000) return 0;
  auto check_placer = [&](const char* name, auto placer) {
    place::buffer_placement pl;
    try {
      pl = placer.place(list.problem);
    } catch (const error& e) {
      // Sizes whose sums leave int64, and pinned buffers that overlap, are clear errors.
      require(e.code() == errc::limit_exceeded || e.code() == errc::infeasible || e.code() == errc::invalid_argument,
              std::string(name) + " failed with " + to_string(e.code()) + ": " + e.what());
      return;
    }
    if (auto bad = place::check(list.problem, pl)) throw finding(std::string(name) + " returned an invalid placement: " + *bad);
    std::ostringstream out;
    io::write_buffers_csv(out, list, pl);
  };
  check_placer("best_fit", place::best_fit{});
  check_placer("greedy_by_size", place::greedy_by_size{});
  // The best- and first-fit sweeps in each order of a step's allocations: what the composite placers
  // start from under tight budgets (place/detail/support.hpp), on the problems the placers accept.
  try {
    place::validate(list.problem);
  } catch (const error&) {
    return 0;  // refused above with a clear error
  }
  using place::detail::sweep_ties;
  for (const auto ties : {sweep_ties::by_index, sweep_ties::larger_first, sweep_ties::longer_first})
    for (const auto rule : {place::detail::fit::best, place::detail::fit::first}) {
      const auto sweep = place::detail::allocator_sweep{.rule = rule, .ties = ties};
      place::buffer_placement pl;
      pl.offsets = sweep.offsets(list.problem, deadline::never());
      pl.arena = place::detail::arena_of(list.problem, pl.offsets);
      if (pl.arena > list.problem.capacity) continue;  // the sweep ignores the capacity; the placers check it
      if (auto bad = place::check(list.problem, pl)) throw finding(sweep.name() + " returned an invalid placement: " + *bad);
    }
  return 0;
}

}  // namespace memplan::fuzz
