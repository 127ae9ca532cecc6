#pragma once
// Memory plans and reports as JSON (docs/format.md, "plan file" and "report file"). Plans name ops
// and tensors by their graph ids, so a plan file is meaningful next to its graph file, and reading it
// back against the graph gives the same memory_plan. Needs memplan::json.
//
// Errors: a document that is not a plan (bad JSON, wrong format/version, missing or mistyped
// fields) -> errc::parse_error; a plan that names ops or tensors the graph does not have, or lacks
// an offset for a non-empty tensor -> errc::invalid_plan.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <memplan/core/error.hpp>
#include <memplan/core/plan.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/io/json.hpp>
#include <memplan/io/report.hpp>

// See io/json.hpp: a false -Wrestrict of g++ 12 in inlined std::string concatenation (GCC PR 105329).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

namespace memplan::io {

inline constexpr std::string_view plan_format_name = "memplan-plan";
inline constexpr std::int64_t plan_format_version = 1;

inline json stats_to_json(const plan_stats& st) {
  json s;
  s["peak"] = st.peak;
  s["lower_bound"] = st.lower_bound;
  s["gap"] = st.gap;
  s["arena"] = st.arena;
  s["fragmentation"] = st.fragmentation;
  s["given_peak"] = st.given_peak;
  s["recompute_cost"] = st.recompute_cost;
  s["transfer_bytes"] = st.transfer_bytes;
  s["schedule_seconds"] = st.schedule_seconds;
  s["place_seconds"] = st.place_seconds;
  s["scheduler"] = st.scheduler;
  s["placer"] = st.placer;
  s["notes"] = st.notes;
  return s;
}

inline json plan_to_json(const problem& p, const memory_plan& mp) {
  if (mp.offsets.size() != static_cast<std::size_t>(p.num_tensors()) ||
      mp.workspace_offsets.size() != static_cast<std::size_t>(p.num_ops()))
    throw error(errc::invalid_argument, "plan_to_json: the plan has " + std::to_string(mp.offsets.size()) + " offsets and " +
                                            std::to_string(mp.workspace_offsets.size()) + " workspace offsets for a graph of " +
                                            std::to_string(p.num_tensors()) + " tensors and " + std::to_string(p.num_ops()) + " ops");
  json j;
  j["format"] = std::string(plan_format_name);
  j["version"] = plan_format_version;
  j["graph"] = p.name();
  j["arena"] = mp.arena;
  j["alignment"] = mp.alignment;
  json steps = json::array();
  for (const auto& s : mp.steps) {
    json x;
    x["kind"] = std::string(to_string(s.kind));
    const bool on_op = s.kind == step_kind::compute || s.kind == step_kind::recompute;
    if (on_op) {
      if (s.id < 0 || s.id >= p.num_ops()) throw error(errc::invalid_argument, "plan_to_json: step names op id " + std::to_string(s.id));
      x["op"] = p.op_name(s.id);
    } else {
      if (s.id < 0 || s.id >= p.num_tensors())
        throw error(errc::invalid_argument, "plan_to_json: step names tensor id " + std::to_string(s.id));
      x["tensor"] = p.tensor_name(s.id);
    }
    steps.push_back(std::move(x));
  }
  j["steps"] = std::move(steps);
  // Names are unique, so entries are appended without the ordered map's linear key search
  // (O(n) instead of O(n^2) for a graph of n tensors).
  json offs = json::object();
  auto& offs_map = offs.get_ref<json::object_t&>();
  for (tensor_id t = 0; t < p.num_tensors(); ++t)
    if (p.storage_bytes(p.storage_of(t)) > 0) offs_map.emplace_back(p.tensor_name(t), mp.offsets[static_cast<std::size_t>(t)]);
  j["offsets"] = std::move(offs);
  json ws = json::object();
  auto& ws_map = ws.get_ref<json::object_t&>();
  for (op_id o = 0; o < p.num_ops(); ++o)
    if (p.workspace(o) > 0) ws_map.emplace_back(p.op_name(o), mp.workspace_offsets[static_cast<std::size_t>(o)]);
  j["workspace_offsets"] = std::move(ws);
  j["stats"] = stats_to_json(mp.stats);
  return j;
}

namespace detail {

template <class J>
struct plan_reader {
  using json = J;
  const problem& p;
  std::string source;

  [[nodiscard]] error parse(const std::string& what) const { return error(errc::parse_error, source + ": " + what); }
  [[nodiscard]] error invalid(const std::string& what) const { return error(errc::invalid_plan, source + ": " + what); }

  const json& field(const json& obj, const char* key, const std::string& where) const {
    auto it = obj.find(key);
    if (it == obj.end()) throw parse(where + " has no \"" + key + "\"");
    return *it;
  }
  std::int64_t integer(const json& v, const std::string& what) const {
    if (v.is_number_integer()) return v.template get<std::int64_t>();
    if (v.is_number_unsigned()) {
      const auto u = v.template get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        throw parse(what + " " + std::to_string(u) + " overflows a signed 64-bit integer");
      return static_cast<std::int64_t>(u);
    }
    throw parse(what + " is " + short_dump(v) + ", not an integer");
  }
  double number(const json& v, const std::string& what) const {
    if (!v.is_number()) throw parse(what + " is " + short_dump(v) + ", not a number");
    return v.template get<double>();
  }
  std::string string(const json& v, const std::string& what) const {
    if (!v.is_string()) throw parse(what + " is " + short_dump(v) + ", not a string");
    return v.template get<std::string>();
  }

  memory_plan read(const json& j) const {
    if (!j.is_object()) throw parse("the top level is not a JSON object (expected {\"format\": \"memplan-plan\", ...})");
    auto f = j.find("format");
    if (f == j.end()) throw parse("missing \"format\": \"memplan-plan\" (is this a memplan plan file?)");
    if (!f->is_string() || f->template get<std::string>() != plan_format_name)
      throw parse("\"format\" is " + short_dump(*f) + ", expected \"memplan-plan\"");
    const auto& v = field(j, "version", "the plan");
    if (!v.is_number_integer() || v.template get<std::int64_t>() != plan_format_version)
      throw parse("\"version\" is " + short_dump(v) + ", this reader reads plan version 1 only");

    memory_plan mp;
    mp.arena = integer(field(j, "arena", "the plan"), "\"arena\"");
    mp.alignment = integer(field(j, "alignment", "the plan"), "\"alignment\"");

    const auto& steps = field(j, "steps", "the plan");
    if (!steps.is_array()) throw parse("\"steps\" is not a list");
    mp.steps.reserve(steps.size());
    for (std::size_t i = 0; i < steps.size(); ++i) {
      const auto& s = steps[i];
      const auto at = "steps[" + std::to_string(i) + "]";
      if (!s.is_object()) throw parse(at + " is not an object");
      const auto kind = string(field(s, "kind", at), at + ".kind");
      step st;
      if (kind == "compute" || kind == "recompute") {
        st.kind = kind == "compute" ? step_kind::compute : step_kind::recompute;
        const auto name = string(field(s, "op", at), at + ".op");
        auto o = p.find_op(name);
        if (!o) throw invalid(at + " (" + kind + "): op '" + name + "' is not in graph '" + p.name() + "'");
        st.id = *o;
      } else if (kind == "offload" || kind == "prefetch" || kind == "free") {
        st.kind = kind == "offload" ? step_kind::offload : kind == "prefetch" ? step_kind::prefetch : step_kind::free;
        const auto name = string(field(s, "tensor", at), at + ".tensor");
        auto t = p.find_tensor(name);
        if (!t) throw invalid(at + " (" + kind + "): tensor '" + name + "' is not in graph '" + p.name() + "'");
        st.id = *t;
      } else {
        throw parse(at + ": unknown step kind '" + kind + "' (expected compute, recompute, offload, prefetch or free)");
      }
      mp.steps.push_back(st);
    }

    mp.offsets.assign(static_cast<std::size_t>(p.num_tensors()), 0);
    std::vector<char> given(static_cast<std::size_t>(p.num_tensors()), 0);
    const auto& offs = field(j, "offsets", "the plan");
    if (!offs.is_object()) throw parse("\"offsets\" is not an object {tensor id: offset}");
    for (const auto& [name, off] : offs.items()) {
      auto t = p.find_tensor(name);
      if (!t) throw invalid("\"offsets\" names tensor '" + name + "', which is not in graph '" + p.name() + "'");
      mp.offsets[static_cast<std::size_t>(*t)] = integer(off, "offset of tensor '" + name + "'");
      given[static_cast<std::size_t>(*t)] = 1;
    }
    for (tensor_id t = 0; t < p.num_tensors(); ++t) {
      if (given[static_cast<std::size_t>(t)] || p.storage_bytes(p.storage_of(t)) == 0) continue;  // empty ones occupy nothing
      // A tensor of a storage may be given through another tensor of the same storage.
      bool found = false;
      for (auto u : p.storage_tensors(p.storage_of(t)))
        if (given[static_cast<std::size_t>(u)]) {
          mp.offsets[static_cast<std::size_t>(t)] = mp.offsets[static_cast<std::size_t>(u)];
          found = true;
          break;
        }
      if (!found)
        throw invalid("\"offsets\" has no offset for tensor '" + p.tensor_name(t) + "' (" +
                      std::to_string(p.storage_bytes(p.storage_of(t))) + " bytes)");
    }

    mp.workspace_offsets.assign(static_cast<std::size_t>(p.num_ops()), -1);
    if (auto ws = j.find("workspace_offsets"); ws != j.end()) {
      if (!ws->is_object()) throw parse("\"workspace_offsets\" is not an object {op id: offset}");
      for (const auto& [name, off] : ws->items()) {
        auto o = p.find_op(name);
        if (!o) throw invalid("\"workspace_offsets\" names op '" + name + "', which is not in graph '" + p.name() + "'");
        mp.workspace_offsets[static_cast<std::size_t>(*o)] = integer(off, "workspace offset of op '" + name + "'");
      }
    }

    const auto& st = field(j, "stats", "the plan");
    if (!st.is_object()) throw parse("\"stats\" is not an object");
    auto& s = mp.stats;
    s.peak = integer(field(st, "peak", "\"stats\""), "stats.peak");
    s.arena = mp.arena;
    auto opt_int = [&](const char* k, std::int64_t& out) { if (auto it = st.find(k); it != st.end()) out = integer(*it, std::string("stats.") + k); };
    auto opt_num = [&](const char* k, double& out) { if (auto it = st.find(k); it != st.end()) out = number(*it, std::string("stats.") + k); };
    auto opt_str = [&](const char* k, std::string& out) { if (auto it = st.find(k); it != st.end()) out = string(*it, std::string("stats.") + k); };
    opt_int("lower_bound", s.lower_bound);
    opt_num("gap", s.gap);
    opt_int("arena", s.arena);
    opt_num("fragmentation", s.fragmentation);
    opt_int("given_peak", s.given_peak);
    opt_num("recompute_cost", s.recompute_cost);
    opt_int("transfer_bytes", s.transfer_bytes);
    opt_num("schedule_seconds", s.schedule_seconds);
    opt_num("place_seconds", s.place_seconds);
    opt_str("scheduler", s.scheduler);
    opt_str("placer", s.placer);
    if (auto it = st.find("notes"); it != st.end()) {
      if (!it->is_array()) throw parse("stats.notes is not a list of strings");
      for (const auto& n : *it) s.notes.push_back(string(n, "a note in stats.notes"));
    }
    return mp;
  }
};

}  // namespace detail

// The plan a JSON document describes, for graph `p`. Not verified: call memplan::verify.
inline memory_plan plan_from_json(const problem& p, const json& j, const std::string& source = "<plan>") {
  return detail::plan_reader<json>{p, source}.read(j);
}
inline memory_plan plan_from_json(const problem& p, const nlohmann::json& j, const std::string& source = "<plan>") {
  return detail::plan_reader<nlohmann::json>{p, source}.read(j);
}

// Parsed with sorted keys: a plan's "offsets" object has one key per tensor, and an order-keeping
// map would make parsing quadratic.
inline memory_plan parse_plan(const problem& p, std::string_view text, const std::string& source = "<plan>") {
  return plan_from_json(p, detail::parse_json_text<nlohmann::json>(text, source), source);
}

inline memory_plan read_plan(const problem& p, const std::string& path) { return parse_plan(p, read_text_file(path), path); }

inline void write_plan(const std::string& path, const problem& p, const memory_plan& mp) { save_json(path, plan_to_json(p, mp), 1); }

// ---- report ------------------------------------------------------------------------------------------------
inline json report_to_json(const report& r) {
  json j;
  j["graph"] = r.graph;
  j["ops"] = r.ops;
  j["tensors"] = r.tensors;
  j["total_bytes"] = r.total_bytes;
  j["resident_bytes"] = r.resident_bytes;
  j["given_peak"] = r.given_peak;
  j["planned_peak"] = r.planned_peak;
  j["reduction"] = r.reduction;
  j["arena_bytes"] = r.arena_bytes;
  j["fragmentation"] = r.fragmentation;
  j["lower_bound"] = r.lower_bound;
  j["gap"] = r.gap;
  j["plan_seconds"] = r.plan_seconds;
  j["schedule_seconds"] = r.schedule_seconds;
  j["place_seconds"] = r.place_seconds;
  j["scheduler"] = r.scheduler;
  j["placer"] = r.placer;
  j["alignment"] = r.alignment;
  j["capacity"] = r.capacity;
  j["steps"] = r.steps;
  j["recompute_cost"] = r.recompute_cost;
  j["transfer_bytes"] = r.transfer_bytes;
  j["verified"] = r.verified;
  j["notes"] = r.notes;
  return j;
}

}  // namespace memplan::io

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
