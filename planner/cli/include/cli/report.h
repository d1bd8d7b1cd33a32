#pragma once
// Human-readable summaries of a prediction.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/job.h"
#include "costmodel/prediction.h"
#include "costmodel/sensitivity.h"
#include "formats/plan_summary.h"

namespace strata {

std::string prediction_report(const Job& job, const Prediction& pred);
// `strata predict --sensitivity`: one line per figure, and the same as a JSON array.
std::string sensitivity_report(const std::vector<Sensitivity>& figures);
nlohmann::json sensitivity_to_json(const std::vector<Sensitivity>& figures);

}  // namespace strata
