#include <doctest/doctest.h>

#include <sstream>

#include "cli/whatif_report.h"
#include "test_util.h"

using namespace strata;

namespace {

std::vector<SweepRow> sample_rows() {
  std::vector<SweepRow> rows(3);
  const int counts[] = {64, 128, 256};
  for (int i = 0; i < 3; ++i) {
    SweepRow& r = rows[i];
    r.point = {"h100", counts[i], std::nullopt, 8192, 1024, 0};
    r.job.model = test::catalog().model("llama3-70b");
    r.job.cluster = test::catalog().cluster("dgx-h100-ndr");
    r.job.training.global_batch_size = 1024;
    r.job.training.seq_length = 8192;
    if (i == 2) {
      r.feasible = false;
      r.reason = "no plan fits, \"really\"";
      continue;
    }
    r.feasible = true;
    r.job.plan.tp = 4;
    r.job.plan.pp = 4;
    r.job.plan.dp = counts[i] / 16;
    r.gpus_used = counts[i];
    r.prediction.iteration_time_s = 100.0 / (i + 1);
    r.prediction.tokens_per_sec_per_gpu = 1000;
    r.prediction.breakdown.compute_s = 50.0 / (i + 1);
    CapacityOptions opts;
    opts.tokens = 2e12;
    fill_capacity(r, opts);
  }
  rows[1].selection = RowSelection::scaled;
  rows[1].kept_from_gpus = 64;
  return rows;
}

std::vector<std::string> split(const std::string& line) {
  // Splits one CSV line with quoted fields.
  std::vector<std::string> out(1);
  bool q = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (q && c == '"' && i + 1 < line.size() && line[i + 1] == '"') { out.back() += '"'; ++i; }
    else if (c == '"') q = !q;
    else if (c == ',' && !q) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

}  // namespace

TEST_SUITE("cli") {
TEST_CASE("whatif_csv: the documented columns, one line per row, quoted where needed") {
  const auto rows = sample_rows();
  std::stringstream ss(whatif_csv(rows));
  std::string line;
  std::getline(ss, line);
  const auto head = split(line);
  CHECK(head == whatif_csv_columns());
  for (const char* col : {"gpu", "gpus", "gpus_used", "plan", "tokens_per_sec_per_gpu", "mfu", "time_to_train_days", "gpu_hours",
                          "price_per_gpu_hour_usd", "price_is_default", "cost_usd", "energy_kWh", "co2_t", "reason"})
    CHECK(std::find(head.begin(), head.end(), col) != head.end());
  auto col = [&](const char* name) { return static_cast<std::size_t>(std::find(head.begin(), head.end(), name) - head.begin()); };
  std::vector<std::vector<std::string>> cells;
  while (std::getline(ss, line)) cells.push_back(split(line));
  REQUIRE(cells.size() == 3);
  for (const auto& c : cells) CHECK(c.size() == head.size());
  CHECK(cells[0][col("gpu")] == "h100");
  CHECK(cells[0][col("gpus")] == "64");
  CHECK(cells[0][col("plan")] == "tp=4 pp=4 dp=4 mbs=1 recompute=none");
  CHECK(cells[0][col("price_is_default")] == "true");
  CHECK(std::stod(cells[0][col("cost_usd")]) == doctest::Approx(rows[0].cost_usd).epsilon(1e-6));
  CHECK(std::stod(cells[1][col("time_to_train_days")]) == doctest::Approx(rows[1].time_to_train_s / 86400).epsilon(1e-4));
  CHECK(cells[1][col("selection")] == "scaled");
  CHECK(cells[2][col("feasible")] == "false");
  CHECK(cells[2][col("reason")] == "no plan fits, \"really\"");
  CHECK(cells[2][col("cost_usd")].empty());
}

TEST_CASE("whatif_json: rows with capacity fields, assumptions and deadline answers") {
  const auto rows = sample_rows();
  WhatifContext ctx;
  ctx.model = "llama3-70b";
  ctx.tokens = 2e12;
  ctx.deadline_days = 1e6;
  const auto answers = answer_deadline(rows, *ctx.deadline_days * 86400);
  const auto j = whatif_json(rows, answers, ctx);
  REQUIRE(j["rows"].size() == 3);
  const auto& r0 = j["rows"][0];
  for (const char* k : {"gpu", "gpus", "gpus_used", "plan", "tokens_per_sec_per_gpu", "mfu", "time_to_train_days", "gpu_hours",
                        "price_per_gpu_hour_usd", "price_is_default", "price_source", "cost_usd", "energy_kWh", "co2_kg", "selection"})
    CHECK(r0.contains(k));
  CHECK(r0["price_source"].get<std::string>().find("default guess") != std::string::npos);
  CHECK(r0["plan"]["tp"] == 4);
  CHECK(j["rows"][1]["from_gpus"] == 64);
  CHECK(j["rows"][2]["feasible"] == false);
  CHECK(j["rows"][2]["reason"] == "no plan fits, \"really\"");
  CHECK(j["assumptions"].size() >= 4);
  REQUIRE(j["deadline"].size() == 1);
  CHECK(j["deadline"][0]["met"] == true);
  CHECK(j["deadline"][0]["gpus"] == 64);
}

TEST_CASE("whatif_table: plan, figures, reasons and stated defaults") {
  const auto rows = sample_rows();
  WhatifContext ctx;
  ctx.model = "llama3-70b";
  ctx.tokens = 2e12;
  const std::string t = whatif_table(rows, ctx);
  CHECK(t.find("tp=4 pp=4 dp=8") != std::string::npos);
  CHECK(t.find("64-GPU plan scaled by dp") != std::string::npos);
  CHECK(t.find("no feasible plan") != std::string::npos);
  CHECK(t.find("256 x h100: no plan fits") != std::string::npos);
  CHECK(t.find("DEFAULT prices of the cluster presets") != std::string::npos);
  CHECK(t.find("$2.50/GPU-h") != std::string::npos);
  CHECK(t.find("0.30 + 0.70 x busy") != std::string::npos);
  CHECK(t.find("400 g/kWh, the DEFAULT grid carbon intensity") != std::string::npos);
}

TEST_CASE("whatif_table: a dropless MoE's host time is said to be the measured default, or not modelled") {
  auto rows = sample_rows();
  WhatifContext ctx;
  ctx.model = "qwen3-30b-a3b";
  ctx.tokens = 2e12;
  const std::string unmodelled = "MoE: the host time of a dropless dispatcher's per-layer synchronisation is not modelled";
  const std::string measured_default = "MoE: the host time of each MoE layer is Megatron-Core's, measured on an H100 machine's CPU";
  CHECK(whatif_table(rows, ctx).find(unmodelled) == std::string::npos);  // dense
  CHECK(whatif_table(rows, ctx).find(measured_default) == std::string::npos);
  for (SweepRow& r : rows) r.job.model = test::catalog().model("qwen3-30b-a3b");  // dropless by default
  CHECK(whatif_table(rows, ctx).find(measured_default) != std::string::npos);
  CHECK(whatif_table(rows, ctx).find(unmodelled) == std::string::npos);
  for (SweepRow& r : rows) r.job.calibration.host.moe_forward_s = 5e-3;  // measured on the user's stack: no caveat
  CHECK(whatif_table(rows, ctx).find(measured_default) == std::string::npos);
  CHECK(whatif_table(rows, ctx).find(unmodelled) == std::string::npos);
  for (SweepRow& r : rows) r.job.calibration.host = test::no_moe_host_time();  // a zeroed line: not modelled
  CHECK(whatif_table(rows, ctx).find(unmodelled) != std::string::npos);
}

TEST_CASE("whatif_table: a plan above 90% of the usable memory is noted as tight") {
  auto rows = sample_rows();
  WhatifContext ctx;
  ctx.model = "llama3-70b";
  ctx.tokens = 2e12;
  for (SweepRow& r : rows) r.prediction.memory_capacity_GiB = 77.7;
  rows[0].prediction.memory_per_gpu_GiB = 60;  // 77%: roomy
  rows[1].prediction.memory_per_gpu_GiB = 75;  // 97%
  const std::string t = whatif_table(rows, ctx);
  CHECK(t.find("64-GPU plan scaled by dp; memory tight (97% of usable)") != std::string::npos);
  CHECK(t.find("(77% of usable)") == std::string::npos);
  rows[0].prediction.memory_per_gpu_GiB = 71;  // 91%, a searched row: the note alone
  CHECK(whatif_table(rows, ctx).find("  memory tight (91% of usable)") != std::string::npos);
}

TEST_CASE("whatif_panels: a time and a cost panel, one series per group, infeasible points left out") {
  auto rows = sample_rows();
  WhatifContext ctx;
  const auto panels = whatif_panels(rows, ctx);
  REQUIRE(panels.size() == 2);
  REQUIRE(panels[0].series.size() == 1);
  CHECK(panels[0].x.scale == AxisScale::log2);
  CHECK(panels[0].series[0].label == "h100");
  CHECK(panels[0].series[0].points.size() == 2);
  CHECK(panels[1].series[0].points[1].second == doctest::Approx(rows[1].cost_usd));
}
}
