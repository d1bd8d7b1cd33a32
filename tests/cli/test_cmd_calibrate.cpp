#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "costmodel/json_reader.h"
#include "profiler/profile_db.h"
#include "profiler/synthetic.h"
#include "test_util.h"

using namespace strata;

namespace {
std::string temp(const std::string& name) { return (std::filesystem::temp_directory_path() / name).string(); }
}  // namespace

TEST_SUITE("cli") {
TEST_CASE("strata calibrate: fits a profile, writes a calibration that strata predict --calibration uses") {
  GpuSpec gpu = test::catalog().gpu("h100-sxm");
  KernelCoefficients truth;
  truth.gemm_efficiency = 0.6;
  truth.memory_efficiency = 0.9;
  auto profile = profiler::synthetic_profile(test::catalog(), gpu, truth, profiler::SyntheticOptions{});
  profile.devices.front().name = "NVIDIA H100 80GB HBM3";  // as the driver names it
  const std::string prof = temp("strata_cli_h100.profile.json"), cal = temp("strata_cli_h100.calibration.json");
  profiler::save_profile(profile, prof);

  const std::string layers = temp("strata_cli_layers.json");
  {
    std::ofstream f(layers);
    f << R"({"schema_version": 1, "measurements": [{"model": "llama3-8b", "tp": 1, "seq": 4096, "layers": 2, "step_time_s": 0.05}]})";
  }
  auto r = test::run_strata("calibrate --profile " + prof + " -o " + cal + " --layers " + layers);
  INFO(r.out);
  REQUIRE_MESSAGE(r.exit_code == 0, r.out);  // a crash shows its report
  CHECK(r.out.find("Calibration of H100-SXM5-80GB") != std::string::npos);
  CHECK(r.out.find("kernel model vs profile") != std::string::npos);
  CHECK(r.out.find("wrote " + cal) != std::string::npos);
  CHECK(r.out.find("layer training steps (PyTorch) vs kernel model") != std::string::npos);
  json j = load_json_file(cal);
  CHECK(j["kernel"]["gemm_efficiency"].get<double>() == doctest::Approx(0.6).epsilon(0.03));
  CHECK(j["kernel"]["memory_efficiency"].get<double>() == doctest::Approx(0.9).epsilon(0.03));
  CHECK(j.contains("fit"));

  const std::string job = "--model llama3-8b --gpu h100 --gpus 8 --global-batch 64 --seq 4096 --tp 2 --pp 1 --dp 4 --mbs 1 --dist-opt";
  auto plain = test::run_strata("predict " + job + " --json");
  auto calibrated = test::run_strata("predict " + job + " --json --calibration " + cal);
  INFO(calibrated.out);
  REQUIRE(plain.exit_code == 0);
  REQUIRE(calibrated.exit_code == 0);
  json a = json::parse(plain.out), b = json::parse(calibrated.out);
  CHECK(b["calibration"]["kernel"]["gemm_efficiency"].get<double>() == doctest::Approx(0.6).epsilon(0.03));
  // Lower GEMM efficiency than the 0.75 default: a slower iteration.
  CHECK(b["prediction"]["iteration_time_s"].get<double>() > a["prediction"]["iteration_time_s"].get<double>());
  std::filesystem::remove(prof);
  std::filesystem::remove(cal);
  std::filesystem::remove(layers);
}

TEST_CASE("strata calibrate --cross-validate: each class's error on held-out model families, as text and JSON") {
  GpuSpec gpu = test::catalog().gpu("h100-sxm");
  KernelCoefficients truth;
  truth.gemm_efficiency = 0.6;
  auto profile = profiler::synthetic_profile(test::catalog(), gpu, truth, profiler::SyntheticOptions{});
  const std::string prof = temp("strata_cli_cv.profile.json");
  profiler::save_profile(profile, prof);
  auto text = test::run_strata("calibrate --profile " + prof + " --gpu h100-sxm --cross-validate");
  INFO(text.out);
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("held-out families: ") != std::string::npos);
  CHECK(text.out.find("under_utilized") != std::string::npos);
  auto js = test::run_strata("calibrate --profile " + prof + " --gpu h100-sxm --cross-validate --json");
  REQUIRE(js.exit_code == 0);
  json j = json::parse(js.out);
  for (const char* cls : {"compute_bound", "dram_bound", "under_utilized", "attention_fwd", "attention_bwd"}) {
    INFO(cls);
    REQUIRE(j["classes"].contains(cls));
    CHECK(j["classes"][cls]["n"].get<int>() > 0);
    CHECK(j["classes"][cls]["median_pct"].get<double>() < 5.0);  // 2% noise in the synthetic profile
    CHECK(j["classes"][cls]["p90_pct"].get<double>() >= j["classes"][cls]["median_pct"].get<double>());
  }
  // A profile with attention only: the other classes have no samples and no error (null, "-").
  auto att = test::run_strata("calibrate --profile " + std::string(STRATA_SOURCE_DIR) +
                              "/configs/measurements/h100-sxm-2026-11-22.attention-scaling.profile.json --gpu h100-sxm --cross-validate --json");
  REQUIRE(att.exit_code == 0);
  json aj = json::parse(att.out);
  CHECK(aj["classes"]["compute_bound"]["n"] == 0);
  CHECK(aj["classes"]["compute_bound"]["median_pct"].is_null());
  CHECK(aj["classes"]["attention_fwd"]["n"] == 24);
  CHECK(aj["held_out_families"].size() == 3);
  // It fits and reports; it writes no calibration.
  auto with_output = test::run_strata("calibrate --profile " + prof + " --cross-validate -o " + temp("strata_cli_cv.json"));
  CHECK(with_output.exit_code != 0);
  CHECK_FALSE(std::filesystem::exists(temp("strata_cli_cv.json")));
  std::filesystem::remove(prof);
}

TEST_CASE("strata calibrate: clear errors for a missing file, an unknown device and a profile without labels") {
  auto r = test::run_strata("calibrate --profile /nonexistent/p.json");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("/nonexistent/p.json: cannot open the file for reading") != std::string::npos);

  profiler::ProfileDb p;
  p.devices.emplace_back();
  p.devices.back().name = "Imaginary GPU 9000";
  p.devices.back().sm_count = 10;
  const std::string path = temp("strata_cli_unknown.profile.json");
  profiler::save_profile(p, path);
  r = test::run_strata("calibrate --profile " + path);
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("the device \"Imaginary GPU 9000\" matches no GPU in configs/gpus; name it with --gpu") != std::string::npos);

  r = test::run_strata("calibrate --gpu h100 --profile " + path);
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("no kernel records labelled") != std::string::npos);
  std::filesystem::remove(path);
}
}

TEST_SUITE("cli") {
TEST_CASE("strata calibrate --steps --fit moe-host: the host time of a MoE layer's forward, from one step at micro-batch 1") {
  const std::string runs = test::data_file("moe_steps.json"), cal = temp("strata_cli_moe_host.calibration.json");
  auto r = test::run_strata("calibrate --steps " + runs + " --fit moe-host -o " + cal);
  INFO(r.out);
  REQUIRE_MESSAGE(r.exit_code == 0, r.out);  // a crash shows its report
  CHECK(r.out.find("MoE host time per layer forward: ") != std::string::npos);
  json j = load_json_file(cal);
  CHECK(j["fit"]["target"] == "moe_host");
  const double host = j["host"]["moe_forward_s"].get<double>();
  CHECK(host > 0.001);
  CHECK(host < 0.02);
  CHECK(j["fit"]["runs"][0]["predicted_after_s"].get<double>() ==
        doctest::Approx(j["fit"]["runs"][0]["measured_s"].get<double>()).epsilon(1e-3));
  // The same stack at micro-batch 2: the calibration makes it slower than without any host time,
  // by less than micro-batch 1 (each forward has more GPU work to hide the host behind).
  const std::string no_host = temp("strata_cli_no_host.calibration.json");
  {
    std::ofstream f(no_host);
    f << R"({"host": {"moe_forward_fixed_s": 0, "moe_forward_per_expert_s": 0, "moe_backward_fixed_s": 0,
                      "moe_backward_per_expert_s": 0, "moe_attention_forward_s": 0, "moe_attention_backward_s": 0}})";
    REQUIRE(f.good());
  }
  const std::string job = "predict --model qwen3-30b-a3b --gpu h100-sxm --gpus 16 --global-batch 1024 --seq 4096 --dp 16 --ep 16 "
                          "--dist-opt --precision fp8 --moe-load-imbalance 1 --moe-grouped-gemm --moe-token-dedup --json";
  auto time_of = [&](const std::string& extra) {
    auto p = test::run_strata(job + extra);
    REQUIRE_MESSAGE(p.exit_code == 0, p.out);
    return json::parse(p.out)["prediction"]["iteration_time_s"].get<double>();
  };
  const double one = time_of(" --mbs 1 --calibration " + no_host), one_host = time_of(" --mbs 1 --calibration " + cal);
  const double two = time_of(" --mbs 2 --recompute full --calibration " + no_host),
               two_host = time_of(" --mbs 2 --recompute full --calibration " + cal);
  CHECK(one_host > one);
  CHECK(two_host >= two);
  CHECK(two_host / two < one_host / one);
  // Dense runs have no MoE layer to fit; the target must be one of the two.
  auto dense = test::run_strata("calibrate --steps " + test::data_file("validation_runs_small.json") +
                                " --only a100_unstated_memory --fit moe-host");
  CHECK(dense.exit_code == 1);
  CHECK(dense.out.find("--fit moe-host needs runs of a mixture-of-experts model") != std::string::npos);
  // Fitting a throughput factor to such runs points at the host-time fit.
  auto factor = test::run_strata("calibrate --steps " + runs);
  REQUIRE(factor.exit_code == 0);
  CHECK(factor.out.find("--fit moe-host fits that instead") != std::string::npos);
  auto bad = test::run_strata("calibrate --steps " + runs + " --fit everything");
  CHECK(bad.exit_code != 0);
  CHECK(bad.out.find("--fit") != std::string::npos);
  std::filesystem::remove(cal);
  std::filesystem::remove(no_host);
}

TEST_CASE("strata calibrate --steps: fits measured step times, validate --calibration leaves the fitted runs out") {
  const std::string runs = test::data_file("validation_runs_small.json"), cal = temp("strata_cli_steps.calibration.json");
  auto r = test::run_strata("calibrate --steps " + runs + " --only a100_unstated_memory -o " + cal);
  INFO(r.out);
  REQUIRE_MESSAGE(r.exit_code == 0, r.out);  // a crash shows its report
  CHECK(r.out.find("Calibration of A100-SXM4-80GB from 1 measured training step(s)") != std::string::npos);
  CHECK(r.out.find("one run fixes the fitted figure exactly") != std::string::npos);
  json j = load_json_file(cal);
  CHECK(j["gpu"] == "A100-SXM4-80GB");
  CHECK(j["fit"]["runs"][0]["id"] == "a100_unstated_memory_omnipath_zero1");
  // One run: the fit reproduces it.
  CHECK(j["fit"]["runs"][0]["predicted_after_s"].get<double>() ==
        doctest::Approx(j["fit"]["runs"][0]["measured_s"].get<double>()).epsilon(1e-3));

  auto js = test::run_strata("calibrate --steps " + runs + " --only a100_unstated_memory --json");
  REQUIRE(js.exit_code == 0);
  json printed = json::parse(js.out);
  CHECK(printed["fit"]["kind"] == "step_times");
  CHECK(printed["kernel"] == j["kernel"]);

  auto v = test::run_strata("validate --runs " + runs + " --calibration " + cal);
  INFO(v.out);
  REQUIRE(v.exit_code == 0);
  CHECK(v.out.find("applied to 3 of 8 runs (those on A100-SXM4-80GB)") != std::string::npos);
  CHECK(v.out.find("marked \"fit\", are not counted") != std::string::npos);
  CHECK(v.out.find("     fit  ") != std::string::npos);

  auto vj = test::run_strata("validate --runs " + runs + " --only a100_unstated --json --calibration " + cal);
  REQUIRE(vj.exit_code == 0);
  CHECK(json::parse(vj.out.substr(vj.out.find('{')))["calibration_fit_run"] == true);

  // The calibration moves the other A100 run's prediction in the same direction as the fitted one.
  auto plain = test::run_strata("validate --runs " + runs + " --only sc21_gpt3 --json");
  auto calibrated = test::run_strata("validate --runs " + runs + " --only sc21_gpt3 --json --calibration " + cal);
  REQUIRE(plain.exit_code == 0);
  REQUIRE(calibrated.exit_code == 0);
  const double scale = j["fit"]["throughput_scale"].get<double>();
  const double before = json::parse(plain.out.substr(plain.out.find('{')))["iteration_time_s"].get<double>();
  const double after = json::parse(calibrated.out.substr(calibrated.out.find('{')))["iteration_time_s"].get<double>();
  CHECK((scale < 1) == (after > before));
  std::filesystem::remove(cal);
}

TEST_CASE("strata calibrate: --steps and --profile are exclusive, and --steps needs measured, predictable runs") {
  const std::string runs = test::data_file("validation_runs_small.json");
  auto r = test::run_strata("calibrate");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("expected --profile FILE (CUPTI profile) or --steps FILE") != std::string::npos);
  r = test::run_strata("calibrate --steps " + runs + " --profile p.json");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("excludes") != std::string::npos);
  r = test::run_strata("calibrate --only x --profile p.json");
  CHECK(r.exit_code == 1);
  r = test::run_strata("calibrate --steps " + runs + " --only no_such_run");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("no runs to calibrate on (check --only)") != std::string::npos);
  r = test::run_strata("calibrate --steps " + runs);  // A100 and H100 runs together
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("calibrate one GPU (one cluster) at a time") != std::string::npos);
  r = test::run_strata("calibrate --steps " + runs + " --only a100_40gb_in_text");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("run a100_40gb_in_text: expected a measured iteration time") != std::string::npos);
  r = test::run_strata("calibrate --steps " + runs + " --only sc21 --layers l.json");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("--layers: applies to --profile, not to --steps") != std::string::npos);
}
}

TEST_SUITE("cli") {
TEST_CASE("the measured-steps example of the docs calibrates and validates") {
  const std::string example = std::string(STRATA_SOURCE_DIR) + "/docs/examples/measured_steps.json";
  auto r = test::run_strata("calibrate --steps " + example);
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("Calibration of H100-SXM5-80GB from 2 measured training step(s)") != std::string::npos);
  // Records with only an iteration time get a measured tokens/s/GPU, so validate shows their errors.
  auto v = test::run_strata("validate --runs " + example);
  INFO(v.out);
  CHECK(v.exit_code == 0);
  CHECK(v.out.find("my_cluster") != std::string::npos);
  CHECK(v.out.find("(2 runs)") != std::string::npos);
}
}
