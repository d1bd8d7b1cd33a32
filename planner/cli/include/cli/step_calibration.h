#pragma once
// `strata calibrate --steps`: measured training steps in the published-runs format that
// `strata validate` reads, fitted by the profiler's step-time fit (profiler/step_calibration.h).
// This adapter sits here because it turns published-run records (formats/validation_runs.h) into
// the fit's inputs and predicts them with their null plan fields completed as `validate` does, and
// the profiler depends on the cost model only.
#include <string>
#include <vector>

#include "formats/validation_runs.h"
#include "profiler/step_calibration.h"

namespace strata {

// Fits the kernel-throughput factor (profiler::fit_step_times) or the MoE host time
// (profiler::fit_moe_host_time) to `runs`. Every run needs a job, a measured iteration time or
// tokens/s/GPU, and the same GPU; the host time needs at least one run with MoE layers. Otherwise an
// InputError naming `where` and the run.
profiler::StepFit fit_step_times(std::vector<ValidationRun> runs, const std::string& where,
                                 profiler::StepFitTarget target = profiler::StepFitTarget::throughput);

}  // namespace strata
