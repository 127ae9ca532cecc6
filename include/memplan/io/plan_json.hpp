#pragma once
// Memory plans and reports as JSON (docs/format.md, "plan file" and "report file"). Plans name ops
// and tensors by their graph ids, so a plan file is meaningful next to its graph file, and reading it
// back against the graph gives the same memory_plan. Needs memplan::json.
//
// Errors: a document that is not a plan (bad JSON, wrong format/version, missing or mistyped
// fields) -> errc::parse_error; a plan that names ops or tensors the graph does not have, or lacks
// an offset for a non-empty tensor -> errc::invalid_plan.
#include <cstdint>
#include <span>
#include <string>
#include <algorithm>
#include <limits>
#include <unordered_map>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/core/plan.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/core/timeline.hpp>
#include <memplan/core/variants.hpp>
#include <memplan/io/file.hpp>
#include <memplan/io/json_text.hpp>
#include <memplan/io/report.hpp>

// See io/json.hpp: a false -Wrestrict of g++ 12 in inlined std::string concatenation (GCC PR 105329).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

namespace memplan::io {

inline constexpr std::string_view plan_format_name = "memplan-plan";
inline constexpr std::int64_t plan_format_version = 2;

inline json stats_to_json(const plan_stats& st) {
  json s;
  s["peak"] = st.peak;
  s["lower_bound"] = st.lower_bound;
  if (!st.lower_bound_by.empty()) s["lower_bound_by"] = st.lower_bound_by;
  if (st.impl_lower_bound >= 0) s["impl_lower_bound"] = st.impl_lower_bound;
  s["gap"] = st.gap;
  s["arena"] = st.arena;
  s["arena_lower_bound"] = st.arena_lower_bound;
  s["fragmentation"] = st.fragmentation;
  s["given_peak"] = st.given_peak;
  s["compute_cost"] = st.compute_cost;
  s["recompute_cost"] = st.recompute_cost;
  s["transfer_bytes"] = st.transfer_bytes;
  if (st.makespan > 0) {
    s["makespan"] = st.makespan;
    s["compute_time"] = st.compute_time;
    s["makespan_lower_bound"] = st.makespan_lower_bound;
    s["host_peak"] = st.host_peak;
  }
  s["schedule_seconds"] = st.schedule_seconds;
  s["checkpoint_seconds"] = st.checkpoint_seconds;
  s["offload_seconds"] = st.offload_seconds;
  s["place_seconds"] = st.place_seconds;
  s["scheduler"] = st.scheduler;
  s["checkpointer"] = st.checkpointer;
  s["offloader"] = st.offloader;
  s["placer"] = st.placer;
  s["notes"] = st.notes;
  return s;
}

// Version 2 (docs/format.md, "plan file"): the offsets of the preexisting storages under "initial";
// every step that materializes storages carries their offsets under "offsets" (output tensor ->
// offset), its workspace's offset under "workspace" and its implementation's name under "impl".
// `variants`: those the plan's problem took (core/variants.hpp), written under "variants" so that the
// plan is read back against the graph file (read_plan_with_variants).
inline json plan_to_json(const problem& p, const memory_plan& mp, std::span<const variant_choice> variants = {}) {
  json j;
  j["format"] = std::string(plan_format_name);
  j["version"] = plan_format_version;
  j["graph"] = p.name();
  if (!variants.empty()) {
    json v = json::array();
    for (const auto& c : variants) v.push_back({{"op", c.op}, {"implementation", c.implementation}});
    j["variants"] = std::move(v);
  }
  j["arena"] = mp.arena;
  j["alignment"] = mp.alignment;
  if (mp.makespan > 0) j["makespan"] = mp.makespan;
  if (mp.timed)
    j["timing"] = {{"bandwidth", mp.timing.bandwidth},       {"device_flops", mp.timing.device_flops},
                   {"host_limit", mp.timing.host_limit},     {"host_peak", mp.host_peak},
                   {"compute_time", mp.compute_time},        {"makespan_lower_bound", mp.makespan_lower_bound}};
  const auto initial = initial_storages(p);
  if (mp.mats.size() < initial.size())
    throw error(errc::invalid_argument, "plan_to_json: the plan has " + std::to_string(mp.mats.size()) +
                                            " materializations for the " + std::to_string(initial.size()) +
                                            " preexisting storages of graph '" + p.name() + "'");
  // Names are unique, so entries are appended without the ordered map's linear key search
  // (O(n) instead of O(n^2) for a graph of n tensors).
  json init = json::object();
  auto& init_map = init.get_ref<json::object_t&>();
  for (std::size_t k = 0; k < initial.size(); ++k) init_map.emplace_back(p.tensor_name(p.storage_root(initial[k])), mp.mats[k].offset);
  j["initial"] = std::move(init);
  json steps = json::array();
  auto on_device = initially_on_device(p);
  for (const auto& s : mp.steps) {
    json x;
    x["kind"] = std::string(to_string(s.kind));
    if (runs_op(s.kind)) {
      if (s.id < 0 || s.id >= p.num_ops()) throw error(errc::invalid_argument, "plan_to_json: step names op id " + std::to_string(s.id));
      x["op"] = p.op_name(s.id);
      if (s.impl >= 0) {
        const auto impls = p.implementations(s.id);
        if (static_cast<std::size_t>(s.impl) >= impls.size())
          throw error(errc::invalid_argument, "plan_to_json: op '" + p.op_name(s.id) + "' has no implementation " + std::to_string(s.impl));
        x["impl"] = impls[static_cast<std::size_t>(s.impl)].name;
      }
    } else {
      if (s.id < 0 || s.id >= p.num_tensors())
        throw error(errc::invalid_argument, "plan_to_json: step names tensor id " + std::to_string(s.id));
      x["tensor"] = p.tensor_name(s.id);
    }
    json offs = json::object();
    std::int32_t next = s.mat;
    step_creations(p, s, on_device, [&](storage_id, tensor_id t) {
      if (next < 0 || static_cast<std::size_t>(next) >= mp.mats.size())
        throw error(errc::invalid_argument, "plan_to_json: a step that materializes '" + p.tensor_name(t) + "' has no materialization");
      offs[p.tensor_name(t)] = mp.mats[static_cast<std::size_t>(next++)].offset;
    });
    if (!offs.empty()) x[s.kind == step_kind::prefetch ? "offset" : "offsets"] = s.kind == step_kind::prefetch ? offs.front() : offs;
    if (step_workspace(p, s) > 0) x["workspace"] = s.workspace_offset;
    if (s.end > 0 || s.begin > 0) {
      x["begin"] = s.begin;
      x["end"] = s.end;
    }
    steps.push_back(std::move(x));
  }
  j["steps"] = std::move(steps);
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
  const json& object(const json& v, const std::string& what) const {
    if (!v.is_object()) throw parse(what + " is " + short_dump(v) + ", not an object");
    return v;
  }

  // offset per tensor, from an object {tensor id: offset}
  void read_offsets(const json& obj, const std::string& what, std::vector<std::int64_t>& off, std::vector<char>& given) const {
    for (const auto& [name, v] : object(obj, what).items()) {
      auto t = p.find_tensor(name);
      if (!t) throw invalid(what + " names tensor '" + name + "', which is not in graph '" + p.name() + "'");
      off[static_cast<std::size_t>(*t)] = integer(v, "offset of tensor '" + name + "' in " + what);
      given[static_cast<std::size_t>(*t)] = 1;
    }
  }
  // The offset given for storage s through any of its tensors, or an error naming the tensor.
  std::int64_t offset_of(storage_id s, const std::vector<std::int64_t>& off, const std::vector<char>& given,
                         const std::string& where) const {
    for (auto u : p.storage_tensors(s))
      if (given[static_cast<std::size_t>(u)]) return off[static_cast<std::size_t>(u)];
    throw invalid(where + " has no offset for tensor '" + p.tensor_name(p.storage_root(s)) + "' (" +
                  std::to_string(p.storage_bytes(s)) + " bytes)");
  }

  memory_plan read(const json& j) const {
    if (!j.is_object()) throw parse("the top level is not a JSON object (expected {\"format\": \"memplan-plan\", ...})");
    auto f = j.find("format");
    if (f == j.end()) throw parse("missing \"format\": \"memplan-plan\" (is this a memplan plan file?)");
    if (!f->is_string() || f->template get<std::string>() != plan_format_name)
      throw parse("\"format\" is " + short_dump(*f) + ", expected \"memplan-plan\"");
    const auto& v = field(j, "version", "the plan");
    if (!v.is_number_integer() || (v.template get<std::int64_t>() != 1 && v.template get<std::int64_t>() != 2))
      throw parse("\"version\" is " + short_dump(v) + ", this reader reads plan versions 1 and 2");
    const bool v1 = v.template get<std::int64_t>() == 1;

    memory_plan mp;
    mp.arena = integer(field(j, "arena", "the plan"), "\"arena\"");
    mp.alignment = integer(field(j, "alignment", "the plan"), "\"alignment\"");
    if (auto ms = j.find("makespan"); ms != j.end()) mp.makespan = number(*ms, "\"makespan\"");
    if (auto tm = j.find("timing"); tm != j.end()) {
      const auto& o = object(*tm, "\"timing\"");
      mp.timed = true;
      mp.timing.bandwidth = number(field(o, "bandwidth", "\"timing\""), "\"timing.bandwidth\"");
      mp.timing.device_flops = number(field(o, "device_flops", "\"timing\""), "\"timing.device_flops\"");
      mp.timing.host_limit = integer(field(o, "host_limit", "\"timing\""), "\"timing.host_limit\"");
      mp.host_peak = integer(field(o, "host_peak", "\"timing\""), "\"timing.host_peak\"");
      mp.compute_time = number(field(o, "compute_time", "\"timing\""), "\"timing.compute_time\"");
      mp.makespan_lower_bound = number(field(o, "makespan_lower_bound", "\"timing\""), "\"timing.makespan_lower_bound\"");
    }
    const auto nt = static_cast<std::size_t>(p.num_tensors());

    // Version 1: one offset per tensor and one workspace offset per op, for every step.
    std::vector<std::int64_t> v1_off(nt, 0), v1_ws(static_cast<std::size_t>(p.num_ops()), -1);
    std::vector<char> v1_given(nt, 0);
    if (v1) {
      read_offsets(field(j, "offsets", "the plan"), "\"offsets\"", v1_off, v1_given);
      if (auto ws = j.find("workspace_offsets"); ws != j.end()) {
        for (const auto& [name, off] : object(*ws, "\"workspace_offsets\"").items()) {
          auto o = p.find_op(name);
          if (!o) throw invalid("\"workspace_offsets\" names op '" + name + "', which is not in graph '" + p.name() + "'");
          v1_ws[static_cast<std::size_t>(*o)] = integer(off, "workspace offset of op '" + name + "'");
        }
      }
    }

    const auto& steps = field(j, "steps", "the plan");
    if (!steps.is_array()) throw parse("\"steps\" is not a list");
    mp.steps.reserve(steps.size());
    std::vector<const json*> step_offsets(steps.size(), nullptr);
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
        if (auto im = s.find("impl"); im != s.end()) {
          const auto iname = string(*im, at + ".impl");
          const auto impls = p.implementations(*o);
          for (std::size_t k = 0; k < impls.size() && st.impl < 0; ++k)
            if (impls[k].name == iname) st.impl = static_cast<std::int32_t>(k);
          if (st.impl < 0) throw invalid(at + " (" + kind + "): op '" + name + "' has no implementation '" + iname + "'");
        }
        if (v1) st.workspace_offset = v1_ws[static_cast<std::size_t>(*o)];
        else if (auto w = s.find("workspace"); w != s.end()) st.workspace_offset = integer(*w, at + ".workspace");
      } else if (kind == "offload" || kind == "prefetch" || kind == "free") {
        st.kind = kind == "offload" ? step_kind::offload : kind == "prefetch" ? step_kind::prefetch : step_kind::free;
        const auto name = string(field(s, "tensor", at), at + ".tensor");
        auto t = p.find_tensor(name);
        if (!t) throw invalid(at + " (" + kind + "): tensor '" + name + "' is not in graph '" + p.name() + "'");
        st.id = *t;
      } else {
        throw parse(at + ": unknown step kind '" + kind + "' (expected compute, recompute, offload, prefetch or free)");
      }
      if (auto b = s.find("begin"); b != s.end()) st.begin = number(*b, at + ".begin");
      if (auto e = s.find("end"); e != s.end()) st.end = number(*e, at + ".end");
      if (!v1) {
        if (auto o = s.find(st.kind == step_kind::prefetch ? "offset" : "offsets"); o != s.end()) step_offsets[i] = &*o;
      }
      mp.steps.push_back(st);
    }

    // Materializations: numbered canonically from the steps, then given their offsets.
    relink(p, mp, /*inherit_offsets=*/true);  // keeps the arena read above
    const auto initial = initial_storages(p);
    if (v1) {
      for (auto& m : mp.mats)
        m.offset = offset_of(m.storage, v1_off, v1_given, "\"offsets\"");
    } else {
      std::vector<std::int64_t> off(nt, 0);
      std::vector<char> given(nt, 0);
      read_offsets(field(j, "initial", "the plan"), "\"initial\"", off, given);
      for (std::size_t k = 0; k < initial.size(); ++k) mp.mats[k].offset = offset_of(initial[k], off, given, "\"initial\"");
      auto on_device = initially_on_device(p);
      for (std::size_t i = 0; i < mp.steps.size(); ++i) {
        const auto& st = mp.steps[i];
        const auto at = "steps[" + std::to_string(i) + "]";
        std::int32_t next = st.mat;
        step_creations(p, st, on_device, [&](storage_id, tensor_id t) {
          const auto name = p.tensor_name(t);
          if (!step_offsets[i])
            throw invalid(at + " (" + std::string(to_string(st.kind)) + ") materializes '" + name + "' but gives no offset");
          auto& m = mp.mats[static_cast<std::size_t>(next++)];
          if (st.kind == step_kind::prefetch) {
            m.offset = integer(*step_offsets[i], at + ".offset");
            return;
          }
          const auto& obj = object(*step_offsets[i], at + ".offsets");
          auto it = obj.find(name);
          if (it == obj.end()) throw invalid(at + ".offsets has no offset for tensor '" + name + "'");
          m.offset = integer(*it, at + ".offsets['" + name + "']");
        });
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
    opt_str("lower_bound_by", s.lower_bound_by);
    opt_int("impl_lower_bound", s.impl_lower_bound);
    opt_num("gap", s.gap);
    opt_int("arena", s.arena);
    opt_int("arena_lower_bound", s.arena_lower_bound);
    opt_num("fragmentation", s.fragmentation);
    opt_int("given_peak", s.given_peak);
    opt_num("compute_cost", s.compute_cost);
    opt_num("recompute_cost", s.recompute_cost);
    opt_int("transfer_bytes", s.transfer_bytes);
    opt_num("makespan", s.makespan);
    opt_num("compute_time", s.compute_time);
    opt_num("makespan_lower_bound", s.makespan_lower_bound);
    opt_int("host_peak", s.host_peak);
    opt_num("schedule_seconds", s.schedule_seconds);
    opt_num("checkpoint_seconds", s.checkpoint_seconds);
    opt_num("offload_seconds", s.offload_seconds);
    opt_num("place_seconds", s.place_seconds);
    opt_str("scheduler", s.scheduler);
    opt_str("checkpointer", s.checkpointer);
    opt_str("offloader", s.offloader);
    opt_str("placer", s.placer);
    if (auto it = st.find("notes"); it != st.end()) {
      if (!it->is_array()) throw parse("stats.notes is not a list of strings");
      for (const auto& n : *it) s.notes.push_back(string(n, "a note in stats.notes"));
    }
    mp.arena_lower_bound = s.arena_lower_bound;
    return mp;
  }
};

}  // namespace detail

// The plan a JSON document describes (version 1 or 2), for graph `p`. Not verified: call memplan::verify.
inline memory_plan plan_from_json(const problem& p, const json& j, const std::string& source = "<plan>") {
  return detail::plan_reader<json>{p, source}.read(j);
}
inline memory_plan plan_from_json(const problem& p, const nlohmann::json& j, const std::string& source = "<plan>") {
  return detail::plan_reader<nlohmann::json>{p, source}.read(j);
}

// Parsed with sorted keys: a plan's "initial" object has one key per preexisting storage, and an
// order-keeping map would make parsing quadratic.
inline memory_plan parse_plan(const problem& p, std::string_view text, const std::string& source = "<plan>") {
  return plan_from_json(p, detail::parse_json_text<nlohmann::json>(text, source), source);
}

inline memory_plan read_plan(const problem& p, const std::string& path) { return parse_plan(p, read_text_file(path), path); }

inline void write_plan(const std::string& path, const problem& p, const memory_plan& mp, std::span<const variant_choice> variants = {}) {
  save_json(path, plan_to_json(p, mp, variants), 1);
}

// A plan file read against the graph file it was made from: the graph with the plan's "variants"
// taken (apply_variants; the graph itself when it names none) and the plan for it. Not verified.
struct plan_with_variants {
  problem graph;
  memory_plan plan;
  std::vector<variant_choice> variants;
  std::string graph_name;  // the plan file's "graph" (the name of the graph it was made for; empty: none given)
};

inline plan_with_variants parse_plan_with_variants(const problem& g, std::string_view text, const std::string& source = "<plan>") {
  const auto j = detail::parse_json_text<nlohmann::json>(text, source);
  plan_with_variants r{g, {}, {}, {}};
  if (j.is_object()) {
    if (auto it = j.find("graph"); it != j.end() && it->is_string()) r.graph_name = it->get<std::string>();
    if (auto it = j.find("variants"); it != j.end()) {
      auto bad = [&](const std::string& what) { return error(errc::parse_error, source + ": " + what); };
      if (!it->is_array()) throw bad("\"variants\" is not a list of {\"op\", \"implementation\"}");
      for (std::size_t k = 0; k < it->size(); ++k) {
        const auto& x = (*it)[k];
        const auto at = "variants[" + std::to_string(k) + "]";
        if (!x.is_object() || !x.contains("op") || !x["op"].is_string() || !x.contains("implementation") || !x["implementation"].is_string())
          throw bad(at + " is not {\"op\": name, \"implementation\": name}");
        r.variants.push_back({x["op"].get<std::string>(), x["implementation"].get<std::string>()});
      }
      try {
        r.graph = apply_variants(g, r.variants);
      } catch (const error& e) {
        throw error(errc::invalid_plan, source + ": " + e.what());
      }
    }
  }
  r.plan = plan_from_json(r.graph, j, source);
  return r;
}

inline plan_with_variants read_plan_with_variants(const problem& g, const std::string& path) {
  return parse_plan_with_variants(g, read_text_file(path), path);
}

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
  if (!r.lower_bound_by.empty()) j["lower_bound_by"] = r.lower_bound_by;
  j["gap"] = r.gap;
  if (r.impl_lower_bound >= 0) {
    j["impl_lower_bound"] = r.impl_lower_bound;
    j["impl_gap"] = r.impl_gap;
  }
  j["plan_seconds"] = r.plan_seconds;
  j["schedule_seconds"] = r.schedule_seconds;
  j["place_seconds"] = r.place_seconds;
  j["scheduler"] = r.scheduler;
  j["placer"] = r.placer;
  j["alignment"] = r.alignment;
  j["capacity"] = r.capacity;
  j["budget"] = r.budget;
  j["steps"] = r.steps;
  j["compute_cost"] = r.compute_cost;
  j["recompute_cost"] = r.recompute_cost;
  j["overhead"] = r.overhead;
  j["recomputed_ops"] = r.recomputed_ops;
  if (r.overhead_lower_bound >= 0) j["overhead_lower_bound"] = r.overhead_lower_bound;
  if (r.overhead_lower_bound_any_order >= 0) j["overhead_lower_bound_any_order"] = r.overhead_lower_bound_any_order;
  if (r.has_implementations) {
    j["implementations_changed"] = r.implementations_changed;
    j["steps_cost"] = r.steps_cost;
    j["steps_overhead"] = r.steps_overhead;
  }
  j["checkpointer"] = r.checkpointer;
  j["cost_unit"] = r.cost_unit;
  j["checkpoint_seconds"] = r.checkpoint_seconds;
  j["transfer_bytes"] = r.transfer_bytes;
  if (r.timed) {
    j["makespan"] = r.makespan;
    j["makespan_lower_bound"] = r.makespan_lower_bound;
    j["compute_time"] = r.compute_time;
    j["host_peak"] = r.host_peak;
    j["offloader"] = r.offloader;
    j["offload_seconds"] = r.offload_seconds;
  }
  if (!r.variants.empty()) {
    json v = json::object();
    for (const auto& [name, k] : r.variants) v[name] = k;
    j["variants"] = std::move(v);
    j["ops_removed"] = r.ops_removed;
    if (r.variant_given_peak >= 0) j["variant_given_peak"] = r.variant_given_peak;
  }
  j["verified"] = r.verified;
  j["notes"] = r.notes;
  return j;
}

}  // namespace memplan::io

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
