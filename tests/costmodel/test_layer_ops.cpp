#include <doctest/doctest.h>

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

TEST_CASE("layer_model_flops_fwd matches the closed form for GQA SwiGLU models") {
  ModelSpec m = test::catalog().model("llama3-70b");
  const double h = 8192, kv = 1024, f = 28672, T = 8192;
  double expected = 2 * T * (h * (h + 2 * kv) + h * h + 3 * h * f) + 4 * T * T * h;
  CHECK(layer_model_flops_fwd(m, T, T) == doctest::Approx(expected));
}
}
