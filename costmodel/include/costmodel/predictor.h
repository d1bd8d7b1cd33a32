#pragma once
// End-to-end prediction of one training iteration: kernel times of every op of every stage,
// exposed communication, a simulated pipeline schedule, DP synchronization, optimizer step and
// per-stage memory, with the bottleneck and a time breakdown.
#include <string>
#include <vector>

#include "costmodel/job.h"
#include "costmodel/pipeline_sim.h"
#include "costmodel/prediction.h"

namespace strata {

// A plan using more than this share of the usable GPU memory is flagged as tight: the memory
// model's error on published runs (~10%, README "Accuracy") could take it over the limit.
inline constexpr double kTightMemoryFraction = 0.9;

// Legality of the plan for this model and batch (tp divides heads and query groups, batch
// divisible, layers >= stages, ...). Returns "" when the plan is legal, else the reason.
std::string check_plan(const Job& job);

// The search sees the cost model only through this interface, so tests can give it a fake one.
class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual Prediction predict(const Job& job) const = 0;
};

class AnalyticalCostModel final : public CostModel {
 public:
  Prediction predict(const Job& job) const override;
};

// `trace`, when given, receives the simulated pipeline ops (for Chrome/Perfetto traces).
Prediction predict(const Job& job, std::vector<PipelineEvent>* trace = nullptr);

}  // namespace strata
