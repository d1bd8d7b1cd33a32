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
    copy.job->calibration = profiler::scale_throughput(run.job->calibration, scale);
    run.measured_iteration_time_s = predict_validation_run(copy).iteration_time_s;
  }
}

}  // namespace

TEST_SUITE("cli") {
TEST_CASE("fit_step_times fits published-run records: the factor of a known stack, through completed plans") {
  // The fit itself is tested in tests/profiler/test_step_calibration.cpp; here, that the records
  // reach it whole: the GPU and base calibration of the runs, their predictions with the null plan
  // fields completed, measured times from tokens/s/GPU.
  auto runs = a100_runs();
  REQUIRE(runs.size() == 2);
  for (double truth : {0.62, 1.1}) {
    CAPTURE(truth);
    measure_with_scale(runs, truth);
    profiler::StepFit fit = fit_step_times(runs, "runs.json");
    CHECK(fit.gpu == "A100-SXM4-80GB");
    CHECK(fit.base.source == runs[0].job->calibration.source);
    CHECK(fit.throughput_scale == doctest::Approx(truth).epsilon(1e-3));
    CHECK_FALSE(fit.at_bound);
    CHECK(fit.mape_after_pct < 0.1);
    REQUIRE(fit.runs.size() == 2);
    CHECK(fit.runs[0].id == "sc21_gpt3_175b_like");
    for (const auto& r : fit.runs) CHECK(r.after_s == doctest::Approx(r.measured_s).epsilon(1e-3));
  }
  // A run measured in tokens/s/GPU only: its iteration time is the one that gives that throughput.
  auto tokens = select_runs(a100_runs(), {"a100_unstated_memory"});
  REQUIRE(tokens.size() == 1);
  REQUIRE_FALSE(tokens[0].measured_iteration_time_s);
  ValidationRun copy = tokens[0];
  const Prediction p = predict_validation_run(copy);
  profiler::StepFit fit = fit_step_times(tokens, "runs.json");
  CHECK(fit.runs[0].before_s == p.iteration_time_s);
  CHECK(fit.runs[0].measured_s == doctest::Approx(p.iteration_time_s * p.tokens_per_sec_per_gpu / *tokens[0].measured_tokens_per_sec_per_gpu));
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
