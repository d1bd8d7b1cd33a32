#pragma once
// How strata reads the activation recompute a published-run record states. Internal to the
// formats library (validation_runs.cpp).

#include <string>

#include <nlohmann/json.hpp>

#include "costmodel/job.h"
#include "formats/validation_runs.h"

namespace strata::record {

// The recompute a record states: its recompute field ("selective (core_attn, mlp)", "full,
// recompute_method block, recompute_num_layers 2", Megatron's flags), else the recipe knobs its notes
// quote (recompute_modules, recompute_granularity); onto the plan, with what is unknown marked for
// the completion (run.unknown) and assumptions in run.assumptions. `recipe_assumed`: the fp8 recipe
// was not stated, and selective modules that Megatron refuses under delayed scaling change it.
void read_recompute(const nlohmann::json& r, const std::string& where, bool recipe_assumed, TrainingSpec& t, ParallelPlan& p,
                    ValidationRun& run);

}  // namespace strata::record
