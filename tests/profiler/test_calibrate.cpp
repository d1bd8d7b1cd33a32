#include <doctest/doctest.h>

#include <random>

#include "costmodel/calibration.h"
#include "profiler/calibrate.h"
#include "profiler/synthetic.h"
#include "test_util.h"

using namespace strata;
using namespace strata::profiler;

TEST_SUITE("profiler") {
TEST_CASE("fit_nonnegative: recovers the coefficients of a noiseless linear model, dropping negative ones") {
  std::vector<double> x1, x2, one, y;
  for (int i = 1; i <= 20; ++i) {
    x1.push_back(i * 1e-4);
    x2.push_back((i % 7) * 3e-5);
    one.push_back(1.0);
    y.push_back(1.3 * x1.back() + 0.4 * x2.back() + 5e-6);
  }
  auto c = fit_nonnegative({x1, x2, one}, y);
  CHECK(c[0] == doctest::Approx(1.3).epsilon(1e-9));
  CHECK(c[1] == doctest::Approx(0.4).epsilon(1e-9));
  CHECK(c[2] == doctest::Approx(5e-6).epsilon(1e-9));
  // y that would need a negative intercept: the intercept is dropped, not made negative.
  std::vector<double> y2;
  for (double v : x1) y2.push_back(2.0 * v - 1e-6);
  auto d = fit_nonnegative({x1, one}, y2);
  CHECK(d[0] == doctest::Approx(2.0).epsilon(0.05));
  CHECK(d[1] == 0.0);
}

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
  CHECK(k.gemm_efficiency == doctest::Approx(0.62).epsilon(0.03));
  CHECK(k.memory_efficiency == doctest::Approx(0.86).epsilon(0.03));
  CHECK(k.launch_overhead_us == doctest::Approx(3.0).epsilon(0.25));
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
