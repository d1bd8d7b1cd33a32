#include "formats/plan_input.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace strata {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

std::optional<RecomputeGranularity> parse_recompute(const std::string& s) {
  std::string v = lower(s);
  if (v.starts_with("none") || v == "no" || v == "off") return RecomputeGranularity::none;
  if (v.starts_with("selective")) return RecomputeGranularity::selective;
  if (v.starts_with("full")) return RecomputeGranularity::full;
  return std::nullopt;
}

std::optional<Framework> parse_framework(const std::string& s) {
  std::string v = lower(s);
  if (v == "megatron" || v == "megatron-lm" || v == "megatron-core") return Framework::megatron;
  if (v == "deepspeed" || v == "megatron-deepspeed") return Framework::deepspeed;
  if (v == "fsdp") return Framework::fsdp;
  return std::nullopt;
}

std::optional<PlanProblem> check_plan_input(const Job& job) {
  const ParallelPlan& p = job.plan;
  const std::pair<const char*, int> sizes[] = {{"tp", p.tp}, {"pp", p.pp}, {"dp", p.dp}, {"cp", p.cp}, {"ep", p.ep},
                                               {"etp", p.etp}, {"vpp", p.vpp}, {"micro_batch_size", p.micro_batch_size}};
  for (const auto& [name, v] : sizes)
    if (v < 1 || v > kMaxParallelSize)
      return PlanProblem{name, "expected 1.." + std::to_string(kMaxParallelSize) + ", found " + std::to_string(v)};
  // Products in int64: each factor is at most 10^6, so no product of two or three overflows.
  const std::int64_t world = std::int64_t{p.tp} * p.pp * p.dp * p.cp;
  if (world > kMaxGpus)
    return PlanProblem{"gpus", "tp*pp*dp*cp = " + std::to_string(world) + " GPUs; at most " + std::to_string(kMaxGpus) + " are supported"};
  // Settings that contradict each other whatever the model: the request is wrong, not infeasible.
  if (p.vpp > 1 && p.pp < 2)
    return PlanProblem{"vpp", "interleaved pipelining (vpp " + std::to_string(p.vpp) + ") needs a pipeline of pp >= 2 stages"};
  if (p.microbatch_group < 0 || p.microbatch_group > kMaxScheduledChunks)
    return PlanProblem{"microbatch_group_size_per_vp_stage",
                       fmt::format("expected 1..{} micro-batches (0: chosen), found {}", kMaxScheduledChunks, p.microbatch_group)};
  if (p.microbatch_group > 0 && p.vpp < 2)
    return PlanProblem{"microbatch_group_size_per_vp_stage", "a micro-batch group per virtual pipeline stage needs vpp >= 2"};
  if (p.zero_stage < 0 || p.zero_stage > 3)
    return PlanProblem{"zero_stage", "expected ZeRO stage 0, 1, 2 or 3, found " + std::to_string(p.zero_stage)};
  if (p.distributed_optimizer && p.zero_stage > 0)
    return PlanProblem{"zero_stage", "ZeRO stage " + std::to_string(p.zero_stage) +
                                         " and the distributed optimizer both shard the optimizer state and are alternatives; give one"};
  const std::int64_t virtual_stages = std::int64_t{p.pp} * p.vpp;
  if (virtual_stages > kMaxVirtualStages)
    return PlanProblem{"vpp", "pp*vpp = " + std::to_string(virtual_stages) + " virtual pipeline stages; at most " +
                                  std::to_string(kMaxVirtualStages) + " are supported"};
  const std::int64_t gbs = job.training.global_batch_size;
  const std::int64_t per_step = std::int64_t{p.dp} * p.micro_batch_size;
  if (gbs < 1) return PlanProblem{"global_batch_size", "expected a positive number of sequences"};
  if (gbs % per_step != 0)
    return PlanProblem{"global_batch_size", "global batch " + std::to_string(gbs) + " is not divisible by dp*micro_batch_size = " +
                                                std::to_string(p.dp) + "*" + std::to_string(p.micro_batch_size)};
  const std::int64_t micro_batches = gbs / per_step;
  // micro_batches <= 2^40 and virtual_stages <= 10^6: compare by division to stay in range.
  if (micro_batches > kMaxScheduledChunks / virtual_stages)
    return PlanProblem{"global_batch_size", std::to_string(micro_batches) + " micro-batches per pipeline times pp*vpp = " +
                                                std::to_string(virtual_stages) + " is more than the " + std::to_string(kMaxScheduledChunks) +
                                                " pipeline steps strata simulates (raise the micro-batch size or dp)"};
  if (!p.stage_layers.empty()) {
    if (static_cast<std::int64_t>(p.stage_layers.size()) != p.pp)
      return PlanProblem{"stages", std::to_string(p.stage_layers.size()) + " stage layer counts for pp=" + std::to_string(p.pp)};
    std::int64_t sum = 0;
    for (int l : p.stage_layers) {
      if (l < 1) return PlanProblem{"stages", "every pipeline stage needs at least one layer, found " + std::to_string(l)};
      sum += l;
    }
    if (sum != job.model.num_layers)
      return PlanProblem{"stages", "stage layers add up to " + std::to_string(sum) + ", the model has " +
                                       std::to_string(job.model.num_layers) + " layers"};
  }
  if (p.recompute.num_layers == 0 || p.recompute.num_layers < -1)
    return PlanProblem{"recompute_layers", "expected a positive layer count"};
  return std::nullopt;
}

}  // namespace strata
