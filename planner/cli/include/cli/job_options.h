#pragma once
// Command-line description of a job (model, cluster, batch, plan) shared by predict, plan and
// whatif, and its resolution into a costmodel Job with clear errors naming the flag.
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "costmodel/catalog.h"
#include "costmodel/job.h"
#include "formats/plan_input.h"
#include "launch/megatron_import.h"

namespace strata {

struct JobOptions {
  std::string model;
  std::string gpu;
  std::string cluster;
  std::optional<int> gpus;
  std::optional<int> gpus_per_node;
  std::optional<std::int64_t> global_batch;
  std::optional<std::int64_t> seq;
  std::string precision;  // empty: bf16
  std::string fp8_recipe;  // empty: delayed (with --precision fp8)
  bool fp8_param_gather = false;
  bool fp8_attention = false;
  bool grad_reduce_in_bf16 = false;
  std::string optimizer;  // empty: adam
  bool precision_aware_optimizer = false;
  std::string main_params_dtype, exp_avg_dtype, exp_avg_sq_dtype;  // empty: fp32
  double optimizer_offload_fraction = 0;
  std::string cp_comm_type;  // empty: p2p
  std::string attention_kernel;  // empty: auto
  std::string cross_entropy;     // empty: auto
  std::optional<int> cp_a2a_size;  // a2a+p2p: all-to-all group size (default: per NVLink domain)
  int bf16_first_layers = 0;  // decoder layers kept in bf16 at the start of an fp8/fp4 run
  int bf16_last_layers = 0;   // ... and at its end
  std::string framework;  // empty: megatron
  std::optional<std::string> calibration_file;
  // CPU time to issue one MoE layer's forward, ms (sets calibration host.moe_forward_s).
  std::optional<double> moe_forward_host_ms;
  bool no_flash_attention = false;
  bool tp_comm_overlap = false;
  bool no_async_tp_allreduce = false;
  bool no_overlap_grad_reduce = false;
  bool no_overlap_param_gather = false;
  bool no_grad_accumulation_fusion = false;
  std::optional<int> vocab_divisor;  // default RuntimeOptions::kDefaultVocabDivisor
  // Headroom kept free beyond the modelled buffers and fragmentation: allocator spikes, NCCL
  // growth, framework extras the memory model does not see. A default, stated in the output.
  double memory_reserve_GiB = 2.0;
  bool eager_module_loading = false;
  // Host-side per-step overhead (RuntimeOptions::step_overhead_s): a default, stated in the output.
  double step_overhead_s = RuntimeOptions::kDefaultStepOverheadS;
  // MoE routing (RuntimeOptions::moe_load_imbalance / moe_capacity_factor): documented defaults.
  double moe_load_imbalance = RuntimeOptions::kDefaultMoeLoadImbalance;
  double moe_capacity_factor = 0;
  double moe_rank_capacity_factor = 0;
  bool moe_paged_stash = false;
  std::optional<double> moe_paged_stash_factor;  // Megatron's --moe-paged-stash-buffer-size-factor-cuda
  std::optional<double> moe_paged_stash_host_factor;  // Megatron's --moe-paged-stash-buffer-size-factor-cpu
  bool moe_pad_to_capacity = false;
  bool moe_a2a_overlap = false;
  bool moe_shared_expert_overlap = false;
  bool moe_token_dedup = false;
  bool moe_grouped_gemm = false;
  bool moe_allgather_dispatch = false;
  // CUDA graphs (RuntimeOptions::cuda_graph_modules): Megatron's module names, "layer" for the
  // whole layer or "full_iteration"; empty: none.
  std::string cuda_graphs;
  // Multi-token prediction modules trained with the model (ModelSpec::mtp_layers); unset: the model's.
  std::optional<int> mtp_layers;
  bool mtp_repeated_layer = false;  // the MTP depths share one module (ModelSpec::mtp_repeated_layer)
  // Plan flags (predict; plan uses them as constraints later).
  std::optional<int> tp, pp, dp, cp, ep, etp, vpp, mbs;
  std::optional<std::int64_t> microbatch_group;  // interleaved: micro-batches per group (Megatron-Core)
  bool sp = false;
  std::string recompute;  // empty: none
  std::optional<int> recompute_layers;
  std::string recompute_modules;  // with --recompute selective: Megatron's module names; empty: core_attn
  std::string offload_modules;    // fine-grained activation offloading: Megatron's module names; empty: none
  std::optional<std::int64_t> min_offloaded_tensor_size;  // elements; default Megatron's 1M
  int cpu_offload_layers = 0;  // layer-level CPU offloading of the first N layers' activations
  bool dist_opt = false;
  std::string outer_dp_sharding = "no_shard";
  int dist_opt_instances = 1;
  int zero = 0;
  std::string stage_layers;  // "20,20,20,20"
  std::string pipeline_layout;  // Megatron-Core --pipeline-model-parallel-layout, "Et|(tt|)*30mL"
  // A Megatron-LM launch (script or flags) giving the model, batch, plan and runtime features.
  std::string megatron_args;
};

// Flags of the model/cluster/batch part.
void add_workload_options(CLI::App& app, JobOptions& o);
// Flags of the parallel plan part.
void add_plan_options(CLI::App& app, JobOptions& o);
// --megatron-args FILE (predict and plan).
void add_megatron_option(CLI::App& app, JobOptions& o);

// --moe-forward-host-ms, when given, over the job's calibration (host.moe_forward_s). Throws
// InputError outside 0..1000 ms.
void apply_moe_forward_host(const JobOptions& o, Job& job);

// Model, cluster (from --cluster, else a preset for --gpu, else a generic one), calibration,
// training spec and runtime options; the plan is left default. Throws InputError.
Job build_workload(const JobOptions& o, const Catalog& catalog);

// A calibration file (`--calibration`) and the catalog name of the GPU it was measured on, when the
// file names one (`strata calibrate` does); an unknown GPU name is an InputError naming the file.
struct CalibrationFile {
  Calibration calibration;
  std::string gpu;    // empty: the file names no GPU
  nlohmann::json json;
};
CalibrationFile load_calibration_file(const std::string& path, const Catalog& catalog);
// build_workload plus the plan flags; dp is inferred from --gpus when not given. With
// --megatron-args the model, batch, plan and runtime features come from that launch instead, and
// `notes` (when given) receives how it was read.
Job build_job(const JobOptions& o, const Catalog& catalog, std::vector<std::string>* notes = nullptr);
// --megatron-args: the launch read from its file, `--model` filling what its flags leave out,
// after checking that no flag beside it sets what the launch decides. Throws InputError.
MegatronLaunch read_launch_file(const JobOptions& o, const Catalog& catalog);
// The launch's model, batch, precision, runtime features and plan (dp unset) on the hardware of `o`.
Job launch_workload(const MegatronLaunch& launch, const JobOptions& o, const Catalog& catalog);
// `strata plan --megatron-args`: the launch's workload on the GPUs given. Its plan is the
// launch's own when `launch_plan_ok` comes back true; when that plan does not run on this many
// GPUs the workload is still returned and `notes` says why.
Job build_launch_workload(const JobOptions& o, const Catalog& catalog, std::vector<std::string>& notes, bool& launch_plan_ok);

}  // namespace strata
