#include <doctest/doctest.h>

#include <stdexcept>

#include "costmodel/predictor.h"
#include "profiler/step_calibration.h"
#include "test_util.h"

using namespace strata;
using namespace strata::profiler;

namespace {

// Two A100-80GB jobs: GPT-3 175B on 1024 GPUs, and GPT-3 1.3B on 32 GPUs (pp 2, dp 16).
std::vector<Job> a100_jobs() {
  Job big = test::gpt3_175b_job();
  Job small = big;
  small.model = test::catalog().model("gpt3-1.3b");
  small.training.global_batch_size = 512;
  small.plan.tp = 1;
  small.plan.pp = 2;
  small.plan.dp = 16;
  small.plan.micro_batch_size = 4;
  small.plan.sequence_parallel = false;
  return {big, small};
}

double predicted_time(Job job, const Calibration& c) {
  job.calibration = c;
  return predict(job).iteration_time_s;
}

// Runs whose measured iteration time is what the model predicts with the kernel throughput scaled
// by `scale`: a stack whose true factor is known.
std::vector<StepFitRun> measured_with_scale(const std::vector<Job>& jobs, double scale) {
  std::vector<StepFitRun> runs;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    StepFitRun r;
    r.id = "job" + std::to_string(i);
    r.before_s = predicted_time(jobs[i], jobs[i].calibration);
    r.measured_s = predicted_time(jobs[i], scale_throughput(jobs[i].calibration, scale));
    runs.push_back(r);
  }
  return runs;
}

StepFit fit(const std::vector<Job>& jobs, std::vector<StepFitRun> runs) {
  return fit_step_times(jobs.front().cluster.gpu.name, jobs.front().calibration, std::move(runs),
                        [&jobs](std::size_t i, const Calibration& c) { return predicted_time(jobs[i], c); });
}

}  // namespace

TEST_SUITE("profiler") {
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
  const auto jobs = a100_jobs();
  for (double truth : {0.62, 0.9, 1.1}) {
    CAPTURE(truth);
    StepFit f = fit(jobs, measured_with_scale(jobs, truth));
    CHECK(f.gpu == "A100-SXM4-80GB");
    CHECK(f.throughput_scale == doctest::Approx(truth).epsilon(1e-3));
    CHECK_FALSE(f.at_bound);
    CHECK(f.mape_after_pct < 0.1);
    CHECK(f.mape_before_pct > f.mape_after_pct);
    REQUIRE(f.runs.size() == 2);
    for (const auto& r : f.runs) CHECK(r.after_s == doctest::Approx(r.measured_s).epsilon(1e-3));

    nlohmann::json j = step_fit_to_json(f, "runs.json");
    CHECK(j["gpu"] == "A100-SXM4-80GB");
    CHECK(j["fit"]["kind"] == "step_times");
    CHECK(j["fit"]["runs"].size() == 2);
    Calibration back = calibration_from_json(j, "cal.json");
    CHECK(back.kernel.gemm_efficiency == doctest::Approx(f.calibration.kernel.gemm_efficiency));
    CHECK(step_fit_report(f).find("kernel throughput x") != std::string::npos);
  }
}

TEST_CASE("fit_step_times: the report says when the defaults were already within the model's error") {
  const auto jobs = a100_jobs();
  CHECK(step_fit_report(fit(jobs, measured_with_scale(jobs, 1.02))).find("already within") != std::string::npos);
  CHECK(step_fit_report(fit(jobs, measured_with_scale(jobs, 0.62))).find("already within") == std::string::npos);
}

TEST_CASE("fit_step_times: a measurement no kernel factor can reach is flagged at the bound") {
  const auto jobs = a100_jobs();
  auto runs = measured_with_scale(jobs, 1.0);
  for (auto& r : runs) r.measured_s *= 20;  // twenty times slower than the model
  StepFit f = fit(jobs, runs);
  CHECK(f.at_bound);
  CHECK(step_fit_report(f).find("edge of the searched range") != std::string::npos);
}

TEST_CASE("fit_step_times: one run is fitted exactly, and the report says what that proves") {
  const std::vector<Job> one = {a100_jobs().back()};
  StepFit f = fit(one, measured_with_scale(one, 0.7));
  REQUIRE(f.runs.size() == 1);
  CHECK(f.runs[0].after_s == doctest::Approx(f.runs[0].measured_s).epsilon(1e-3));
  CHECK(step_fit_report(f).find("one run fixes the fitted figure exactly") != std::string::npos);
}

TEST_CASE("fit_step_times needs runs with positive measured times") {
  const auto jobs = a100_jobs();
  CHECK_THROWS_AS(fit(jobs, {}), std::invalid_argument);
  auto runs = measured_with_scale(jobs, 1.0);
  runs[1].measured_s = 0;
  CHECK_THROWS_AS(fit(jobs, runs), std::invalid_argument);
}
TEST_CASE("fit_moe_host_time recovers the host time of a MoE stack and says when none binds") {
  // Qwen3-30B-A3B on 16 H100s at micro-batch 1 and 2 (ep 8, dropless): runs "measured" with a
  // known host time per MoE layer forward.
  // The GPU-only base (no host line): the fit's answer replaces the line anyway.
  Job mbs1 = test::qwen3_30b_ep8_job();
  mbs1.calibration.host = test::no_moe_host_time();
  Job mbs2 = mbs1;
  mbs2.plan.micro_batch_size = 2;
  const std::vector<Job> jobs{mbs1, mbs2};
  auto predictor = [&jobs](std::size_t i, const Calibration& c) { return predicted_time(jobs[i], c); };
  auto runs_with_host = [&](double host) {
    std::vector<StepFitRun> runs;
    Calibration truth = mbs1.calibration;
    truth.host.moe_forward_s = host;
    for (std::size_t i = 0; i < jobs.size(); ++i)
      runs.push_back({"job" + std::to_string(i), predicted_time(jobs[i], truth), predicted_time(jobs[i], mbs1.calibration), 0});
    return runs;
  };
  SUBCASE("a host time that binds is found, the kernels left alone") {
    const StepFit f = fit_moe_host_time(mbs1.cluster.gpu.name, mbs1.calibration, runs_with_host(0.006), predictor);
    CHECK(f.target == StepFitTarget::moe_host);
    CHECK(f.calibration.host.moe_forward_s == doctest::Approx(0.006).epsilon(1e-3));
    CHECK(f.calibration.kernel == mbs1.calibration.kernel);
    CHECK_FALSE(f.at_bound);
    CHECK(f.mape_after_pct < 0.01);
    CHECK(f.mape_before_pct > 1);
    const nlohmann::json j = step_fit_to_json(f, "runs.json");
    CHECK(j["fit"]["target"] == "moe_host");
    CHECK(j["host"]["moe_forward_s"].get<double>() == doctest::Approx(0.006).epsilon(1e-3));
    CHECK(calibration_from_json(j, "cal.json").host == f.calibration.host);
    CHECK(step_fit_report(f).find("MoE host time per layer forward: 6.00") != std::string::npos);
  }
  SUBCASE("runs the host does not hold back fit no host time, and the report says why") {
    const StepFit f = fit_moe_host_time(mbs1.cluster.gpu.name, mbs1.calibration, runs_with_host(0), predictor);
    CHECK(f.calibration.host.moe_forward_s < 1e-3 * kMaxMoeHostFitS);
    CHECK(f.at_bound);
    CHECK(step_fit_report(f).find("no host time helps") != std::string::npos);
  }
}
TEST_CASE("fit_moe_host_time: a step the host binds only above some host time is still fitted") {
  // A GPU-bound step of 1 s until the host's time to issue it exceeds that: flat up to 3.3 ms per
  // layer forward, then proportional. Measured 3% slower than the GPU alone: 3.4 ms. Golden-section
  // search alone, probing two points of the flat part, would walk towards zero.
  auto step = [](const Calibration& c) { return std::max(1.0, c.host.moe_forward_s / 0.0033); };
  auto predictor = [&step](std::size_t, const Calibration& c) { return step(c); };
  Calibration base;
  base.host.moe_forward_s = 0;
  const std::vector<StepFitRun> runs{{"flat-then-host", 0.0034 / 0.0033, 1.0, 0}};
  const StepFit f = fit_moe_host_time("H100-SXM5-80GB", base, runs, predictor);
  CHECK(f.calibration.host.moe_forward_s == doctest::Approx(0.0034).epsilon(1e-3));
  CHECK_FALSE(f.at_bound);
}
}
