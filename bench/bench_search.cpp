// Search speed and quality: bottleneck and exhaustive search for GPT-3 175B on 1024 A100s, the
// 1,024-layer model, how search time grows with GPU count and layer count, and the quality suite
// (tests/search/quality_cases.h) with the exhaustive optimum, the bottleneck result and their ratio
// as counters. Run: build/bench/bench_search --benchmark_filter=... (medians of 3 repetitions).
#include <benchmark/benchmark.h>

#include "../tests/catalog_util.h"
#include "../tests/search/quality_cases.h"
#include "costmodel/catalog.h"
#include "costmodel/predictor.h"
#include "search/searcher.h"

namespace {

using namespace strata;

using test::catalog;
using test::workload;

void run_search(benchmark::State& state, const Job& w, int gpus, SearchAlgorithm algorithm) {
  const AnalyticalCostModel model;
  SearchOptions o;
  o.num_gpus = gpus;
  o.algorithm = algorithm;
  SearchResult r;
  for (auto _ : state) {
    r = search_plans(w, o, model);
    benchmark::DoNotOptimize(r);
  }
  state.counters["plans_predicted"] = static_cast<double>(r.plans_evaluated);
  state.counters["tokens/s/GPU"] = r.found ? r.best.prediction.tokens_per_sec_per_gpu : 0;
}

void BM_Bottleneck_GPT3_175B_1024GPUs(benchmark::State& state) {
  run_search(state, workload("gpt3-175b", "dgx-a100-hdr", 1536, 2048), 1024, SearchAlgorithm::bottleneck);
}
void BM_Exhaustive_GPT3_175B_1024GPUs(benchmark::State& state) {
  run_search(state, workload("gpt3-175b", "dgx-a100-hdr", 1536, 2048), 1024, SearchAlgorithm::exhaustive);
}
void BM_Bottleneck_1024Layers_1024GPUs(benchmark::State& state) {
  run_search(state, workload(STRATA_SOURCE_DIR "/tests/data/gpt-1024-layers.json", "dgx-a100-hdr", 1536, 2048), 1024,
             SearchAlgorithm::bottleneck);
}

// Growth with the GPU count: GPT-3 175B, global batch 1536, seq 2048.
void BM_Bottleneck_GPT3_175B_GPUs(benchmark::State& state) {
  run_search(state, workload("gpt3-175b", "dgx-a100-hdr", 1536, 2048), static_cast<int>(state.range(0)), SearchAlgorithm::bottleneck);
}

// Growth with the layer count: the 1,024-layer model's layer shape (h=4096) cut to N layers, on
// 1024 A100s.
void BM_Bottleneck_Layers_1024GPUs(benchmark::State& state) {
  Job w = workload(STRATA_SOURCE_DIR "/tests/data/gpt-1024-layers.json", "dgx-a100-hdr", 1536, 2048);
  w.model.num_layers = static_cast<int>(state.range(0));
  run_search(state, w, 1024, SearchAlgorithm::bottleneck);
}

// One quality case: the exhaustive optimum, the bottleneck search's best and their ratio.
void BM_Quality(benchmark::State& state, const quality::Case& c) {
  const AnalyticalCostModel model;
  const Job w = quality::workload(c, catalog(), STRATA_SOURCE_DIR);
  SearchOptions o = quality::options(c);
  SearchResult ex, bn;
  for (auto _ : state) {
    o.algorithm = SearchAlgorithm::exhaustive;
    ex = search_plans(w, o, model);
    o.algorithm = SearchAlgorithm::bottleneck;
    bn = search_plans(w, o, model);
  }
  const double e = ex.found ? ex.best.prediction.tokens_per_sec_per_gpu : 0;
  const double b = bn.found ? bn.best.prediction.tokens_per_sec_per_gpu : 0;
  state.counters["exhaustive_tok/s/GPU"] = e;
  state.counters["bottleneck_tok/s/GPU"] = b;
  state.counters["ratio"] = e > 0 ? b / e : 0;
  state.counters["exhaustive_s"] = ex.seconds;
  state.counters["bottleneck_s"] = bn.seconds;
}

const bool registered = [] {
  auto common = [](benchmark::internal::Benchmark* b) {
    b->Unit(benchmark::kMillisecond)->UseRealTime()->Repetitions(3)->ReportAggregatesOnly(true)->Iterations(1);
  };
  common(benchmark::RegisterBenchmark("BM_Bottleneck_GPT3_175B_1024GPUs", BM_Bottleneck_GPT3_175B_1024GPUs));
  common(benchmark::RegisterBenchmark("BM_Exhaustive_GPT3_175B_1024GPUs", BM_Exhaustive_GPT3_175B_1024GPUs));
  common(benchmark::RegisterBenchmark("BM_Bottleneck_1024Layers_1024GPUs", BM_Bottleneck_1024Layers_1024GPUs));
  auto* g = benchmark::RegisterBenchmark("BM_Bottleneck_GPT3_175B_GPUs", BM_Bottleneck_GPT3_175B_GPUs);
  for (int n : {128, 256, 512, 1024, 2048, 4096, 8192, 16384}) g->Arg(n);
  common(g->ArgName("gpus"));
  auto* l = benchmark::RegisterBenchmark("BM_Bottleneck_Layers_1024GPUs", BM_Bottleneck_Layers_1024GPUs);
  for (int n : {32, 64, 128, 256, 512, 1024}) l->Arg(n);
  common(l->ArgName("layers"));
  for (const quality::Case& c : quality::cases())
    benchmark::RegisterBenchmark(("BM_Quality/" + std::string(c.name)).c_str(), BM_Quality, c)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->Iterations(1);
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
