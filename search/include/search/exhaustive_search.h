#pragma once
// The reference: every plan of the uniform grid (plan_space.h uniform_grid) scored, in parallel,
// the best kept. What hand tuning over a grid and grid-search tools do.
#include "search/evaluator.h"

namespace strata {

struct ExhaustiveOutcome {
  EvalPtr best;  // null when the grid is empty
  std::int64_t grid_size = 0;
};
ExhaustiveOutcome exhaustive_search(Evaluator& ev);

}  // namespace strata
