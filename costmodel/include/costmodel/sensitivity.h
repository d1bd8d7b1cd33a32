#pragma once
// How much a prediction depends on each figure the cost model takes as a default: the kernel and
// network efficiencies (uncalibrated until `strata calibrate`), the cluster's link latencies and
// the host-side step overhead. Each figure is made 10% worse on its own and the job predicted
// again; the change of the iteration time says which figure to measure first.
#include <string>
#include <vector>

#include "costmodel/job.h"

namespace strata {

struct Sensitivity {
  std::string figure;        // e.g. "gemm_efficiency"
  std::string what;          // what it stands for, for the report
  std::string direction;     // how it was made worse: "-10%" (efficiencies) or "+10%" (overheads)
  double time_change = 0;    // relative change of the iteration time (0.05 = 5% slower)
};

// Relative step applied to every figure. 10%: about the spread of these efficiencies between
// software stacks and clock states, and small enough to read the result as a local slope.
inline constexpr double kSensitivityStep = 0.10;

// One entry per figure, largest effect first. Empty when the plan is illegal (there is no
// iteration time to perturb); a plan that does not fit in memory still has one.
std::vector<Sensitivity> prediction_sensitivity(const Job& job);

// A plan ranking that one default figure could flip: with `figure` changed by `direction`, the
// alternative `alternative` (an index into the list given) becomes faster than the chosen plan
// by `faster_by` (0.02 = 2% less iteration time).
struct RankingFlip {
  std::string figure;
  std::string direction;
  int alternative = -1;
  double faster_by = 0;
};

// Each figure 10% better and 10% worse, one at a time: where an alternative then beats `chosen` by
// more than `tie` (relative iteration time), the figure and the alternative that gains most.
// Empty: the ranking holds whichever of these figures is off by 10%.
std::vector<RankingFlip> ranking_sensitivity(const Job& chosen, const std::vector<Job>& alternatives, double tie);

}  // namespace strata
