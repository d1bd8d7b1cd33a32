#pragma once
// The plan searcher's public interface: given a workload (model, cluster, batch, runtime) and a
// GPU count, find the fastest memory-feasible parallel plan (of plans predicted within 0.5% of
// each other, the one needing the least memory, and one that does not offload activations before
// one that does). The search sees the cost model only
// through strata::CostModel, so tests can hand it a fake one.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/job.h"
#include "costmodel/predictor.h"
#include "costmodel/prediction.h"

namespace strata {

enum class SearchAlgorithm {
  bottleneck,  // Aceso-style iterative bottleneck alleviation from several starts (default)
  exhaustive,  // the whole uniform grid: the reference the bottleneck search is measured against
};

// What a long search reports about itself (at most every half second, after the first second),
// and once more with `done` at the end if it reported before. The command line draws it; the
// search itself writes nothing to the terminal.
struct SearchProgress {
  double seconds = 0;
  std::int64_t plans_predicted = 0;
  std::int64_t ruled_out_by_memory = 0;
  double best_tokens_per_sec_per_gpu = 0;  // 0: no plan fits yet
  bool done = false;
};

struct SearchOptions {
  int num_gpus = 0;
  SearchAlgorithm algorithm = SearchAlgorithm::bottleneck;
  std::uint64_t seed = 0;
  int threads = 0;            // 0: OpenMP's default
  int max_trials = 0;         // 0: the searcher's default budget
  // Called with the search's progress for searches longer than a second (none: no reports).
  std::function<void(const SearchProgress&)> on_progress;
  std::string runtime = "megatron";  // plans stock Megatron-LM can run
  bool allow_tp_across_nodes = false;
  // Let the search move activations to host memory (Megatron-Core's fine-grained activation
  // offloading, primitives.cpp): off by default, since the copies' contention with the NICs on the
  // host link and the host memory the OS keeps are not modelled.
  bool allow_offload = false;
  // Optional user constraints (fixed values); unset means searched.
  std::optional<int> tp, pp, cp, ep, etp, vpp, micro_batch_size;
  std::optional<bool> sequence_parallel;
  std::optional<RecomputeGranularity> recompute;
};

struct RankedPlan {
  Job job;
  Prediction prediction;
};

// Plans whose predicted times differ by less than this fraction are a tie: the difference is far
// below the model's error. Among tied plans the one with the most memory headroom wins, since the
// memory model's own error (~10%) is what decides whether a plan near the limit really fits.
inline constexpr double kTimeTie = 0.005;

struct SearchResult {
  bool found = false;
  RankedPlan best;
  std::vector<RankedPlan> runners_up;  // next best distinct plans, fastest first
  // The fastest plan, when `best` was preferred to it for its memory headroom: a plan predicted
  // less than 0.5% slower (a tie within the model's error) that needs less memory.
  std::optional<RankedPlan> fastest_tied;
  // When `best` is tight (over kTightMemoryFraction of the usable memory): the fastest plan that
  // is not, found by a second search with that much less memory, if one exists.
  std::optional<RankedPlan> with_headroom;
  std::int64_t plans_evaluated = 0;  // full cost-model predictions of plans
  std::int64_t bound_predictions = 0;  // single-micro-batch predictions for time lower bounds
  std::int64_t plans_ruled_out_by_memory = 0;  // rejected by the memory pre-check, not predicted
  int starts = 0;                    // bottleneck search: initial plans climbed from
  std::int64_t grid_size = 0;        // exhaustive search: legal plans in the uniform grid
  double seconds = 0;
  // When nothing fits: why, the smallest per-GPU memory any plan needed, and how many GPUs of
  // this type would make some plan fit (0 when unknown).
  std::string infeasible_reason;
  double min_memory_needed_GiB = 0;
  int gpus_needed_to_fit = 0;
};

// workload.plan is ignored except as a starting hint; the returned jobs carry full plans.
SearchResult search_plans(const Job& workload, const SearchOptions& options, const CostModel& model);

}  // namespace strata
