// Predictor speed: one full prediction (op graph, kernel times, communication, pipeline
// simulation, memory) of GPT-3 175B on 1024 A100s, and of an MoE model the way Megatron-Bridge
// runs Qwen3-235B-A22B on 256 H100s (94 layers over pp 8 x vpp 4, expert parallel 32, fp8), and
// of GLM-5's sparse attention at 128k tokens the way its Megatron-Bridge recipe runs it on 416 H100s.
#include <benchmark/benchmark.h>

#include "costmodel/catalog.h"
#include "costmodel/predictor.h"

namespace {

// The benchmark loop: the job's prediction, as often as the state asks, skipped for a plan
// check_plan refuses.
void predict_repeatedly(benchmark::State& state, const strata::Job& job) {
  if (const std::string why = strata::check_plan(job); !why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(strata::predict(job));
  state.counters["predictions/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

strata::Job gpt3_175b() {
  strata::Catalog cat(STRATA_SOURCE_DIR);
  strata::Job job;
  job.model = cat.model("gpt3-175b");
  job.cluster = cat.cluster("dgx-a100-hdr");
  job.training.global_batch_size = 1536;
  job.training.seq_length = 2048;
  job.plan.tp = 8;
  job.plan.pp = 16;
  job.plan.dp = 8;
  job.plan.sequence_parallel = true;
  job.plan.recompute.granularity = strata::RecomputeGranularity::selective;
  job.plan.distributed_optimizer = true;
  job.calibration = cat.calibration_or_default(job.cluster.gpu);
  return job;
}

void BM_Predict_GPT3_175B_1024GPUs(benchmark::State& state) {
  strata::Job job = gpt3_175b();
  job.plan.vpp = static_cast<int>(state.range(0));
  predict_repeatedly(state, job);
}
BENCHMARK(BM_Predict_GPT3_175B_1024GPUs)->Arg(1)->Arg(2)->ArgName("vpp");

void BM_Predict_Qwen3_235B_256GPUs(benchmark::State& state) {
  strata::Catalog cat(STRATA_SOURCE_DIR);
  strata::Job job;
  job.model = cat.model("qwen3-235b-a22b");
  job.cluster = cat.cluster("dgx-h100-ndr");
  job.training.global_batch_size = 2048;
  job.training.seq_length = 4096;
  job.training.precision = strata::Precision::fp8;
  job.plan.tp = 2;
  job.plan.pp = 8;
  job.plan.vpp = 4;
  job.plan.dp = 16;
  job.plan.ep = 32;
  job.plan.sequence_parallel = true;
  job.plan.distributed_optimizer = true;
  job.plan.stage_layers = {11, 12, 12, 12, 12, 12, 12, 11};
  job.runtime.moe_a2a_overlap = state.range(0) != 0;
  job.calibration = cat.calibration_or_default(job.cluster.gpu);
  predict_repeatedly(state, job);
}
BENCHMARK(BM_Predict_Qwen3_235B_256GPUs)->Arg(0)->Arg(1)->ArgName("a2a_overlap");

void BM_Predict_GLM5_DSA_128k_416GPUs(benchmark::State& state) {
  strata::Catalog cat(STRATA_SOURCE_DIR);
  strata::Job job;
  job.model = cat.model("glm-5");
  job.cluster = cat.cluster("dgx-h100-ndr");
  job.training.global_batch_size = 520;
  job.training.seq_length = 131072;
  job.plan.pp = 13;
  job.plan.vpp = 2;
  job.plan.cp = 32;
  job.plan.dp = 1;
  job.plan.ep = 32;
  job.plan.distributed_optimizer = true;
  job.plan.recompute.granularity = strata::RecomputeGranularity::full;
  job.runtime.cp_comm_type = strata::CpCommType::allgather;
  job.calibration = cat.calibration_or_default(job.cluster.gpu);
  predict_repeatedly(state, job);
}
BENCHMARK(BM_Predict_GLM5_DSA_128k_416GPUs);

// A hybrid model: Nemotron 3 Super (Mamba-2, attention and latent-MoE layers, an MTP module of its
// own pattern) on 256 H100 (tp 4 pp 4 ep 8, sp).
void BM_Predict_Nemotron3_Super_256GPUs(benchmark::State& state) {
  strata::Catalog cat(STRATA_SOURCE_DIR);
  strata::Job job;
  job.model = cat.model("nemotron-3-super-120b-a12b");
  job.cluster = cat.cluster("dgx-h100-ndr");
  job.training.global_batch_size = 1024;
  job.training.seq_length = 8192;
  job.plan.tp = 4;
  job.plan.pp = 4;
  job.plan.dp = 16;
  job.plan.ep = 8;
  job.plan.sequence_parallel = true;
  job.plan.distributed_optimizer = true;
  job.calibration = cat.calibration_or_default(job.cluster.gpu);
  predict_repeatedly(state, job);
}
BENCHMARK(BM_Predict_Nemotron3_Super_256GPUs);

}  // namespace

BENCHMARK_MAIN();
