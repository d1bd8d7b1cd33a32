#include "search/fit_analysis.h"

#include <algorithm>
#include <numeric>
#include <set>

namespace strata {

EvalPtr leanest_plan(Evaluator& ev) {
  const Job& w = ev.workload();
  const SearchOptions& o = ev.options();
  const int n = o.num_gpus;
  EvalPtr best;
  for (int tp = 1; tp <= n; tp *= 2) {
    if (n % tp != 0) continue;
    for (int cp = 1; cp <= n / tp; cp *= 2) {
      if ((n / tp) % cp != 0) continue;
      for (int pp : divisors(n / (tp * cp))) {
        if (pp > w.model.num_layers) break;
        ParallelPlan p = start_plan(o, w.model, tp, pp, cp);
        p.recompute = {o.recompute.value_or(RecomputeGranularity::full), -1};
        EvalPtr e = ev.evaluate(p);
        if (!e) continue;
        // Least memory first; among plans that fit, the fastest.
        const bool take = !best || (e->feasible && best->feasible ? better(*e, *best)
                                                                  : e->memory_GiB < best->memory_GiB ||
                                                                        (e->memory_GiB == best->memory_GiB && better(*e, *best)));
        if (take) best = e;
      }
    }
  }
  return best;
}

int gpus_needed_to_fit(const Job& workload, const SearchOptions& options, const CostModel& model) {
  const int n = options.num_gpus;
  const int gpn = workload.cluster.gpus_per_node;
  std::set<long long> candidates;
  for (long long k = 2; k <= 1024; k *= 2) candidates.insert(static_cast<long long>(n) * k);
  if (n < gpn)
    for (long long k = 1; k <= 1024; k *= 2) candidates.insert(static_cast<long long>(gpn) * k);
  for (long long c : candidates) {
    if (c <= n || c > 10'000'000) continue;
    SearchOptions o = options;
    o.num_gpus = static_cast<int>(c);
    o.on_progress = nullptr;
    Evaluator ev(workload, o, model);
    if (EvalPtr e = leanest_plan(ev); e && e->feasible) return static_cast<int>(c);
  }
  return 0;
}

}  // namespace strata
