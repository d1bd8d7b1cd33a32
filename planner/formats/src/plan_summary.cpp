#include "formats/plan_summary.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace strata {

std::string plan_summary(const ParallelPlan& p) {
  std::string s = fmt::format("tp={} pp={} dp={}", p.tp, p.pp, p.dp);
  if (p.cp > 1) s += fmt::format(" cp={}", p.cp);
  if (p.ep > 1) s += fmt::format(" ep={}", p.ep);
  if (p.etp > 1) s += fmt::format(" etp={}", p.etp);
  if (p.sequence_parallel) s += " sp";
  if (p.vpp > 1) s += fmt::format(" vpp={}", p.vpp);
  if (p.vpp > 1 && p.microbatch_group > 0 && p.microbatch_group != p.pp) s += fmt::format(" microbatch-group={}", p.microbatch_group);
  s += fmt::format(" mbs={} recompute={}", p.micro_batch_size, to_string(p.recompute.granularity));
  if (p.recompute.granularity == RecomputeGranularity::full && p.recompute.num_layers >= 0)
    s += fmt::format("({} layers/stage)", p.recompute.num_layers);
  if (p.recompute.granularity == RecomputeGranularity::selective && p.recompute.modules != kRecomputeCoreAttn)
    s += fmt::format("({})", fmt::join(recompute_module_names(p.recompute.modules), ","));
  if (p.cpu_offload_layers > 0) s += fmt::format(" cpu-offload={}", p.cpu_offload_layers);
  if (p.offload.modules != 0) s += fmt::format(" offload=({})", fmt::join(offload_module_names(p.offload.modules), ","));
  if (p.distributed_optimizer) s += " dist-opt";
  if (p.distributed_optimizer && p.optimizer_instances > 1) s += fmt::format("x{}", p.optimizer_instances);  // copies of it
  if (p.zero_stage > 0) s += fmt::format(" zero={}", p.zero_stage);
  if (p.zero_stage >= 2 && p.optimizer_instances > 1)  // hybrid sharding: replica groups of the sharded state
    s += fmt::format("x{}{}", p.optimizer_instances, p.outer_optimizer_sharding ? " outer-optim" : "");
  if (!p.stage_layers.empty()) {
    s += " stages=[";
    for (std::size_t i = 0; i < p.stage_layers.size(); ++i) s += fmt::format("{}{}", i ? "," : "", p.stage_layers[i]);
    s += "]";
  }
  return s;
}

}  // namespace strata
