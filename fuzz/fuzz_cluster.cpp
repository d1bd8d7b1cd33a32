// Cluster spec loader, then one small prediction on the cluster it accepted.
#include "costmodel/cluster_spec.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const strata::GpuSpec gpu = strata::fuzz::catalog().gpu("h100-sxm");
  static const strata::ModelSpec model = strata::fuzz::catalog().model("gpt3-1.3b");
  try {
    const strata::json j = strata::parse_json_text(strata::fuzz::as_text(data, size), "fuzz.json");
    strata::Job job;
    job.cluster = strata::cluster_from_json(j, "fuzz.json", gpu);
    job.model = model;
    job.training.global_batch_size = 64;
    job.training.seq_length = 2048;
    job.plan.tp = 2;
    job.plan.pp = 2;
    job.plan.dp = 4;
    job.calibration = strata::default_calibration(gpu);
    strata::fuzz::check_prediction(job);
  } catch (const strata::InputError&) {
  }
  return 0;
}
