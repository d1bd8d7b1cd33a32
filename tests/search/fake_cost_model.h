#pragma once
// A cost model with a known optimum, for checking that the searchers find it: the iteration time
// and memory are lambdas of the plan, and the bottleneck names the term that costs the most.
#include <cmath>
#include <functional>
#include <utility>

#include "costmodel/predictor.h"

namespace strata::test {

class FakeCostModel final : public CostModel {
 public:
  using Fn = std::function<double(const ParallelPlan&)>;
  FakeCostModel(Fn time, Fn memory, double capacity_GiB) : time_(std::move(time)), memory_(std::move(memory)), cap_(capacity_GiB) {}
  Prediction predict(const Job& job) const override {
    Prediction p;
    if (std::string why = check_plan(job); !why.empty()) {
      p.reason = why;
      p.bottleneck = {"illegal", -1, 0, 0, why};
      return p;
    }
    p.iteration_time_s = time_(job.plan);
    p.memory_per_gpu_GiB = memory_(job.plan);
    p.memory_capacity_GiB = cap_;
    p.feasible = p.memory_per_gpu_GiB <= cap_;
    p.tokens_per_sec_per_gpu = static_cast<double>(job.training.global_batch_size * job.training.seq_length) /
                               p.iteration_time_s / job.plan.world_size();
    p.bottleneck.kind = p.feasible ? "compute" : "memory";
    return p;
  }

 private:
  Fn time_, memory_;
  double cap_;
};

// log2 distance, the fake models' "how far from the sweet spot" measure.
inline double dist(int v, int best) { return std::abs(std::log2(static_cast<double>(v)) - std::log2(static_cast<double>(best))); }

}  // namespace strata::test
