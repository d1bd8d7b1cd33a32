#pragma once
// Per-GPU memory of one pipeline stage: weights, gradients, optimizer states (mixed-precision Adam,
// sharded by ZeRO / the distributed optimizer / FSDP), activations (Korthikanti et al. 2022,
// "Reducing Activation Recomputation in Large Transformer Models", §4), logits, buffers and
// allocator fragmentation.
#include "costmodel/job.h"
#include "costmodel/prediction.h"

namespace strata {

// Per-GPU parameters split by how they are sharded: `dense` over TP (and their gradients over the
// dp*cp data-parallel group), `expert` (routed experts) over EP x ETP (and their gradients over the
// expert-data-parallel group, ParallelPlan::expert_data_parallel()).
struct ParamSplit {
  double dense = 0;
  double expert = 0;
  double total() const { return dense + expert; }
};
// Parameters held by one GPU of `stage` (TP/EP/ETP-sharded, before any ZeRO sharding).
double stage_params_per_gpu(const Job& job, int stage, int layers);
ParamSplit stage_param_split(const Job& job, int stage, int layers);
// The part of them in the stage's `layers` decoder layers (no embedding or output layer).
ParamSplit decoder_param_split(const Job& job, int stage, int layers);
// The multi-token-prediction modules' parameters per GPU: on the last stage only (ModelSpec::mtp_layers).
ParamSplit mtp_param_split(const Job& job, int stage);
// `layers` mean decoder layers of the model (dense and MoE layers averaged).
double decoder_params_per_gpu(const Job& job, int layers);
// Whether the job trains in fp8 through Transformer Engine (Megatron, Megatron-DeepSpeed), whose
// fp8 weight caches and fp8-saved GEMM inputs change the memory.
bool te_fp8(const Job& job);
// Whether FSDP runs under a pipeline schedule (pp > 1): PyTorch's pipelining with FSDP2, as
// torchtitan runs it, keeps each stage's parameters gathered and its gradients unsharded from the
// first forward to the last backward of a step (predictor.cpp says where each rule comes from).
bool fsdp_keeps_stage_gathered(const Job& job);
// Bytes per gradient element FSDP accumulates unsharded and reduce-scatters in that mode: fp32,
// torchtitan's default reduce dtype (mixed_precision_reduce "float32"; FSDP2 upcasts an
// accumulated unsharded gradient to the reduce dtype, FSDPParam.to_accumulated_grad_if_needed).
inline constexpr double kFsdpReduceBytes = 4;
// Whether FSDP gathers its Float8 linears' weights in fp8 (torchao's enable_fsdp_float8_all_gather,
// the job's fp8_param_gather on an FSDP stack): each weight is cast to fp8 on its shard and gathered
// at 1 byte, and the gathered copy is that fp8 weight (torchao supports it with tensorwise scaling).
bool fsdp_float8_all_gather(const Job& job);
// Bytes a sharded stack gathers of the `params` parameters of `stage` (its `layers` decoder layers):
// 16 bits each (32 for fp32 models), the decoder layers' at 1 byte under fsdp_float8_all_gather.
double fsdp_gathered_bytes(const Job& job, int stage, int layers, double params);
// Bytes per element of a GEMM input quantized by a recipe, scales included (a saved activation).
double quantized_input_bytes(LowPrecisionRecipe r);
// Bytes per parameter of the quantized weight copies Transformer Engine keeps (both directions).
double quantized_weight_cache_bytes(LowPrecisionRecipe r);

// NCCL communicators a GPU of `stage` uses (each holds its own channel buffers): TP, DP, CP, EP,
// pipeline neighbours, the tied-embedding group, the model-parallel group, the world group.
int nccl_communicators(const Job& job, int stage);

// Stored activation bytes of one decoder layer for one micro-batch, per GPU.
//  no recompute:   Korthikanti eq. (1)-(3) generalized per tensor to GQA, SwiGLU and no-dropout
//                  models: sbh(34 + 5as/h) for MHA/GELU/dropout, /t for TP-sharded tensors,
//                  /t for all of it with sequence parallelism, no 5as/h term with flash attention;
//  selective:      the attention core's s^2 tensors are recomputed (§5): the 5as/h term drops;
//  full:           only the layer input, 2sbh (/t with SP).
// In fp8 (te_fp8) the inputs of the QKV, fc1 and fc2 linears are stored quantized
// (quantized_input_bytes: 1 byte in fp8, ~0.56 in NVFP4), and the output projection's input gets a
// quantized copy beside the bf16 attention output.
double layer_activation_bytes(const Job& job, RecomputeGranularity g);
// The same for one kind of layer (MoE or dense MLP, multi-latent attention): MoE layers store the
// router input, the permuted tokens of the local experts (top_k copies of each token, shared over
// EP x ETP as the FLOPs are) and the shared experts' tensors.
double layer_activation_bytes(const Job& job, RecomputeGranularity g, LayerKind kind);
// What fine-grained activation offloading (the plan's offload modules) moves to the host of one
// layer of `kind` and one micro-batch: the tensors the offloaded modules save for their backward
// that are at least the plan's minimum size. layer_activation_bytes leaves them out already.
double layer_offloaded_bytes(const Job& job, RecomputeGranularity g, LayerKind kind);

// Layer-level CPU offloading (ParallelPlan::cpu_offload_layers): what the first cpu_offload_layers
// decoder layers save for backward, one micro-batch on one GPU, all of it on the host; and the
// largest of those layers, the reload buffer that is back on the GPU for that layer's backward.
struct CpuOffloadBytes {
  double total = 0, largest_layer = 0;
};
CpuOffloadBytes cpu_offloaded_bytes(const Job& job);

// Token-expert pairs the busiest GPU's local experts store for `tokens` tokens of its micro-batch
// (see the formula's comment; under HybridEP's static per-rank budget, the budget's rows); 0 for a
// dense model.
double moe_tokens_per_gpu(const Job& job, double tokens);

// layer_activation_bytes of one job, computed once per recompute granularity and layer kind:
// they depend on the job, not on the stage, so the stages of one prediction share them.
class LayerActivationBytes {
 public:
  explicit LayerActivationBytes(const Job& job) : job_(job) {}
  double operator()(RecomputeGranularity g, LayerKind kind) {
    const int gi = g == RecomputeGranularity::full ? 2 : g == RecomputeGranularity::selective ? 1 : 0;
    const int ki = kind.index();
    if (!known_[gi][ki]) compute(gi, ki, g, kind);
    return value_[gi][ki];
  }

 private:
  void compute(int gi, int ki, RecomputeGranularity g, LayerKind kind);
  const Job& job_;
  double value_[3][LayerKind::kCount]{};
  bool known_[3][LayerKind::kCount]{};
};

// What a reported memory figure counts; one process, three tools:
//  device:    nvidia-smi (the driver's view): everything, the CUDA context and NCCL's buffers too;
//  reserved:  torch.cuda.max_memory_reserved(): what PyTorch's caching allocator holds, its
//             fragmentation included, nothing allocated outside it;
//  allocated: torch.cuda.max_memory_allocated(): the live tensors only.
// A plan fits when the device view fits; a measurement is compared in its own view.
enum class MemoryMeasure { device, reserved, allocated };
const char* to_string(MemoryMeasure m);
// One stage's memory as that tool reports it.
double measured_as_GiB(const MemoryBreakdown& m, MemoryMeasure what);
// The fullest GPU's, as that tool reports it (published figures are the maximum over GPUs).
double peak_measured_as_GiB(const Prediction& p, MemoryMeasure what);

// Breakdown for one stage given how many chunk-micro-batches it holds at its peak and how many
// of its layers are fully recomputed.
MemoryBreakdown stage_memory(const Job& job, int stage, int layers, int peak_in_flight_chunks);
// The same, for a caller that already has the stage's stage_param_split and the job's
// LayerActivationBytes (a prediction, for all its stages).
MemoryBreakdown stage_memory(const Job& job, int stage, int layers, int peak_in_flight_chunks, const ParamSplit& split,
                             LayerActivationBytes& layer_bytes);

}  // namespace strata
