#pragma once
// A small SVG line chart (x/y axes with ticks, one or more labelled series of points), for curves
// people would rather look at than read: the memory/overhead frontier of recomputation
// (`memplan frontier --svg`), offload timelines' summaries, benchmark sweeps. std only.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <memplan/base/error.hpp>

namespace memplan::io {

struct chart_series {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in this order
  std::string colour = "#4e79a7";
};

struct chart_options {
  std::string title, x_label, y_label;
  int width = 800, height = 480;
  bool log_x = false, log_y = false;
};

namespace detail {
inline std::string chart_num(double v) {
  char b[32];
  const double a = std::fabs(v);
  if (a != 0 && (a >= 1e6 || a < 1e-3)) std::snprintf(b, sizeof b, "%.3g", v);
  else std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}
inline std::string chart_escape(std::string_view s) {
  std::string o;
  for (char c : s) {
    if (c == '&') o += "&amp;";
    else if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}
}  // namespace detail

inline std::string line_chart_svg(const std::vector<chart_series>& series, const chart_options& o) {
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  auto tx = [&](double x) { return o.log_x ? std::log10(std::max(x, 1e-300)) : x; };
  auto ty = [&](double y) { return o.log_y ? std::log10(std::max(y, 1e-300)) : y; };
  for (const auto& s : series)
    for (auto [x, y] : s.points) {
      x0 = std::min(x0, tx(x)); x1 = std::max(x1, tx(x));
      y0 = std::min(y0, ty(y)); y1 = std::max(y1, ty(y));
    }
  if (x0 > x1) { x0 = 0; x1 = 1; y0 = 0; y1 = 1; }
  if (x1 - x0 < 1e-12) { x0 -= 0.5; x1 += 0.5; }
  if (y1 - y0 < 1e-12) { y0 -= 0.5; y1 += 0.5; }
  if (!o.log_y && y0 > 0) y0 = 0;
  const double L = 80, R = 170, T = 40, B = 60;
  const double W = o.width - L - R, H = o.height - T - B;
  auto px = [&](double x) { return L + (tx(x) - x0) / (x1 - x0) * W; };
  auto py = [&](double y) { return T + H - (ty(y) - y0) / (y1 - y0) * H; };
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(o.width) + "\" height=\"" +
                    std::to_string(o.height) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + detail::chart_num(L) + "\" y=\"24\" font-size=\"15\">" + detail::chart_escape(o.title) + "</text>\n";
  // axes and ticks
  svg += "<line x1=\"" + detail::chart_num(L) + "\" y1=\"" + detail::chart_num(T + H) + "\" x2=\"" + detail::chart_num(L + W) + "\" y2=\"" +
         detail::chart_num(T + H) + "\" stroke=\"black\"/>\n";
  svg += "<line x1=\"" + detail::chart_num(L) + "\" y1=\"" + detail::chart_num(T) + "\" x2=\"" + detail::chart_num(L) + "\" y2=\"" +
         detail::chart_num(T + H) + "\" stroke=\"black\"/>\n";
  for (int k = 0; k <= 5; ++k) {
    const double fx = x0 + (x1 - x0) * k / 5, fy = y0 + (y1 - y0) * k / 5;
    const double vx = o.log_x ? std::pow(10.0, fx) : fx, vy = o.log_y ? std::pow(10.0, fy) : fy;
    const double X = L + W * k / 5, Y = T + H - H * k / 5;
    svg += "<line x1=\"" + detail::chart_num(X) + "\" y1=\"" + detail::chart_num(T + H) + "\" x2=\"" + detail::chart_num(X) + "\" y2=\"" +
           detail::chart_num(T + H + 5) + "\" stroke=\"black\"/><text x=\"" + detail::chart_num(X) + "\" y=\"" + detail::chart_num(T + H + 18) +
           "\" text-anchor=\"middle\">" + detail::chart_num(vx) + "</text>\n";
    svg += "<line x1=\"" + detail::chart_num(L - 5) + "\" y1=\"" + detail::chart_num(Y) + "\" x2=\"" + detail::chart_num(L + W) + "\" y2=\"" +
           detail::chart_num(Y) + "\" stroke=\"#dddddd\"/><text x=\"" + detail::chart_num(L - 8) + "\" y=\"" + detail::chart_num(Y + 4) +
           "\" text-anchor=\"end\">" + detail::chart_num(vy) + "</text>\n";
  }
  svg += "<text x=\"" + detail::chart_num(L + W / 2) + "\" y=\"" + detail::chart_num(T + H + 40) + "\" text-anchor=\"middle\">" +
         detail::chart_escape(o.x_label) + "</text>\n";
  svg += "<text transform=\"translate(18," + detail::chart_num(T + H / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
         detail::chart_escape(o.y_label) + "</text>\n";
  int row = 0;
  for (const auto& s : series) {
    std::string pts;
    for (auto [x, y] : s.points) pts += detail::chart_num(px(x)) + "," + detail::chart_num(py(y)) + " ";
    svg += "<polyline fill=\"none\" stroke=\"" + s.colour + "\" stroke-width=\"2\" points=\"" + pts + "\"/>\n";
    for (auto [x, y] : s.points)
      svg += "<circle cx=\"" + detail::chart_num(px(x)) + "\" cy=\"" + detail::chart_num(py(y)) + "\" r=\"3\" fill=\"" + s.colour +
             "\"><title>" + detail::chart_escape(s.label) + ": " + detail::chart_num(x) + ", " + detail::chart_num(y) + "</title></circle>\n";
    const double ly = T + 14 + 18.0 * row++;
    svg += "<line x1=\"" + detail::chart_num(L + W + 12) + "\" y1=\"" + detail::chart_num(ly - 4) + "\" x2=\"" + detail::chart_num(L + W + 32) +
           "\" y2=\"" + detail::chart_num(ly - 4) + "\" stroke=\"" + s.colour + "\" stroke-width=\"2\"/><text x=\"" +
           detail::chart_num(L + W + 36) + "\" y=\"" + detail::chart_num(ly) + "\">" + detail::chart_escape(s.label) + "</text>\n";
  }
  svg += "</svg>\n";
  return svg;
}

inline void write_line_chart_svg(const std::string& path, const std::vector<chart_series>& series, const chart_options& o) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw error(errc::io_error, "cannot write '" + path + "'");
  out << line_chart_svg(series, o);
  if (!out) throw error(errc::io_error, "error while writing '" + path + "'");
}

}  // namespace memplan::io
