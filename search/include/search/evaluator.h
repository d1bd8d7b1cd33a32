#pragma once
// Scores plans for the searcher: legality, a memory pre-check, then the cost model, with every
// result cached by plan (thread-safe, shared by all starts). The cache is what keeps the search
// cheap: primitives revisit plans often, and starts converge to the same region.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "costmodel/predictor.h"
#include "search/plan_space.h"
#include "search/searcher.h"

namespace strata {

// One scored plan. A plan the memory pre-check rules out has no prediction: it is infeasible with
// `memory_GiB` from the pre-check and a "memory" bottleneck on `memory_stage`.
struct Evaluation {
  ParallelPlan plan;
  bool feasible = false;
  double time_s = std::numeric_limits<double>::infinity();  // iteration time; inf when infeasible
  double memory_GiB = 0;
  int memory_stage = 0;
  std::vector<double> stage_memory_GiB;  // per pipeline stage
  std::shared_ptr<const Prediction> prediction;  // null when ruled out by the pre-check or bounded
  // Not predicted because a lower bound on its time (time_s holds the bound) already exceeded the
  // plan it had to beat.
  bool bounded = false;
  const std::string& bottleneck_kind() const;
};
using EvalPtr = std::shared_ptr<const Evaluation>;

// Strict weak order, total on distinct plans: feasible before infeasible, then faster first;
// infeasible plans by memory (less first); ties broken by plan_less so results never depend on
// the order plans were met.
bool better(const Evaluation& a, const Evaluation& b);

class Evaluator {
 public:
  Evaluator(const Job& workload, const SearchOptions& options, const CostModel& model);

  const Job& workload() const { return workload_; }
  const SearchOptions& options() const { return options_; }
  // The workload with `plan` in it.
  Job job_for(const ParallelPlan& plan) const;
  // "" when legal (plan_illegal_reason).
  std::string illegal_reason(const ParallelPlan& plan) const;
  // False when the memory pre-check shows the plan cannot fit (true when it has no pre-check).
  bool may_fit(const ParallelPlan& plan) const;
  // Null for an illegal plan. Thread-safe. With `must_beat_s`, a plan whose time lower bound
  // exceeds it comes back `bounded` instead of predicted; whether it does depends only on the plan
  // and must_beat_s, never on what the cache holds, so searches stay deterministic.
  EvalPtr evaluate(const ParallelPlan& plan, double must_beat_s = std::numeric_limits<double>::infinity());
  // A lower bound on the plan's iteration time, 0 when none is known (only the analytical model
  // gives one). From the per-micro-batch forward f_s and backward b_s of every stage (predicted
  // for a single micro-batch, which costs pp pipeline ops instead of pp*vpp*m): stage s starts
  // only after micro-batch 0's first chunk passed stages 0..s-1 (at least sum_{j<s} f_j / v), is
  // then busy m(f_s + b_s), and after its last backward (chunk 0 of the last micro-batch in both
  // Megatron schedules) stages s-1..0 still run theirs (at least sum_{j<s} b_j / v), so
  //   T >= sum_{j<s} (f_j + b_j) / v + m (f_s + b_s)   for every stage s
  // ((m + (p - 1)/v)(f + b) for even stages: the 1F1B and interleaved bubbles of Narayanan et
  // al. 2021 §2.2, without p2p time).
  double time_lower_bound(const ParallelPlan& plan);
  // m(f_s + b_s) of the busiest stage alone: a bound for the plan with any vpp.
  double busy_lower_bound(const ParallelPlan& plan);

  // Cost-model predictions made (cache misses that passed the memory pre-check).
  std::int64_t predictions() const { return predictions_.load(); }
  std::int64_t pruned() const { return pruned_.load(); }
  // Single-micro-batch predictions made for time lower bounds (one per distinct plan bounded):
  // real cost-model work, reported beside the full predictions.
  std::int64_t bound_predictions() const;
  // Every legal plan scored so far, in plan_less order (deterministic whatever the threads did).
  std::vector<EvalPtr> all() const;
  // The final progress report (SearchProgress::done), if any report was made.
  void finish_progress();

 private:
  Job workload_;
  SearchOptions options_;
  const CostModel& model_;
  bool exact_memory_;  // the analytical model: the pre-check equals its memory model
  double capacity_GiB_;
  mutable std::mutex mu_;
  std::unordered_map<ParallelPlan, EvalPtr, PlanHash> cache_;
  struct Bounds {
    double fill = 0;  // with the pipeline fill and drain
    double busy = 0;  // busiest stage only
  };
  std::unordered_map<ParallelPlan, Bounds, PlanHash> bounds_;
  Bounds bounds(const ParallelPlan& plan);
  EvalPtr best_;
  bool progress_printed_ = false;
  std::atomic<std::int64_t> predictions_{0};
  std::atomic<std::int64_t> pruned_{0};
  // Progress line state.
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_progress_;
  void maybe_report_progress();
  SearchProgress progress_report(std::chrono::steady_clock::time_point now, bool done) const;  // under mu_
};

}  // namespace strata
