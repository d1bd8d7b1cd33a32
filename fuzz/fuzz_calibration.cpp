// Calibration loader, then one small prediction with the coefficients it accepted.
#include "costmodel/calibration.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const strata::ClusterSpec cluster = strata::fuzz::catalog().cluster("dgx-a100-hdr");
  static const strata::ModelSpec model = strata::fuzz::catalog().model("gpt3-1.3b");
  try {
    const strata::json j = strata::parse_json_text(strata::fuzz::as_text(data, size), "fuzz.json");
    strata::Job job;
    job.calibration = strata::calibration_from_json(j, "fuzz.json");
    job.cluster = cluster;
    job.model = model;
    job.training.global_batch_size = 64;
    job.training.seq_length = 2048;
    job.plan.tp = 2;
    job.plan.pp = 2;
    job.plan.dp = 4;
    strata::fuzz::check_prediction(job);
  } catch (const strata::InputError&) {
  }
  return 0;
}
