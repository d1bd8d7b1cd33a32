#pragma once
// How `strata plan` presents a search result: the human report (the plan, its numbers, why it
// wins over the runners-up, the Megatron-LM command line) and the "search" object of the plan JSON.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/sensitivity.h"
#include "search/searcher.h"

namespace strata {

const char* to_string(SearchAlgorithm a);

// (Megatron-LM flag, iteration time without it / with it)
using FlagSpeedups = std::vector<std::pair<std::string, double>>;
// The Megatron-LM overlap and dispatch flags the job's runtime leaves off, each added alone to the
// same plan, that Megatron accepts with that plan (check_plan) and that make it faster by more
// than a tie (kTimeTie): gradient reduce and parameter gather overlap, TP communication overlap
// (Transformer Engine's userbuffers), the MoE all-to-all overlap, DeepEP's deduplicating dispatch.
// None for an infeasible prediction or another framework's job.
FlagSpeedups overlap_flag_speedups(const Job& job, const Prediction& prediction);
// `flips` (ranking_sensitivity of the winner against the runners-up), when given, adds whether the
// ranking would hold with each default figure 10% off; `flags` (overlap_flag_speedups of the
// winner), when given, the flags that would speed it up.
std::string search_report(const SearchResult& result, const SearchOptions& options,
                          const std::vector<RankingFlip>* flips = nullptr, const FlagSpeedups* flags = nullptr);
// One line per runner-up in the plan JSON, plus how the search ran. Holds no thread count: the
// result does not depend on it.
nlohmann::json search_to_json(const SearchResult& result, const SearchOptions& options,
                              const std::vector<RankingFlip>* flips = nullptr, const FlagSpeedups* flags = nullptr);
// The runners-up's jobs, in order: the alternatives ranking_sensitivity compares the winner with.
std::vector<Job> runner_up_jobs(const SearchResult& result);
// `strata plan --megatron-args`: the launch's own plan and prediction, the speedup each Megatron
// overlap flag it leaves off would bring, and how the reading of the launch was resolved.
struct LaunchComparison {
  std::string file;
  Job job;
  Prediction prediction;
  FlagSpeedups flag_speedups;
  std::vector<std::string> notes;
};
LaunchComparison compare_launch(const std::string& file, const Job& launch, std::vector<std::string> notes);
// How the best plan found compares (`best` null when the search found none). Notes print as "note: ...".
std::string launch_report(const LaunchComparison& launch, const Prediction* best);
nlohmann::json launch_to_json(const LaunchComparison& launch, const Prediction& best);
// The message for a search with no feasible plan (exit code 2).
std::string infeasible_message(const SearchResult& result);

}  // namespace strata
