#include <doctest/doctest.h>

#include <string>

#include "formats/svg_plot.h"

using namespace strata;

namespace {

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

std::vector<PlotPanel> two_panels() {
  PlotPanel t{"Time to train", {"GPUs", AxisScale::log2, false}, {"time to train, days", AxisScale::log10, false}, {}};
  PlotPanel c{"Cost", {"GPUs", AxisScale::log2, false}, {"cost, USD", AxisScale::linear, true}, {}};
  for (const char* gpu : {"a100-80gb", "h100", "b200 <&>"}) {
    PlotSeries st{gpu, {}}, sc{gpu, {}};
    for (int n : {64, 128, 256, 512, 1024}) {
      st.points.emplace_back(n, 60000.0 / n);
      sc.points.emplace_back(n, 1e6 + n * 100.0);
    }
    t.series.push_back(st);
    c.series.push_back(sc);
  }
  return {t, c};
}

}  // namespace

TEST_SUITE("formats") {
TEST_CASE("svg_line_charts: a standalone SVG with axes, one path per series and a legend") {
  const std::string svg = svg_line_charts(two_panels(), {"title", "subtitle"});
  CHECK(svg.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.find("</svg>\n") == svg.size() - 7);
  CHECK(count(svg, "<g class=\"panel\"") == 2);
  // Golden structure: per panel one x axis (log2) and one y axis, one path per series.
  CHECK(count(svg, "<g class=\"x-axis\" data-scale=\"log2\">") == 2);
  CHECK(count(svg, "<g class=\"y-axis\" data-scale=\"log10\">") == 1);
  CHECK(count(svg, "<g class=\"y-axis\" data-scale=\"linear\">") == 1);
  CHECK(count(svg, "<path class=\"series\"") == 6);
  CHECK(count(svg, "data-series=\"h100\"") == 2);
  CHECK(count(svg, "<text class=\"legend-label\"") == 3);
  CHECK(count(svg, "<text class=\"axis-label\"") == 4);
  CHECK(svg.find(">GPUs</text>") != std::string::npos);
  CHECK(svg.find(">time to train, days</text>") != std::string::npos);
  CHECK(svg.find(">cost, USD</text>") != std::string::npos);
  // log2 ticks of the GPU axis are the powers of two.
  for (const char* t : {">64</text>", ">128</text>", ">256</text>", ">512</text>", ">1024</text>"}) CHECK(svg.find(t) != std::string::npos);
  // Text is escaped; tags balance.
  CHECK(svg.find("b200 &lt;&amp;&gt;") != std::string::npos);
  CHECK(svg.find("b200 <&>") == std::string::npos);
  CHECK(count(svg, "<g") == count(svg, "</g>"));
  CHECK(count(svg, "<text") == count(svg, "</text>"));
  // Each path has one point per sample: M + 4 L.
  const auto p = svg.find("<path class=\"series\"");
  const std::string path = svg.substr(p, svg.find("/>", p) - p);
  CHECK(count(path, " L") == 4);
}

TEST_CASE("svg_line_charts: empty and non-positive data on log axes still give a valid document") {
  PlotPanel p{"empty", {"x", AxisScale::log2, false}, {"y", AxisScale::log10, false}, {{"s", {{0, 0}, {-1, 5}}}}};
  const std::string svg = svg_line_charts({p}, {"t", ""});
  CHECK(count(svg, "<path class=\"series\"") == 1);
  CHECK(svg.find("nan") == std::string::npos);
  CHECK(svg.find("inf") == std::string::npos);
}

TEST_CASE("xml_escape: the five XML entities") {
  CHECK(xml_escape("a<b>&\"'") == "a&lt;b&gt;&amp;&quot;&apos;");
}
}
