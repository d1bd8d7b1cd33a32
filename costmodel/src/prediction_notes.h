#pragma once
// The notes a prediction carries (Prediction::notes): the defaults and guesses behind its figures,
// and what it leaves out, that a user should know before trusting them. (Internal to the cost
// model: the predictor's last step.)
#include "costmodel/job.h"
#include "costmodel/layer_ops.h"
#include "costmodel/prediction.h"

namespace strata {

// Appends the notes of a feasible prediction `pred` of `job`, whose stage `worst_memory_stage`
// needs the most memory; `shape`, `moe_host` and `dense_host` as the predictor costed the layers.
void add_prediction_notes(const Job& job, const LayerShape& shape, const MoeHostTime& moe_host, const DenseHostTime& dense_host,
                          int worst_memory_stage, Prediction& pred);

}  // namespace strata
