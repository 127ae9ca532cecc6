// The memplan CLI as scripts use it: exit codes, one-line errors, files it writes.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <memplan/core/bounds.hpp>
#include <memplan/core/analysis.hpp>
#include <memplan/io/buffers_csv.hpp>
#include <memplan/io/json.hpp>
#include <memplan/place/lower_bound.hpp>
#include "../support/bundled_model.hpp"

namespace fs = std::filesystem;

namespace {

const std::string cli = MEMPLAN_CLI;
const std::string data = MEMPLAN_IO_TEST_DATA;

struct result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

using memplan::testing::bundled_model;

// A scratch directory per test case, removed at the end.
struct scratch {
  fs::path dir;
  scratch() {
    dir = fs::temp_directory_path() / ("memplan-cli-" + std::to_string(std::random_device{}()));
    fs::create_directories(dir);
  }
  ~scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  [[nodiscard]] std::string operator/(const std::string& f) const { return (dir / f).string(); }
  void write(const std::string& f, const std::string& text) const { std::ofstream(dir / f, std::ios::binary) << text; }

  // Runs `memplan ARGS` with stdout and stderr captured.
  result run(const std::string& args) const {
    const auto out = dir / "stdout.txt", err = dir / "stderr.txt";
    const auto cmd = "'" + cli + "' " + args + " > '" + out.string() + "' 2> '" + err.string() + "'";
    const int status = std::system(cmd.c_str());
    result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }
};

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

std::size_t lines(const std::string& s) {
  std::size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace

TEST_CASE("plan then verify: exit 0, report printed, files written") {
  scratch s;
  for (const auto* g : {"example.json", "small.json", "small.json.gz"}) {
    CAPTURE(g);
    const auto graph = data + "/" + g;
    const auto r = s.run("plan '" + graph + "' -o '" + s / "plan.json" + "' --svg '" + s / "heap.svg" + "' --report-json '" +
                         s / "report.json" + "' --dot '" + s / "g.dot" + "'");
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    for (const auto* key : {"graph", "given order", "planned", "lower bound", "arena", "fragmentation", "time", "policies"})
      CHECK_MESSAGE(has(r.out, key), key);
    CHECK(fs::file_size(s / "heap.svg") > 0);
    CHECK(has(slurp(s / "g.dot"), "digraph"));
    const auto v = s.run("verify '" + graph + "' '" + s / "plan.json" + "'");
    INFO(v.err);
    CHECK(v.code == 0);
    CHECK(has(v.out, "valid plan"));
  }
}

TEST_CASE("report JSON: every required key, arena >= planned peak, given peak as the Python reference says") {
  scratch s;
  const auto r = s.run("plan '" + data + "/small.json' --alignment 64 --report-json '" + s / "report.json" + "' -q");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out.empty());  // --quiet
  const auto j = nlohmann::json::parse(slurp(s / "report.json"));
  for (const auto* k : {"graph", "ops", "tensors", "given_peak", "planned_peak", "arena_bytes", "fragmentation", "lower_bound", "gap",
                        "plan_seconds", "scheduler", "placer", "notes"})
    CHECK_MESSAGE(j.contains(k), k);
  CHECK(j["graph"] == "small-train");
  CHECK(j["ops"] == 11);
  CHECK(j["tensors"] == 18);
  CHECK(j["given_peak"] == 8260);  // tools/memplan_graph.py on tests/io/data/small.json
  CHECK(j["arena_bytes"].get<std::int64_t>() >= j["planned_peak"].get<std::int64_t>());
  CHECK(j["planned_peak"].get<std::int64_t>() >= j["lower_bound"].get<std::int64_t>());
  CHECK(j["planned_peak"].get<std::int64_t>() <= j["given_peak"].get<std::int64_t>());  // the default scheduler never loses to given
  CHECK(j["alignment"] == 64);
  CHECK(j["verified"] == true);
}

TEST_CASE("a tampered plan (two live tensors on one address) fails verify with exit 1 naming both") {
  scratch s;
  const auto graph = data + "/small.json";
  REQUIRE(s.run("plan '" + graph + "' --scheduler given --placer greedy_by_size -q -o '" + s / "plan.json" + "'").code == 0);
  auto plan = nlohmann::ordered_json::parse(slurp(s / "plan.json"));
  // h (mm1's output) and w1 (a weight) are both live while relu runs.
  for (auto& st : plan["steps"])
    if (st.contains("offsets") && st["offsets"].contains("h")) st["offsets"]["h"] = plan["initial"]["w1"];
  s.write("bad.json", plan.dump(1));
  const auto v = s.run("verify '" + graph + "' '" + s / "bad.json" + "'");
  CHECK(v.code == 1);
  INFO(v.err);
  CHECK(has(v.err, "invalid plan"));
  CHECK(has(v.err, "overlaps"));
  CHECK(has(v.err, "'h'"));
  CHECK(has(v.err, "'w1"));  // w1 or w1_new: one storage
  CHECK(lines(v.err) == 1);
}

TEST_CASE("verify: other invalid plans exit 1, unreadable input exits 2") {
  scratch s;
  const auto graph = data + "/example.json";
  REQUIRE(s.run("plan '" + graph + "' -q -o '" + s / "plan.json" + "'").code == 0);
  auto plan = nlohmann::ordered_json::parse(slurp(s / "plan.json"));
  {
    auto p = plan;
    std::swap(p["steps"][0], p["steps"][2]);  // an op before its input exists
    s.write("order.json", p.dump());
    const auto v = s.run("verify '" + graph + "' '" + s / "order.json" + "'");
    CHECK(v.code == 1);
    CHECK(has(v.err, "step 0"));
    CHECK_FALSE(has(v.err, "the plan was made for graph"));
    // The same plan naming another graph: the failure says so.
    p["graph"] = "another-graph";
    s.write("other.json", p.dump());
    const auto o = s.run("verify '" + graph + "' '" + s / "other.json" + "'");
    CHECK(o.code == 1);
    CHECK(has(o.err, "(the plan was made for graph 'another-graph', and this graph is '"));
  }
  {
    auto p = plan;
    p["steps"][0]["op"] = "no_such_op";
    s.write("unknown.json", p.dump());
    const auto v = s.run("verify '" + graph + "' '" + s / "unknown.json" + "'");
    CHECK(v.code == 1);
    CHECK(has(v.err, "op 'no_such_op' is not in graph"));
  }
  {
    auto p = plan;
    p["stats"]["peak"] = 1;
    s.write("claim.json", p.dump());
    const auto v = s.run("verify '" + graph + "' '" + s / "claim.json" + "'");
    CHECK(v.code == 1);
    CHECK(has(v.err, "claims a peak of 1"));
  }
  s.write("garbage.json", "{\"format\": \"memplan-plan\", ");
  auto v = s.run("verify '" + graph + "' '" + s / "garbage.json" + "'");
  CHECK(v.code == 2);
  CHECK(has(v.err, "not valid JSON"));
  v = s.run("verify '" + graph + "' '" + s / "missing.json" + "'");
  CHECK(v.code == 2);
  CHECK(has(v.err, "cannot open"));
  CHECK(has(v.err, "missing.json': no such file"));
  v = s.run("verify '" + s / "nograph.json" + "' '" + s / "plan.json" + "'");
  CHECK(v.code == 2);
  // A directory where a file belongs (fuzz finding: it was an "internal error" from the stream).
  v = s.run("plan '" + s.dir.string() + "'");
  CHECK(v.code == 2);
  CHECK(has(v.err, "it is a directory"));
  CHECK_FALSE(has(v.err, "internal error"));
  v = s.run("place '" + s.dir.string() + "'");
  CHECK(v.code == 2);
  CHECK(has(v.err, "it is a directory"));
}

TEST_CASE("malformed graphs exit 2 with one line naming the culprit") {
  scratch s;
  struct bad {
    const char* file;
    std::string text;
    std::string message;
  };
  const std::vector<bad> cases{
      {"notjson.json", "hello", "not valid JSON at line 1"},
      {"dangling.json",
       R"({"format":"memplan-graph","version":1,"tensors":[{"id":"x","bytes":4,"kind":"input"}],"ops":[{"id":"f","inputs":["x","ghost"],"outputs":[]}]})",
       "op 'f' reads unknown tensor 'ghost'"},
      {"dtype.json", R"({"format":"memplan-graph","version":1,"tensors":[{"id":"x","shape":[2],"dtype":"float8","kind":"input"}],"ops":[]})",
       "unknown dtype 'float8'"},
      {"cycle.json",
       R"({"format":"memplan-graph","version":1,"tensors":[{"id":"a","bytes":4,"kind":"activation"},{"id":"b","bytes":4,"kind":"activation"}],
          "ops":[{"id":"f","inputs":["b"],"outputs":["a"]},{"id":"g","inputs":["a"],"outputs":["b"]}]})",
       "cycle"},
      {"version.json", R"({"format":"memplan-graph","version":3,"tensors":[],"ops":[]})", "\"version\" is 3"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.file);
    s.write(c.file, c.text);
    for (const auto* sub : {"plan", "stats", "dot"}) {
      const auto r = s.run(std::string(sub) + " '" + s / c.file + "'");
      CHECK(r.code == 2);
      CHECK(has(r.err, c.message));
      CHECK(has(r.err, c.file));
      CHECK(lines(r.err) == 1);
      CHECK(!has(r.err, "terminate"));
    }
  }
  const auto r = s.run("plan '" + s / "does-not-exist.json" + "'");
  CHECK(r.code == 2);
  CHECK(has(r.err, "cannot open"));
}

TEST_CASE("bad options exit 2, an unmet capacity exits 1") {
  scratch s;
  const auto graph = "'" + data + "/small.json'";
  struct bad_case {
    std::string args;
    int code;
    std::vector<std::string> says;  // each in standard error
  };
  const std::vector<bad_case> cases = {
      {"plan " + graph + " --alignment 3", 2, {"power of two"}},
      {"plan " + graph + " --scheduler warp", 2, {"unknown scheduler 'warp'", "given"}},
      {"plan " + graph + " --placer warp", 2, {"unknown placer 'warp'", "best_fit"}},
      {"plan " + graph + " --capacity lots", 2, {}},
      // The limit given, by its name.
      {"plan " + graph + " --capacity 1KiB", 1, {"infeasible", "no plan fits the capacity of 1024 bytes"}},
      {"plan " + graph + " --capacity 0x100", 2, {"'0x100' is not a size in bytes"}},
      {"plan " + graph + " --capacity 2g", 2, {"unknown unit 'g' (binary: K or KiB"}},
      // A budget below the op-local bound is refused at once, with the op that sets the bound.
      {"plan " + graph + " --budget 1KiB", 1, {"no plan of any kind needs less than", "which must all be in memory while it runs"}},
      {"plan " + graph + " --capacity 1MiB -q", 0, {}},
      {"plan " + graph + " --bound-time 1", 2, {"--bound-time needs --budget"}},
      {"plan " + graph + " --budget 1MiB --bound-time -1", 2, {"--bound-time must be between 0 and 1e6 seconds"}},
      {"plan " + graph + " --no-such-flag", 2, {}},
      {"", 2, {}},
      {"frobnicate", 2, {}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.args);
    const auto r = s.run(c.args);
    CHECK(r.code == c.code);
    for (const auto& w : c.says) CHECK_MESSAGE(has(r.err, w), w);
  }
}

TEST_CASE("every scheduler and placer the help lists can plan the small graph") {
  scratch s;
  const auto help = s.run("plan --help");
  REQUIRE(help.code == 0);
  for (const auto* sch : {"given", "best_of", "local_search", "default", "exact", "olla_ilp"}) {
    CAPTURE(sch);
    CHECK(has(help.out, sch));
    const auto r = s.run("plan '" + data + "/small.json' -q --scheduler " + sch + " --time-limit 2 -o '" + s / "p.json" + "'");
    INFO(r.err);
    CHECK(r.code == 0);
    CHECK(s.run("verify '" + data + "/small.json' '" + s / "p.json" + "'").code == 0);
  }
  for (const auto* pl : {"bump", "greedy_by_size", "greedy_by_breadth", "best_fit", "gergov", "mincost_flow", "pyramid", "exact", "best_of",
                         "default"}) {
    CAPTURE(pl);
    CHECK(has(help.out, pl));
    const auto r = s.run("plan '" + data + "/small.json' -q --placer " + pl + " --time-limit 2 -o '" + s / "p.json" + "'");
    INFO(r.err);
    CHECK(r.code == 0);
    CHECK(s.run("verify '" + data + "/small.json' '" + s / "p.json" + "'").code == 0);
  }
}

TEST_CASE("--help for every subcommand, with examples, --version") {
  scratch s;
  auto r = s.run("--help");
  CHECK(r.code == 0);
  for (const auto* sub : {"plan", "verify", "stats", "dot", "place", "Exit codes"}) CHECK(has(r.out, sub));
  for (const auto* sub : {"plan", "verify", "stats", "dot", "place"}) {
    CAPTURE(sub);
    r = s.run(std::string(sub) + " --help");
    CHECK(r.code == 0);
    CHECK(has(r.out, "Example"));
    CHECK(has(r.out, std::string("memplan ") + sub));
  }
  r = s.run("--version");
  CHECK(r.code == 0);
  CHECK(has(r.out, "memplan 0.1.0"));
}

TEST_CASE("stats: counts, bytes by kind, phases, peaks, --json agrees with the library") {
  scratch s;
  const auto graph = data + "/small.json";
  auto r = s.run("stats '" + graph + "' --top 3");
  REQUIRE(r.code == 0);
  for (const auto* k : {"ops            11", "tensors        18", "given peak", "8260 B", "lower bound", "resident", "by kind",
                        "optimizer_state", "by phase", "backward", "largest tensors"})
    CHECK_MESSAGE(has(r.out, k), k);
  r = s.run("stats '" + graph + "' --json");
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(r.out);
  const auto p = memplan::io::read_graph(graph);
  CHECK(j["given_peak"] == 8260);
  CHECK(j["resident_bytes"] == p.resident_bytes());
  CHECK(j["lower_bound"] == memplan::lower_bound_peak(p).bytes);
  CHECK(j["phases"]["update"] == 3);
  CHECK(j["by_kind"]["weight"]["tensors"] == 4);  // w1, w2, w1_new, w2_new
  CHECK(j["largest"].size() == 10);
  CHECK(j["largest"][0]["bytes"] == 2048);
}

TEST_CASE("dot to stdout and to a file") {
  scratch s;
  auto r = s.run("dot '" + data + "/example.json'");
  CHECK(r.code == 0);
  CHECK(has(r.out, "digraph \"format-example\""));
  r = s.run("dot '" + data + "/example.json' --lr -o '" + s / "g.dot" + "'");
  CHECK(r.code == 0);
  CHECK(has(slurp(s / "g.dot"), "rankdir=LR"));
}

TEST_CASE("place: a MiniMalloc CSV, offsets written, capacity enforced") {
  scratch s;
  s.write("buffers.csv", "id,lower,upper,size\nA,0,3,100\nB,1,2,50\nC,2,5,100\nD,3,6,30\n");
  auto r = s.run("place '" + s / "buffers.csv" + "' --placer best_fit -o '" + s / "out.csv" + "'");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "4 buffers"));
  const auto out = slurp(s / "out.csv");
  CHECK(out.rfind("id,lower,upper,size,offset\n", 0) == 0);
  CHECK(lines(out) == 5);
  r = s.run("place '" + s / "buffers.csv" + "' --capacity 100");
  CHECK(r.code == 1);
  r = s.run("place '" + s / "buffers.csv" + "' --capacity 200");
  CHECK(r.code == 0);
  s.write("broken.csv", "id,lower,upper,size\nA,0,3,-100\n");
  r = s.run("place '" + s / "broken.csv" + "'");
  CHECK(r.code == 2);
  CHECK(has(r.err, "negative size"));
  r = s.run("place '" + s / "buffers.csv" + "' --placer nope");
  CHECK(r.code == 2);
}

TEST_CASE("plan --buffers writes the placement problem the plan posed, which memplan place reads") {
  const auto model = bundled_model("resnet18-train-b1.json.gz");
  if (model.empty()) return;
  scratch s;
  auto r = s.run("plan '" + model + "' -q --deterministic --report-json '" + s / "free.json" + "'");
  REQUIRE(r.code == 0);
  const auto budget = nlohmann::json::parse(slurp(s / "free.json"))["arena_bytes"].get<std::int64_t>() * 8 / 10;
  // A recompute plan: rebuilt values are buffers of their own, with lifetimes of their own.
  r = s.run("plan '" + model + "' -q --deterministic --budget " + std::to_string(budget) + " --buffers '" + s / "b.csv" +
            "' --report-json '" + s / "r.json" + "'");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(slurp(s / "r.json"));
  REQUIRE(j["recomputed_ops"].get<std::int64_t>() > 0);
  const auto list = memplan::io::read_buffers_csv_file(s / "b.csv");
  CHECK(slurp(s / "b.csv").rfind("id,lower,upper,size\n", 0) == 0);
  // The same problem: its max load is the plan's peak (alignment 1), below the arena the plan placed.
  CHECK(memplan::place::resident_peak(list.problem) == j["planned_peak"].get<std::int64_t>());
  CHECK(memplan::place::resident_peak(list.problem) <= j["arena_bytes"].get<std::int64_t>());
  r = s.run("place '" + s / "b.csv" + "' --deterministic --capacity " + std::to_string(j["arena_bytes"].get<std::int64_t>()));
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(has(r.out, std::to_string(list.problem.buffers.size()) + " buffers"));
  // The plan's alignment travels as each buffer's.
  r = s.run("plan '" + model + "' -q --deterministic --alignment 256 --buffers '" + s / "a.csv" + "'");
  REQUIRE(r.code == 0);
  const auto aligned = memplan::io::read_buffers_csv_file(s / "a.csv");
  CHECK(slurp(s / "a.csv").rfind("id,lower,upper,size,alignment\n", 0) == 0);
  for (const auto& b : aligned.problem.buffers) CHECK(b.alignment == 256);
}

TEST_CASE("the README's command on a bundled model") {
  const auto model = bundled_model("resnet18-train-b32.json.gz");
  if (model.empty()) return;
  scratch s;
  const auto r = s.run("plan '" + model + "' --svg '" + s / "heap.svg" + "' --report-json '" + s / "report.json" + "' -o '" +
                       s / "plan.json" + "'");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto j = nlohmann::json::parse(slurp(s / "report.json"));
  CHECK(j["given_peak"] == 787215844);  // data/models/README.md (tools/graph_stats.py)
  CHECK(j["planned_peak"].get<std::int64_t>() <= 787215844);
  CHECK(j["arena_bytes"].get<std::int64_t>() >= j["planned_peak"].get<std::int64_t>());
  CHECK(s.run("verify '" + model + "' '" + s / "plan.json" + "'").code == 0);
  MESSAGE("resnet18-train-b32: given ", j["given_peak"], " planned ", j["planned_peak"], " arena ", j["arena_bytes"], " lower bound ",
          j["lower_bound"], " in ", j["plan_seconds"], " s");
}

// Snapshots: the text scripts and people read, compared byte for byte with tests/apps/snapshots/.
// After an intended change: MEMPLAN_UPDATE_SNAPSHOTS=1 ctest -R "snapshot" rewrites them.
namespace {
void check_snapshot(const std::string& name, const std::string& text) {
  const auto path = fs::path(MEMPLAN_SNAPSHOTS) / name;
  if (const char* u = std::getenv("MEMPLAN_UPDATE_SNAPSHOTS"); u && std::string(u) == "1") std::ofstream(path, std::ios::binary) << text;
  REQUIRE_MESSAGE(fs::exists(path), "missing snapshot " << path);
  CHECK(slurp(path) == text);
}
}  // namespace

TEST_CASE("explain: the peak step, what is live there and why, what is recomputed (snapshot), either file order") {
  scratch s;
  REQUIRE(s.run("zoo chain --depth 14 --batch 1 --image 16 -o '" + s / "chain.json" + "'").code == 0);
  const auto full = s.run("plan '" + s / "chain.json" + "' --scheduler given --placer greedy_by_size -o '" + s / "full.json" + "'");
  REQUIRE(full.code == 0);
  // Recompute under a budget, with policies that do not look at the clock.
  const auto r = s.run("plan '" + s / "chain.json" + "' --scheduler given --checkpointer chen_sqrt --placer greedy_by_size -o '" + s / "plan.json" + "'");
  INFO(r.err);
  REQUIRE(r.code == 0);
  const auto e = s.run("explain '" + s / "chain.json" + "' '" + s / "plan.json" + "'");
  INFO(e.err);
  REQUIRE(e.code == 0);
  for (const auto* what : {"the peak", "live there", "by reason", "recompute steps"}) CHECK_MESSAGE(has(e.out, what), what);
  // The text names the scratch folder nowhere: it is a function of the graph and the plan only.
  check_snapshot("explain_chain14_chen_sqrt.txt", e.out);
  const auto swapped = s.run("explain '" + s / "plan.json" + "' '" + s / "chain.json" + "'");
  CHECK(swapped.code == 0);
  CHECK(swapped.out == e.out);
  const auto plain = s.run("explain '" + s / "chain.json" + "' '" + s / "full.json" + "' --top 3");
  CHECK(plain.code == 0);
  CHECK(has(plain.out, "nothing is recomputed"));
  CHECK(has(plain.out, "more"));
  // A plan verify rejects is explained with a warning, and exits 1.
  auto bad = nlohmann::ordered_json::parse(slurp(s / "full.json"));
  bad["stats"]["peak"] = 1;
  s.write("bad.json", bad.dump());
  const auto w = s.run("explain '" + s / "chain.json" + "' '" + s / "bad.json" + "'");
  CHECK(w.code == 1);
  CHECK(has(w.err, "is not a valid plan (memplan verify: "));
  CHECK(has(w.out, "the peak"));
  // Two graphs, or a missing file: bad input.
  CHECK(s.run("explain '" + s / "chain.json" + "' '" + s / "chain.json" + "'").code == 2);
  CHECK(s.run("explain '" + s / "nope.json" + "' '" + s / "plan.json" + "'").code == 2);
}

TEST_CASE("--version snapshot, bash completion lists every subcommand and option and is valid bash") {
  scratch s;
  const auto v = s.run("--version");
  CHECK(v.code == 0);
  check_snapshot("version.txt", v.out);
  const auto c = s.run("completion bash");
  REQUIRE(c.code == 0);
  for (const auto* what : {"complete -o filenames -F _memplan memplan", "plan)", "explain)", "--budget", "--checkpointer)", "chen_sqrt",
                           "greedy_by_size", "--svg", "--offloader)", "dynprog"})
    CHECK_MESSAGE(has(c.out, what), what);
  s.write("memplan.bash", c.out);
  CHECK(std::system(("bash -n '" + s / "memplan.bash" + "'").c_str()) == 0);
  CHECK(s.run("completion fish").code == 2);
}

TEST_CASE("symbolic: one plan for a batch range from two exports, proved, --batch N writes a placement the referee accepts") {
  const std::string b1 = std::string(MEMPLAN_SOURCE_DIR) + "/data/models/resnet18-infer-b1.json.gz";
  const std::string b32 = std::string(MEMPLAN_SOURCE_DIR) + "/data/models/resnet18-infer-b32.json.gz";
  if (!fs::exists(b1) || !fs::exists(b32)) {
    MESSAGE("resnet18-infer exports not bundled: skipped");
    return;
  }
  scratch s;
  auto r = s.run("symbolic '" + b1 + "' '" + b32 + "' --batch 12 -o '" + s / "b12.csv" + "'");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "proved for every batch in the range"));
  CHECK(has(r.out, "batch range [1, 32]"));
  // The written offsets, pinned, are a valid placement: `place` keeps them and its referee accepts them.
  r = s.run("place '" + s / "b12.csv" + "'");
  CHECK(r.code == 0);
  r = s.run("symbolic '" + b1 + "' '" + b32 + "' --range 1,64");
  CHECK(r.code == 0);
  CHECK(has(r.out, "64"));
  r = s.run("symbolic '" + b1 + "' '" + b32 + "' --batch 100");
  CHECK(r.code == 2);
  const std::string other = std::string(MEMPLAN_SOURCE_DIR) + "/data/models/resnet50-infer-b32.json.gz";
  if (fs::exists(other)) {  // not the same graph: said in the command's words
    r = s.run("symbolic '" + b1 + "' '" + other + "'");
    CHECK(r.code == 2);
    CHECK(has(r.err, "are not one program at two batch sizes"));
    CHECK_FALSE(has(r.err, "fit_traces"));
  }
  // -o without --batch is refused before any work, with nothing printed.
  r = s.run("symbolic '" + b1 + "' '" + b32 + "' -o '" + s / "x.csv" + "'");
  CHECK(r.code == 2);
  CHECK(has(r.err, "-o needs --batch N"));
  CHECK(r.out.empty());
}

TEST_CASE("plan --offloader: a timed plan within the budget, verified, the report has makespan and host peak") {
  const auto model = bundled_model("resnet18-train-b1.json.gz");
  if (model.empty()) return;
  scratch s;
  const auto free_run = s.run("plan '" + model + "' --scheduler given --offloader none --bandwidth 12e9 --report-json '" + s / "free.json" + "'");
  INFO(free_run.err);
  REQUIRE(free_run.code == 0);
  const auto f = nlohmann::json::parse(slurp(s / "free.json"));
  CHECK(f["makespan"].get<double>() == doctest::Approx(f["compute_time"].get<double>()));
  const auto budget = f["arena_bytes"].get<std::int64_t>() * 7 / 10;
  for (const auto* name : {"default", "greedy", "dynprog", "vdnn", "combined"}) {
    CAPTURE(name);
    // --time-limit 2: combined's search and plan()'s reruns after an overshoot are paced by it, so the
    // test's time does not depend on the machine's load (under ASan on a loaded machine: 83 s without it).
    const auto r = s.run("plan '" + model + "' --scheduler given --budget " + std::to_string(budget) + " --offloader " + name +
                         " --bandwidth 12e9 --device-flops 15e12 --time-limit 2 -o '" + s / "plan.json" + "' --report-json '" + s / "report.json" + "'");
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(has(r.out, "makespan"));
    const auto j = nlohmann::json::parse(slurp(s / "report.json"));
    CHECK(j["arena_bytes"].get<std::int64_t>() <= budget);
    CHECK(j["makespan"].get<double>() >= j["makespan_lower_bound"].get<double>());
    CHECK(j["makespan"].get<double>() >= f["makespan"].get<double>() - 1e-12);
    CHECK(j["host_peak"].get<std::int64_t>() >= 0);
    CHECK(j["offloader"].get<std::string>().find(name == std::string("default") ? "default" : name) != std::string::npos);
    CHECK(s.run("verify '" + model + "' '" + s / "plan.json" + "'").code == 0);
  }
  // Offloading without a bandwidth, and timing options without an offloader: exit 2 naming the option.
  // (The given order, as above: the default scheduler with the no-slower implementations fits this budget unaided.)
  const auto nb = s.run("plan '" + model + "' --scheduler given --budget " + std::to_string(budget) + " --offloader greedy");
  CHECK(nb.code == 2);
  CHECK(has(nb.err, "bandwidth"));
  const auto no = s.run("plan '" + model + "' --bandwidth 12e9");
  CHECK(no.code == 2);
  CHECK(has(no.err, "--offloader"));
  const auto bad = s.run("plan '" + model + "' --offloader greedy --bandwidth fast");
  CHECK(bad.code == 2);
  CHECK(has(bad.err, "--bandwidth"));
}

TEST_CASE("plan --offloader combined on a training chain: the chain program's plan, verified, faster than offloading or recomputing alone") {
  // chain6.json: 6 layers, costs in seconds; at 50,000 B (the peak is 79,428 B, no plan needs less than
  // 46,656 B) combined's chain program keeps, offloads and recomputes (docs/offload.md, the chain program).
  scratch s;
  const auto graph = "'" + data + "/chain6.json'";
  const std::string common = " --budget 50000 --bandwidth 4e6 --deterministic";
  auto makespan_of = [&](const std::string& policies, const std::string& tag) {
    const auto r = s.run("plan " + graph + common + " " + policies + " -v -o '" + s / (tag + ".json") + "' --report-json '" + s / (tag + ".report.json") + "'");
    INFO(tag << ": " << r.err);
    REQUIRE(r.code == 0);
    CHECK(s.run("verify " + graph + " '" + s / (tag + ".json") + "'").code == 0);
    const auto j = nlohmann::json::parse(slurp(s / (tag + ".report.json")));
    CHECK(j["arena_bytes"].get<std::int64_t>() <= 50000);
    CHECK(j["makespan"].get<double>() >= j["makespan_lower_bound"].get<double>());
    return std::pair{j["makespan"].get<double>(), r.out};
  };
  const auto offload_only = makespan_of("--offloader default", "offload").first;
  const auto recompute_only = makespan_of("--checkpointer default --offloader none", "recompute").first;
  const auto combined = makespan_of("--offloader combined", "combined");
  CAPTURE(offload_only);
  CAPTURE(recompute_only);
  CAPTURE(combined.first);
  CHECK(has(combined.second, "combined: the chain program:"));
  CHECK(has(combined.second, "recomputed of 5 values"));
  CHECK(combined.first < offload_only);
  CHECK(combined.first < recompute_only);
}

TEST_CASE("plan --offloader at a chain's floor: the fastest choice places above it, the last resort offloads more and fits") {
  // chain6.json at its floor (46,656 B: no plan of any kind needs less) and 1e5 B/s: refined's choice
  // (4 of 6 values) meets the floor in the model, but its buffers place at 48,192 B at best; plan()'s
  // last resort (plan_context::offload_fill) offloads all 6, which place at 46,656 B, then bisects the
  // fill: 5 of the 6 place there too, a faster step than greedy's (every value, its last prefix).
  scratch s;
  const auto graph = "'" + data + "/chain6.json'";
  double every_value = 0;
  for (const auto* name : {"greedy", "default", "refined", "brute_force"}) {
    CAPTURE(name);
    const auto r = s.run("plan " + graph + " --budget 46656 --offloader " + name + " --bandwidth 1e5 --deterministic -v -o '" + s / "p.json" +
                         "' --report-json '" + s / "r.json" + "'");
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(s.run("verify " + graph + " '" + s / "p.json" + "'").code == 0);
    const auto j = nlohmann::json::parse(slurp(s / "r.json"));
    CHECK(j["arena_bytes"].get<std::int64_t>() <= 46656);
    CHECK(j["transfer_bytes"].get<std::int64_t>() > 0);
    const auto makespan = j["makespan"].get<double>();
    // greedy's own choice is every value there (its last prefix); the others get there by the last resort.
    if (std::string(name) == "greedy") {
      CHECK(!has(r.out, "last resort"));
      every_value = makespan;
    } else {
      CHECK(has(r.out, "offloads 5 of 6 values"));
      CHECK(has(r.out, "its own choice of 4 and 1 more of the 2 it left out, plan()'s last resort"));
      CHECK(makespan < every_value * 0.9);
    }
  }
}

TEST_CASE("plan --budget reports the overhead bounds (at most the plan's overhead), frontier writes them as CSV columns") {
  const auto model = bundled_model("transformer-train-b1.json.gz");
  if (model.empty()) return;
  scratch s;
  const auto full = s.run("plan '" + model + "' --scheduler given --report-json '" + s / "full.json" + "'");
  REQUIRE(full.code == 0);
  CHECK(!has(full.out, "overhead bound"));  // no budget: no bound
  const auto f = nlohmann::json::parse(slurp(s / "full.json"));
  CHECK(!f.contains("overhead_lower_bound"));
  const auto budget = f["arena_bytes"].get<std::int64_t>() * 9 / 10;
  const auto r = s.run("plan '" + model + "' --scheduler given --budget " + std::to_string(budget) + " --report-json '" + s / "report.json" + "'");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "overhead bound no plan within the budget recomputes less than"));
  const auto j = nlohmann::json::parse(slurp(s / "report.json"));
  const auto in = j["overhead_lower_bound"].get<double>(), any = j["overhead_lower_bound_any_order"].get<double>();
  CHECK(in > 0);
  CHECK(in <= j["overhead"].get<double>() + 1e-12);
  CHECK(any <= in + 1e-12);
  // In the default order at 22,000,000 B (0.86 of its arena) the report certifies against the
  // recompute floor: the transformer's dropout masks (bernoulli_, then div_ in place) cannot be
  // rebuilt, and with them stays more than the op-local bound; never more than the plan's peak.
  const auto fl = s.run("plan '" + model + "' --budget 22000000 --report-json '" + s / "floor.json" + "'");
  INFO(fl.err);
  REQUIRE(fl.code == 0);
  CHECK(has(fl.out, "(recompute floor bound)"));
  const auto jf = nlohmann::json::parse(slurp(s / "floor.json"));
  CHECK(jf["lower_bound_by"] == "recompute floor");
  CHECK(jf["lower_bound"].get<std::int64_t>() <= jf["planned_peak"].get<std::int64_t>());
  CHECK(jf["lower_bound"].get<std::int64_t>() > 14956456);  // the op-local bound
  // --bound-time: the 0-1 bound of remat/milp_bound.hpp (with the build's MILP backend; core's without one).
  const auto t = s.run("plan '" + model + "' --scheduler given --budget " + std::to_string(budget) + " --bound-time 5 --report-json '" +
                       s / "report2.json" + "'");
  INFO(t.err);
  REQUIRE(t.code == 0);
  CHECK(has(t.out, "overhead bound: recompute_bound_milp ("));
  CHECK(has(t.out, "in any order"));
  CHECK(!has(t.out, "with any of the graph's variants"));  // the transformer has none
  const auto j2 = nlohmann::json::parse(slurp(s / "report2.json"));
  const auto in2 = j2["overhead_lower_bound"].get<double>(), any2 = j2["overhead_lower_bound_any_order"].get<double>();
  CHECK(in2 >= in - 1e-12);
  CHECK(any2 >= any - 1e-12);
  CHECK(any2 <= in2 + 1e-12);
  CHECK(in2 <= j2["overhead"].get<double>() + 1e-12);
  const auto fr = s.run("frontier '" + model + "' --points 3 -o '" + s / "f.csv" + "'");
  INFO(fr.err);
  REQUIRE(fr.code == 0);
  const auto csv = slurp(s / "f.csv");
  CHECK(csv.rfind("budget_bytes,arena_bytes,peak_bytes,compute_cost,recompute_cost,overhead,recomputed_ops,checkpointer,plan_seconds,"
                  "overhead_lower_bound,overhead_lower_bound_any_order,variants\n",
                  0) == 0);
}

TEST_CASE("plan --bound-time on a graph with variants adds the bound over every choice of them") {
  // MobileNet-V2's output-activated hardtanh_backward variants (the plan takes them all): the third
  // share of the time goes to remat::recompute_bound_milp_any_variants, printed as a note.
  const auto model = bundled_model("mobilenet_v2-train-b1.json.gz");
  if (model.empty()) return;
  scratch s;
  const auto t = s.run("plan '" + model + "' --budget 60000000 --bound-time 1");
  INFO(t.err);
  REQUIRE(t.code == 0);
  CHECK(has(t.out, "overhead bound: recompute_bound_milp ("));
  CHECK(has(t.out, "note           overhead bound with any of the graph's variants, in any order: "));
  CHECK(has(t.out, "of the costliest choice's step (the plans above: "));
}

TEST_CASE("plan takes the variants that cost nothing, names them in the plan, and verify reads them back") {
  const auto model = bundled_model("mobilenet_v2-train-b1.json.gz");
  if (model.empty()) return;
  scratch s;
  const auto r = s.run("plan '" + model + "' -o '" + s / "plan.json" + "' --report-json '" + s / "report.json" + "'");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "variants       35 ops on a variant (output_activated 35), 35 ops no longer needed"));
  const auto j = nlohmann::json::parse(slurp(s / "report.json"));
  CHECK(j["variants"]["output_activated"] == 35);
  CHECK(j["ops_removed"] == 35);
  CHECK(j["variant_given_peak"].get<std::int64_t>() < j["given_peak"].get<std::int64_t>());
  CHECK(j["planned_peak"].get<std::int64_t>() <= j["variant_given_peak"].get<std::int64_t>());
  const auto pj = nlohmann::json::parse(slurp(s / "plan.json"));
  CHECK(pj["variants"].size() == 35);
  const auto v = s.run("verify '" + model + "' '" + s / "plan.json" + "'");
  INFO(v.err);
  CHECK(v.code == 0);
  CHECK(has(v.out, "valid plan"));
  const auto e = s.run("explain '" + s / "plan.json" + "' '" + model + "'");
  CHECK(e.code == 0);
  // --implementations own: the graph as traced, clones and all.
  const auto own = s.run("plan '" + model + "' --implementations own --report-json '" + s / "own.json" + "'");
  REQUIRE(own.code == 0);
  CHECK(!has(own.out, "variants "));
  const auto o = nlohmann::json::parse(slurp(s / "own.json"));
  CHECK(!o.contains("variants"));
  CHECK(o["planned_peak"].get<std::int64_t>() > j["planned_peak"].get<std::int64_t>());
}

TEST_CASE("plan weighs the variants that keep the peak against those free at every step, and verify reads the plan back") {
  const auto model = bundled_model("squeezenet1_0-train-b1.json.gz");
  if (model.empty()) return;
  scratch s;
  const auto r = s.run("plan '" + model + "' -o '" + s / "plan.json" + "' --report-json '" + s / "report.json" + "'");
  INFO(r.err);
  REQUIRE(r.code == 0);
  // SqueezeNet's 16 from_concatenation variants raise some backward steps: not free at every step, so
  // both sets are planned and the note says which plan was kept.
  CHECK(has(r.out, "variants: planned with 0 variants (free at every step) and with 16 variants (the given order's peak not higher); kept the"));
  const auto j = nlohmann::json::parse(slurp(s / "report.json"));
  const auto pj = nlohmann::json::parse(slurp(s / "plan.json"));
  const bool kept = j.contains("variants");
  CHECK(pj.contains("variants") == kept);
  if (kept) {  // all 16, or some fire modules' (the group search)
    CHECK(j["variants"]["from_concatenation"].get<int>() >= 1);
    CHECK(j["variants"]["from_concatenation"].get<int>() <= 16);
  }
  const auto v = s.run("verify '" + model + "' '" + s / "plan.json" + "'");
  INFO(v.err);
  CHECK(v.code == 0);
  // --implementations own: one plan, no variants.
  const auto own = s.run("plan '" + model + "' --implementations own");
  REQUIRE(own.code == 0);
  CHECK(!has(own.out, "variants"));
}
