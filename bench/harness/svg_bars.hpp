#pragma once
// Grouped bar charts as plain SVG (std only) for docs/plots/: one group of bars per category (model),
// one bar per series (batch size, allocator), optional dashed reference lines (the paper's averages).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace memplan::harness {

struct bar_series {
  std::string label;
  std::string color;                       // CSS colour
  std::vector<std::optional<double>> values;  // one per category; nullopt: no bar
};

struct reference_line {
  std::string label;
  std::string color;
  double value = 0;
};

struct bar_chart {
  std::string title;
  std::string y_label;
  std::vector<std::string> categories;
  std::vector<bar_series> series;
  std::vector<reference_line> references;
  bool log_scale = false;  // for times spanning decades; values <= 0 are drawn at the axis floor
};

namespace detail {
inline std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}
inline std::string num(double v, int prec = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}
inline std::string tick_label(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 100 || a == std::floor(a)) return num(v, 0);
  if (a >= 1) return num(v, 1);
  if (a >= 0.01) return num(v, 2);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0e", v);
  return buf;
}
}  // namespace detail

inline std::string render_svg(const bar_chart& c) {
  const double left = 70, right = 70, top = 50, bottom = 150;
  const double group_w = std::max(28.0, 14.0 * static_cast<double>(c.series.size()) + 10.0);
  const double plot_w = std::max(300.0, group_w * static_cast<double>(c.categories.size()));
  const double plot_h = 300;
    // Wide enough for the title and the legend line.
  double legend_w = 0;
  for (const auto& s : c.series) legend_w += 24 + 6.5 * static_cast<double>(s.label.size());
  for (const auto& r : c.references) legend_w += 32 + 6.5 * static_cast<double>(r.label.size());
  const double W = std::max({left + plot_w + right, 8.5 * static_cast<double>(c.title.size()) + 40, left + legend_w + 20});
  const double H = top + plot_h + bottom;
  // Value range.
  double lo = 0, hi = 0;
  double min_pos = 1e300;
  bool any = false;
  for (const auto& s : c.series)
    for (const auto& v : s.values)
      if (v) {
        hi = any ? std::max(hi, *v) : *v;
        lo = any ? std::min(lo, *v) : std::min(0.0, *v);
        if (*v > 0) min_pos = std::min(min_pos, *v);
        any = true;
      }
  for (const auto& r : c.references) hi = std::max(hi, r.value);
  if (hi <= lo) hi = lo + 1;
  double llo = 0, lhi = 1;
  if (c.log_scale) {
    if (min_pos > hi) min_pos = hi;
    llo = std::floor(std::log10(std::max(min_pos, 1e-6)));
    lhi = std::ceil(std::log10(std::max(hi, 1e-6)));
    if (lhi <= llo) lhi = llo + 1;
  } else {
    // Round the top to a "nice" step.
    const double span = hi - lo;
    const double mag = std::pow(10.0, std::floor(std::log10(span)));
    const double step = span / mag <= 2 ? mag / 5 : span / mag <= 5 ? mag / 2 : mag;
    hi = std::ceil(hi / step) * step;
    lo = std::floor(lo / step) * step;
  }
  auto y_of = [&](double v) {
    if (c.log_scale) {
      const double lv = v > 0 ? std::log10(v) : llo;
      return top + plot_h * (1.0 - (std::clamp(lv, llo, lhi) - llo) / (lhi - llo));
    }
    return top + plot_h * (1.0 - (v - lo) / (hi - lo));
  };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << detail::num(W, 0) << "\" height=\"" << detail::num(H, 0)
    << "\" viewBox=\"0 0 " << detail::num(W, 0) << ' ' << detail::num(H, 0)
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << detail::num(W / 2, 0) << "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">"
    << detail::xml_escape(c.title) << "</text>\n";
  // Axes and grid.
  std::vector<double> ticks;
  if (c.log_scale) {
    for (double e = llo; e <= lhi + 1e-9; e += 1) ticks.push_back(std::pow(10.0, e));
  } else {
    const double span = hi - lo;
    const double mag = std::pow(10.0, std::floor(std::log10(span)));
    const double step = span / mag <= 2 ? mag / 5 : span / mag <= 5 ? mag / 2 : mag;
    for (double v = lo; v <= hi + step * 1e-6; v += step) ticks.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  }
  for (double t : ticks) {
    const double y = y_of(t);
    o << "<line x1=\"" << left << "\" x2=\"" << left + plot_w << "\" y1=\"" << detail::num(y) << "\" y2=\"" << detail::num(y)
      << "\" stroke=\"#ddd\"/>\n";
    o << "<text x=\"" << left - 5 << "\" y=\"" << detail::num(y + 4) << "\" text-anchor=\"end\">" << detail::tick_label(t)
      << "</text>\n";
  }
  o << "<line x1=\"" << left << "\" x2=\"" << left << "\" y1=\"" << top << "\" y2=\"" << top + plot_h << "\" stroke=\"black\"/>\n";
  const double zero_y = c.log_scale ? top + plot_h : y_of(0);
  o << "<line x1=\"" << left << "\" x2=\"" << left + plot_w << "\" y1=\"" << detail::num(zero_y) << "\" y2=\""
    << detail::num(zero_y) << "\" stroke=\"black\"/>\n";
  o << "<text transform=\"translate(16," << detail::num(top + plot_h / 2) << ") rotate(-90)\" text-anchor=\"middle\">"
    << detail::xml_escape(c.y_label) << "</text>\n";
  // Bars.
  const double bar_w = (group_w - 10.0) / static_cast<double>(std::max<std::size_t>(1, c.series.size()));
  for (std::size_t k = 0; k < c.categories.size(); ++k) {
    const double gx = left + group_w * static_cast<double>(k) + 5.0;
    for (std::size_t s = 0; s < c.series.size(); ++s) {
      if (k >= c.series[s].values.size() || !c.series[s].values[k]) continue;
      const double v = *c.series[s].values[k];
      const double y = y_of(v);
      const double y0 = std::min(y, zero_y), h = std::max(0.5, std::fabs(zero_y - y));
      o << "<rect x=\"" << detail::num(gx + bar_w * static_cast<double>(s)) << "\" y=\"" << detail::num(y0) << "\" width=\""
        << detail::num(bar_w - 1) << "\" height=\"" << detail::num(h) << "\" fill=\"" << c.series[s].color << "\"><title>"
        << detail::xml_escape(c.categories[k] + " / " + c.series[s].label + ": " + detail::num(v, 3)) << "</title></rect>\n";
    }
    const double cx = gx + (group_w - 10.0) / 2;
    o << "<text transform=\"translate(" << detail::num(cx + 3) << ',' << detail::num(top + plot_h + 8)
      << ") rotate(55)\" text-anchor=\"start\">" << detail::xml_escape(c.categories[k]) << "</text>\n";
  }
  // Reference lines and legend.
  for (const auto& r : c.references) {
    const double y = y_of(r.value);
    o << "<line x1=\"" << left << "\" x2=\"" << left + plot_w << "\" y1=\"" << detail::num(y) << "\" y2=\"" << detail::num(y)
      << "\" stroke=\"" << r.color << "\" stroke-dasharray=\"6,4\" stroke-width=\"1.5\"/>\n";
  }
  double lx = left + 5;
  const double ly = 36;
  for (const auto& s : c.series) {
    o << "<rect x=\"" << detail::num(lx) << "\" y=\"" << ly - 9 << "\" width=\"10\" height=\"10\" fill=\"" << s.color << "\"/>\n";
    o << "<text x=\"" << detail::num(lx + 14) << "\" y=\"" << ly << "\">" << detail::xml_escape(s.label) << "</text>\n";
    lx += 24 + 6.5 * static_cast<double>(s.label.size());
  }
  for (const auto& r : c.references) {
    o << "<line x1=\"" << detail::num(lx) << "\" x2=\"" << detail::num(lx + 18) << "\" y1=\"" << ly - 4 << "\" y2=\"" << ly - 4
      << "\" stroke=\"" << r.color << "\" stroke-dasharray=\"6,4\" stroke-width=\"1.5\"/>\n";
    o << "<text x=\"" << detail::num(lx + 22) << "\" y=\"" << ly << "\">" << detail::xml_escape(r.label) << "</text>\n";
    lx += 32 + 6.5 * static_cast<double>(r.label.size());
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace memplan::harness
