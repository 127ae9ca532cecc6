#pragma once
// Graphviz DOT export of a problem: ops are boxes (filled by phase), tensors are edges from their
// producer to each consumer, labelled with name and size and coloured by kind; control tensors are
// dashed. Tensors without a producer (inputs, weights, optimizer state) or without a consumer get a
// small ellipse node of their own so that every tensor appears. std only.
#include <cstdint>
#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>

#include <memplan/base/error.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/io/report.hpp>

// See io/json.hpp: a false -Wrestrict of g++ 12 in inlined std::string concatenation (GCC PR 105329).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

namespace memplan::io {

struct dot_options {
  bool tensor_labels = true;   // edge labels "name\nsize" (false: size only)
  bool left_to_right = false;  // rankdir=LR instead of TB
};

namespace detail {

inline std::string dot_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size() + 2);
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') { o += "\\n"; continue; }
    o += c;
  }
  return o;
}

inline const char* phase_fill(op_phase ph) {
  switch (ph) {
    case op_phase::forward: return "#cfe2f3";
    case op_phase::backward: return "#f4cccc";
    case op_phase::update: return "#d9ead3";
    case op_phase::other: return "#eeeeee";
  }
  return "#eeeeee";
}

inline const char* kind_edge_colour(tensor_kind k) {
  switch (k) {
    case tensor_kind::input: return "#4e79a7";
    case tensor_kind::weight: return "#59a14f";
    case tensor_kind::activation: return "#f28e2b";
    case tensor_kind::gradient: return "#e15759";
    case tensor_kind::optimizer_state: return "#b07aa1";
    case tensor_kind::output: return "#76b7b2";
    case tensor_kind::control: return "#888888";
  }
  return "#888888";
}

}  // namespace detail

inline void write_dot(std::ostream& os, const problem& p, const dot_options& opt = {}) {
  using detail::dot_escape;
  os << "digraph \"" << dot_escape(p.name()) << "\" {\n";
  os << "  rankdir=" << (opt.left_to_right ? "LR" : "TB") << ";\n";
  os << "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n";
  os << "  edge [fontname=\"Helvetica\", fontsize=8];\n";
  for (op_id o = 0; o < p.num_ops(); ++o)
    os << "  o" << o << " [label=\"" << dot_escape(p.op_name(o)) << "\\n" << dot_escape(p.op_type(o)) << "\", fillcolor=\""
       << detail::phase_fill(p.phase(o)) << "\", tooltip=\"" << to_string(p.phase(o)) << "\"];\n";
  auto label = [&](tensor_id t) {
    std::string l = opt.tensor_labels ? p.tensor_name(t) + "\n" : std::string();
    l += human_bytes(p.bytes(t));
    if (p.inplace_of(t) != no_id) l += "\n(in place of " + p.tensor_name(p.inplace_of(t)) + ")";
    return dot_escape(l);
  };
  auto style = [&](tensor_id t) {
    std::string s = std::string("color=\"") + detail::kind_edge_colour(p.kind(t)) + "\", fontcolor=\"" +
                    detail::kind_edge_colour(p.kind(t)) + "\"";
    if (p.kind(t) == tensor_kind::control) s += ", style=dashed";
    return s;
  };
  for (tensor_id t = 0; t < p.num_tensors(); ++t) {
    const auto pr = p.producer(t);
    const auto cons = p.consumers(t);
    const bool own_node = pr == no_id || cons.empty();
    if (own_node)
      os << "  t" << t << " [shape=ellipse, style=filled, fillcolor=\"#ffffff\", color=\"" << detail::kind_edge_colour(p.kind(t))
         << "\", label=\"" << label(t) << "\", tooltip=\"" << to_string(p.kind(t)) << "\"];\n";
    if (pr != no_id && cons.empty())
      os << "  o" << pr << " -> t" << t << " [" << style(t) << "];\n";
    for (auto c : cons) {
      if (pr == no_id) os << "  t" << t << " -> o" << c << " [" << style(t) << "];\n";
      else os << "  o" << pr << " -> o" << c << " [label=\"" << label(t) << "\", " << style(t) << "];\n";
    }
  }
  os << "}\n";
}

inline std::string to_dot(const problem& p, const dot_options& opt = {}) {
  std::ostringstream s;
  write_dot(s, p, opt);
  return s.str();
}

inline void write_dot_file(const std::string& path, const problem& p, const dot_options& opt = {}) {
  std::ofstream out(path);
  if (!out) throw error(errc::io_error, "cannot write '" + path + "'");
  write_dot(out, p, opt);
  if (!out) throw error(errc::io_error, "error while writing '" + path + "'");
}

}  // namespace memplan::io

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
