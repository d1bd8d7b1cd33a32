#include "cli/step_calibration.h"

#include <algorithm>

#include "costmodel/errors.h"

namespace strata {

profiler::StepFit fit_step_times(std::vector<ValidationRun> runs, const std::string& where, profiler::StepFitTarget target) {
  if (runs.empty()) throw InputError(where, "/", "no runs to calibrate on (check --only)");
  if (target == profiler::StepFitTarget::moe_host &&
      std::none_of(runs.begin(), runs.end(), [](const ValidationRun& r) { return r.job && r.job->model.num_moe_layers() > 0; }))
    throw InputError(where, "/", "--fit moe-host needs runs of a mixture-of-experts model; none of the selected runs has MoE layers");
  std::string gpu;
  Calibration base;
  std::vector<profiler::StepFitRun> measured;
  for (auto& run : runs) {
    const std::string at = "run " + run.id;
    if (!run.job) throw InputError(where, at, "cannot be predicted: " + run.error);
    if (!run.measured_iteration_time_s && !run.measured_tokens_per_sec_per_gpu)
      throw InputError(where, at, "expected a measured iteration time (meas_iteration_time_s) or tokens/s/GPU to calibrate on");
    const std::string& run_gpu = run.job->cluster.gpu.name;
    if (gpu.empty()) {
      gpu = run_gpu;
      base = run.job->calibration;
    } else if (run_gpu != gpu) {
      throw InputError(where, at + "/gpu_type",
                       "ran on " + run_gpu + ", the other runs on " + gpu + "; calibrate one GPU (one cluster) at a time, select runs with --only");
    }
    // Completes the record's null plan fields (kept in run.job for the predictions of the fit).
    Prediction p = predict_validation_run(run);
    if (!(p.iteration_time_s > 0)) throw InputError(where, at, "cannot be predicted: " + p.reason);
    profiler::StepFitRun r;
    r.id = run.id;
    r.before_s = p.iteration_time_s;
    // tokens/s/GPU x iteration time is fixed by the job (global batch x sequence / GPUs).
    r.measured_s = run.measured_iteration_time_s ? *run.measured_iteration_time_s
                                                 : p.iteration_time_s * p.tokens_per_sec_per_gpu / *run.measured_tokens_per_sec_per_gpu;
    measured.push_back(r);
  }
  auto predict_time = [&runs](std::size_t i, const Calibration& c) {
    runs[i].job->calibration = c;
    return predict_validation_run(runs[i]).iteration_time_s;
  };
  return target == profiler::StepFitTarget::moe_host ? profiler::fit_moe_host_time(gpu, base, std::move(measured), predict_time)
                                                     : profiler::fit_step_times(gpu, base, std::move(measured), predict_time);
}

}  // namespace strata
