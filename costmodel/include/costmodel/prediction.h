#pragma once
// What the predictor returns for one Job. An infeasible plan is an ordinary Prediction with
// feasible == false and a reason; time fields are still filled when they could be computed.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata {

struct MemoryBreakdown {
  double weights_GiB = 0;
  double gradients_GiB = 0;
  double optimizer_GiB = 0;
  double activations_GiB = 0;  // all in-flight micro-batches, incl. the recompute working set
  double logits_GiB = 0;       // output layer + loss buffers (last stage)
  double buffers_GiB = 0;      // communication buffers, CUDA context, workspace
  // The part of buffers_GiB outside PyTorch's caching allocator (the CUDA context and NCCL's own
  // buffers): counted by nvidia-smi, not by torch.cuda.max_memory_allocated/reserved.
  double outside_allocator_GiB = 0;
  double fragmentation_GiB = 0;
  double total_GiB = 0;
  // Host memory per GPU, not in total_GiB: offloaded activations (fine-grained and layer-level) and
  // the offloaded share of the optimizer state.
  double host_GiB = 0;
  bool operator==(const MemoryBreakdown&) const = default;
};

struct StagePrediction {
  int stage = 0;
  int layers = 0;
  double forward_s = 0;    // one micro-batch, all chunks of this rank
  double backward_s = 0;   // one micro-batch, incl. recompute and exposed TP/CP communication
  double recompute_s = 0;  // part of backward_s
  double busy_s = 0;       // total compute time of the stage over one iteration
  int in_flight_micro_batches = 0;  // peak stored activations (in micro-batch-chunks / vpp)
  MemoryBreakdown memory;
  bool operator==(const StagePrediction&) const = default;
};

// Where the iteration time goes, per GPU of the critical stage, adding up to iteration_time_s.
struct TimeBreakdown {
  int stage = 0;  // the critical stage: the one whose step ends last, which ends the iteration
  double compute_s = 0;
  double recompute_s = 0;
  double tp_comm_s = 0;  // exposed
  double cp_comm_s = 0;  // exposed
  double ep_comm_s = 0;  // exposed MoE all-to-all (dispatch and combine)
  double host_s = 0;  // layers waiting on the host to issue them (moe_layer_host_time, dense_layer_host_time)
  double offload_s = 0;  // layers waiting on fine-grained activation offloading's host copies (exposed)
  double pp_comm_s = 0;  // exposed
  double dp_comm_s = 0;  // exposed
  double bubble_s = 0;     // the schedule's own fill and drain
  // Idle time waiting for stages with more work (an uneven layer split, dense and MoE stages, the
  // embedding or loss stage): the critical stage's idle time up to the busiest stage's excess work.
  double imbalance_s = 0;
  double optimizer_s = 0;
  double step_overhead_s = 0;  // host-side per-step overhead (RuntimeOptions::step_overhead_s)
  bool operator==(const TimeBreakdown&) const = default;
};

struct Bottleneck {
  std::string kind;  // "stage_time", "memory", "dp_comm", "bubble", "tp_comm", ...
  int stage = -1;
  // What it costs: `seconds` of an `iteration_s` iteration, or, where a sentence says it better
  // (memory, compute-bound, an illegal plan), that sentence.
  double seconds = 0;
  double iteration_s = 0;
  std::string text;
  // The sentence for reports: `text`, else the cost. Formatted on demand, not per prediction: a
  // search predicts hundreds of plans and reads only their kind.
  std::string detail() const;
  bool operator==(const Bottleneck&) const = default;
};

struct Prediction {
  bool feasible = false;
  std::string reason;  // why infeasible; empty when feasible
  double iteration_time_s = 0;
  double tokens_per_sec_per_gpu = 0;
  double mfu = 0;  // model FLOPs (6N + attention, no recompute) / (time * peak)
  double hfu = 0;  // hardware FLOPs incl. recompute
  double memory_per_gpu_GiB = 0;  // largest stage
  double memory_capacity_GiB = 0;
  std::vector<StagePrediction> stages;
  Bottleneck bottleneck;
  TimeBreakdown breakdown;
  std::vector<std::string> notes;  // defaults or guesses used, worth telling the user
  bool operator==(const Prediction&) const = default;
};

nlohmann::json prediction_to_json(const Prediction& p);

}  // namespace strata
