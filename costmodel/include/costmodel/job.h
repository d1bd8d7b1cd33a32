#pragma once
// The execution description: what is trained (TrainingSpec), how it is parallelized (ParallelPlan)
// and which runtime features are on (RuntimeOptions). A Job bundles them with the model and cluster.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "costmodel/calibration.h"
#include "costmodel/cluster_spec.h"
#include "costmodel/model_spec.h"
#include "costmodel/optimizer_spec.h"

namespace strata {

enum class RecomputeGranularity { none, selective, full };

// Megatron-Core's selective recompute modules (--recompute-modules; TransformerConfig
// recompute_modules): the parts of a layer recomputed in backward instead of stored.
enum RecomputeModule : unsigned {
  kRecomputeCoreAttn = 1u << 0,      // the attention core (the default)
  kRecomputeMoeAct = 1u << 1,        // the routed experts' activation function
  kRecomputeLayernorm = 1u << 2,     // the norms not fused into a linear (MLA's input norm, MoE's pre-MLP norm)
  kRecomputeMlaUpProj = 1u << 3,     // MLA's up projections and rope
  kRecomputeMlp = 1u << 4,           // a dense layer's whole MLP
  kRecomputeMoe = 1u << 5,           // an MoE layer's whole MLP block, dispatch included
  kRecomputeSharedExperts = 1u << 6  // the shared experts
};

struct RecomputeSpec {
  RecomputeGranularity granularity = RecomputeGranularity::none;
  // Full recompute only: how many layers of each pipeline stage are recomputed (Megatron's
  // --recompute-method block --recompute-num-layers). -1 means every layer (method uniform).
  int num_layers = -1;
  // Selective recompute only: RecomputeModule bits.
  unsigned modules = kRecomputeCoreAttn;
  bool operator==(const RecomputeSpec&) const = default;
};

// Megatron's module names ("core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe",
// "shared_experts") separated by spaces or commas, as bits; nullopt for an unknown name or none.
std::optional<unsigned> recompute_modules_from_string(const std::string& names);
// The bits' names in Megatron's spelling, in the order above.
std::vector<std::string> recompute_module_names(unsigned modules);
// The selective-recompute modules that apply to a model: the attention core and the norms always,
// MLA's up-projections with MLA, a dense layer's MLP where there is one, the experts' activation
// and the whole MoE block with MoE layers, the shared experts where there are some.
unsigned applicable_recompute_modules(const ModelSpec& m);

// Megatron-Core's fine-grained activation offloading (--fine-grained-activation-offloading
// --offload-modules; TransformerConfig.offload_modules; pipeline_parallel/
// fine_grained_activation_offload.py): what these modules save for their backward is copied to
// pinned host memory on a side stream during forward and copied back before their backward.
enum OffloadModule : unsigned {
  kOffloadAttnNorm = 1u << 0,       // a standalone input norm (MLA's; Transformer Engine fuses the others into the QKV linear)
  kOffloadQkvLinear = 1u << 1,      // the QKV projection (MLA: the down projections)
  kOffloadCoreAttn = 1u << 2,       // the attention core: Q, K and V
  kOffloadAttnProj = 1u << 3,       // the output projection's input (Megatron asks for core_attn with it)
  kOffloadMlpNorm = 1u << 4,        // a standalone pre-MLP norm (an MoE layer's, feeding the router)
  kOffloadExpertFc1 = 1u << 5,      // the routed experts' fc1 input
  kOffloadMoeAct = 1u << 6,         // the routed experts' activation input
  kOffloadFusedGroupMlp = 1u << 7,  // the routed experts' whole fused grouped MLP (Transformer Engine's op fuser)
};
// The modules inside the routed experts, which only grouped-GEMM experts (TEGroupedMLP) offload.
inline constexpr unsigned kOffloadExpertModules = kOffloadExpertFc1 | kOffloadMoeAct | kOffloadFusedGroupMlp;

struct ActivationOffloadSpec {
  unsigned modules = 0;  // OffloadModule bits; 0: no offloading
  // Tensors of fewer elements stay on the GPU (Megatron --min-offloaded-tensor-size, default 1M).
  std::int64_t min_tensor_elements = 1 << 20;
  bool operator==(const ActivationOffloadSpec&) const = default;
};
// Megatron's names ("attn_norm", "qkv_linear", "core_attn", "attn_proj", "mlp_norm", "expert_fc1",
// "moe_act", "fused_group_mlp") separated by spaces or commas, as bits; nullopt for an unknown name
// or none.
std::optional<unsigned> offload_modules_from_string(const std::string& names);
std::vector<std::string> offload_module_names(unsigned modules);

// Parts of a decoder layer Megatron-Core replays as CUDA graphs (--cuda-graph-impl local or
// transformer_engine with --cuda-graph-modules; TransformerConfig.cuda_graph_modules): the host
// launches each captured part with one graph replay instead of op by op.
enum CudaGraphModule : unsigned {
  kCudaGraphAttn = 1u << 0,           // TransformerLayer._forward_attention()
  kCudaGraphMlp = 1u << 1,            // a dense layer's MLP
  kCudaGraphMoe = 1u << 2,            // an MoE layer's whole MLP block (drop-and-pad MoE only)
  kCudaGraphMoeRouter = 1u << 3,      // an MoE layer's MLP block up to the router
  kCudaGraphMoePreprocess = 1u << 4,  // MoELayer.preprocess(): the dispatcher's preprocessing and permutation
  kCudaGraphMamba = 1u << 6,          // a hybrid model's Mamba layer (MambaLayer)
  // No modules listed: the whole layer (Megatron's default, and what "full" meant).
  kCudaGraphWholeLayer = kCudaGraphAttn | kCudaGraphMlp | kCudaGraphMoe | kCudaGraphMoeRouter | kCudaGraphMoePreprocess | kCudaGraphMamba,
  // --cuda-graph-impl full_iteration: the whole forward-backward of a step in one graph
  // (FullCudaGraphWrapper), every layer with it; it captures only what never waits on the host.
  kCudaGraphFullIteration = 1u << 5,
};
// Megatron's module names ("attn", "mlp", "moe", "moe_router", "moe_preprocess", "mamba"; "full"
// for the whole layer, "full_iteration" for the whole step) separated by spaces or commas, as bits;
// an empty list is the whole layer. nullopt for an unknown name.
std::optional<unsigned> cuda_graph_modules_from_string(const std::string& names);
// The bits' names in Megatron's spelling.
std::vector<std::string> cuda_graph_module_names(unsigned modules);

struct ParallelPlan {
  int tp = 1;
  int pp = 1;
  int dp = 1;
  int cp = 1;
  int ep = 1;
  // Expert tensor parallelism: each expert's FFN split over etp ranks (Megatron
  // --expert-tensor-parallel-size). Experts live on an EP x ETP grid inside the tp*dp*cp ranks of
  // a stage; the rest of it, world/(pp*ep*etp), is the expert-data-parallel group
  // (megatron/core/parallel_state.py, the expert RankGenerator "tp-ep-dp-pp" with tp=etp).
  int etp = 1;
  bool sequence_parallel = false;
  int vpp = 1;  // virtual pipeline chunks per rank (interleaved 1F1B when > 1)
  // Interleaved 1F1B: micro-batches each model chunk runs in a row before the next chunk's
  // (Megatron-Core --microbatch-group-size-per-virtual-pipeline-stage, default pp). 0: chosen by
  // interleaved_microbatch_group below.
  int microbatch_group = 0;
  int micro_batch_size = 1;
  RecomputeSpec recompute;
  ActivationOffloadSpec offload;
  // Megatron-Core's layer-level CPU offloading (--cpu-offloading-num-layers; Transformer Engine's
  // get_cpu_offload_context): every activation the first this-many decoder layers save goes to
  // host memory in forward and comes back in backward. Megatron allows it with pp 1 and no
  // recompute only. 0: none.
  int cpu_offload_layers = 0;
  int zero_stage = 0;                  // DeepSpeed/FSDP style sharding of optimizer (1), grads (2), params (3)
  bool distributed_optimizer = false;  // Megatron's --use-distributed-optimizer (ZeRO-1 with fp32 grads)
  // Copies of the distributed optimizer (Megatron --num-distributed-optimizer-instances): each
  // shards the state over dp*cp/N consecutive data-parallel ranks (the expert state over edp/N),
  // reduce-scatters the gradients inside its group and all-reduces its shard across the N copies.
  int optimizer_instances = 1;
  // Megatron-FSDP with several instances is hybrid sharding (HSDP): ZeRO-2/3 inside each group of
  // dp*cp/N ranks, the N groups replicas of each other; with --outer-dp-sharding-strategy optim
  // the replicas also split each shard's optimizer state N ways (ZeRO-1 across them).
  bool outer_optimizer_sharding = false;
  // Decoder layers of each pipeline stage (pp entries); empty means an even split.
  std::vector<int> stage_layers;
  // Decoder layers of every virtual stage, chunk-major (all stages' chunk 0, then chunk 1, ...;
  // pp*vpp entries), where an explicit --pipeline-model-parallel-layout splits stages over their
  // chunks otherwise than chunk_layers' rule (Megatron-Bridge's GB200 DeepSeek-V3 layout
  // "Et*4|(tttt|)*14tmL" at pp 4: the last stage's chunks hold 4, 4, 4, 1). Empty: the rule.
  std::vector<int> chunk_layout;

  int world_size() const { return tp * pp * dp * cp; }
  // Ranks that hold the same experts and reduce their gradients: world/(pp*ep*etp).
  int expert_data_parallel() const { return ep * etp > 0 ? tp * dp * cp / (ep * etp) : 1; }
  // Ranks one copy of the distributed optimizer shards its state over (all dp*cp ranks with one copy).
  int optimizer_shard_ranks() const { return std::max(1, dp * cp / std::max(1, optimizer_instances)); }
  // Copies of the sharded state across the data-parallel ranks: the distributed optimizer's
  // instances, or Megatron-FSDP's replica groups (HSDP); 1 otherwise.
  int sharded_copies() const { return distributed_optimizer || zero_stage >= 2 ? std::max(1, optimizer_instances) : 1; }
  int expert_optimizer_shard_ranks() const { return std::max(1, expert_data_parallel() / std::max(1, optimizer_instances)); }
  bool operator==(const ParallelPlan&) const = default;
};

struct TrainingSpec {
  std::int64_t global_batch_size = 0;  // sequences per iteration
  std::int64_t seq_length = 0;
  Precision precision = Precision::bf16;
  OptimizerSpec optimizer;
  // With Precision::fp8: how the GEMMs are quantized (Transformer Engine recipe). Ignored otherwise.
  LowPrecisionRecipe recipe = LowPrecisionRecipe::delayed;
  bool operator==(const TrainingSpec&) const = default;
};

// Which training framework runs the plan: it decides gradient/optimizer state layouts (memory) and
// which communication overlaps by default.
enum class Framework {
  megatron,   // Megatron-LM/Megatron-Core: fp32 main_grad buffers, distributed optimizer
  deepspeed,  // Megatron-DeepSpeed / DeepSpeed ZeRO: fp16/bf16 grads, fp32 grad partition, buckets
  fsdp,       // PyTorch FSDP (ZeRO-3 style FULL_SHARD): sharded fp32 params and states
};
const char* to_string(Framework f);

// How context-parallel ranks exchange keys and values (Megatron --cp-comm-type).
enum class CpCommType {
  p2p,        // ring of K/V blocks overlapped with attention (default)
  a2a,        // all-to-all of Q, K, V and O around attention (DeepSpeed-Ulysses style)
  allgather,  // all-gather of K, V before attention, reduce-scatter of dK, dV after
  a2a_p2p,    // "a2a+p2p": all-to-all in inner groups (NVLink), the p2p ring between them
};
const char* to_string(CpCommType t);
std::optional<CpCommType> cp_comm_type_from_string(const std::string& s);

// Which fused attention kernel runs (with flash_attention). Their rates differ by up to 1.8x on
// Hopper (configs/measurements, h200-2026-11-27): cuDNN's fused flash attention uses Hopper's
// asynchronous wgmma pipeline, FlashAttention-2 does not.
enum class AttentionKernel {
  automatic,  // what the stack picks: cuDNN for Megatron (Transformer Engine) on Hopper and later, else FA2
  flash2,     // FlashAttention-2 (flash-attn 2, PyTorch SDPA's flash backend; Megatron --attention-backend flash)
  cudnn,      // cuDNN fused attention (Transformer Engine FusedAttention; Megatron --attention-backend fused)
};
const char* to_string(AttentionKernel k);  // "auto", "flash", "cudnn"
std::optional<AttentionKernel> attention_kernel_from_string(const std::string& s);

// How the loss is computed over the vocabulary-parallel logits (the tokens x vocab/tp matrix of the
// output layer, the largest tensor of a step for large vocabularies). Each reads and writes the
// logits a different number of times (layer_ops output_layer_ops).
enum class CrossEntropyKernel {
  automatic,    // jit_fused for Megatron (a launch strata writes passes --cross-entropy-loss-fusion), eager otherwise
  eager,        // Megatron's vocab_parallel_cross_entropy: an fp32 copy, then max, subtract, exp, sum, divide in place
  jit_fused,    // Megatron --cross-entropy-loss-fusion (impl native): the same steps in three compiled kernels
  single_pass,  // one fused kernel that also writes the gradient (Transformer Engine's Triton cross entropy, flash-attn's)
};
const char* to_string(CrossEntropyKernel k);  // "auto", "eager", "jit-fused", "single-pass"
std::optional<CrossEntropyKernel> cross_entropy_kernel_from_string(const std::string& s);

// Megatron-Core's default paged stash pool: 1.10 x the mean tokens (TransformerConfig
// moe_paged_stash_buffer_size_factor_cuda).
inline constexpr double kMegatronPagedStashFactor = 1.10;

// Features of the training framework that change the physics, with Megatron-LM (2024+) defaults.
struct RuntimeOptions {
  Framework framework = Framework::megatron;
  bool flash_attention = true;       // fused attention: no s^2 activations, causal FLOP skipping
  AttentionKernel attention_kernel = AttentionKernel::automatic;  // which fused kernel, with flash_attention
  CrossEntropyKernel cross_entropy = CrossEntropyKernel::automatic;  // the loss's kernels (resolved_cross_entropy)
  bool overlap_grad_reduce = true;   // DP grad reduction overlapped with backward
  bool overlap_param_gather = true;  // distributed optimizer / ZeRO-3 param all-gather overlapped
  bool tp_comm_overlap = false;      // Megatron --tp-comm-overlap (userbuffers)
  // fp8 runs: the model parameters themselves are fp8 tensors (Megatron --fp8-param-gather, TE
  // Float8Tensor parameters): no bf16 weight beside the fp8 copy, and the distributed optimizer's
  // parameter all-gather moves 1 byte per parameter.
  bool fp8_param_gather = false;
  // fp8 runs: the attention core runs in fp8 too (Transformer Engine's fp8_dpa, Megatron-Core
  // TransformerConfig.fp8_dot_product_attention, Megatron-Bridge mixed_precision's knob of that
  // name): cuDNN's fp8 fused attention quantizes Q, K, V (and backward O and dO) and runs both
  // products on the fp8 tensor cores; the softmax's exponentials stay at the special-function rate.
  bool fp8_attention = false;
  // Gradients accumulated and reduced in the model's 16-bit dtype rather than fp32 (Megatron
  // --grad-reduce-in-bf16 for bf16 models; for fp16 models Megatron's default, unless
  // --accumulate-allreduce-grads-in-fp32; DistributedDataParallelConfig.grad_reduce_in_fp32 =
  // False): a 2-byte main_grad buffer.
  bool grad_reduce_in_bf16 = false;
  // CUDA loads kernel modules lazily, on first use (CUDA_MODULE_LOADING=LAZY: CUDA 11.7+, set by
  // PyTorch since 1.13 and CUDA's default since 12.2). Stacks of before late 2022 loaded every
  // kernel of every library into the context at start-up, a larger CUDA context (memory_model).
  bool lazy_module_loading = true;
  CpCommType cp_comm_type = CpCommType::p2p;
  // Decoder layers at the start and at the end of the model kept in bf16 in an fp8/fp4 run
  // (Megatron --first-last-layers-bf16 --num-layers-at-start-in-bf16 N --num-layers-at-end-in-bf16
  // M; global layer indices, fp8_utils.is_first_last_bf16_layer): their linears run at the bf16
  // rate, without casts, quantized weight copies or quantized saved inputs.
  int bf16_first_layers = 0;
  int bf16_last_layers = 0;
  // With cp_comm_type a2a_p2p: CP ranks of each inner all-to-all group, the first of Megatron's
  // --hierarchical-context-parallel-sizes (the second is cp / this). 0: the CP ranks within one
  // NVLink domain (cp_a2a_group_size).
  int cp_a2a_size = 0;
  // Backward TP collectives of the column-parallel layers (QKV, fc1) run asynchronously behind
  // their weight-gradient GEMMs (Megatron-LM's async tensor-parallel all-reduce, 2022+, and
  // Megatron-DeepSpeed since its 2023 rebase; with SP the reduce-scatter overlaps the same GEMM).
  bool async_tp_allreduce = true;
  // Weight gradients accumulated inside the wgrad GEMM (Megatron --gradient-accumulation-fusion,
  // default since 2022) rather than by a separate add over the gradient buffer per micro-batch.
  bool fused_grad_accumulation = true;
  // Megatron's --make-vocab-size-divisible-by: the vocabulary is padded to a multiple of this times
  // tp (padded_vocab_size). 1 turns padding off. FSDP stacks never pad.
  int vocab_divisor = kDefaultVocabDivisor;
  static constexpr int kDefaultVocabDivisor = 128;
  static constexpr int kMaxVocabDivisor = 1 << 16;
  // MoE routing. The busiest expert-parallel rank gets moe_load_imbalance times the mean number of
  // routed tokens, and the step waits for it. 1.0 is perfectly balanced routing, what the published
  // Megatron-Bridge MoE benchmarks force (moe_router_force_load_balancing) and what `validate`
  // uses for records that say so. The default 1.2 for real (auxiliary-loss balanced) routing is a
  // round guess, not a fit: no measured per-rank token counts are in the validation data.
  double moe_load_imbalance = kDefaultMoeLoadImbalance;
  static constexpr double kDefaultMoeLoadImbalance = 1.2;
  // Expert capacity factor (Megatron --moe-expert-capacity-factor): tokens beyond capacity *
  // mean are dropped, so no expert processes more than that. 0 = dropless (Megatron's default).
  double moe_capacity_factor = 0;
  // Token dropping pads every expert's input to exactly its capacity (Megatron
  // --moe-pad-expert-input-to-capacity, with a capacity factor): every size is known in advance, so
  // the dispatcher never brings token counts to the host (Calibration::host does not apply).
  // Without padding, dropped or not, it synchronises the host in every MoE layer forward.
  bool moe_pad_to_capacity = false;
  // A static per-rank token budget for the flex dispatcher (Megatron --moe-expert-rank-capacity-factor,
  // HybridEP or NCCL-EP): its receive buffer holds tokens x top-k x this factor, sized in advance, so
  // the dispatcher never brings token counts to the host (_HybridEPManager.setup_metadata, Megatron-Core
  // token_dispatcher.py); tokens beyond the budget are dropped. 0: dynamic shapes, one host
  // synchronisation per MoE layer forward.
  double moe_rank_capacity_factor = 0;
  // Megatron-Core's paged stash (--moe-paged-stash, moe/paged_stash.py) under that budget: the
  // grouped MLP's saved tensors go into a preallocated page pool sized by this factor
  // (--moe-paged-stash-buffer-size-factor-cuda: positive x the mean tokens, negative x the actual
  // maximum) instead of keeping the budget's rows. 0: no paged stash.
  double moe_paged_stash_factor = 0;
  // Its pinned host pool for what overflows the GPU's (--moe-paged-stash-buffer-size-factor-cpu,
  // the same sign convention; 0, Megatron's default: none).
  double moe_paged_stash_host_factor = 0;
  // Overlap of the MoE all-to-all with computation (Megatron --overlap-moe-expert-parallel-comm,
  // DeepSeek-V3's dual-batch overlap): off unless set.
  bool moe_a2a_overlap = false;
  // The shared experts run on a side stream beside the dispatcher's all-to-alls (Megatron
  // --moe-shared-expert-overlap; Megatron-Bridge's DeepSeek, GLM, Kimi and Nemotron-H providers set
  // it): fc1 and the activation behind the dispatch, fc2 behind the combine (token_dispatcher.py).
  bool moe_shared_expert_overlap = false;
  // Token dispatch that sends a token once per destination node and forwards it over NVLink
  // there (DeepEP, HybridEP: Megatron --moe-flex-dispatcher-backend deepep|hybridep) instead of
  // once per chosen expert (the all-to-all dispatcher, strata's default).
  bool moe_token_dedup = false;
  // Megatron's allgather token dispatcher (--moe-token-dispatcher-type allgather, its default when
  // a launch names none): every rank all-gathers the tokens of the expert-parallel group, its local
  // experts take theirs, and the outputs are reduce-scattered back (MoEAllGatherTokenDispatcher).
  bool moe_allgather_dispatch = false;
  // The local experts run as one grouped GEMM (Megatron --moe-grouped-gemm: TEGroupedMLP) instead
  // of one after another (SequentialMLP, Megatron's default without the flag, and what a launch
  // strata writes runs: see planner/launch megatron_args.cpp).
  bool moe_grouped_gemm = false;
  // CUDA graphs: the CudaGraphModule bits captured in every layer; 0 without CUDA graphs. Only the
  // host time of the layers depends on it (moe_layer_host_time, dense_layer_host_time): a graph
  // replaces the host time of the ops it captures with one replay.
  unsigned cuda_graph_modules = 0;
  double memory_reserve_GiB = 0;     // set aside for CUDA context, NCCL, allocator slack (see memory model)
  // Host-side cost of one training step outside the GPU work the model times: Python dispatch of
  // the optimizer and gradient clipping, host synchronizations (fp16 overflow check, grad-norm and
  // loss .item() for logging), data-loader handoff and timers. A default, not derived: 0.1 s is a
  // round figure; published short-iteration runs leave 0.09-0.22 s per step unexplained by GPU
  // work (Megatron-LM 2020 README rows at ~1 s/iteration, MosaicML MPT one-micro-batch rows).
  // Measure it for a stack as the measured step time minus the GPU busy time a profile shows.
  double step_overhead_s = kDefaultStepOverheadS;
  static constexpr double kDefaultStepOverheadS = 0.1;
  static constexpr double kMaxStepOverheadS = 3600;
  bool operator==(const RuntimeOptions&) const = default;
};

// At most this many chunks (micro-batches x pp x vpp) are simulated; a plan with more is not
// predicted. A traced simulation keeps every forward and backward of the schedule in memory: at
// the limit about 0.6 s and 120 MB (2^22 took 2.4 s and 490 MB); the untraced sweep of every
// prediction keeps p clocks and takes a few ms there. Real schedules have thousands of chunks.
inline constexpr std::int64_t kMaxSimulatedChunks = std::int64_t{1} << 20;

struct Job {
  ModelSpec model;
  ClusterSpec cluster;
  TrainingSpec training;
  ParallelPlan plan;
  RuntimeOptions runtime;
  Calibration calibration;

  std::int64_t num_micro_batches() const {
    return training.global_batch_size / (static_cast<std::int64_t>(plan.dp) * plan.micro_batch_size);
  }
};

const char* to_string(RecomputeGranularity g);

// The kind of decoder layer `layer` in this job: the model's (MoE, sliding window), and whether it
// is one of the bf16 layers of a low-precision run (runtime.bf16_first_layers / _last_layers).
LayerKind layer_kind(const Job& job, int layer);
// Every decoder layer of the job of one kind: layer 0 stands for all.
bool uniform_layers(const Job& job);

// CP ranks that exchange Q, K, V by all-to-all before the rest pass K/V on a ring: 1 for p2p (and
// allgather, which does neither), cp for a2a, and for hierarchical CP (--cp-comm-type a2a+p2p)
// runtime.cp_a2a_size when set, else the largest divisor of cp whose ranks share one NVLink domain
// (a2a * tp GPUs) and split the heads and query groups evenly (heads / (tp * a2a)); 1 without CP.
int cp_a2a_group_size(const Job& job);

// Whether Megatron-Core's MoE dispatcher brings token counts to the host in every MoE layer forward
// (the all-to-all splits, the experts' sizes, a dropped output's size): always, except when every
// expert is padded to a fixed capacity (RuntimeOptions::moe_pad_to_capacity) or the flex dispatcher
// has a static per-rank budget (moe_rank_capacity_factor). Other frameworks: no.
bool moe_dispatcher_syncs_host(const RuntimeOptions& rt);

// The host's time to issue one MoE layer of this job (Megatron-Core's dispatchers), from the
// calibration's HostCoefficients: the measured line over the GPU's local experts (the fixed part
// alone with a grouped GEMM), or a measured forward time (host.moe_forward_s) with the backward in
// the line's proportion; with it, the part of the forward issued before the dispatcher's
// synchronisation, and the host time of the layer's attention block. `synchronises`: the
// dispatcher waits for its token counts in every layer forward (moe_dispatcher_syncs_host), so the
// host cannot run ahead there; without it the host runs ahead and binds only where it issues the
// layer slower than the GPU runs it. Zero for other frameworks and under a full-iteration CUDA
// graph, which replays the whole step.
struct MoeHostTime {
  double forward_s = 0, backward_s = 0;  // the MoE block
  double forward_presync_s = 0;          // the part of forward_s issued before the synchronisation
  double attention_forward_s = 0, attention_backward_s = 0;  // the rest of the decoder layer
  int experts_counted = 0;    // local experts the per-expert term counted (0 with a grouped GEMM)
  int biased_experts = 0;     // local experts whose eager bias path was counted (grouped GEMM, biased experts)
  bool measured_override = false;  // from host.moe_forward_s
  int graph_replays = 0;           // CUDA graphs replayed per layer forward in place of the captured parts' ops
  bool synchronises = false;       // the dispatcher waits on the host in every layer forward
  bool allgather_line = false;     // the allgather dispatcher's measured line (else the alltoall one's)
  // Host synchronisations at the experts' activation per layer forward: GPT-OSS's fused quick-GeGLU
  // (Megatron-Core fused_bias_geglu.py weighted_bias_quick_geglu_impl) builds its linear offset
  // with torch.tensor(..., device=cuda) on every call, a blocking host-to-device copy
  // (cudaStreamSynchronize), once per grouped GEMM or once per SequentialMLP expert. 0: none.
  int activation_syncs = 0;
  // Where it falls: the parts of forward_s issued after the dispatcher's synchronisation and before
  // the first expert, by the experts (per-expert line, or their eager bias path), and by the first
  // expert before its activation.
  double forward_before_experts_s = 0, experts_forward_s = 0, first_activation_s = 0;
  // Any host time to count: else the host never holds the GPU up.
  bool any() const { return forward_s > 0 || backward_s > 0 || attention_forward_s > 0 || attention_backward_s > 0; }
};
MoeHostTime moe_layer_host_time(const Job& job);

// The host's time to issue one dense decoder layer (attention block, then the MLP) in Megatron's
// model code, forward and backward, from the calibration's HostCoefficients: the attention block's
// measured host time (moe_attention_*_s: a whole Megatron-Core decoder layer's minus its MoE
// block's) plus one MLP's, which is what each SequentialMLP expert is (moe_*_per_expert_s: its
// fc1, activation and fc2). A CUDA graph of the attention block or of the MLP
// (cuda_graph_modules attn / mlp) replaces that part with one replay. Zero under a full-iteration
// graph, and for FSDP runs, whose model code (Hugging Face or llm-foundry modules under FSDP's
// hooks) was not measured. DeepSpeed runs are read as Megatron-DeepSpeed, Megatron's layer code.
struct DenseHostTime {
  double forward_s = 0, backward_s = 0;
  // Its parts, for a hybrid model's layers that hold one: the attention block, the MLP, and a
  // linear-time mixer, Mamba-2 or gated DeltaNet (not measured: taken as the attention block's, a
  // guess; a CUDA graph's replay under the "mamba" graph scope).
  double attention_forward_s = 0, attention_backward_s = 0, mlp_forward_s = 0, mlp_backward_s = 0;
  double mixer_forward_s = 0, mixer_backward_s = 0;
  int graph_replays = 0;  // CUDA graphs replayed per layer forward in place of the captured parts' ops
  bool any() const { return forward_s > 0 || backward_s > 0; }
};
DenseHostTime dense_layer_host_time(const Job& job);

// Whether a prediction of this job leaves out MoE host time that may bind: a synchronising
// dispatcher with no host time (the calibration's line and host.moe_forward_s all zero), or another
// framework's dispatcher, which strata does not model. Its throughput is then an upper bound.
bool moe_host_time_unmodelled(const Job& job);

// Whether the pipeline runs Megatron-Core's combined 1F1B: MoE all-to-all overlap
// (--overlap-moe-expert-parallel-comm, runtime.moe_a2a_overlap) with ep > 1, which schedules one
// more warm-up forward on every rank (PipelineInput::combined_1f1b).
bool combined_1f1b(const Job& job);

// Layers of each stage: plan.stage_layers if set, else an even split (earlier stages get the
// remainder, as Megatron does not; callers validate with check_plan).
std::vector<int> resolve_stage_layers(const ParallelPlan& plan, int num_layers);

// The layout Megatron-LM runs when `num_layers` does not divide into pp x vpp equal model chunks
// but does once the embedding and the loss are counted as a layer each
// (--account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-split; Llama 3.1
// 405B's 126 layers over pp 16 x vpp 4 = 64 chunks of 2): the first stage holds one decoder layer
// fewer, and the last one too when both are counted (only the loss when one suffices). Empty when
// the layers divide evenly, or when no such layout exists.
std::vector<int> accounted_stage_layers(int num_layers, int pp, int vpp);

// The layout a run whose layers do not divide into pp x vpp model chunks runs with: Megatron's
// accounted split above where it exists, else the balanced --pipeline-model-parallel-layout that
// counts the embedding, the loss and each of the `mtp_layers` multi-token-prediction layers as a
// layer (DeepSeek-V3's 61 layers over pp 8 x vpp 4: "Et|(tt|)*30mL"). Empty when the layers divide
// evenly, or when no layout gives every model chunk a layer (the caller reports it).
std::vector<int> standard_stage_layers(int num_layers, int pp, int vpp, int mtp_layers = 0);
// Megatron's uneven first and/or last pipeline stage (--decoder-first-pipeline-num-layers,
// --decoder-last-pipeline-num-layers; TransformerConfig num_layers_in_first/last_pipeline_stage):
// those stages hold the given layers, the others share the rest evenly. Empty when the rest does
// not divide over them, as Megatron refuses.
std::vector<int> first_last_stage_layers(int num_layers, int pp, std::optional<int> first, std::optional<int> last);

// The most model chunks a stage of pp stages can hold: one layer each, counting the embedding, the
// loss and each MTP layer as a layer as Megatron's layouts do (Qwen3-235B-A22B's 94 layers hold 12
// chunks of one on each of 8 stages with the embedding and loss counted, not 94 / 8 = 11; Llama 3.1
// 405B's 126 hold 8 on each of 16).
int max_virtual_stages(const ModelSpec& model, int pp);

// The micro-batch group the interleaved schedule runs with: plan.microbatch_group when set, else
// Megatron-Core's default pp when pp divides the micro-batches, else the smallest group its schedule
// accepts (microbatch_group_accepted, pipeline_sim.h), so that a step of micro-batches pp does not
// divide still interleaves; the smallest legal group holds the fewest micro-batches in flight
// (warmup (pp - rank - 1) * 2 + (vpp - 1) * group). 0 when no
// group is legal (fewer micro-batches than pp); `micro_batches` when vpp is 1.
std::int64_t interleaved_microbatch_group(const ParallelPlan& plan, std::int64_t micro_batches);
// Why Megatron-Core refuses `group` for pp stages and `micro_batches`; empty when it accepts it.
std::string microbatch_group_problem(std::int64_t group, int pp, std::int64_t micro_batches);

// Vocabulary rows the framework allocates and multiplies. Megatron-LM and Megatron-DeepSpeed pad
// the vocabulary to a multiple of runtime.vocab_divisor (--make-vocab-size-divisible-by, default
// 128) times tp, so every TP rank holds an equal, tensor-core-aligned slice (Megatron tokenizer
// `_vocab_size_with_padding`; GPT-2's 50257 becomes 51200 at tp=8, the V of Narayanan et al.
// 2021). FSDP stacks use the vocabulary as the model config gives it (MPT's config pads to 50368).
std::int64_t padded_vocab_size(const Job& job);

// The fused attention kernel a run uses (runtime.attention_kernel, `automatic` resolved): Megatron-
// Core runs Transformer Engine's attention, which on Hopper and later prefers cuDNN's fused
// attention over FlashAttention "for performance reasons" (transformer_engine/pytorch/attention/
// dot_product_attention/utils.py, get_attention_backend); on Ampere and older it prefers
// FlashAttention. The FSDP and DeepSpeed stacks of the published runs call flash-attn (FA2).
AttentionKernel resolved_attention_kernel(const RuntimeOptions& rt, const GpuSpec& gpu);
// The cross entropy a job runs: automatic resolves to Megatron's fused loss for Megatron (what a
// launch strata writes asks for) and to the eager fp32 loss for the DeepSpeed and FSDP stacks.
CrossEntropyKernel resolved_cross_entropy(const RuntimeOptions& rt);

// The factor by which the busiest EP rank's routed tokens exceed the mean: moe_load_imbalance,
// capped by the capacity factor when tokens are dropped (never below 1).
double effective_moe_imbalance(const RuntimeOptions& rt);

// Global decoder-layer indices (0-based) that pipeline stage `stage` holds, over its model chunks
// (virtual stage chunk*pp + stage holds the next layers in Megatron's interleaved order).
std::vector<int> stage_layer_ids(const ParallelPlan& plan, const ModelSpec& model, int stage);

// Layers of model chunk `chunk` (0..vpp-1) of a stage holding `stage_layers` layers under
// interleaved 1F1B, the model training `mtp_layers` multi-token-prediction layers. The stage's
// layers split as evenly as possible over its chunks; remainder layers go first to the chunks that
// hold neither the embedding (stage 0, chunk 0) nor the output layer (last stage, last chunk), since
// those already carry extra work (the Llama 3 layout). Counting the embedding, the loss and each MTP
// layer as a layer, as Megatron's layouts do, no chunk then carries two or more layers' worth above
// another: the last chunk of an MTP model gives up decoder layers (DeepSeek-V3's "Et|(tt|)*30mL").
// A plan's explicit chunk_layout overrides the rule.
int chunk_layers(const ParallelPlan& plan, int stage, int stage_layers, int chunk, int mtp_layers);
// Decoder layers of every virtual stage of the plan in Megatron's order (chunk-major: all stages'
// chunk 0, then chunk 1, ...; pp*vpp entries), each stage split once by the rule above.
std::vector<int> virtual_stage_layers(const ParallelPlan& plan, const ModelSpec& model);
// The fewest decoder layers pipeline stage `stage` may hold: one per model chunk, except that the
// first stage's first chunk may hold only the embedding and the last stage's last chunk only the
// loss (Megatron's layouts "E|t|..." and "...|t|L"; chunk_layers leaves those chunks empty first).
int min_stage_layers(int pp, int vpp, int stage);
// Full recompute of `plan.recompute.num_layers` layers per stage (strata's count) as Megatron's
// --recompute-method block --recompute-num-layers k, which counts per model chunk: k = n / vpp,
// when vpp divides n and every chunk of every stage holds at least k layers; nullopt otherwise
// (that per-stage count is no Megatron setting).
std::optional<int> recompute_layers_per_chunk(const ParallelPlan& plan, const ModelSpec& model);

}  // namespace strata
