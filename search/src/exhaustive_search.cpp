#include "search/exhaustive_search.h"

#include <omp.h>

namespace strata {

ExhaustiveOutcome exhaustive_search(Evaluator& ev) {
  const std::vector<ParallelPlan> grid = uniform_grid(ev.workload(), ev.options());
  std::vector<EvalPtr> scored(grid.size());
  const int n = static_cast<int>(grid.size());
  const int threads = ev.options().threads > 0 ? ev.options().threads : omp_get_max_threads();
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads)
  for (int i = 0; i < n; ++i) scored[i] = ev.evaluate(grid[i]);
  // Reduction in grid order; `better` is a total order, so the winner does not depend on threads.
  ExhaustiveOutcome out;
  out.grid_size = n;
  for (const EvalPtr& e : scored)
    if (e && (!out.best || better(*e, *out.best))) out.best = e;
  return out;
}

}  // namespace strata
