#pragma once
// Output of a capacity study (strata whatif): the text table with its stated assumptions, CSV and
// JSON rows, the deadline answers, and the scaling-curve panels for the SVG plot.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "formats/svg_plot.h"
#include "whatif/sweep.h"

namespace strata {

// What the study assumed, printed under the table and stored in the JSON.
struct WhatifContext {
  std::string model;
  double tokens = 0;
  CapacityOptions capacity;
  std::optional<double> deadline_days;
  // Which axes have more than one value (they get their own column / series label).
  bool vary_net = false, vary_seq = false, vary_batch = false;
};

// The CSV columns, in order (a stable interface: scripts read them by name).
const std::vector<std::string>& whatif_csv_columns();
std::string whatif_csv(const std::vector<SweepRow>& rows);
std::string csv_escape(const std::string& field);

nlohmann::json whatif_row_json(const SweepRow& row);
nlohmann::json whatif_json(const std::vector<SweepRow>& rows, const std::vector<DeadlineAnswer>& answers, const WhatifContext& ctx);

std::string whatif_table(const std::vector<SweepRow>& rows, const WhatifContext& ctx);
std::string deadline_table(const std::vector<SweepRow>& rows, const std::vector<DeadlineAnswer>& answers, const WhatifContext& ctx);
// The assumptions behind the figures (token budget, price, energy, carbon), one line each.
std::vector<std::string> whatif_assumptions(const std::vector<SweepRow>& rows, const WhatifContext& ctx);

// Label of a row's series: the GPU type plus the swept axes other than the GPU count.
std::string series_label(const SweepPoint& p, const WhatifContext& ctx);
// Two panels (time-to-train in days, cost in USD) against GPU count (log2), one series per group.
std::vector<PlotPanel> whatif_panels(const std::vector<SweepRow>& rows, const WhatifContext& ctx);

}  // namespace strata
