// STUB; replaced by the real searcher at merge.
// A deliberately small exhaustive search so that code coded against search/searcher.h (the
// whatif command) builds and runs on this branch: tp in {1,2,4,8} (within a node), pp dividing
// the layer count up to 16, micro-batch in {1,2,4}, selective recompute + sequence parallelism +
// distributed optimizer, every plan checked with check_plan and timed with the CostModel. It
// returns the fastest memory-feasible plan. It ignores algorithm, seed, threads and max_trials.
#include <chrono>
#include <limits>

#include "search/searcher.h"

namespace strata {

SearchResult search_plans(const Job& workload, const SearchOptions& options, const CostModel& model) {
  const auto t0 = std::chrono::steady_clock::now();
  SearchResult res;
  double best_time = std::numeric_limits<double>::infinity();
  double min_mem = std::numeric_limits<double>::infinity();
  std::string min_mem_reason, last_illegal;
  const int n = options.num_gpus;
  for (int tp : {1, 2, 4, 8}) {
    if (options.tp && tp != *options.tp) continue;
    if (tp > workload.cluster.gpus_per_node && !options.allow_tp_across_nodes) continue;
    for (int pp = 1; pp <= 16 && pp <= workload.model.num_layers; ++pp) {
      if (workload.model.num_layers % pp != 0) continue;
      if (options.pp && pp != *options.pp) continue;
      if (n <= 0 || n % (tp * pp) != 0) continue;
      for (int mbs : {1, 2, 4}) {
        if (options.micro_batch_size && mbs != *options.micro_batch_size) continue;
        Job job = workload;
        job.plan = ParallelPlan{};
        job.plan.tp = tp;
        job.plan.pp = pp;
        job.plan.dp = n / (tp * pp);
        job.plan.micro_batch_size = mbs;
        job.plan.sequence_parallel = options.sequence_parallel.value_or(tp > 1);
        job.plan.recompute.granularity = options.recompute.value_or(RecomputeGranularity::selective);
        job.plan.distributed_optimizer = true;
        if (std::string why = check_plan(job); !why.empty()) {
          last_illegal = why;
          continue;
        }
        Prediction p = model.predict(job);
        ++res.plans_evaluated;
        if (!p.feasible) {
          if (p.memory_per_gpu_GiB > 0 && p.memory_per_gpu_GiB < min_mem) {
            min_mem = p.memory_per_gpu_GiB;
            min_mem_reason = p.reason;
          }
          continue;
        }
        if (p.iteration_time_s < best_time) {
          best_time = p.iteration_time_s;
          res.found = true;
          res.best = RankedPlan{job, p};
        }
      }
    }
  }
  if (!res.found) {
    if (!min_mem_reason.empty()) {
      res.infeasible_reason = "no plan fits in memory; the smallest needs: " + min_mem_reason;
      res.min_memory_needed_GiB = min_mem;
    } else {
      res.infeasible_reason = last_illegal.empty() ? "no legal plan for " + std::to_string(n) + " GPUs" : "no legal plan: " + last_illegal;
    }
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace strata
