#include "costmodel/job.h"

namespace strata {

const char* to_string(RecomputeGranularity g) {
  switch (g) {
    case RecomputeGranularity::none: return "none";
    case RecomputeGranularity::selective: return "selective";
    case RecomputeGranularity::full: return "full";
  }
  return "?";
}

const char* to_string(Framework f) {
  switch (f) {
    case Framework::megatron: return "megatron";
    case Framework::deepspeed: return "deepspeed";
    case Framework::fsdp: return "fsdp";
  }
  return "?";
}

std::vector<int> resolve_stage_layers(const ParallelPlan& plan, int num_layers) {
  if (!plan.stage_layers.empty()) return plan.stage_layers;
  std::vector<int> out(plan.pp > 0 ? plan.pp : 1, 0);
  const int n = static_cast<int>(out.size());
  for (int i = 0; i < n; ++i) out[i] = num_layers / n + (i < num_layers % n ? 1 : 0);
  return out;
}

}  // namespace strata
