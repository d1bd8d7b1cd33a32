#pragma once
// Event simulation of the 1F1B (PipeDream-Flush, Narayanan et al. 2021 §2.2.1) and interleaved
// 1F1B (§2.2.2, Megatron-LM's schedules.py ordering, with Megatron-Core's micro-batch groups) pipeline schedules with per-stage, per-chunk
// forward/backward times, so uneven stages and the resulting bubbles are simulated, not assumed.
// A traced run times the ops in an event order; an untraced one sweeps phases of all ranks at once
// (pipeline_sim.cpp), with the same results up to rounding, where the schedule is Megatron's default (groups
// of pp micro-batches, no combined 1F1B); other schedules take the event order untraced too.
#include <cstdint>
#include <string>
#include <vector>

namespace strata {

struct PipelineInput {
  int stages = 1;
  int chunks = 1;  // virtual pipeline size (vpp)
  std::int64_t micro_batches = 1;
  // Interleaved (chunks > 1): micro-batches each chunk runs in a row before the next chunk's
  // (Megatron-Core's microbatch_group_size_per_vp_stage); 0 means `stages`, Megatron's default.
  std::int64_t microbatch_group = 0;
  // Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm) runs one more warm-up
  // forward on every rank, so that each steady step pairs a forward with an independent backward
  // (schedules.py get_pp_rank_microbatches; without pipelining, combined_1f1b_schedule_for_no_pipelining
  // runs forward i+1 with backward i): one more micro-batch in flight.
  bool combined_1f1b = false;
  // Time of one micro-batch through model chunk c of stage s, at [c * stages + s]: the stages of a
  // chunk side by side, as the simulation reads them. resize() sizes both to stages x chunks.
  std::vector<double> forward_s;
  std::vector<double> backward_s;
  double p2p_s = 0;  // activation (or gradient) transfer between adjacent stages

  void resize() {
    forward_s.assign(static_cast<std::size_t>(stages) * chunks, 0.0);
    backward_s.assign(forward_s.size(), 0.0);
  }
  double& forward(int stage, int chunk) { return forward_s[index(stage, chunk)]; }
  double& backward(int stage, int chunk) { return backward_s[index(stage, chunk)]; }
  double forward(int stage, int chunk) const { return forward_s[index(stage, chunk)]; }
  double backward(int stage, int chunk) const { return backward_s[index(stage, chunk)]; }
  std::size_t index(int stage, int chunk) const { return static_cast<std::size_t>(chunk) * stages + stage; }
};

struct PipelineEvent {
  int stage = 0;
  int chunk = 0;
  std::int64_t micro_batch = 0;
  bool backward = false;
  double start_s = 0;
  double end_s = 0;
};

struct PipelineResult {
  double makespan_s = 0;
  std::vector<double> busy_s;        // per stage: sum of its op times
  std::vector<double> end_s;         // per stage: when its last op finishes
  std::vector<int> peak_in_flight;   // per stage: most chunk-micro-batches forwarded, not yet backwarded
};

// Returns an empty optional-like result with makespan 0 when the input is inconsistent; callers
// validate beforehand (with chunks > 1, a micro-batch group Megatron-Core accepts:
// microbatch_group_accepted). `trace` receives every op.
PipelineResult simulate_pipeline(const PipelineInput& in, std::vector<PipelineEvent>* trace = nullptr);

// Whether Megatron-Core's interleaved schedule runs `micro_batches` in groups of `group` over
// `stages` stages (the two checks of schedules.py forward_backward_pipelining_with_interleaving):
// stages <= group <= micro_batches, and the last group, micro_batches % group, 0 or at least stages.
bool microbatch_group_accepted(std::int64_t group, int stages, std::int64_t micro_batches);

// Most chunk-micro-batches pipeline rank `rank` holds forwarded and not yet backwarded: its warmup
// forwards and the first steady-state one (all of them when the warmup covers every forward).
// `microbatch_group` and `combined_1f1b` as in PipelineInput.
int pipeline_peak_in_flight(int stages, int chunks, int rank, std::int64_t micro_batches, std::int64_t microbatch_group = 0,
                            bool combined_1f1b = false);

}  // namespace strata
