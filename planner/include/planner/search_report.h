#pragma once
// How `strata plan` presents a search result: the human report (the plan, its numbers, why it
// wins over the runners-up, the Megatron-LM command line) and the "search" object of the plan JSON.
#include <string>

#include <nlohmann/json.hpp>

#include "costmodel/sensitivity.h"
#include "search/searcher.h"

namespace strata {

const char* to_string(SearchAlgorithm a);

// `flips` (ranking_sensitivity of the winner against the runners-up), when given, adds whether the
// ranking would hold with each default figure 10% off.
std::string search_report(const SearchResult& result, const SearchOptions& options,
                          const std::vector<RankingFlip>* flips = nullptr);
// One line per runner-up in the plan JSON, plus how the search ran. Holds no thread count: the
// result does not depend on it.
nlohmann::json search_to_json(const SearchResult& result, const SearchOptions& options,
                              const std::vector<RankingFlip>* flips = nullptr);
// The runners-up's jobs, in order: the alternatives ranking_sensitivity compares the winner with.
std::vector<Job> runner_up_jobs(const SearchResult& result);
// `strata plan --megatron-args`: the launch's own plan, its prediction and how the best plan found
// compares (`best` null when the search found none). Each note is printed as "note: ...".
std::string launch_report(const std::string& file, const Job& launch, const Prediction& pred, const Prediction* best,
                          const std::vector<std::string>& notes);
nlohmann::json launch_to_json(const std::string& file, const Job& launch, const Prediction& pred, const Prediction& best,
                              const std::vector<std::string>& notes);
// The message for a search with no feasible plan (exit code 2).
std::string infeasible_message(const SearchResult& result);

}  // namespace strata
