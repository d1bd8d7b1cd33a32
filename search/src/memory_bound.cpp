#include "search/memory_bound.h"

#include <algorithm>

#include "costmodel/memory_model.h"

namespace strata {

int peak_in_flight_chunks(int stage, int pp, int vpp, std::int64_t micro_batches) {
  if (vpp == 1) return static_cast<int>(std::min<std::int64_t>(pp - stage, micro_batches));
  const std::int64_t total = micro_batches * vpp;
  const std::int64_t warmup = std::min<std::int64_t>(static_cast<std::int64_t>(pp - stage - 1) * 2 + static_cast<std::int64_t>(vpp - 1) * pp, total);
  return static_cast<int>(std::min(warmup + 1, total));
}

MemoryEstimate estimate_plan_memory(const Job& job) {
  const ParallelPlan& p = job.plan;
  const std::vector<int> layers = resolve_stage_layers(p, job.model.num_layers);
  const std::int64_t m = job.num_micro_batches();
  MemoryEstimate e;
  LayerActivationBytes layer_bytes(job);
  for (int s = 0; s < p.pp; ++s) {
    const int in_flight = peak_in_flight_chunks(s, p.pp, p.vpp, m);
    const double gib = stage_memory(job, s, layers[s], in_flight, stage_param_split(job, s, layers[s]), layer_bytes).total_GiB;
    e.stage_GiB.push_back(gib);
    if (gib > e.GiB) {
      e.GiB = gib;
      e.stage = s;
    }
  }
  return e;
}

}  // namespace strata
