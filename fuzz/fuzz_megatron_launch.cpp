// Megatron-LM launch reader (strata predict/plan --megatron-args): shell words, flags, layouts.
#include "costmodel/model_spec.h"
#include "fuzz_common.h"
#include "formats/plan_input.h"
#include "launch/megatron_import.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const strata::MegatronLaunch l = strata::read_megatron_launch(strata::fuzz::as_text(data, size), "fuzz.sh", nullptr);
    strata::validate_model(l.model, "fuzz.sh");
    strata::Job job;
    job.model = l.model;
    job.training = l.training;
    job.plan = l.plan;
    job.runtime = l.runtime;
    job.cluster = strata::fuzz::catalog().cluster("dgx-h100-ndr");
    job.calibration = strata::default_calibration(job.cluster.gpu);
    job.plan.dp = 1;
    if (job.training.global_batch_size == 0) job.training.global_batch_size = job.plan.micro_batch_size;
    // What the reader accepts and the plan checks let through must predict to finite numbers.
    if (!strata::check_plan_input(job)) strata::fuzz::check_prediction(job);
  } catch (const strata::InputError&) {
  }
  return 0;
}
