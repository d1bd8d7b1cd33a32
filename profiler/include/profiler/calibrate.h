#pragma once
// Fits the kernel model's coefficients to a profile, per SEER class, with weighted (relative-error)
// non-negative least squares (Eigen):
//   compute-bound:  t = a * X_c + c        X_c = flops / (peak * wave_util * k/(k + k_overhead))
//   DRAM-bound:     t = b * X_m + c        X_m = bytes / hbm_bandwidth
//   under-utilized: t = a_u * X_c + b_u * X_m + c_u   (its own linear model)
//   attention:      t - launch = s * X_c  (fwd and bwd separately)
// and maps them onto KernelCoefficients: gemm_efficiency = 1/a, memory_efficiency = 1/b,
// launch_overhead_us = the relative-error-weighted mean residual of all samples given a and b
// (the common intercept), attention_{fwd,bwd}_efficiency = a / s, gemm_k_overhead by a grid search
// minimizing the compute-bound error. A class with fewer than kMinSamples keeps the default.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/calibration.h"
#include "costmodel/gpu_spec.h"
#include "profiler/classify.h"

namespace strata::profiler {

struct ErrorStats {
  int count = 0;
  double median_pct = 0;  // median absolute % error
  double p90_pct = 0;     // 90th percentile absolute % error
};
ErrorStats error_stats(std::vector<double> abs_pct_errors);

struct ClassFit {
  std::string cls;                 // "compute_bound", "dram_bound", "under_utilized", "attention_fwd", ...
  std::vector<std::string> terms;  // names of the coefficients ("flops_term", "bytes_term", "intercept_s")
  std::vector<double> coefficients;
  ErrorStats error;                // of this class's own fit on its samples
  bool used = false;               // enough samples to fit
};

struct CalibrationFit {
  Calibration calibration;         // defaults where a class had too few samples
  std::vector<ClassFit> classes;
  std::vector<Sample> samples;
  // Kernel-model error per measured class, with the defaults and with the fitted coefficients.
  struct Comparison {
    std::string cls;
    ErrorStats before, after;
    // Medians over the class's samples: achieved fraction of peak FLOP/s and of HBM bandwidth,
    // and waves (CTAs / (SMs x CTAs per SM)).
    double flops_fraction = 0, bandwidth_fraction = 0, waves = 0;
  };
  std::vector<Comparison> comparison;
  std::vector<std::string> notes;
};

struct CalibrateOptions {
  std::string gpu_name;    // catalog name (--gpu); empty: from the profile's device name
  std::string source;      // the "source" string of the calibration
  static constexpr int kMinSamples = 3;
};

// Fits the coefficients of `gpu` to `samples` (from build_samples), starting from `base`
// (coefficients of classes without samples are kept from base).
CalibrationFit fit_calibration(const std::vector<Sample>& samples, const GpuSpec& gpu, const Calibration& base);
// NCCL bus bandwidth -> CommCoefficients::nvlink_efficiency (large messages, intra-node).
void fit_comm(const std::vector<CollectiveSample>& samples, const GpuSpec& gpu, CalibrationFit& fit);

// The calibration JSON (calibration_to_json) plus "gpu", "notes" and the raw per-class fit under
// "fit", which calibration_from_json accepts and ignores.
nlohmann::json calibration_fit_to_json(const CalibrationFit& fit, const std::string& gpu_name);
// Human-readable report: classes, fits, errors before/after.
std::string calibration_report(const CalibrationFit& fit, const std::string& gpu_name);

// Relative-error weighted least squares with non-negative coefficients (all subsets of the
// columns are tried; for the handful of columns used here that is exact). Returns the
// coefficients (0 for dropped columns).
std::vector<double> fit_nonnegative(const std::vector<std::vector<double>>& columns, const std::vector<double>& y);

}  // namespace strata::profiler
