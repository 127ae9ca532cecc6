#pragma once
// SVG heap map of a memory plan: time (op steps) on x, arena addresses on y, one rectangle per live
// interval of a storage (and per op workspace), coloured by tensor kind, with a legend, axes in
// B/KiB/MiB/GiB, the graph's name in the title, the live-bytes curve, and lines at the plan's peak
// and arena size. Rectangles carry no text but a <title> tooltip, so 10k tensors stay readable.
// std only.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <memplan/base/error.hpp>
#include <memplan/core/plan.hpp>
#include <memplan/core/problem.hpp>
#include <memplan/io/report.hpp>

// See io/json.hpp: a false -Wrestrict of g++ 12 in inlined std::string concatenation (GCC PR 105329).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

namespace memplan::io {

// One rectangle: bytes [offset, offset + bytes) are held during op steps [begin, end).
struct heap_block {
  std::int64_t begin = 0, end = 0;
  std::int64_t offset = 0, bytes = 0;
  tensor_id tensor = no_id;    // the storage's root tensor, no_id for a workspace
  op_id workspace_of = no_id;  // the op whose workspace it is, no_id for a storage
};

// The live intervals of a plan: one per materialization, [first, last + 1) in op steps (compute and
// recompute), and one per op step's workspace. Blocks come in order of their start, then of their
// storage.
inline std::vector<heap_block> heap_blocks(const problem& p, const memory_plan& mp) {
  std::vector<heap_block> out;
  for (const auto& m : mp.mats) {
    if (m.storage < 0 || m.storage >= p.num_storages())
      throw error(errc::invalid_argument, "heap map: the plan does not belong to graph '" + p.name() + "' (storage " +
                                              std::to_string(m.storage) + ")");
    const auto bytes = p.storage_bytes(m.storage);
    if (bytes > 0) out.push_back({m.first, std::int64_t{m.last} + 1, m.offset, bytes, p.storage_root(m.storage), no_id});
  }
  std::int64_t k = 0;
  for (const auto& st : mp.steps) {
    if (!runs_op(st.kind)) continue;
    if (st.id < 0 || st.id >= p.num_ops()) throw error(errc::invalid_argument, "heap map: step names op id " + std::to_string(st.id));
    if (const auto ws = step_workspace(p, st); ws > 0) out.push_back({k, k + 1, st.workspace_offset, ws, no_id, st.id});
    ++k;
  }
  std::stable_sort(out.begin(), out.end(), [](const heap_block& a, const heap_block& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.tensor < b.tensor;
  });
  return out;
}

struct svg_options {
  int width = 1280;           // pixels
  int height = 720;
  bool tooltips = true;       // a <title> per rectangle (tensor name, bytes, offset, steps)
  bool live_curve = true;     // the live-bytes step curve
  std::string title;          // empty: "<graph name>: heap map"
};

namespace detail {

inline std::string xml_escape(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default:
        // Control characters are not allowed in XML 1.0.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') o += ' ';
        else o += c;
    }
  }
  return o;
}

inline std::string num(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", x);
  return b;
}

// Colours (Tableau 10) per tensor kind; workspaces get their own.
inline const char* kind_colour(tensor_kind k) {
  switch (k) {
    case tensor_kind::input: return "#4e79a7";
    case tensor_kind::weight: return "#59a14f";
    case tensor_kind::activation: return "#f28e2b";
    case tensor_kind::gradient: return "#e15759";
    case tensor_kind::optimizer_state: return "#b07aa1";
    case tensor_kind::output: return "#76b7b2";
    case tensor_kind::control: return "#bab0ac";
  }
  return "#bab0ac";
}
inline constexpr const char* workspace_colour = "#9c755f";

// A 1-2-5 tick step covering `range` with about `want` ticks.
inline double nice_step(double range, int want) {
  if (range <= 0) return 1;
  const double raw = range / want;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

}  // namespace detail

// The heap map as an SVG document.
inline std::string heap_svg(const problem& p, const memory_plan& mp, const svg_options& opt = {}) {
  using detail::num;
  const auto blocks = heap_blocks(p, mp);
  std::int64_t steps = 0;
  for (const auto& s : mp.steps) steps += (s.kind == step_kind::compute || s.kind == step_kind::recompute) ? 1 : 0;
  for (const auto& b : blocks) steps = std::max(steps, b.end);
  steps = std::max<std::int64_t>(steps, 1);
  std::int64_t top_bytes = std::max<std::int64_t>({mp.arena, mp.stats.peak, 1});
  for (const auto& b : blocks) top_bytes = std::max(top_bytes, b.offset + b.bytes);

  const double W = std::max(opt.width, 400), H = std::max(opt.height, 300);
  const double left = 90, right = 190, top = 64, bottom = 56;
  const double pw = W - left - right, ph = H - top - bottom;
  const double ymax = static_cast<double>(top_bytes) * 1.04;
  const double sx = pw / static_cast<double>(steps), sy = ph / ymax;
  auto X = [&](double step) { return left + step * sx; };
  auto Y = [&](double bytes) { return top + ph - bytes * sy; };

  // Unit of the address axis.
  const char* unit = "B";
  double unit_bytes = 1;
  for (auto [u, b] : {std::pair{"KiB", 1024.0}, std::pair{"MiB", 1048576.0}, std::pair{"GiB", 1073741824.0}})
    if (static_cast<double>(top_bytes) >= 2 * b) { unit = u; unit_bytes = b; }

  std::string s;
  s.reserve(256 + blocks.size() * 160);
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(W) + "\" height=\"" + num(H) + "\" viewBox=\"0 0 " + num(W) + " " +
       num(H) + "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
  s += "<rect x=\"0\" y=\"0\" width=\"" + num(W) + "\" height=\"" + num(H) + "\" fill=\"#ffffff\"/>\n";
  const auto title = opt.title.empty() ? p.name() + ": heap map" : opt.title;
  s += "<text x=\"" + num(left) + "\" y=\"24\" font-size=\"16\" font-weight=\"bold\">" + detail::xml_escape(title) + "</text>\n";
  std::string sub = std::to_string(p.num_ops()) + " ops, " + std::to_string(p.num_tensors()) + " tensors; peak " +
                    human_bytes(mp.stats.peak) + ", arena " + human_bytes(mp.arena);
  if (mp.stats.given_peak > 0) sub += ", given order " + human_bytes(mp.stats.given_peak);
  if (!mp.stats.scheduler.empty() || !mp.stats.placer.empty())
    sub += "; scheduler " + mp.stats.scheduler + ", placer " + mp.stats.placer;
  s += "<text x=\"" + num(left) + "\" y=\"44\" fill=\"#444444\">" + detail::xml_escape(sub) + "</text>\n";

  // Plot frame and grid.
  s += "<g stroke=\"#dddddd\" stroke-width=\"1\">\n";
  const double ystep = detail::nice_step(ymax / unit_bytes, 8);
  std::string ylabels;
  for (double v = 0; v * unit_bytes <= ymax; v += ystep) {
    const double y = Y(v * unit_bytes);
    s += "<line x1=\"" + num(left) + "\" y1=\"" + num(y) + "\" x2=\"" + num(left + pw) + "\" y2=\"" + num(y) + "\"/>\n";
    char lb[48];
    std::snprintf(lb, sizeof lb, ystep < 1 ? "%.1f" : "%.0f", v);
    ylabels += "<text x=\"" + num(left - 6) + "\" y=\"" + num(y + 4) + "\" text-anchor=\"end\">" + lb + "</text>\n";
  }
  const double xstep = std::max(1.0, detail::nice_step(static_cast<double>(steps), 10));
  std::string xlabels;
  for (double v = 0; v <= static_cast<double>(steps) + 1e-9; v += xstep) {
    const double x = X(v);
    s += "<line x1=\"" + num(x) + "\" y1=\"" + num(top) + "\" x2=\"" + num(x) + "\" y2=\"" + num(top + ph) + "\"/>\n";
    xlabels += "<text x=\"" + num(x) + "\" y=\"" + num(top + ph + 16) + "\" text-anchor=\"middle\">" +
               std::to_string(static_cast<long long>(v)) + "</text>\n";
  }
  s += "</g>\n";
  s += "<g fill=\"#333333\">\n" + ylabels + xlabels + "</g>\n";
  s += "<text x=\"" + num(left + pw / 2) + "\" y=\"" + num(H - 14) + "\" text-anchor=\"middle\">op step (" +
       std::to_string(steps) + " steps)</text>\n";
  s += "<text transform=\"translate(22," + num(top + ph / 2) + ") rotate(-90)\" text-anchor=\"middle\">address (" + unit +
       ")</text>\n";

  // The blocks: no stroke (thin rectangles stay visible as fills), tooltips only.
  bool kind_used[7] = {};
  bool ws_used = false;
  s += "<g shape-rendering=\"crispEdges\">\n";
  for (const auto& b : blocks) {
    const char* colour = detail::workspace_colour;
    std::string what;
    if (b.tensor != no_id) {
      const auto k = p.kind(b.tensor);
      colour = detail::kind_colour(k);
      kind_used[static_cast<int>(k)] = true;
      if (opt.tooltips) {
        what = p.tensor_name(b.tensor);
        for (auto t : p.storage_tensors(p.storage_of(b.tensor)))
          if (t != b.tensor) what += " = " + p.tensor_name(t);
        what += " (" + std::string(to_string(k)) + ")";
      }
    } else {
      ws_used = true;
      if (opt.tooltips) what = "workspace of " + p.op_name(b.workspace_of);
    }
    const double x = X(static_cast<double>(b.begin)), y = Y(static_cast<double>(b.offset + b.bytes));
    const double w = std::max(0.2, static_cast<double>(b.end - b.begin) * sx);
    const double h = std::max(0.0, static_cast<double>(b.bytes) * sy);
    s += "<rect class=\"b\" x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" + num(h) + "\" fill=\"" +
         colour + "\"";
    if (opt.tooltips) {
      s += "><title>" + detail::xml_escape(what) + ": " + human_bytes(b.bytes) + " at offset " + std::to_string(b.offset) +
           ", steps " + std::to_string(b.begin) + "-" + std::to_string(b.end - 1) + "</title></rect>\n";
    } else {
      s += "/>\n";
    }
  }
  s += "</g>\n";

  // Live bytes per op step (a step curve).
  if (opt.live_curve && !blocks.empty()) {
    std::vector<std::int64_t> diff(static_cast<std::size_t>(steps) + 1, 0);
    for (const auto& b : blocks) {
      diff[static_cast<std::size_t>(b.begin)] += b.bytes;
      diff[static_cast<std::size_t>(std::min(b.end, steps))] -= b.bytes;
    }
    std::string pts;
    std::int64_t cur = 0;
    for (std::int64_t i = 0; i < steps; ++i) {
      cur += diff[static_cast<std::size_t>(i)];
      const auto y = num(Y(static_cast<double>(cur)));
      pts += num(X(static_cast<double>(i))) + "," + y + " " + num(X(static_cast<double>(i + 1))) + "," + y + " ";
    }
    s += "<polyline fill=\"none\" stroke=\"#222222\" stroke-width=\"1\" stroke-opacity=\"0.7\" points=\"" + pts + "\"/>\n";
  }

  // Peak and arena lines.
  auto hline = [&](std::int64_t bytes, const char* colour, const char* dash, const std::string& label, double dy) {
    const double y = Y(static_cast<double>(bytes));
    s += "<line x1=\"" + num(left) + "\" y1=\"" + num(y) + "\" x2=\"" + num(left + pw) + "\" y2=\"" + num(y) + "\" stroke=\"" + colour +
         "\" stroke-width=\"1.5\"" + (dash[0] ? std::string(" stroke-dasharray=\"") + dash + "\"" : std::string()) + "/>\n";
    // Inside the plot, right-aligned, with a white halo so that it reads over the blocks.
    s += "<text x=\"" + num(left + pw - 4) + "\" y=\"" + num(y + dy) + "\" text-anchor=\"end\" fill=\"" + colour +
         "\" stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\">" + detail::xml_escape(label) + "</text>\n";
  };
  // The arena label sits above its line, the peak label below its own.
  hline(mp.arena, "#000000", "", "arena " + human_bytes(mp.arena), -4);
  hline(mp.stats.peak, "#d62728", "6,3", "peak " + human_bytes(mp.stats.peak), 13);
  // The lower bound the report certifies against (any order, or any plan when recomputing): the gap
  // between it and the peak line is what planning could still win at most.
  if (mp.stats.lower_bound > 0 && mp.stats.lower_bound < mp.stats.peak)
    hline(mp.stats.lower_bound, "#2ca02c", "2,3", "lower bound " + human_bytes(mp.stats.lower_bound), 13);
  // The peak step: a vertical marker, and what is live there listed beside the plot (largest first).
  std::vector<std::pair<std::int64_t, std::string>> at_peak;
  std::string peak_op;
  if (mp.peak_tick >= 0 && mp.peak_tick < steps) {
    const double x = X(static_cast<double>(mp.peak_tick) + 0.5);
    s += "<line x1=\"" + num(x) + "\" y1=\"" + num(top) + "\" x2=\"" + num(x) + "\" y2=\"" + num(top + ph) +
         "\" stroke=\"#d62728\" stroke-width=\"1\" stroke-dasharray=\"2,2\"/>\n";
    std::int32_t tick = 0;
    for (const auto& st : mp.steps) {
      if (!runs_op(st.kind)) continue;
      if (tick++ == mp.peak_tick) {
        peak_op = p.op_name(st.id);
        break;
      }
    }
    for (const auto& b : blocks)
      if (b.begin <= mp.peak_tick && mp.peak_tick < b.end)
        at_peak.emplace_back(b.bytes, b.tensor != no_id ? p.tensor_name(b.tensor) : "workspace of " + p.op_name(b.workspace_of));
    std::stable_sort(at_peak.begin(), at_peak.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  }
  s += "<rect x=\"" + num(left) + "\" y=\"" + num(top) + "\" width=\"" + num(pw) + "\" height=\"" + num(ph) +
       "\" fill=\"none\" stroke=\"#888888\"/>\n";

  // Legend.
  double ly = top + 40;
  s += "<g>\n<text x=\"" + num(left + pw + 12) + "\" y=\"" + num(ly - 8) + "\" font-weight=\"bold\">tensor kind</text>\n";
  auto entry = [&](const char* colour, std::string_view label) {
    s += "<rect class=\"legend\" x=\"" + num(left + pw + 12) + "\" y=\"" + num(ly) + "\" width=\"12\" height=\"12\" fill=\"" + colour + "\"/>\n";
    s += "<text x=\"" + num(left + pw + 30) + "\" y=\"" + num(ly + 10) + "\">" + std::string(label) + "</text>\n";
    ly += 18;
  };
  for (auto k : {tensor_kind::input, tensor_kind::weight, tensor_kind::activation, tensor_kind::gradient,
                 tensor_kind::optimizer_state, tensor_kind::output, tensor_kind::control})
    if (kind_used[static_cast<int>(k)]) entry(detail::kind_colour(k), to_string(k));
  if (ws_used) entry(detail::workspace_colour, "workspace");
  if (!at_peak.empty()) {
    ly += 14;
    s += "<text x=\"" + num(left + pw + 12) + "\" y=\"" + num(ly) + "\" font-weight=\"bold\" fill=\"#d62728\">at the peak (step " +
         std::to_string(mp.peak_tick) + ")</text>\n";
    ly += 16;
    s += "<text x=\"" + num(left + pw + 12) + "\" y=\"" + num(ly) + "\" fill=\"#444444\">" + detail::xml_escape(peak_op.size() > 24 ? peak_op.substr(0, 23) + "~" : peak_op) +
         " runs</text>\n";
    const std::size_t shown = std::min<std::size_t>(at_peak.size(), 8);
    for (std::size_t i = 0; i < shown; ++i) {
      ly += 15;
      auto name = at_peak[i].second;
      if (name.size() > 16) name = name.substr(0, 15) + "~";
      s += "<text x=\"" + num(left + pw + 12) + "\" y=\"" + num(ly) + "\" font-size=\"11\">" + human_bytes(at_peak[i].first) + " " +
           detail::xml_escape(name) + "</text>\n";
    }
    if (at_peak.size() > shown) {
      ly += 15;
      s += "<text x=\"" + num(left + pw + 12) + "\" y=\"" + num(ly) + "\" font-size=\"11\" fill=\"#444444\">+" +
           std::to_string(at_peak.size() - shown) + " more live</text>\n";
    }
  }
  s += "</g>\n</svg>\n";
  return s;
}

inline void write_heap_svg(const std::string& path, const problem& p, const memory_plan& mp, const svg_options& opt = {}) {
  const auto text = heap_svg(p, mp, opt);
  std::ofstream out(path, std::ios::binary);
  if (!out) throw error(errc::io_error, "cannot write '" + path + "'");
  out << text;
  if (!out) throw error(errc::io_error, "error while writing '" + path + "'");
}

}  // namespace memplan::io

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
