#pragma once
// The primitives of the bottleneck search (after Aceso, Liu et al. EuroSys'24, §4.2: each
// primitive changes one aspect of the plan to relieve one kind of bottleneck, at the price of
// another resource): trade a parallel degree for another, change the micro-batch size, the
// virtual pipeline size, the recompute amount, sequence parallelism or the distributed optimizer,
// and move decoder layers between pipeline stages.
#include <string>
#include <vector>

#include "search/evaluator.h"

namespace strata {

struct Move {
  std::string name;  // "tp->dp", "recompute+", "layer 3->2", ... (for tests and debugging)
  ParallelPlan plan;
};

enum class MoveScope {
  directed,  // only primitives that relieve the evaluation's bottleneck
  all,       // the whole neighbourhood
};

// Legal, canonical, distinct plans one primitive away from `from` (never `from` itself).
std::vector<Move> propose_moves(const Evaluator& ev, const Evaluation& from, MoveScope scope);

// Which bottleneck kinds (Prediction.bottleneck.kind) a named primitive addresses.
bool move_relieves(const std::string& move_name, const std::string& bottleneck_kind);

}  // namespace strata
