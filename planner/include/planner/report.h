#pragma once
// Human-readable summaries of a prediction.
#include <string>

#include "costmodel/job.h"
#include "costmodel/prediction.h"

namespace strata {

std::string plan_summary(const ParallelPlan& p);  // "tp=8 pp=16 dp=8 sp mbs=1 recompute=selective dist-opt"
std::string prediction_report(const Job& job, const Prediction& pred);

}  // namespace strata
