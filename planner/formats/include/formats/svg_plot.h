#pragma once
// A small, dependency-free SVG line-chart writer: one or more panels side by side, each with
// labelled axes (linear, log2 or log10), tick labels, a grid, one <path> per series and a legend.
// The output is a standalone SVG 1.1 document a browser opens directly.
#include <string>
#include <utility>
#include <vector>

namespace strata {

enum class AxisScale { linear, log2, log10 };

struct PlotAxis {
  std::string label;
  AxisScale scale = AxisScale::linear;
  bool from_zero = false;  // linear axes: start at 0
};

struct PlotSeries {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (x, y); points with y <= 0 on log axes are skipped
};

struct PlotPanel {
  std::string title;
  PlotAxis x, y;
  std::vector<PlotSeries> series;
};

struct PlotOptions {
  std::string title;
  std::string subtitle;
  int panel_width = 520;
  int panel_height = 380;
};

// Series i gets the same colour and marker in every panel; the legend lists the series of the
// first panel. Every series path carries class="series" and data-series="<label>".
std::string svg_line_charts(const std::vector<PlotPanel>& panels, const PlotOptions& opts);

// Text escaped for XML character data and attribute values.
std::string xml_escape(const std::string& s);

}  // namespace strata
