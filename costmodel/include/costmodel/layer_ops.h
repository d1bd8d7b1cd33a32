#pragma once
// FLOPs and bytes of every op of a decoder layer, the embedding and the output layer, per GPU
// (after TP/SP/CP sharding), for forward, backward (data + weight) and selective recompute.
// Layers only count; the kernel model turns counts into time (Calculon's split).
#include <cstdint>
#include <vector>

#include "costmodel/gpu_spec.h"
#include "costmodel/job.h"
#include "costmodel/model_spec.h"

namespace strata {

enum class OpKind { gemm, attention, elementwise };

struct Op {
  const char* name = "";
  OpKind kind = OpKind::elementwise;
  bool weight_grad = false;  // the weight-gradient GEMM of a backward pair (dB = A^T dC)
  // A GEMM that stays in bf16 when the model trains in fp8: Megatron runs only the Transformer
  // Engine linears of the decoder layers in fp8, not the output layer or the MoE router.
  bool bf16_under_fp8 = false;
  // Attention only: the kernel's rate grows with the keys each query tile visits (key_loop_factor);
  // set for the fused attention of Transformer Engine stacks (LayerShape::attention_scales_with_seq).
  bool key_loop_scaling = false;
  // Attention only: cuDNN's fused attention (Transformer Engine on Hopper+), timed with its own
  // coefficients (KernelCoefficients::cudnn_attention_*) instead of FlashAttention-2's.
  bool cudnn_attention = false;
  // Attention only: the mean number of keys per query that one kernel's key loop covers, where
  // that is less than a causal kernel over all n keys (n/2): a sliding window
  // (causal_keys_per_query), or one step of a context-parallel ring (LayerShape::cp_ring). 0: n/2.
  double kernel_keys_per_query = 0;
  // Attention only: the query-key scores the kernel computes (one softmax exponential each, forward
  // and again backward, where P is recomputed from the log-sum-exp).
  double attention_scores = 0;
  // Attention only: dropout on the attention probabilities inside the fused kernel (Philox
  // random numbers per score), timed with the kernel's dropout factor.
  bool attention_dropout = false;
  // Attention only: cuDNN's fp8 fused attention (RuntimeOptions::fp8_attention): both products on
  // the fp8 tensor cores, the softmax's exponentials at the special-function rate.
  bool fp8_attention = false;
  // Batch entries in flight at once, each its own kernel with its share of the FLOPs and bytes:
  // rounds of `concurrent` entries whose tiles share the waves. 0: all of them as one kernel (a
  // batched or grouped GEMM); 1: one after another (Megatron-Core SequentialMLP's expert loop);
  // 4: Transformer Engine's grouped GEMM over its four compute streams. (Beside the flags above:
  // the fields are ordered so that Op, copied for every kernel of a prediction, stays 88 bytes.)
  int concurrent = 0;
  // GEMM shape (per batch entry): C[m,n] += A[m,k] B[k,n]; batch > 1 for batched GEMMs.
  double m = 0, n = 0, k = 0;
  double batch = 1;
  double flops = 0;
  double bytes = 0;  // DRAM bytes moved, each input read once and each output written once
};
static_assert(sizeof(void*) != 8 || sizeof(Op) == 88, "Op grew: keep its flags together (see Op::concurrent)");

struct LayerShape {
  std::int64_t micro_batch = 1;
  std::int64_t seq = 0;  // full sequence length
  int tp = 1;
  int cp = 1;
  // CP ranks on the ring whose steps each run the attention over one rank's K/V block (p2p: cp;
  // a2a+p2p: the ring of a2a groups; a2a and allgather: 1, each rank attends to the whole
  // sequence in one kernel).
  int cp_ring = 1;
  int ep = 1;
  int etp = 1;
  // Busiest EP rank's routed tokens over the mean (effective_moe_imbalance).
  double moe_imbalance = 1.0;
  // Megatron-Core's all-to-all dispatcher sorts the received token copies by local expert after
  // the dispatch all-to-all and back before the combine ("permutation 2"; not the flex
  // DeepEP/HybridEP dispatcher, which permutes once at the destination).
  bool moe_sort_chunks = false;
  // The local experts run as one grouped GEMM (Megatron --moe-grouped-gemm, TEGroupedMLP) rather
  // than one expert after another (SequentialMLP, Megatron's default).
  bool moe_grouped_gemm = true;
  // Grouped expert GEMMs in flight at once: Transformer Engine's GroupedLinear issues one cuBLAS
  // GEMM per expert, round-robin over its compute streams (multi_stream_cublas_gemm,
  // nvte_get_num_compute_streams() = 4), unless NVTE_USE_CUTLASS_GROUPED_GEMM on Hopper.
  int grouped_gemm_streams = 4;
  // The dispatcher hands each expert a segment padded for fp8/fp4 GEMMs (the flex dispatcher).
  bool moe_dispatcher_pads = false;
  bool sequence_parallel = false;
  bool flash_attention = true;
  int element_bytes = 2;
  // The decoder layers' linears run in fp8 through Transformer Engine, which casts each GEMM input
  // (with its transpose) to fp8 in extra memory-bound kernels.
  bool fp8_linears = false;
  LowPrecisionRecipe recipe = LowPrecisionRecipe::delayed;  // how, when fp8_linears
  bool attention_scales_with_seq = true;  // sets Op::key_loop_scaling on the flash attention ops
  bool cudnn_attention = false;           // sets Op::cudnn_attention (resolved_attention_kernel)
  bool fp8_attention = false;             // sets Op::fp8_attention, with its quantization casts (RuntimeOptions)
  std::int64_t vocab = 0;  // vocabulary rows incl. framework padding (padded_vocab_size); 0: the model's
  CrossEntropyKernel cross_entropy = CrossEntropyKernel::jit_fused;  // the loss's kernels (resolved_cross_entropy)
  // RecomputeModule bits whose forward ops LayerOps::selective_recompute holds.
  unsigned recompute_modules = kRecomputeCoreAttn;
};

struct LayerOps {
  std::vector<Op> forward;
  std::vector<Op> backward;
  // Ops re-run in backward under selective recompute: those of LayerShape::recompute_modules
  // (by default the attention core, Korthikanti 2022 §5).
  std::vector<Op> selective_recompute;
  // MoE layers: the index in `forward` of the first op issued after the token dispatcher's host
  // synchronisation (the one after the permutation); 0 where the forward has none.
  std::size_t forward_sync = 0;
  // MoE layers: the routed experts' ops in `forward`, [experts_begin, experts_end): the first is
  // the (first) expert's fc1, the last its (last) fc2; both 0 where the layer has none.
  std::size_t experts_begin = 0, experts_end = 0;
};

// One decoder layer of the given kind (MoE or dense MLP, sliding-window or full attention); the
// two-argument form is the model's first layer.
LayerOps decoder_layer_ops(const ModelSpec& m, const LayerShape& s, LayerKind kind);
LayerOps decoder_layer_ops(const ModelSpec& m, const LayerShape& s);
LayerOps embedding_ops(const ModelSpec& m, const LayerShape& s);
// Final norm, logits GEMM and vocab-parallel cross entropy.
LayerOps output_layer_ops(const ModelSpec& m, const LayerShape& s);
// One multi-token-prediction module's own ops around its decoder layer: the norms of the hidden
// state and of the next token's embedding, and the 2h -> h projection of their concatenation
// (Megatron-Core MultiTokenPredictionLayer: enorm, hnorm, eh_proj). Its decoder layer, embedding
// lookup and output layer are costed as the model's.
LayerOps mtp_head_ops(const ModelSpec& m, const LayerShape& s);

double total_flops(const std::vector<Op>& ops);

// Model FLOPs of one decoder layer forward for `tokens` tokens with full (non-causal-skipped)
// attention: 2*params_matmul*tokens + 4*tokens*seq*h, the convention behind reported MFU figures
// (PaLM appendix B; Megatron's 24bsh^2 + 4bs^2h per layer, Narayanan et al. 2021 eq. 3).
// For MoE models: top_k routed experts + shared experts per token, at the model's mean layer
// (dense-first layers and the MoE layers averaged); sliding-window layers attend to the window.
double layer_model_flops_fwd(const ModelSpec& m, double tokens, double seq);
double layer_model_flops_fwd(const ModelSpec& m, double tokens, double seq, LayerKind kind);

// Mean number of keys a query attends to under causal masking over `seq` keys, limited to a
// sliding window of `window` keys (0 = none): seq/2 without a window, w - w^2/(2 seq) with one.
double causal_keys_per_query(double seq, double window);

}  // namespace strata
