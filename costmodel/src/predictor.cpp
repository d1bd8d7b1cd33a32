#include "costmodel/predictor.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/compile.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "costmodel/comm_model.h"
#include "costmodel/kernel_model.h"
#include "costmodel/layer_ops.h"
#include "costmodel/memory_model.h"

namespace strata {

namespace {

// DeepSpeed's default stage3_prefetch_bucket_size / reduce_bucket_size, in elements.
constexpr double kZero3BucketElements = 5e7;

// Per-micro-batch cost of one layer on one GPU, split by where the time goes.
struct LayerCost {
  double fwd_compute = 0;
  double bwd_compute = 0;
  double recompute = 0;   // extra forward work done in backward
  double fwd_tp = 0;      // exposed TP communication, forward
  double bwd_tp = 0;      // exposed TP communication, backward (incl. recomputed forward's)
  double fwd_cp = 0;
  double bwd_cp = 0;
  double fwd_ep = 0;      // MoE all-to-all
  double bwd_ep = 0;
  // Host time beyond the GPU time: a dropless MoE layer's forward cannot be queued ahead of the
  // GPU, and a backward the host issues slower than the GPU runs it waits for the host
  // (moe_layer_host_time).
  double fwd_host = 0;
  double bwd_host = 0;
  double recompute_flops = 0;
};

// Everything predicted of one pipeline stage (one allocation per prediction for all stages).
struct StageCost {
  double fwd = 0, bwd = 0;  // one micro-batch through all of the stage's chunks
  double compute = 0, recompute = 0, tp = 0, cp = 0, ep = 0, host = 0;  // per micro-batch
  double pp_blocking = 0;  // blocking p2p sends inside the stage's own ops (DeepSpeed), per micro-batch
  double recompute_flops = 0;  // per micro-batch, per GPU
  ParamSplit params;           // parameters per GPU: gradient accumulation, DP synchronization, memory
  double dp_exposed = 0, optimizer = 0;  // per iteration
  double finish = 0;                     // when the stage's step ends
};

// The part of a stage's data-parallel collective (`comm`: the gradient reduce-scatter or
// all-reduce, or the parameter all-gather) that runs behind compute, given the stage's time for one
// micro-batch through all its chunks in that direction (`pass`). Megatron-Core's
// DistributedDataParallel reduces each model chunk's buckets as soon as that chunk's last
// micro-batch has finished its backward (overlap_grad_reduce; param all-gathers likewise run ahead
// of each chunk's first forward, overlap_param_gather), so under interleaved 1F1B the chunks'
// collectives go out one after another through the drain: after chunk c's final backward the stage
// still runs pp backward chunk-steps for each later chunk (Narayanan et al. 2021 §2.2 schedule).
// Queued behind each other, the collectives finish max(comm/v - t, comm - (v-1) pp t - t) after the
// last chunk-step t = pass/v; with v = 1 this is the bucketed overlap behind the last backward.
double overlapped_dp_time(double comm, double pass, int vpp, int pp) {
  const double v = std::max(1, vpp);
  const double t = pass / v;
  const double window = t + (v - 1) * pp * t;
  const double exposed = std::max({0.0, comm / v - t, comm - window});
  return comm - exposed;
}

std::string plan_text(const ParallelPlan& p) {
  return fmt::format("tp={} pp={} dp={} cp={}", p.tp, p.pp, p.dp, p.cp);
}

// Megatron-LM's checks of the optimizer settings (arguments.py, OptimizerConfig.__post_init__,
// get_megatron_optimizer).
std::string optimizer_problem(const Job& job) {
  const OptimizerSpec& o = job.training.optimizer;
  if (!(o.cpu_offload_fraction >= 0 && o.cpu_offload_fraction <= 1))
    return fmt::format("the optimizer's offload fraction must be between 0 and 1, found {:g}", o.cpu_offload_fraction);
  if (!o.precision_aware) {
    if (o.main_params != StateDtype::fp32 || o.exp_avg != StateDtype::fp32 || o.exp_avg_sq != StateDtype::fp32)
      return "main params, exp_avg and exp_avg_sq other than fp32 need the precision-aware optimizer (Megatron "
             "--use-precision-aware-optimizer)";
    if (o.cpu_offload_fraction > 0) return "optimizer CPU offload needs the precision-aware optimizer (Megatron's check)";
    return "";
  }
  if (o.kind != OptimizerKind::adam) return fmt::format("the precision-aware optimizer is Adam only, not {}", to_string(o.kind));
  if (job.runtime.framework != Framework::megatron) return "the precision-aware optimizer is Megatron-LM's (Transformer Engine FusedAdam)";
  if (!job.plan.distributed_optimizer && job.plan.zero_stage == 0)
    return "the precision-aware optimizer runs only with the distributed optimizer (Megatron get_megatron_optimizer)";
  if (o.main_params != StateDtype::fp32 && o.main_params != StateDtype::fp16)
    return fmt::format("main params are kept in fp32 or fp16 (Megatron --main-params-dtype), not {}", to_string(o.main_params));
  if (o.cpu_offload_fraction > 0 && job.runtime.fp8_param_gather && job.training.precision == Precision::fp8 &&
      job.training.recipe != LowPrecisionRecipe::delayed)
    return "optimizer CPU offload with fp8 parameters needs the delayed-scaling recipe (Megatron's check)";
  return "";
}

}  // namespace

std::string check_plan(const Job& job) {
  const ModelSpec& m = job.model;
  const ParallelPlan& p = job.plan;
  const TrainingSpec& t = job.training;
  if (p.tp < 1 || p.pp < 1 || p.dp < 1 || p.cp < 1 || p.ep < 1 || p.vpp < 1 || p.micro_batch_size < 1)
    return "tp, pp, dp, cp, ep, vpp and micro-batch size must all be at least 1";
  if (p.microbatch_group < 0) return "the micro-batch group per virtual pipeline stage must be at least 0 (0: chosen)";
  if (t.global_batch_size < 1) return "global batch size must be at least 1";
  if (t.seq_length < 1) return "sequence length must be at least 1";
  // Llama 4's RoPE layers attend within chunks: up to one chunk that is causal attention; past it
  // strata would cost attention the model does not run (and Megatron-LM has no chunked attention).
  if (m.attention_chunk_size > 0 && t.seq_length > m.attention_chunk_size)
    return fmt::format("a {}-token sequence spans several of the model's {}-token attention chunks (chunked attention, Llama 4's "
                       "RoPE layers), which strata does not model and Megatron-LM cannot run: use --seq {} or less",
                       t.seq_length, m.attention_chunk_size, m.attention_chunk_size);
  if (m.num_attention_heads % p.tp != 0)
    return fmt::format("tp={} does not divide the {} attention heads", p.tp, m.num_attention_heads);
  if (m.num_query_groups % p.tp != 0)
    return fmt::format("tp={} does not divide the {} query groups (GQA)", p.tp, m.num_query_groups);
  if (m.ffn_hidden_size % p.tp != 0 && (!m.moe || m.num_moe_layers() < m.num_layers))
    return fmt::format("tp={} does not divide ffn_hidden_size {}", p.tp, m.ffn_hidden_size);
  if (t.seq_length % p.cp != 0 || (p.cp > 1 && t.seq_length % (2 * p.cp) != 0))
    return fmt::format("cp={} needs the sequence length {} divisible by 2*cp (load-balanced causal split)", p.cp, t.seq_length);
  if (p.cp > 1 && job.runtime.cp_comm_type == CpCommType::a2a &&
      (m.num_attention_heads % (p.tp * p.cp) != 0 || m.num_query_groups % (p.tp * p.cp) != 0))
    return fmt::format("--cp-comm-type a2a needs the {} heads and {} query groups divisible by tp*cp = {}", m.num_attention_heads,
                       m.num_query_groups, p.tp * p.cp);
  if (job.runtime.fp8_attention) {
    // Transformer Engine's fp8 attention is part of its fp8 recipe (fp8_dpa) and runs in cuDNN's
    // fused kernel; Float8BlockScaling takes no fp8_dpa (Megatron-Core fp8_utils get_fp8_recipe).
    if (job.training.precision != Precision::fp8) return "fp8 attention needs an fp8 or fp4 run (--precision fp8)";
    if (job.training.recipe == LowPrecisionRecipe::blockwise)
      return "the blockwise fp8 recipe (Float8BlockScaling) has no fp8 attention: use delayed, tensorwise or mxfp8 scaling";
    if (job.runtime.framework != Framework::megatron) return "fp8 attention is Transformer Engine's, as Megatron-Core runs it";
    if (!job.runtime.flash_attention || resolved_attention_kernel(job.runtime, job.cluster.gpu) != AttentionKernel::cudnn)
      return "fp8 attention runs in cuDNN's fused attention (Transformer Engine FusedAttention), on Hopper and later";
    // Transformer Engine turns FusedAttention off for fp8 with sliding windows or learnable
    // softmax sinks below sm100 (dot_product_attention/utils.py get_attention_backend).
    if (job.cluster.gpu.architecture == "hopper" && (m.sliding_window > 0 || m.attention_sinks))
      return "fp8 attention with sliding windows or softmax sinks needs Blackwell (Transformer Engine runs neither in fp8 on Hopper)";
  }
  if (job.runtime.bf16_first_layers > 0 || job.runtime.bf16_last_layers > 0) {
    // Megatron's TransformerConfig checks (transformer_config.py): not with delayed scaling, and at
    // most one pipeline stage's share of layers at either end.
    if (job.training.precision != Precision::fp8) return "bf16 first/last layers need an fp8 or fp4 run";
    if (job.training.recipe == LowPrecisionRecipe::delayed) return "delayed scaling does not support first / last layers in bf16";
    const int cap = m.num_layers / std::max(1, p.pp);
    if (job.runtime.bf16_first_layers < 0 || job.runtime.bf16_first_layers > cap || job.runtime.bf16_last_layers < 0 ||
        job.runtime.bf16_last_layers > cap)
      return fmt::format("bf16 layers at the start ({}) and end ({}) must be between 0 and the layers per pipeline stage ({})",
                         job.runtime.bf16_first_layers, job.runtime.bf16_last_layers, cap);
  }
  if (p.cp > 1 && job.runtime.cp_comm_type == CpCommType::a2a_p2p) {
    const int a = cp_a2a_group_size(job);
    if (a < 1 || p.cp % a != 0)
      return fmt::format("--cp-comm-type a2a+p2p needs an all-to-all group size that divides cp={}, found {}", p.cp, a);
    if (m.num_attention_heads % (p.tp * a) != 0 || m.num_query_groups % (p.tp * a) != 0)
      return fmt::format("--cp-comm-type a2a+p2p needs the {} heads and {} query groups divisible by tp times the all-to-all group "
                         "= {}", m.num_attention_heads, m.num_query_groups, p.tp * a);
  }
  if (p.sequence_parallel && p.tp > 1 && (t.seq_length / p.cp) % p.tp != 0)
    return fmt::format("sequence parallelism needs the per-CP sequence {} divisible by tp={}", t.seq_length / p.cp, p.tp);
  const std::int64_t per_step = static_cast<std::int64_t>(p.dp) * p.micro_batch_size;
  if (t.global_batch_size % per_step != 0)
    return fmt::format("global batch {} is not divisible by dp*micro_batch = {}*{}", t.global_batch_size, p.dp, p.micro_batch_size);
  // Each factor is at most 2^40 / 10^6 / 10^6 (job_options.h limits): compare by division, no overflow.
  if (job.num_micro_batches() > kMaxSimulatedChunks / (static_cast<std::int64_t>(p.pp) * p.vpp))
    return fmt::format("{} micro-batches x pp*vpp = {} pipeline steps is more than the {} strata simulates", job.num_micro_batches(),
                       static_cast<std::int64_t>(p.pp) * p.vpp, kMaxSimulatedChunks);
  if (p.pp > m.num_layers) return fmt::format("pp={} exceeds the {} layers", p.pp, m.num_layers);
  // Megatron-LM interleaves model chunks, and so does torch.distributed.pipelining, the pipeline of
  // FSDP2 stacks (torchtitan's Interleaved1F1B schedule); DeepSpeed's PipelineEngine runs one chunk
  // per stage.
  if (p.vpp > 1 && job.runtime.framework == Framework::deepspeed)
    return fmt::format("vpp={} is an interleaved schedule; the {} pipeline does not interleave", p.vpp,
                       to_string(job.runtime.framework));
  if (!p.stage_layers.empty()) {
    if (static_cast<int>(p.stage_layers.size()) != p.pp)
      return fmt::format("{} stage layer counts given for pp={}", p.stage_layers.size(), p.pp);
    if (std::any_of(p.stage_layers.begin(), p.stage_layers.end(), [](int l) { return l < 1; }))
      return "every pipeline stage needs at least one layer";
    int sum = std::accumulate(p.stage_layers.begin(), p.stage_layers.end(), 0);
    if (sum != m.num_layers) return fmt::format("stage layers add up to {}, the model has {}", sum, m.num_layers);
  }
  if (p.vpp > 1) {
    if (p.pp < 2) return "interleaved pipelining (vpp > 1) needs pp >= 2";
    // Layers that do not divide into pp x vpp chunks run with Megatron's layout that counts the
    // embedding and loss as layers (standard_stage_layers); an even split may coincide with it.
    if (p.stage_layers.empty() && m.num_layers % (p.pp * p.vpp) != 0 &&
        standard_stage_layers(m.num_layers, p.pp, p.vpp, m.mtp_layers) != resolve_stage_layers(p, m.num_layers))
      return fmt::format("{} layers are not divisible by pp*vpp = {}; give uneven --stage-layers to split them", m.num_layers,
                         p.pp * p.vpp);
    for (std::size_t s = 0; s < p.stage_layers.size(); ++s)
      if (p.stage_layers[s] < min_stage_layers(p.pp, p.vpp, static_cast<int>(s)))
        return fmt::format("stage {} has {} layers, fewer than its vpp={} model chunks (only the embedding's and the loss's chunk "
                           "may hold none)", s, p.stage_layers[s], p.vpp);
    // Megatron-Core's micro-batch groups (interleaved_microbatch_group): pp does not have to divide
    // the micro-batches, but there must be at least pp of them.
    const std::int64_t micro_batches = job.num_micro_batches();
    if (p.microbatch_group > 0) {
      const std::string problem = microbatch_group_problem(p.microbatch_group, p.pp, micro_batches);
      if (!problem.empty()) return problem;
    } else if (interleaved_microbatch_group(p, micro_batches) == 0) {
      return fmt::format("interleaved pipelining needs at least pp={} micro-batches per step, this one has {}", p.pp, micro_batches);
    }
  } else if (p.microbatch_group > 0) {
    return "a micro-batch group per virtual pipeline stage needs interleaving (vpp > 1)";
  }
  if (p.zero_stage < 0 || p.zero_stage > 3) return "ZeRO stage must be 0..3";
  if (p.distributed_optimizer && p.zero_stage > 0) return "the distributed optimizer and ZeRO are alternatives; use one";
  if (std::string why = optimizer_problem(job); !why.empty()) return why;
  if (p.optimizer_instances < 1) return "the distributed optimizer instances must be at least 1";
  if (p.optimizer_instances > 1) {
    // Megatron: parallel_state.py's divisibility checks; the copies split the distributed optimizer only.
    if (!p.distributed_optimizer) return "distributed optimizer instances need the distributed optimizer";
    if ((p.dp * p.cp) % p.optimizer_instances != 0)
      return fmt::format("{} distributed optimizer instances do not divide dp*cp = {}", p.optimizer_instances, p.dp * p.cp);
    if (m.moe && p.expert_data_parallel() % p.optimizer_instances != 0)
      return fmt::format("{} distributed optimizer instances do not divide the expert-data-parallel size {}", p.optimizer_instances,
                         p.expert_data_parallel());
  }
  if (p.etp < 1) return "etp must be at least 1";
  if (m.moe) {
    // Megatron-Core (parallel_state.py initialize_model_parallel): the expert grid etp x ep x edp
    // must tile the tp*cp*dp ranks of a pipeline stage; each EP rank holds num_experts/ep experts
    // (moe_layer.py), each split over etp ranks.
    if (m.moe->num_experts % p.ep != 0) return fmt::format("ep={} does not divide the {} experts", p.ep, m.moe->num_experts);
    if ((static_cast<std::int64_t>(p.tp) * p.dp * p.cp) % (static_cast<std::int64_t>(p.ep) * p.etp) != 0)
      return fmt::format("ep*etp = {}*{} must divide tp*dp*cp = {}", p.ep, p.etp, p.tp * p.dp * p.cp);
    if (m.moe->expert_ffn_hidden_size % p.etp != 0)
      return fmt::format("etp={} does not divide the expert FFN size {}", p.etp, m.moe->expert_ffn_hidden_size);
    if (m.moe->shared_expert_ffn_hidden_size % p.tp != 0)
      return fmt::format("tp={} does not divide the shared-expert FFN size {}", p.tp, m.moe->shared_expert_ffn_hidden_size);
    if (job.runtime.moe_pad_to_capacity && !(job.runtime.moe_capacity_factor > 0))
      return "padding the experts' input to capacity needs a capacity factor (Megatron: --moe-pad-expert-input-to-capacity "
             "requires --moe-expert-capacity-factor)";
    if (job.runtime.moe_a2a_overlap && p.ep > 1 && p.pp > 1 && p.vpp < 2)
      return "overlapping the MoE all-to-all with pp > 1 needs vpp > 1 (Megatron-Core TransformerConfig)";
    if (job.runtime.moe_token_dedup && job.runtime.moe_allgather_dispatch)
      return "the allgather dispatcher and DeepEP/HybridEP deduplication (the flex dispatcher) exclude each other";
    if (job.runtime.moe_a2a_overlap && p.ep > 1 && job.runtime.moe_allgather_dispatch)
      return "overlapping the MoE all-to-all needs the alltoall or flex dispatcher, not allgather (Megatron-Core TransformerConfig)";
    if (job.runtime.moe_a2a_overlap && p.ep > 1 && p.recompute.granularity == RecomputeGranularity::full)
      return "overlapping the MoE all-to-all does not run with full recompute (Megatron-Core TransformerConfig)";
    if (job.runtime.moe_a2a_overlap && p.ep > 1 &&
        (job.training.precision == Precision::fp32 || job.training.precision == Precision::tf32))
      return "overlapping the MoE all-to-all needs bf16, fp16 or fp8 training (Megatron-Core TransformerConfig)";
    if (job.runtime.moe_a2a_overlap && p.ep > 1 && m.mtp_layers > 1)
      return fmt::format("overlapping the MoE all-to-all supports at most one MTP layer, the model has {} (Megatron-Core "
                         "TransformerConfig)", m.mtp_layers);
    if (p.tp > 1 && !p.sequence_parallel)
      return "MoE layers with tp > 1 need sequence parallelism (Megatron-Core MoELayer.forward refuses to train without it)";
    // A graph of the whole step cannot hold the dispatcher's wait for its token counts.
    if ((job.runtime.cuda_graph_modules & kCudaGraphFullIteration) && moe_dispatcher_syncs_host(job.runtime))
      return "a full-iteration CUDA graph cannot capture a dropless MoE dispatcher, which waits on the host for its token counts "
             "in every layer: give HybridEP a per-rank budget (moe_expert_rank_capacity_factor) or pad the experts to capacity";
  } else if (p.ep != 1 || p.etp != 1) {
    return "ep > 1 needs a mixture-of-experts model (so does etp > 1)";
  }
  if (p.recompute.granularity == RecomputeGranularity::selective) {
    // Megatron-Core TransformerConfig's checks of recompute_modules.
    const unsigned mods = p.recompute.modules;
    if (mods == 0) return "selective recompute names no module to recompute";
    if ((mods & kRecomputeMlaUpProj) && !m.mla) return "recompute module mla_up_proj needs multi-latent attention";
    if ((mods & (kRecomputeMoeAct | kRecomputeMoe | kRecomputeSharedExperts)) && !m.moe)
      return "recompute modules moe_act, moe and shared_experts need a mixture-of-experts model";
    if ((mods & kRecomputeSharedExperts) && m.moe && m.moe->shared_expert_ffn_hidden_size == 0)
      return "recompute module shared_experts needs shared experts";
    if ((mods & (kRecomputeMoeAct | kRecomputeLayernorm)) && job.training.precision == Precision::fp8 &&
        job.training.recipe == LowPrecisionRecipe::delayed)
      return "fp8 delayed scaling does not support moe_act and layernorm recompute (Megatron-Core TransformerConfig)";
    if ((mods & kRecomputeMoe) && job.runtime.moe_a2a_overlap && p.ep > 1)
      return "recomputing whole MoE blocks excludes overlapping the MoE all-to-all (Megatron-Core TransformerConfig)";
  }
  if (m.mtp_layers > 0 && job.runtime.framework == Framework::megatron && m.position_embedding != PositionEmbedding::rope)
    return "multi-token prediction needs rotary position embeddings in Megatron-LM (arguments.py MTP validation)";
  if (job.training.precision == Precision::fp8) {
    if (std::string why = job.cluster.gpu.recipe_unsupported(job.training.recipe); !why.empty()) return why;
  }
  if (job.cluster.gpu.peak_flops(job.training.precision) <= 0)
    return fmt::format("{} lists no {} throughput", job.cluster.gpu.name, to_string(job.training.precision));
  if (p.recompute.granularity == RecomputeGranularity::full && p.recompute.num_layers == 0)
    return "full recompute with 0 layers: use recompute none";
  return "";
}

Prediction predict(const Job& job, std::vector<PipelineEvent>* trace) {
  Prediction pred;
  pred.memory_capacity_GiB = job.cluster.gpu.memory_GiB - job.runtime.memory_reserve_GiB;
  if (std::string why = check_plan(job); !why.empty()) {
    pred.reason = why;
    pred.bottleneck = {"illegal", -1, 0, 0, why};
    return pred;
  }
  const ModelSpec& m = job.model;
  const ParallelPlan& p = job.plan;
  const ClusterSpec& cl = job.cluster;
  const Calibration& cal = job.calibration;
  const int eb = activation_bytes(job.training.precision);
  const bool sp = p.sequence_parallel && p.tp > 1;
  const std::int64_t micro_batches = job.num_micro_batches();

  KernelModel km(cl.gpu, job.training.precision, cal.kernel, job.training.recipe);
  // The layers a low-precision run keeps in bf16 (--first-last-layers-bf16) time at the bf16 rate;
  // built only for such runs (a prediction takes microseconds).
  std::optional<KernelModel> km_bf16;
  if (job.runtime.bf16_first_layers > 0 || job.runtime.bf16_last_layers > 0) km_bf16.emplace(cl.gpu, Precision::bf16, cal.kernel);
  CommModel comm(cl, cal.comm);
  // Megatron rank order tp, cp, dp, pp (fastest first): each group's stride and placement.
  const int gpn = cl.gpus_per_node;
  const GroupPlacement tp_g = place_group(p.tp, 1, gpn);
  const GroupPlacement cp_g = place_group(p.cp, p.tp, gpn);
  const GroupPlacement dp_g = place_group(p.dp * p.cp, p.tp, gpn);  // gradients reduce over dp x cp
  // Megatron-Core's expert grid orders ranks etp, ep, edp, pp (parallel_state.py): the EP x ETP
  // group that exchanges tokens is etp*ep consecutive ranks.
  const GroupPlacement ep_g = place_group(p.ep * p.etp, 1, gpn);
  const GroupPlacement edp_g = place_group(p.expert_data_parallel(), p.ep * p.etp, gpn);
  // Copies of the distributed optimizer (--num-distributed-optimizer-instances): each reduce-scatters
  // over its consecutive share of the data-parallel ranks (*_intra_g), then all-reduces its shard with
  // the same shard of the other copies (*_inter_g; parallel_state.py: intra/inter partial DP groups).
  const int instances = p.distributed_optimizer ? std::max(1, p.optimizer_instances) : 1;
  const bool copies = instances > 1;  // (one copy: the whole data-parallel groups, placed above)
  const GroupPlacement dp_intra_g = copies ? place_group(p.optimizer_shard_ranks(), p.tp, gpn) : dp_g;
  const GroupPlacement dp_inter_g = copies ? place_group(instances, p.tp * p.optimizer_shard_ranks(), gpn) : GroupPlacement{};
  const GroupPlacement edp_intra_g = copies ? place_group(p.expert_optimizer_shard_ranks(), p.ep * p.etp, gpn) : edp_g;
  const GroupPlacement edp_inter_g =
      copies ? place_group(instances, p.ep * p.etp * p.expert_optimizer_shard_ranks(), gpn) : GroupPlacement{};
  const bool pp_inter_node = static_cast<std::int64_t>(p.tp) * p.cp * p.dp >= gpn;

  LayerShape shape;
  shape.micro_batch = p.micro_batch_size;
  shape.seq = job.training.seq_length;
  shape.tp = p.tp;
  shape.cp = p.cp;
  shape.cp_ring = p.cp > 1 && job.runtime.cp_comm_type != CpCommType::allgather ? p.cp / cp_a2a_group_size(job) : 1;
  shape.ep = p.ep;
  shape.etp = p.etp;
  shape.moe_imbalance = m.moe ? effective_moe_imbalance(job.runtime) : 1.0;
  shape.moe_sort_chunks = m.moe && p.ep * p.etp > 1 && !job.runtime.moe_token_dedup && !job.runtime.moe_allgather_dispatch &&
                          job.runtime.framework == Framework::megatron;
  shape.moe_grouped_gemm = job.runtime.moe_grouped_gemm;
  shape.moe_dispatcher_pads = job.runtime.moe_token_dedup;
  shape.sequence_parallel = sp;
  shape.flash_attention = job.runtime.flash_attention;
  shape.element_bytes = eb;
  shape.fp8_linears = job.training.precision == Precision::fp8 && cl.gpu.low_precision_peak_flops(job.training.recipe) > 0;
  shape.recipe = job.training.recipe;
  // Megatron-Core runs Transformer Engine's attention: cuDNN's fused kernel on Hopper and later,
  // FlashAttention otherwise (resolved_attention_kernel); the rate of either grows with the keys per
  // query tile (key_loop_factor). The FSDP and DeepSpeed stacks of the published runs used
  // FlashAttention-2-era kernels, kept at the flat rate of the attention efficiencies.
  shape.cudnn_attention = resolved_attention_kernel(job.runtime, cl.gpu) == AttentionKernel::cudnn;
  shape.fp8_attention = job.runtime.fp8_attention && shape.cudnn_attention && job.training.precision == Precision::fp8;
  shape.attention_scales_with_seq = job.runtime.framework == Framework::megatron || shape.cudnn_attention;
  shape.vocab = padded_vocab_size(job);
  shape.cross_entropy = resolved_cross_entropy(job.runtime);
  shape.recompute_modules = p.recompute.modules;

  // ---- one decoder layer of each kind (MoE or dense MLP, sliding-window or full attention) ----
  const double tokens = static_cast<double>(p.micro_batch_size) * static_cast<double>(job.training.seq_length) / p.cp;
  const double act_bytes = tokens * static_cast<double>(m.hidden_size) * eb;
  // TP: two all-reduces per layer forward and two backward (Shoeybi et al. 2019, Fig. 4); with SP
  // each becomes an all-gather + reduce-scatter of the same volume (Korthikanti §4.2.2).
  const double tp_collective = p.tp > 1 ? (sp ? 2 * comm.all_gather(act_bytes, tp_g) : comm.all_reduce(act_bytes, tp_g)) : 0;
  // --tp-comm-overlap pipelines TP collectives with the GEMMs; assume 80% hidden (a default).
  const double tp_exposed_frac = job.runtime.tp_comm_overlap ? 0.2 : 1.0;
  const MoeHostTime moe_host = moe_layer_host_time(job);
  const bool moe_host_bound = moe_host.forward_s > 0 || moe_host.backward_s > 0 || moe_host.attention_forward_s > 0 ||
                              moe_host.attention_backward_s > 0;
  auto layer_cost = [&](LayerKind kind) {
    const KernelModel& kernels = kind.bf16 ? *km_bf16 : km;
    LayerShape kind_shape = shape;
    kind_shape.fp8_linears = shape.fp8_linears && !kind.bf16;
    const LayerOps ops = decoder_layer_ops(m, kind_shape, kind);
    LayerCost lc;
    lc.fwd_compute = kernels.total_time(ops.forward);
    lc.bwd_compute = kernels.total_time(ops.backward);
    lc.fwd_tp = 2 * tp_collective * tp_exposed_frac;
    lc.bwd_tp = 2 * tp_collective * tp_exposed_frac;
    if (job.runtime.async_tp_allreduce && p.tp > 1) {
      // Each of the two backward collectives hides behind the weight-gradient GEMM of the
      // column-parallel layer whose input gradient it reduces; overlapped NCCL kernels still slow
      // the GEMM they share the GPU with (overlap_interference).
      const double c = tp_collective * tp_exposed_frac;
      lc.bwd_tp = 0;
      for (const auto& op : ops.backward)
        if (op.weight_grad && (std::string_view(op.name) == "qkv_proj" || std::string_view(op.name) == "fc1" ||
                               std::string_view(op.name) == "q_up_proj" || std::string_view(op.name) == "expert_fc1")) {
          const double window = kernels.time(op).time_s;
          lc.bwd_tp += std::max(0.0, c - window) + cal.kernel.overlap_interference * std::min(c, window);
        }
    }
    // CP: ring exchange of K and V blocks, overlapped with the attention blocks it feeds (Liu et al.
    // 2023 ring attention; Megatron-Core CP); backward also returns dK, dV.
    if (p.cp > 1) {
      const double kv_bytes = tokens * 2.0 * static_cast<double>(m.kv_hidden()) / p.tp * eb;
      double attn_fwd = 0, attn_bwd = 0;
      for (const auto& op : ops.forward)
        if (op.kind == OpKind::attention) attn_fwd += kernels.time(op).time_s;
      for (const auto& op : ops.backward)
        if (op.kind == OpKind::attention) attn_bwd += kernels.time(op).time_s;
      if (job.runtime.cp_comm_type == CpCommType::allgather) {
        // --cp-comm-type allgather (TE AttnFuncWithCPAndKVAllGather): K and V of the whole sequence
        // are all-gathered before attention, dK and dV reduce-scattered after its backward; the
        // attention of the local half runs behind the gather of the rest (about half hidden).
        lc.fwd_cp = std::max(0.0, comm.all_gather(kv_bytes * p.cp, cp_g) - 0.5 * attn_fwd);
        lc.bwd_cp = std::max(0.0, comm.reduce_scatter(kv_bytes * p.cp, cp_g) - 0.5 * attn_bwd);
      } else {
        // p2p, a2a and a2a+p2p are one mechanism over a CP ranks that exchange by all-to-all and
        // b = cp / a groups on a ring (cp_a2a_group_size: a = 1 for p2p, cp for a2a). The
        // all-to-alls (DeepSpeed-Ulysses; TE AttnFuncWithCPAndQKVOA2A) turn the sequence-sharded
        // Q, K, V into head-sharded ones before attention and O back after it, backward the same
        // for dO and dQ, dK, dV; nothing overlaps them. The ring (TE AttnFuncWithCPAndKVP2P; with
        // two groups Megatron's --hierarchical-context-parallel-sizes a b) passes K/V blocks of the
        // same bytes per step behind the attention they feed.
        const int b = shape.cp_ring, a = p.cp / b;  // the ring, and the all-to-all groups on it
        const GroupPlacement inner = place_group(a, p.tp, gpn), outer = place_group(b, p.tp * a, gpn);
        const double q_bytes = tokens * static_cast<double>(m.hidden_size) / p.tp * eb;
        const double a2a = a > 1 ? 2 * comm.all_to_all(q_bytes, inner) + comm.all_to_all(kv_bytes, inner) : 0.0;
        const double ring = (b - 1) * comm.p2p(kv_bytes, outer.spans_nodes());
        // With fp8 attention under delayed or current scaling the ring passes K and V quantized, 1
        // byte each (AttnFuncWithCPAndKVP2P sends the fp8 data; MXFP8 keeps them in bf16); the
        // gradients travel back in bf16.
        const bool fp8_ring = shape.fp8_attention && job.training.recipe != LowPrecisionRecipe::mxfp8;
        const double kv_ring = fp8_ring ? (b - 1) * comm.p2p(kv_bytes / eb, outer.spans_nodes()) : ring;
        lc.fwd_cp = a2a + std::max(0.0, kv_ring - attn_fwd);
        lc.bwd_cp = a2a + std::max(0.0, kv_ring + ring - attn_bwd);
      }
    }
    if (kind.moe && m.moe && p.ep * p.etp > 1) {
      // Token dispatch and combine: two all-to-alls forward, two backward (GShard; Megatron-Core
      // MoEAlltoAllTokenDispatcher). Each rank sends its (sequence-parallel) tokens' top_k copies,
      // times the routing imbalance, over the EP x ETP group; ranks of the group on other nodes
      // go over the network (the comm model places the group: ep ranks are etp apart,
      // parallel_state.py's expert grid). With --overlap-moe-expert-parallel-comm the all-to-all
      // runs behind another micro-batch's compute (Megatron's 1F1B A2A overlap).
      const double tokens_sp = sp ? tokens / p.tp : tokens;
      const double token_bytes = tokens_sp * static_cast<double>(m.hidden_size) * eb * shape.moe_imbalance;
      // Copies of a token that leave for each destination: the top_k experts are spread evenly
      // over the group's n ranks on n/r nodes (r ranks per node). The plain all-to-all sends one
      // copy per expert: k(r-1)/n stay on the node, k(n-r)/n cross the network. DeepEP/HybridEP
      // (moe_token_dedup) send a token once per remote node and fan it out over NVLink there
      // (DeepSeek-V3 report §3.2.2): (nodes-1)(1-(1-1/nodes)^k) network copies.
      const double n = ep_g.size, r = std::min<double>(ep_g.ranks_per_node, n), nodes = std::max(1.0, n / r);
      const double k = m.moe->top_k;
      const double intra_copies = k * (r - 1) / n;
      const double inter_copies = job.runtime.moe_token_dedup ? (nodes - 1) * (1 - std::pow(1 - 1 / nodes, k)) : k * (n - r) / n;
      const double a2a = comm.all_to_all_two_level(token_bytes * intra_copies, token_bytes * inter_copies, ep_g);
      lc.fwd_ep = 2 * a2a;
      lc.bwd_ep = 2 * a2a;
      if (job.runtime.moe_allgather_dispatch) {
        // The allgather dispatcher moves every token of the group, routed here or not: an
        // all-gather of the group's tokens before the experts and a reduce-scatter of their outputs
        // after, mirrored in backward (gather_from/reduce_scatter_to_sequence_parallel_region over
        // the EP x ETP group).
        const double gathered = n * tokens_sp * static_cast<double>(m.hidden_size) * eb;
        lc.fwd_ep = comm.all_gather(gathered, ep_g) + comm.reduce_scatter(gathered, ep_g);
        lc.bwd_ep = lc.fwd_ep;
      }
      if (job.runtime.moe_a2a_overlap) {
        // The combined 1F1B schedule runs one micro-batch's forward beside another's backward,
        // layer by layer: "EP A2A in forward step is hidden by the attention/mlp computation in the
        // backward step, and vice versa" (Megatron-Core pipeline_parallel/combined_1f1b.py). So
        // compute hides at most its own length of all-to-all; the rest stays exposed, and the
        // hidden part still slows the compute it shares the GPU with (overlap_interference).
        auto exposed = [&](double comm_s, double compute_s) {
          return std::max(0.0, comm_s - compute_s) + cal.kernel.overlap_interference * std::min(comm_s, compute_s);
        };
        lc.fwd_ep = exposed(2 * a2a, lc.bwd_compute);
        lc.bwd_ep = exposed(2 * a2a, lc.fwd_compute);
      }
    }
    if (kind.moe && m.moe && moe_host_bound && !moe_host.synchronises) {
      // No synchronisation (experts padded to capacity, or HybridEP's per-rank budget): the host
      // issues ahead of the GPU, across layers and between forward and backward, and binds only as
      // a rate: where it issues a layer's forward and backward slower than the GPU runs them, the
      // GPU waits for the difference (a queue fed slower than it drains).
      const double h_fwd = moe_host.attention_forward_s + moe_host.forward_s;
      const double h_bwd = moe_host.attention_backward_s + moe_host.backward_s;
      const double gpu = lc.fwd_compute + lc.fwd_tp + lc.fwd_cp + lc.fwd_ep + lc.bwd_compute + lc.bwd_tp + lc.bwd_cp + lc.bwd_ep;
      const double excess = std::max(0.0, h_fwd + h_bwd - gpu);
      lc.fwd_host = h_fwd + h_bwd > 0 ? excess * h_fwd / (h_fwd + h_bwd) : 0.0;
      lc.bwd_host = excess - lc.fwd_host;
    } else if (kind.moe && m.moe && moe_host_bound) {
      // The dispatcher's host synchronisation drains the GPU's queue once per MoE layer forward:
      // the synchronisation splits the layer. After it the host issues this layer's experts and
      // combine (`post`), then the next layer's attention block, router and permutation (`pre`),
      // and waits again. The GPU runs each part as it is issued, so one layer's forward takes
      //   max(max(G_post, H_post) + G_pre, H_post + H_pre)
      // (a two-machine flow shop, host then GPU, in issue order): the attention's GPU time hides
      // none of the host time issued before it, and the host times of both parts add up. (Measured
      // on whole Megatron-Core decoder layers: their wall time exceeded the larger of their GPU and
      // host times by 5-60%; HostCoefficients.) The TP collectives are one per part.
      double pre_compute = 0;
      for (std::size_t i = 0; i < ops.forward_sync; ++i) pre_compute += kernels.time(ops.forward[i]).time_s;
      const double g_pre = pre_compute + lc.fwd_cp + 0.5 * lc.fwd_tp;
      const double g_post = (lc.fwd_compute - pre_compute) + lc.fwd_ep + 0.5 * lc.fwd_tp;
      const double h_pre = moe_host.attention_forward_s + moe_host.forward_presync_s;
      const double h_post = moe_host.forward_s - moe_host.forward_presync_s;
      const double forward = std::max(std::max(g_post, h_post) + g_pre, h_post + h_pre);
      lc.fwd_host = std::max(0.0, forward - (lc.fwd_compute + lc.fwd_tp + lc.fwd_cp + lc.fwd_ep));
      // The backward has no synchronisation, but the host issues it layer by layer: where that
      // takes longer than the layer's GPU time the GPU waits (measured: a Megatron-Core MoE
      // layer's backward at its real shapes took its host time, 2-3x its kernels' time).
      lc.bwd_host = std::max(0.0, moe_host.backward_s + moe_host.attention_backward_s -
                                      (lc.bwd_compute + lc.bwd_tp + lc.bwd_cp + lc.bwd_ep));
    }
    switch (p.recompute.granularity) {
      case RecomputeGranularity::none: break;
      case RecomputeGranularity::selective:
        lc.recompute = kernels.total_time(ops.selective_recompute);
        lc.recompute_flops = total_flops(ops.selective_recompute);
        // Recomputing a whole MoE block dispatches and combines its tokens again (and synchronises
        // the host again).
        if (kind.moe && (p.recompute.modules & kRecomputeMoe)) lc.recompute += lc.fwd_ep + lc.fwd_host;
        break;
      case RecomputeGranularity::full:
        // The whole forward runs again, its TP/CP/EP communication included.
        lc.recompute = lc.fwd_compute;
        lc.recompute_flops = total_flops(ops.forward);
        break;
    }
    return lc;
  };
  // At most eight kinds of layers: cost each once.
  std::vector<std::pair<LayerKind, LayerCost>> kind_costs;
  kind_costs.reserve(LayerKind::kCount);  // cost_of hands out references: never reallocate
  auto cost_of = [&](int layer) -> const LayerCost& {
    const LayerKind kind = layer_kind(job, layer);
    for (const auto& kc : kind_costs)
      if (kc.first == kind) return kc.second;
    kind_costs.emplace_back(kind, layer_cost(kind));
    return kind_costs.back().second;
  };
  // Every layer of a uniform model is layer 0's kind.
  const bool uniform = uniform_layers(job);
  for (int i = 0; i < (uniform ? 1 : m.num_layers); ++i) cost_of(i);

  // ---- embedding and output layer -----------------------------------------------------------
  const LayerOps emb = embedding_ops(m, shape);
  const LayerOps out = output_layer_ops(m, shape);
  const double edge_tp = p.tp > 1 ? (sp ? comm.all_gather(act_bytes, tp_g) : comm.all_reduce(act_bytes, tp_g)) : 0;
  const double emb_fwd_compute = km.total_time(emb.forward), emb_bwd_compute = km.total_time(emb.backward);
  const double out_fwd_compute = km.total_time(out.forward), out_bwd_compute = km.total_time(out.backward);
  // The vocab-parallel embedding reduces its output forward; the output layer's input gradient is
  // reduced backward.
  const double emb_fwd = emb_fwd_compute + edge_tp, emb_bwd = emb_bwd_compute;
  const double out_fwd = out_fwd_compute, out_bwd = out_bwd_compute + edge_tp;

  auto layer_fwd = [](const LayerCost& lc) { return lc.fwd_compute + lc.fwd_tp + lc.fwd_cp + lc.fwd_ep + lc.fwd_host; };
  auto layer_bwd = [](const LayerCost& lc) { return lc.bwd_compute + lc.bwd_tp + lc.bwd_cp + lc.bwd_ep + lc.bwd_host; };

  // ---- multi-token prediction modules, on the last stage's last chunk ------------------------
  // Each runs the embedding of the next tokens, its norms and 2h -> h projection, a decoder layer of
  // the last layer's kind and the shared output layer with its own loss (Megatron-Core
  // MultiTokenPredictionLayer, process_mtp_loss). With TP the projection gathers its 2h input and
  // its h output (gather_from_tensor_model_parallel_region), counted as three edge collectives
  // each way.
  struct MtpCost {
    double fwd = 0, bwd = 0, compute = 0, tp = 0, ep = 0, cp = 0, host = 0;
    const LayerCost* layer = nullptr;
  } mtp;
  const int mtp_modules = m.num_layers > 0 ? std::max(0, m.mtp_layers) : 0;
  if (mtp_modules > 0) {
    const LayerCost& lc = cost_of(m.num_layers - 1);
    const LayerOps head = mtp_head_ops(m, shape);
    const double head_fwd = km.total_time(head.forward), head_bwd = km.total_time(head.backward);
    const double head_tp = 3 * edge_tp;
    mtp.layer = &lc;
    mtp.fwd = mtp_modules * (layer_fwd(lc) + head_fwd + head_tp + emb_fwd + out_fwd);
    mtp.bwd = mtp_modules * (layer_bwd(lc) + head_bwd + head_tp + emb_bwd + out_bwd);
    mtp.compute = mtp_modules * (lc.fwd_compute + lc.bwd_compute + head_fwd + head_bwd + emb_fwd_compute + emb_bwd_compute +
                                 out_fwd_compute + out_bwd_compute);
    mtp.tp = mtp_modules * (lc.fwd_tp + lc.bwd_tp + 2 * head_tp + 2 * edge_tp);
    mtp.ep = mtp_modules * (lc.fwd_ep + lc.bwd_ep);
    mtp.cp = mtp_modules * (lc.fwd_cp + lc.bwd_cp);
    mtp.host = mtp_modules * (lc.fwd_host + lc.bwd_host);
  }

  // ---- per stage, per chunk ------------------------------------------------------------------
  const std::vector<int> stage_layers = resolve_stage_layers(p, m.num_layers);
  const int v = p.vpp;
  PipelineInput pin;
  pin.stages = p.pp;
  pin.chunks = v;
  pin.micro_batches = micro_batches;
  pin.microbatch_group = interleaved_microbatch_group(p, micro_batches);
  pin.combined_1f1b = combined_1f1b(job);
  pin.resize();
  // Both frameworks split the activation across TP ranks for the transfer and all-gather it on the
  // receiving side over NVLink: Megatron's scatter-gather optimization (Narayanan et al. 2021
  // §4.1), DeepSpeed's pipe-partitioned buffers (PipelineEngine: is_pipe_partitioned =
  // is_model_parallel, PartitionedTensor ... .full()). Megatron overlaps the transfer with
  // compute; the DeepSpeed pipeline engine runs send/recv as blocking instructions of its
  // schedule, so the transfer and the re-assembling all-gather also occupy the stage.
  const bool blocking_p2p = job.runtime.framework == Framework::deepspeed;
  pin.p2p_s = p.pp > 1 ? comm.p2p(act_bytes / p.tp, pp_inter_node) : 0;
  const double regather = p.pp > 1 && p.tp > 1 ? comm.all_gather(act_bytes, tp_g) : 0.0;
  const double blocking_send = blocking_p2p ? pin.p2p_s + regather : 0.0;
  std::vector<StageCost> sc(p.pp);
  // Full recompute of only `n` layers per stage (method block) when num_layers is set.
  auto full_layers = [&](int layers) {
    if (p.recompute.granularity != RecomputeGranularity::full) return 0;
    return p.recompute.num_layers < 0 ? layers : std::min(layers, p.recompute.num_layers);
  };
  // Communication (and host synchronisation) re-done by full recompute.
  auto layer_refwd = [](const LayerCost& lc) { return lc.fwd_tp + lc.fwd_cp + lc.fwd_ep + lc.fwd_host; };
  // Without gradient-accumulation fusion every micro-batch reads the fresh weight gradient and
  // read-modify-writes the accumulation buffer (fp32 main_grad in Megatron, model dtype in DeepSpeed).
  const bool sharded_grads = job.runtime.framework == Framework::fsdp || p.zero_stage >= 2;
  const double accum_bytes_per_param = (job.runtime.fused_grad_accumulation || sharded_grads) ? 0.0
                                       : job.runtime.framework == Framework::megatron ? eb + 8.0 : 3.0 * eb;
  // The middle stages of a uniform model (neither the embedding's nor the output layer's) are alike
  // when they hold as many layers: each such stage copies its predecessor's results below.
  auto like_previous_middle_stage = [&](int s) {
    return uniform && s >= 2 && s < p.pp - 1 && stage_layers[s] == stage_layers[s - 1];
  };
  for (int s = 0; s < p.pp; ++s)
    sc[s].params = like_previous_middle_stage(s) ? sc[s - 1].params : stage_param_split(job, s, stage_layers[s]);
  for (int s = 0; s < p.pp; ++s) {
    const int layers = stage_layers[s];
    const int nfull = full_layers(layers);
    const double full_frac = layers > 0 ? static_cast<double>(nfull) / layers : 0;
    const bool full = p.recompute.granularity == RecomputeGranularity::full;
    auto rec_per_layer = [&](const LayerCost& lc) { return full ? full_frac * (lc.recompute + layer_refwd(lc)) : lc.recompute; };
    const double accum_stage = sc[s].params.total() * accum_bytes_per_param /
                               (cl.gpu.hbm_GBps * 1e9 * cal.kernel.memory_efficiency);
    for (int c = 0; c < v; ++c) {
      // Uneven stages under interleaving split into chunks of whole layers (chunk_layers); each
      // chunk sums the costs of the layers it holds (dense-first and MoE layers differ).
      // A uniform model's chunk is that many copies of layer 0, with no need to place them.
      const std::vector<int> ids = uniform ? std::vector<int>{} : chunk_layer_ids(p, m.num_layers, s, c);
      const int in_chunk = uniform ? std::max(0, chunk_layers(p, s, layers, c)) : static_cast<int>(ids.size());
      const double accum_chunk = layers > 0 ? accum_stage * in_chunk / layers : 0.0;
      double f = 0, b = 0;
      // `n` layers of cost lc: a uniform chunk adds its layer once, n times over; a mixed one each layer.
      auto add_layers = [&](const LayerCost& lc, double n) {
        f += n * layer_fwd(lc);
        b += n * (layer_bwd(lc) + rec_per_layer(lc));
        sc[s].compute += n * (lc.fwd_compute + lc.bwd_compute);
        sc[s].recompute += n * (full ? full_frac : 1.0) * lc.recompute;
        sc[s].tp += n * (lc.fwd_tp + lc.bwd_tp + (full ? full_frac : 0.0) * lc.fwd_tp);
        sc[s].cp += n * (lc.fwd_cp + lc.bwd_cp + (full ? full_frac : 0.0) * lc.fwd_cp);
        sc[s].ep += n * (lc.fwd_ep + lc.bwd_ep + (full ? full_frac : 0.0) * lc.fwd_ep);
        sc[s].host += n * (lc.fwd_host + lc.bwd_host + (full ? full_frac : 0.0) * lc.fwd_host);
        sc[s].recompute_flops += n * (full ? full_frac : 1.0) * lc.recompute_flops;
      };
      if (ids.empty()) add_layers(kind_costs.front().second, in_chunk);
      else for (int id : ids) add_layers(cost_of(id), 1.0);
      if (s == 0 && c == 0) { f += emb_fwd; b += emb_bwd; }
      if (s == p.pp - 1 && c == v - 1) {
        f += out_fwd + mtp.fwd;
        b += out_bwd + mtp.bwd;
        if (mtp.layer) {
          // Recomputed with the plan's granularity; under full recompute the whole module layer
          // with its communication (MultiTokenPredictionLayer checkpoints its forward then).
          const LayerCost& lc = *mtp.layer;
          b += mtp_modules * (lc.recompute + (full ? layer_refwd(lc) : 0.0));
          sc[s].recompute += mtp_modules * lc.recompute;
          sc[s].recompute_flops += mtp_modules * lc.recompute_flops;
          if (full) {
            sc[s].tp += mtp_modules * lc.fwd_tp;
            sc[s].ep += mtp_modules * lc.fwd_ep;
            sc[s].cp += mtp_modules * lc.fwd_cp;
            sc[s].host += mtp_modules * lc.fwd_host;
          }
        }
      }
      const double send_fwd = (s < p.pp - 1 || c < v - 1) ? blocking_send : 0.0;  // activation to the next stage
      const double send_bwd = (s > 0 || c > 0) ? blocking_send : 0.0;              // gradient to the previous stage
      f += send_fwd;
      b += send_bwd + accum_chunk;
      sc[s].pp_blocking += send_fwd + send_bwd;
      pin.forward(s, c) = f;
      pin.backward(s, c) = b;
      sc[s].fwd += f;
      sc[s].bwd += b;
    }
    const bool first = s == 0, last = s == p.pp - 1;
    sc[s].compute += (first ? emb_fwd_compute + emb_bwd_compute : 0) + (last ? out_fwd_compute + out_bwd_compute + mtp.compute : 0) +
                     accum_stage;
    sc[s].tp += (first ? edge_tp : 0) + (last ? edge_tp + mtp.tp : 0);
    sc[s].ep += last ? mtp.ep : 0;
    sc[s].cp += last ? mtp.cp : 0;
    sc[s].host += last ? mtp.host : 0;
  }

  const PipelineResult pr = simulate_pipeline(pin, trace);
  // Exposed p2p: the fill and drain critical path crosses every virtual-stage boundary once each
  // way, 2(p*v - 1) transfers; steady-state transfers hide behind other micro-batches' compute.
  const double pp_exposed = p.pp > 1 ? 2.0 * (p.pp * v - 1) * pin.p2p_s : 0.0;

  // ---- data-parallel synchronization and optimizer step, per stage ---------------------------
  const Framework fw = job.runtime.framework;
  const bool fp32_model = job.training.precision == Precision::fp32 || job.training.precision == Precision::tf32;
  // Megatron reduces its fp32 main_grad buffer unless --grad-reduce-in-bf16; with fp8 parameters
  // (--fp8-param-gather) the distributed optimizer all-gathers the linears' weights in fp8.
  const double grad_bytes = fp32_model ? 4 : fw == Framework::megatron && !job.runtime.grad_reduce_in_bf16 ? 4 : 2;
  const double weight_bytes = fp32_model ? 4 : 2;
  const bool fp8_params = te_fp8(job) && job.runtime.fp8_param_gather && job.training.recipe != LowPrecisionRecipe::nvfp4;
  const double dp_shard = static_cast<double>(p.dp) * p.cp;
  const OptimizerSpec& optimizer = job.training.optimizer;
  const double step_bytes = optimizer_step_bytes(optimizer, job.training.precision, job.training.recipe, grad_bytes, weight_bytes);
  double tied_embedding_sync = 0;
  if (m.tied_embeddings && p.pp > 1) {
    const double embedding_per_gpu = static_cast<double>(shape.vocab) * static_cast<double>(m.hidden_size) / p.tp;
    // The first and last stage's ranks, (pp-1)*tp*cp*dp apart in Megatron's rank order.
    const GroupPlacement ends_g = place_group(2, (p.pp - 1) * p.tp * p.cp * p.dp, gpn);
    tied_embedding_sync = comm.all_reduce(embedding_per_gpu * grad_bytes, ends_g);
  }
  for (int s = 0; s < p.pp; ++s) {
    if (like_previous_middle_stage(s) && sc[s].fwd == sc[s - 1].fwd && sc[s].bwd == sc[s - 1].bwd) {
      sc[s].dp_exposed = sc[s - 1].dp_exposed;
      sc[s].optimizer = sc[s - 1].optimizer;
      continue;
    }
    const ParamSplit& split = sc[s].params;
    const double params = split.total();
    // Routed-expert gradients reduce over the expert-data-parallel group, the rest over dp*cp
    // (Megatron-Core's separate expert gradient buffers).
    const double edp = std::max(1, p.expert_data_parallel());
    // Sharded state: the gradients reduce-scatter inside each optimizer copy's group and its shard
    // all-reduces across the copies; the updated parameters all-gather inside the group.
    const double shard_ranks = p.optimizer_shard_ranks(), expert_shard_ranks = p.expert_optimizer_shard_ranks();
    auto rs = [&](double bytes_dense, double bytes_expert) {
      double t = 0;
      if (dp_shard > 1)
        t += comm.reduce_scatter(bytes_dense, dp_intra_g) + (copies ? comm.all_reduce(bytes_dense / shard_ranks, dp_inter_g) : 0.0);
      if (edp > 1 && bytes_expert > 0)
        t += comm.reduce_scatter(bytes_expert, edp_intra_g) +
             (copies ? comm.all_reduce(bytes_expert / expert_shard_ranks, edp_inter_g) : 0.0);
      return t;
    };
    auto ag = [&](double bytes_dense, double bytes_expert) {
      return (dp_shard > 1 ? comm.all_gather(bytes_dense, dp_intra_g) : 0.0) +
             (edp > 1 && bytes_expert > 0 ? comm.all_gather(bytes_expert, edp_intra_g) : 0.0);
    };
    auto ar = [&](double bytes_dense, double bytes_expert) {
      return (dp_shard > 1 ? comm.all_reduce(bytes_dense, dp_g) : 0.0) +
             (edp > 1 && bytes_expert > 0 ? comm.all_reduce(bytes_expert, edp_g) : 0.0);
    };
    double dp_time = 0, hidden = 0;  // hidden: the part of dp_time that runs behind compute
    if (dp_shard > 1 || (edp > 1 && split.expert > 0)) {
      if (fw == Framework::fsdp || p.zero_stage >= 3) {
        // Parameters gathered for forward and again for backward, gradients reduce-scattered, for
        // every micro-batch; prefetching overlaps them with the compute of each micro-batch.
        // DeepSpeed ZeRO-3 moves parameters in buckets of stage3_prefetch_bucket_size (default
        // 5e7 elements); FSDP gathers one wrapped decoder layer at a time. Each collective pays
        // the ring latency of the whole data-parallel group.
        const double pieces = fw == Framework::fsdp ? stage_layers[s] + 1.0 : std::ceil(params / kZero3BucketElements);
        const double per_mb = pieces * (2 * comm.all_gather(params * weight_bytes / pieces, dp_g) +
                                        comm.reduce_scatter(params * grad_bytes / pieces, dp_g));
        dp_time = per_mb * static_cast<double>(micro_batches);
        // FSDP prefetches the next block's parameters while computing the current one. DeepSpeed
        // ZeRO-3 fetches sub-module parameters on demand, so its gathers sit on the critical path
        // (the bottleneck ZeRO++, Wang et al. 2023 §2, sets out to remove).
        if (fw == Framework::fsdp) hidden = std::min(dp_time, (sc[s].fwd + sc[s].bwd) * static_cast<double>(micro_batches));
      } else if (p.distributed_optimizer || p.zero_stage >= 1) {
        const double reduce_scatter = rs(split.dense * grad_bytes, split.expert * grad_bytes);
        // With fp8 parameters (--fp8-param-gather) the decoder linears are gathered as fp8, 1 byte each.
        const ParamSplit linears = fp8_params ? decoder_param_split(job, s, stage_layers[s]) : ParamSplit{};
        const double all_gather = ag((split.dense - linears.dense) * weight_bytes + linears.dense,
                                     (split.expert - linears.expert) * weight_bytes + linears.expert);
        dp_time = reduce_scatter + all_gather;
        // Each collective hides only behind its own window: the gradient reduce-scatter behind the
        // last micro-batch's backward (--overlap-grad-reduce), the parameter all-gather behind the
        // next iteration's first forward (--overlap-param-gather). DeepSpeed ZeRO-1/2 gathers the
        // updated parameters inside its optimizer step (all_gather_dp_groups), never overlapped.
        const bool gather_overlaps = job.runtime.overlap_param_gather && fw != Framework::deepspeed;
        hidden = (job.runtime.overlap_grad_reduce ? overlapped_dp_time(reduce_scatter, sc[s].bwd, p.vpp, p.pp) : 0.0) +
                 (gather_overlaps ? overlapped_dp_time(all_gather, sc[s].fwd, p.vpp, p.pp) : 0.0);
      } else {
        dp_time = ar(split.dense * grad_bytes, split.expert * grad_bytes);
        hidden = job.runtime.overlap_grad_reduce ? overlapped_dp_time(dp_time, sc[s].bwd, p.vpp, p.pp) : 0.0;
      }
    }
    // Overlapped communication is not free: it slows the compute it hides behind.
    sc[s].dp_exposed = dp_time - hidden + cal.kernel.overlap_interference * hidden;
    // Tied input/output embeddings split over a pipeline: the first and last stages each hold a
    // copy, and after backward they all-reduce its gradient between them, after the DP sync and
    // outside any overlap (Megatron finalize_model_grads `_allreduce_word_embedding_grads`,
    // DeepSpeed's pipeline `_exec_reduce_tied_grads`). Counted with the gradient synchronization.
    if (s == 0 || s == p.pp - 1) sc[s].dp_exposed += tied_embedding_sync;
    const bool sharded = fw == Framework::fsdp || p.distributed_optimizer || p.zero_stage >= 1;
    const double updated = sharded ? split.dense / shard_ranks + split.expert / expert_shard_ranks : params;
    // The offloaded share steps on the host: its gradients go down and its updated weights come back
    // over the GPU's host link (HybridDeviceOptimizer); the host's arithmetic is not costed (a note says so).
    const double offloaded = optimizer.cpu_offload_fraction;
    sc[s].optimizer = updated * (1 - offloaded) * step_bytes / (cl.gpu.hbm_GBps * 1e9 * cal.kernel.memory_efficiency) +
                      updated * offloaded * (grad_bytes + weight_bytes) / (cl.gpu.pcie_GBps * 1e9);
  }
  for (int s = 0; s < p.pp; ++s) sc[s].finish = pr.end_s[s] + sc[s].dp_exposed + sc[s].optimizer + job.runtime.step_overhead_s;
  const int crit = static_cast<int>(
      std::max_element(sc.begin(), sc.end(), [](const StageCost& a, const StageCost& b) { return a.finish < b.finish; }) - sc.begin());
  pred.iteration_time_s = sc[crit].finish;

  // ---- memory -----------------------------------------------------------------------------------
  pred.feasible = true;
  pred.stages.reserve(static_cast<std::size_t>(p.pp));
  int worst_mem = 0;
  LayerActivationBytes layer_bytes(job);
  for (int s = 0; s < p.pp; ++s) {
    StagePrediction st;
    st.stage = s;
    st.layers = stage_layers[s];
    st.forward_s = sc[s].fwd;
    st.backward_s = sc[s].bwd;
    st.recompute_s = sc[s].recompute;
    st.busy_s = pr.busy_s[s];
    st.in_flight_micro_batches = pr.peak_in_flight[s];
    st.memory = stage_memory(job, s, stage_layers[s], pr.peak_in_flight[s], sc[s].params, layer_bytes);
    if (st.memory.total_GiB > pred.memory_per_gpu_GiB) {
      pred.memory_per_gpu_GiB = st.memory.total_GiB;
      worst_mem = s;
    }
    pred.stages.push_back(st);
  }

  // ---- throughput and utilization -------------------------------------------------------------
  const double world = p.world_size();
  const double gbs = static_cast<double>(job.training.global_batch_size);
  const double seq = static_cast<double>(job.training.seq_length);
  pred.tokens_per_sec_per_gpu = gbs * seq / pred.iteration_time_s / world;
  double layers_model = 0;
  {
    // Summed layer by layer in order; each kind's FLOPs computed once (a uniform model: one kind).
    std::vector<std::pair<LayerKind, double>> kind_flops;
    if (m.uniform_layers()) layers_model = m.num_layers * layer_model_flops_fwd(m, seq, seq, kind_costs.front().first);
    else for (int i = 0; i < m.num_layers; ++i) {
      const LayerKind kind = m.layer_kind(i);
      auto it = std::find_if(kind_flops.begin(), kind_flops.end(), [&](const auto& kf) { return kf.first == kind; });
      if (it == kind_flops.end()) it = kind_flops.insert(it, {kind, layer_model_flops_fwd(m, seq, seq, kind)});
      layers_model += it->second;
    }
  }
  const double logits_model = 2.0 * seq * static_cast<double>(m.hidden_size) * static_cast<double>(m.vocab_size);
  // Megatron counts each MTP module as a layer of the last layer's kind, its 2h x h projection and
  // one more logit computation (training.py num_floating_point_operations).
  const double h_model = static_cast<double>(m.hidden_size);
  const double mtp_model = mtp_modules > 0 ? mtp_modules * (layer_model_flops_fwd(m, seq, seq, m.layer_kind(m.num_layers - 1)) +
                                                            2.0 * seq * 2.0 * h_model * h_model + logits_model)
                                           : 0.0;
  const double model_flops = 3.0 * gbs * (layers_model + logits_model + mtp_model);
  // Against the peak of the format the GEMMs run in: NVFP4's fp4 peak, not fp8's.
  const double peak = job.training.precision == Precision::fp8 ? cl.gpu.low_precision_peak_flops(job.training.recipe)
                                                               : cl.gpu.peak_flops(job.training.precision);
  pred.mfu = model_flops / (pred.iteration_time_s * world * peak);
  double rec_flops = 0;
  for (int s = 0; s < p.pp; ++s) rec_flops += sc[s].recompute_flops;
  // lc.recompute_flops is per GPU for one micro-batch of one TP/CP shard: scale to the whole job.
  const double hw_extra = rec_flops * static_cast<double>(micro_batches) * p.dp * p.tp * p.cp;
  pred.hfu = (model_flops + hw_extra) / (pred.iteration_time_s * world * peak);

  // ---- breakdown of the critical stage ------------------------------------------------------------
  const double mbs = static_cast<double>(micro_batches);
  TimeBreakdown& bd = pred.breakdown;
  bd.compute_s = sc[crit].compute * mbs;
  bd.recompute_s = sc[crit].recompute * mbs;
  bd.tp_comm_s = sc[crit].tp * mbs;
  bd.cp_comm_s = sc[crit].cp * mbs;
  bd.ep_comm_s = sc[crit].ep * mbs;
  bd.moe_host_s = sc[crit].host * mbs;
  const double idle = std::max(0.0, pr.end_s[crit] - pr.busy_s[crit]);
  bd.pp_comm_s = std::min(idle, pp_exposed) + sc[crit].pp_blocking * mbs;
  bd.bubble_s = idle - std::min(idle, pp_exposed);
  // Part of the critical stage's idle time is waiting for a slower stage (imbalance), the rest is
  // the schedule's own fill/drain bubble.
  const double max_busy = *std::max_element(pr.busy_s.begin(), pr.busy_s.end());
  const double imbalance = std::min(bd.bubble_s, max_busy - pr.busy_s[crit]);
  bd.dp_comm_s = sc[crit].dp_exposed;
  bd.optimizer_s = sc[crit].optimizer;
  bd.step_overhead_s = job.runtime.step_overhead_s;

  // ---- feasibility and bottleneck -------------------------------------------------------------
  const StagePrediction& wm = pred.stages[worst_mem];
  if (wm.memory.total_GiB > pred.memory_capacity_GiB) {
    pred.feasible = false;
    pred.reason = fmt::format(FMT_COMPILE("stage {} needs {:.1f} GiB > {:.1f} GiB available on {} ({})"), worst_mem, wm.memory.total_GiB,
                              pred.memory_capacity_GiB, cl.gpu.name, plan_text(p));
    pred.bottleneck = {"memory", worst_mem, 0, 0, pred.reason};
    return pred;
  }
  const double T = pred.iteration_time_s;
  const int slowest = static_cast<int>(std::max_element(pr.busy_s.begin(), pr.busy_s.end()) - pr.busy_s.begin());
  struct Cand { const char* kind; double t; };
  Cand cands[] = {{"bubble", bd.bubble_s - imbalance}, {"tp_comm", bd.tp_comm_s}, {"cp_comm", bd.cp_comm_s}, {"ep_comm", bd.ep_comm_s},
                  {"moe_host", bd.moe_host_s},
                  {"pp_comm", bd.pp_comm_s}, {"dp_comm", bd.dp_comm_s}, {"recompute", bd.recompute_s},
                  {"optimizer", bd.optimizer_s}, {"stage_time", imbalance}};
  const Cand* top = std::max_element(std::begin(cands), std::end(cands), [](const Cand& a, const Cand& b) { return a.t < b.t; });
  if (top->t < 0.03 * T) {
    // The host-side step overhead is left out: no plan of this job changes it.
    pred.bottleneck = {"compute", slowest, 0, T,
                       std::string("compute-bound: no overhead a plan can change (bubble, communication, recompute, optimizer "
                                   "step, stage imbalance) reaches 3% of the iteration")};
  } else {
    pred.bottleneck = {top->kind, std::string_view(top->kind) == "stage_time" ? slowest : crit, top->t, T, {}};
  }
  pred.notes.reserve(10);  // room for every note below: no regrowth per prediction
  if (m.language_model_of_multimodal)
    pred.notes.push_back("the model is the language model of a multimodal config (text_config): its vision or audio encoder and "
                         "projector are not costed, nor the image tokens they add to a sequence");
  if (job.training.seq_length > m.max_seq_length)
    pred.notes.push_back(fmt::format(FMT_COMPILE("sequence length {} exceeds the model's max_seq_length {}"), job.training.seq_length, m.max_seq_length));
  if (wm.memory.total_GiB > kTightMemoryFraction * pred.memory_capacity_GiB)
    pred.notes.push_back(fmt::format(FMT_COMPILE("stage {} needs {:.1f} GiB, within {:.0f}% of the {:.1f} GiB available: about the memory "
                                     "model's error on published runs, so it may not fit (keep headroom: --memory-reserve)"),
                                     worst_mem, wm.memory.total_GiB, 100 * (1 - kTightMemoryFraction), pred.memory_capacity_GiB));
  if (cal.source.starts_with("defaults")) pred.notes.push_back(
        "kernel and network efficiencies are uncalibrated defaults (a stack tuned like Megatron-LM's; fit them to yours with "
        "`strata calibrate --steps` or `--profile`)");
  else pred.notes.push_back("kernel and network efficiencies calibrated: " + cal.source);
  if (shape.cudnn_attention && job.runtime.attention_kernel == AttentionKernel::automatic && cl.gpu.architecture == "hopper")
    pred.notes.push_back("attention timed as cuDNN's fused kernel, which Transformer Engine runs on Hopper since 1.2 (1.5-1.8x "
                         "FlashAttention-2's rate); --attention-kernel flash for a stack that runs flash-attn");
  if (shape.fp8_attention)
    pred.notes.push_back("fp8 attention: the kernel's products at the fp8 tensor-core rate, its softmax exponentials at the "
                         "special-function rate, Q, K, V (backward also O and dO) quantized first; a model from the datasheet "
                         "rates, not measured (no fp8 attention measurement in configs/measurements)");
  if (m.moe && job.runtime.moe_load_imbalance == RuntimeOptions::kDefaultMoeLoadImbalance &&
      effective_moe_imbalance(job.runtime) > 1.0)
    pred.notes.push_back(fmt::format(FMT_COMPILE("MoE: the busiest expert-parallel rank is assumed to get {:g}x the mean routed tokens, a default "
                                     "guess for auxiliary-loss balanced routing (--moe-load-imbalance; 1 for force-balanced routing)"),
                                     job.runtime.moe_load_imbalance));
  const char* host_binding = !(bd.moe_host_s > 0)
                                 ? "the GPU runs each layer longer than the host takes to issue it, so the host time is hidden"
                             : moe_host.synchronises
                                 ? "the dropless dispatcher synchronises the host once per layer, so the GPU waits for it"
                                 : "the dispatcher does not synchronise (fixed sizes), so the host runs ahead and the GPU waits only "
                                   "where the host issues a layer slower than the GPU runs it";
  if (m.moe && m.num_moe_layers() > 0 && moe_host_bound)
    pred.notes.push_back(
        moe_host.measured_override
            ? fmt::format(FMT_COMPILE("MoE: the host issues each MoE block in {:.2f} ms forward (calibration host.moe_forward_s, "
                                      "--moe-forward-host-ms) and {:.2f} ms backward (in the measured line's proportion), and its layer's "
                                      "attention block in {:.2f} ms and {:.2f} ms; {}: {:.3f} s of the iteration"),
                          1e3 * moe_host.forward_s, 1e3 * moe_host.backward_s, 1e3 * moe_host.attention_forward_s,
                          1e3 * moe_host.attention_backward_s, host_binding, bd.moe_host_s)
            : fmt::format(FMT_COMPILE("MoE: the host issues each MoE block in {:.2f} ms forward and {:.2f} ms backward ({}), as "
                                      "Megatron-Core's MoE layer with {} measured on an H100 machine's CPU, and its layer's attention block in "
                                      "{:.2f} ms and {:.2f} ms (measured without Transformer Engine); {}: {:.3f} s of the iteration. A property of the "
                                      "stack and the CPU: measure yours (--moe-forward-host-ms, README \"The host time of a MoE layer\")"),
                          1e3 * moe_host.forward_s, 1e3 * moe_host.backward_s,
                          moe_host.experts_counted > 0
                              ? fmt::format("router and dispatcher, and {} local experts one after another", moe_host.experts_counted)
                              : fmt::format("router and dispatcher{}: Transformer Engine's grouped GEMM adds per-expert host work "
                                            "that was not measured, so this is a lower bound",
                                            moe_host.biased_experts > 0
                                                ? fmt::format(", and the eager fc2 bias of {} local experts", moe_host.biased_experts)
                                                : std::string(" only")),
                          moe_host.allgather_line ? "the allgather dispatcher"
                          : job.runtime.moe_token_dedup
                              ? "the alltoall dispatcher (DeepEP/HybridEP fuse its permutation and all-to-all into fewer calls; "
                                "not measured, so the dispatcher's part is an upper bound)"
                              : "the alltoall dispatcher",
                          1e3 * moe_host.attention_forward_s, 1e3 * moe_host.attention_backward_s, host_binding, bd.moe_host_s));
  else if (moe_host_time_unmodelled(job))
    // (Padded to capacity, Megatron's dispatcher never waits on the host: nothing is left out.)
    pred.notes.push_back(fmt::format(
        FMT_COMPILE("MoE: the host time of the MoE layers is not modelled{}: read MoE throughput as an upper bound, or calibrate "
                    "with one measured step (strata calibrate --steps)"),
        job.runtime.framework != Framework::megatron ? " for this framework's dispatcher"
                                                     : " (the calibration's host line is zero; the dispatcher synchronises the "
                                                       "host once per layer for its token counts, so the host cannot run ahead of "
                                                       "small expert kernels)"));
  if (m.moe && m.num_moe_layers() > 0 && job.runtime.moe_rank_capacity_factor > 0)
    pred.notes.push_back(fmt::format(
        FMT_COMPILE("MoE: a static per-rank token budget ({:g} x the mean, moe_expert_rank_capacity_factor): the dispatcher never "
                    "waits on the host for its token counts{}; a rank receiving more drops the excess"),
        job.runtime.moe_rank_capacity_factor,
        (job.runtime.cuda_graph_modules & kCudaGraphFullIteration) ? ", and the whole step replays as one CUDA graph: no MoE host time"
                                                                   : ""));
  if (m.moe && m.num_moe_layers() > 0 && moe_host_bound && moe_host.graph_replays > 0) {
    const std::vector<std::string> names = cuda_graph_module_names(job.runtime.cuda_graph_modules);
    pred.notes.push_back(fmt::format(
        FMT_COMPILE("MoE: CUDA graphs capture {} of each layer: the host replays {} graph(s) each way in place of their eager ops, "
                    "{:.2f} ms per replay (a guess, not measured: calibration host.cuda_graph_replay_s); the experts and the "
                    "combine after the synchronisation stay eager"),
        names.empty() ? std::string("the whole layer") : fmt::format("{}", fmt::join(names, ", ")), moe_host.graph_replays,
        1e3 * job.calibration.host.cuda_graph_replay_s));
  }
  if (m.moe && m.num_moe_layers() > 0 && m.moe->num_experts > p.ep)
    pred.notes.push_back(job.runtime.moe_grouped_gemm
                             ? "MoE: the local experts are timed as Transformer Engine's grouped GEMM (--moe-grouped-gemm), four "
                               "expert GEMMs in flight"
                             : "MoE: the local experts are timed one after another (Megatron's SequentialMLP, what a launch "
                               "without --moe-grouped-gemm runs); --moe-grouped-gemm times grouped GEMMs");
  if (job.training.optimizer.cpu_offload_fraction > 0)
    pred.notes.push_back(fmt::format(
        FMT_COMPILE("optimizer: {:g}% of its state is kept and updated on the host (--optimizer-offload-fraction): the gradients "
                    "and weights of that share cross the {:g} GB/s host link every step (costed), the host's update itself is not"),
        100 * job.training.optimizer.cpu_offload_fraction, cl.gpu.pcie_GBps));
  else if (job.training.optimizer.kind == OptimizerKind::muon)
    pred.notes.push_back("optimizer: Muon is costed as one momentum buffer per parameter (Megatron keeps Adam's two moments for "
                         "the embeddings and other non-matrix parameters); its Newton-Schulz orthogonalisation is not costed");
  if (job.runtime.step_overhead_s == RuntimeOptions::kDefaultStepOverheadS) {
    // Formatted once: most predictions carry this note, and a search makes thousands.
    static const std::string default_overhead_note = fmt::format(
        FMT_COMPILE("host-side step overhead is a {:g} s default guess (--step-overhead)"), RuntimeOptions::kDefaultStepOverheadS);
    pred.notes.push_back(default_overhead_note);
  }
  return pred;
}

Prediction AnalyticalCostModel::predict(const Job& job) const { return strata::predict(job); }

}  // namespace strata
