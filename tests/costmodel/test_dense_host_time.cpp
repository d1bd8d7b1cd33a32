// The host's time to issue a dense decoder layer (dense_layer_host_time): it binds only where the
// host issues a layer slower than the GPU runs it, and then the GPU waits for the difference.
#include <algorithm>
#include <string>

#include <doctest/doctest.h>

#include "test_util.h"
#include "costmodel/calibration.h"
#include "costmodel/predictor.h"

using namespace strata;

namespace {

// GPT-3 1.3B at tp 8 on one H100 node: 2048-wide layers split eight ways run for a fraction of a
// millisecond, far less than Megatron's Python takes to issue them.
Job small_layers_at_tp8() {
  Job job = test::workload("gpt3-1.3b", "dgx-h100-ndr", 8, 2048);
  job.calibration = default_calibration(job.cluster.gpu);
  job.plan.tp = 8;
  job.plan.sequence_parallel = true;
  return job;
}

}  // namespace

TEST_CASE("dense layers: the attention block's and one MLP's measured host time, none for FSDP or a whole-step graph") {
  Job job = small_layers_at_tp8();
  const HostCoefficients& h = job.calibration.host;
  DenseHostTime t = dense_layer_host_time(job);
  CHECK(t.forward_s == h.moe_attention_forward_s + h.moe_forward_per_expert_s);
  CHECK(t.backward_s == h.moe_attention_backward_s + h.moe_backward_per_expert_s);
  CHECK(t.graph_replays == 0);
  // CUDA graphs of the attention block and of the MLP replay each in place of its ops.
  job.runtime.cuda_graph_modules = kCudaGraphAttn | kCudaGraphMlp;
  t = dense_layer_host_time(job);
  CHECK(t.forward_s == 2 * h.cuda_graph_replay_s);
  CHECK(t.backward_s == 2 * h.cuda_graph_replay_s);
  CHECK(t.graph_replays == 2);
  job.runtime.cuda_graph_modules = kCudaGraphFullIteration;
  CHECK_FALSE(dense_layer_host_time(job).any());
  job.runtime.cuda_graph_modules = 0;
  job.runtime.framework = Framework::fsdp;
  CHECK_FALSE(dense_layer_host_time(job).any());
  job.runtime.framework = Framework::deepspeed;  // Megatron-DeepSpeed: Megatron's layer code
  CHECK(dense_layer_host_time(job).any());
}

TEST_CASE("dense layers: a layer the host issues slower than the GPU runs it makes the GPU wait for the difference") {
  Job job = small_layers_at_tp8();
  REQUIRE(check_plan(job).empty());
  Job gpu_only_job = job;
  gpu_only_job.calibration.host = test::no_moe_host_time();  // zeroes the attention block and the MLP's host time too
  REQUIRE_FALSE(dense_layer_host_time(gpu_only_job).any());
  const Prediction gpu_only = predict(gpu_only_job);
  const Prediction p = predict(job);
  REQUIRE(gpu_only.feasible);
  REQUIRE(p.feasible);
  CHECK(gpu_only.breakdown.host_s == 0);
  CHECK(p.breakdown.host_s > 0);
  // One stage: the host time is the only difference, and the breakdown still adds up.
  CHECK(p.iteration_time_s == doctest::Approx(gpu_only.iteration_time_s + p.breakdown.host_s).epsilon(1e-9));
  CHECK(test::breakdown_sum(p.breakdown) == doctest::Approx(p.iteration_time_s).epsilon(1e-9));
  CHECK(p.bottleneck.kind == "host");
  CHECK(std::any_of(p.notes.begin(), p.notes.end(), [](const std::string& n) { return n.starts_with("host-bound layers:"); }));

  const int layers = job.model.num_layers;
  const double mbs = static_cast<double>(job.num_micro_batches());
  SUBCASE("host-bound, every layer's forward and backward add each millisecond of host time") {
    Job slower = job;
    slower.calibration.host.moe_attention_forward_s += 0.001;
    slower.calibration.host.moe_attention_backward_s += 0.001;
    const Prediction q = predict(slower);
    CHECK(q.breakdown.host_s - p.breakdown.host_s == doctest::Approx(2 * 0.001 * layers * mbs).epsilon(1e-6));
  }
  SUBCASE("full recompute issues the forward twice: its host time counts twice") {
    job.plan.recompute.granularity = RecomputeGranularity::full;
    const Prediction full = predict(job);
    Job slower = job;
    slower.calibration.host.moe_attention_forward_s += 0.001;
    const Prediction q = predict(slower);
    CHECK(q.breakdown.host_s - full.breakdown.host_s == doctest::Approx(2 * 0.001 * layers * mbs).epsilon(1e-6));
    CHECK(test::breakdown_sum(q.breakdown) == doctest::Approx(q.iteration_time_s).epsilon(1e-9));
  }
  SUBCASE("less tensor parallelism and larger micro-batches give the GPU more work per op the host issues") {
    Job tp2 = job;
    tp2.plan.tp = 2;
    tp2.plan.dp = 4;
    const Prediction q = predict(tp2);
    REQUIRE(q.feasible);
    CHECK(q.breakdown.host_s / q.iteration_time_s < p.breakdown.host_s / p.iteration_time_s);
    Job bigger = job;
    bigger.plan.micro_batch_size = 8;
    const Prediction r = predict(bigger);
    REQUIRE(r.feasible);
    CHECK(r.breakdown.host_s < p.breakdown.host_s);
  }
}

TEST_CASE("dense layers: a layer with more GPU work than host work is not held up") {
  // Llama 3 70B at tp 8 with 8k-token micro-batches: milliseconds of GEMMs per layer on an H100.
  Job job = test::workload("llama3-70b", "dgx-h100-ndr", 16, 8192);
  job.calibration = default_calibration(job.cluster.gpu);
  job.plan.tp = 8;
  job.plan.pp = 8;
  job.plan.sequence_parallel = true;
  job.plan.distributed_optimizer = true;
  REQUIRE(check_plan(job).empty());
  REQUIRE(dense_layer_host_time(job).any());
  Job gpu_only_job = job;
  gpu_only_job.calibration.host = test::no_moe_host_time();
  const Prediction p = predict(job);
  CHECK(p.breakdown.host_s == 0);
  CHECK(p.iteration_time_s == predict(gpu_only_job).iteration_time_s);
}
