// io/json.hpp: reading and writing the graph format; every malformed-input case has its own message.
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <memplan/core/adapt.hpp>
#include <memplan/core/problem_builder.hpp>
#include <memplan/core/analysis.hpp>
#include <memplan/io/dtype.hpp>
#include <memplan/io/gzip.hpp>
#include <memplan/io/json.hpp>
#include "io_support.hpp"

using iotest::data_dir;

using namespace memplan;

namespace {


// Structural equality of two problems by names (the ids of a round trip must agree too).
void check_same(const problem& a, const problem& b) {
  REQUIRE(a.num_ops() == b.num_ops());
  REQUIRE(a.num_tensors() == b.num_tensors());
  CHECK(a.name() == b.name());
  for (tensor_id t = 0; t < a.num_tensors(); ++t) {
    CHECK(a.tensor_name(t) == b.tensor_name(t));
    CHECK(a.bytes(t) == b.bytes(t));
    CHECK(a.kind(t) == b.kind(t));
    CHECK(a.inplace_of(t) == b.inplace_of(t));
  }
  for (op_id o = 0; o < a.num_ops(); ++o) {
    CHECK(a.op_name(o) == b.op_name(o));
    CHECK(a.op_type(o) == b.op_type(o));
    CHECK(a.phase(o) == b.phase(o));
    CHECK(a.cost(o) == b.cost(o));
    CHECK(a.workspace(o) == b.workspace(o));
    auto ai = a.inputs(o), bi = b.inputs(o), ao = a.outputs(o), bo = b.outputs(o);
    CHECK(std::vector<tensor_id>(ai.begin(), ai.end()) == std::vector<tensor_id>(bi.begin(), bi.end()));
    CHECK(std::vector<tensor_id>(ao.begin(), ao.end()) == std::vector<tensor_id>(bo.begin(), bo.end()));
  }
}

// A random valid training-like graph: resident inputs/weights, activations produced in order, some
// with many consumers, multi-output ops, workspaces, control tensors, in-place updates of weights.
problem random_problem(std::mt19937& rng, int ops) {
  problem_builder b("random-" + std::to_string(ops));
  std::vector<tensor_id> avail;
  std::vector<tensor_id> weights;
  std::uniform_int_distribution<std::int64_t> bytes(0, 1 << 20);
  for (int i = 0; i < 3; ++i) avail.push_back(b.add_tensor("in" + std::to_string(i), bytes(rng), tensor_kind::input));
  for (int i = 0; i < 4; ++i) {
    weights.push_back(b.add_tensor("w" + std::to_string(i), bytes(rng), tensor_kind::weight));
    avail.push_back(weights.back());
  }
  int tcount = 0;
  std::vector<int> overwritten(weights.size(), 0);
  for (int o = 0; o < ops; ++o) {
    std::vector<tensor_id> ins, outs;
    const int nin = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < nin; ++k) ins.push_back(avail[rng() % avail.size()]);
    const int nout = 1 + static_cast<int>(rng() % 2);
    for (int k = 0; k < nout; ++k) {
      const auto kind = (rng() % 5 == 0) ? tensor_kind::gradient : (rng() % 11 == 0 ? tensor_kind::output : tensor_kind::activation);
      outs.push_back(b.add_tensor("t" + std::to_string(tcount++), bytes(rng), kind));
    }
    if (rng() % 7 == 0) outs.push_back(b.add_tensor("c" + std::to_string(tcount++), 0, tensor_kind::control));
    // One rng() call per statement: the order of evaluation of arguments is unspecified.
    const auto phase = static_cast<op_phase>(rng() % 4);
    const auto type = "aten.op" + std::to_string(rng() % 5);
    const auto cost = static_cast<double>(rng() % 1000) * 0.5;
    const auto ws = (rng() % 4 == 0) ? static_cast<std::int64_t>(rng() % 4096) : 0;
    b.add_op("op" + std::to_string(o), ins, outs, type, phase, cost, ws);
    for (auto t : outs) avail.push_back(t);
  }
  // In-place updates of weights at the end (after every reader).
  for (std::size_t w = 0; w < weights.size(); ++w) {
    if (rng() % 2) continue;
    auto nw = b.add_tensor("w" + std::to_string(w) + "_new", 0, tensor_kind::weight);
    (void)nw;
  }
  // Sizes of in-place tensors must equal their base: rebuild with the right sizes via a second pass.
  auto p0 = b.build();
  problem_builder b2(p0.name());
  for (tensor_id t = 0; t < p0.num_tensors(); ++t) {
    const auto& n = p0.tensor_name(t);
    std::int64_t sz = p0.bytes(t);
    if (n.size() > 4 && n.substr(n.size() - 4) == "_new") sz = p0.bytes(*p0.find_tensor(n.substr(0, n.size() - 4)));
    b2.add_tensor(n, sz, p0.kind(t));
  }
  for (op_id o = 0; o < p0.num_ops(); ++o) {
    auto in = p0.inputs(o);
    auto out = p0.outputs(o);
    b2.add_op(p0.op_name(o), {in.begin(), in.end()}, {out.begin(), out.end()}, p0.op_type(o), p0.phase(o), p0.cost(o), p0.workspace(o));
  }
  int u = 0;
  for (tensor_id t = 0; t < p0.num_tensors(); ++t) {
    const auto& n = p0.tensor_name(t);
    if (n.size() > 4 && n.substr(n.size() - 4) == "_new") {
      const auto base = *p0.find_tensor(n.substr(0, n.size() - 4));
      b2.set_inplace_of(t, base);
      // The second operand is an input or an activation, never a weight that another update overwrites.
      auto other = avail[rng() % avail.size()];
      if (std::find(weights.begin(), weights.end(), other) != weights.end()) other = avail[0];
      b2.add_op("update" + std::to_string(u++), {base, other}, {t}, "aten.add_", op_phase::update);
    }
  }
  return b2.build();
}

}  // namespace

TEST_CASE("dtype table and shape_bytes") {
  CHECK(io::dtype_size("float32") == 4);
  CHECK(io::dtype_size("bfloat16") == 2);
  CHECK(io::dtype_size("complex128") == 16);
  CHECK(io::dtype_size("bool") == 1);
  CHECK(!io::dtype_size("float31"));
  const std::vector<std::int64_t> s{32, 3, 224, 224};
  CHECK(io::shape_bytes(s, 4) == 19267584);
  CHECK(io::shape_bytes(std::vector<std::int64_t>{}, 8) == 8);  // a scalar
  CHECK(io::shape_bytes(std::vector<std::int64_t>{1LL << 32, 1LL << 32}, 4) == std::nullopt);
  CHECK(io::shape_bytes(std::vector<std::int64_t>{1LL << 40, 1LL << 40, 0}, 4) == 0);
  CHECK(io::dtype_names().find("float16") != std::string::npos);
}

TEST_CASE("reads the format's example graph, peak matches the Python reference") {
  const auto p = io::read_graph(data_dir + "/example.json");
  CHECK(p.name() == "format-example");
  CHECK(p.num_ops() == 5);
  CHECK(p.num_tensors() == 7);
  CHECK(p.bytes(*p.find_tensor("x")) == 19267584);
  CHECK(p.kind(*p.find_tensor("w1_new")) == tensor_kind::weight);
  CHECK(p.inplace_of(*p.find_tensor("w1_new")) == *p.find_tensor("w1"));
  CHECK(p.storage_of(*p.find_tensor("w1_new")) == p.storage_of(*p.find_tensor("w1")));
  CHECK(p.workspace(*p.find_op("conv1_bw")) == 1048576);
  CHECK(p.phase(*p.find_op("sgd_w1")) == op_phase::update);
  CHECK(p.op_type(*p.find_op("conv1")) == "aten.convolution");
  CHECK(p.cost(*p.find_op("conv1")) == doctest::Approx(1.18e9));
  // tools/memplan_graph.py given_order_peak (an independent implementation) gives 224826116.
  CHECK(peak_of(p, given_order(p)) == 224826116);
}

TEST_CASE("bytes from shape x dtype, control tensors, multi-output ops, unknown fields ignored") {
  const auto p = io::read_graph(data_dir + "/small.json");
  CHECK(p.bytes(*p.find_tensor("x")) == 8 * 16 * 4);
  CHECK(p.bytes(*p.find_tensor("labels")) == 8 * 8);
  CHECK(p.bytes(*p.find_tensor("w2")) == 32 * 4 * 2);
  CHECK(p.bytes(*p.find_tensor("mask")) == 8 * 32);
  CHECK(p.kind(*p.find_tensor("after_fwd")) == tensor_kind::control);
  CHECK(p.outputs(*p.find_op("relu")).size() == 2);
  // The control tensor orders xent before xent_bw.
  const auto preds = p.preds(*p.find_op("xent_bw"));
  CHECK(std::find(preds.begin(), preds.end(), *p.find_op("xent")) != preds.end());
  CHECK(peak_of(p, given_order(p)) == 8260);  // tools/memplan_graph.py
}

TEST_CASE("gzip'd files read like plain ones, corrupt and truncated gzip are named") {
  const auto a = io::read_graph(data_dir + "/small.json");
  const auto b = io::read_graph(data_dir + "/small.json.gz");
  check_same(a, b);
  const auto tmp = std::filesystem::temp_directory_path() / ("memplan-io-gz-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(tmp);
  // Writing .gz compresses (magic bytes 1f 8b), reading gives the same graph; equal input, equal bytes.
  io::save_json((tmp / "w.json.gz").string(), io::write_graph(a));
  io::save_json((tmp / "w2.json.gz").string(), io::write_graph(a));
  const auto raw = [&](const std::filesystem::path& f) {
    std::ifstream in(f, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const auto gz = raw(tmp / "w.json.gz");
  REQUIRE(gz.size() > 2);
  CHECK(static_cast<unsigned char>(gz[0]) == 0x1f);
  CHECK(static_cast<unsigned char>(gz[1]) == 0x8b);
  CHECK(gz == raw(tmp / "w2.json.gz"));
  check_same(a, io::read_graph((tmp / "w.json.gz").string()));
  {
    std::ofstream out(tmp / "trunc.json.gz", std::ios::binary);
    out << gz.substr(0, gz.size() / 2);
  }
  try {
    (void)io::read_graph((tmp / "trunc.json.gz").string());
    FAIL("truncated gzip accepted");
  } catch (const error& e) {
    CHECK(e.code() == errc::io_error);
    CHECK(std::string(e.what()).find("truncated") != std::string::npos);
  }
  {
    std::string bad = gz;
    for (std::size_t i = 10; i < bad.size() - 8; ++i) bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    std::ofstream out(tmp / "corrupt.json.gz", std::ios::binary);
    out << bad;
  }
  try {
    (void)io::read_graph((tmp / "corrupt.json.gz").string());
    FAIL("corrupt gzip accepted");
  } catch (const error& e) {
    CHECK((e.code() == errc::io_error || e.code() == errc::parse_error));
    CHECK(std::string(e.what()).find("corrupt.json.gz") != std::string::npos);
  }
  try {
    (void)io::read_graph((tmp / "missing.json").string());
    FAIL("missing file accepted");
  } catch (const error& e) {
    CHECK(e.code() == errc::io_error);
    CHECK(std::string(e.what()).find("cannot open") != std::string::npos);
  }
  std::filesystem::remove_all(tmp);
}

TEST_CASE("round trip: problem -> JSON -> problem, on the example and on random graphs") {
  for (const auto* f : {"/example.json", "/small.json"}) {
    const auto p = io::read_graph(data_dir + f);
    const auto j = io::write_graph(p);
    const auto q = io::parse_graph(j.dump(), "roundtrip");
    check_same(p, q);
    CHECK(io::write_graph(q) == j);
  }
  std::mt19937 rng(12345);
  for (int i = 0; i < 40; ++i) {
    const auto p = random_problem(rng, 5 + i * 3);
    const auto text = io::write_graph(p).dump(i % 2 ? 2 : -1);
    const auto q = io::parse_graph(text, "random");
    check_same(p, q);
    CHECK(peak_of(p, given_order(p)) == peak_of(q, given_order(q)));
  }
}

TEST_CASE("dataflow_graph: read, write with shapes and dtypes, same problem") {
  const auto g = io::read_dataflow_graph(data_dir + "/small.json");
  CHECK(g.name() == "small-train");
  CHECK(g.num_ops() == 11);
  const auto x = *g.find_tensor("x");
  CHECK(g.tensor_attrs(x).dtype == "float32");
  CHECK(g.tensor_attrs(x).shape == std::vector<std::int64_t>{8, 16});
  const auto j = io::write_graph(g);
  CHECK(j["tensors"][0]["shape"] == io::json::array({8, 16}));
  CHECK(j["tensors"][0]["dtype"] == "float32");
  check_same(make_problem(g), io::read_graph(data_dir + "/small.json"));
  check_same(make_problem(io::parse_dataflow_graph(j.dump(), "g")), make_problem(g));
}

TEST_CASE("a document without a name takes the file's stem") {
  const std::string doc = R"({"format":"memplan-graph","version":1,"tensors":[{"id":"a","bytes":4,"kind":"input"}],"ops":[]})";
  CHECK(io::parse_graph(doc, "some/dir/mygraph.json.gz").name() == "mygraph");
  CHECK(io::stem_of("a/b/c.json") == "c");
}

// ---- every malformed document gets its own message ---------------------------------------------------
namespace {

struct broken {
  const char* what;
  std::string doc;
  errc code;
  std::vector<std::string> message;  // substrings the message must contain
};

std::string doc_of(const std::string& tensors, const std::string& ops) {
  return R"({"format":"memplan-graph","version":1,"name":"g","tensors":[)" + tensors + R"(],"ops":[)" + ops + "]}";
}

const std::string T_X = R"({"id":"x","bytes":16,"kind":"input"})";
const std::string T_A = R"({"id":"a","bytes":16,"kind":"activation"})";

}  // namespace

TEST_CASE("malformed documents: each is rejected with a specific message naming the culprit") {
  const std::vector<broken> cases{
      {"not JSON", "this is not json", errc::parse_error, {"not valid JSON", "line 1", "byte"}},
      {"syntax error on line 3", "{\"format\": \"memplan-graph\",\n \"version\": 1,\n \"tensors\": [,]}", errc::parse_error,
       {"not valid JSON at line 3", "column"}},
      {"empty document", "  \n", errc::parse_error, {"empty"}},
      {"number beyond double", doc_of(R"({"id":"x","bytes":1e400,"kind":"input"})", ""), errc::parse_error,
       {"not valid JSON", "number overflow parsing '1e400'"}},
      {"truncated JSON", R"({"format":"memplan-graph","version":1,"tensors":[)", errc::parse_error, {"not valid JSON"}},
      {"top level is a list", "[1,2,3]", errc::invalid_graph, {"top level is not a JSON object"}},
      {"missing format", R"({"version":1,"tensors":[],"ops":[]})", errc::invalid_graph, {"missing \"format\""}},
      {"wrong format", R"({"format":"onnx","version":1,"tensors":[],"ops":[]})", errc::invalid_graph, {"\"format\" is \"onnx\""}},
      {"wrong version", R"({"format":"memplan-graph","version":2,"tensors":[],"ops":[]})", errc::invalid_graph, {"\"version\" is 2"}},
      {"version as string", R"({"format":"memplan-graph","version":"1","tensors":[],"ops":[]})", errc::invalid_graph, {"\"version\" is \"1\""}},
      {"missing tensors", R"({"format":"memplan-graph","version":1,"ops":[]})", errc::invalid_graph, {"missing the \"tensors\" list"}},
      {"missing ops", R"({"format":"memplan-graph","version":1,"tensors":[]})", errc::invalid_graph, {"missing the \"ops\" list"}},
      {"tensors not a list", R"({"format":"memplan-graph","version":1,"tensors":{},"ops":[]})", errc::invalid_graph, {"\"tensors\" is not a list"}},
      {"tensor without id", doc_of(T_X + R"(,{"bytes":4,"kind":"input"})", ""), errc::invalid_graph, {"tensors[1] has no \"id\""}},
      {"tensor id not a string", doc_of(R"({"id":7,"bytes":4,"kind":"input"})", ""), errc::invalid_graph, {"tensors[0]", "\"id\" is 7"}},
      {"duplicate tensor id", doc_of(T_X + "," + T_X, ""), errc::invalid_graph, {"duplicate tensor id 'x'", "tensors[0]", "tensors[1]"}},
      {"negative bytes", doc_of(R"({"id":"x","bytes":-4,"kind":"input"})", ""), errc::invalid_graph, {"tensor 'x': bytes -4 is negative"}},
      {"fractional bytes", doc_of(R"({"id":"x","bytes":1.5,"kind":"input"})", ""), errc::invalid_graph, {"tensor 'x': bytes 1.5 is not an integer"}},
      {"bytes as string", doc_of(R"({"id":"x","bytes":"16","kind":"input"})", ""), errc::invalid_graph, {"tensor 'x': bytes \"16\" is not an integer"}},
      {"bytes above int64", doc_of(R"({"id":"x","bytes":18446744073709551615,"kind":"input"})", ""), errc::invalid_graph,
       {"tensor 'x': bytes 18446744073709551615 overflows"}},
      {"bytes beyond uint64", doc_of(R"({"id":"x","bytes":123456789012345678901234567890,"kind":"input"})", ""), errc::invalid_graph,
       {"tensor 'x': bytes", "overflows"}},
      {"shape product overflows", doc_of(R"({"id":"x","shape":[4294967296,4294967296],"dtype":"float32","kind":"input"})", ""),
       errc::invalid_graph, {"tensor 'x': shape [4294967296,4294967296] x sizeof(float32) overflows"}},
      {"negative dimension", doc_of(R"({"id":"x","shape":[2,-3],"dtype":"float32","kind":"input"})", ""), errc::invalid_graph,
       {"tensor 'x': shape[1] -3 is negative"}},
      {"unknown dtype", doc_of(R"({"id":"x","shape":[2],"dtype":"float31","kind":"input"})", ""), errc::invalid_graph,
       {"tensor 'x': unknown dtype 'float31'", "float32"}},
      {"bytes disagree with shape x dtype", doc_of(R"({"id":"x","bytes":100,"shape":[2,3],"dtype":"float32","kind":"input"})", ""),
       errc::invalid_graph, {"tensor 'x': bytes 100 disagrees with shape [2,3] x sizeof(float32) = 24"}},
      {"no bytes and no dtype", doc_of(R"({"id":"x","shape":[2,3],"kind":"input"})", ""), errc::invalid_graph,
       {"tensor 'x' has no \"bytes\" and not both \"shape\" and \"dtype\""}},
      {"missing kind", doc_of(R"({"id":"x","bytes":4})", ""), errc::invalid_graph, {"tensor 'x' has no \"kind\""}},
      {"unknown kind", doc_of(R"({"id":"x","bytes":4,"kind":"scratch"})", ""), errc::invalid_graph,
       {"tensor 'x': unknown kind \"scratch\"", "activation"}},
      {"control tensor with bytes", doc_of(T_X + R"(,{"id":"c","bytes":8,"kind":"control"})",
                                          R"({"id":"f","inputs":["x"],"outputs":["c"]})"),
       errc::invalid_graph, {"control tensor 'c' has 8 bytes"}},
      {"op without id", doc_of(T_X, R"({"inputs":["x"],"outputs":[]})"), errc::invalid_graph, {"ops[0] has no \"id\""}},
      {"op not an object", doc_of(T_X, R"("f")"), errc::invalid_graph, {"ops[0] is not an object"}},
      {"duplicate op id", doc_of(T_X + "," + T_A, R"({"id":"f","inputs":["x"],"outputs":["a"]},{"id":"f","inputs":["a"],"outputs":[]})"),
       errc::invalid_graph, {"duplicate op id 'f'"}},
      {"op without inputs", doc_of(T_X, R"({"id":"f","outputs":[]})"), errc::invalid_graph, {"op 'f' has no 'inputs' list"}},
      {"input id not a string", doc_of(T_X, R"({"id":"f","inputs":[3],"outputs":[]})"), errc::invalid_graph, {"op 'f': inputs[0] = 3"}},
      {"unknown phase", doc_of(T_X, R"({"id":"f","inputs":["x"],"outputs":[],"phase":"sideways"})"), errc::invalid_graph,
       {"op 'f': unknown phase \"sideways\"", "backward"}},
      {"negative cost", doc_of(T_X, R"({"id":"f","inputs":["x"],"outputs":[],"cost":-1})"), errc::invalid_graph,
       {"op 'f': cost -1 is not a finite non-negative number"}},
      {"negative workspace", doc_of(T_X, R"({"id":"f","inputs":["x"],"outputs":[],"workspace":-8})"), errc::invalid_graph,
       {"op 'f': workspace -8 is negative"}},
      {"dangling input", doc_of(T_X, R"({"id":"f","inputs":["x","ghost"],"outputs":[]})"), errc::invalid_graph,
       {"op 'f' reads unknown tensor 'ghost'", "dangling"}},
      {"dangling output", doc_of(T_X, R"({"id":"f","inputs":["x"],"outputs":["ghost"]})"), errc::invalid_graph,
       {"op 'f' writes unknown tensor 'ghost'"}},
      {"two producers", doc_of(T_X + "," + T_A, R"({"id":"f","inputs":["x"],"outputs":["a"]},{"id":"g","inputs":["x"],"outputs":["a"]})"),
       errc::invalid_graph, {"tensor 'a' has two producers: ops 'f' and 'g'"}},
      {"output listed twice", doc_of(T_X + "," + T_A, R"({"id":"f","inputs":["x"],"outputs":["a","a"]})"), errc::invalid_graph,
       {"op 'f' lists output 'a' twice"}},
      {"reads and writes one tensor", doc_of(T_X + "," + T_A, R"({"id":"f","inputs":["a"],"outputs":["a"]})"), errc::invalid_graph,
       {"op 'f' both reads and writes tensor 'a'"}},
      {"activation without producer", doc_of(T_X + "," + T_A, ""), errc::invalid_graph, {"tensor 'a' (activation) has no producing op"}},
      {"cycle", doc_of(T_X + "," + T_A + R"(,{"id":"b","bytes":4,"kind":"activation"})",
                      R"({"id":"f","inputs":["x","b"],"outputs":["a"]},{"id":"g","inputs":["a"],"outputs":["b"]})"),
       errc::invalid_graph, {"cycle", "'f' -> 'g' -> 'f'"}},
      {"given order does not run", doc_of(T_X + "," + T_A + R"(,{"id":"b","bytes":4,"kind":"activation"})",
                                         R"({"id":"g","inputs":["a"],"outputs":["b"]},{"id":"f","inputs":["x"],"outputs":["a"]})"),
       errc::invalid_graph, {"given order", "'g'", "'f'"}},
      {"inplace_of unknown tensor", doc_of(T_X + R"(,{"id":"a","bytes":16,"kind":"activation","inplace_of":"nowhere"})",
                                          R"({"id":"f","inputs":["x"],"outputs":["a"]})"),
       errc::invalid_graph, {"tensor 'a' is inplace_of 'nowhere', which is not a tensor of the graph"}},
      {"inplace_of itself", doc_of(T_X + R"(,{"id":"a","bytes":16,"kind":"activation","inplace_of":"a"})",
                                  R"({"id":"f","inputs":["x"],"outputs":["a"]})"),
       errc::invalid_graph, {"tensor 'a' is inplace_of itself"}},
      {"in-place size differs", doc_of(T_X + R"(,{"id":"a","bytes":8,"kind":"input","inplace_of":"x"})",
                                      R"({"id":"f","inputs":["x"],"outputs":["a"]})"),
       errc::invalid_graph, {"tensor 'a' (8 bytes) is inplace_of 'x' (16 bytes)"}},
      {"overwritten in place twice", doc_of(T_X + R"(,{"id":"a","bytes":16,"kind":"input","inplace_of":"x"},{"id":"b","bytes":16,"kind":"input","inplace_of":"x"})",
                                           R"({"id":"f","inputs":[],"outputs":["a"]},{"id":"g","inputs":[],"outputs":["b"]})"),
       errc::invalid_graph, {"tensor 'x' is overwritten in place twice (by 'a' and 'b')"}},
      {"in-place write before a reader", doc_of(T_X + R"(,{"id":"x2","bytes":16,"kind":"input","inplace_of":"x"},{"id":"a","bytes":4,"kind":"activation"})",
                                               R"({"id":"upd","inputs":[],"outputs":["x2"]},{"id":"use","inputs":["x"],"outputs":["a"]})"),
       errc::invalid_graph, {"given order", "'upd'", "'use'"}},
  };
  CHECK(cases.size() >= 25);
  for (const auto& c : cases) {
    CAPTURE(c.what);
    try {
      (void)io::parse_graph(c.doc, "broken.json");
      FAIL("accepted: ", c.what);
    } catch (const error& e) {
      const std::string msg = e.what();
      CAPTURE(msg);
      CHECK(e.code() == c.code);
      CHECK(msg.rfind("broken.json: ", 0) == 0);  // the source comes first
      for (const auto& s : c.message) CHECK_MESSAGE(msg.find(s) != std::string::npos, "missing '", s, "'");
    }
    // The dataflow_graph reader applies the same rules.
    CHECK_THROWS_AS((void)io::parse_dataflow_graph(c.doc, "broken.json"), error);
  }
}

TEST_CASE("random corruptions of a valid document never crash and never pass silently wrong") {
  const auto text = io::read_text_file(data_dir + "/small.json");
  const auto good = io::parse_graph(text, "small.json");
  std::mt19937 rng(7);
  int rejected = 0, accepted = 0;
  for (int i = 0; i < 400; ++i) {
    auto t = text;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits; ++k) {
      const auto pos = rng() % t.size();
      switch (rng() % 3) {
        case 0: t.erase(pos, 1 + rng() % 8); break;
        case 1: t[pos] = "{}[]\",:0-9ax "[rng() % 14]; break;
        default: t.insert(pos, 1, "{}[]\",:1e"[rng() % 9]); break;
      }
    }
    try {
      const auto p = io::parse_graph(t, "fuzz.json");
      ++accepted;
      // What is accepted is a valid graph: its given order runs and the writer reproduces it.
      CHECK(is_topological(p, given_order(p)));
      check_same(p, io::parse_graph(io::write_graph(p).dump(), "again"));
    } catch (const error& e) {
      ++rejected;
      CHECK((e.code() == errc::parse_error || e.code() == errc::invalid_graph));
    }
  }
  CHECK(rejected > 200);
  MESSAGE("fuzz: ", rejected, " rejected, ", accepted, " accepted");
  (void)good;
}

TEST_CASE("bundled models: counts, bytes and given-order peak agree with data/models/README.md (Python reference)") {
  const std::string dir = std::string(MEMPLAN_SOURCE_DIR) + "/data/models";
  std::ifstream readme(dir + "/README.md");
  if (!readme) {
    MESSAGE("data/models/README.md not found: skipped");
    return;
  }
  std::string line;
  int checked = 0;
  while (std::getline(readme, line)) {
    // | file | ops | tensors | total bytes | resident bytes | given-order peak (bytes) | ...
    if (line.rfind("| ", 0) != 0 || line.find(".json") == std::string::npos) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    std::string cell;
    while (std::getline(ss, cell, '|')) {
      const auto b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    }
    if (cells.size() < 6) continue;
    const auto path = dir + "/" + cells[0];
    if (!std::filesystem::exists(path)) continue;
    CAPTURE(cells[0]);
    const auto p = io::read_graph(path);
    CHECK(p.num_ops() == std::stoll(cells[1]));
    CHECK(p.num_tensors() == std::stoll(cells[2]));
    CHECK(p.total_bytes() == std::stoll(cells[3]));
    CHECK(p.resident_bytes() == std::stoll(cells[4]));
    CHECK(peak_of(p, given_order(p)) == std::stoll(cells[5]));
    ++checked;
  }
  MESSAGE("checked ", checked, " bundled graphs");
}

TEST_CASE("graph format: meta.cost_unit, recomputable and implementations read, write and round-trip") {
  const std::string doc = R"({"format": "memplan-graph", "version": 1, "name": "alt", "meta": {"cost_unit": "seconds", "device": "x"},
    "tensors": [{"id": "x", "bytes": 64, "kind": "input"}, {"id": "w", "bytes": 64, "kind": "weight"},
                {"id": "y", "bytes": 64, "kind": "activation"}, {"id": "m", "bytes": 64, "kind": "activation"},
                {"id": "z", "bytes": 8, "kind": "output"}],
    "ops": [{"id": "conv", "op": "aten.convolution", "inputs": ["x", "w"], "outputs": ["y"], "cost": 2.0, "workspace": 128,
             "implementations": [{"name": "direct", "cost": 5.0, "workspace": 0}, {"name": "fft", "cost": 1.0, "workspace": 4096}]},
            {"id": "drop", "op": "aten.bernoulli_", "inputs": ["y"], "outputs": ["m"], "recomputable": false},
            {"id": "sum", "inputs": ["m"], "outputs": ["z"]}]})";
  const auto p = io::parse_graph(doc, "alt.json");
  CHECK(p.cost_unit() == "seconds");
  REQUIRE(p.implementations(0).size() == 2);
  CHECK(p.implementations(0)[1].name == "fft");
  CHECK(p.implementations(0)[1].workspace == 4096);
  CHECK(p.recomputable(0));
  CHECK_FALSE(p.recomputable(1));
  const auto back = io::parse_graph(io::write_graph(p).dump(), "back.json");
  CHECK(back.cost_unit() == "seconds");
  CHECK(std::vector<implementation>(back.implementations(0).begin(), back.implementations(0).end()) ==
        std::vector<implementation>(p.implementations(0).begin(), p.implementations(0).end()));
  CHECK_FALSE(back.recomputable(1));
  const auto g = io::parse_dataflow_graph(doc, "alt.json");
  const auto q = make_problem(g);
  CHECK(q.cost_unit() == "seconds");
  CHECK(q.implementations(0).size() == 2);
  CHECK_FALSE(q.recomputable(1));
  CHECK(io::write_graph(g)["ops"][1]["recomputable"] == false);
  // Bad values are named.
  auto expect = [&](std::string text, const char* what) {
    try {
      (void)io::parse_graph(text, "bad.json");
      FAIL("accepted: ", what);
    } catch (const error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(what) != std::string::npos, e.what());
    }
  };
  auto with = [&](const std::string& from, const std::string& to) {
    auto t = doc;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  expect(with("\"cost_unit\": \"seconds\"", "\"cost_unit\": \"parsecs\""), "meta.cost_unit");
  expect(with("\"recomputable\": false", "\"recomputable\": 0"), "\"recomputable\" is 0");
  expect(with("{\"name\": \"fft\"", "{\"name\": \"direct\""), "lists implementation 'direct' twice");
  expect(with("\"cost\": 1.0, \"workspace\": 4096", "\"cost\": -1.0, \"workspace\": 4096"), "implementations[1]: cost");
}
