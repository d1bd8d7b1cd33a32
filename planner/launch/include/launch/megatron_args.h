#pragma once
// The Megatron-LM launch that runs a plan: its flags, spelled as Megatron-LM spells them
// (megatron/training/arguments.py), the environment its argument checks require, and the torchrun
// shape. Megatron-LM's own checks (../shared/megatron-check/check.py) judge every launch written
// here: tests/megatron/ runs them on the launches `strata plan` and `strata predict` write.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "costmodel/job.h"

namespace strata {

struct LaunchPlan {
  // Empty when no launch is written; `refused` then says why.
  std::vector<std::string> megatron_args;
  std::string refused;
  // Environment variables the launch needs (name, value), in the order to export them.
  std::vector<std::pair<std::string, std::string>> env;
  int nnodes = 1;
  int nproc_per_node = 1;
  std::int64_t num_micro_batches = 0;  // per data-parallel replica and iteration
  // What of the modelled job the flags cannot say (the launch still runs; the difference is named).
  std::vector<std::string> notes;
};

// Why Megatron-LM cannot run this job as strata models it, or nullopt. A runtime Megatron-LM does
// not run (DeepSpeed ZeRO, PyTorch FSDP), a model feature it has no implementation of (ALiBi), a
// recompute count Megatron cannot express under interleaving.
std::optional<std::string> megatron_launch_refusal(const Job& job);

// The full launch; `feasible` false (the plan does not fit) gives no flags and the reason.
LaunchPlan megatron_launch(const Job& job, bool feasible = true, const std::string& infeasible_reason = "");

// The flags alone (empty when megatron_launch_refusal says the job has no Megatron launch).
std::vector<std::string> megatron_args(const Job& job);

// Flags joined into one shell-ready line.
std::string join_args(const std::vector<std::string>& args);

// A runnable launch script: torchrun with the launch's shape, its environment and flags, and the
// data and tokenizer arguments as clearly marked variables the user fills in.
std::string launch_script(const Job& job, const LaunchPlan& launch);
// Writes `script` to DIR/launch.sh (DIR created if missing; the script made executable). Throws
// InputError naming the path when it cannot be written.
void write_launch_script(const std::string& dir, const std::string& script);

// Megatron-Core's compute-capability major of the job's GPU (8 Ampere/Ada, 9 Hopper, 10
// Blackwell); 0 for a GPU that is not NVIDIA's.
int cuda_arch_major(const GpuSpec& gpu);

}  // namespace strata
