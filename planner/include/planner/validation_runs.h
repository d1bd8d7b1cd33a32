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
#include "costmodel/prediction.h"

namespace strata {

struct ValidationRun {
  std::string id;
  std::string source_group;
  std::string tier;
  std::string precision_text;
  std::optional<Job> job;      // empty when the record cannot be turned into a job
  std::string error;           // why not
  bool micro_batch_unknown = false;  // the record gives no micro-batch size: the tool picks the fastest that fits
  std::vector<std::string> assumptions;
  std::optional<double> measured_tokens_per_sec_per_gpu;
  std::optional<double> measured_iteration_time_s;
  std::optional<double> measured_memory_GiB;
};

std::vector<ValidationRun> load_validation_runs(const nlohmann::json& j, const std::string& where, const Catalog& catalog);

// Predicts a run that has a job. A run without a published micro-batch size gets the one a
// practitioner tuning for throughput would pick: the fastest power-of-two size that fits.
Prediction predict_validation_run(ValidationRun& run);

// The runs whose id or source_group contains one of `parts` (all runs when `parts` is empty).
std::vector<ValidationRun> select_runs(std::vector<ValidationRun> runs, const std::vector<std::string>& parts);

}  // namespace strata
