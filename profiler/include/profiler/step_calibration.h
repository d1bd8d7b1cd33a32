#pragma once
// Calibration from measured training steps. A team that has timed a few short runs of its own
// stack can fit one factor on the kernel throughputs so that the predicted iteration times match
// its measurements. The factor stands for what that software stack on that cluster achieves
// relative to the model's defaults (its kernel choices, the clocks its GPUs hold under their power
// limit) and needs no profiler; calibrate.h fits the kernel model term by term from a profile
// instead.
// The fit takes plain numbers and a predictor: whoever holds the runs (the published-run records
// of `strata calibrate --steps`, completed as `strata validate` completes them) predicts run i
// under a trial calibration, so this library needs nothing above the cost model.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/calibration.h"

namespace strata::profiler {

struct StepFitRun {
  std::string id;
  double measured_s = 0;   // measured iteration time (or derived from the measured tokens/s/GPU)
  double before_s = 0;     // predicted with the base calibration
  double after_s = 0;      // predicted with the fitted one
};

// What a step fit adjusts: one factor on the kernel throughputs, or the host time of a MoE layer's
// forward (Calibration::host.moe_forward_s, for MoE stacks whose forward waits on the host).
enum class StepFitTarget { throughput, moe_host };

struct StepFit {
  StepFitTarget target = StepFitTarget::throughput;
  std::string gpu;               // catalog name of the GPU every run used
  Calibration base;              // what predict uses for that GPU without this fit
  Calibration calibration;       // base with the fitted figure applied
  double throughput_scale = 1;   // multiplies gemm_efficiency and the memory efficiencies (each capped at 1)
  bool at_bound = false;         // the best value is at the edge of the searched range
  std::vector<StepFitRun> runs;
  double mape_before_pct = 0, mape_after_pct = 0;  // of the iteration time over the fitted runs
};

// The base calibration with gemm_efficiency and the bandwidth fraction of every DRAM access
// pattern multiplied by `scale` (each capped at 1; attention efficiencies are relative to the GEMM
// rate and follow it).
Calibration scale_throughput(const Calibration& base, double scale);

// The predicted iteration time of runs[run] with calibration `c`.
using StepTimePredictor = std::function<double(std::size_t run, const Calibration& c)>;

// Fits the factor that minimizes the squared log-ratio of predicted to measured iteration time
// over `runs` (golden-section search over 0.2..1/max efficiency). `runs` come with id, measured_s
// (> 0) and before_s (predicted with `base`), all on `gpu`; the fit fills after_s. Throws
// std::invalid_argument when `runs` is empty or a measured time is not positive (the caller checks
// its inputs and names the file and run).
StepFit fit_step_times(const std::string& gpu, const Calibration& base, std::vector<StepFitRun> runs,
                       const StepTimePredictor& predict_time);

// Fits host.moe_forward_s (0 .. kMaxMoeHostFitS) the same way, the kernel coefficients left as in
// `base`. Each predicted time grows with the host time once it exceeds a MoE layer's GPU forward,
// so each run's squared log error falls then rises; at_bound at 0 means the host time binds in no
// run (their forwards are longer than any host time that would help), which a run at micro-batch 1
// measures better. Same preconditions and errors as fit_step_times.
inline constexpr double kMaxMoeHostFitS = 0.2;
StepFit fit_moe_host_time(const std::string& gpu, const Calibration& base, std::vector<StepFitRun> runs,
                          const StepTimePredictor& predict_time);

// The calibration JSON (as `strata calibrate --profile` writes it, with `gpu` and a `fit` section
// listing the runs used) and a readable report.
nlohmann::json step_fit_to_json(const StepFit& fit, const std::string& file);
std::string step_fit_report(const StepFit& fit);

}  // namespace strata::profiler
