#pragma once
// The body of the CLI fuzz target: the fuzzer's bytes are the command line, one argument per line,
// run through memplan::cli::run_command_line (apps/memplan/command_line.cpp, the memplan_cli_objects library).
//
// Sandbox: the command runs in a scratch directory that is emptied after every run, and an argument
// with a '/' is refused, so the files it writes (-o, --svg, ...) can only land there. Five arguments
// stand for real files: @G small.json, @Z small.json.gz, @T chain6.json (a 6-layer training chain with
// costs in seconds: budgets between 46,656 and 79,428 B leave the offloaders, combined's chain program
// among them, real choices), @P a valid plan of small.json, @C a MiniMalloc CSV. They are copies in the
// scratch directory's parent, written again before every run that names one: an input such as
// `plan @G -o @G` once wrote over the repository's tests/io/data/small.json, and a file it rewrote
// would have changed what later inputs ran on (stop 84). zoo and frontier are parsed only (their work
// grows with their numbers, not with the input), and every time limit is capped at 50 ms. Exit code 3 (an internal error) is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <utility>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <string>
#include <vector>

#include "../../apps/memplan/command_line.hpp"
#include "harness.hpp"

namespace memplan::fuzz {

// The scratch directory and the input files, made once per process and removed at its exit.
struct cli_sandbox {
  std::filesystem::path root, work;
  std::string graph, graph_gz, chain, plan, csv;
  std::vector<std::pair<std::string, std::string>> contents;  // (path, bytes) of the five, as written first

  cli_sandbox() {
    std::string templ = (std::filesystem::temp_directory_path() / "memplan-fuzz-cli-XXXXXX").string();
    if (!mkdtemp(templ.data())) throw std::runtime_error("cannot create a scratch directory for the CLI fuzz target");
    root = templ;
    work = root / "work";
    std::filesystem::create_directories(work);
    const std::string data = std::string(MEMPLAN_SOURCE_DIR) + "/tests/io/data/";
    graph = (root / "small.json").string();
    graph_gz = (root / "small.json.gz").string();
    chain = (root / "chain6.json").string();
    plan = (root / "small.plan.json").string();
    csv = (root / "buffers.csv").string();
    const auto& fx = plan_fixture::get();
    io::write_plan(plan, fx.graph, fx.plan);
    io::write_text_file(csv, "id,lower,upper,size,alignment\na,0,3,100,1\nb,1,4,64,64\nc,2,5,300,1\nd,4,6,100,8\n");
    for (const auto& [to, from] : {std::pair{graph, data + "small.json"}, std::pair{graph_gz, data + "small.json.gz"},
                                   std::pair{chain, data + "chain6.json"}, std::pair{plan, plan}, std::pair{csv, csv}}) {
      std::ifstream in(from, std::ios::binary);
      if (!in) throw std::runtime_error("the CLI fuzz target cannot read " + from);
      contents.emplace_back(to, std::string(std::istreambuf_iterator<char>(in), {}));
    }
  }
  // Writes the five files as they were first (a run may have written over one).
  void restore() const {
    for (const auto& [path, bytes] : contents) {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      if (!out) throw std::runtime_error("the CLI fuzz target cannot write " + path);
    }
  }
  ~cli_sandbox() {
    std::error_code ignored;
    std::filesystem::remove_all(root, ignored);
  }
  cli_sandbox(const cli_sandbox&) = delete;
  cli_sandbox& operator=(const cli_sandbox&) = delete;

  static const cli_sandbox& get() {
    static const cli_sandbox s;
    return s;
  }
};

inline int cli_args(const std::uint8_t* data, std::size_t size) {
  const auto& box = cli_sandbox::get();
  std::vector<std::string> args{"memplan"};
  bool parse_only = false, uses_files = false;
  std::string cur;
  auto push = [&](std::string a) {
    const bool file = a == "@G" || a == "@Z" || a == "@T" || a == "@P" || a == "@C";
    uses_files |= file;
    if (a == "@G") a = box.graph;
    else if (a == "@Z") a = box.graph_gz;
    else if (a == "@T") a = box.chain;
    else if (a == "@P") a = box.plan;
    else if (a == "@C") a = box.csv;
    else if (a.find('/') != std::string::npos) return false;
    if (a == "zoo" || a == "frontier") parse_only = true;
    args.push_back(std::move(a));
    return true;
  };
  for (std::size_t i = 0; i < size; ++i) {
    const char c = static_cast<char>(data[i]);
    if (c == '\n') {
      if (!push(std::move(cur))) return -1;
      cur.clear();
    } else if (c == '\0') {
      return -1;  // an argument cannot hold a NUL byte
    } else {
      cur += c;
    }
  }
  if (!cur.empty() && !push(std::move(cur))) return -1;
  if (args.size() > 40) return -1;
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  argv.push_back(nullptr);

  // (Only a run that names one of the five can read or write them: the others cannot reach outside
  // the scratch directory.)
  if (uses_files) box.restore();
  const auto here = std::filesystem::current_path();
  std::filesystem::current_path(box.work);
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  int rc = 0;
  try {
    rc = cli::run_command_line(static_cast<int>(args.size()), argv.data(), {.parse_only = parse_only, .max_time_limit_s = 0.05});
  } catch (...) {
    std::cout.rdbuf(old_out);
    std::cerr.rdbuf(old_err);
    std::filesystem::current_path(here);
    throw;
  }
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  std::filesystem::current_path(here);
  for (const auto& e : std::filesystem::directory_iterator(box.work)) std::filesystem::remove_all(e.path());
  require(rc != 3, "memplan exited with an internal error: " + err.str());
  return 0;
}

}  // namespace memplan::fuzz
