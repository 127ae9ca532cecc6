#pragma once
// SVG of a timed plan (offloaders): seconds on x, two lanes -- the compute engine (op steps, recompute
// steps in another colour) and the copy engine (offloads and prefetches) -- each box labelled with
// its op or tensor when it is wide enough, with a <title> tooltip always; under them the device
// bytes held per op step (the tick profile that verify bounds). std only.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include <memplan/base/error.hpp>
#include <memplan/core/plan.hpp>
#include <memplan/core/problem.hpp>

namespace memplan::io {

inline std::string timeline_svg(const problem& p, const memory_plan& mp, double width = 1000.0) {
  if (!mp.timed) throw error(errc::invalid_argument, "timeline_svg: the plan is not timed (no offloader ran)");
  const double left = 90, lane = 34, top = 40, chart = 90, gap = 12;
  const double T = mp.makespan > 0 ? mp.makespan : 1.0;
  const double H = top + 2 * (lane + gap) + chart + 40;
  auto x = [&](double t) { return left + (width - left - 20) * t / T; };
  auto esc = [](std::string s) {
    std::string o;
    for (char c : s) o += c == '<' ? std::string("&lt;") : c == '>' ? std::string("&gt;") : c == '&' ? std::string("&amp;") : std::string(1, c);
    return o;
  };
  char buf[512];
  std::string s;
  std::snprintf(buf, sizeof buf, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" font-size=\"11\">\n",
                width, H);
  s += buf;
  std::snprintf(buf, sizeof buf, "<text x=\"%.1f\" y=\"18\" font-size=\"13\">%s: makespan %.4g s, compute alone %.4g s, lower bound %.4g s</text>\n",
                left, esc(p.name()).c_str(), mp.makespan, mp.compute_time, mp.makespan_lower_bound);
  s += buf;
  const double y_compute = top, y_copy = top + lane + gap;
  std::snprintf(buf, sizeof buf, "<text x=\"8\" y=\"%.1f\">compute</text>\n<text x=\"8\" y=\"%.1f\">copy</text>\n", y_compute + lane / 2 + 4,
                y_copy + lane / 2 + 4);
  s += buf;
  for (const auto& st : mp.steps) {
    if (st.kind == step_kind::free || st.end <= st.begin) continue;
    const bool op = runs_op(st.kind);
    const double y = op ? y_compute : y_copy;
    const char* fill = st.kind == step_kind::compute ? "#9ecae1" : st.kind == step_kind::recompute ? "#fdae6b" : st.kind == step_kind::offload ? "#a1d99b" : "#bcbddc";
    const std::string name = op ? p.op_name(st.id) : std::string(to_string(st.kind)) + " " + p.tensor_name(st.id);
    std::snprintf(buf, sizeof buf, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" stroke=\"#333\" stroke-width=\"0.5\"><title>%s [%.6g, %.6g] s</title></rect>\n",
                  x(st.begin), y, std::max(0.5, x(st.end) - x(st.begin)), lane, fill, esc(name).c_str(), st.begin, st.end);
    s += buf;
    const auto label = op ? p.op_name(st.id) : (st.kind == step_kind::offload ? "\u2193" : "\u2191") + p.tensor_name(st.id);
    if (x(st.end) - x(st.begin) > 7.0 * static_cast<double>(label.size())) {
      std::snprintf(buf, sizeof buf, "<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", (x(st.begin) + x(st.end)) / 2, y + lane / 2 + 4,
                    esc(label).c_str());
      s += buf;
    }
  }
  // Device bytes per op step, drawn over the op's time span.
  const double y0 = y_copy + lane + gap + chart;
  std::int64_t peak = std::max<std::int64_t>(1, mp.arena > 0 ? mp.arena : mp.peak);
  std::size_t tick = 0;
  std::string path;
  for (const auto& st : mp.steps) {
    if (!runs_op(st.kind) || tick >= mp.live.size()) continue;
    const double h = chart * static_cast<double>(mp.live[tick++]) / static_cast<double>(peak);
    std::snprintf(buf, sizeof buf, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"#fcbba1\"/>\n", x(st.begin), y0 - h,
                  std::max(0.5, x(st.end) - x(st.begin)), h);
    s += buf;
  }
  std::snprintf(buf, sizeof buf,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c00\" stroke-dasharray=\"4 2\"/>\n"
                "<text x=\"8\" y=\"%.1f\">device bytes</text><text x=\"%.1f\" y=\"%.1f\" fill=\"#c00\">arena %lld B</text>\n"
                "<text x=\"%.1f\" y=\"%.1f\">0 s</text><text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.4g s</text>\n</svg>\n",
                left, y0 - chart, width - 20, y0 - chart, y0 - chart / 2, width - 120, y0 - chart - 3, static_cast<long long>(peak), left, y0 + 16,
                width - 20, y0 + 16, T);
  s += buf;
  return s;
}

inline void write_timeline_svg(const std::string& path, const problem& p, const memory_plan& mp) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw error(errc::io_error, "cannot write '" + path + "'");
  f << timeline_svg(p, mp);
}

}  // namespace memplan::io
