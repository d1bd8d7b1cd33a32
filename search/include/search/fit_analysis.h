#pragma once
// What to tell a user when no plan fits: the least per-GPU memory any plan needs, and how many
// GPUs of the same type would make some plan fit.
#include "search/evaluator.h"

namespace strata {

// The leanest plan of each (tp, pp, cp) shape: micro-batch 1, full recompute of every layer, SP,
// the distributed optimizer, no interleaving (each lowers memory, Korthikanti et al. 2022 §4-5).
// Returns the one that needs the least memory (null when no shape is legal).
EvalPtr leanest_plan(Evaluator& ev);

// The smallest GPU count among 2x, 4x, ... the request (and multiples of the node size when the
// request is smaller than a node) whose leanest plan fits; 0 when none up to 1024x does.
int gpus_needed_to_fit(const Job& workload, const SearchOptions& options, const CostModel& model);

}  // namespace strata
