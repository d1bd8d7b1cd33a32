// Speed of the calibration pipeline: samples from a profile and the per-class fit.
#include <benchmark/benchmark.h>

#include "costmodel/catalog.h"
#include "profiler/calibrate.h"
#include "profiler/classify.h"
#include "profiler/synthetic.h"

namespace {

const strata::Catalog& catalog() {
  static strata::Catalog c(STRATA_SOURCE_DIR);
  return c;
}

strata::profiler::ProfileDb profile(bool quick) {
  strata::profiler::SyntheticOptions o;
  o.quick = quick;
  o.repetitions = 10;
  return strata::profiler::synthetic_profile(catalog(), catalog().gpu("h100-sxm"), strata::KernelCoefficients{}, o);
}

void BM_BuildSamples(benchmark::State& state) {
  auto gpu = catalog().gpu("h100-sxm");
  auto p = profile(state.range(0) != 0);
  for (auto _ : state) benchmark::DoNotOptimize(strata::profiler::build_samples(p, gpu, p.devices.front()));
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(p.records.size()));
  state.SetLabel(std::to_string(p.records.size()) + " records");
}
BENCHMARK(BM_BuildSamples)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

void BM_FitCalibration(benchmark::State& state) {
  auto gpu = catalog().gpu("h100-sxm");
  auto p = profile(state.range(0) != 0);
  auto samples = strata::profiler::build_samples(p, gpu, p.devices.front());
  for (auto _ : state) benchmark::DoNotOptimize(strata::profiler::fit_calibration(samples, gpu, strata::Calibration{}));
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(samples.size()));
  state.SetLabel(std::to_string(samples.size()) + " samples");
}
BENCHMARK(BM_FitCalibration)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
