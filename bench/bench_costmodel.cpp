// Predictor speed: one full prediction (op graph, kernel times, communication, pipeline
// simulation, memory) of GPT-3 175B on 1024 A100s.
#include <benchmark/benchmark.h>

#include "costmodel/catalog.h"
#include "costmodel/predictor.h"

namespace {

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
  for (auto _ : state) benchmark::DoNotOptimize(strata::predict(job));
  state.counters["predictions/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Predict_GPT3_175B_1024GPUs)->Arg(1)->Arg(2)->ArgName("vpp");

}  // namespace

BENCHMARK_MAIN();
