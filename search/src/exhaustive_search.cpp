#include "search/exhaustive_search.h"

#include "search/threads.h"

#include <algorithm>
#include <limits>

#include <omp.h>

namespace strata {

namespace {

// Plans scored per round of the branch and bound; the bound to beat changes only between rounds,
// so what is predicted does not depend on the number of threads.
constexpr std::size_t kRound = 64;

}  // namespace

ExhaustiveOutcome exhaustive_search(Evaluator& ev) {
  const std::vector<ParallelPlan> grid = uniform_grid(ev.workload(), ev.options());
  ExhaustiveOutcome out;
  out.grid_size = static_cast<std::int64_t>(grid.size());
  const int n = static_cast<int>(grid.size());
  const int threads = search_threads(ev.options().threads);
  constexpr double kInf = std::numeric_limits<double>::infinity();

  // Branch and bound over the whole grid (exact: a plan is skipped only when its time lower bound
  // exceeds a plan already predicted). Plans are visited cheapest-bound first; when the next
  // bound exceeds the best time, nothing left can win.
  std::vector<double> bound(grid.size(), 0);
  parallel_for(n, threads, 16, [&](int i) { bound[i] = ev.time_lower_bound(grid[i]); });
  std::vector<int> order(grid.size());
  for (int i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return bound[a] < bound[b]; });

  std::vector<EvalPtr> scored(grid.size());
  for (std::size_t first = 0; first < order.size(); first += kRound) {
    const double must_beat = out.best && out.best->feasible ? out.best->time_s : kInf;
    if (bound[order[first]] > must_beat) break;
    const int count = static_cast<int>(std::min(kRound, order.size() - first));
    parallel_for(count, threads, 1, [&](int k) {
      const int i = order[first + k];
      scored[i] = ev.evaluate(grid[i], must_beat);
    });
    // Reduction in grid order within the round; `better` is a total order, so the winner does not
    // depend on threads.
    for (int k = 0; k < count; ++k) {
      const EvalPtr& e = scored[order[first + k]];
      if (e && !e->bounded && (!out.best || better(*e, *out.best))) out.best = e;
    }
  }
  return out;
}

}  // namespace strata
