#include <doctest/doctest.h>

#include "costmodel/kernel_model.h"
#include "costmodel/json_reader.h"
#include "costmodel/layer_ops.h"
#include "test_util.h"

using namespace strata;

TEST_SUITE("costmodel") {
TEST_CASE("decoder_layer_ops: forward FLOPs equal 24bsh^2 + 4bs^2h for MHA with a 4h GELU MLP") {
  // Narayanan et al. SC21 eq. (3): a layer's forward is 24bsh^2 + 4bs^2h FLOPs (no causal skipping).
  ModelSpec m = test::catalog().model("gpt3-175b");
  for (int tp : {1, 8}) {
    LayerShape s;
    s.micro_batch = 2;
    s.seq = 2048;
    s.tp = tp;
    s.flash_attention = false;
    LayerOps ops = decoder_layer_ops(m, s);
    double gemm_flops = 0;
    for (const auto& op : ops.forward)
      if (op.kind != OpKind::elementwise) gemm_flops += op.flops;
    const double b = 2, sq = 2048, h = 12288;
    CHECK(gemm_flops * tp == doctest::Approx(24 * b * sq * h * h + 4 * b * sq * sq * h).epsilon(1e-12));
    // Backward GEMMs are exactly twice the forward GEMMs.
    double bwd = 0;
    for (const auto& op : ops.backward)
      if (op.kind != OpKind::elementwise) bwd += op.flops;
    CHECK(bwd == doctest::Approx(2 * gemm_flops).epsilon(1e-12));
  }
}

TEST_CASE("decoder_layer_ops: flash attention skips the masked half of causal attention") {
  ModelSpec m = test::catalog().model("gpt3-175b");
  LayerShape s;
  s.seq = 4096;
  s.flash_attention = true;
  double attn = 0;
  for (const auto& op : decoder_layer_ops(m, s).forward)
    if (op.kind == OpKind::attention) attn += op.flops;
  CHECK(attn == doctest::Approx(2.0 * 4096 * 4096 * 12288));
}

TEST_CASE("decoder_layer_ops: context parallelism splits queries, not the keys they attend to") {
  ModelSpec m = test::catalog().model("llama3-70b");
  LayerShape s;
  s.seq = 8192;
  double full = total_flops(decoder_layer_ops(m, s).forward);
  s.cp = 4;
  double shard = total_flops(decoder_layer_ops(m, s).forward);
  CHECK(shard * 4 == doctest::Approx(full).epsilon(1e-9));
}

TEST_CASE("decoder_layer_ops: a model with dropout drops attention probabilities inside the fused kernel") {
  LayerShape s;
  s.seq = 2048;
  for (const char* name : {"gpt3-175b", "llama3-8b"}) {
    const ModelSpec m = test::catalog().model(name);
    CAPTURE(name);
    const LayerOps ops = decoder_layer_ops(m, s);
    for (const auto* list : {&ops.forward, &ops.backward})
      for (const auto& op : *list)
        if (op.kind == OpKind::attention) CHECK(op.attention_dropout == m.dropout);
  }
  CHECK(test::catalog().model("gpt3-175b").dropout);
  CHECK_FALSE(test::catalog().model("llama3-8b").dropout);
}

TEST_CASE("decoder_layer_ops: a CP ring runs the attention one K/V block per step and merges the steps") {
  ModelSpec m = test::catalog().model("llama3-8b");
  LayerShape s;
  s.seq = 8192;
  s.cp = 2;
  auto named = [](const std::vector<Op>& ops, std::string_view name) {
    for (const auto& op : ops)
      if (op.name == name) return op;
    return Op{};
  };
  // All-to-all CP (cp_ring 1): one kernel over the whole sequence, nothing to merge.
  const LayerOps a2a = decoder_layer_ops(m, s);
  CHECK(named(a2a.forward, "flash_attention").kernel_keys_per_query == 0);
  CHECK(named(a2a.forward, "cp_out_correction").bytes == 0);
  // The p2p ring: each step's kernel loops over one rank's 8192/2 keys (as a causal kernel over
  // them), and every step's output and gradients are merged into the running ones.
  s.cp_ring = 2;
  const LayerOps ring = decoder_layer_ops(m, s);
  const double T = 8192.0 / 2, q = 4096, kv = 2 * 1024.0, eb = 2;
  CHECK(named(ring.forward, "flash_attention").kernel_keys_per_query == doctest::Approx(8192.0 / 2 / 2));
  const Op merge = named(ring.forward, "cp_out_correction"), accumulate = named(ring.backward, "cp_grad_accumulation");
  CHECK(merge.bytes == doctest::Approx(3 * eb * T * q));
  CHECK(accumulate.bytes == doctest::Approx(3 * eb * T * (q + kv)));
  CHECK(merge.batch == 2);
  CHECK(merge.concurrent == 1);
  // The same FLOPs either way.
  CHECK(total_flops(ring.forward) - merge.flops == doctest::Approx(total_flops(a2a.forward)).epsilon(1e-12));
  // Selective recompute of the core attention repeats the merge.
  CHECK(named(ring.selective_recompute, "cp_out_correction").bytes == merge.bytes);
}

TEST_CASE("layer_model_flops_fwd matches the closed form for GQA SwiGLU models") {
  ModelSpec m = test::catalog().model("llama3-70b");
  const double h = 8192, kv = 1024, f = 28672, T = 8192;
  double expected = 2 * T * (h * (h + 2 * kv) + h * h + 3 * h * f) + 4 * T * T * h;
  CHECK(layer_model_flops_fwd(m, T, T) == doctest::Approx(expected));
}
TEST_CASE("decoder_layer_ops: SwiGLU MLP forward FLOPs are 6*T*h*f") {
  // Gate and up projections (2 x 2Thf) plus the down projection (2Thf) (Shazeer 2020, GLU variants).
  ModelSpec m = test::catalog().model("llama2-7b");
  for (int tp : {1, 2, 8}) {
    CAPTURE(tp);
    LayerShape s;
    s.micro_batch = 2;
    s.seq = 4096;
    s.tp = tp;
    double mlp = 0;
    for (const auto& op : decoder_layer_ops(m, s).forward)
      if (op.kind == OpKind::gemm && (std::string(op.name) == "fc1" || std::string(op.name) == "fc2")) mlp += op.flops;
    const double T = 2 * 4096, h = 4096, f = 11008;
    CHECK(mlp * tp == doctest::Approx(6 * T * h * f).epsilon(1e-12));
  }
}

TEST_CASE("decoder_layer_ops: GQA QKV projection FLOPs are 2*T*h*(h + 2*kv)") {
  // Llama 3 70B: 64 query heads and 8 KV groups of head dim 128, so kv = 1024.
  ModelSpec m = test::catalog().model("llama3-70b");
  LayerShape s;
  s.seq = 8192;
  s.tp = 8;
  double qkv = 0;
  for (const auto& op : decoder_layer_ops(m, s).forward)
    if (std::string(op.name) == "qkv_proj") qkv += op.flops;
  const double T = 8192, h = 8192, kv = 1024;
  CHECK(qkv * 8 == doctest::Approx(2 * T * h * (h + 2 * kv)).epsilon(1e-12));
  // An MHA model of the same width would spend (h + 2h) / (h + 2kv) = 2.4x as much.
  ModelSpec mha = m;
  mha.num_query_groups = 64;
  double qkv_mha = 0;
  for (const auto& op : decoder_layer_ops(mha, s).forward)
    if (std::string(op.name) == "qkv_proj") qkv_mha += op.flops;
  CHECK(qkv_mha / qkv == doctest::Approx(3.0 * h / (h + 2 * kv)).epsilon(1e-12));
}

TEST_CASE("decoder_layer_ops: backward GEMMs are twice the forward GEMMs for SwiGLU/GQA too") {
  ModelSpec m = test::catalog().model("llama3-70b");
  LayerShape s;
  s.seq = 8192;
  s.tp = 8;
  s.sequence_parallel = true;
  LayerOps ops = decoder_layer_ops(m, s);
  double f = 0, b = 0;
  for (const auto& op : ops.forward)
    if (op.kind == OpKind::gemm) f += op.flops;
  for (const auto& op : ops.backward)
    if (op.kind == OpKind::gemm) b += op.flops;
  CHECK(b == doctest::Approx(2 * f).epsilon(1e-12));
  // Flash attention backward is 2.5x its forward (5 matmuls vs 2, Dao 2023 §3.2).
  double af = 0, ab = 0;
  for (const auto& op : ops.forward)
    if (op.kind == OpKind::attention) af += op.flops;
  for (const auto& op : ops.backward)
    if (op.kind == OpKind::attention) ab += op.flops;
  CHECK(ab == doctest::Approx(2.5 * af).epsilon(1e-12));
  // Selective recompute re-runs exactly the attention core.
  CHECK(total_flops(ops.selective_recompute) == doctest::Approx(af).epsilon(1e-12));
}

TEST_CASE("decoder_layer_ops: fp8 linears add Transformer Engine's cast-transpose of each GEMM input it does not fuse") {
  // Llama-3 70B (GQA, SwiGLU) at tp 8: forward casts the attention output (the norms and the
  // activation write fp8 themselves), backward casts the output gradient of all four linears;
  // each element is read in bf16 and written as fp8 plus its fp8 transpose: 4 bytes.
  const ModelSpec m = test::catalog().model("llama3-70b");
  LayerShape s;
  s.micro_batch = 1;
  s.seq = 8192;
  s.tp = 8;
  s.sequence_parallel = true;
  const LayerOps plain = decoder_layer_ops(m, s);
  s.fp8_linears = true;
  const LayerOps fp8 = decoder_layer_ops(m, s);
  auto cast_bytes = [](const std::vector<Op>& ops) {
    double b = 0;
    for (const auto& op : ops)
      if (std::string_view(op.name).starts_with("fp8_cast")) b += op.bytes;
    return b;
  };
  const double T = 8192, h = 8192, kv = 1024, f = 28672, tp = 8;
  CHECK(cast_bytes(plain.forward) == 0);
  CHECK(cast_bytes(fp8.forward) == doctest::Approx(4 * T * h / tp).epsilon(1e-12));
  CHECK(cast_bytes(fp8.backward) == doctest::Approx(4 * T * (h + 2 * f / tp + h + (h + 2 * kv) / tp)).epsilon(1e-12));
  CHECK(fp8.forward.size() == plain.forward.size() + 1);
  CHECK(fp8.backward.size() == plain.backward.size() + 4);
  CHECK(total_flops(fp8.forward) - total_flops(plain.forward) == doctest::Approx(2 * T * h / tp).epsilon(1e-12));
}

TEST_CASE("output_layer_ops: logits GEMM is 2*T*h*V/t forward and twice that backward") {
  ModelSpec m = test::catalog().model("gpt3-175b");
  LayerShape s;
  s.seq = 2048;
  s.tp = 8;
  LayerOps ops = output_layer_ops(m, s);
  double f = 0, b = 0;
  for (const auto& op : ops.forward)
    if (op.kind == OpKind::gemm) f += op.flops;
  for (const auto& op : ops.backward)
    if (op.kind == OpKind::gemm) b += op.flops;
  CHECK(f == doctest::Approx(2.0 * 2048 * 12288 * 50257 / 8).epsilon(1e-12));
  CHECK(b == doctest::Approx(2 * f).epsilon(1e-12));
  // The framework's padded vocabulary, when given, replaces the model's rows.
  s.vocab = 51200;
  double padded = 0;
  for (const auto& op : output_layer_ops(m, s).forward)
    if (op.kind == OpKind::gemm) padded += op.flops;
  CHECK(padded == doctest::Approx(2.0 * 2048 * 12288 * 51200 / 8).epsilon(1e-12));
  // Megatron's output layer is not a Transformer Engine linear: it stays in bf16 under fp8, and so
  // do its backward GEMMs.
  for (const auto& op : ops.forward)
    if (op.kind == OpKind::gemm) CHECK(op.bf16_under_fp8);
  for (const auto& op : ops.backward)
    if (op.kind == OpKind::gemm) CHECK(op.bf16_under_fp8);
}

TEST_CASE("output_layer_ops: the loss passes over the logits as often as its implementation does") {
  ModelSpec m = test::catalog().model("llama3-8b");
  LayerShape s;
  s.seq = 4096;
  s.vocab = 128256;
  const double logits = 4096.0 * 128256;
  auto loss = [&](CrossEntropyKernel k, int eb) {
    s.cross_entropy = k;
    s.element_bytes = eb;
    const LayerOps ops = output_layer_ops(m, s);
    const Op* fwd = nullptr;
    const Op* bwd = nullptr;
    for (const auto& op : ops.forward)
      if (std::string_view(op.name) == "cross_entropy") fwd = &op;
    for (const auto& op : ops.backward)
      if (std::string_view(op.name) == "cross_entropy_bwd") bwd = &op;
    REQUIRE(fwd != nullptr);
    REQUIRE(bwd != nullptr);
    return std::pair{*fwd, *bwd};
  };
  // Megatron's eager loss: the fp32 copy, then max, subtract, exp, sum and divide, six kernels;
  // backward the in-place multiply and autograd's cast back to bf16.
  const auto [eager_f, eager_b] = loss(CrossEntropyKernel::eager, 2);
  CHECK(eager_f.bytes == doctest::Approx(logits * (6 + 4 + 8 + 8 + 4 + 8)));
  CHECK(eager_f.batch == 6);
  CHECK(eager_b.bytes == doctest::Approx(logits * (8 + 6)));
  // With fp32 logits there is no copy to make: five kernels, no cast back.
  const auto [fp32_f, fp32_b] = loss(CrossEntropyKernel::eager, 4);
  CHECK(fp32_f.bytes == doctest::Approx(logits * 32));
  CHECK(fp32_f.batch == 5);
  CHECK(fp32_b.bytes == doctest::Approx(logits * 8));
  // Megatron's fused loss keeps the fp32 passes but compiles them into three kernels and one back.
  const auto [jit_f, jit_b] = loss(CrossEntropyKernel::jit_fused, 2);
  CHECK(jit_f.bytes == doctest::Approx(logits * 22));
  CHECK(jit_f.batch == 3);
  CHECK(jit_b.bytes == doctest::Approx(logits * 6));
  // Transformer Engine's: read the bf16 logits twice and write the gradient over them; backward
  // scales it in place.
  const auto [te_f, te_b] = loss(CrossEntropyKernel::single_pass, 2);
  CHECK(te_f.bytes == doctest::Approx(logits * 6));
  CHECK(te_b.bytes == doctest::Approx(logits * 4));
  // Timed on one GPU, each is faster than the one before it.
  const KernelModel km(test::catalog().gpu("h100"), Precision::bf16, KernelCoefficients{});
  auto t = [&](const std::pair<Op, Op>& ops) { return km.time(ops.first).time_s + km.time(ops.second).time_s; };
  CHECK(t(loss(CrossEntropyKernel::eager, 2)) > 1.5 * t(loss(CrossEntropyKernel::jit_fused, 2)));
  CHECK(t(loss(CrossEntropyKernel::jit_fused, 2)) > 2 * t(loss(CrossEntropyKernel::single_pass, 2)));
}
}

TEST_SUITE("costmodel") {
namespace {
double gemm_flops_named(const std::vector<Op>& ops, std::initializer_list<const char*> names) {
  double f = 0;
  for (const auto& op : ops)
    for (const char* n : names)
      if (std::string_view(op.name) == n && op.kind == OpKind::gemm) f += op.flops;
  return f;
}
}  // namespace

TEST_CASE("decoder_layer_ops: a hybrid model's layers hold one part each, a Mamba-2 layer as Megatron-Core runs it") {
  const std::string path = test::data_file("hf/nemotron-h-8b.json");
  const ModelSpec m = model_from_json(load_json_file(path), path);
  LayerShape s;
  s.seq = 8192;
  s.tp = 2;
  const double T = 8192, h = 4096, tp = 2;
  auto has = [](const std::vector<Op>& ops, std::string_view name) {
    return std::any_of(ops.begin(), ops.end(), [&](const Op& op) { return name == op.name; });
  };
  const LayerOps mamba = decoder_layer_ops(m, s, m.layer_kind(0)), mlp = decoder_layer_ops(m, s, m.layer_kind(1)),
                 attention = decoder_layer_ops(m, s, m.layer_kind(7));
  CHECK(has(attention.forward, "qkv_proj"));
  CHECK_FALSE(has(attention.forward, "fc1"));
  CHECK_FALSE(has(attention.forward, "rope"));  // Nemotron-H's attention takes no positions
  CHECK(has(mlp.forward, "fc1"));
  CHECK_FALSE(has(mlp.forward, "qkv_proj"));
  CHECK_FALSE(has(mamba.forward, "qkv_proj"));
  CHECK_FALSE(has(mamba.forward, "fc1"));
  // in_proj to z, x, B, C, dt of this rank's heads and out_proj back, split over TP.
  CHECK(gemm_flops_named(mamba.forward, {"mamba_in_proj"}) == doctest::Approx(2 * T * h * (2 * 8192 + 2 * 8 * 128 + 128) / tp).epsilon(1e-12));
  CHECK(gemm_flops_named(mamba.forward, {"mamba_out_proj"}) == doctest::Approx(2 * T * 8192 * h / tp).epsilon(1e-12));
  // The SSD scan's products against Megatron's estimate of the scan (training.py mamba_layer_flops:
  // 7 d_inner N per token): the same order, Megatron's a rough count ("should be updated based on
  // new SSD kernels").
  const double scan = gemm_flops_named(mamba.forward, {"mamba_chunk_state", "mamba_bmm_chunk", "mamba_chunk_scan", "mamba_chunk_scan_states"});
  CHECK(scan * tp > 0.5 * 7 * T * 8192 * 128);
  CHECK(scan * tp < 1.5 * 7 * T * 8192 * 128);
  // Backward: both gradient products of every forward product, and the chunk states recomputed.
  double fwd = 0, bwd = 0;
  for (const Op& op : mamba.forward)
    if (op.kind == OpKind::gemm) fwd += op.flops;
  for (const Op& op : mamba.backward)
    if (op.kind == OpKind::gemm) bwd += op.flops;
  const double recomputed = gemm_flops_named(mamba.forward, {"mamba_chunk_state"});
  CHECK(bwd == doctest::Approx(2 * fwd + recomputed).epsilon(1e-12));
  CHECK(mamba.selective_recompute.empty());
  // Model FLOPs: Megatron's hybrid count, exact here since the 8B's d_inner is 2h as Megatron assumes.
  CHECK(layer_model_flops_fwd(m, T, T, m.layer_kind(0)) ==
        doctest::Approx(2 * T * h * (2 * 8192 + 2 * 8 * 128 + 128) + 7 * T * 8192 * 128 + 2 * T * 8192 * h).epsilon(1e-12));
  CHECK(layer_model_flops_fwd(m, T, T, m.layer_kind(1)) == doctest::Approx(2 * 2 * T * h * 21504).epsilon(1e-12));
}

TEST_CASE("decoder_layer_ops: a gated DeltaNet layer and gated attention (Qwen3-Next)") {
  const std::string path = test::data_file("hf/qwen3-next-80b-a3b.json");
  const ModelSpec m = model_from_json(load_json_file(path), path);
  LayerShape s;
  s.seq = 4096;
  s.tp = 2;
  const double T = 4096, h = 2048, tp = 2;
  const LayerOps gdn = decoder_layer_ops(m, s, m.layer_kind(0)), attention = decoder_layer_ops(m, s, m.layer_kind(6));
  REQUIRE(m.layer_kind(0).has_gdn());
  REQUIRE(m.layer_kind(6).part == Sublayer::attention);
  CHECK(gemm_flops_named(gdn.forward, {"gdn_in_proj"}) == doctest::Approx(2 * T * h * (2 * 2048 + 2 * 4096 + 64) / tp).epsilon(1e-12));
  CHECK(gemm_flops_named(gdn.forward, {"gdn_out_proj"}) == doctest::Approx(2 * T * 4096 * h / tp).epsilon(1e-12));
  // The chunked delta rule against Megatron's estimate of it (gdn_layer_flops: 8 dv^2 per value
  // head and token, "a best-case lower bound"): more, since the chunk form also computes the
  // within-chunk products, but the same order.
  const double rule = gemm_flops_named(gdn.forward, {"gdn_kkt", "gdn_solve_tril", "gdn_wy", "gdn_state_apply", "gdn_state_update",
                                                     "gdn_output_states", "gdn_output_qk", "gdn_output_intra"});
  const double megatron = 8.0 * T * 32 * 128 * 128;
  CHECK(rule * tp > megatron);
  CHECK(rule * tp < 4 * megatron);
  double fwd = 0, bwd = 0;
  for (const Op& op : gdn.forward)
    if (op.kind == OpKind::gemm) fwd += op.flops;
  for (const Op& op : gdn.backward)
    if (op.kind == OpKind::gemm) bwd += op.flops;
  CHECK(bwd == doctest::Approx(2 * fwd + gemm_flops_named(gdn.forward, {"gdn_state_apply", "gdn_state_update"})).epsilon(1e-12));
  // The output gate doubles the query projection: 16 heads x 256 channels of queries and of gates,
  // 2 query groups of keys and values.
  CHECK(gemm_flops_named(attention.forward, {"qkv_proj"}) == doctest::Approx(2 * T * h * (2 * 4096 + 2 * 512) / tp).epsilon(1e-12));
  CHECK(std::any_of(attention.forward.begin(), attention.forward.end(), [](const Op& op) { return std::string_view(op.name) == "attention_output_gate"; }));
}

TEST_CASE("decoder_layer_ops: a latent MoE projects its tokens down before the experts and up after them") {
  const std::string path = test::data_file("hf/nemotron-3-super-120b-a12b.json");
  const ModelSpec m = model_from_json(load_json_file(path), path);
  LayerShape s;
  s.seq = 4096;
  s.tp = 2;
  s.sequence_parallel = true;
  s.ep = 8;
  const LayerKind moe = m.layer_kind(1);
  REQUIRE(moe.moe);
  const LayerOps ops = decoder_layer_ops(m, s, moe);
  const double T = 4096, h = 4096, latent = 1024, f = 2688, k = 22, tp = 2;
  // The projections run on this rank's sequence-parallel tokens, whole (replicated over TP).
  CHECK(gemm_flops_named(ops.forward, {"moe_latent_down"}) == doctest::Approx(2 * (T / tp) * h * latent).epsilon(1e-12));
  CHECK(gemm_flops_named(ops.forward, {"moe_latent_up"}) == doctest::Approx(2 * (T / tp) * latent * h).epsilon(1e-12));
  // The routed experts read and write the latent width: top_k copies of T / tp tokens per rank.
  CHECK(gemm_flops_named(ops.forward, {"expert_fc1", "expert_fc2"}) ==
        doctest::Approx(2 * 2 * (T * k / tp) * latent * f * s.moe_imbalance).epsilon(1e-12));
  CHECK(gemm_flops_named(ops.backward, {"moe_latent_down", "moe_latent_up"}) ==
        doctest::Approx(2 * gemm_flops_named(ops.forward, {"moe_latent_down", "moe_latent_up"})).epsilon(1e-12));
}

TEST_CASE("decoder_layer_ops: MoE layers run top_k experts per token as grouped GEMMs at the per-expert token count") {
  ModelSpec m = test::catalog().model("qwen3-30b-a3b");
  LayerShape s;
  s.seq = 4096;
  const double T = 4096, h = 2048, f = 768, k = 8, E = 128;
  for (int ep : {1, 8, 16}) {
    CAPTURE(ep);
    s.ep = ep;
    const LayerOps ops = decoder_layer_ops(m, s, LayerKind{true, false});
    // 6*T*k*h*f per GPU whatever ep (the experts' work is shared evenly), plus the router GEMM.
    CHECK(gemm_flops_named(ops.forward, {"expert_fc1", "expert_fc2"}) == doctest::Approx(6 * T * k * h * f).epsilon(1e-12));
    CHECK(gemm_flops_named(ops.forward, {"router"}) == doctest::Approx(2 * T * E * h).epsilon(1e-12));
    for (const auto& op : ops.forward)
      if (std::string_view(op.name) == "expert_fc1") {
        CHECK(op.batch == doctest::Approx(E / ep));     // local experts
        CHECK(op.m == doctest::Approx(T * k / (E / ep)));  // tokens per local expert
      }
  }
  SUBCASE("the busiest rank's imbalance scales the expert work; expert TP splits each expert") {
    s.ep = 8;
    s.moe_imbalance = 1.25;
    CHECK(gemm_flops_named(decoder_layer_ops(m, s, LayerKind{true, false}).forward, {"expert_fc1", "expert_fc2"}) ==
          doctest::Approx(1.25 * 6 * T * k * h * f).epsilon(1e-12));
    s.moe_imbalance = 1;
    s.tp = 2;
    s.sequence_parallel = true;
    s.etp = 2;  // each rank: all T*k pairs on half of each expert
    CHECK(gemm_flops_named(decoder_layer_ops(m, s, LayerKind{true, false}).forward, {"expert_fc1", "expert_fc2"}) ==
          doctest::Approx(6 * T * k * h * f / 2).epsilon(1e-12));
    s.etp = 1;  // each rank: half the pairs on whole experts
    CHECK(gemm_flops_named(decoder_layer_ops(m, s, LayerKind{true, false}).forward, {"expert_fc1", "expert_fc2"}) ==
          doctest::Approx(6 * T * k * h * f / 2).epsilon(1e-12));
  }
  SUBCASE("the all-to-all dispatcher sorts the received copies by local expert, both ways and back") {
    auto bytes_named = [](const std::vector<Op>& ops, std::string_view prefix) {
      double b = 0;
      for (const auto& op : ops)
        if (std::string_view(op.name).starts_with(prefix)) b += op.bytes;
      return b;
    };
    s.ep = 8;
    s.moe_sort_chunks = true;
    const LayerOps sorted = decoder_layer_ops(m, s, LayerKind{true, false});
    const double pass = T * k * h * 2 * s.element_bytes;  // read and write every routed copy
    CHECK(bytes_named(sorted.forward, "moe_sort_chunks") == doctest::Approx(pass));
    CHECK(bytes_named(sorted.forward, "moe_unsort_chunks") == doctest::Approx(pass));
    CHECK(bytes_named(sorted.backward, "moe_sort_chunks_bwd") + bytes_named(sorted.backward, "moe_unsort_chunks_bwd") ==
          doctest::Approx(2 * pass));
    s.ep = 128;  // one local expert: nothing to sort
    CHECK(bytes_named(decoder_layer_ops(m, s, LayerKind{true, false}).forward, "moe_sort_chunks") == 0);
    s.ep = 8;
    s.moe_sort_chunks = false;  // the flex (DeepEP/HybridEP) dispatcher permutes once
    CHECK(bytes_named(decoder_layer_ops(m, s, LayerKind{true, false}).backward, "moe_unsort_chunks_bwd") == 0);
  }
  SUBCASE("without grouped GEMM every op of the expert block runs once per local expert, the same work in all") {
    s.ep = 8;
    const LayerOps grouped = decoder_layer_ops(m, s, LayerKind{true, false});
    s.moe_grouped_gemm = false;
    LayerOps sequential = decoder_layer_ops(m, s, LayerKind{true, false});
    // Leave out the concatenation of the experts' outputs (the next subcase).
    for (auto* ops : {&sequential.forward, &sequential.backward})
      std::erase_if(*ops, [](const Op& op) { return std::string_view(op.name).starts_with("expert_output_") ||
                                                    std::string_view(op.name).starts_with("expert_input_"); });
    REQUIRE(grouped.forward.size() == sequential.forward.size());
    REQUIRE(grouped.backward.size() == sequential.backward.size());
    int per_expert = 0;
    for (const auto* pair : {&grouped.forward, &grouped.backward}) {
      const auto& other = pair == &grouped.forward ? sequential.forward : sequential.backward;
      for (std::size_t i = 0; i < pair->size(); ++i) {
        const Op &g = (*pair)[i], &q = other[i];
        CAPTURE(g.name);
        CHECK(q.flops == g.flops);
        CHECK(q.bytes == g.bytes);
        const bool expert = std::string_view(g.name).starts_with("expert_") || std::string_view(g.name).starts_with("fp8_cast_grad_fc");
        CHECK((q.concurrent == 1) == expert);
        CHECK(g.concurrent != 1);
        if (expert) {
          CHECK(q.batch == doctest::Approx(E / 8));
          ++per_expert;
        }
      }
    }
    CHECK(per_expert == 2 + 1 + 2 * 2 + 1);  // fc1, fc2, activation forward; their backward GEMMs and activation
    // Grouped: Transformer Engine's GEMM per expert, four streams in flight (the default).
    for (const auto* ops : {&grouped.forward, &grouped.backward})
      for (const auto& op : *ops)
        if (std::string_view(op.name).starts_with("expert_fc")) CHECK(op.concurrent == 4);
  }
  SUBCASE("copies around the experts: fp8 padding of grouped GEMMs, SequentialMLP's concatenation") {
    auto copies = [&](const LayerShape& shape) {
      double fwd = 0, bwd = 0;
      const LayerOps ops = decoder_layer_ops(m, shape, LayerKind{true, false});
      for (const auto& op : ops.forward)
        if (std::string_view(op.name).starts_with("expert_input_") || std::string_view(op.name).starts_with("expert_output_")) fwd += op.bytes;
      for (const auto& op : ops.backward)
        if (std::string_view(op.name).starts_with("expert_input_") || std::string_view(op.name).starts_with("expert_output_")) bwd += op.bytes;
      return std::pair{fwd, bwd};
    };
    s.ep = 8;
    const double pass = T * k * h * 2 * 2;  // read and write every routed copy in bf16
    CHECK(copies(s) == std::pair{0.0, 0.0});  // grouped bf16: none
    s.fp8_linears = true;
    s.recipe = LowPrecisionRecipe::tensorwise;
    CHECK(copies(s) == std::pair{2 * pass, 2 * pass});  // pad in, unpad out, and back
    s.moe_dispatcher_pads = true;  // DeepEP/HybridEP hand over padded segments
    CHECK(copies(s) == std::pair{0.0, 0.0});
    s.moe_dispatcher_pads = false;
    s.moe_grouped_gemm = false;  // SequentialMLP: each expert pads its tokens, the outputs are concatenated
    CHECK(copies(s) == std::pair{2 * pass, 2 * pass});
    s.fp8_linears = false;
    CHECK(copies(s) == std::pair{pass, pass});
    s.ep = 128;  // one local expert: nothing to concatenate
    CHECK(copies(s) == std::pair{0.0, 0.0});
  }
  SUBCASE("a dense-first layer runs the dense MLP, and shared experts run on every token") {
    ModelSpec ds = test::catalog().model("deepseek-v3");
    CHECK(gemm_flops_named(decoder_layer_ops(ds, s, ds.layer_kind(0)).forward, {"fc1", "fc2"}) ==
          doctest::Approx(6 * T * 7168.0 * 18432).epsilon(1e-12));
    CHECK(gemm_flops_named(decoder_layer_ops(ds, s, ds.layer_kind(3)).forward, {"shared_fc1", "shared_fc2"}) ==
          doctest::Approx(6 * T * 7168.0 * 2048).epsilon(1e-12));
  }
}

TEST_CASE("decoder_layer_ops: multi-latent attention GEMM FLOPs are 2*T times its projection weights") {
  ModelSpec m = test::catalog().model("deepseek-v3");
  LayerShape s;
  s.seq = 4096;
  const double T = 4096, h = 7168, H = 128, ql = 1536, kl = 512, nope = 128, rope = 64, v = 128;
  const double weights = h * ql + ql * H * (nope + rope) + h * (kl + rope) + kl * H * (nope + v) + H * v * h;
  CHECK(gemm_flops_named(decoder_layer_ops(m, s).forward, {"q_down_proj", "q_up_proj", "kv_down_proj", "kv_up_proj", "out_proj"}) ==
        doctest::Approx(2 * T * weights).epsilon(1e-12));
  // The attention core: QK^T over nope+rope dims and PV over v dims, causal half.
  double attn = 0;
  for (const auto& op : decoder_layer_ops(m, s).forward)
    if (op.kind == OpKind::attention) attn += op.flops;
  CHECK(attn == doctest::Approx(2 * T * T / 2 * H * (nope + rope + v)).epsilon(1e-12));
}

TEST_CASE("decoder_layer_ops: DeepSeek Sparse Attention attends to top-k keys in MLA's absorbed form, its indexer on every TP rank") {
  const ModelSpec m = model_from_json(load_json_file(test::data_file("hf/deepseek-v3.2.json")), "deepseek-v3.2.json");
  const double H = 128, ql = 1536, kl = 512, nope = 128, rope = 64, v = 128, ih = 64, id = 128, topk = 2048;
  auto flops_of = [](const std::vector<Op>& ops, std::string_view name) {
    double f = 0;
    for (const auto& op : ops)
      if (std::string_view(op.name) == name) f += op.flops;
    return f;
  };
  for (int tp : {1, 4}) {
    for (double seq : {4096.0, 131072.0}) {
      CAPTURE(tp);
      CAPTURE(seq);
      LayerShape s;
      s.seq = static_cast<std::int64_t>(seq);
      s.tp = tp;
      s.sequence_parallel = tp > 1;
      const LayerOps L = decoder_layer_ops(m, s, m.layer_kind(5));
      const double T = seq, heads = H / tp;
      // Each query sees min(position, topk) keys: seq/2 below topk, topk - topk^2/(2 seq) above.
      const double keys = seq <= topk ? seq / 2 : topk - topk * topk / (2 * seq);
      // The absorbed attention: QK^T over the latent + rope (576), PV over the latent (512), on this
      // rank's heads padded to the kernel's 64.
      const double kernel_heads = std::max(64.0, heads);
      CHECK(flops_of(L.forward, "sparse_mla_attention") == doctest::Approx(2 * T * keys * kernel_heads * (kl + rope + kl)));
      CHECK(flops_of(L.backward, "sparse_mla_attention_bwd") == doctest::Approx(2.5 * 2 * T * keys * kernel_heads * (kl + rope + kl)));
      // The indexer scores every earlier key on every TP rank, not split by tp.
      CHECK(flops_of(L.forward, "indexer_scores") == doctest::Approx(2 * T * (seq / 2) * ih * id));
      CHECK(flops_of(L.forward, "indexer_q_proj") == doctest::Approx(2 * T * ql * ih * id));
      // The kv up projection is absorbed: W_UK into the query, W_UV after the attention, per head.
      CHECK(flops_of(L.forward, "kv_up_proj") == 0);
      CHECK(flops_of(L.forward, "q_absorb_k_up") + flops_of(L.forward, "v_up_absorbed") ==
            doctest::Approx(2 * T * heads * kl * (nope + v)));
      // The sparse indexer loss: the attention's distribution over the top-k keys, and the
      // indexer's backward over them (scores, dq, dk) with its three projections' weight gradients.
      CHECK(flops_of(L.forward, "indexer_loss_target") == doctest::Approx(2 * T * keys * heads * (kl + rope)));
      CHECK(flops_of(L.backward, "indexer_scores_bwd") == doctest::Approx(3 * 2 * T * keys * ih * id));
      CHECK(flops_of(L.backward, "indexer_q_proj") == doctest::Approx(2 * T * ql * ih * id));
    }
  }
  SUBCASE("at long context the sparse layer's attention is linear in the sequence; dense MLA's is quadratic") {
    ModelSpec dense = m;
    dense.dsa.reset();
    auto attention = [](const ModelSpec& model, std::int64_t seq) {
      LayerShape s;
      s.seq = seq;
      double f = 0;
      for (const auto& op : decoder_layer_ops(model, s, model.layer_kind(5)).forward)
        if (op.kind == OpKind::attention && std::string_view(op.name) != "indexer_scores") f += op.flops / static_cast<double>(seq);
      return f;
    };
    // Per token, doubling a long sequence barely moves the sparse attention and doubles dense MLA's.
    CHECK(attention(m, 262144) / attention(m, 131072) == doctest::Approx(1.0).epsilon(0.02));
    CHECK(attention(dense, 262144) / attention(dense, 131072) == doctest::Approx(2.0).epsilon(1e-9));
    CHECK(attention(m, 131072) < attention(dense, 131072) / 5);
  }
  SUBCASE("model FLOPs (MFU) count the top-k keys and the indexer, not dense MLA's attention") {
    ModelSpec dense = m;
    dense.dsa.reset();
    const double seq = 131072, T = seq;
    const double sparse_core = 2 * T * topk * H * (2 * kl + rope) + 2 * T * seq * ih * id;
    const double dense_core = 2 * T * seq * H * (nope + rope + v);
    CHECK(layer_model_flops_fwd(m, T, seq, m.layer_kind(5)) - layer_model_flops_fwd(dense, T, seq, dense.layer_kind(5)) ==
          doctest::Approx(sparse_core - dense_core + 2 * T * m.indexer_params()));
  }
  SUBCASE("without the indexer loss the indexer has no backward; shared top-k runs it in a share of the layers") {
    ModelSpec frozen = m;
    frozen.dsa->indexer_loss_coeff = 0;
    LayerShape s;
    s.seq = 4096;
    const LayerOps L = decoder_layer_ops(frozen, s, frozen.layer_kind(5));
    CHECK(flops_of(L.forward, "indexer_loss_target") == 0);
    CHECK(flops_of(L.backward, "indexer_scores_bwd") == 0);
    CHECK(flops_of(L.backward, "indexer_q_proj") == 0);
    ModelSpec shared = m;
    shared.dsa->topk_freq = 4;
    const double own = flops_of(decoder_layer_ops(m, s, m.layer_kind(5)).forward, "indexer_scores");
    CHECK(flops_of(decoder_layer_ops(shared, s, shared.layer_kind(5)).forward, "indexer_scores") == doctest::Approx(own * shared.indexer_share()));
    CHECK(shared.indexer_share() < 0.3);
  }
}

TEST_CASE("decoder_layer_ops: rotary models rotate q and k once each way, learned-position models not at all") {
  LayerShape s;
  s.seq = 4096;
  s.tp = 2;
  auto bytes_of = [](const std::vector<Op>& ops, std::string_view name) {
    double b = 0;
    for (const auto& op : ops)
      if (name == op.name) b += op.bytes;
    return b;
  };
  // Llama 3 8B: 32 query heads and 8 KV heads of 128 over tp 2; bf16 read and written once.
  const ModelSpec llama = test::catalog().model("llama3-8b");
  REQUIRE(llama.position_embedding == PositionEmbedding::rope);
  const LayerOps ops = decoder_layer_ops(llama, s);
  const double expected = 4096.0 * (4096 + 1024) / 2 * 2 * 2;
  CHECK(bytes_of(ops.forward, "rope") == doctest::Approx(expected));
  CHECK(bytes_of(ops.backward, "rope_bwd") == doctest::Approx(expected));
  // GPT-3 adds learned positions to the embedding instead.
  const ModelSpec gpt = test::catalog().model("gpt3-175b");
  REQUIRE(gpt.position_embedding == PositionEmbedding::learned);
  CHECK(bytes_of(decoder_layer_ops(gpt, s).forward, "rope") == 0);
}

TEST_CASE("decoder_layer_ops: QK-norm's backward reads x and the gradient and writes the input gradient, under its own name") {
  LayerShape s;
  s.seq = 4096;
  s.tp = 2;
  ModelSpec m = test::catalog().model("llama3-8b");
  m.qk_layernorm = true;
  const LayerOps ops = decoder_layer_ops(m, s);
  double fwd = 0, bwd = 0;
  for (const auto& op : ops.forward)
    if (std::string_view(op.name) == "qk_norm") fwd += op.bytes;
  for (const auto& op : ops.backward) {
    if (std::string_view(op.name) == "qk_norm_bwd") bwd += op.bytes;
    CHECK(std::string_view(op.name).find("latent") == std::string_view::npos);
  }
  // q and k (32 + 8 heads of 128 over tp 2), bf16: read and written forward, twice that backward.
  CHECK(fwd == doctest::Approx(4096.0 * (4096 + 1024) / 2 * 2 * 2));
  CHECK(bwd == doctest::Approx(2 * fwd));
}

TEST_CASE("decoder_layer_ops: sliding-window layers attend to the window only") {
  ModelSpec m = test::catalog().model("gpt-oss-120b");
  LayerShape s;
  s.seq = 4096;
  auto attn = [&](LayerKind kind) {
    double f = 0;
    for (const auto& op : decoder_layer_ops(m, s, kind).forward)
      if (op.kind == OpKind::attention) f += op.flops;
    return f;
  };
  const double full = attn(LayerKind{true, false}), local = attn(LayerKind{true, true});
  CHECK(full == doctest::Approx(2.0 * 4096 * 4096 / 2 * 64 * (64 + 64)));
  // Mean keys per query under a 128-token window: w - w^2/(2s).
  const double window_keys = 128 - 128.0 * 128 / (2 * 4096);
  CHECK(local / full == doctest::Approx(window_keys / (4096 / 2.0)).epsilon(1e-12));
  CHECK(causal_keys_per_query(4096, 0) == 2048);
  CHECK(causal_keys_per_query(4096, 8192) == 2048);
  // The kernel's key loop sees the window's keys (kernel_model), a full layer's attention the causal half.
  for (const auto& op : decoder_layer_ops(m, s, LayerKind{true, true}).backward)
    if (op.kind == OpKind::attention) CHECK(op.kernel_keys_per_query == doctest::Approx(window_keys));
  for (const auto& op : decoder_layer_ops(m, s, LayerKind{true, false}).forward)
    if (op.kind == OpKind::attention) CHECK(op.kernel_keys_per_query == 0);
}

TEST_CASE("decoder_layer_ops: biased experts under a grouped GEMM get their fc2 bias one expert at a time") {
  // Megatron-Core TEGroupedMLP._apply_bias: cat([t + b * p ...]) per local expert, then autograd's
  // MulBackward0 (two products, two reductions) per expert and the split's concatenation.
  ModelSpec m = test::catalog().model("gpt-oss-120b");
  REQUIRE(m.add_linear_bias);
  LayerShape s;
  s.seq = 4096;
  s.ep = 8;
  const double pairs = 4096.0 * 4, h = 2880, eb = 2, local = 128.0 / 8;
  auto bias_ops = [&](const std::vector<Op>& ops) {
    std::vector<Op> out;
    for (const auto& op : ops)
      if (std::string_view(op.name).starts_with("expert_bias")) out.push_back(op);
    return out;
  };
  auto total_bytes = [](const std::vector<Op>& ops) {
    double b = 0;
    for (const auto& op : ops) b += op.bytes;
    return b;
  };
  const LayerOps ops = decoder_layer_ops(m, s, LayerKind{true, false});
  const auto fwd = bias_ops(ops.forward), bwd = bias_ops(ops.backward);
  // Forward: write b*p; read t and b*p, write the sum; read and write it in the concatenation.
  CHECK(total_bytes(fwd) == doctest::Approx(pairs * h * eb * (1 + 3 + 2)));
  // Backward: two products (read the gradient, write each), two reductions, one concatenation.
  CHECK(total_bytes(bwd) == doctest::Approx(pairs * h * eb * (4 + 2 + 2)));
  int per_expert_kernels = 0;
  for (const auto* list : {&fwd, &bwd})
    for (const auto& op : *list)
      if (op.concurrent == 1) per_expert_kernels += static_cast<int>(op.batch);
  CHECK(per_expert_kernels == static_cast<int>(local * (1 + 1 + 2 + 2)));
  // After fc2 forward, before fc2's backward.
  auto index = [](const std::vector<Op>& list, std::string_view name) {
    for (std::size_t i = 0; i < list.size(); ++i)
      if (list[i].name == name) return static_cast<long>(i);
    return -1L;
  };
  CHECK(index(ops.forward, "expert_bias_scale") > index(ops.forward, "expert_fc2"));
  CHECK(index(ops.backward, "expert_bias_split_bwd") < index(ops.backward, "expert_fc2"));
  SUBCASE("not for SequentialMLP, whose experts add their bias in their own linears, nor for unbiased experts") {
    s.moe_grouped_gemm = false;
    CHECK(bias_ops(decoder_layer_ops(m, s, LayerKind{true, false}).forward).empty());
    s.moe_grouped_gemm = true;
    m.add_linear_bias = false;
    CHECK(bias_ops(decoder_layer_ops(m, s, LayerKind{true, false}).backward).empty());
    CHECK(bias_ops(decoder_layer_ops(test::catalog().model("qwen3-30b-a3b"), s, LayerKind{true, false}).forward).empty());
  }
}
}

TEST_SUITE("costmodel") {
TEST_CASE("decoder_layer_ops: selective recompute re-runs the forward ops of the modules named") {
  auto names = [](const std::vector<Op>& ops) {
    std::vector<std::string> out;
    for (const auto& op : ops) out.emplace_back(op.name);
    return out;
  };
  const ModelSpec moe = test::catalog().model("deepseek-v3");  // MLA, dense-first, shared expert
  LayerShape s;
  s.seq = 4096;
  s.ep = 8;
  const LayerKind moe_layer{true, false}, dense_layer{false, false};
  CHECK(names(decoder_layer_ops(moe, s, moe_layer).selective_recompute) == std::vector<std::string>{"flash_attention"});
  s.recompute_modules = kRecomputeMoeAct;
  CHECK(names(decoder_layer_ops(moe, s, moe_layer).selective_recompute) == std::vector<std::string>{"expert_activation"});
  CHECK(decoder_layer_ops(moe, s, dense_layer).selective_recompute.empty());
  // Only the norms Transformer Engine does not fuse into a linear: MLA's input norm, the MoE norm.
  s.recompute_modules = kRecomputeLayernorm;
  CHECK(names(decoder_layer_ops(moe, s, moe_layer).selective_recompute) == std::vector<std::string>{"input_norm", "post_attn_norm"});
  CHECK(names(decoder_layer_ops(moe, s, dense_layer).selective_recompute) == std::vector<std::string>{"input_norm"});
  CHECK(decoder_layer_ops(test::catalog().model("llama3-8b"), s).selective_recompute.empty());
  s.recompute_modules = kRecomputeMlaUpProj;
  CHECK(names(decoder_layer_ops(moe, s, dense_layer).selective_recompute) == std::vector<std::string>{"q_up_proj", "kv_up_proj", "rope"});
  s.recompute_modules = kRecomputeMlp;
  CHECK(names(decoder_layer_ops(moe, s, dense_layer).selective_recompute) ==
        std::vector<std::string>{"post_attn_norm", "fc1", "activation", "fc2"});
  CHECK(decoder_layer_ops(moe, s, moe_layer).selective_recompute.empty());
  // The whole MoE block: router, permutation, experts, shared expert; not the attention.
  s.recompute_modules = kRecomputeMoe;
  const LayerOps whole = decoder_layer_ops(moe, s, moe_layer);
  double mlp_flops = 0;
  for (const auto& op : whole.forward)
    if (std::string_view(op.name).starts_with("expert_") || std::string_view(op.name).starts_with("shared_") ||
        std::string_view(op.name).starts_with("router") || std::string_view(op.name).starts_with("moe_"))
      mlp_flops += op.flops;
  CHECK(total_flops(whole.selective_recompute) == doctest::Approx(mlp_flops).epsilon(1e-12));
  s.recompute_modules = kRecomputeSharedExperts;
  CHECK(names(decoder_layer_ops(moe, s, moe_layer).selective_recompute) ==
        std::vector<std::string>{"shared_fc1", "shared_activation", "shared_fc2"});
}
}
