#include "costmodel/layer_ops.h"

#include <algorithm>
#include <initializer_list>
#include <iterator>
#include <string_view>

namespace strata {

namespace {

Op gemm(const char* name, double m, double n, double k, int eb, double batch = 1) {
  Op op;
  op.name = name;
  op.kind = OpKind::gemm;
  op.m = m;
  op.n = n;
  op.k = k;
  op.batch = batch;
  op.flops = 2.0 * m * n * k * batch;
  op.bytes = (m * k + k * n + m * n) * eb * batch;
  return op;
}

Op elementwise(const char* name, double elements, double bytes_per_element, double flops_per_element = 1) {
  Op op;
  op.name = name;
  op.kind = OpKind::elementwise;
  op.flops = elements * flops_per_element;
  op.bytes = elements * bytes_per_element;
  return op;
}

// `op` as `kernels` kernels issued one after another, each with its share of the work (a loop of
// per-expert or per-step launches).
Op one_at_a_time(Op op, double kernels) {
  op.batch = kernels;
  op.concurrent = 1;
  return op;
}

// The backward of C = A B is dA = dC B^T (m x k, inner n) and dB = A^T dC (k x n, inner m).
void add_gemm_backward(std::vector<Op>& bwd, const Op& f, int eb) {
  Op data_grad = gemm(f.name, f.m, f.k, f.n, eb, f.batch);
  Op weight_grad = gemm(f.name, f.k, f.n, f.m, eb, f.batch);
  data_grad.bf16_under_fp8 = weight_grad.bf16_under_fp8 = f.bf16_under_fp8;
  weight_grad.weight_grad = true;
  bwd.push_back(data_grad);
  bwd.push_back(weight_grad);
}

// The forward ops Megatron-Core re-runs for each selective recompute module (TransformerConfig
// recompute_modules; transformer_layer.py, moe_layer.py, experts.py, multi_latent_attention.py),
// picked from the layer's forward by the names decoder_layer_ops gives them. With Transformer
// Engine the input norm is fused into the QKV linear and the pre-MLP norm into a dense MLP's fc1
// (LayerNormLinear), so "layernorm" re-runs only the norms that stand alone: MLA's input norm and
// an MoE layer's pre-MLP norm. "mlp" applies to dense layers, "moe" (which also repeats the token
// dispatch, added by the predictor) and "moe_act" to MoE layers.
std::vector<Op> selective_recompute_ops(const std::vector<Op>& forward, unsigned modules, const ModelSpec& m, LayerKind kind) {
  auto in = [](std::string_view name, std::initializer_list<std::string_view> names) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  std::vector<Op> out;
  for (const Op& op : forward) {
    const std::string_view n(op.name);
    bool take = false;
    if (modules & kRecomputeCoreAttn)
      take |= in(n, {"flash_attention", "cudnn_attention", "fp8_cast_qkv", "cp_out_correction", "attn_scores", "softmax", "attn_values",
                     "indexer_q_proj", "indexer_k_proj", "indexer_weights_proj", "indexer_norm_rope", "indexer_scores",
                     "indexer_loss_target", "sparse_mla_attention", "v_up_absorbed"});
    if (modules & kRecomputeLayernorm)
      take |= (m.mla && n == "input_norm") || (kind.moe && n == "post_attn_norm");
    if (modules & kRecomputeMlaUpProj) take |= m.mla && in(n, {"q_up_proj", "kv_up_proj", "q_absorb_k_up", "rope"});
    if ((modules & kRecomputeMlp) && !kind.moe)
      take |= in(n, {"post_attn_norm", "quantize_fc1_input", "fc1", "activation", "quantize_fc2_input", "fc2"});
    if (kind.moe && (modules & kRecomputeMoeAct)) take |= in(n, {"expert_activation", "quantize_fc2_input"});
    if (kind.moe && (modules & kRecomputeMoe))
      take |= in(n, {"router", "router_topk", "moe_permute", "moe_sort_chunks", "quantize_fc1_input", "expert_fc1",
                     "expert_activation", "quantize_fc2_input", "expert_fc2", "expert_bias_scale", "expert_bias_add",
                     "expert_bias_concat", "moe_unsort_chunks", "moe_unpermute", "moe_latent_down", "moe_latent_up",
                     "shared_fc1", "shared_activation", "shared_fc2"});
    if (kind.moe && (modules & kRecomputeSharedExperts)) take |= in(n, {"shared_fc1", "shared_activation", "shared_fc2"});
    if (take) out.push_back(op);
  }
  return out;
}

// The tokens of one micro-batch on one GPU (a CP rank's share), and on one TP rank where
// sequence parallelism splits them further (norms, dropouts, the embedding's output).
struct LocalTokens {
  double all, sequence_parallel;
};
LocalTokens local_tokens(const LayerShape& s) {
  const double T = static_cast<double>(s.micro_batch) * static_cast<double>(s.seq) / s.cp;
  return {T, s.sequence_parallel ? T / s.tp : T};
}

// TEGroupedMLP with biased experts (GPT-OSS; Megatron-Core experts.py _apply_bias, since
// a329dd6 "Enable bias in expert mlp", 2025-09): fc2 runs without its bias, which is then added
// expert by expert in eager PyTorch, weighted by each token's routing probability:
// cat([t + b * p for t, b, p in zip(split(out), biases, split(probs))]). Forward, per local
// expert, one kernel writes b * p and one adds it to t; one concatenation copies the rows back.
// Backward (autograd): per expert, MulBackward0 multiplies the gradient by p and by b and sums
// each product to its input's shape (over the tokens for b, over the hidden size for p), and the
// split's backward concatenates the gradients of t. `elements`: routed rows x hidden. The newer
// packed path (moe_use_grouped_tensor, 2026-08, off by default) is not modelled.
void add_expert_bias_ops(std::vector<Op>& fwd, std::vector<Op>& bwd, double elements, double local_experts, int eb) {
  fwd.push_back(one_at_a_time(elementwise("expert_bias_scale", elements, eb), local_experts));
  fwd.push_back(one_at_a_time(elementwise("expert_bias_add", elements, 3.0 * eb), local_experts));
  fwd.push_back(elementwise("expert_bias_concat", elements, 2.0 * eb, 0));
  const Op grad[] = {one_at_a_time(elementwise("expert_bias_grad_scale", elements, 4.0 * eb, 2), 2 * local_experts),
                     one_at_a_time(elementwise("expert_bias_grad_reduce", elements, 2.0 * eb, 2), 2 * local_experts),
                     elementwise("expert_bias_split_bwd", elements, 2.0 * eb, 0)};
  bwd.insert(bwd.begin(), std::begin(grad), std::end(grad));
}

// DeepSeek Sparse Attention's core (DeepSeek-V3.2, arXiv:2512.02556 §2.1; Megatron-Core
// experimental_attention_variant/dsa.py with its fused kernels, --dsa-kernel-backend):
//  - the lightning indexer, on every TP rank over the whole local sequence (its projections are
//    "duplicated", sequence parallelism gathers its inputs): q from the q latent, one key from the
//    hidden state (LayerNorm, rope), a weight per head; ReLU(q.k) scores of every earlier key
//    summed over its heads with those weights, and the top index_topk keys kept (fused with the
//    scores: the s x s matrix is never written). Its inputs are detached: without its loss it has
//    no backward;
//  - the attention of each query over its selected keys in MLA's absorbed form (each head reads the
//    shared latent key of kv_lora + rope channels and its kv_lora-channel value), timed as a fused
//    attention kernel over min(position, index_topk) keys per query. The sparse kernel (FlashMLA's
//    sparse prefill, which dsa_cudnn_kernels.py calls) computes whole blocks of 64 query heads: a
//    rank with fewer local heads pays for 64 (_flash_mla_head_padding). Gathering the selected
//    latent rows is taken to hit L2 (not modelled as DRAM traffic);
//  - the output latent mapped to each head's value by W_UV (einsum, bf16);
//  - with the indexer loss on (dsa_indexer_loss_coeff > 0): the head-summed attention distribution
//    recomputed as its target (over the top-k keys for the sparse loss, over every earlier key for
//    the dense one), and the indexer's backward over the same keys (scores again, then the
//    gradients of its q and k) with its projections' weight gradients.
// Layers that reuse another layer's top-k (DsaSpec::topk_freq) skip the indexer: its ops are
// counted at the model's share of layers that run one, the same for every layer.
void add_sparse_attention_ops(std::vector<Op>& fwd, std::vector<Op>& bwd, const ModelSpec& m, const LayerShape& s, double T,
                              double heads, int eb) {
  const MlaSpec& mla = *m.mla;
  const DsaSpec& dsa = *m.dsa;
  const double b = static_cast<double>(s.micro_batch);
  const double seq_full = static_cast<double>(s.seq), seq = seq_full / s.cp;
  const double h = static_cast<double>(m.hidden_size);
  const double kl = static_cast<double>(mla.kv_lora_rank), rope = static_cast<double>(mla.qk_rope_head_dim);
  const double q_in = mla.q_lora_rank > 0 ? static_cast<double>(mla.q_lora_rank) : h;
  const double ih = static_cast<double>(dsa.index_heads), id = static_cast<double>(dsa.index_head_dim);
  const double topk = static_cast<double>(dsa.index_topk);
  const double share = m.indexer_share();
  const bool loss = dsa.indexer_loss_coeff > 0;
  auto shared = [share](Op op) {
    op.flops *= share;
    op.bytes *= share;
    op.attention_scores *= share;
    return op;
  };
  auto attention_op = [&](const char* name, double scores, double qk_channels, double v_channels, double keys) {
    Op a;
    a.name = name;
    a.kind = OpKind::attention;
    a.m = seq;
    a.n = seq_full;
    a.k = qk_channels;
    a.attention_scores = scores;
    a.flops = 2.0 * scores * (qk_channels + v_channels);
    a.key_loop_scaling = s.attention_scales_with_seq;
    // The DSA kernels are Hopper-native (FlashMLA's sparse prefill, tilelang's wgmma kernels), as
    // cuDNN's fused attention is: timed with its coefficients where the stack runs cuDNN's.
    a.cudnn_attention = s.cudnn_attention;
    if (keys < seq_full / 2) a.kernel_keys_per_query = keys;
    return a;
  };
  const double all_keys = seq_full / 2, selected = causal_keys_per_query(seq_full, topk);

  // Indexer forward.
  const Op iq = gemm("indexer_q_proj", T, ih * id, q_in, eb), ik = gemm("indexer_k_proj", T, id, h, eb),
           iw = gemm("indexer_weights_proj", T, ih, h, eb);
  for (const Op& g : {iq, ik, iw}) fwd.push_back(shared(g));
  fwd.push_back(shared(elementwise("indexer_norm_rope", T * (ih + 1) * id, 2.0 * eb, 6)));
  Op scores = attention_op("indexer_scores", b * ih * seq * all_keys, id, 0, all_keys);
  scores.batch = b * ih;
  scores.bytes = T * (ih * id + id + ih) * eb + T * topk * 4.0;  // q, k, weights in; int32 indices out
  fwd.push_back(shared(scores));

  // Sparse attention over the selected keys, on this rank's heads padded to the kernel's 64.
  const double kernel_heads = std::ceil(heads / 64.0) * 64.0;
  Op a = attention_op("sparse_mla_attention", b * kernel_heads * seq * selected, kl + rope, kl, selected);
  a.batch = b * kernel_heads;
  a.bytes = (T * (heads * (kl + rope) + kl + rope + heads * kl)) * eb + T * topk * 4.0;
  fwd.push_back(a);
  Op v_up = gemm("v_up_absorbed", T, static_cast<double>(mla.v_head_dim), kl, eb, heads);
  v_up.bf16_under_fp8 = true;
  fwd.push_back(v_up);

  const double loss_keys = dsa.sparse_indexer_loss ? selected : all_keys;
  if (loss) {
    Op target = attention_op("indexer_loss_target", b * heads * seq * loss_keys, kl + rope, 0, loss_keys);
    target.batch = b * heads;
    target.bytes = T * (heads * (kl + rope) + kl + rope) * eb + T * loss_keys * 4.0;
    fwd.push_back(shared(target));
  }

  add_gemm_backward(bwd, v_up, eb);
  Op ab = a;
  ab.name = "sparse_mla_attention_bwd";
  ab.flops = a.flops * 2.5;  // 5 matmuls in backward vs 2 forward (FlashAttention-2 §3.2)
  ab.bytes = a.bytes * 2.0;
  bwd.push_back(ab);
  if (loss) {
    // Scores over the loss's keys again, then dq and dk: three q.k-sized products.
    Op ib = attention_op("indexer_scores_bwd", b * ih * seq * loss_keys, id, 0, loss_keys);
    ib.batch = b * ih;
    ib.flops *= 3.0;
    ib.bytes = 2.0 * T * (ih * id + id + ih) * eb + T * loss_keys * 4.0;
    bwd.push_back(shared(ib));
    for (const Op& g : {iw, ik, iq}) {
      Op wgrad = gemm(g.name, g.k, g.n, g.m, eb);  // dW only: the inputs are detached
      wgrad.weight_grad = true;
      bwd.push_back(shared(wgrad));
    }
  }
}

// Transformer Engine fp8 (delayed scaling): Hopper's fp8 tensor cores read both operands
// K-major, so every GEMM input is cast to fp8 together with its transpose (TE cast_transpose:
// read 2 bytes, write 1 + 1 per element). The norms and the activation function write their
// outputs that way already (LayerNormLinear, LayerNormMLP), so forward adds only the cast of the
// attention output; backward casts the output gradient of each of the four linears
// (fp8_cast_transpose_bgrad). Weights are cast once per iteration (cached over micro-batches,
// is_first_microbatch) and are not counted.
//
// Bytes each cast moves per element, by recipe (Transformer Engine quantizers,
// transformer_engine/pytorch/tensor/*.py and common/cast/): delayed scaling reads the bf16 input
// once and writes the fp8 data and its transpose; current (tensorwise) scaling first reads the
// input for its amax (nvte_compute_amax), then casts, a second read; blockwise and MXFP8 write
// rowwise and columnwise copies with one scale per block (1x128 fp32, 32-element E8M0); NVFP4
// writes two 4-bit copies with an E4M3 scale per 16 and passes the weight-gradient operands
// through a 16x16 random Hadamard transform (NVIDIA, "Pretraining LLMs with NVFP4", 2025, §4),
// counted as one more read of the input.
double fp8_cast_bytes(const LayerShape& s) {
  const int eb = s.element_bytes;
  switch (s.recipe) {
    case LowPrecisionRecipe::delayed: return eb + 2.0;
    case LowPrecisionRecipe::tensorwise: return 2.0 * eb + 2.0;
    case LowPrecisionRecipe::blockwise: return eb + 2.0 + 8.0 / 128;
    case LowPrecisionRecipe::mxfp8: return eb + 2.0 + 2.0 / 32;
    case LowPrecisionRecipe::nvfp4: return 2.0 * eb + 1.0 + 2.0 / 16;
  }
  return eb + 2.0;
}

// The norms and the activation function write quantized outputs directly only for delayed
// scaling and MXFP8 (fused norm/activation + quantize kernels); with current scaling, blockwise
// and NVFP4 Transformer Engine computes them in bf16 and quantizes in a separate pass (the
// "unfused" path of transformer_engine/pytorch/csrc/extensions/normalization.cpp and
// activation.cpp), since the scale needs the finished tensor.
bool quantize_unfused(const LayerShape& s) {
  return s.fp8_linears && (s.recipe == LowPrecisionRecipe::tensorwise || s.recipe == LowPrecisionRecipe::blockwise ||
                           s.recipe == LowPrecisionRecipe::nvfp4);
}

// The frame of a linear-time mixer layer (Mamba-2, gated DeltaNet) around the mixer's own ops:
// the input norm, in_proj (column-parallel: `width` outputs per rank; under sequence parallelism it
// gathers its input as the QKV projection does), the mixer's ops, out_proj from its `inner` output
// channels (row-parallel) and the residual add, forward and backward.
void add_mixer_layer_ops(LayerOps& L, const ModelSpec& m, const LayerShape& s, double T, double T_sp, double width, double inner,
                         const char* in_proj_name, const char* out_proj_name, const std::vector<Op>& mixer_fwd,
                         const std::vector<Op>& mixer_bwd) {
  const int eb = s.element_bytes;
  const double h = static_cast<double>(m.hidden_size);
  const double cast_bytes = fp8_cast_bytes(s);
  const bool unfused_quantize = quantize_unfused(s);
  auto& F = L.forward;
  auto& B = L.backward;
  auto fp8_cast = [&](std::vector<Op>& ops, const char* name, double elements) {
    if (s.fp8_linears) ops.push_back(elementwise(name, elements, cast_bytes, 2));
  };
  F.push_back(elementwise("input_norm", T_sp * h, 2.0 * eb, 5));
  if (unfused_quantize) F.push_back(elementwise("quantize_in_proj_input", T_sp * h, cast_bytes, 2));
  const Op in_proj = gemm(in_proj_name, T, width, h, eb);
  F.push_back(in_proj);
  F.insert(F.end(), mixer_fwd.begin(), mixer_fwd.end());
  fp8_cast(F, "fp8_cast_mixer_out", T * inner);
  const Op out_proj = gemm(out_proj_name, T, h, inner, eb);
  F.push_back(out_proj);
  F.push_back(elementwise("bias_dropout_add", T_sp * h, 3.0 * eb));

  B.push_back(elementwise("bias_dropout_add_bwd", T_sp * h, 2.0 * eb));
  fp8_cast(B, "fp8_cast_grad_out_proj_out", T * h);
  add_gemm_backward(B, out_proj, eb);
  B.insert(B.end(), mixer_bwd.begin(), mixer_bwd.end());
  fp8_cast(B, "fp8_cast_grad_in_proj_out", T * width);
  add_gemm_backward(B, in_proj, eb);
  B.push_back(elementwise("input_norm_bwd", T_sp * h, 4.0 * eb, 8));
}

// A Mamba-2 layer as Megatron-Core trains it (MambaLayer: norm, MambaMixer, residual add; the
// mixer's memory-efficient path _ssm_training, mamba_ssm's mamba_split_conv1d_scan_combined):
//  - in_proj, column-parallel over TP (heads and groups split; sequence parallelism gathers its
//    input as for the QKV projection): z, x, B, C and dt of this rank's heads;
//  - the depthwise causal conv1d over x, B, C (conv_kernel taps; causal_conv1d_fwd);
//  - the SSD scan of Dao & Gu 2024 (arXiv:2405.21060 §6; mamba_ssm ssd_combined.py), a chain of
//    batched products over chunks of Q = chunk_size tokens, per head (P = head_dim channels) and
//    group (N = state_dim): the chunk states B^T X (N x P, inner Q: _chunk_state_fwd), passed from
//    chunk to chunk in fp32 (_state_passing_fwd, sequential over the chunks), C B^T per group
//    (Q x Q, inner N: _bmm_chunk_fwd), and the output (C B^T o L) X over the causal half of the
//    chunk plus C times the incoming state (_chunk_scan_fwd), gated by silu(z);
//  - the group RMSNorm of y (Megatron's ExtendedRMSNorm, z already applied) and out_proj, row-
//    parallel over TP.
// The scan's products are timed as batched GEMMs at the GEMM model's rates (the Triton kernels'
// own efficiency is not measured: a default). Backward recomputes the conv and the chunk states
// from the saved in_proj output (MambaSplitConv1dScanCombinedFn saves only zxbcdt and the
// ungated output), then takes both gradient products of each forward product. With context
// parallelism each rank runs its heads / cp over the whole sequence (MambaContextParallel's
// all-to-alls, costed by the layer's communication): the same work per GPU.
void add_mamba_ops(LayerOps& L, const ModelSpec& m, const LayerShape& s, double T, double T_sp) {
  const MambaSpec& mb = *m.mamba;
  const int eb = s.element_bytes;
  const double tp = s.tp;
  const double heads = mb.num_heads / tp, groups = std::max(1.0, mb.num_groups / tp);
  const double P = static_cast<double>(mb.head_dim), N = static_cast<double>(mb.state_dim), Q = mb.chunk_size;
  const double d_in = heads * P, width = static_cast<double>(mb.in_proj_width()) / tp;
  const double conv = d_in + 2 * groups * N;
  const double chunks = std::max(1.0, T / Q);
  const Op conv1d = elementwise("mamba_conv1d", T * conv, 2.0 * eb, 2.0 * mb.conv_kernel + 4);  // taps, bias, silu
  const Op cumsum = elementwise("mamba_chunk_cumsum", T * heads, eb + 8.0, 4);  // dt in; softplus(dt), cumsum(dt A) out in fp32
  const Op chunk_state = gemm("mamba_chunk_state", N, P, Q, eb, chunks * heads);
  const Op passing = elementwise("mamba_state_passing", chunks * heads * N * P, 8.0, 2);  // fp32 state read and written
  const Op cb = gemm("mamba_bmm_chunk", Q, Q, N, eb, chunks * groups);
  const Op scan_intra = gemm("mamba_chunk_scan", Q, P, Q / 2, eb, chunks * heads);  // causal: half the chunk's keys
  const Op scan_states = gemm("mamba_chunk_scan_states", Q, P, N, eb, chunks * heads);
  const Op gate = elementwise("mamba_gate", T * d_in, 3.0 * eb, 5);  // z in, gated and ungated y out
  const std::vector<Op> fwd = {conv1d, cumsum, chunk_state, passing, cb, scan_intra, scan_states, gate,
                               elementwise("mamba_norm", T * d_in, 2.0 * eb, 5)};
  std::vector<Op> bwd = {elementwise("mamba_norm_bwd", T * d_in, 4.0 * eb, 8)};
  // Recomputed from zxbcdt: the conv output and the chunk states.
  for (const Op& op : {conv1d, cumsum, chunk_state, passing}) bwd.push_back(op);
  bwd.push_back(elementwise("mamba_gate_bwd", T * d_in, 5.0 * eb, 8));
  for (const Op& op : {scan_states, scan_intra, cb, chunk_state}) add_gemm_backward(bwd, op, eb);
  bwd.push_back(elementwise("mamba_state_passing_bwd", chunks * heads * N * P, 12.0, 4));
  bwd.push_back(elementwise("mamba_chunk_cumsum_bwd", T * heads, 2.0 * eb + 8.0, 6));
  bwd.push_back(elementwise("mamba_conv1d_bwd", T * conv, 3.0 * eb, 4.0 * mb.conv_kernel + 4));
  add_mixer_layer_ops(L, m, s, T, T_sp, width, d_in, "mamba_in_proj", "mamba_out_proj", fwd, bwd);
}

// A gated DeltaNet layer as Megatron-Core trains it (ssm/gated_delta_net: norm, in_proj, conv1d,
// FLA's chunk_gated_delta_rule, gated RMSNorm, out_proj, residual add; Yang et al. 2024,
// arXiv:2412.06464 §3, the chunkwise form of the delta rule with a decay gate):
//  - in_proj, column-parallel over TP: q, k, v, z, beta and alpha of this rank's heads; the conv1d
//    over q, k, v; q and k L2-normed, the gates computed, and q and k repeated to the value heads
//    (one pass that writes them: GatedDeltaNet._prepare_kernel_inputs);
//  - per chunk of C = chunk_size tokens and value head (dk, dv channels): K K^T for the WY form's
//    lower-triangular system, its inverse (solve_tril), W = A beta K and U = A beta V, the state
//    recurrence across chunks (W S, K^T U: chunk_gated_delta_rule_fwd_h, sequential over chunks,
//    fp32 states), and the output Q S plus the causal (Q K^T o M) U within the chunk;
//  - the RMSNorm of each value head gated by silu(z), and out_proj, row-parallel over TP.
// The chunk products are timed as batched GEMMs at the GEMM model's rates (FLA's Triton kernels are
// not measured: a default). Backward recomputes the chunk states (FLA keeps only the initial
// state) and takes both gradient products of each product. With context parallelism each rank runs
// its heads / cp over the whole sequence after an all-to-all (costed by the layer's communication).
void add_gdn_ops(LayerOps& L, const ModelSpec& m, const LayerShape& s, double T, double T_sp) {
  const GdnSpec& g = *m.gdn;
  const int eb = s.element_bytes;
  const double tp = s.tp;
  const double hv = g.num_value_heads / tp, dk = static_cast<double>(g.key_head_dim), dv = static_cast<double>(g.value_head_dim);
  const double C = g.chunk_size;
  const double width = static_cast<double>(g.in_proj_width()) / tp, conv = static_cast<double>(g.conv_channels()) / tp;
  const double v_dim = hv * dv;
  const double chunks = std::max(1.0, T / C), heads = chunks * hv;  // (chunk, value head) pairs
  const Op conv1d = elementwise("gdn_conv1d", T * conv, 2.0 * eb, 2.0 * g.conv_kernel + 4);  // taps, silu
  const Op prepare = elementwise("gdn_prepare_inputs", T * 2 * hv * dk, 2.0 * eb, 6);      // L2 norms, gates, q/k repeated
  const Op kkt = gemm("gdn_kkt", C, C, dk, eb, heads);
  const Op solve = gemm("gdn_solve_tril", C, C, C / 2, eb, heads);
  const Op wu = gemm("gdn_wy", C, dk + dv, C, eb, heads);
  const Op state_in = gemm("gdn_state_apply", C, dv, dk, eb, heads);   // W S
  const Op state_up = gemm("gdn_state_update", dk, dv, C, eb, heads);  // K^T U
  const Op states = elementwise("gdn_state_passing", heads * dk * dv, 8.0, 2);  // fp32 state read and written
  const Op out_inter = gemm("gdn_output_states", C, dv, dk, eb, heads);
  const Op qk = gemm("gdn_output_qk", C, C, dk, eb, heads);
  const Op out_intra = gemm("gdn_output_intra", C, dv, C / 2, eb, heads);
  const std::vector<Op> fwd = {conv1d, prepare, kkt, solve, wu, state_in, state_up, states, out_inter, qk, out_intra,
                               elementwise("gdn_gated_norm", T * v_dim, 3.0 * eb, 8)};
  std::vector<Op> bwd = {elementwise("gdn_gated_norm_bwd", T * v_dim, 5.0 * eb, 10)};
  for (const Op& op : {state_in, state_up, states}) bwd.push_back(op);  // the chunk states recomputed
  for (const Op& op : {out_intra, qk, out_inter, state_up, state_in, wu, solve, kkt}) add_gemm_backward(bwd, op, eb);
  bwd.push_back(elementwise("gdn_state_passing_bwd", heads * dk * dv, 12.0, 4));
  bwd.push_back(elementwise("gdn_prepare_inputs_bwd", T * 2 * hv * dk, 3.0 * eb, 8));
  bwd.push_back(elementwise("gdn_conv1d_bwd", T * conv, 3.0 * eb, 4.0 * g.conv_kernel + 4));
  add_mixer_layer_ops(L, m, s, T, T_sp, width, v_dim, "gdn_in_proj", "gdn_out_proj", fwd, bwd);
}

}  // namespace

double total_flops(const std::vector<Op>& ops) {
  double f = 0;
  for (const auto& op : ops) f += op.flops;
  return f;
}

double causal_keys_per_query(double seq, double window) {
  if (window <= 0 || window >= seq) return seq / 2;
  return window - window * window / (2 * seq);
}

LayerOps decoder_layer_ops(const ModelSpec& m, const LayerShape& s) { return decoder_layer_ops(m, s, m.layer_kind(0)); }

LayerOps decoder_layer_ops(const ModelSpec& m, const LayerShape& s, LayerKind kind) {
  LayerOps L;
  const int eb = s.element_bytes;
  const double tp = s.tp;
  const double b = static_cast<double>(s.micro_batch);
  const double seq_full = static_cast<double>(s.seq);
  const double seq = seq_full / s.cp;  // local query tokens per CP rank
  const double T = b * seq;            // tokens per GPU
  const double h = static_cast<double>(m.hidden_size);
  const double kv = static_cast<double>(m.kv_hidden());
  const double qh = static_cast<double>(m.q_hidden());
  const double heads = m.num_attention_heads / tp;
  const double d = static_cast<double>(m.head_dim());
  // With sequence parallelism the norms/dropouts run on T/tp tokens (Korthikanti 2022, §4.2.2).
  const double T_sp = s.sequence_parallel ? T / tp : T;
  const double dropout_mask = m.dropout ? 1.0 : 0.0;  // 1-byte mask per element
  // Keys per query: causal half of the sequence, or the sliding window (Beltagy et al. 2020;
  // FlashAttention's window_size skips the tiles outside it). The window counts the query itself, as
  // Hugging Face's sliding_window does (W keys; Megatron's left size W - 1 plus the query).
  const double window = kind.sliding_window ? static_cast<double>(m.sliding_window) : 0.0;
  const double keys_fraction = causal_keys_per_query(seq_full, window) / seq_full;
  // A hybrid model's Mamba-2 and gated DeltaNet layers hold no attention and no MLP.
  if (kind.has_mamba() && m.mamba) {
    add_mamba_ops(L, m, s, T, T_sp);
    return L;
  }
  if (kind.has_gdn() && m.gdn) {
    add_gdn_ops(L, m, s, T, T_sp);
    return L;
  }

  auto& F = L.forward;
  auto& B = L.backward;
  // Room for the largest layer (MLA attention, MoE with shared experts, unfused fp8 casts), so that
  // building one allocates each list once.
  F.reserve(32);
  B.reserve(64);
  // A hybrid model's layer holds an attention, an MLP or a Mamba mixer, each behind its own norm
  // and residual add (Megatron-Core HybridModel); a decoder layer holds an attention and an MLP.
  const bool attention_part = kind.has_attention(), mlp_part = kind.has_mlp();
  // Norm: read x, write y (+ stats); backward reads x, y-grad, writes x-grad (+ gamma grad).
  if (attention_part) F.push_back(elementwise("input_norm", T_sp * h, 2.0 * eb, 5));
  // Query/key/value projections. MLA (DeepSeek-V2 §2.1; Megatron-Core MLASelfAttention): the down
  // projections to the q and kv latents run whole on every TP rank, each latent is RMS-normed, then
  // up-projected per head (split over TP); the decoupled rope key comes out of the kv down
  // projection and is shared by the heads.
  std::vector<Op> proj_in;  // the GEMMs producing Q, K, V, in forward order
  std::vector<Op> proj_norms;
  // With fewer query groups than TP ranks each rank keeps one group's K and V (Megatron-Core Attention).
  double qk_dim = d, v_dim = d, q_out = qh / tp, kv_out = 2 * std::max(kv / tp, d);
  if (m.mla) {
    const double ql = static_cast<double>(m.mla->q_lora_rank), kl = static_cast<double>(m.mla->kv_lora_rank);
    const double rope = static_cast<double>(m.mla->qk_rope_head_dim);
    qk_dim = static_cast<double>(m.mla->qk_nope_head_dim) + rope;
    v_dim = static_cast<double>(m.mla->v_head_dim);
    if (ql > 0) {
      proj_in.push_back(gemm("q_down_proj", T, ql, h, eb));
      proj_norms.push_back(elementwise("q_latent_norm", T * ql, 2.0 * eb, 5));
      proj_in.push_back(gemm("q_up_proj", T, heads * qk_dim, ql, eb));
    } else {
      proj_in.push_back(gemm("q_proj", T, heads * qk_dim, h, eb));
    }
    proj_in.push_back(gemm("kv_down_proj", T, kl + rope, h, eb));
    proj_norms.push_back(elementwise("kv_latent_norm", T * kl, 2.0 * eb, 5));
    if (m.dsa) {
      // DSA's absorbed MLA (Megatron-Core AbsorbedMLASelfAttention): the key half of the kv up
      // projection is folded into each head's query (einsum "...nd,ndk->...nk" over the nope
      // channels: a per-head batched GEMM in bf16, outside Transformer Engine); keys and values stay
      // the shared latent.
      Op absorb = gemm("q_absorb_k_up", T, kl, static_cast<double>(m.mla->qk_nope_head_dim), eb, heads);
      absorb.bf16_under_fp8 = true;
      proj_in.push_back(absorb);
    } else {
      proj_in.push_back(gemm("kv_up_proj", T, heads * (static_cast<double>(m.mla->qk_nope_head_dim) + v_dim), kl, eb));
    }
    // Rotary embedding applied to the rope part of every query head and the shared rope key.
    proj_norms.push_back(elementwise("rope", T * (heads + 1) * rope, 2.0 * eb, 6));
    q_out = m.dsa ? heads * (kl + rope) : heads * qk_dim;
    kv_out = m.dsa ? kl + rope : heads * (qk_dim + v_dim);
  } else {
    // An output gate doubles the query projection (Megatron-Core Attention: the gate comes out of
    // linear_qkv beside each query head).
    const double gate = m.attention_output_gate ? qh : 0.0;
    proj_in.push_back(gemm("qkv_proj", T, (qh + gate + 2 * kv) / tp, h, eb));
    if (m.qk_layernorm) proj_norms.push_back(elementwise("qk_norm", T * (qh + kv) / tp, 2.0 * eb, 5));
    // Rotary embedding of every query and key head (Su et al. 2021): Megatron-Core's fused rope
    // (--apply-rope-fusion, Transformer Engine fused_apply_rotary_pos_emb) reads and writes q and
    // k once, the pass-through part of a partial rotary included; backward does the same for
    // their gradients.
    if (m.position_embedding == PositionEmbedding::rope) proj_norms.push_back(elementwise("rope", T * (qh + kv) / tp, 2.0 * eb, 3));
  }
  if (attention_part) {
    F.insert(F.end(), proj_in.begin(), proj_in.end());
    F.insert(F.end(), proj_norms.begin(), proj_norms.end());
  }

  // Attention core. Causal masking halves the work only for kernels that skip masked tiles
  // (FlashAttention); unfused Megatron attention computes the full s x s scores then masks.
  std::vector<Op> attn_fwd, attn_bwd;
  if (m.dsa && m.mla) {
    add_sparse_attention_ops(attn_fwd, attn_bwd, m, s, T, heads, eb);
  } else if (s.flash_attention) {
    // Per CP rank: local queries attend to the whole (ring-exchanged) sequence, load-balanced.
    Op a;
    a.name = s.cudnn_attention ? "cudnn_attention" : "flash_attention";
    a.cudnn_attention = s.cudnn_attention;
    a.kind = OpKind::attention;
    a.m = seq;
    a.n = seq_full;
    a.k = qk_dim;
    a.batch = b * heads;
    // QK^T (qk_dim) and PV (v_dim) over the keys each query sees (Dao 2022).
    a.attention_scores = b * heads * seq * seq_full * keys_fraction;
    a.flops = 2.0 * a.attention_scores * (qk_dim + v_dim);
    a.key_loop_scaling = s.attention_scales_with_seq;
    a.attention_dropout = m.dropout;
    // One kernel's key loop: a sliding window's keys, or under a CP ring one step's K/V block
    // (seq/ring keys: Transformer Engine's AttnFuncWithCPAndKVP2P runs one attention call per
    // step, the diagonal one causal over the local 2 x seq/(2 ring) tokens, the others full
    // blocks of half the queries or half the keys: on average as a causal kernel over seq/ring).
    double loop_keys = seq_full / 2;
    if (window > 0 && window < seq_full) loop_keys = seq_full * keys_fraction;
    if (s.cp_ring > 1) loop_keys = std::min(loop_keys, seq_full / (2.0 * s.cp_ring));
    if (loop_keys < seq_full / 2) a.kernel_keys_per_query = loop_keys;
    a.bytes = (T * (q_out + kv_out) + T * heads * v_dim) * eb;
    // fp8 attention (Transformer Engine fp8_dpa, cuDNN's fp8 fused kernel): Q, K and V are
    // quantized before the kernel, which reads them as 1 byte each; backward quantizes O and dO
    // too. A quantize reads bf16 and writes fp8; current scaling first reads the tensor for its
    // amax (Transformer Engine's Float8CurrentScalingQuantizer).
    a.fp8_attention = s.fp8_attention;
    const double dpa_cast_bytes =
        s.recipe == LowPrecisionRecipe::tensorwise || s.recipe == LowPrecisionRecipe::nvfp4 ? 2.0 * eb + 1.0 : eb + 1.0;
    if (s.fp8_attention) {
      a.bytes = T * (q_out + kv_out) + T * heads * v_dim * eb;
      attn_fwd.push_back(elementwise("fp8_cast_qkv", T * (q_out + kv_out), dpa_cast_bytes, 2));
    }
    attn_fwd.push_back(a);
    Op ab = a;
    ab.name = s.cudnn_attention ? "cudnn_attention_bwd" : "flash_attention_bwd";
    ab.flops = a.flops * 2.5;  // 5 matmuls in backward vs 2 forward (FlashAttention-2 §3.2)
    ab.bytes = a.bytes * 2.0;
    if (s.fp8_attention) attn_bwd.push_back(elementwise("fp8_cast_attention_out_and_grad", 2.0 * T * heads * v_dim, dpa_cast_bytes, 2));
    attn_bwd.push_back(ab);
    if (s.cp_ring > 1) {
      // Transformer Engine's CP ring (AttnFuncWithCPAndKVP2P) merges each step's partial output into
      // the running one by their softmax statistics (flash_attn_fwd_out_correction: read the step's
      // output, read and write the sum), and backward adds each step's dQ into dQ and its dK, dV
      // into the dKV that travels the ring (read the step's gradient, read and write the sum).
      attn_fwd.push_back(one_at_a_time(elementwise("cp_out_correction", T * heads * v_dim, 3.0 * eb, 3), s.cp_ring));
      attn_bwd.push_back(one_at_a_time(elementwise("cp_grad_accumulation", T * (q_out + kv_out), 3.0 * eb), s.cp_ring));
    }
  } else {
    const double scores = b * heads * seq * seq_full;
    Op qk = gemm("attn_scores", seq, seq_full, qk_dim, eb, b * heads);
    Op sm = elementwise("softmax", scores, (2.0 + dropout_mask) * eb, 5);  // fused scale-mask-softmax
    if (m.dropout) sm.bytes += scores * (eb + 1);                        // dropout output + mask
    Op av = gemm("attn_values", seq, v_dim, seq_full, eb, b * heads);
    attn_fwd = {qk, sm, av};
    add_gemm_backward(attn_bwd, av, eb);
    attn_bwd.push_back(elementwise("softmax_bwd", scores, 3.0 * eb + dropout_mask, 4));
    add_gemm_backward(attn_bwd, qk, eb);
  }
  if (attention_part) F.insert(F.end(), attn_fwd.begin(), attn_fwd.end());
  // The output gate: sigmoid(gate) times the attention output (read both, write one), and back.
  if (attention_part && m.attention_output_gate && !m.mla) {
    F.push_back(elementwise("attention_output_gate", T * heads * v_dim, 3.0 * eb, 4));
    attn_bwd.insert(attn_bwd.begin(), elementwise("attention_output_gate_bwd", T * heads * v_dim, 5.0 * eb, 6));
  }

  const double cast_bytes = fp8_cast_bytes(s);
  auto fp8_cast = [&](std::vector<Op>& ops, const char* name, double elements) {
    if (s.fp8_linears) ops.push_back(elementwise(name, elements, cast_bytes, 2));
  };
  const bool unfused_quantize = quantize_unfused(s);
  const double attn_out = heads * v_dim;  // per-GPU width of the attention output
  Op proj = gemm("out_proj", T, h, attn_out, eb);
  if (attention_part) {
    if (unfused_quantize) F.insert(F.begin() + 1, elementwise("quantize_qkv_input", T_sp * h, cast_bytes, 2));  // after input_norm
    fp8_cast(F, "fp8_cast_attention_out", T * attn_out);
    F.push_back(proj);
    F.push_back(elementwise("bias_dropout_add", T_sp * h, 3.0 * eb + dropout_mask));
  }
  // The MLP's norm (a hybrid MLP layer's input norm), under the name it has in a decoder layer.
  if (mlp_part) F.push_back(elementwise("post_attn_norm", T_sp * h, 2.0 * eb, 5));

  // MLP: dense, or an MoE layer's router, token permutation, local experts and shared experts.
  const bool gated = m.gated_mlp();
  std::vector<Op> mlp_fwd, mlp_bwd;
  mlp_fwd.reserve(16);
  mlp_bwd.reserve(32);
  auto add_mlp = [&](const char* fc1_name, const char* act_name, const char* act_bwd_name, const char* fc2_name, double tokens,
                     double f, double batch, bool sequential = false, double width = 0) {
    // tokens: rows of each GEMM of the group (per expert for grouped expert GEMMs), batch: experts;
    // sequential: the experts run one after another, each with its own kernels (SequentialMLP);
    // width: what fc1 reads and fc2 writes (a latent MoE's latent size; 0: the hidden size).
    const double w = width > 0 ? width : h;
    const std::size_t first_fwd = mlp_fwd.size();
    Op fc1 = gemm(fc1_name, tokens, (gated ? 2 : 1) * f, w, eb, batch);
    Op fc2 = gemm(fc2_name, tokens, w, f, eb, batch);
    const double rows = tokens * batch;
    // Unfused quantization of the GEMM inputs (see unfused_quantize): a dense MLP's norm output is
    // quantized on this rank's sequence-parallel tokens, before the all-gather.
    const double quantized_rows = batch == 1 && tokens == T ? T_sp : rows;
    if (unfused_quantize) mlp_fwd.push_back(elementwise("quantize_fc1_input", quantized_rows * w, cast_bytes, 2));
    mlp_fwd.push_back(fc1);
    mlp_fwd.push_back(elementwise(act_name, rows * f, (gated ? 3.0 : 2.0) * eb, 8));
    if (unfused_quantize) mlp_fwd.push_back(elementwise("quantize_fc2_input", rows * f, cast_bytes, 2));
    mlp_fwd.push_back(fc2);
    // Backward (reverse order inside the group).
    std::vector<Op> bwd;
    bwd.reserve(8);
    fp8_cast(bwd, "fp8_cast_grad_fc2_out", rows * w);
    add_gemm_backward(bwd, fc2, eb);
    bwd.push_back(elementwise(act_bwd_name, rows * f, (gated ? 5.0 : 3.0) * eb, 8));
    fp8_cast(bwd, "fp8_cast_grad_fc1_out", rows * (gated ? 2 : 1) * f);
    add_gemm_backward(bwd, fc1, eb);
    if (batch > 1 && (sequential || s.grouped_gemm_streams > 0)) {
      // Sequential: every op of the block (GEMMs, activation, casts) becomes one kernel per expert,
      // one at a time. Grouped: one GEMM per expert, grouped_gemm_streams of them in flight.
      auto per_expert = [&](Op& op) {
        if (sequential) {
          op = one_at_a_time(op, batch);
        } else if (op.kind == OpKind::gemm) {
          op.concurrent = s.grouped_gemm_streams;
        }
      };
      std::for_each(mlp_fwd.begin() + static_cast<std::ptrdiff_t>(first_fwd), mlp_fwd.end(), per_expert);
      std::for_each(bwd.begin(), bwd.end(), per_expert);
    }
    mlp_bwd.insert(mlp_bwd.begin(), bwd.begin(), bwd.end());
  };
  Op router;
  std::size_t mlp_sync = 0;  // MoE: ops of mlp_fwd issued before the dispatcher's host synchronisation
  std::size_t experts_begin = 0, experts_end = 0;  // MoE: the routed experts' ops in mlp_fwd
  if (!mlp_part) {
    // an attention layer of a hybrid model: no MLP
  } else if (kind.moe && m.moe) {
    const double E = m.moe->num_experts;
    // Router logits on this rank's (sequence-parallel) tokens, kept in bf16 under fp8; then score
    // function + top-k over the experts (Megatron-Core TopKRouter, fp32).
    router = gemm("router", T_sp, E, h, eb);
    router.bf16_under_fp8 = true;
    mlp_fwd.push_back(router);
    mlp_fwd.push_back(elementwise("router_topk", T_sp * E, 4.0 + 4.0, 10));
    // Local experts: the tp*dp*cp ranks of a stage share the expert work evenly whatever the
    // EP x ETP split (memory_model's moe_tokens_per_gpu): top_k * T * etp / tp token-expert
    // pairs on 1/etp of each expert's FFN, times the busiest rank's imbalance. They run as a
    // grouped GEMM over the num_experts/ep local experts at the per-expert token count
    // (Megatron-Core TEGroupedMLP, --moe-grouped-gemm), or without it one expert after another,
    // each its own GEMMs, activation and casts (SequentialMLP, Megatron's default).
    const double pairs = T * m.moe->top_k * s.etp / tp * s.moe_imbalance;
    const double local = std::max(1.0, E / s.ep);
    const double fe = static_cast<double>(m.moe->expert_ffn_hidden_size) / s.etp;
    // A latent MoE (MoELayer fc1_latent_proj / fc2_latent_proj, replicated on every TP rank) projects
    // this rank's tokens down before the permutation and back up after the combine: the copies, the
    // dispatch and the experts carry the latent width.
    const double w = static_cast<double>(m.expert_width()), latent = m.moe->latent_size > 0 ? w : 0.0;
    Op latent_down, latent_up;
    if (latent > 0) {
      latent_down = gemm("moe_latent_down", T_sp, latent, h, eb);
      latent_up = gemm("moe_latent_up", T_sp, h, latent, eb);
      mlp_fwd.push_back(latent_down);
    }
    // Permute (gather the routed copies of each token into expert order) and unpermute (scatter
    // back and sum the top_k outputs, weighted by their probabilities, which Megatron-Core applies
    // in the expert activation): read and write h per pair (Megatron-Core moe_utils
    // permute/unpermute, fused in TE).
    mlp_fwd.push_back(elementwise("moe_permute", pairs * w, 2.0 * eb, 1));
    mlp_sync = mlp_fwd.size();
    // The all-to-all dispatcher's second permutation: received copies sorted by local expert after
    // the dispatch and back before the combine, one read and one write each way, and again for
    // the gradients (MoEAlltoAllTokenDispatcher sort_chunks_by_idxs, num_local_experts > 1).
    const bool sort_chunks = s.moe_sort_chunks && local > 1;
    if (sort_chunks) mlp_fwd.push_back(elementwise("moe_sort_chunks", pairs * w, 2.0 * eb, 0));
    // Copies of every routed token around the experts, each one read and one write:
    //  - grouped fp8/fp4 GEMMs need each expert's rows in multiples of 16-32: unless the dispatcher
    //    pads the segments itself (the flex dispatcher: DeepEP's fused permutation, HybridEP),
    //    TEGroupedMLP pads its input before fc1 and unpads its output after fc2, and the gradients
    //    both ways back (Fp8Padding/Fp8Unpadding, TE fused_multi_row_padding; Megatron-Core
    //    experts.py, moe_utils.skip_routed_expert_padding);
    //  - SequentialMLP concatenates the experts' outputs (torch.cat; its backward splits views) and
    //    backward the input gradients of the split tokens (SplitBackward); in fp8 each expert also
    //    pads its tokens (_pad_tensor_for_quantization: torch.cat) and slices its output, whose
    //    backward writes a padded gradient.
    const bool grouped_padding = s.moe_grouped_gemm && s.fp8_linears && !s.moe_dispatcher_pads;
    const bool sequential = !s.moe_grouped_gemm && local > 1;
    const bool pads = grouped_padding || (sequential && s.fp8_linears);
    const bool copies_out = grouped_padding || sequential;  // unpadding or concatenation forward, and the input's gradient back
    const double copy_bytes = 2.0 * eb;
    if (pads) mlp_fwd.push_back(elementwise("expert_input_padding", pairs * w, copy_bytes, 0));
    experts_begin = mlp_fwd.size() + (unfused_quantize ? 1 : 0);  // after quantize_fc1_input
    add_mlp("expert_fc1", "expert_activation", "expert_activation_bwd", "expert_fc2", pairs / local, fe, local, !s.moe_grouped_gemm, w);
    experts_end = mlp_fwd.size();
    if (m.add_linear_bias && s.moe_grouped_gemm) add_expert_bias_ops(mlp_fwd, mlp_bwd, pairs * w, local, eb);
    if (copies_out) mlp_fwd.push_back(elementwise(sequential ? "expert_output_concat" : "expert_output_unpadding", pairs * w, copy_bytes, 0));
    if (pads) mlp_bwd.insert(mlp_bwd.begin(), elementwise("expert_output_unpadding_bwd", pairs * w, copy_bytes, 0));
    if (copies_out) mlp_bwd.push_back(elementwise(sequential ? "expert_input_split_bwd" : "expert_input_padding_bwd", pairs * w, copy_bytes, 0));
    if (sort_chunks) mlp_fwd.push_back(elementwise("moe_unsort_chunks", pairs * w, 2.0 * eb, 0));
    mlp_fwd.push_back(elementwise("moe_unpermute", pairs * w, 2.0 * eb, 2));
    if (sort_chunks) mlp_bwd.insert(mlp_bwd.begin(), elementwise("moe_unsort_chunks_bwd", pairs * w, 2.0 * eb, 0));
    mlp_bwd.insert(mlp_bwd.begin(), elementwise("moe_unpermute_bwd", pairs * w, 3.0 * eb, 2));
    if (sort_chunks) mlp_bwd.push_back(elementwise("moe_sort_chunks_bwd", pairs * w, 2.0 * eb, 0));
    mlp_bwd.push_back(elementwise("moe_permute_bwd", pairs * w, 2.0 * eb, 1));
    if (latent > 0) {
      mlp_fwd.push_back(latent_up);
      std::vector<Op> up_bwd;
      add_gemm_backward(up_bwd, latent_up, eb);
      mlp_bwd.insert(mlp_bwd.begin(), up_bwd.begin(), up_bwd.end());
      add_gemm_backward(mlp_bwd, latent_down, eb);
    }
    if (m.moe->shared_expert_ffn_hidden_size > 0)
      add_mlp("shared_fc1", "shared_activation", "shared_activation_bwd", "shared_fc2", T, static_cast<double>(m.moe->shared_expert_ffn_hidden_size) / tp, 1);
    mlp_bwd.push_back(elementwise("router_topk_bwd", T_sp * E, 4.0 + 4.0, 6));
    add_gemm_backward(mlp_bwd, router, eb);
  } else {
    add_mlp("fc1", "activation", "activation_bwd", "fc2", T, static_cast<double>(m.ffn_hidden_size) / tp, 1);
  }
  // The dispatcher synchronises the host after the permutation (MoEAlltoAllTokenDispatcher's
  // before_ep_alltoall sync point): what follows it is issued only once the GPU has drained.
  if (mlp_sync > 0) L.forward_sync = F.size() + mlp_sync;
  if (experts_end > experts_begin) {
    L.experts_begin = F.size() + experts_begin;
    L.experts_end = F.size() + experts_end;
  }
  if (mlp_part) {
    F.insert(F.end(), mlp_fwd.begin(), mlp_fwd.end());
    F.push_back(elementwise("bias_dropout_add", T_sp * h, 3.0 * eb + dropout_mask));
    // Backward in reverse order; elementwise backward moves about twice the forward bytes.
    B.push_back(elementwise("bias_dropout_add_bwd", T_sp * h, 2.0 * eb + dropout_mask));
    B.insert(B.end(), mlp_bwd.begin(), mlp_bwd.end());
    B.push_back(elementwise("post_attn_norm_bwd", T_sp * h, 4.0 * eb, 8));
  }
  if (!attention_part) {
    L.selective_recompute = selective_recompute_ops(F, s.recompute_modules, m, kind);
    return L;
  }
  B.push_back(elementwise("bias_dropout_add_bwd", T_sp * h, 2.0 * eb + dropout_mask));
  fp8_cast(B, "fp8_cast_grad_out_proj_out", T * h);
  add_gemm_backward(B, proj, eb);
  B.insert(B.end(), attn_bwd.begin(), attn_bwd.end());
  // A norm's backward reads x and the output gradient and writes the input gradient (and gamma's);
  // rope's rotates the gradients of q and k back, one read and one write.
  auto backward_name = [](std::string_view fwd) {
    if (fwd == "rope") return "rope_bwd";
    if (fwd == "qk_norm") return "qk_norm_bwd";
    if (fwd == "q_latent_norm") return "q_latent_norm_bwd";
    if (fwd == "kv_latent_norm") return "kv_latent_norm_bwd";
    return "norm_bwd";
  };
  for (auto it = proj_norms.rbegin(); it != proj_norms.rend(); ++it) {
    const bool rope = std::string_view(it->name) == "rope";
    B.push_back(elementwise(backward_name(it->name), it->bytes / (2.0 * eb), (rope ? 2.0 : 4.0) * eb, rope ? 3 : 8));
  }
  for (auto it = proj_in.rbegin(); it != proj_in.rend(); ++it) {
    if (!it->bf16_under_fp8) fp8_cast(B, "fp8_cast_grad_qkv_out", it->m * it->n);
    add_gemm_backward(B, *it, eb);
  }
  B.push_back(elementwise("input_norm_bwd", T_sp * h, 4.0 * eb, 8));
  L.selective_recompute = selective_recompute_ops(F, s.recompute_modules, m, kind);
  return L;
}

LayerOps embedding_ops(const ModelSpec& m, const LayerShape& s) {
  LayerOps L;
  const int eb = s.element_bytes;
  const double T = local_tokens(s).all;
  const double h = static_cast<double>(m.hidden_size);
  // Vocab-parallel lookup: every TP rank writes its partial T x h rows (reduced by the TP collective).
  L.forward.push_back(elementwise("embedding", T * h, 2.0 * eb + (m.dropout ? 1 : 0)));
  L.backward.push_back(elementwise("embedding_bwd", T * h, 3.0 * eb));
  return L;
}

namespace {

// The loss over `logits` vocabulary-parallel logits of `eb` bytes, as each implementation passes
// over them (bytes per logit; the logits' rows are small next to them):
//  - eager, Megatron's VocabParallelCrossEntropy (tensor_parallel/cross_entropy.py): .float() copy
//    (eb + 4, none when they are fp32 already), max (4), subtract in place (8), exp in place (8),
//    sum (4), divide in place (8): six kernels; backward the in-place multiply by the loss's
//    gradient (8) and autograd's cast of the fp32 gradient back to the logits' dtype (4 + eb);
//  - jit_fused, Megatron --cross-entropy-loss-fusion (fusions/fused_cross_entropy.py, each step
//    compiled by jit_fuser = torch.compile): cast with max (eb + 4), subtract-exp-sum (8), divide
//    (8): three kernels; backward one kernel reading the fp32 softmax and writing the gradient in
//    the logits' dtype (4 + eb);
//  - single_pass, Transformer Engine's Triton parallel_cross_entropy (triton/cross_entropy.py):
//    an online-softmax pass (eb), then one pass writing loss and gradient over the logits in place
//    (2 eb); backward scales that gradient in place (2 eb).
void add_cross_entropy_ops(LayerOps& L, double logits, int eb, CrossEntropyKernel kernel) {
  const double cast = eb == 4 ? 0.0 : eb + 4.0;
  switch (kernel) {
    case CrossEntropyKernel::eager:
      L.forward.push_back(one_at_a_time(elementwise("cross_entropy", logits, cast + 4 + 8 + 8 + 4 + 8, 6), cast > 0 ? 6 : 5));
      L.backward.push_back(one_at_a_time(elementwise("cross_entropy_bwd", logits, 8 + cast, 3), cast > 0 ? 2 : 1));
      break;
    case CrossEntropyKernel::automatic:  // resolved by the predictor; counted as Megatron's fused loss
    case CrossEntropyKernel::jit_fused:
      L.forward.push_back(one_at_a_time(elementwise("cross_entropy", logits, (eb + 4.0) + 8 + 8, 6), 3));
      L.backward.push_back(elementwise("cross_entropy_bwd", logits, 4.0 + eb, 3));
      break;
    case CrossEntropyKernel::single_pass:
      L.forward.push_back(one_at_a_time(elementwise("cross_entropy", logits, 3.0 * eb, 6), 2));
      L.backward.push_back(elementwise("cross_entropy_bwd", logits, 2.0 * eb, 3));
      break;
  }
}

}  // namespace

LayerOps output_layer_ops(const ModelSpec& m, const LayerShape& s) {
  LayerOps L;
  const int eb = s.element_bytes;
  const auto [T, T_sp] = local_tokens(s);
  const double h = static_cast<double>(m.hidden_size);
  const double v = static_cast<double>(s.vocab > 0 ? s.vocab : m.vocab_size) / s.tp;
  // Sized up front: also keeps GCC 12 from a false -Wstringop-overflow on the regrowth path.
  L.forward.reserve(3);
  L.backward.reserve(4);
  L.forward.push_back(elementwise("final_norm", T_sp * h, 2.0 * eb, 5));
  Op logits = gemm("logits", T, v, h, eb);
  logits.bf16_under_fp8 = true;
  L.forward.push_back(logits);
  add_cross_entropy_ops(L, T * v, eb, s.cross_entropy);
  add_gemm_backward(L.backward, logits, eb);
  L.backward.push_back(elementwise("final_norm_bwd", T_sp * h, 4.0 * eb, 8));
  return L;
}

LayerOps mtp_head_ops(const ModelSpec& m, const LayerShape& s) {
  LayerOps L;
  const int eb = s.element_bytes;
  const auto [T, T_sp] = local_tokens(s);
  const double h = static_cast<double>(m.hidden_size);
  L.forward.reserve(3);
  L.backward.reserve(4);
  L.forward.push_back(elementwise("mtp_enorm", T_sp * h, 2.0 * eb, 5));
  L.forward.push_back(elementwise("mtp_hnorm", T_sp * h, 2.0 * eb, 5));
  // Column-parallel over TP: the concatenated 2h input, h/tp outputs per rank.
  const Op proj = gemm("mtp_eh_proj", T, h / s.tp, 2 * h, eb);
  L.forward.push_back(proj);
  add_gemm_backward(L.backward, proj, eb);
  L.backward.push_back(elementwise("mtp_hnorm_bwd", T_sp * h, 4.0 * eb, 8));
  L.backward.push_back(elementwise("mtp_enorm_bwd", T_sp * h, 4.0 * eb, 8));
  return L;
}

double layer_model_flops_fwd(const ModelSpec& m, double tokens, double seq) {
  const int n = std::max(1, m.num_layers);
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += layer_model_flops_fwd(m, tokens, seq, m.layer_kind(i));
  return sum / n;
}

double layer_model_flops_fwd(const ModelSpec& m, double tokens, double seq, LayerKind kind) {
  const double h = static_cast<double>(m.hidden_size);
  if (kind.has_gdn()) {
    if (!m.gdn) return 0;
    // Megatron's gdn_layer_flops (training.py): in_proj, conv1d, 4 dv^2 per value head for the delta
    // rule, out_proj; each term twice (multiply-add).
    const GdnSpec& g = *m.gdn;
    const double dv = static_cast<double>(g.value_head_dim);
    return 2.0 * tokens *
           (h * static_cast<double>(g.in_proj_width()) + g.conv_kernel * static_cast<double>(g.conv_channels()) +
            g.num_value_heads * dv * dv * 4 + h * static_cast<double>(g.v_dim()));
  }
  if (kind.has_mamba()) {
    if (!m.mamba) return 0;
    // Megatron's mamba_layer_flops (training.py): in_proj and out_proj, and 7 d_inner N per token
    // for the scan. Megatron takes d_inner = 2h whatever the heads; here it is heads x head_dim.
    const double d_in = static_cast<double>(m.mamba->d_inner());
    return 2.0 * tokens * h * (static_cast<double>(m.mamba->in_proj_width()) + d_in) + 7.0 * tokens * d_in * static_cast<double>(m.mamba->state_dim);
  }
  const double mlp_mult = m.gated_mlp() ? 3 : 2;
  double mlp = mlp_mult * h * static_cast<double>(m.ffn_hidden_size);
  if (kind.moe && m.moe)
    mlp = mlp_mult * (static_cast<double>(m.expert_width()) * static_cast<double>(m.moe->expert_ffn_hidden_size) * m.moe->top_k +
                      h * static_cast<double>(m.moe->shared_expert_ffn_hidden_size)) +
          h * m.moe->num_experts + 2.0 * h * static_cast<double>(m.moe->latent_size);  // latent down and up (Megatron's moe_layer_flops)
  // Attention matmul weights (MLA's down/up projections included), excluding biases and norms.
  double attn_params = 0, qk_dim = static_cast<double>(m.head_dim()), v_dim = qk_dim;
  if (m.mla) {
    const double H = m.num_attention_heads;
    const double ql = static_cast<double>(m.mla->q_lora_rank), kl = static_cast<double>(m.mla->kv_lora_rank);
    qk_dim = static_cast<double>(m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim);
    v_dim = static_cast<double>(m.mla->v_head_dim);
    attn_params = (ql > 0 ? h * ql + ql * H * qk_dim : h * H * qk_dim) +
                  h * (kl + static_cast<double>(m.mla->qk_rope_head_dim)) +
                  kl * H * (static_cast<double>(m.mla->qk_nope_head_dim) + v_dim) + H * v_dim * h;
  } else {
    const double qh = static_cast<double>(m.q_hidden()), kv = static_cast<double>(m.kv_hidden());
    attn_params = h * (qh + 2 * kv) + qh * h + (m.attention_output_gate ? h * qh : 0.0);
  }
  // Scores and values over the full (non-causal-skipped) sequence, or the window: 2 matmuls.
  const double keys = kind.sliding_window && m.sliding_window > 0 ? std::min(seq, static_cast<double>(m.sliding_window)) : seq;
  double attn_core = 2.0 * tokens * keys * m.num_attention_heads * (qk_dim + v_dim);
  if (m.dsa && m.mla) {
    // DeepSeek Sparse Attention, in the same convention: each query's top-k keys in the absorbed
    // form (latent + rope scores, latent values), and the indexer's projections and its scores of
    // every key, in the share of layers that run it. Megatron's num_floating_point_operations
    // counts dense MLA here, which at 128k tokens is several times what a DSA layer computes.
    const double kl = static_cast<double>(m.mla->kv_lora_rank), rope = static_cast<double>(m.mla->qk_rope_head_dim);
    const double idx = static_cast<double>(m.dsa->index_heads * m.dsa->index_head_dim);
    attn_core = 2.0 * tokens * std::min(seq, static_cast<double>(m.dsa->index_topk)) * m.num_attention_heads * (2 * kl + rope) +
                m.indexer_share() * 2.0 * tokens * seq * idx;
    attn_params += m.indexer_params() * m.indexer_share();
  }
  if (!kind.has_mlp()) return 2.0 * attn_params * tokens + attn_core;
  if (!kind.has_attention()) return 2.0 * mlp * tokens;
  return 2.0 * (attn_params + mlp) * tokens + attn_core;
}

}  // namespace strata
