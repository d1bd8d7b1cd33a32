#pragma once
// How strata reads the software stack of a published-run record: framework, optimizer sharding,
// the features of its year and the runtime options the record states. Internal to the formats
// library (validation_runs.cpp).

#include <string>

#include <nlohmann/json.hpp>

#include "costmodel/job.h"
#include "formats/validation_runs.h"

namespace strata::record {

// The stack a record ran on, onto job.runtime and job.plan: the framework and its optimizer sharding
// (framework, zero_or_dist_optimizer; Megatron-FSDP), the defaults of its year (fused attention, overlapped
// gradient reduction, lazy module loading), and what the record states in its free text or quoted knobs:
// TP overlap, the loss's kernels, gradient and fp8 options, fp8 attention, the optimizer's state, the CP
// exchange, MoE routing and dispatch, CUDA graphs. Unstated fields are marked in run.unknown for the
// completion; assumptions go to run.assumptions.
void read_runtime(const nlohmann::json& r, const std::string& where, Job& job, ValidationRun& run);

}  // namespace strata::record
