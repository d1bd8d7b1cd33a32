#pragma once
// The built-in catalog and a plan-less workload, shared by the tests and the benchmarks (both
// compile with STRATA_SOURCE_DIR defined).
#include <cstdint>
#include <string>

#include "costmodel/calibration.h"
#include "costmodel/catalog.h"
#include "costmodel/job.h"

namespace strata::test {

inline const Catalog& catalog() {
  static Catalog c(STRATA_SOURCE_DIR);
  return c;
}

// A workload without a plan: model and cluster presets, global batch, sequence length.
inline Job workload(const std::string& model, const std::string& cluster, std::int64_t global_batch, std::int64_t seq) {
  Job w;
  w.model = catalog().model(model);
  w.cluster = catalog().cluster(cluster);
  w.training.global_batch_size = global_batch;
  w.training.seq_length = seq;
  return w;
}

// No host time for MoE layers: the measured Megatron-Core line and attention block zeroed, nothing
// measured. The GPU alone, as before strata had a host-time default.
inline HostCoefficients no_moe_host_time() {
  HostCoefficients h;
  h.moe_forward_s = h.moe_forward_fixed_s = h.moe_forward_per_expert_s = h.moe_backward_fixed_s = h.moe_backward_per_expert_s = 0;
  h.moe_attention_forward_s = h.moe_attention_backward_s = 0;
  return h;
}

// Qwen3-30B-A3B on 16 H100s (dp 16, ep 8: 16 local experts, dropless), distributed optimizer and
// full recompute so that it fits, grouped expert GEMMs, the architecture's default calibration.
inline Job qwen3_30b_ep8_job() {
  Job job = workload("qwen3-30b-a3b", "dgx-h100-ndr", 256, 4096);
  job.calibration = default_calibration(job.cluster.gpu);
  job.plan.dp = 16;
  job.plan.ep = 8;
  job.plan.distributed_optimizer = true;
  job.plan.recompute.granularity = RecomputeGranularity::full;
  job.runtime.moe_grouped_gemm = true;
  return job;
}

}  // namespace strata::test
