#include <doctest/doctest.h>

#include <algorithm>

#include "cli/step_calibration.h"
#include "costmodel/errors.h"
#include "costmodel/json_reader.h"
#include "test_util.h"

using namespace strata;

namespace {

// The two A100-80GB runs of the small test file that can be predicted.
std::vector<ValidationRun> a100_runs() {
  const std::string path = test::data_file("validation_runs_small.json");
  auto runs = load_validation_runs(load_json_file(path), path, test::catalog());
  return select_runs(std::move(runs), {"sc21_gpt3_175b_like", "a100_unstated_memory_omnipath_zero1"});
}

// Sets each run's measured iteration time to what the model predicts with the kernel throughput
// scaled by `scale`: a stack whose true factor is known.
void measure_with_scale(std::vector<ValidationRun>& runs, double scale) {
  for (auto& run : runs) {
    ValidationRun copy = run;
    copy.job->calibration = scale_throughput(run.job->calibration, scale);
    run.measured_iteration_time_s = predict_validation_run(copy).iteration_time_s;
  }
}

}  // namespace

TEST_SUITE("cli") {
TEST_CASE("scale_throughput scales the GEMM and memory efficiencies and caps them at 1") {
  Calibration base;
  base.kernel.gemm_efficiency = 0.8;
  base.kernel.memory_efficiency = 0.6;
  Calibration c = scale_throughput(base, 0.5);
  CHECK(c.kernel.gemm_efficiency == doctest::Approx(0.4));
  CHECK(c.kernel.memory_efficiency == doctest::Approx(0.3));
  CHECK(c.kernel.gemm_memory_efficiency == doctest::Approx(0.5 * base.kernel.gemm_memory_efficiency));
  CHECK(c.kernel.row_memory_efficiency == doctest::Approx(0.5 * base.kernel.row_memory_efficiency));
  CHECK(c.kernel.attention_fwd_efficiency == base.kernel.attention_fwd_efficiency);  // relative to the GEMM rate
  c = scale_throughput(base, 1.5);
  CHECK(c.kernel.gemm_efficiency == 1.0);
  CHECK(c.kernel.memory_efficiency == doctest::Approx(0.9));
}

TEST_CASE("fit_step_times recovers the kernel-throughput factor of a known stack") {
  auto runs = a100_runs();
  REQUIRE(runs.size() == 2);
  for (double truth : {0.62, 0.9, 1.1}) {
    CAPTURE(truth);
    measure_with_scale(runs, truth);
    StepFit fit = fit_step_times(runs, "runs.json");
    CHECK(fit.gpu == "A100-SXM4-80GB");
    CHECK(fit.throughput_scale == doctest::Approx(truth).epsilon(1e-3));
    CHECK_FALSE(fit.at_bound);
    CHECK(fit.mape_after_pct < 0.1);
    CHECK(fit.mape_before_pct > fit.mape_after_pct);
    REQUIRE(fit.runs.size() == 2);
    for (const auto& r : fit.runs) CHECK(r.after_s == doctest::Approx(r.measured_s).epsilon(1e-3));

    nlohmann::json j = step_fit_to_json(fit, "runs.json");
    CHECK(j["gpu"] == "A100-SXM4-80GB");
    CHECK(j["fit"]["kind"] == "step_times");
    CHECK(j["fit"]["runs"].size() == 2);
    Calibration back = calibration_from_json(j, "cal.json");
    CHECK(back.kernel.gemm_efficiency == doctest::Approx(fit.calibration.kernel.gemm_efficiency));
    CHECK(step_fit_report(fit).find("kernel throughput x") != std::string::npos);
  }
}

TEST_CASE("fit_step_times: the report says when the defaults were already within the model's error") {
  auto runs = a100_runs();
  measure_with_scale(runs, 1.02);
  CHECK(step_fit_report(fit_step_times(runs, "runs.json")).find("already within") != std::string::npos);
  measure_with_scale(runs, 0.62);
  CHECK(step_fit_report(fit_step_times(runs, "runs.json")).find("already within") == std::string::npos);
}

TEST_CASE("fit_step_times: a measurement no kernel factor can reach is flagged at the bound") {
  auto runs = a100_runs();
  measure_with_scale(runs, 1.0);
  for (auto& r : runs) *r.measured_iteration_time_s *= 20;  // twenty times slower than the model
  StepFit fit = fit_step_times(runs, "runs.json");
  CHECK(fit.at_bound);
  CHECK(step_fit_report(fit).find("edge of the searched range") != std::string::npos);
}

TEST_CASE("fit_step_times: clear errors") {
  CHECK_THROWS_WITH_AS(fit_step_times({}, "runs.json"), doctest::Contains("no runs to calibrate on"), InputError);

  const std::string path = test::data_file("validation_runs_small.json");
  auto all = load_validation_runs(load_json_file(path), path, test::catalog());
  auto h100 = select_runs(all, {"mpt_fsdp_h100_per_node_link"});
  auto mixed = a100_runs();
  mixed.insert(mixed.end(), h100.begin(), h100.end());
  CHECK_THROWS_WITH_AS(fit_step_times(mixed, "runs.json"), doctest::Contains("calibrate one GPU (one cluster) at a time"), InputError);

  auto tpu = select_runs(all, {"tpu_cannot_predict"});
  CHECK_THROWS_WITH_AS(fit_step_times(tpu, "runs.json"), doctest::Contains("run tpu_cannot_predict: cannot be predicted"), InputError);

  auto unmeasured = select_runs(all, {"a100_40gb_in_text"});
  CHECK_THROWS_WITH_AS(fit_step_times(unmeasured, "runs.json"), doctest::Contains("expected a measured iteration time"), InputError);
}

TEST_CASE("a record with only a measured iteration time gets tokens/s/GPU = global batch x seq / (time x GPUs)") {
  nlohmann::json runs = load_json_file(test::data_file("validation_runs_small.json"));
  nlohmann::json r = runs[0];  // sc21_gpt3_175b_like: 1024 GPUs, global batch 1536, seq 2048
  r.erase("meas_tokens_per_sec_per_gpu");
  r["meas_iteration_time_s"] = 20.0;
  auto loaded = load_validation_runs(nlohmann::json::array({r}), "runs.json", test::catalog());
  REQUIRE(loaded.size() == 1);
  REQUIRE(loaded[0].job);
  REQUIRE(loaded[0].measured_tokens_per_sec_per_gpu);
  CHECK(*loaded[0].measured_tokens_per_sec_per_gpu == doctest::Approx(1536.0 * 2048 / (20.0 * loaded[0].job->plan.world_size())));
  CHECK(loaded[0].job->plan.world_size() == 1024);
}

TEST_CASE("select_runs keeps the runs whose id or source group contains one of the texts") {
  const std::string path = test::data_file("validation_runs_small.json");
  auto all = load_validation_runs(load_json_file(path), path, test::catalog());
  CHECK(select_runs(all, {}).size() == all.size());
  CHECK(select_runs(all, {"no such run"}).empty());
  auto two = select_runs(all, {"tpu_", "missing_layers"});
  REQUIRE(two.size() == 2);
  CHECK(two[0].id == "tpu_cannot_predict");
  CHECK(two[1].id == "missing_layers");
}
}
