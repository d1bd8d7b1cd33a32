#include "cli/job_options.h"
#include "cli/tokenizer_vocab.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <sstream>

#include <fmt/format.h>

#include "costmodel/errors.h"
#include "costmodel/file_io.h"
#include "costmodel/json_reader.h"
#include "launch/megatron_import.h"

namespace strata {

namespace {

constexpr const char* kCmd = "command line";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// --optimizer and the precision-aware optimizer's options (Megatron's OptimizerConfig); the
// combinations Megatron refuses are check_plan's to say.
OptimizerSpec optimizer_spec(const JobOptions& o) {
  OptimizerSpec spec;
  if (!o.optimizer.empty()) {
    auto kind = optimizer_kind_from_string(lower(o.optimizer));
    if (!kind) throw InputError(kCmd, "--optimizer", "expected adam, sgd, muon or lion, found \"" + o.optimizer + "\"");
    spec.kind = *kind;
  }
  spec.precision_aware = o.precision_aware_optimizer;
  auto dtype = [&](const std::string& text, const char* flag, StateDtype& dst) {
    if (text.empty()) return;
    auto d = state_dtype_from_string(lower(text));
    if (!d) throw InputError(kCmd, flag, "expected fp32, bf16, fp16 or fp8, found \"" + text + "\"");
    if (!o.precision_aware_optimizer && *d != StateDtype::fp32) throw InputError(kCmd, flag, "needs --precision-aware-optimizer");
    dst = *d;
  };
  dtype(o.main_params_dtype, "--main-params-dtype", spec.main_params);
  dtype(o.exp_avg_dtype, "--exp-avg-dtype", spec.exp_avg);
  dtype(o.exp_avg_sq_dtype, "--exp-avg-sq-dtype", spec.exp_avg_sq);
  if (!(o.optimizer_offload_fraction >= 0 && o.optimizer_offload_fraction <= 1))
    throw InputError(kCmd, "--optimizer-offload-fraction", "expected a share from 0 to 1");
  if (o.optimizer_offload_fraction > 0 && !o.precision_aware_optimizer)
    throw InputError(kCmd, "--optimizer-offload-fraction", "needs --precision-aware-optimizer (Megatron's check)");
  spec.cpu_offload_fraction = o.optimizer_offload_fraction;
  return spec;
}

}  // namespace

void add_workload_options(CLI::App& app, JobOptions& o) {
  app.add_option("--model", o.model, "Model name (strata list models) or path to a model JSON / Hugging Face config.json");
  app.add_option("--gpu", o.gpu, "GPU name (strata list gpus) or path to a GPU JSON");
  app.add_option("--cluster", o.cluster, "Cluster preset (strata list clusters) or path to a cluster JSON");
  app.add_option("--gpus", o.gpus, "Total number of GPUs");
  app.add_option("--gpus-per-node", o.gpus_per_node, "GPUs per node (NVLink domain size), overrides the cluster's");
  app.add_option("--global-batch", o.global_batch, "Global batch size in sequences");
  app.add_option("--seq", o.seq, "Sequence length in tokens (default: the model's max_seq_length)");
  app.add_option("--precision", o.precision, "fp32 | tf32 | fp16 | bf16 | fp8 (default bf16)");
  app.add_option("--fp8-recipe", o.fp8_recipe,
                 "With --precision fp8: delayed | tensorwise | blockwise | mxfp8 | nvfp4 (Transformer Engine recipe; default delayed, tensorwise for --framework fsdp: torchao's Float8 default)");
  app.add_flag("--fp8-param-gather", o.fp8_param_gather, "fp8 parameters, no bf16 weight copy (Megatron --fp8-param-gather); with --framework fsdp, torchao's float8 all-gather: the linears' weights gathered in fp8 (tensorwise scaling)");
  app.add_flag("--fp8-attention", o.fp8_attention,
               "With --precision fp8: the attention core in fp8 too (Transformer Engine fp8_dpa; Megatron-Core "
               "TransformerConfig.fp8_dot_product_attention, which Megatron-LM has no flag for; Megatron-Bridge "
               "mixed_precision.fp8_dot_product_attention)");
  app.add_flag("--grad-reduce-in-bf16", o.grad_reduce_in_bf16, "16-bit gradient buffer and reduction (Megatron --grad-reduce-in-bf16; with --precision fp16, Megatron's default, "
                "which launches get by leaving out --accumulate-allreduce-grads-in-fp32)");
  app.add_option("--optimizer", o.optimizer, "adam | sgd | muon | lion (default adam; Megatron --optimizer)");
  app.add_flag("--precision-aware-optimizer", o.precision_aware_optimizer,
               "Transformer Engine's FusedAdam keeps master weights and moments in the dtypes below; bf16 models keep only "
               "16-bit remainders of fp32 master weights (Megatron --use-precision-aware-optimizer; needs --dist-opt)");
  app.add_option("--main-params-dtype", o.main_params_dtype, "With --precision-aware-optimizer: fp32 | fp16 master weights (default fp32)");
  app.add_option("--exp-avg-dtype", o.exp_avg_dtype, "With --precision-aware-optimizer: fp32 | bf16 | fp16 | fp8 first moment (default fp32)");
  app.add_option("--exp-avg-sq-dtype", o.exp_avg_sq_dtype, "With --precision-aware-optimizer: fp32 | bf16 | fp16 | fp8 second moment (default fp32)");
  app.add_option("--optimizer-offload-fraction", o.optimizer_offload_fraction,
                 "Share (0-1) of the optimizer state kept and updated on the host (Megatron --optimizer-cpu-offload; needs "
                 "--precision-aware-optimizer); its host link copies are costed, the host's update is not");
  app.add_option("--cp-comm-type", o.cp_comm_type,
                 "p2p | a2a | allgather | a2a+p2p: how context-parallel ranks exchange K/V (Megatron --cp-comm-type; default p2p, allgather for DeepSeek Sparse Attention and for --framework fsdp, torchtitan's default context_parallel_rotate_method)");
  app.add_option("--num-layers-at-start-in-bf16", o.bf16_first_layers,
                 "With --precision fp8: decoder layers at the start of the model kept in bf16 (Megatron --first-last-layers-bf16)");
  app.add_option("--num-layers-at-end-in-bf16", o.bf16_last_layers,
                 "With --precision fp8: decoder layers at the end of the model kept in bf16 (Megatron --first-last-layers-bf16)");
  app.add_option("--cp-a2a-size", o.cp_a2a_size,
                 "With --cp-comm-type a2a+p2p: CP ranks of each all-to-all group, the ring runs over cp / this (Megatron "
                 "--hierarchical-context-parallel-sizes; default: the CP ranks within one NVLink domain)");
  app.add_option("--framework", o.framework, "megatron | deepspeed | fsdp (default megatron)");
  app.add_option("--calibration", o.calibration_file, "Calibration JSON from `strata calibrate` (default: configs/calibration/<gpu>.json if present)");
  app.add_option("--moe-forward-host-ms", o.moe_forward_host_ms,
                 "MoE: CPU time your stack takes to issue one MoE block's forward, in ms, measured (a dropless dispatcher "
                 "syncs the host each layer, so the forward takes at least this long plus its attention block's host time; "
                 "sets the calibration's host.moe_forward_s, and the backward keeps the measured line's proportion; default: "
                 "the calibration's host line, Megatron-Core's MoE layer as measured on an H100 machine's CPU)");
  app.add_flag("--no-flash-attention", o.no_flash_attention, "Unfused attention (materialized s x s scores)");
  app.add_option("--attention-kernel", o.attention_kernel,
                 "auto | flash | cudnn: the fused attention kernel (FlashAttention-2, or cuDNN's as Transformer Engine runs it; "
                 "default auto: cuDNN for Megatron on Hopper and later, else FlashAttention-2)");
  app.add_option("--cross-entropy", o.cross_entropy,
                 "auto | eager | jit-fused | single-pass: the loss's kernels (eager: Megatron's fp32 vocab-parallel cross "
                 "entropy; jit-fused: Megatron --cross-entropy-loss-fusion; single-pass: one fused kernel, Transformer "
                 "Engine's or flash-attn's; default auto: jit-fused for Megatron, which a launch strata writes asks for, else eager)");
  app.add_flag("--tp-comm-overlap", o.tp_comm_overlap, "Overlap TP communication with GEMMs (Megatron --tp-comm-overlap)");
  app.add_flag("--no-overlap-grad-reduce", o.no_overlap_grad_reduce, "Do not overlap DP gradient reduction with backward");
  app.add_flag("--no-overlap-param-gather", o.no_overlap_param_gather,
               "Do not overlap the distributed optimizer's parameter all-gather with the next forward");
  app.add_flag("--no-async-tp-allreduce", o.no_async_tp_allreduce,
               "Backward TP all-reduces block instead of overlapping the weight-gradient GEMMs (Megatron-LM before 2022)");
  app.add_flag("--no-grad-accumulation-fusion", o.no_grad_accumulation_fusion,
               "Weight gradients are added to the accumulation buffer by a separate pass per micro-batch (Megatron without "
               "--gradient-accumulation-fusion, plain PyTorch)");
  app.add_option("--make-vocab-size-divisible-by", o.vocab_divisor,
                 "Pad the vocabulary to a multiple of this times tp, as Megatron does (default 128; 1: no padding; ignored by fsdp)");
  app.add_flag("--eager-module-loading", o.eager_module_loading,
               "The stack loads every CUDA kernel module at start-up (CUDA before 11.7, PyTorch before 1.13, or "
               "CUDA_MODULE_LOADING=EAGER): a 1.5 GiB CUDA context instead of 0.5");
  app.add_option("--memory-reserve", o.memory_reserve_GiB, "GiB of GPU memory to keep free beyond the modelled buffers and fragmentation (default 2)");
  app.add_option("--step-overhead", o.step_overhead_s,
                 "Seconds of host-side work per training step outside the modelled GPU work: optimizer dispatch, host syncs, logging, data loading (default 0.1, a guess; measure it for your stack)");
  app.add_option("--moe-load-imbalance", o.moe_load_imbalance,
                 "MoE: routed tokens of the busiest expert-parallel rank over the mean (1 = balanced, e.g. force-balanced "
                 "benchmarks; default 1.2, a guess for auxiliary-loss balanced routing)");
  app.add_option("--moe-capacity-factor", o.moe_capacity_factor,
                 "MoE: expert capacity factor, tokens beyond it are dropped (Megatron --moe-expert-capacity-factor; default 0 = dropless)");
  app.add_flag("--moe-pad-to-capacity", o.moe_pad_to_capacity,
               "MoE: with --moe-capacity-factor, pad every expert's input to its capacity (Megatron "
               "--moe-pad-expert-input-to-capacity): fixed sizes, no host synchronisation per MoE layer");
  app.add_option("--moe-rank-capacity-factor", o.moe_rank_capacity_factor,
                 "MoE: HybridEP's static per-rank token budget over the mean (Megatron --moe-expert-rank-capacity-factor, with "
                 "--moe-token-dedup): fixed buffers, no host synchronisation per MoE layer; default 0 = dynamic");
  app.add_flag("--moe-paged-stash", o.moe_paged_stash,
               "MoE: with --moe-rank-capacity-factor and --moe-grouped-gemm, the experts' saved tensors go to Megatron-Core's paged "
               "stash (--moe-paged-stash): what arrived, not the budget's rows");
  app.add_option("--moe-paged-stash-buffer-size-factor-cuda", o.moe_paged_stash_factor,
                 "With --moe-paged-stash: the stash pool over the mean tokens (negative: over the actual maximum; Megatron's "
                 "default 1.10)");
  app.add_option("--moe-paged-stash-buffer-size-factor-cpu", o.moe_paged_stash_host_factor,
                 "With --moe-paged-stash: a pinned host pool for what overflows, over the mean tokens (negative: over the actual "
                 "maximum; Megatron's default 0, none); counted in host memory");
  app.add_option("--mtp-layers", o.mtp_layers,
                 "Multi-token prediction modules trained with the model (Megatron --mtp-num-layers; default: the model's, "
                 "e.g. 1 for DeepSeek-V3's num_nextn_predict_layers; 0 trains none)");
  app.add_flag("--mtp-repeated-layer", o.mtp_repeated_layer,
               "The MTP depths share one module's weights, computed once per depth (Megatron --mtp-use-repeated-layer)");
  app.add_flag("--moe-a2a-overlap", o.moe_a2a_overlap, "MoE: the expert-parallel all-to-all overlaps computation (Megatron --overlap-moe-expert-parallel-comm)");
  app.add_flag("--moe-shared-expert-overlap", o.moe_shared_expert_overlap,
               "MoE: the shared experts run beside the dispatch and combine all-to-alls (Megatron --moe-shared-expert-overlap)");
  app.add_flag("--moe-allgather-dispatch", o.moe_allgather_dispatch,
               "MoE: Megatron's allgather token dispatcher (its default without --moe-token-dispatcher-type): the expert-parallel "
               "group's tokens are all-gathered and the expert outputs reduce-scattered");
  app.add_flag("--moe-grouped-gemm", o.moe_grouped_gemm,
               "MoE: the local experts run as one grouped GEMM (Megatron --moe-grouped-gemm); without it one expert after another, "
               "Megatron's default and what a launch strata writes runs");
  app.add_flag("--moe-token-dedup", o.moe_token_dedup,
               "MoE: DeepEP/HybridEP dispatch, each token crosses the network once per destination node (Megatron --moe-flex-dispatcher-backend)");
  app.add_option("--cuda-graphs", o.cuda_graphs,
                 "CUDA graphs over each layer's modules, comma-separated: attn, mlp, moe, moe_router, moe_preprocess, mamba; "
                 "\"layer\" for the whole layer, or \"full_iteration\" for the whole step (Megatron --cuda-graph-impl and "
                 "--cuda-graph-modules): they shorten the host time of the layers; default none");
}

void add_megatron_option(CLI::App& app, JobOptions& o) {
  app.add_option("--megatron-args", o.megatron_args,
                 "Megatron-LM launch (a pretrain_gpt.py command line, a shell script that builds one, or a file of flags; - reads stdin): "
                 "the model, batch, plan and runtime features come from it; give the hardware with --cluster/--gpu and --gpus");
}

void add_plan_options(CLI::App& app, JobOptions& o) {
  app.add_option("--tp", o.tp, "Tensor-parallel size");
  app.add_option("--pp", o.pp, "Pipeline-parallel size");
  app.add_option("--dp", o.dp, "Data-parallel size (default: gpus / (tp*pp*cp))");
  app.add_option("--cp", o.cp, "Context-parallel size");
  app.add_option("--ep", o.ep, "Expert-parallel size (MoE)");
  app.add_option("--etp", o.etp, "Expert-tensor-parallel size (MoE; default 1: experts not split)");
  app.add_option("--vpp", o.vpp, "Virtual pipeline chunks per rank (interleaved 1F1B)");
  app.add_option("--microbatch-group", o.microbatch_group,
                 "With --vpp: micro-batches each model chunk runs in a row (Megatron-Core "
                 "--microbatch-group-size-per-virtual-pipeline-stage; default pp, or the smallest group Megatron-Core accepts "
                 "when pp does not divide the micro-batches)");
  app.add_option("--mbs", o.mbs, "Micro-batch size");
  app.add_flag("--sp", o.sp, "Sequence parallelism");
  app.add_option("--recompute", o.recompute, "none | selective | full");
  app.add_option("--recompute-layers", o.recompute_layers, "With --recompute full: layers recomputed per stage (default all)");
  app.add_option("--recompute-modules", o.recompute_modules,
                 "With --recompute selective: comma-separated Megatron-Core modules to recompute, of core_attn, moe_act, "
                 "layernorm, mla_up_proj, mlp, moe, shared_experts (Megatron --recompute-modules; default core_attn)");
  app.add_option("--offload-modules", o.offload_modules,
                 "Fine-grained activation offloading: comma-separated Megatron-Core modules whose saved tensors go to host "
                 "memory in forward and come back for backward, of attn_norm, qkv_linear, core_attn, attn_proj, mlp_norm, "
                 "expert_fc1, moe_act, fused_group_mlp (Megatron --fine-grained-activation-offloading --offload-modules)");
  app.add_option("--min-offloaded-tensor-size", o.min_offloaded_tensor_size,
                 "With --offload-modules: tensors of fewer elements stay on the GPU (Megatron --min-offloaded-tensor-size; "
                 "default 1048576)");
  app.add_option("--cpu-offload-layers", o.cpu_offload_layers,
                 "Layer-level CPU offloading: every activation of the first N decoder layers goes to host memory in forward "
                 "and comes back in backward (Megatron --cpu-offloading-num-layers; pp 1 and no recompute only)");
  app.add_flag("--dist-opt", o.dist_opt, "Megatron distributed optimizer");
  app.add_option("--dist-opt-instances", o.dist_opt_instances,
                 "With --dist-opt: copies of the distributed optimizer, each sharding over dp*cp/N ranks and all-reducing its "
                 "shard across the copies; with --zero 2/3, Megatron-FSDP's hybrid sharding (HSDP) over N replica groups "
                 "(Megatron --num-distributed-optimizer-instances; default 1); with --framework fsdp --zero 3, FSDP2's HSDP "
                 "(torchtitan's data_parallel_replicate_degree)");
  app.add_option("--outer-dp-sharding-strategy", o.outer_dp_sharding,
                 "With --zero 3 and --dist-opt-instances N: no_shard (the N replicas hold the same state, default) or optim "
                 "(they split each shard's optimizer state; Megatron --outer-dp-sharding-strategy)");
  app.add_option("--zero", o.zero, "ZeRO stage 0..3");
  app.add_option("--stage-layers", o.stage_layers, "Comma-separated layers per pipeline stage (uneven split)");
  app.add_option("--pipeline-layout", o.pipeline_layout,
                 "Megatron-Core's --pipeline-model-parallel-layout: E embedding, t decoder layer (t*N: N of them), m MTP layer, "
                 "L loss, '|' between virtual stages, (...)*N repeats; sets vpp and the layers of every model chunk over --pp "
                 "(e.g. \"Et|(tt|)*30mL\", Megatron-Bridge's DeepSeek-V3 at --pp 16)");
}

CalibrationFile load_calibration_file(const std::string& path, const Catalog& catalog) {
  CalibrationFile f;
  f.json = load_json_file(path);
  f.calibration = calibration_from_json(f.json, path);
  if (auto it = f.json.find("gpu"); it != f.json.end() && it->is_string()) {
    try {
      f.gpu = catalog.gpu(it->get<std::string>()).name;
    } catch (const InputError&) {
      throw InputError(path, "/gpu", "unknown gpu \"" + it->get<std::string>() + "\" (see `strata list gpus`)");
    }
  }
  return f;
}

namespace {

// Cluster (from --cluster, else a preset for --gpu), its overrides, calibration and the host-side
// figures: the part of a job every way of describing the workload shares.
void apply_hardware_options(const JobOptions& o, const Catalog& catalog, Job& job) {
  if (!o.cluster.empty()) {
    job.cluster = catalog.cluster(o.cluster);
    if (!o.gpu.empty()) {
      GpuSpec g = catalog.gpu(o.gpu);
      if (g.name != job.cluster.gpu.name)
        throw InputError(kCmd, "--gpu", "\"" + o.gpu + "\" differs from the GPU of cluster " + job.cluster.name + " (" +
                                           job.cluster.gpu.name + "); give one of --gpu or --cluster");
    }
  } else if (!o.gpu.empty()) {
    GpuSpec g = catalog.gpu(o.gpu);
    job.cluster = default_cluster_for(g);
    for (const auto& e : catalog.list("clusters")) {
      ClusterSpec c = catalog.cluster(e.path);
      if (c.gpu.name == g.name) {
        job.cluster = c;
        job.cluster.gpu = g;  // a GPU file given by path keeps its own figures
        break;
      }
    }
  } else {
    throw InputError(kCmd, "--gpu", "give --gpu NAME or --cluster NAME");
  }
  if (o.gpus_per_node) {
    if (*o.gpus_per_node < 1 || *o.gpus_per_node > 100000) throw InputError(kCmd, "--gpus-per-node", "expected 1..100000");
    job.cluster.gpus_per_node = *o.gpus_per_node;
  }
  if (!std::isfinite(o.memory_reserve_GiB) || o.memory_reserve_GiB < 0 || o.memory_reserve_GiB >= job.cluster.gpu.memory_GiB)
    throw InputError(kCmd, "--memory-reserve", "expected 0 <= GiB < the GPU's memory");
  job.runtime.memory_reserve_GiB = o.memory_reserve_GiB;
  job.runtime.lazy_module_loading = !o.eager_module_loading;
  if (!(o.step_overhead_s >= 0 && o.step_overhead_s <= RuntimeOptions::kMaxStepOverheadS))
    throw InputError(kCmd, "--step-overhead", "expected 0..3600 seconds");
  job.runtime.step_overhead_s = o.step_overhead_s;
  // The routing balance is no Megatron flag, so it is this option's whatever describes the workload
  // (a launch that forces balance sets 1 unless the option is given).
  if (!(o.moe_load_imbalance >= 1 && o.moe_load_imbalance <= 64))
    throw InputError(kCmd, "--moe-load-imbalance", "expected a factor from 1 (balanced) to 64");
  if (o.moe_load_imbalance != RuntimeOptions::kDefaultMoeLoadImbalance) job.runtime.moe_load_imbalance = o.moe_load_imbalance;
  if (o.calibration_file) {
    CalibrationFile f = load_calibration_file(*o.calibration_file, catalog);
    // Figures measured on one GPU say nothing about another.
    if (!f.gpu.empty() && f.gpu != job.cluster.gpu.name)
      throw InputError(*o.calibration_file, "/gpu",
                       "calibrated on " + f.gpu + ", but the job runs on " + job.cluster.gpu.name +
                           "; calibrate each GPU type separately (or sweep only " + f.gpu + ")");
    job.calibration = std::move(f.calibration);
  } else {
    job.calibration = catalog.calibration_or_default(job.cluster.gpu);
  }
  apply_moe_forward_host(o, job);
  if (o.gpus && (*o.gpus < 1 || *o.gpus > kMaxGpus))
    throw InputError(kCmd, "--gpus", "expected 1..10,000,000 GPUs, found " + std::to_string(*o.gpus));
}

}  // namespace

void apply_moe_forward_host(const JobOptions& o, Job& job) {
  if (!o.moe_forward_host_ms) return;
  if (!(*o.moe_forward_host_ms >= 0 && *o.moe_forward_host_ms <= 1000))
    throw InputError(kCmd, "--moe-forward-host-ms", "expected 0..1000 milliseconds per MoE layer forward");
  job.calibration.host.moe_forward_s = *o.moe_forward_host_ms / 1e3;
}

Job build_workload(const JobOptions& o, const Catalog& catalog) {
  Job job;
  if (o.model.empty()) throw InputError(kCmd, "--model", "give --model NAME or a path to a model JSON / config.json");
  job.model = catalog.model(o.model);
  if (o.mtp_layers) {
    if (*o.mtp_layers < 0 || *o.mtp_layers > 64) throw InputError(kCmd, "--mtp-layers", "expected 0..64 multi-token prediction modules");
    job.model.set_mtp_layers(*o.mtp_layers);
  }
  if (o.mtp_repeated_layer) {
    if (job.model.mtp_layers == 0)
      throw InputError(kCmd, "--mtp-repeated-layer", "the model trains no MTP module (give --mtp-layers N for N depths)");
    job.model.mtp_repeated_layer = true;
  }
  const std::string precision = o.precision.empty() ? "bf16" : o.precision;
  auto prec = precision_from_string(lower(precision));
  if (!prec) throw InputError(kCmd, "--precision", "expected fp32, tf32, fp16, bf16 or fp8, found \"" + o.precision + "\"");
  job.training.precision = *prec;
  if (!o.fp8_recipe.empty()) {
    auto recipe = recipe_from_string(lower(o.fp8_recipe));
    if (!recipe) throw InputError(kCmd, "--fp8-recipe", "expected delayed, tensorwise, blockwise, mxfp8 or nvfp4, found \"" + o.fp8_recipe + "\"");
    if (job.training.precision != Precision::fp8) throw InputError(kCmd, "--fp8-recipe", "needs --precision fp8");
    job.training.recipe = *recipe;
  }
  job.runtime.fp8_param_gather = o.fp8_param_gather;
  job.runtime.fp8_attention = o.fp8_attention;
  if (o.fp8_attention && job.training.precision != Precision::fp8) throw InputError(kCmd, "--fp8-attention", "needs --precision fp8");
  job.runtime.grad_reduce_in_bf16 = o.grad_reduce_in_bf16;
  job.training.optimizer = optimizer_spec(o);
  if (!o.cp_comm_type.empty()) {
    auto cp = cp_comm_type_from_string(lower(o.cp_comm_type));
    if (!cp) throw InputError(kCmd, "--cp-comm-type", "expected p2p, a2a, allgather or a2a+p2p, found \"" + o.cp_comm_type + "\"");
    job.runtime.cp_comm_type = *cp;
  } else if (job.model.dsa) {
    job.runtime.cp_comm_type = CpCommType::allgather;  // the only CP exchange Megatron-Core's DSA runs
  }
  if (o.bf16_first_layers != 0 || o.bf16_last_layers != 0) {
    if (job.training.precision != Precision::fp8)
      throw InputError(kCmd, o.bf16_first_layers != 0 ? "--num-layers-at-start-in-bf16" : "--num-layers-at-end-in-bf16",
                       "needs --precision fp8 (the other layers' low precision)");
    if (o.bf16_first_layers < 0 || o.bf16_first_layers > (1 << 20))
      throw InputError(kCmd, "--num-layers-at-start-in-bf16", "expected a number of layers >= 0");
    if (o.bf16_last_layers < 0 || o.bf16_last_layers > (1 << 20))
      throw InputError(kCmd, "--num-layers-at-end-in-bf16", "expected a number of layers >= 0");
    job.runtime.bf16_first_layers = o.bf16_first_layers;
    job.runtime.bf16_last_layers = o.bf16_last_layers;
  }
  if (o.cp_a2a_size) {
    if (job.runtime.cp_comm_type != CpCommType::a2a_p2p) throw InputError(kCmd, "--cp-a2a-size", "needs --cp-comm-type a2a+p2p");
    if (*o.cp_a2a_size < 1 || *o.cp_a2a_size > kMaxParallelSize)
      throw InputError(kCmd, "--cp-a2a-size", "expected a positive all-to-all group size that divides --cp");
    job.runtime.cp_a2a_size = *o.cp_a2a_size;
  }
  if (!o.global_batch || *o.global_batch < 1 || *o.global_batch > (std::int64_t{1} << 40))
    throw InputError(kCmd, "--global-batch", "expected a positive number of sequences");
  job.training.global_batch_size = *o.global_batch;
  job.training.seq_length = o.seq.value_or(job.model.max_seq_length);
  if (job.training.seq_length < 1 || job.training.seq_length > (std::int64_t{1} << 24))
    throw InputError(kCmd, "--seq", "expected a sequence length between 1 and 16M tokens");
  auto fw = parse_framework(o.framework.empty() ? "megatron" : o.framework);
  if (!fw) throw InputError(kCmd, "--framework", "expected megatron, deepspeed or fsdp, found \"" + o.framework + "\"");
  job.runtime.framework = *fw;
  // PyTorch's context parallelism (torch.distributed.tensor.experimental.context_parallel) rotates
  // K/V by all-gather under torchtitan's default context_parallel_rotate_method "allgather".
  if (o.cp_comm_type.empty() && job.runtime.framework == Framework::fsdp) job.runtime.cp_comm_type = CpCommType::allgather;
  // fp8 on an FSDP stack is torchao's Float8 training, tensorwise dynamic scaling by default.
  if (o.fp8_recipe.empty() && job.runtime.framework == Framework::fsdp && job.training.precision == Precision::fp8)
    job.training.recipe = LowPrecisionRecipe::tensorwise;
  job.runtime.flash_attention = !o.no_flash_attention;
  if (!o.attention_kernel.empty()) {
    auto k = attention_kernel_from_string(lower(o.attention_kernel));
    if (!k) throw InputError(kCmd, "--attention-kernel", "expected auto, flash or cudnn, found \"" + o.attention_kernel + "\"");
    if (o.no_flash_attention && *k != AttentionKernel::automatic)
      throw InputError(kCmd, "--attention-kernel", "names a fused attention kernel, but --no-flash-attention runs attention unfused");
    job.runtime.attention_kernel = *k;
  }
  if (!o.cross_entropy.empty()) {
    auto k = cross_entropy_kernel_from_string(lower(o.cross_entropy));
    if (!k) throw InputError(kCmd, "--cross-entropy", "expected auto, eager, jit-fused or single-pass, found \"" + o.cross_entropy + "\"");
    job.runtime.cross_entropy = *k;
  }
  job.runtime.tp_comm_overlap = o.tp_comm_overlap;
  job.runtime.async_tp_allreduce = !o.no_async_tp_allreduce;
  job.runtime.overlap_grad_reduce = !o.no_overlap_grad_reduce;
  job.runtime.overlap_param_gather = !o.no_overlap_param_gather;
  job.runtime.fused_grad_accumulation = !o.no_grad_accumulation_fusion;
  // Megatron-LM refuses this combination (arguments.py validate_args), so no prediction credits it.
  if (job.runtime.framework == Framework::megatron && job.runtime.overlap_param_gather && !job.runtime.overlap_grad_reduce)
    throw InputError(kCmd, "--no-overlap-grad-reduce",
                     "Megatron-LM overlaps the parameter all-gather only together with the gradient reduce-scatter "
                     "('Must use --overlap-param-gather with --overlap-grad-reduce'): add --no-overlap-param-gather");
  const int divisor = o.vocab_divisor.value_or(RuntimeOptions::kDefaultVocabDivisor);
  if (divisor < 1 || divisor > RuntimeOptions::kMaxVocabDivisor)
    throw InputError(kCmd, "--make-vocab-size-divisible-by", "expected 1.." + std::to_string(RuntimeOptions::kMaxVocabDivisor));
  job.runtime.vocab_divisor = divisor;
  // MoE dispatch, which a Megatron launch states itself (read_launch_file refuses these beside it).
  if (!(o.moe_capacity_factor >= 0 && o.moe_capacity_factor <= 1024))
    throw InputError(kCmd, "--moe-capacity-factor", "expected 0 (dropless) or a capacity factor up to 1024");
  job.runtime.moe_capacity_factor = o.moe_capacity_factor;
  if (o.moe_pad_to_capacity && !(o.moe_capacity_factor > 0))
    throw InputError(kCmd, "--moe-pad-to-capacity", "needs --moe-capacity-factor (Megatron: --moe-pad-expert-input-to-capacity "
                                                    "requires --moe-expert-capacity-factor)");
  job.runtime.moe_pad_to_capacity = o.moe_pad_to_capacity;
  if (!(o.moe_rank_capacity_factor >= 0 && o.moe_rank_capacity_factor <= 1024))
    throw InputError(kCmd, "--moe-rank-capacity-factor", "expected 0 (dynamic) or a budget factor up to 1024");
  if (o.moe_rank_capacity_factor > 0 && !o.moe_token_dedup)
    throw InputError(kCmd, "--moe-rank-capacity-factor", "needs --moe-token-dedup: the budget is HybridEP's (Megatron-Core "
                                                         "TransformerConfig), the flex dispatcher's");
  job.runtime.moe_rank_capacity_factor = o.moe_rank_capacity_factor;
  if (o.moe_paged_stash_factor && !o.moe_paged_stash)
    throw InputError(kCmd, "--moe-paged-stash-buffer-size-factor-cuda", "only applies with --moe-paged-stash");
  if (o.moe_paged_stash_factor && !(*o.moe_paged_stash_factor != 0 && std::abs(*o.moe_paged_stash_factor) <= 1024))
    throw InputError(kCmd, "--moe-paged-stash-buffer-size-factor-cuda", "expected a non-zero factor of at most 1024 in size");
  if (o.moe_paged_stash && !(o.moe_rank_capacity_factor > 0))
    throw InputError(kCmd, "--moe-paged-stash", "needs --moe-rank-capacity-factor (Megatron-Core refuses the paged stash without "
                                                "HybridEP's per-rank budget)");
  job.runtime.moe_paged_stash_factor = o.moe_paged_stash ? o.moe_paged_stash_factor.value_or(kMegatronPagedStashFactor) : 0.0;
  if (o.moe_paged_stash_host_factor && !o.moe_paged_stash)
    throw InputError(kCmd, "--moe-paged-stash-buffer-size-factor-cpu", "only applies with --moe-paged-stash");
  if (o.moe_paged_stash_host_factor && !(std::abs(*o.moe_paged_stash_host_factor) <= 1024))
    throw InputError(kCmd, "--moe-paged-stash-buffer-size-factor-cpu", "expected a factor of at most 1024 in size");
  job.runtime.moe_paged_stash_host_factor = o.moe_paged_stash_host_factor.value_or(0.0);
  job.runtime.moe_a2a_overlap = o.moe_a2a_overlap;
  job.runtime.moe_shared_expert_overlap = o.moe_shared_expert_overlap;
  job.runtime.moe_token_dedup = o.moe_token_dedup;
  job.runtime.moe_allgather_dispatch = o.moe_allgather_dispatch;
  job.runtime.moe_grouped_gemm = o.moe_grouped_gemm;
  if (!o.cuda_graphs.empty()) {
    const std::optional<unsigned> graphs = o.cuda_graphs == "layer" ? std::optional<unsigned>(kCudaGraphWholeLayer)
                                                                     : cuda_graph_modules_from_string(o.cuda_graphs);
    if (!graphs)
      throw InputError(kCmd, "--cuda-graphs", "expected attn, mlp, moe, moe_router, moe_preprocess or mamba (comma-separated), "
                                              "layer, or full_iteration; found \"" + o.cuda_graphs + "\"");
    job.runtime.cuda_graph_modules = *graphs;
  }
  apply_hardware_options(o, catalog, job);
  return job;
}

namespace {

// `path` "-" reads standard input (a launch piped in); otherwise a regular file (file_io.h).
std::string read_text_file(const std::string& path, const char* flag) {
  std::error_code ec;
  if (path != "-" && !std::filesystem::exists(path, ec) && !std::filesystem::is_symlink(path, ec))
    throw InputError(kCmd, flag, "cannot read \"" + path + "\": no such file");
  return read_input_file(path, kMaxScriptInputBytes, "a launch script or a list of flags", flag, /*allow_stdin=*/true);
}

}  // namespace

MegatronLaunch read_launch_file(const JobOptions& o, const Catalog& catalog) {
  const std::string& file = o.megatron_args;
  // The launch decides these; a flag beside it would silently disagree with the file.
  const std::pair<bool, const char*> decided_by_launch[] = {
      {o.global_batch.has_value(), "--global-batch"}, {o.seq.has_value(), "--seq"}, {!o.precision.empty(), "--precision"}, {!o.fp8_recipe.empty(), "--fp8-recipe"},
      {o.fp8_param_gather, "--fp8-param-gather"}, {o.grad_reduce_in_bf16, "--grad-reduce-in-bf16"},
      {!o.optimizer.empty(), "--optimizer"}, {o.precision_aware_optimizer, "--precision-aware-optimizer"},
      {!o.main_params_dtype.empty(), "--main-params-dtype"}, {!o.exp_avg_dtype.empty(), "--exp-avg-dtype"},
      {!o.exp_avg_sq_dtype.empty(), "--exp-avg-sq-dtype"}, {o.optimizer_offload_fraction != 0, "--optimizer-offload-fraction"},
      {!o.cp_comm_type.empty(), "--cp-comm-type"}, {o.cp_a2a_size.has_value(), "--cp-a2a-size"},
      {o.bf16_first_layers != 0, "--num-layers-at-start-in-bf16"}, {o.bf16_last_layers != 0, "--num-layers-at-end-in-bf16"}, {o.moe_capacity_factor != 0, "--moe-capacity-factor"},
      {o.moe_pad_to_capacity, "--moe-pad-to-capacity"}, {o.moe_rank_capacity_factor != 0, "--moe-rank-capacity-factor"},
      {o.moe_paged_stash, "--moe-paged-stash"}, {o.moe_paged_stash_factor.has_value(), "--moe-paged-stash-buffer-size-factor-cuda"},
      {o.moe_paged_stash_host_factor.has_value(), "--moe-paged-stash-buffer-size-factor-cpu"},
      {o.moe_a2a_overlap, "--moe-a2a-overlap"}, {o.moe_shared_expert_overlap, "--moe-shared-expert-overlap"}, {o.moe_token_dedup, "--moe-token-dedup"},
      {o.moe_allgather_dispatch, "--moe-allgather-dispatch"}, {o.moe_grouped_gemm, "--moe-grouped-gemm"}, {!o.cuda_graphs.empty(), "--cuda-graphs"}, {o.mtp_layers.has_value(), "--mtp-layers"}, {o.mtp_repeated_layer, "--mtp-repeated-layer"},
      {!o.framework.empty(), "--framework"}, {o.no_flash_attention, "--no-flash-attention"},
      {!o.attention_kernel.empty(), "--attention-kernel"}, {!o.cross_entropy.empty(), "--cross-entropy"}, {o.tp_comm_overlap, "--tp-comm-overlap"}, {o.no_async_tp_allreduce, "--no-async-tp-allreduce"},
      {o.no_overlap_grad_reduce, "--no-overlap-grad-reduce"}, {o.no_overlap_param_gather, "--no-overlap-param-gather"}, {o.no_grad_accumulation_fusion, "--no-grad-accumulation-fusion"},
      {o.vocab_divisor.has_value(), "--make-vocab-size-divisible-by"}, {o.tp.has_value(), "--tp"}, {o.pp.has_value(), "--pp"},
      {o.dp.has_value(), "--dp"}, {o.cp.has_value(), "--cp"}, {o.ep.has_value(), "--ep"}, {o.etp.has_value(), "--etp"}, {o.vpp.has_value(), "--vpp"},
      {o.microbatch_group.has_value(), "--microbatch-group"}, {o.mbs.has_value(), "--mbs"}, {o.sp, "--sp"}, {!o.recompute.empty(), "--recompute"},
      {o.recompute_layers.has_value(), "--recompute-layers"}, {!o.recompute_modules.empty(), "--recompute-modules"},
      {!o.offload_modules.empty(), "--offload-modules"}, {o.cpu_offload_layers != 0, "--cpu-offload-layers"}, {o.min_offloaded_tensor_size.has_value(), "--min-offloaded-tensor-size"},
      {o.dist_opt, "--dist-opt"}, {o.dist_opt_instances != 1, "--dist-opt-instances"},
      {o.outer_dp_sharding != "no_shard", "--outer-dp-sharding-strategy"}, {o.zero != 0, "--zero"},
      {!o.stage_layers.empty(), "--stage-layers"}, {!o.pipeline_layout.empty(), "--pipeline-layout"}};
  for (const auto& [given, flag] : decided_by_launch)
    if (given) throw InputError(kCmd, flag, "is set by the launch in --megatron-args " + file + "; change it there");
  if (o.fp8_attention)
    throw InputError(kCmd, "--fp8-attention", "a Megatron-LM launch cannot run fp8 attention (no flag sets "
                                              "TransformerConfig.fp8_dot_product_attention); predict it without --megatron-args");

  std::optional<ModelSpec> base;
  if (!o.model.empty()) base = catalog.model(o.model);
  MegatronLaunch launch = read_megatron_launch(read_text_file(file, "--megatron-args"), file, base ? &*base : nullptr,
                                               [&catalog](const TokenizerRequest& t) { return tokenizer_vocabulary(t, catalog); });
  validate_model(launch.model, file);
  return launch;
}

Job launch_workload(const MegatronLaunch& launch, const JobOptions& o, const Catalog& catalog) {
  Job job;
  job.model = launch.model;
  job.training = launch.training;
  job.plan = launch.plan;
  job.runtime = launch.runtime;
  apply_hardware_options(o, catalog, job);
  return job;
}

namespace {

// `launch_plan_ok` null: a launch plan that does not fit the world size is an error. Otherwise it
// receives whether the plan is valid there, and the reason goes to the notes (plan searches the
// workload on GPU counts the launch's own plan may not divide).
Job build_job_from_megatron(const JobOptions& o, const Catalog& catalog, std::vector<std::string>* notes, bool* launch_plan_ok) {
  const std::string& file = o.megatron_args;
  const MegatronLaunch launch = read_launch_file(o, catalog);
  Job job = launch_workload(launch, o, catalog);
  std::vector<std::string> said = launch.notes;

  // The world size: --gpus, else torchrun's nodes x processes per node.
  const std::optional<std::int64_t> launched =
      launch.nnodes && launch.nproc_per_node ? std::optional<std::int64_t>(std::int64_t{*launch.nnodes} * *launch.nproc_per_node) : std::nullopt;
  std::int64_t world = 0;
  if (o.gpus) {
    world = *o.gpus;
    if (launched && *launched != world)
      said.push_back(fmt::format("--gpus {} given; the launch's torchrun starts {}", world, *launched));
  } else if (launched) {
    world = *launched;
    said.push_back(fmt::format("{} GPUs from torchrun --nnodes {} x --nproc-per-node {}", world, *launch.nnodes, *launch.nproc_per_node));
  } else {
    throw InputError(kCmd, "--gpus", "give --gpus: the launch in " + file +
                                         " does not say how many GPUs run it (torchrun --nnodes and --nproc-per-node as numbers)");
  }
  if (world > kMaxGpus) throw InputError(kCmd, "--gpus", "expected at most 10,000,000 GPUs");
  ParallelPlan& p = job.plan;
  const std::int64_t mp = std::int64_t{p.tp} * p.pp * p.cp;
  std::optional<InputError> plan_error;
  if (world % mp != 0) {
    plan_error = InputError(o.gpus ? kCmd : file, o.gpus ? "--gpus" : "--nnodes",
                            std::to_string(world) + " GPUs are not divisible by tensor x pipeline x context parallel = " + std::to_string(mp) +
                                (o.gpus ? "" : "; give --gpus N, a multiple of " + std::to_string(mp) + ", for the cluster it is meant for"));
    p.dp = 1;
  } else {
    p.dp = static_cast<int>(world / mp);
  }
  if (job.training.global_batch_size == 0) {
    if (plan_error) throw *plan_error;  // Megatron's default batch needs the launch's dp
    job.training.global_batch_size = std::int64_t{p.micro_batch_size} * p.dp;
    said.push_back(fmt::format("no --global-batch-size: Megatron's default, micro-batch size x data-parallel size = {}",
                               job.training.global_batch_size));
  }
  if (!plan_error)
    if (auto problem = check_plan_input(job))
      plan_error = InputError(problem->field == "gpus" && o.gpus ? kCmd : file,
                              problem->field == "gpus" && o.gpus ? "--gpus" : megatron_flag_for(problem->field), problem->what);
  // Without --gpus the world is the launch's own: a plan that does not divide it is the launch's error.
  if (plan_error && (!launch_plan_ok || !o.gpus)) throw *plan_error;
  if (launch_plan_ok) {
    *launch_plan_ok = !plan_error;
    if (plan_error) said.push_back(std::string("the launch's own plan does not run on these GPUs: ") + plan_error->what());
  }
  if (notes) *notes = said;
  return job;
}

}  // namespace

Job build_launch_workload(const JobOptions& o, const Catalog& catalog, std::vector<std::string>& notes, bool& launch_plan_ok) {
  return build_job_from_megatron(o, catalog, &notes, &launch_plan_ok);
}

Job build_job(const JobOptions& o, const Catalog& catalog, std::vector<std::string>* notes) {
  if (!o.megatron_args.empty()) return build_job_from_megatron(o, catalog, notes, nullptr);
  Job job = build_workload(o, catalog);
  ParallelPlan& p = job.plan;
  auto positive = [](const std::optional<int>& v, const char* flag, int fallback) {
    if (!v) return fallback;
    if (*v < 1 || *v > kMaxParallelSize)
      throw InputError(kCmd, flag, "expected a positive integer up to 1,000,000, found " + std::to_string(*v));
    return *v;
  };
  p.tp = positive(o.tp, "--tp", 1);
  p.pp = positive(o.pp, "--pp", 1);
  p.cp = positive(o.cp, "--cp", 1);
  p.ep = positive(o.ep, "--ep", 1);
  p.etp = positive(o.etp, "--etp", 1);
  p.vpp = positive(o.vpp, "--vpp", 1);
  if (o.microbatch_group) {
    if (*o.microbatch_group < 1 || *o.microbatch_group > kMaxScheduledChunks)
      throw InputError(kCmd, "--microbatch-group", fmt::format("expected 1..{} micro-batches, found {}", kMaxScheduledChunks, *o.microbatch_group));
    p.microbatch_group = static_cast<int>(*o.microbatch_group);
  }
  p.micro_batch_size = positive(o.mbs, "--mbs", 1);
  const std::int64_t mp = static_cast<std::int64_t>(p.tp) * p.pp * p.cp;
  if (o.dp) {
    p.dp = positive(o.dp, "--dp", 1);
    if (o.gpus && mp * p.dp != *o.gpus)
      throw InputError(kCmd, "--gpus", "tp*pp*dp*cp = " + std::to_string(mp * p.dp) + " but --gpus is " + std::to_string(*o.gpus));
  } else if (o.gpus) {
    if (*o.gpus % mp != 0)
      throw InputError(kCmd, "--gpus", std::to_string(*o.gpus) + " GPUs are not divisible by tp*pp*cp = " + std::to_string(mp));
    p.dp = static_cast<int>(*o.gpus / mp);
  } else {
    throw InputError(kCmd, "--gpus", "give --gpus (or --dp)");
  }
  p.sequence_parallel = o.sp;
  auto rc = parse_recompute(o.recompute.empty() ? "none" : o.recompute);
  if (!rc) throw InputError(kCmd, "--recompute", "expected none, selective or full, found \"" + o.recompute + "\"");
  p.recompute.granularity = *rc;
  if (o.recompute_layers) {
    if (*rc != RecomputeGranularity::full) throw InputError(kCmd, "--recompute-layers", "only applies with --recompute full");
    if (*o.recompute_layers < 1) throw InputError(kCmd, "--recompute-layers", "expected a positive layer count");
    p.recompute.num_layers = *o.recompute_layers;
  }
  if (!o.recompute_modules.empty()) {
    if (*rc != RecomputeGranularity::selective) throw InputError(kCmd, "--recompute-modules", "only applies with --recompute selective");
    const auto modules = recompute_modules_from_string(o.recompute_modules);
    if (!modules)
      throw InputError(kCmd, "--recompute-modules",
                       "expected comma-separated core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts, found \"" +
                           o.recompute_modules + "\"");
    p.recompute.modules = *modules;
  }
  if (!o.offload_modules.empty()) {
    const auto modules = offload_modules_from_string(o.offload_modules);
    if (!modules)
      throw InputError(kCmd, "--offload-modules",
                       "expected comma-separated attn_norm, qkv_linear, core_attn, attn_proj, mlp_norm, expert_fc1, moe_act, "
                       "fused_group_mlp, found \"" + o.offload_modules + "\"");
    p.offload.modules = *modules;
  }
  if (o.min_offloaded_tensor_size) {
    if (o.offload_modules.empty()) throw InputError(kCmd, "--min-offloaded-tensor-size", "only applies with --offload-modules");
    if (*o.min_offloaded_tensor_size < 0) throw InputError(kCmd, "--min-offloaded-tensor-size", "expected a non-negative element count");
    p.offload.min_tensor_elements = *o.min_offloaded_tensor_size;
  }
  if (o.cpu_offload_layers < 0) throw InputError(kCmd, "--cpu-offload-layers", "expected a non-negative layer count");
  p.cpu_offload_layers = o.cpu_offload_layers;
  p.distributed_optimizer = o.dist_opt;
  if (o.dist_opt_instances < 1 || o.dist_opt_instances > 1000000)
    throw InputError(kCmd, "--dist-opt-instances", "expected 1..1000000 copies of the distributed optimizer");
  if (o.dist_opt_instances > 1 && !o.dist_opt && o.zero < 2)
    throw InputError(kCmd, "--dist-opt-instances",
                     "needs --dist-opt, or --zero 2 or 3 (Megatron-FSDP's hybrid sharding; with --framework fsdp, --zero 3 for FSDP2's)");
  if (o.outer_dp_sharding != "no_shard" && o.outer_dp_sharding != "optim")
    throw InputError(kCmd, "--outer-dp-sharding-strategy", "expected no_shard or optim, found \"" + o.outer_dp_sharding + "\"");
  p.outer_optimizer_sharding = o.outer_dp_sharding == "optim";
  p.optimizer_instances = o.dist_opt_instances;
  if (o.zero < 0 || o.zero > 3) throw InputError(kCmd, "--zero", "expected 0, 1, 2 or 3");
  p.zero_stage = o.zero;
  // Megatron-LM's ZeRO-1 is its distributed optimizer: one spelling for one plan.
  if (job.runtime.framework == Framework::megatron && p.zero_stage == 1 && !p.distributed_optimizer) {
    p.zero_stage = 0;
    p.distributed_optimizer = true;
  }
  if (job.runtime.framework == Framework::megatron && job.runtime.tp_comm_overlap && p.tp > 1 && !p.sequence_parallel)
    throw InputError(kCmd, "--tp-comm-overlap",
                     "Megatron-LM overlaps tensor-parallel communication with the GEMMs only under sequence parallelism "
                     "('Tensor parallel communication/GEMM overlap can happen only when sequence parallelism is enabled'): add --sp");
  if (!o.pipeline_layout.empty()) {
    if (!o.stage_layers.empty()) throw InputError(kCmd, "--pipeline-layout", "give either --pipeline-layout or --stage-layers, not both");
    std::vector<std::string> layout_notes;
    apply_pipeline_layout(o.pipeline_layout, kCmd, "--pipeline-layout", job.model, p, layout_notes);
    if (o.vpp && *o.vpp != p.vpp)
      throw InputError(kCmd, "--vpp", fmt::format("{} differs from the {} model chunks per rank of --pipeline-layout", *o.vpp, p.vpp));
    if (notes) notes->insert(notes->end(), layout_notes.begin(), layout_notes.end());
  } else if (!o.stage_layers.empty()) {
    std::stringstream ss(o.stage_layers);
    std::string item;
    while (std::getline(ss, item, ',')) {
      try {
        std::size_t used = 0;
        int v = std::stoi(item, &used);
        if (used != item.size() || v < 1 || v > kMaxParallelSize) throw std::invalid_argument(item);
        p.stage_layers.push_back(v);
      } catch (const std::exception&) {
        throw InputError(kCmd, "--stage-layers", "expected comma-separated positive layer counts, found \"" + item + "\"");
      }
      if (static_cast<std::int64_t>(p.stage_layers.size()) > p.pp)
        throw InputError(kCmd, "--stage-layers", "more layer counts than --pp " + std::to_string(p.pp));
    }
    if (o.stage_layers.back() == ',')
      throw InputError(kCmd, "--stage-layers", "expected comma-separated positive layer counts, found a trailing comma");
  } else if (p.pp >= 1 && p.pp <= kMaxParallelSize && p.vpp >= 1 && p.vpp <= kMaxParallelSize) {
    // Layers that do not divide into pp x vpp chunks: Megatron's layout with the embedding and
    // the loss counted as layers, where one exists.
    p.stage_layers = standard_stage_layers(job.model.num_layers, p.pp, p.vpp, job.model.mtp_layers);
  }
  if (auto problem = check_plan_input(job)) {
    static const std::pair<const char*, const char*> flags[] = {
        {"tp", "--tp"}, {"pp", "--pp"}, {"dp", "--dp"}, {"cp", "--cp"}, {"ep", "--ep"}, {"etp", "--etp"}, {"vpp", "--vpp"},
        {"microbatch_group_size_per_vp_stage", "--microbatch-group"}, {"micro_batch_size", "--mbs"}, {"gpus", "--gpus"}, {"global_batch_size", "--global-batch"},
        {"stages", "--stage-layers"}, {"recompute_layers", "--recompute-layers"}, {"zero_stage", "--zero"}};
    std::string flag = problem->field;
    for (const auto& [field, f] : flags)
      if (problem->field == field) flag = f;
    throw InputError(kCmd, flag, problem->what);
  }
  return job;
}

}  // namespace strata
