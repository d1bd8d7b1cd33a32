#pragma once
// The one-line summary of a plan that the text reports, the plan search's JSON and the trace's
// metadata all show.
#include <string>

#include "costmodel/job.h"

namespace strata {

std::string plan_summary(const ParallelPlan& p);  // "tp=8 pp=16 dp=8 sp mbs=1 recompute=selective dist-opt"

}  // namespace strata
