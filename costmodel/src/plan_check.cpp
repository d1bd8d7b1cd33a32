// check_plan (predictor.h): whether Megatron-LM would run the plan for this model and batch, and
// why not. The predictor calls it first; the search uses it to rule out illegal plans.
#include "costmodel/predictor.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

namespace strata {

namespace {

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

// Megatron-Core TransformerConfig's checks of per-layer and full-iteration CUDA graphs
// (__post_init__, "cuda_graph_impl != none"), for the Transformer Engine per-layer graphs a launch
// of strata's asks for. An explicit module list is checked as Megatron checks it; the whole layer
// (Megatron's empty list) names no module, so only the recompute and dropout rules apply to it.
std::string cuda_graph_problem(const Job& job) {
  const unsigned g = job.runtime.cuda_graph_modules;
  if (g == 0 || job.runtime.framework != Framework::megatron) return "";
  const ModelSpec& m = job.model;
  const ParallelPlan& p = job.plan;
  const bool full_iteration = (g & kCudaGraphFullIteration) != 0;
  const bool whole = full_iteration || g == kCudaGraphWholeLayer;  // Megatron's "full_cudagraph"
  if (!whole) {
    if ((g & kCudaGraphMoe) && (g & kCudaGraphMoeRouter)) return "CUDA graph modules must not contain both moe and moe_router (Megatron-Core)";
    if ((g & kCudaGraphMoePreprocess) && !(g & kCudaGraphMoeRouter))
      return "CUDA graph module moe_preprocess is only supported with moe_router (Megatron-Core)";
    if ((g & (kCudaGraphMoe | kCudaGraphMoeRouter)) && !m.moe) return "CUDA graph modules moe and moe_router need a mixture-of-experts model";
    if (m.moe && (g & kCudaGraphMlp) &&
        std::find(m.moe->layer_pattern.begin(), m.moe->layer_pattern.end(), 0) == m.moe->layer_pattern.end())
      return "CUDA graph module mlp captures dense MLPs, and every layer of the model is an MoE layer (Megatron-Core)";
    if (m.moe && !(job.runtime.moe_capacity_factor > 0 && job.runtime.moe_pad_to_capacity)) {
      if (g & kCudaGraphMoe) return "CUDA graph module moe captures whole MoE blocks, only with drop-and-pad experts (a capacity factor and padding to it)";
      const bool alltoall = !job.runtime.moe_token_dedup && !job.runtime.moe_allgather_dispatch;
      if ((g & kCudaGraphMoePreprocess) && alltoall && job.runtime.moe_capacity_factor > 0)
        return "CUDA graph module moe_preprocess cannot capture the alltoall dispatcher's preprocessing with a capacity factor "
               "(it copies to the host and synchronises; Megatron-Core)";
    }
  }
  if (full_iteration) {
    // The full-iteration graph's offloading needs fine_grained_offloading_max_inflight_offloads,
    // a TransformerConfig field Megatron-LM's arguments do not set.
    if (p.offload.modules != 0)
      return "fine-grained activation offloading with a full-iteration CUDA graph needs a bound on in-flight offloads that "
             "Megatron-LM's arguments cannot set";
    return "";
  }
  if (p.recompute.granularity == RecomputeGranularity::full)
    return "full recompute runs only with a full-iteration CUDA graph, not per-layer graphs (Megatron-Core)";
  if (p.offload.modules != 0 && !whole && (g & kCudaGraphMoe))
    return "fine-grained activation offloading does not run with the moe CUDA graph module (token-drop MoE; Megatron-Core)";
  if (p.recompute.granularity == RecomputeGranularity::selective) {
    const unsigned r = p.recompute.modules;
    if (!whole && (g & kCudaGraphMoeRouter) && (r & kRecomputeMoe))
      return "recomputing whole MoE blocks does not run with the moe_router CUDA graph module (Megatron-Core)";
    // Graphed recomputation draws no new random numbers, so dropout inside it would repeat.
    if (m.dropout && (r & kRecomputeCoreAttn) && (whole || (g & kCudaGraphAttn)))
      return "attention dropout does not run with graphed attention recomputation (Megatron-Core)";
    if (m.dropout && (((r & kRecomputeMlp) && (whole || (g & kCudaGraphMlp))) || ((r & kRecomputeMoe) && (whole || (g & kCudaGraphMoe)))))
      return "hidden dropout does not run with graphed MLP or MoE recomputation (Megatron-Core)";
  }
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
  // Megatron-Core takes tp a divisor or a multiple of the query groups (TransformerConfig; with more
  // TP ranks than groups each rank gathers the QKV output and keeps its group: costed).
  if (m.num_query_groups % p.tp != 0 && (m.mla || p.tp % m.num_query_groups != 0))
    return fmt::format("tp={} neither divides nor is a multiple of the {} query groups (GQA)", p.tp, m.num_query_groups);
  const bool dense_mlp_layers = m.hybrid() ? m.count_hybrid('-') > 0 : !m.moe || m.num_moe_layers() < m.num_layers;
  if (m.ffn_hidden_size % p.tp != 0 && dense_mlp_layers)
    return fmt::format("tp={} does not divide ffn_hidden_size {}", p.tp, m.ffn_hidden_size);
  if (m.gdn) {
    // Megatron-Core GatedDeltaNet splits its key and value heads over TP, then over CP (tp x cp
    // must divide both: the head split of its context-parallel all-to-all).
    const GdnSpec& g = *m.gdn;
    if (g.num_key_heads % (p.tp * p.cp) != 0 || g.num_value_heads % (p.tp * p.cp) != 0)
      return fmt::format("tp x cp = {} must divide the gated DeltaNet layers' {} key and {} value heads", p.tp * p.cp,
                         g.num_key_heads, g.num_value_heads);
    if (t.precision == Precision::fp8 && g.in_proj_width() % 16 != 0)
      return fmt::format("fp8 needs the gated DeltaNet in_proj width {} in multiples of 16 (GatedDeltaNet's check)", g.in_proj_width());
  }
  if (m.mamba) {
    // Megatron-Core MambaMixer and MambaContextParallel: heads and groups split over TP, then the
    // heads over CP (each rank at least one head), the groups over CP or CP over the groups; fp8
    // GEMMs need in_proj's output width in multiples of 16.
    const MambaSpec& mb = *m.mamba;
    if (mb.num_heads % p.tp != 0 || mb.num_groups % p.tp != 0)
      return fmt::format("tp={} does not divide the Mamba layers' {} heads and {} groups", p.tp, mb.num_heads, mb.num_groups);
    const int groups_local = mb.num_groups / p.tp;
    if (p.cp > 1 && ((mb.num_heads / p.tp) % p.cp != 0 || (groups_local >= p.cp ? groups_local % p.cp : p.cp % groups_local) != 0))
      return fmt::format("cp={} must divide the Mamba heads per TP rank ({}) and divide or be divided by the groups per TP rank ({})",
                         p.cp, mb.num_heads / p.tp, groups_local);
    if (t.precision == Precision::fp8 && mb.in_proj_width() % 16 != 0)
      return fmt::format("fp8 needs the Mamba in_proj width {} in multiples of 16 (MambaMixer's check)", mb.in_proj_width());
  }
  if (t.seq_length % p.cp != 0 || (p.cp > 1 && t.seq_length % (2 * p.cp) != 0))
    return fmt::format("cp={} needs the sequence length {} divisible by 2*cp (load-balanced causal split)", p.cp, t.seq_length);
  if (m.dsa) {
    // Megatron-Core's DSA: AbsorbedMLASelfAttention asserts sequence parallelism under TP, and
    // DSAttention gathers the whole context (dsa.py: "supports cp_comm_type=allgather only").
    // strata costs the fused kernels (FlashMLA's sparse prefill: SM90 and later); elsewhere the
    // PyTorch fallback writes the s x s index scores, which is not modelled.
    if (p.tp > 1 && !p.sequence_parallel) return "DeepSeek Sparse Attention with tp > 1 needs sequence parallelism (Megatron-Core AbsorbedMLASelfAttention)";
    if (p.cp > 1 && job.runtime.cp_comm_type != CpCommType::allgather)
      return "DeepSeek Sparse Attention runs context parallelism with --cp-comm-type allgather only (Megatron-Core DSAttention)";
    const std::string& arch = job.cluster.gpu.architecture;
    if (job.cluster.gpu.vendor != "nvidia" || (arch != "hopper" && arch != "blackwell"))
      return "DeepSeek Sparse Attention is costed with its fused kernels, which need Hopper or later (FlashMLA's sparse prefill, SM90+)";
    if (job.runtime.fp8_attention) return "fp8 attention is not modelled for DeepSeek Sparse Attention's kernels (they run in bf16)";
    // Top-k shared across layers stays inside a model chunk: each chunk must start on a layer that
    // runs the indexer ("Cross-PP top-k sharing is not supported", dsa.py).
    if (m.dsa->topk_freq > 1 && p.pp > 1) {
      int first = 0;
      for (int n : virtual_stage_layers(p, m)) {
        if (n > 0 && !m.dsa->computes_topk(first + 1))
          return fmt::format("DSA top-k shared every {} layers: the model chunk starting at layer {} would reuse the top-k of a "
                             "layer on another chunk, which Megatron-Core does not support (each chunk must start on a layer "
                             "that runs the indexer: move the stage boundaries)",
                             m.dsa->topk_freq, first + 1);
        first += n;
      }
    }
  }
  if (p.cp > 1 && job.runtime.cp_comm_type == CpCommType::a2a &&
      (m.num_attention_heads % (p.tp * p.cp) != 0 || m.num_query_groups % (p.tp * p.cp) != 0))
    return fmt::format("--cp-comm-type a2a needs the {} heads and {} query groups divisible by tp*cp = {}", m.num_attention_heads,
                       m.num_query_groups, p.tp * p.cp);
  if (job.runtime.framework == Framework::fsdp && job.runtime.fp8_param_gather &&
      !(job.training.precision == Precision::fp8 && job.training.recipe == LowPrecisionRecipe::tensorwise))
    return "FSDP's fp8 all-gather (torchao's enable_fsdp_float8_all_gather) needs Float8 training with tensorwise scaling";
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
  if (p.vpp <= 1 && !p.chunk_layout.empty()) return "a virtual-stage layout needs vpp > 1";
  if (p.vpp > 1) {
    if (p.pp < 2) return "interleaved pipelining (vpp > 1) needs pp >= 2";
    // Layers that do not divide into pp x vpp chunks run with Megatron's layout that counts the
    // embedding and loss as layers (standard_stage_layers); an even split may coincide with it.
    if (p.stage_layers.empty() && m.num_layers % (p.pp * p.vpp) != 0 &&
        standard_stage_layers(m.num_layers, p.pp, p.vpp, m.mtp_layers) != resolve_stage_layers(p, m.num_layers))
      return fmt::format("{} layers are not divisible by pp*vpp = {}; give uneven --stage-layers to split them", m.num_layers,
                         p.pp * p.vpp);
    if (!p.chunk_layout.empty()) {
      if (p.chunk_layout.size() != static_cast<std::size_t>(p.pp) * static_cast<std::size_t>(p.vpp))
        return fmt::format("{} virtual-stage layer counts given for pp*vpp = {}", p.chunk_layout.size(), p.pp * p.vpp);
      if (std::any_of(p.chunk_layout.begin(), p.chunk_layout.end(), [](int l) { return l < 0; }))
        return "a virtual stage holds a negative number of layers";
      const std::vector<int> stages = resolve_stage_layers(p, m.num_layers);
      for (int s = 0; s < p.pp; ++s) {
        int held = 0;
        for (int c = 0; c < p.vpp; ++c) held += p.chunk_layout[static_cast<std::size_t>(c * p.pp + s)];
        if (held != stages[static_cast<std::size_t>(s)])
          return fmt::format("the virtual stages of pipeline stage {} hold {} layers, the stage {}", s, held, stages[static_cast<std::size_t>(s)]);
      }
    }
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
    if (!p.distributed_optimizer && p.zero_stage < 2)
      return "distributed optimizer instances need the distributed optimizer or Megatron-FSDP's sharding (hybrid sharding, HSDP)";
    // Hybrid sharding: Megatron-FSDP's replica groups, or FSDP2's (torchtitan's
    // data_parallel_replicate_degree) over its full sharding; DeepSpeed's hpZ/MiCS are not modelled.
    if (p.zero_stage >= 2 && job.runtime.framework == Framework::deepspeed)
      return "hybrid sharding (several sharded copies) is modelled for Megatron-FSDP and PyTorch FSDP, not DeepSpeed";
    if (job.runtime.framework == Framework::fsdp && p.zero_stage != 3)
      return "PyTorch FSDP's hybrid sharding (HSDP) replicates its full sharding: --zero 3";
    if (job.runtime.framework == Framework::fsdp && p.outer_optimizer_sharding)
      return "--outer-dp-sharding-strategy optim is Megatron-FSDP's; PyTorch FSDP's HSDP replicas hold the same shards";
    if ((p.dp * p.cp) % p.optimizer_instances != 0)
      return fmt::format("{} distributed optimizer instances do not divide dp*cp = {}", p.optimizer_instances, p.dp * p.cp);
    if (m.moe && p.expert_data_parallel() % p.optimizer_instances != 0)
      return fmt::format("{} distributed optimizer instances do not divide the expert-data-parallel size {}", p.optimizer_instances,
                         p.expert_data_parallel());
  }
  if (p.outer_optimizer_sharding && !(p.zero_stage == 3 && p.optimizer_instances > 1))
    return "--outer-dp-sharding-strategy optim needs Megatron-FSDP's optim_grads_params sharding with several instances (HSDP)";
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
    if (m.add_linear_bias && p.etp > 1)
      return "biased experts (GPT-OSS) need etp = 1 (Megatron-Core TransformerConfig: \"Bias in Moe is only supported when ETP==1\")";
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
    // Megatron-Core TransformerConfig's checks of --moe-shared-expert-overlap.
    if (job.runtime.moe_shared_expert_overlap && m.moe->shared_expert_ffn_hidden_size > 0) {
      if (job.runtime.moe_allgather_dispatch)
        return "overlapping the shared experts with the dispatcher needs the alltoall or flex dispatcher, not allgather "
               "(Megatron-Core TransformerConfig)";
      if (job.runtime.moe_a2a_overlap && p.ep > 1)
        return "overlapping the shared experts excludes overlapping the MoE all-to-all (Megatron-Core: disable "
               "moe_shared_expert_overlap when enabling overlap_moe_expert_parallel_comm)";
      if (p.recompute.granularity == RecomputeGranularity::selective && (p.recompute.modules & kRecomputeSharedExperts))
        return "recomputing the shared experts cannot work with their overlap (Megatron-Core TransformerConfig)";
    }
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
    // Only TEGroupedMLP recomputes its activation (moe/experts.py); SequentialMLP's plain MLPs
    // keep it, and Megatron starts without a word.
    if ((mods & kRecomputeMoeAct) && m.moe && !job.runtime.moe_grouped_gemm)
      return "recompute module moe_act acts in Megatron-Core's grouped-GEMM experts (TEGroupedMLP, --moe-grouped-gemm); its "
             "default SequentialMLP recomputes nothing, so the activation's input would stay in memory";
    if ((mods & kRecomputeSharedExperts) && m.moe && m.moe->shared_expert_ffn_hidden_size == 0)
      return "recompute module shared_experts needs shared experts";
    if ((mods & (kRecomputeMoeAct | kRecomputeLayernorm)) && job.training.precision == Precision::fp8 &&
        job.training.recipe == LowPrecisionRecipe::delayed)
      return "fp8 delayed scaling does not support moe_act and layernorm recompute (Megatron-Core TransformerConfig)";
    if ((mods & kRecomputeMoe) && job.runtime.moe_a2a_overlap && p.ep > 1)
      return "recomputing whole MoE blocks excludes overlapping the MoE all-to-all (Megatron-Core TransformerConfig)";
  }
  if (job.runtime.moe_paged_stash_host_factor != 0 && job.runtime.moe_paged_stash_factor == 0)
    return "a paged stash host pool needs the paged stash itself (moe_paged_stash)";
  if (job.runtime.moe_paged_stash_factor != 0) {
    // Megatron-Core TransformerConfig's checks of moe_paged_stash; the stash acts in the grouped
    // experts' fused path (TEGroupedMLP with Transformer Engine's op fuser), so grouped GEMMs.
    if (!m.moe) return "the MoE paged stash needs a mixture-of-experts model";
    if (!(job.runtime.moe_rank_capacity_factor > 0))
      return "the MoE paged stash needs HybridEP's per-rank budget (moe_expert_rank_capacity_factor; Megatron-Core refuses it without)";
    if (p.cpu_offload_layers != 0) return "the MoE paged stash cannot be enabled with CPU offloading (Megatron-Core)";
    if (p.offload.modules & kOffloadExpertModules)
      return "with the MoE paged stash, offload modules must not include expert_fc1, moe_act or fused_group_mlp (the stash "
             "covers those activations; Megatron-Core refuses them)";
    if (!job.runtime.moe_grouped_gemm)
      return "the MoE paged stash acts in the grouped experts' fused path (TEGroupedMLP with Transformer Engine's op fuser, "
             "--moe-grouped-gemm); Megatron's SequentialMLP stashes nothing";
  }
  if (p.cpu_offload_layers != 0) {
    // Megatron-Core TransformerConfig's checks of layer-level CPU offloading.
    if (job.runtime.framework != Framework::megatron) return "layer-level CPU offloading is Megatron-Core's (--framework megatron)";
    if (p.cpu_offload_layers < 0 || p.cpu_offload_layers >= m.num_layers)
      return fmt::format("CPU offloading can be done only for fewer layers than the model's {} (found {})", m.num_layers, p.cpu_offload_layers);
    if (p.pp > 1) return "Megatron-Core has no support for pipeline parallelism with CPU offloading";
    if (p.recompute.granularity != RecomputeGranularity::none) return "CPU offloading does not work when activation recomputation is enabled (Megatron-Core)";
    if (p.offload.modules != 0) return "fine-grained activation offloading cannot be enabled with CPU offloading (Megatron-Core)";
    if (job.runtime.cuda_graph_modules != 0 && !(job.runtime.cuda_graph_modules & kCudaGraphFullIteration))
      return "CUDA graphs are not supported with CPU offloading, but for a full-iteration graph (Megatron-Core)";
  }
  if (const unsigned off = p.offload.modules; off != 0) {
    // Megatron-Core's fine-grained activation offloading and TransformerConfig's checks of it.
    if (job.runtime.framework != Framework::megatron) return "fine-grained activation offloading is Megatron-Core's (--framework megatron)";
    if ((off & kOffloadAttnProj) && !(off & kOffloadCoreAttn))
      return "offload module attn_proj needs core_attn too (its input is the attention core's output, which core_attn's backward needs)";
    if ((off & kOffloadFusedGroupMlp) && (off & (kOffloadExpertFc1 | kOffloadMoeAct)))
      return "offload module fused_group_mlp offloads the whole fused grouped MLP and cannot be combined with expert_fc1 or moe_act";
    if ((off & kOffloadExpertModules) && !m.moe)
      return "offload modules expert_fc1, moe_act and fused_group_mlp need a mixture-of-experts model";
    // Only TEGroupedMLP offloads inside the experts (moe/experts.py); without --moe-grouped-gemm
    // Megatron builds SequentialMLP, plain MLPs that offload nothing, and starts without a word.
    if ((off & kOffloadExpertModules) && !job.runtime.moe_grouped_gemm)
      return "offload modules expert_fc1, moe_act and fused_group_mlp act in Megatron-Core's grouped-GEMM experts (TEGroupedMLP, "
             "--moe-grouped-gemm); its default SequentialMLP offloads nothing, so those tensors would stay on the GPU";
    // The fused grouped MLP is Transformer Engine's op fuser, which TEGroupedMLP asserts it can build
    // (_is_fused_impl_supported): no expert tensor parallelism, a gated SiLU or quick-GeLU, or the
    // non-gated squared ReLU with Megatron's fused weighted kernel.
    if ((off & kOffloadFusedGroupMlp) && p.etp > 1)
      return fmt::format("offload module fused_group_mlp runs the experts with Transformer Engine's op fuser, which has no expert "
                         "tensor parallelism (TEGroupedMLP asserts etp 1, found {})", p.etp);
    if ((off & kOffloadFusedGroupMlp) && m.activation != Activation::swiglu && m.activation != Activation::quick_geglu &&
        m.activation != Activation::squared_relu)
      return "offload module fused_group_mlp runs the experts with Transformer Engine's op fuser, which fuses only SwiGLU, quick "
             "GeGLU and squared ReLU experts (TEGroupedMLP asserts it)";
    if ((off & kOffloadExpertModules) && p.recompute.granularity == RecomputeGranularity::selective &&
        (p.recompute.modules & kRecomputeMoe))
      return "offloading inside the MoE block (expert_fc1, moe_act, fused_group_mlp) while recomputing the whole block (recompute "
             "module moe) is refused by Megatron-Core";
    if (p.offload.min_tensor_elements < 0) return "min offloaded tensor size must be non-negative";
  }
  if (m.mtp_layers > 0 && job.runtime.framework == Framework::megatron && m.position_embedding != PositionEmbedding::rope &&
      m.position_embedding != PositionEmbedding::none)
    return "multi-token prediction needs rotary or no position embeddings in Megatron-LM (arguments.py MTP validation)";
  // YaRN outside MLA is its own position embedding type in Megatron-LM (--position-embedding-type
  // yarn, GPT-OSS), which the same validation refuses; MLA runs YaRN inside its rotary embedding.
  if (m.mtp_layers > 0 && job.runtime.framework == Framework::megatron && m.position_embedding == PositionEmbedding::rope &&
      m.rope_scaling == "yarn" && !m.mla)
    return "multi-token prediction with YaRN positions outside multi-latent attention: Megatron-LM runs MTP with rope or no "
           "position embeddings only, and YaRN there is --position-embedding-type yarn (arguments.py MTP validation)";
  if (job.training.precision == Precision::fp8) {
    if (std::string why = job.cluster.gpu.recipe_unsupported(job.training.recipe); !why.empty()) return why;
  }
  if (job.cluster.gpu.peak_flops(job.training.precision) <= 0)
    return fmt::format("{} lists no {} throughput", job.cluster.gpu.name, to_string(job.training.precision));
  if (p.recompute.granularity == RecomputeGranularity::full && p.recompute.num_layers == 0)
    return "full recompute with 0 layers: use recompute none";
  if (std::string why = cuda_graph_problem(job); !why.empty()) return why;
  return "";
}

}  // namespace strata
