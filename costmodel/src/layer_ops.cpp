#include "costmodel/layer_ops.h"

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

// The backward of C = A B is dA = dC B^T (m x k, inner n) and dB = A^T dC (k x n, inner m).
void add_gemm_backward(std::vector<Op>& bwd, const Op& f, int eb) {
  Op data_grad = gemm(f.name, f.m, f.k, f.n, eb, f.batch);
  Op weight_grad = gemm(f.name, f.k, f.n, f.m, eb, f.batch);
  data_grad.bf16_under_fp8 = weight_grad.bf16_under_fp8 = f.bf16_under_fp8;
  weight_grad.weight_grad = true;
  bwd.push_back(data_grad);
  bwd.push_back(weight_grad);
}

}  // namespace

double total_flops(const std::vector<Op>& ops) {
  double f = 0;
  for (const auto& op : ops) f += op.flops;
  return f;
}

LayerOps decoder_layer_ops(const ModelSpec& m, const LayerShape& s) {
  LayerOps L;
  const int eb = s.element_bytes;
  const double tp = s.tp;
  const double b = static_cast<double>(s.micro_batch);
  const double seq_full = static_cast<double>(s.seq);
  const double seq = seq_full / s.cp;  // local query tokens per CP rank
  const double T = b * seq;            // tokens per GPU
  const double h = static_cast<double>(m.hidden_size);
  const double kv = static_cast<double>(m.kv_hidden());
  const double heads = m.num_attention_heads / tp;
  const double d = static_cast<double>(m.head_dim());
  // With sequence parallelism the norms/dropouts run on T/tp tokens (Korthikanti 2022, §4.2.2).
  const double T_sp = s.sequence_parallel ? T / tp : T;
  const double dropout_mask = m.dropout ? 1.0 : 0.0;  // 1-byte mask per element

  auto& F = L.forward;
  auto& B = L.backward;
  // Norm: read x, write y (+ stats); backward reads x, y-grad, writes x-grad (+ gamma grad).
  F.push_back(elementwise("input_norm", T_sp * h, 2.0 * eb, 5));
  Op qkv = gemm("qkv_proj", T, (h + 2 * kv) / tp, h, eb);
  F.push_back(qkv);

  // Attention core. Causal masking halves the work only for kernels that skip masked tiles
  // (FlashAttention); unfused Megatron attention computes the full s x s scores then masks.
  std::vector<Op> attn_fwd, attn_bwd;
  if (s.flash_attention) {
    // Per CP rank: local queries attend to the whole (ring-exchanged) sequence, load-balanced.
    Op a;
    a.name = "flash_attention";
    a.kind = OpKind::attention;
    a.m = seq;
    a.n = seq_full;
    a.k = d;
    a.batch = b * heads;
    a.flops = 4.0 * b * heads * seq * seq_full * d * 0.5;  // QK^T and PV, causal half (Dao 2022)
    a.key_loop_scaling = s.attention_scales_with_seq;
    a.bytes = (T * (h + 2 * kv) / tp + T * h / tp) * eb;
    attn_fwd.push_back(a);
    Op ab = a;
    ab.name = "flash_attention_bwd";
    ab.flops = a.flops * 2.5;  // 5 matmuls in backward vs 2 forward (FlashAttention-2 §3.2)
    ab.bytes = a.bytes * 2.0;
    attn_bwd.push_back(ab);
  } else {
    const double scores = b * heads * seq * seq_full;
    Op qk = gemm("attn_scores", seq, seq_full, d, eb, b * heads);
    Op sm = elementwise("softmax", scores, (2.0 + dropout_mask) * eb, 5);  // fused scale-mask-softmax
    if (m.dropout) sm.bytes += scores * (eb + 1);                        // dropout output + mask
    Op av = gemm("attn_values", seq, d, seq_full, eb, b * heads);
    attn_fwd = {qk, sm, av};
    add_gemm_backward(attn_bwd, av, eb);
    attn_bwd.push_back(elementwise("softmax_bwd", scores, 3.0 * eb + dropout_mask, 4));
    add_gemm_backward(attn_bwd, qk, eb);
  }
  F.insert(F.end(), attn_fwd.begin(), attn_fwd.end());
  L.selective_recompute = attn_fwd;

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
  const double cast_bytes = [&] {
    switch (s.recipe) {
      case LowPrecisionRecipe::delayed: return eb + 2.0;
      case LowPrecisionRecipe::tensorwise: return 2.0 * eb + 2.0;
      case LowPrecisionRecipe::blockwise: return eb + 2.0 + 8.0 / 128;
      case LowPrecisionRecipe::mxfp8: return eb + 2.0 + 2.0 / 32;
      case LowPrecisionRecipe::nvfp4: return 2.0 * eb + 1.0 + 2.0 / 16;
    }
    return eb + 2.0;
  }();
  auto fp8_cast = [&](std::vector<Op>& ops, const char* name, double elements) {
    if (s.fp8_linears) ops.push_back(elementwise(name, elements, cast_bytes, 2));
  };
  // The norms and the activation function write quantized outputs directly only for delayed
  // scaling and MXFP8 (fused norm/activation + quantize kernels); with current scaling, blockwise
  // and NVFP4 Transformer Engine computes them in bf16 and quantizes in a separate pass (the
  // "unfused" path of transformer_engine/pytorch/csrc/extensions/normalization.cpp and
  // activation.cpp), since the scale needs the finished tensor.
  const bool unfused_quantize = s.fp8_linears && (s.recipe == LowPrecisionRecipe::tensorwise ||
                                                  s.recipe == LowPrecisionRecipe::blockwise ||
                                                  s.recipe == LowPrecisionRecipe::nvfp4);
  if (unfused_quantize) F.insert(F.begin() + 1, elementwise("quantize_qkv_input", T_sp * h, cast_bytes, 2));  // after input_norm
  Op proj = gemm("out_proj", T, h, h / tp, eb);
  fp8_cast(F, "fp8_cast_attention_out", T * h / tp);
  F.push_back(proj);
  F.push_back(elementwise("bias_dropout_add", T_sp * h, 3.0 * eb + dropout_mask));
  F.push_back(elementwise("post_attn_norm", T_sp * h, 2.0 * eb, 5));

  // MLP (dense or the local experts of an MoE layer).
  double f = static_cast<double>(m.ffn_hidden_size);
  double mlp_tokens = T;
  Op router;
  bool moe = m.moe.has_value();
  if (moe) {
    f = static_cast<double>(m.moe->expert_ffn_hidden_size);
    // Each token visits top_k experts; with EP, a rank serves its num_experts/ep experts on the
    // tokens routed to them, which on average is T*top_k tokens per rank.
    mlp_tokens = T * m.moe->top_k;
    router = gemm("router", T, m.moe->num_experts, h, eb);
    router.bf16_under_fp8 = true;
    F.push_back(router);
  }
  const bool swiglu = m.activation == Activation::swiglu;
  Op fc1 = gemm("fc1", mlp_tokens, (swiglu ? 2 : 1) * f / tp, h, eb);
  if (unfused_quantize) F.push_back(elementwise("quantize_fc1_input", (moe ? mlp_tokens : T_sp) * h, cast_bytes, 2));
  F.push_back(fc1);
  F.push_back(elementwise("activation", mlp_tokens * f / tp, (swiglu ? 3.0 : 2.0) * eb, 8));
  if (unfused_quantize) F.push_back(elementwise("quantize_fc2_input", mlp_tokens * f / tp, cast_bytes, 2));
  Op fc2 = gemm("fc2", mlp_tokens, h, f / tp, eb);
  F.push_back(fc2);
  F.push_back(elementwise("bias_dropout_add", T_sp * h, 3.0 * eb + dropout_mask));

  // Backward in reverse order; elementwise backward moves about twice the forward bytes.
  B.push_back(elementwise("bias_dropout_add_bwd", T_sp * h, 2.0 * eb + dropout_mask));
  fp8_cast(B, "fp8_cast_grad_fc2_out", mlp_tokens * h);
  add_gemm_backward(B, fc2, eb);
  B.push_back(elementwise("activation_bwd", mlp_tokens * f / tp, (swiglu ? 5.0 : 3.0) * eb, 8));
  fp8_cast(B, "fp8_cast_grad_fc1_out", mlp_tokens * (swiglu ? 2 : 1) * f / tp);
  add_gemm_backward(B, fc1, eb);
  if (moe) add_gemm_backward(B, router, eb);
  B.push_back(elementwise("post_attn_norm_bwd", T_sp * h, 4.0 * eb, 8));
  B.push_back(elementwise("bias_dropout_add_bwd", T_sp * h, 2.0 * eb + dropout_mask));
  fp8_cast(B, "fp8_cast_grad_out_proj_out", T * h);
  add_gemm_backward(B, proj, eb);
  B.insert(B.end(), attn_bwd.begin(), attn_bwd.end());
  fp8_cast(B, "fp8_cast_grad_qkv_out", T * (h + 2 * kv) / tp);
  add_gemm_backward(B, qkv, eb);
  B.push_back(elementwise("input_norm_bwd", T_sp * h, 4.0 * eb, 8));
  return L;
}

LayerOps embedding_ops(const ModelSpec& m, const LayerShape& s) {
  LayerOps L;
  const int eb = s.element_bytes;
  const double T = static_cast<double>(s.micro_batch) * static_cast<double>(s.seq) / s.cp;
  const double h = static_cast<double>(m.hidden_size);
  // Vocab-parallel lookup: every TP rank writes its partial T x h rows (reduced by the TP collective).
  L.forward.push_back(elementwise("embedding", T * h, 2.0 * eb + (m.dropout ? 1 : 0)));
  L.backward.push_back(elementwise("embedding_bwd", T * h, 3.0 * eb));
  return L;
}

LayerOps output_layer_ops(const ModelSpec& m, const LayerShape& s) {
  LayerOps L;
  const int eb = s.element_bytes;
  const double T = static_cast<double>(s.micro_batch) * static_cast<double>(s.seq) / s.cp;
  const double T_sp = s.sequence_parallel ? T / s.tp : T;
  const double h = static_cast<double>(m.hidden_size);
  const double v = static_cast<double>(s.vocab > 0 ? s.vocab : m.vocab_size) / s.tp;
  // Sized up front: also keeps GCC 12 from a false -Wstringop-overflow on the regrowth path.
  L.forward.reserve(3);
  L.backward.reserve(4);
  L.forward.push_back(elementwise("final_norm", T_sp * h, 2.0 * eb, 5));
  Op logits = gemm("logits", T, v, h, eb);
  logits.bf16_under_fp8 = true;
  L.forward.push_back(logits);
  // Vocab-parallel cross entropy in fp32: read logits, max/sum-exp passes, write fp32 softmax.
  L.forward.push_back(elementwise("cross_entropy", T * v, eb + 4.0 + 4.0, 6));
  L.backward.push_back(elementwise("cross_entropy_bwd", T * v, 4.0 + eb, 3));
  add_gemm_backward(L.backward, logits, eb);
  L.backward.push_back(elementwise("final_norm_bwd", T_sp * h, 4.0 * eb, 8));
  return L;
}

double layer_model_flops_fwd(const ModelSpec& m, double tokens, double seq) {
  const double h = static_cast<double>(m.hidden_size);
  const double kv = static_cast<double>(m.kv_hidden());
  double f = static_cast<double>(m.ffn_hidden_size);
  double mlp_mult = m.activation == Activation::swiglu ? 3 : 2;
  double mlp = mlp_mult * h * f;
  if (m.moe) mlp = mlp_mult * h * static_cast<double>(m.moe->expert_ffn_hidden_size) * m.moe->top_k + h * m.moe->num_experts;
  double matmul_params = h * (h + 2 * kv) + h * h + mlp;
  return 2.0 * matmul_params * tokens + 4.0 * tokens * seq * h;
}

}  // namespace strata
