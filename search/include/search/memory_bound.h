#pragma once
// Per-GPU memory of a plan without simulating its pipeline, so the searcher can discard plans that
// cannot fit before paying for a prediction. Uses the cost model's memory model (stage_memory)
// with the peak number of in-flight micro-batches of Megatron-LM's schedules in closed form
// (pipeline_peak_in_flight):
//  1F1B (Narayanan et al. 2021 §2.2.1): stage s of p holds min(p - s, m) micro-batches;
//  interleaved 1F1B (schedules.py, forward_backward_pipelining_with_interleaving): stage s runs
//  min((p - s - 1) * 2 + (v - 1) * g, m * v) warm-up forwards (g: the micro-batch group, p by
//  default), then one more before its first backward, so it holds min(warm-up + 1, m * v)
//  chunk-micro-batches; Megatron-Core's combined 1F1B (MoE all-to-all overlap) warms up one more.
// Only valid for the analytical cost model; the searcher uses it when that is the model it has.
#include <vector>

#include "costmodel/job.h"

namespace strata {

struct MemoryEstimate {
  double GiB = 0;  // the heaviest stage
  int stage = 0;
  std::vector<double> stage_GiB;
};

MemoryEstimate estimate_plan_memory(const Job& job);

}  // namespace strata
