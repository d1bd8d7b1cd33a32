#include <doctest/doctest.h>

#include <random>
#include <set>

#include "costmodel/calibration.h"
#include "profiler/calibrate.h"
#include "profiler/synthetic.h"
#include "test_util.h"

using namespace strata;
using namespace strata::profiler;

TEST_SUITE("profiler") {
TEST_CASE("error_stats: median and 90th percentile of absolute % errors") {
  auto s = error_stats({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  CHECK(s.count == 11);
  CHECK(s.median_pct == doctest::Approx(6));
  CHECK(s.p90_pct == doctest::Approx(10));
}

TEST_CASE("fit_calibration: recovers known coefficients from a synthetic H100 profile with 3% noise") {
  GpuSpec gpu = test::catalog().gpu("h100-sxm");
  KernelCoefficients truth;
  truth.gemm_efficiency = 0.62;
  truth.memory_efficiency = 0.86;
  truth.launch_overhead_us = 3.0;
  truth.gemm_k_overhead = 96;
  truth.attention_fwd_efficiency = 0.8;
  truth.attention_bwd_efficiency = 0.6;
  truth.fp8_gemm_factor = 0.8;
  truth.gemm_memory_efficiency = 0.7;
  truth.row_memory_efficiency = 0.6;
  truth.dram_overhead_us = 2.0;
  truth.under_utilized_overhead_us = 6.0;
  truth.under_utilized_gemm_factor = 1.1;
  truth.attention_fwd_fixed_blocks = 3.0;
  truth.attention_bwd_fixed_blocks = 8.0;
  SyntheticOptions so;
  so.noise = 0.03;
  so.seed = 42;
  ProfileDb p = synthetic_profile(test::catalog(), gpu, truth, so);
  auto samples = build_samples(p, gpu, p.devices.front());
  REQUIRE(samples.size() > 50);
  CalibrationFit fit = fit_calibration(samples, gpu, Calibration{});
  const auto& k = fit.calibration.kernel;
  MESSAGE("gemm_efficiency " << k.gemm_efficiency << " memory_efficiency " << k.memory_efficiency << " launch_us "
                             << k.launch_overhead_us << " k_overhead " << k.gemm_k_overhead << " attn fwd "
                             << k.attention_fwd_efficiency << " bwd " << k.attention_bwd_efficiency << " fp8 " << k.fp8_gemm_factor);
  MESSAGE("gemm_memory_efficiency " << k.gemm_memory_efficiency << " row_memory_efficiency " << k.row_memory_efficiency
                                    << " dram_us " << k.dram_overhead_us << " under_us " << k.under_utilized_overhead_us << " under_gemm " << k.under_utilized_gemm_factor
                                    << " fixed blocks " << k.attention_fwd_fixed_blocks << " / " << k.attention_bwd_fixed_blocks
                                    << " alu " << k.elementwise_alu_efficiency);
  CHECK(k.gemm_efficiency == doctest::Approx(0.62).epsilon(0.03));
  CHECK(k.memory_efficiency == doctest::Approx(0.86).epsilon(0.05));
  CHECK(k.launch_overhead_us == doctest::Approx(3.0).epsilon(0.25));
  // Each class's own coefficients, fitted on that class's samples alone.
  CHECK(k.row_memory_efficiency == doctest::Approx(0.6).epsilon(0.05));
  CHECK(k.dram_overhead_us == doctest::Approx(2.0).epsilon(0.3));
  CHECK(k.under_utilized_overhead_us == doctest::Approx(6.0).epsilon(0.15));
  CHECK(k.under_utilized_gemm_factor == doctest::Approx(1.1).epsilon(0.05));
  CHECK(k.attention_fwd_fixed_blocks == doctest::Approx(3.0).epsilon(0.3));
  CHECK(k.attention_bwd_fixed_blocks == doctest::Approx(8.0).epsilon(0.3));
  CHECK(k.elementwise_alu_efficiency < 1e-2);
  CHECK(k.l2_bandwidth_factor < 1.1);  // nor L2 reuse  // the truth has no ALU term: the fit finds (almost) none
  CHECK(k.gemm_k_overhead >= 64);
  CHECK(k.gemm_k_overhead <= 128);
  CHECK(k.attention_fwd_efficiency == doctest::Approx(0.8).epsilon(0.03));
  CHECK(k.attention_bwd_efficiency == doctest::Approx(0.6).epsilon(0.03));
  CHECK(k.fp8_gemm_factor == doctest::Approx(0.8).epsilon(0.03));  // fp8 GEMMs fitted on their own term
  // The kernel model with the fitted coefficients matches the profile to about the noise level,
  // and far better than the defaults.
  for (const auto& c : fit.comparison) {
    MESSAGE(c.cls << ": before median " << c.before.median_pct << "% p90 " << c.before.p90_pct << "%, after median "
                  << c.after.median_pct << "% p90 " << c.after.p90_pct << "%");
    if (c.cls == "all") {
      CHECK(c.after.median_pct < 3.5);
      CHECK(c.after.p90_pct < 8.0);
      CHECK(c.after.median_pct < c.before.median_pct);
    }
  }
  for (const auto& c : fit.classes)
    if (c.cls == "compute_bound" || c.cls == "dram_bound") {
      CHECK(c.used);
      CHECK(c.error.median_pct < 3.5);
    }
}

TEST_CASE("calibration_fit_to_json: the file reads back through calibration_from_json, the fit is kept under \"fit\"") {
  GpuSpec gpu = test::catalog().gpu("a100-80gb");
  KernelCoefficients truth;
  truth.gemm_efficiency = 0.7;
  ProfileDb p = synthetic_profile(test::catalog(), gpu, truth, SyntheticOptions{});
  CalibrationFit fit = fit_calibration(build_samples(p, gpu, p.devices.front()), gpu, Calibration{});
  fit.calibration.source = "test";
  auto j = calibration_fit_to_json(fit, gpu.name);
  CHECK(j.contains("fit"));
  CHECK(j["fit"]["classes"].size() == 5);
  CHECK(j["fit"]["classes"][0]["coefficients"].contains("gemm_efficiency"));
  CHECK(j["gpu"] == gpu.name);
  Calibration c = calibration_from_json(j, "cal.json");
  CHECK(c.kernel == fit.calibration.kernel);
  CHECK(c.source == "test");
  std::string report = calibration_report(fit, gpu.name);
  CHECK(report.find("kernel model vs profile") != std::string::npos);
  CHECK(report.find("compute_bound") != std::string::npos);
}

TEST_CASE("fit_calibration: a class without samples keeps the base coefficients and says so") {
  GpuSpec gpu = test::catalog().gpu("h100-sxm");
  Calibration base;
  base.kernel.attention_fwd_efficiency = 0.66;
  SyntheticOptions so;
  so.attention = false;
  ProfileDb p = synthetic_profile(test::catalog(), gpu, KernelCoefficients{}, so);
  CalibrationFit fit = fit_calibration(build_samples(p, gpu, p.devices.front()), gpu, base);
  CHECK(fit.calibration.kernel.attention_fwd_efficiency == 0.66);
  bool noted = false;
  for (const auto& n : fit.notes) noted = noted || n.find("attention_fwd_efficiency kept") != std::string::npos;
  CHECK(noted);
}

TEST_CASE("cross_validation_folds: a held-out kernel's model family is never in its fit set") {
  GpuSpec gpu = test::catalog().gpu("h100-sxm");
  ProfileDb p = synthetic_profile(test::catalog(), gpu, KernelCoefficients{}, SyntheticOptions{});
  auto samples = build_samples(p, gpu, p.devices.front());
  auto folds = cross_validation_folds(samples);
  REQUIRE(folds.size() >= 3);
  for (const auto& f : folds) {
    CHECK(f.fit.size() + f.held_out.size() == samples.size());
    std::set<std::size_t> fit(f.fit.begin(), f.fit.end());
    for (std::size_t i : f.held_out) {
      CHECK(fit.count(i) == 0);
      CHECK(shape_family(samples[i].op) == f.family);
    }
    for (std::size_t i : f.fit) CHECK(shape_family(samples[i].op) != f.family);
  }
  CHECK(shape_family(samples.front().op).find(' ') == std::string::npos);
}

TEST_CASE("cross_validate: each class predicted on held-out families to about the profile's noise") {
  GpuSpec gpu = test::catalog().gpu("h100-sxm");
  KernelCoefficients truth;
  truth.gemm_efficiency = 0.7;
  SyntheticOptions so;
  so.noise = 0.02;
  ProfileDb p = synthetic_profile(test::catalog(), gpu, truth, so);
  auto samples = build_samples(p, gpu, p.devices.front());
  CrossValidation cv = cross_validate(samples, gpu, Calibration{});
  REQUIRE(cv.classes.size() == 6);
  for (const auto& c : cv.classes) {
    MESSAGE(c.cls << ": in-sample " << c.in_sample.median_pct << "/" << c.in_sample.p90_pct << ", held-out " << c.held_out.median_pct
                  << "/" << c.held_out.p90_pct << " (n " << c.held_out.count << ")");
    if (c.held_out.count == 0) continue;
    CHECK(c.held_out.median_pct < 4.0);  // 2% log-normal noise: median |error| ~1.35%
    CHECK(c.held_out.count == c.in_sample.count);
  }
  nlohmann::json j = cross_validation_to_json(cv);
  for (const char* cls : {"compute_bound", "dram_bound", "under_utilized", "attention_fwd", "attention_bwd"}) {
    REQUIRE(j["classes"].contains(cls));
    CHECK(j["classes"][cls].contains("n"));
    CHECK(j["classes"][cls].contains("median_pct"));
    CHECK(j["classes"][cls].contains("p90_pct"));
  }
  CHECK(cross_validation_report(cv, gpu.name).find("held med") != std::string::npos);
}

TEST_CASE("fit_comm: NVLink efficiency from large all-reduce bus bandwidth") {
  GpuSpec gpu = test::catalog().gpu("h100-sxm");
  CalibrationFit fit;
  std::vector<CollectiveSample> s;
  for (double gbps : {350.0, 360.0, 370.0}) {
    CollectiveSample c;
    c.op.name = "all_reduce";
    c.op.bytes = 1e9;
    c.busbw_GBps = gbps;
    s.push_back(c);
  }
  fit_comm(s, gpu, fit);
  CHECK(fit.calibration.comm.nvlink_efficiency == doctest::Approx(360.0 / 450.0));
}
}
