#pragma once
// The plan file of DESIGN.md: the resolved model, cluster (with its GPU), training, runtime,
// parallel plan, recompute, stages, calibration, prediction and launch.megatron_args. Written by
// `strata plan -o` / `strata predict --json`, read back by `strata predict --plan`.
#include <string>

#include <nlohmann/json.hpp>

#include "costmodel/job.h"
#include "costmodel/prediction.h"
#include "launch/megatron_args.h"

namespace strata {

constexpr int kPlanSchemaVersion = 1;

nlohmann::json plan_to_json(const Job& job, const Prediction& prediction);
// launch: {torchrun {nnodes, nproc_per_node}, num_micro_batches, env, megatron_args} or, when no
// launch is written, {torchrun, num_micro_batches, refused: why}.
nlohmann::json launch_to_json(const LaunchPlan& l);
// "" when every number of the prediction is finite and a computed iteration time, throughput and
// memory are positive; else which field is not. JSON cannot carry NaN or inf (they print as null),
// so callers treat a non-empty answer as an internal error rather than print it.
std::string prediction_defect(const Prediction& p);

// Reads the job back (prediction and launch are outputs and are ignored). Throws InputError.
Job plan_from_json(const nlohmann::json& j, const std::string& where);

}  // namespace strata
