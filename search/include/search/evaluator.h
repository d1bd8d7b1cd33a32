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
  std::shared_ptr<const Prediction> prediction;  // null when ruled out by the pre-check
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
  // Null for an illegal plan. Thread-safe.
  EvalPtr evaluate(const ParallelPlan& plan);

  // Cost-model predictions made (cache misses that passed the memory pre-check).
  std::int64_t predictions() const { return predictions_.load(); }
  std::int64_t pruned() const { return pruned_.load(); }
  // Every legal plan scored so far, in plan_less order (deterministic whatever the threads did).
  std::vector<EvalPtr> all() const;
  // Ends the progress line (a newline) if one was printed.
  void finish_progress();

 private:
  Job workload_;
  SearchOptions options_;
  const CostModel& model_;
  bool exact_memory_;  // the analytical model: the pre-check equals its memory model
  double capacity_GiB_;
  mutable std::mutex mu_;
  std::unordered_map<ParallelPlan, EvalPtr, PlanHash> cache_;
  EvalPtr best_;
  bool progress_printed_ = false;
  std::atomic<std::int64_t> predictions_{0};
  std::atomic<std::int64_t> pruned_{0};
  // Progress line state.
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_progress_;
  void maybe_report_progress();
};

}  // namespace strata
