#pragma once
// Reads published-run records (the format of shared/validation/public_runs.json) into Jobs. The
// free-text fields (gpu_type, interconnect, recompute, precision, zero_or_dist_optimizer,
// framework) are read the way a person would read them; every assumption made is recorded.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/catalog.h"
#include "costmodel/job.h"
#include "costmodel/memory_model.h"
#include "costmodel/prediction.h"

namespace strata {

struct ValidationRun {
  std::string id;
  std::string source_group;
  std::string tier;
  std::string precision_text;
  std::optional<Job> job;      // empty when the record cannot be turned into a job
  std::string error;           // why not
  // Plan fields the record leaves null: predict_validation_run completes them with the fastest
  // memory-feasible choice and records it in `assumptions`.
  struct Unknown {
    bool micro_batch = false;
    bool vpp = false;                // only with pp > 1
    bool sequence_parallel = false;  // only with tp > 1
    bool recompute = false;
    // The record says recompute is on but not which granularity ("yes", "activation
    // checkpointing"): only selective and full are tried.
    bool recompute_on = false;
    // fp8 runs on Megatron stacks that say nothing of --fp8-param-gather / --grad-reduce-in-bf16.
    bool fp8_memory_options = false;
    // Megatron-Core / NeMo stacks (2023+) with tp > 1 that do not say whether --tp-comm-overlap is on.
    bool tp_comm_overlap = false;
    // Records whose optimizer sharding is "not stated" and read as unsharded: ZeRO-1 (DeepSpeed) or
    // the distributed optimizer (Megatron) is tried when the unsharded run would not fit.
    bool optimizer_sharding = false;
    // MoE records that leave ep out: tuned freely, like the micro-batch (every large MoE run shards
    // its experts; Megatron's default of 1 replicates them on every GPU).
    bool expert_parallel = false;
    bool any() const {
      return micro_batch || vpp || sequence_parallel || recompute || fp8_memory_options || tp_comm_overlap || optimizer_sharding ||
             expert_parallel;
    }
    std::string names() const {
      std::string s;
      for (auto [on, name] : {std::pair{micro_batch, "micro_batch_size"}, std::pair{vpp, "vpp"},
                              std::pair{sequence_parallel, "sequence_parallel"},
                              std::pair{recompute, recompute_on ? "recompute granularity" : "recompute"},
                              std::pair{fp8_memory_options, "fp8 parameter/gradient dtypes"},
                              std::pair{tp_comm_overlap, "tp_comm_overlap"}, std::pair{optimizer_sharding, "optimizer sharding"},
                              std::pair{expert_parallel, "ep"}})
        if (on) s += (s.empty() ? "" : ", ") + std::string(name);
      return s;
    }
  } unknown;
  std::vector<std::string> assumptions;
  // The record's own doubt about the throughput it reports: its uncertain_fields entry naming the
  // measured tokens/s (or the iteration time they derive from), e.g. "meas_tokens_per_sec_per_gpu
  // (throughput anomaly, see notes)"; empty when it has none. `validate` counts these runs in the MAPE
  // and also reports it without them.
  std::string throughput_doubt;
  std::optional<double> measured_tokens_per_sec_per_gpu;
  std::optional<double> measured_iteration_time_s;
  std::optional<double> measured_memory_GiB;
  // What the measured memory counts (the tool it came from); predictions are compared in that view.
  MemoryMeasure memory_measure = MemoryMeasure::device;
};

std::vector<ValidationRun> load_validation_runs(const nlohmann::json& j, const std::string& where, const Catalog& catalog);

// Predicts a run that has a job. Plan fields the record leaves out (micro-batch, vpp, sequence
// parallelism, recompute) get the fastest memory-feasible completion, recorded in run.assumptions.
Prediction predict_validation_run(ValidationRun& run);

// The runs whose id or source_group contains one of `parts` (all runs when `parts` is empty).
std::vector<ValidationRun> select_runs(std::vector<ValidationRun> runs, const std::vector<std::string>& parts);

}  // namespace strata
