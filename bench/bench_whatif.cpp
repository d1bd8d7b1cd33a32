// Capacity-sweep speed: the 5 GPU counts x 4 GPU types sweep of docs/whatif.md (Llama-3-70B,
// seq 8192, global batch 1024), plan search at every point, run in parallel over the points.
#include <benchmark/benchmark.h>

#include "costmodel/catalog.h"
#include "costmodel/predictor.h"
#include "search/searcher.h"
#include "whatif/sweep.h"

namespace {

void BM_Whatif_Sweep_5x4(benchmark::State& state) {
  strata::Catalog cat(STRATA_SOURCE_DIR);
  strata::SweepAxes axes;
  axes.gpus_types = {"dgx-a100-hdr", "dgx-h100-ndr", "hgx-h200-ndr", "dgx-b200-ndr"};
  axes.gpu_counts = {64, 128, 256, 512, 1024};
  axes.inter_node_GBps = {std::nullopt};
  axes.seqs = {8192};
  axes.global_batches = {1024};
  const auto points = strata::sweep_points(axes);
  strata::WorkloadFn workload = [&](const strata::SweepPoint& p) {
    strata::Job job;
    job.model = cat.model("llama3-70b");
    job.cluster = cat.cluster(p.gpu);
    job.training.global_batch_size = p.global_batch;
    job.training.seq_length = p.seq;
    return job;
  };
  strata::AnalyticalCostModel model;
  strata::SearchFn search = [&](const strata::Job& w, int n) {
    strata::SearchOptions so;
    so.num_gpus = n;
    so.threads = 1;
    return strata::search_plans(w, so, model);
  };
  strata::CapacityOptions opts;
  opts.tokens = 2e12;
  for (auto _ : state) benchmark::DoNotOptimize(strata::run_sweep(points, workload, search, model, opts));
  state.counters["points"] = static_cast<double>(points.size());
}
BENCHMARK(BM_Whatif_Sweep_5x4)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
