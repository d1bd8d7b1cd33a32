#pragma once
// Calibration from measured training steps. A team that has timed a few short runs of its own
// stack (iteration times in the published-runs format that `strata validate` reads) can fit one
// factor on the kernel throughputs so that the predicted iteration times match its measurements.
// The factor stands for what that software stack on that cluster achieves relative to the model's
// defaults (its kernel choices, the clocks its GPUs hold under their power limit) and needs no
// profiler; `strata calibrate --profile` fits the kernel model term by term instead.
// It sits here, not beside the profile fit in profiler/: it fits on published-run records and
// predicts them with their null plan fields completed (formats/validation_runs.h), and the profiler
// depends on the cost model only.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/calibration.h"
#include "formats/validation_runs.h"

namespace strata {

struct StepFitRun {
  std::string id;
  double measured_s = 0;   // measured iteration time (or derived from the measured tokens/s/GPU)
  double before_s = 0;     // predicted with the base calibration
  double after_s = 0;      // predicted with the fitted one
};

struct StepFit {
  std::string gpu;               // catalog name of the GPU every run used
  Calibration base;              // what predict uses for that GPU without this fit
  Calibration calibration;       // base with the fitted factor applied
  double throughput_scale = 1;   // multiplies gemm_efficiency and the memory efficiencies (each capped at 1)
  bool at_bound = false;         // the best factor is at the edge of the searched range
  std::vector<StepFitRun> runs;
  double mape_before_pct = 0, mape_after_pct = 0;  // of the iteration time over the fitted runs
};

// The base calibration with gemm_efficiency and the bandwidth fraction of every DRAM access
// pattern multiplied by `scale` (each capped at 1; attention efficiencies are relative to the GEMM
// rate and follow it).
Calibration scale_throughput(const Calibration& base, double scale);

// Fits the factor that minimizes the squared log-ratio of predicted to measured iteration time
// over `runs` (golden-section search over 0.2..1/max efficiency). Every run needs a job, a
// measured iteration time or tokens/s/GPU, and the same GPU; otherwise an InputError naming
// `where` and the run.
StepFit fit_step_times(std::vector<ValidationRun> runs, const std::string& where);

// The calibration JSON (as `strata calibrate --profile` writes it, with `gpu` and a `fit` section
// listing the runs used) and a readable report.
nlohmann::json step_fit_to_json(const StepFit& fit, const std::string& file);
std::string step_fit_report(const StepFit& fit);

}  // namespace strata
