#pragma once
// What every plan read from an input (the command line, the plan JSON, published-run records, a
// Megatron-LM launch) is checked against before any prediction, and the readers of the recompute
// and framework names those inputs share.
#include <cstdint>
#include <optional>
#include <string>

#include "costmodel/job.h"

namespace strata {

// Limits that keep every size product of the cost model inside its integer types and the pipeline
// simulation bounded; each is far beyond any real training run.
inline constexpr std::int64_t kMaxParallelSize = 1'000'000;      // any one of tp, pp, dp, cp, ep, vpp, mbs
inline constexpr std::int64_t kMaxGpus = 10'000'000;             // tp*pp*dp*cp
inline constexpr std::int64_t kMaxVirtualStages = 1'000'000;     // pp*vpp
inline constexpr std::int64_t kMaxScheduledChunks = kMaxSimulatedChunks;  // micro-batches * pp * vpp (simulated ops / 2)

// A request the cost model cannot or must not evaluate, found before any prediction: a size out of
// the limits above, a global batch not divisible by dp * micro-batch size, stage layer counts that
// do not match pp or the model, settings that contradict each other (vpp > 1 without a pipeline, ZeRO
// with the distributed optimizer). `field` is one of tp, pp, dp, cp, ep, vpp, micro_batch_size, gpus, zero_stage,
// global_batch_size, stages, recompute_layers; callers name the matching flag or JSON path.
struct PlanProblem {
  std::string field;
  std::string what;
};
std::optional<PlanProblem> check_plan_input(const Job& job);

// "none" | "selective" | "full" (also "full (activation checkpointing...)" style free text).
std::optional<RecomputeGranularity> parse_recompute(const std::string& s);
std::optional<Framework> parse_framework(const std::string& s);

}  // namespace strata
