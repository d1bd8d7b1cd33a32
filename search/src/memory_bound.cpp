#include "search/memory_bound.h"

#include <algorithm>

#include "costmodel/memory_model.h"
#include "costmodel/pipeline_sim.h"

namespace strata {

MemoryEstimate estimate_plan_memory(const Job& job) {
  const ParallelPlan& p = job.plan;
  const std::vector<int> layers = resolve_stage_layers(p, job.model.num_layers);
  const std::int64_t m = job.num_micro_batches();
  const std::int64_t group = interleaved_microbatch_group(p, m);
  const bool combined = combined_1f1b(job);
  MemoryEstimate e;
  LayerActivationBytes layer_bytes(job);
  for (int s = 0; s < p.pp; ++s) {
    const int in_flight = pipeline_peak_in_flight(p.pp, p.vpp, s, m, group, combined);
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
