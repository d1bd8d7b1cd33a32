// `strata calibrate --steps FILE`: measured training steps in the runs format, the fit of one
// kernel-throughput factor, and the calibration it writes, which must read back (as predict will).
#include "cli/step_calibration.h"
#include "formats/validation_runs.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const strata::json j = strata::parse_json_text(strata::fuzz::as_text(data, size), "steps.json");
    auto runs = strata::load_validation_runs(j, "steps.json", strata::fuzz::catalog());
    // The fit predicts every run some 45 times: keep an input to a handful of runs of ordinary
    // schedules (a run at the simulator's 2^20-chunk limit takes ~0.6 s a prediction, which is
    // real work, not a hang, but would trip libFuzzer's 20 s timeout).
    if (runs.size() > 4) runs.resize(4);
    std::erase_if(runs, [](const strata::ValidationRun& r) {
      return r.job && r.job->num_micro_batches() * r.job->plan.pp * r.job->plan.vpp > (1 << 14);
    });
    const strata::profiler::StepFit fit = strata::fit_step_times(std::move(runs), "steps.json");
    const strata::json written = strata::profiler::step_fit_to_json(fit, "steps.json");
    // What calibrate writes must read back and predict finite numbers.
    const strata::Calibration back = strata::calibration_from_json(written, "calibration.json");
    (void)strata::profiler::step_fit_report(fit);
    (void)back;
  } catch (const strata::InputError&) {
  }
  return 0;
}
