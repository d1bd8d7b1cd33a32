#pragma once
// Fits the coefficients of each SEER class's kernel model (costmodel/kernel_model.h) to a
// profile: every sample is timed by the model its class chooses, and that class's coefficients
// are fitted on that class's samples alone, by Levenberg-Marquardt on the relative error (Eigen,
// log-parameters so they stay positive):
//   compute-bound:  gemm_efficiency, gemm_k_overhead, launch_overhead_us (+ fp8_gemm_factor when
//                   there are fp8 GEMMs and others);
//   DRAM-bound:     the bandwidth fraction of each access pattern that has samples, row_rows_per_sm,
//                   elementwise_alu_efficiency, l2_bandwidth_factor, dram_overhead_us;
//   under-utilized: under_utilized_overhead_us, under_utilized_gemm_factor, sm_load_bytes_per_clock;
//   attention:      attention_{fwd,bwd}_efficiency and _fixed_blocks, each direction on its own.
// A class (or pattern) with fewer than kMinSamples keeps the base coefficients and says so.
// cross_validate holds out one model's shapes at a time: the honest error of each class.
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
  std::vector<std::string> terms;  // the KernelCoefficients fields fitted for this class
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

// Leave-one-shape-family-out cross-validation: a sample's family is the model its shapes came
// from (the first word of OpLabel::source, "llama3-70b tp=8 seq=8192 fwd" -> "llama3-70b"). For
// each family, the coefficients are fitted on the other families' samples and the family's own
// samples are predicted; in-sample errors come from one fit on everything.
std::string shape_family(const OpLabel& op);
struct CrossValidationFold {
  std::string family;
  std::vector<std::size_t> fit, held_out;  // indices into the samples
};
std::vector<CrossValidationFold> cross_validation_folds(const std::vector<Sample>& samples);
struct CrossValidation {
  struct ClassErrors {
    std::string cls;
    ErrorStats in_sample, held_out;
  };
  std::vector<ClassErrors> classes;  // compute_bound, dram_bound, under_utilized, attention_fwd, attention_bwd, all
  std::vector<std::string> families;
};
CrossValidation cross_validate(const std::vector<Sample>& samples, const GpuSpec& gpu, const Calibration& base);
// {"classes": {"compute_bound": {"n", "median_pct", "p90_pct"}, ...}} (held-out errors; null
// errors for a class without samples), with the in-sample errors under "in_sample" and the
// families under "held_out_families".
nlohmann::json cross_validation_to_json(const CrossValidation& cv);
std::string cross_validation_report(const CrossValidation& cv, const std::string& gpu_name);

}  // namespace strata::profiler
