#pragma once
// The memplan graph format, version 1 (docs/format.md): reading a document (.json, or .json.gz with
// <memplan/io/gzip.hpp>) into a validated memplan::problem or graph::dataflow_graph, and writing
// either back. Link memplan::json.
//
// Every malformed document is rejected with memplan::error naming the source and the culprit:
// errc::parse_error for text that is not JSON (with line, column and byte offset) and
// errc::invalid_graph for JSON that breaks a rule of the format (wrong format/version, missing
// lists, bad ids, sizes, dtypes, kinds, phases, dangling tensors, two producers, cycles, in-place
// rules, a given order that does not run). Unknown extra fields are ignored, as the format allows.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>


#include <memplan/core/analysis.hpp>
#include <memplan/base/error.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/problem_builder.hpp>
#include <memplan/graph/dataflow_graph.hpp>
#include <memplan/base/kinds.hpp>
#include <memplan/io/dtype.hpp>
#include <memplan/io/file.hpp>
#include <memplan/io/json_text.hpp>

// g++ 12 at -O2/-O3 reports a false -Wrestrict inside std::string's operator+ once it is inlined
// into long message-building code (GCC PR 105329, PR 105651); memplan's messages are plain
// concatenations, so the warning is switched off for this header only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

namespace memplan::io {

inline constexpr std::string_view graph_format_name = "memplan-graph";
inline constexpr std::int64_t graph_format_version = 1;

struct read_options {
  problem_options problem{};  // e.g. inputs_resident
  // The format says the order of `ops` is the order the framework ran; a reader rejects a file
  // whose given order reads a tensor before its producer runs (as tools/memplan_graph.py does).
  bool require_executable_given_order = true;
};

// ---- the document, as read (names, not ids) ----------------------------------------------------
struct tensor_record {
  std::string id;
  std::int64_t bytes = 0;
  tensor_kind kind = tensor_kind::activation;
  std::string inplace_of;             // empty: none
  std::vector<std::int64_t> shape;    // informational unless bytes is absent
  bool has_shape = false;
  std::string dtype;                  // empty: none
};

struct op_record {
  std::string id;
  std::string op;                     // the operator's name (free text)
  std::vector<std::string> inputs, outputs;
  op_phase phase = op_phase::other;
  double cost = 0.0;
  std::int64_t workspace = 0;
  bool recomputable = true;
  std::vector<implementation> implementations;
};

struct graph_document {
  std::string name;
  std::string cost_unit;  // meta.cost_unit: "seconds", "flops" or "units"; empty: not said
  std::vector<tensor_record> tensors;
  std::vector<op_record> ops;
};

namespace detail {

inline std::string kind_names() {
  std::string s;
  for (auto k : {tensor_kind::input, tensor_kind::weight, tensor_kind::activation, tensor_kind::gradient,
                 tensor_kind::optimizer_state, tensor_kind::output, tensor_kind::control})
    s += (s.empty() ? "" : ", ") + std::string(to_string(k));
  return s;
}

inline std::string phase_names() { return "forward, backward, update, other"; }

// A non-negative JSON integer that fits in int64; `what` names the field for messages.
inline std::int64_t nonneg_int(const json& v, const std::string& what, const std::string& source) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      throw error(errc::invalid_graph, source + ": " + what + " " + std::to_string(u) + " overflows a signed 64-bit integer");
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) {
    const auto i = v.get<std::int64_t>();
    if (i < 0) throw error(errc::invalid_graph, source + ": " + what + " " + std::to_string(i) + " is negative");
    return i;
  }
  if (v.is_number_float()) {
    const auto d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) >= 9.2e18)
      throw error(errc::invalid_graph, source + ": " + what + " " + v.dump() + " overflows a signed 64-bit integer");
    if (d < 0) throw error(errc::invalid_graph, source + ": " + what + " " + v.dump() + " is negative");
    throw error(errc::invalid_graph, source + ": " + what + " " + v.dump() + " is not an integer");
  }
  throw error(errc::invalid_graph, source + ": " + what + " " + short_dump(v) + " is not an integer");
}

inline std::vector<std::string> id_list(const json& op, const char* key, const std::string& who, const std::string& source) {
  auto it = op.find(key);
  if (it == op.end()) throw error(errc::invalid_graph, source + ": " + who + " has no '" + key + "' list");
  if (!it->is_array()) throw error(errc::invalid_graph, source + ": " + who + ": '" + key + "' is not a list of tensor ids");
  std::vector<std::string> out;
  out.reserve(it->size());
  for (std::size_t k = 0; k < it->size(); ++k) {
    const auto& x = (*it)[k];
    if (!x.is_string())
      throw error(errc::invalid_graph, source + ": " + who + ": " + key + "[" + std::to_string(k) + "] = " + short_dump(x) +
                                           " is not a tensor id (a string)");
    out.push_back(x.get<std::string>());
  }
  return out;
}

}  // namespace detail

// ---- reading ---------------------------------------------------------------------------------------------
// Checks the document's own rules (everything that needs no graph algorithm) and returns it.
// `source` names the input in messages ("resnet18.json", "<string>").
inline graph_document parse_graph_document(const json& j, const std::string& source) {
  using detail::squote;
  auto bad = [&](const std::string& what) { return error(errc::invalid_graph, source + ": " + what); };
  if (!j.is_object()) throw bad("the top level is not a JSON object (expected {\"format\": \"memplan-graph\", ...})");
  auto f = j.find("format");
  if (f == j.end()) throw bad("missing \"format\": \"memplan-graph\" (is this a memplan graph file?)");
  if (!f->is_string() || f->get<std::string>() != graph_format_name)
    throw bad("\"format\" is " + detail::short_dump(*f) + ", expected \"memplan-graph\"");
  auto v = j.find("version");
  if (v == j.end()) throw bad("missing \"version\" (this reader reads version 1)");
  if (!v->is_number_integer() || v->get<std::int64_t>() != graph_format_version)
    throw bad("\"version\" is " + detail::short_dump(*v) + ", this reader reads version 1 only");

  graph_document doc;
  if (auto m = j.find("meta"); m != j.end() && !m->is_null()) {
    if (!m->is_object()) throw bad("\"meta\" is " + detail::short_dump(*m) + ", not an object");
    if (auto cu = m->find("cost_unit"); cu != m->end() && !cu->is_null()) {
      if (!cu->is_string()) throw bad("\"meta.cost_unit\" is " + detail::short_dump(*cu) + ", not a string");
      doc.cost_unit = cu->get<std::string>();
      if (doc.cost_unit != "seconds" && doc.cost_unit != "flops" && doc.cost_unit != "units")
        throw bad("\"meta.cost_unit\" is " + detail::short_dump(*cu) + " (expected \"seconds\", \"flops\" or \"units\")");
    }
  }
  if (auto n = j.find("name"); n != j.end()) {
    if (!n->is_string()) throw bad("\"name\" is " + detail::short_dump(*n) + ", not a string");
    doc.name = n->get<std::string>();
  }
  if (doc.name.empty()) doc.name = stem_of(source);
  auto ts = j.find("tensors");
  if (ts == j.end()) throw bad("missing the \"tensors\" list");
  if (!ts->is_array()) throw bad("\"tensors\" is not a list");
  auto os = j.find("ops");
  if (os == j.end()) throw bad("missing the \"ops\" list");
  if (!os->is_array()) throw bad("\"ops\" is not a list");

  // ---- tensors ----
  std::unordered_map<std::string, std::size_t> tindex;
  tindex.reserve(ts->size());
  doc.tensors.reserve(ts->size());
  for (std::size_t i = 0; i < ts->size(); ++i) {
    const auto& t = (*ts)[i];
    const auto at = "tensors[" + std::to_string(i) + "]";
    if (!t.is_object()) throw bad(at + " is not an object");
    auto id = t.find("id");
    if (id == t.end()) throw bad(at + " has no \"id\"");
    if (!id->is_string() || id->get_ref<const std::string&>().empty())
      throw bad(at + ": \"id\" is " + detail::short_dump(*id) + ", not a non-empty string");
    tensor_record r;
    r.id = id->get<std::string>();
    const auto who = "tensor " + squote(r.id);
    if (auto [it, fresh] = tindex.emplace(r.id, i); !fresh)
      throw bad("duplicate tensor id " + squote(r.id) + " (tensors[" + std::to_string(it->second) + "] and " + at + ")");
    auto k = t.find("kind");
    if (k == t.end()) throw bad(who + " has no \"kind\" (one of " + detail::kind_names() + ")");
    if (!k->is_string()) throw bad(who + ": \"kind\" is " + detail::short_dump(*k) + ", not a string");
    auto kind = parse_tensor_kind(k->get_ref<const std::string&>());
    if (!kind) throw bad(who + ": unknown kind " + detail::short_dump(*k) + " (expected one of " + detail::kind_names() + ")");
    r.kind = *kind;
    if (auto sh = t.find("shape"); sh != t.end() && !sh->is_null()) {
      if (!sh->is_array()) throw bad(who + ": \"shape\" is " + detail::short_dump(*sh) + ", not a list of dimensions");
      for (std::size_t d = 0; d < sh->size(); ++d)
        r.shape.push_back(detail::nonneg_int((*sh)[d], who + ": shape[" + std::to_string(d) + "]", source));
      r.has_shape = true;
    }
    std::optional<std::int64_t> elem;
    if (auto dt = t.find("dtype"); dt != t.end() && !dt->is_null()) {
      if (!dt->is_string()) throw bad(who + ": \"dtype\" is " + detail::short_dump(*dt) + ", not a string");
      r.dtype = dt->get<std::string>();
      elem = dtype_size(r.dtype);
      if (!elem) throw bad(who + ": unknown dtype " + squote(r.dtype) + " (known: " + dtype_names() + ")");
    }
    std::optional<std::int64_t> from_shape;
    if (r.has_shape && elem) {
      from_shape = shape_bytes(r.shape, *elem);
      if (!from_shape) {
        std::string dims;
        for (auto d : r.shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
        throw bad(who + ": shape [" + dims + "] x sizeof(" + r.dtype + ") overflows a signed 64-bit integer");
      }
    }
    if (auto b = t.find("bytes"); b != t.end()) {
      r.bytes = detail::nonneg_int(*b, who + ": bytes", source);
      if (from_shape && *from_shape != r.bytes) {
        std::string dims;
        for (auto d : r.shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
        throw bad(who + ": bytes " + std::to_string(r.bytes) + " disagrees with shape [" + dims + "] x sizeof(" + r.dtype +
                  ") = " + std::to_string(*from_shape));
      }
    } else if (from_shape) {
      r.bytes = *from_shape;
    } else {
      throw bad(who + " has no \"bytes\" and not both \"shape\" and \"dtype\"");
    }
    if (r.kind == tensor_kind::control && r.bytes != 0)
      throw bad("control " + who + " has " + std::to_string(r.bytes) + " bytes; control tensors have 0 bytes and only order ops");
    if (auto ip = t.find("inplace_of"); ip != t.end() && !ip->is_null()) {
      if (!ip->is_string() || ip->get_ref<const std::string&>().empty())
        throw bad(who + ": \"inplace_of\" is " + detail::short_dump(*ip) + ", not a tensor id");
      r.inplace_of = ip->get<std::string>();
    }
    doc.tensors.push_back(std::move(r));
  }
  // inplace_of targets exist, differ from the tensor, are overwritten at most once, same size.
  std::unordered_map<std::string, std::string> overwritten_by;
  for (const auto& r : doc.tensors) {
    if (r.inplace_of.empty()) continue;
    auto it = tindex.find(r.inplace_of);
    if (it == tindex.end())
      throw bad("tensor " + squote(r.id) + " is inplace_of " + squote(r.inplace_of) + ", which is not a tensor of the graph");
    if (r.inplace_of == r.id) throw bad("tensor " + squote(r.id) + " is inplace_of itself");
    if (auto [w, fresh] = overwritten_by.emplace(r.inplace_of, r.id); !fresh)
      throw bad("tensor " + squote(r.inplace_of) + " is overwritten in place twice (by " + squote(w->second) + " and " +
                squote(r.id) + ")");
    const auto& base = doc.tensors[it->second];
    if (base.bytes != r.bytes)
      throw bad("tensor " + squote(r.id) + " (" + std::to_string(r.bytes) + " bytes) is inplace_of " + squote(base.id) + " (" +
                std::to_string(base.bytes) + " bytes): an in-place tensor has the size of the storage it writes into");
  }

  // ---- ops ----
  std::unordered_map<std::string, std::size_t> oindex, producer;
  oindex.reserve(os->size());
  doc.ops.reserve(os->size());
  for (std::size_t i = 0; i < os->size(); ++i) {
    const auto& o = (*os)[i];
    const auto at = "ops[" + std::to_string(i) + "]";
    if (!o.is_object()) throw bad(at + " is not an object");
    auto id = o.find("id");
    if (id == o.end()) throw bad(at + " has no \"id\"");
    if (!id->is_string() || id->get_ref<const std::string&>().empty())
      throw bad(at + ": \"id\" is " + detail::short_dump(*id) + ", not a non-empty string");
    op_record r;
    r.id = id->get<std::string>();
    const auto who = "op " + squote(r.id);
    if (auto [it, fresh] = oindex.emplace(r.id, i); !fresh)
      throw bad("duplicate op id " + squote(r.id) + " (ops[" + std::to_string(it->second) + "] and " + at + ")");
    if (auto ty = o.find("op"); ty != o.end() && !ty->is_null()) {
      if (!ty->is_string()) throw bad(who + ": \"op\" is " + detail::short_dump(*ty) + ", not a string");
      r.op = ty->get<std::string>();
    }
    if (auto ph = o.find("phase"); ph != o.end() && !ph->is_null()) {
      if (!ph->is_string()) throw bad(who + ": \"phase\" is " + detail::short_dump(*ph) + ", not a string");
      auto p = parse_op_phase(ph->get_ref<const std::string&>());
      if (!p) throw bad(who + ": unknown phase " + detail::short_dump(*ph) + " (expected one of " + detail::phase_names() + ")");
      r.phase = *p;
    }
    if (auto c = o.find("cost"); c != o.end() && !c->is_null()) {
      if (!c->is_number()) throw bad(who + ": cost " + detail::short_dump(*c) + " is not a number");
      r.cost = c->get<double>();
      if (!(r.cost >= 0) || !std::isfinite(r.cost))
        throw bad(who + ": cost " + c->dump() + " is not a finite non-negative number");
    }
    if (auto w = o.find("workspace"); w != o.end() && !w->is_null()) {
      r.workspace = detail::nonneg_int(*w, who + ": workspace", source);
      if (r.workspace > std::numeric_limits<std::int64_t>::max() / 4)
        throw bad(who + ": workspace " + std::to_string(r.workspace) + " overflows the arena arithmetic");
    }
    if (auto rc = o.find("recomputable"); rc != o.end() && !rc->is_null()) {
      if (!rc->is_boolean()) throw bad(who + ": \"recomputable\" is " + detail::short_dump(*rc) + ", not true or false");
      r.recomputable = rc->get<bool>();
    }
    if (auto im = o.find("implementations"); im != o.end() && !im->is_null()) {
      if (!im->is_array()) throw bad(who + ": \"implementations\" is " + detail::short_dump(*im) + ", not a list");
      for (std::size_t k = 0; k < im->size(); ++k) {
        const auto& x = (*im)[k];
        const auto iat = who + ": implementations[" + std::to_string(k) + "]";
        if (!x.is_object()) throw bad(iat + " is not an object {\"name\", \"cost\", \"workspace\"}");
        implementation impl;
        auto nm = x.find("name");
        if (nm == x.end() || !nm->is_string() || nm->get_ref<const std::string&>().empty())
          throw bad(iat + " has no \"name\" (a non-empty string)");
        impl.name = nm->get<std::string>();
        for (const auto& other : r.implementations)
          if (other.name == impl.name) throw bad(who + " lists implementation " + squote(impl.name) + " twice");
        if (auto c = x.find("cost"); c != x.end() && !c->is_null()) {
          if (!c->is_number() || !(c->get<double>() >= 0) || !std::isfinite(c->get<double>()))
            throw bad(iat + ": cost " + detail::short_dump(*c) + " is not a finite non-negative number");
          impl.cost = c->get<double>();
        }
        if (auto w = x.find("workspace"); w != x.end() && !w->is_null()) {
          impl.workspace = detail::nonneg_int(*w, iat + ": workspace", source);
          if (impl.workspace > std::numeric_limits<std::int64_t>::max() / 4)
            throw bad(iat + ": workspace " + std::to_string(impl.workspace) + " overflows the arena arithmetic");
        }
        if (auto in = x.find("inputs"); in != x.end() && !in->is_null()) {
          impl.inputs = detail::id_list(x, "inputs", iat, source);
          if (impl.inputs.empty()) throw bad(iat + ": \"inputs\" is empty (leave it out to read the op's inputs)");
          for (const auto& t : impl.inputs)
            if (!tindex.count(t)) throw bad(iat + " reads unknown tensor " + squote(t) + " (dangling: no tensor has that id)");
        }
        r.implementations.push_back(std::move(impl));
      }
    }
    r.inputs = detail::id_list(o, "inputs", who, source);
    r.outputs = detail::id_list(o, "outputs", who, source);
    for (const auto& t : r.inputs)
      if (!tindex.count(t)) throw bad(who + " reads unknown tensor " + squote(t) + " (dangling: no tensor has that id)");
    for (std::size_t k = 0; k < r.outputs.size(); ++k) {
      const auto& t = r.outputs[k];
      if (!tindex.count(t)) throw bad(who + " writes unknown tensor " + squote(t) + " (dangling: no tensor has that id)");
      if (std::find(r.outputs.begin(), r.outputs.begin() + static_cast<std::ptrdiff_t>(k), t) != r.outputs.begin() + static_cast<std::ptrdiff_t>(k))
        throw bad(who + " lists output " + squote(t) + " twice");
      if (auto [p, fresh] = producer.emplace(t, i); !fresh)
        throw bad("tensor " + squote(t) + " has two producers: ops " + squote((*os)[p->second]["id"].get<std::string>()) +
                  " and " + squote(r.id));
      if (std::find(r.inputs.begin(), r.inputs.end(), t) != r.inputs.end())
        throw bad(who + " both reads and writes tensor " + squote(t) + " (an in-place write is a new tensor with \"inplace_of\")");
    }
    doc.ops.push_back(std::move(r));
  }
  for (const auto& r : doc.tensors) {
    if (producer.count(r.id)) continue;
    if (!may_be_resident(r.kind))
      throw bad("tensor " + squote(r.id) + " (" + std::string(to_string(r.kind)) +
                ") has no producing op; only input, weight and optimizer_state tensors may exist before the first op");
    if (!r.inplace_of.empty()) throw bad("in-place tensor " + squote(r.id) + " has no producing op");
  }
  return doc;
}

inline graph_document parse_graph_document(std::string_view text, const std::string& source) {
  return parse_graph_document(detail::parse_json_text(text, source), source);
}

// The validated problem of a document: cycles (printed op by op), in-place ordering and, unless
// disabled, an executable given order are checked here.
inline problem to_problem(const graph_document& doc, const std::string& source, const read_options& opt = {}) {
  problem_builder b(doc.name, opt.problem);
  std::unordered_map<std::string, tensor_id> tid;
  tid.reserve(doc.tensors.size());
  for (const auto& t : doc.tensors) tid.emplace(t.id, b.add_tensor(t.id, t.bytes, t.kind));
  for (const auto& t : doc.tensors)
    if (!t.inplace_of.empty()) b.set_inplace_of(tid.at(t.id), tid.at(t.inplace_of));
  for (const auto& o : doc.ops) {
    std::vector<tensor_id> ins, outs;
    ins.reserve(o.inputs.size());
    outs.reserve(o.outputs.size());
    for (const auto& t : o.inputs) ins.push_back(tid.at(t));
    for (const auto& t : o.outputs) outs.push_back(tid.at(t));
    b.add_op(o.id, std::move(ins), std::move(outs), o.op, o.phase, o.cost, o.workspace, o.implementations, o.recomputable);
  }
  b.set_cost_unit(doc.cost_unit);
  problem p;
  try {
    p = b.build();
  } catch (const error& e) {
    throw error(e.code(), source + ": " + e.what());
  }
  if (opt.require_executable_given_order) {
    if (auto why = check_topological(p, given_order(p)))
      throw error(errc::invalid_graph, source + ": the given order (the order of \"ops\") does not run: " + *why);
  }
  return p;
}

inline graph::dataflow_graph to_dataflow_graph(const graph_document& doc) {
  graph::dataflow_graph g(doc.name);
  g.set_cost_unit(doc.cost_unit);
  std::unordered_map<std::string, graph::tensor_ref> tid;
  tid.reserve(doc.tensors.size());
  for (const auto& t : doc.tensors) {
    graph::tensor_attributes a;
    if (t.has_shape) a.shape = t.shape;
    a.dtype = t.dtype;
    tid.emplace(t.id, g.add_tensor(t.id, t.bytes, t.kind, std::move(a)));
  }
  for (const auto& t : doc.tensors)
    if (!t.inplace_of.empty()) g.set_inplace_of(tid.at(t.id), tid.at(t.inplace_of));
  for (const auto& o : doc.ops) {
    std::vector<graph::tensor_ref> ins, outs;
    for (const auto& t : o.inputs) ins.push_back(tid.at(t));
    for (const auto& t : o.outputs) outs.push_back(tid.at(t));
    g.add_op(o.id, std::move(ins), std::move(outs),
             graph::op_attributes{o.op, o.phase, o.cost, o.workspace, o.recomputable, o.implementations});
  }
  return g;
}

// A problem from JSON text. `source` names the input in messages and is the graph's name when the
// document has none.
inline problem parse_graph(std::string_view text, const std::string& source = "<string>", const read_options& opt = {}) {
  return to_problem(parse_graph_document(text, source), source, opt);
}

// A problem from a .json or .json.gz file.
inline problem read_graph(const std::string& path, const read_options& opt = {}) {
  return parse_graph(read_text_file(path), path, opt);
}

// The built-in graph class from JSON text / a file (validated exactly as the problem is).
inline graph::dataflow_graph parse_dataflow_graph(std::string_view text, const std::string& source = "<string>",
                                                  const read_options& opt = {}) {
  auto doc = parse_graph_document(text, source);
  (void)to_problem(doc, source, opt);  // every graph-level rule (cycles, in-place order, given order)
  return to_dataflow_graph(doc);
}

inline graph::dataflow_graph read_dataflow_graph(const std::string& path, const read_options& opt = {}) {
  return parse_dataflow_graph(read_text_file(path), path, opt);
}

// ---- writing --------------------------------------------------------------------------------------------
namespace detail {
inline json op_json(const std::string& id, const std::string& type, const std::vector<std::string>& ins,
                    const std::vector<std::string>& outs, op_phase ph, double cost, std::int64_t ws, bool recomputable,
                    std::span<const implementation> impls) {
  json o;
  o["id"] = id;
  o["op"] = type;
  o["inputs"] = ins;
  o["outputs"] = outs;
  o["phase"] = std::string(to_string(ph));
  if (cost != 0.0) o["cost"] = cost;
  if (ws != 0) o["workspace"] = ws;
  if (!recomputable) o["recomputable"] = false;
  if (!impls.empty()) {
    json a = json::array();
    for (const auto& im : impls) {
      json x;
      x["name"] = im.name;
      x["cost"] = im.cost;
      x["workspace"] = im.workspace;
      if (!im.inputs.empty()) x["inputs"] = im.inputs;
      a.push_back(std::move(x));
    }
    o["implementations"] = std::move(a);
  }
  return o;
}
inline json header(const std::string& name, const std::string& cost_unit) {
  json j;
  j["format"] = std::string(graph_format_name);
  j["version"] = graph_format_version;
  j["name"] = name;
  if (!cost_unit.empty()) j["meta"] = json{{"cost_unit", cost_unit}};
  return j;
}
}  // namespace detail

// A problem as a graph document (the given order is the op id order).
inline json write_graph(const problem& p) {
  json j = detail::header(p.name(), p.cost_unit());
  json ts = json::array();
  for (tensor_id t = 0; t < p.num_tensors(); ++t) {
    json x;
    x["id"] = p.tensor_name(t);
    x["bytes"] = p.bytes(t);
    x["kind"] = std::string(to_string(p.kind(t)));
    if (p.inplace_of(t) != no_id) x["inplace_of"] = p.tensor_name(p.inplace_of(t));
    ts.push_back(std::move(x));
  }
  json os = json::array();
  for (op_id o = 0; o < p.num_ops(); ++o) {
    std::vector<std::string> ins, outs;
    for (auto t : p.inputs(o)) ins.push_back(p.tensor_name(t));
    for (auto t : p.outputs(o)) outs.push_back(p.tensor_name(t));
    std::vector<implementation> impls(p.implementations(o).begin(), p.implementations(o).end());
    impls.insert(impls.end(), p.variants(o).begin(), p.variants(o).end());
    os.push_back(detail::op_json(p.op_name(o), p.op_type(o), ins, outs, p.phase(o), p.cost(o), p.workspace(o), p.recomputable(o),
                                 impls));
  }
  j["tensors"] = std::move(ts);
  j["ops"] = std::move(os);
  return j;
}

// A dataflow_graph as a graph document, with shapes and dtypes where the graph has them.
inline json write_graph(const graph::dataflow_graph& g) {
  json j = detail::header(g.name(), g.cost_unit());
  json ts = json::array();
  for (auto t : g.tensors()) {
    json x;
    x["id"] = *g.tensor_name(t);
    x["bytes"] = g.tensor_bytes(t);
    const auto& a = g.tensor_attrs(t);
    if (!a.shape.empty()) x["shape"] = a.shape;
    if (!a.dtype.empty()) x["dtype"] = a.dtype;
    x["kind"] = std::string(to_string(g.tensor_kind_of(t)));
    if (auto b = g.inplace_of(t)) x["inplace_of"] = *g.tensor_name(*b);
    ts.push_back(std::move(x));
  }
  json os = json::array();
  for (auto o : g.ops()) {
    std::vector<std::string> ins, outs;
    for (auto t : g.inputs(o)) ins.push_back(*g.tensor_name(t));
    for (auto t : g.outputs(o)) outs.push_back(*g.tensor_name(t));
    const auto impls = g.op_implementations(o);
    os.push_back(detail::op_json(*g.op_name(o), g.op_type(o), ins, outs, g.op_phase_of(o), g.op_cost(o), g.op_workspace(o),
                                 g.op_recomputable(o), impls));
  }
  j["tensors"] = std::move(ts);
  j["ops"] = std::move(os);
  return j;
}


}  // namespace memplan::io

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
