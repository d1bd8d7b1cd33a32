#include <doctest/doctest.h>

#include "costmodel/predictor.h"
#include "search/memory_bound.h"
#include "test_util.h"

using namespace strata;

TEST_SUITE("search") {
TEST_CASE("estimate_plan_memory: equals the predictor's memory without simulating the pipeline") {
  Job job = test::gpt3_175b_job();
  SUBCASE("1F1B") {}
  SUBCASE("interleaved") { job.plan.vpp = 3; }
  SUBCASE("interleaved, micro-batches pp does not divide (groups of 20 micro-batches)") {
    job.plan.vpp = 3;
    job.training.global_batch_size = 1600;  // 200 micro-batches over pp 16
  }
  SUBCASE("uneven stages, partial full recompute") {
    job.plan.stage_layers = {4, 7, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 7};
    job.plan.recompute = {RecomputeGranularity::full, 2};
  }
  SUBCASE("MoE all-to-all overlap: Megatron-Core's combined 1F1B warms up one more micro-batch") {
    job.model = test::catalog().model("mixtral-8x7b");
    job.plan.pp = 4;
    job.plan.vpp = 2;
    job.plan.dp = 32;
    job.plan.ep = 8;
    job.runtime.moe_a2a_overlap = true;
  }
  SUBCASE("more stages than micro-batches in flight") {
    job.training.global_batch_size = 64;
    job.plan.micro_batch_size = 2;
  }
  const Prediction pred = predict(job);
  const MemoryEstimate est = estimate_plan_memory(job);
  CHECK(est.GiB == doctest::Approx(pred.memory_per_gpu_GiB).epsilon(1e-12));
  REQUIRE(est.stage_GiB.size() == pred.stages.size());
  for (std::size_t s = 0; s < pred.stages.size(); ++s) {
    CHECK(est.stage_GiB[s] == doctest::Approx(pred.stages[s].memory.total_GiB).epsilon(1e-12));
    CHECK(pipeline_peak_in_flight(job.plan.pp, job.plan.vpp, static_cast<int>(s), job.num_micro_batches(),
                                  interleaved_microbatch_group(job.plan, job.num_micro_batches()), combined_1f1b(job)) ==
          pred.stages[s].in_flight_micro_batches);
  }
}
}
