#include "formats/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace strata {

namespace {

// Colour-blind-safe palette (Okabe & Ito 2008, "Color Universal Design").
constexpr const char* kColors[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"};
constexpr int kNumColors = static_cast<int>(sizeof(kColors) / sizeof(kColors[0]));

double fwd(AxisScale s, double v) {
  switch (s) {
    case AxisScale::log2: return std::log2(v);
    case AxisScale::log10: return std::log10(v);
    case AxisScale::linear: return v;
  }
  return v;
}

bool usable(AxisScale s, double v) { return std::isfinite(v) && (s == AxisScale::linear || v > 0); }

// Compact tick label: 1, 2.5, 1.2k, 3.4M, 0.05.
std::string tick_label(double v) {
  const double a = std::fabs(v);
  auto trim = [](std::string s) {
    if (s.find('.') != std::string::npos) {
      while (!s.empty() && s.back() == '0') s.pop_back();
      if (!s.empty() && s.back() == '.') s.pop_back();
    }
    return s;
  };
  if (a >= 1e9) return trim(fmt::format("{:.2f}", v / 1e9)) + "G";
  if (a >= 1e6) return trim(fmt::format("{:.2f}", v / 1e6)) + "M";
  if (a >= 1e4) return trim(fmt::format("{:.1f}", v / 1e3)) + "k";
  if (a >= 100 || a == 0) return fmt::format("{:.0f}", v);
  if (a >= 1) return trim(fmt::format("{:.2f}", v));
  return trim(fmt::format("{:.3g}", v));
}

// "Nice" linear ticks (Heckbert 1990, "Nice numbers for graph labels", Graphics Gems).
std::vector<double> linear_ticks(double lo, double hi, int target) {
  const double range = hi - lo;
  const double raw = range / std::max(1, target);
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  const double f = raw / mag;
  const double step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
  std::vector<double> t;
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + 1e-9 * step; v += step) t.push_back(std::fabs(v) < 1e-12 * step ? 0 : v);
  return t;
}

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) { lo = std::min(lo, v); hi = std::max(hi, v); }
  bool empty() const { return !(lo <= hi); }
};

// Axis range in transformed units and its ticks (transformed positions, labels).
struct AxisLayout {
  double lo = 0, hi = 1;
  std::vector<std::pair<double, std::string>> ticks;
};

AxisLayout layout_axis(const PlotAxis& axis, Range r) {
  AxisLayout a;
  if (r.empty()) r = {axis.scale == AxisScale::linear ? 0.0 : 1.0, axis.scale == AxisScale::linear ? 1.0 : 10.0};
  if (axis.scale == AxisScale::linear) {
    double lo = axis.from_zero ? std::min(0.0, r.lo) : r.lo, hi = r.hi;
    if (hi - lo <= 0) { lo -= 0.5 * std::max(1.0, std::fabs(lo)); hi += 0.5 * std::max(1.0, std::fabs(hi)); }
    const double pad = axis.from_zero ? 0.05 * (hi - lo) : 0.08 * (hi - lo);
    if (!axis.from_zero) lo -= pad;
    hi += pad;
    a.lo = lo;
    a.hi = hi;
    for (double t : linear_ticks(lo, hi, 6)) a.ticks.emplace_back(t, tick_label(t));
    return a;
  }
  const double base = axis.scale == AxisScale::log2 ? 2 : 10;
  double lo = std::floor(fwd(axis.scale, r.lo)), hi = std::ceil(fwd(axis.scale, r.hi));
  if (hi <= lo) { lo -= 1; hi += 1; }
  // Pad a log axis by a quarter decade/octave so end points are not on the frame.
  const double tlo = fwd(axis.scale, r.lo), thi = fwd(axis.scale, r.hi);
  a.lo = std::min(lo, tlo - 0.25);
  a.hi = std::max(hi, thi + 0.25);
  if (axis.scale == AxisScale::log2) {
    for (double e = std::ceil(a.lo); e <= a.hi; e += 1) a.ticks.emplace_back(e, tick_label(std::pow(base, e)));
  } else {
    const int decades = static_cast<int>(std::ceil(a.hi) - std::floor(a.lo));
    for (double e = std::floor(a.lo); e <= a.hi; e += 1)
      for (double m : {1.0, 2.0, 5.0}) {
        if (decades > 3 && m != 1.0) continue;
        const double t = e + std::log10(m);
        if (t >= a.lo && t <= a.hi) a.ticks.emplace_back(t, tick_label(m * std::pow(10, e)));
      }
  }
  return a;
}

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string svg_line_charts(const std::vector<PlotPanel>& panels, const PlotOptions& opts) {
  const int ml = 78, mr = 24, mt = 44, mb = 58;  // plot-area margins inside a panel
  const int header = opts.subtitle.empty() ? 40 : 58;
  const std::size_t nseries = panels.empty() ? 0 : panels.front().series.size();
  const int legend_rows = static_cast<int>((nseries + 3) / 4);
  const int legend_h = 26 + 22 * legend_rows;
  const int W = std::max<int>(1, static_cast<int>(panels.size())) * opts.panel_width;
  const int H = header + opts.panel_height + legend_h;
  std::string s;
  s += fmt::format("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  s += fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
                   "font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n", W, H, W, H);
  s += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", W, H);
  s += fmt::format("<text class=\"title\" x=\"{}\" y=\"24\" text-anchor=\"middle\" font-size=\"16\" font-weight=\"bold\">{}</text>\n",
                   W / 2, xml_escape(opts.title));
  if (!opts.subtitle.empty())
    s += fmt::format("<text class=\"subtitle\" x=\"{}\" y=\"44\" text-anchor=\"middle\" fill=\"#444444\">{}</text>\n", W / 2,
                     xml_escape(opts.subtitle));

  for (std::size_t pi = 0; pi < panels.size(); ++pi) {
    const PlotPanel& p = panels[pi];
    Range xr, yr;
    for (const auto& se : p.series)
      for (auto [x, y] : se.points)
        if (usable(p.x.scale, x) && usable(p.y.scale, y)) { xr.add(x); yr.add(y); }
    const AxisLayout ax = layout_axis(p.x, xr), ay = layout_axis(p.y, yr);
    const double ox = static_cast<double>(pi) * opts.panel_width, oy = header;
    const double x0 = ox + ml, x1 = ox + opts.panel_width - mr, y0 = oy + opts.panel_height - mb, y1 = oy + mt;
    auto px = [&](double tx) { return x0 + (tx - ax.lo) / (ax.hi - ax.lo) * (x1 - x0); };
    auto py = [&](double ty) { return y0 - (ty - ay.lo) / (ay.hi - ay.lo) * (y0 - y1); };
    s += fmt::format("<g class=\"panel\" data-title=\"{}\">\n", xml_escape(p.title));
    s += fmt::format("<text class=\"panel-title\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">{}</text>\n",
                     (x0 + x1) / 2, oy + 24, xml_escape(p.title));
    // Grid and ticks.
    s += "<g class=\"grid\" stroke=\"#e0e0e0\" stroke-width=\"1\">\n";
    for (const auto& [t, _] : ax.ticks) s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>\n", px(t), y0, y1);
    for (const auto& [t, _] : ay.ticks) s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\"/>\n", x0, py(t), x1);
    s += "</g>\n";
    s += fmt::format("<g class=\"x-axis\" data-scale=\"{}\">\n", p.x.scale == AxisScale::log2 ? "log2" : p.x.scale == AxisScale::log10 ? "log10" : "linear");
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#000000\"/>\n", x0, y0, x1, y0);
    for (const auto& [t, label] : ax.ticks)
      s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#000000\"/>"
                       "<text class=\"tick\" x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
                       px(t), y0, y0 + 5, y0 + 18, xml_escape(label));
    s += fmt::format("<text class=\"axis-label\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"13\">{}</text>\n",
                     (x0 + x1) / 2, y0 + 40, xml_escape(p.x.label));
    s += "</g>\n";
    s += fmt::format("<g class=\"y-axis\" data-scale=\"{}\">\n", p.y.scale == AxisScale::log2 ? "log2" : p.y.scale == AxisScale::log10 ? "log10" : "linear");
    s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#000000\"/>\n", x0, y0, x0, y1);
    for (const auto& [t, label] : ay.ticks)
      s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#000000\"/>"
                       "<text class=\"tick\" x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                       x0 - 5, py(t), x0, x0 - 8, py(t) + 4, xml_escape(label));
    s += fmt::format("<text class=\"axis-label\" transform=\"translate({:.1f},{:.1f}) rotate(-90)\" text-anchor=\"middle\" font-size=\"13\">{}</text>\n",
                     ox + 18, (y0 + y1) / 2, xml_escape(p.y.label));
    s += "</g>\n";
    // Series: one path each, plus point markers.
    for (std::size_t si = 0; si < p.series.size(); ++si) {
      const PlotSeries& se = p.series[si];
      const char* color = kColors[si % kNumColors];
      std::vector<std::pair<double, double>> pts;
      for (auto [x, y] : se.points)
        if (usable(p.x.scale, x) && usable(p.y.scale, y)) pts.emplace_back(px(fwd(p.x.scale, x)), py(fwd(p.y.scale, y)));
      std::sort(pts.begin(), pts.end());
      std::string d;
      for (std::size_t k = 0; k < pts.size(); ++k) d += fmt::format("{}{:.1f},{:.1f}", k ? " L" : "M", pts[k].first, pts[k].second);
      s += fmt::format("<path class=\"series\" data-series=\"{}\" d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2.2\"/>\n",
                       xml_escape(se.label), d.empty() ? "M0,0" : d, color);
      s += fmt::format("<g class=\"markers\" fill=\"{}\">", color);
      for (auto [x, y] : pts) s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\"/>", x, y);
      s += "</g>\n";
    }
    s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" stroke=\"#000000\"/>\n", x0, y1, x1 - x0, y0 - y1);
    s += "</g>\n";
  }
  // Legend (series of the first panel), four entries a row.
  if (nseries > 0) {
    s += "<g class=\"legend\">\n";
    const double colw = static_cast<double>(W) / 4;
    for (std::size_t si = 0; si < nseries; ++si) {
      const double lx = 20 + colw * static_cast<double>(si % 4), ly = header + opts.panel_height + 14 + 22.0 * static_cast<double>(si / 4);
      const char* color = kColors[si % kNumColors];
      s += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" stroke-width=\"2.2\"/>"
                       "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"/>"
                       "<text class=\"legend-label\" x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
                       lx, ly, lx + 28, ly, color, lx + 14, ly, color, lx + 36, ly + 4, xml_escape(panels.front().series[si].label));
    }
    s += "</g>\n";
  }
  s += "</svg>\n";
  return s;
}

}  // namespace strata
