#include <doctest/doctest.h>

#include "costmodel/calibration.h"
#include "costmodel/kernel_model.h"
#include "test_util.h"

using namespace strata;

namespace {

Op gemm(double m, double n, double k, double batch = 1) {
  Op op;
  op.name = "gemm";
  op.kind = OpKind::gemm;
  op.m = m;
  op.n = n;
  op.k = k;
  op.batch = batch;
  op.flops = 2 * m * n * k * batch;
  op.bytes = 2 * (m * k + k * n + m * n) * batch;
  return op;
}

Op elementwise(double bytes) {
  Op op;
  op.name = "add";
  op.kind = OpKind::elementwise;
  op.bytes = bytes;
  op.flops = bytes / 2;
  return op;
}

// Fused causal attention over `seq` queries, each attending to `keys_per_query` keys, with `heads`
// heads of `head_dim`.
Op attention(double seq, double keys_per_query, double head_dim, double heads, bool cudnn) {
  Op op;
  op.kind = OpKind::attention;
  op.name = cudnn ? "cudnn_attention" : "flash_attention";
  op.cudnn_attention = cudnn;
  op.key_loop_scaling = true;
  op.m = op.n = seq;
  op.k = head_dim;
  op.batch = heads;
  op.attention_scores = heads * seq * keys_per_query;
  op.flops = 2.0 * op.attention_scores * (2 * head_dim);
  op.bytes = 4.0 * heads * seq * head_dim * 2;
  return op;
}

// An A100-like GPU with unlimited memory bandwidth: isolates the compute side of the roofline.
GpuSpec compute_only_gpu() {
  GpuSpec g = test::catalog().gpu("a100-80gb");
  g.hbm_GBps = 1e9;
  return g;
}

}  // namespace

TEST_SUITE("costmodel") {
TEST_CASE("KernelModel::time") {
  const GpuSpec a100 = test::catalog().gpu("a100-80gb");
  const KernelCoefficients kc;  // documented defaults
  const KernelModel km(a100, Precision::bf16, kc);
  const double peak = a100.peak_flops(Precision::bf16);
  const double launch = kc.launch_overhead_us * 1e-6;

  SUBCASE("a huge GEMM approaches gemm_efficiency * peak") {
    Op op = gemm(16384, 16384, 16384);
    KernelTime t = km.time(op);
    const double achieved = op.flops / t.time_s;
    CHECK(achieved <= kc.gemm_efficiency * peak);
    CHECK(achieved > 0.97 * kc.gemm_efficiency * peak);
    CHECK(t.cls == KernelClass::compute_bound);
  }
  SUBCASE("a GEMM filling exactly one wave of 256x128 tiles runs at the roofline formula") {
    // 27 x 4 = 108 tiles of 256x128 on 108 SMs: wave utilization 1, so
    // t = flops / (peak * gemm_efficiency * K/(K + k_overhead)) + launch.
    const double K = 16384;
    Op op = gemm(256 * 27, 128 * 4, K);
    KernelTime t = km.time(op);
    CHECK(t.wave_utilization == doctest::Approx(1.0));
    CHECK(t.cls == KernelClass::compute_bound);
    const double expected = op.flops / (peak * kc.gemm_efficiency * K / (K + kc.gemm_k_overhead)) + launch;
    CHECK(t.time_s == doctest::Approx(expected).epsilon(1e-12));
  }
  SUBCASE("an elementwise op is bytes / (hbm * memory_efficiency) + launch, DRAM-bound") {
    const double bytes = 1e9;
    KernelTime t = km.time(elementwise(bytes));
    CHECK(t.time_s == doctest::Approx(bytes / (a100.hbm_GBps * 1e9 * kc.memory_efficiency) + launch).epsilon(1e-12));
    CHECK(t.cls == KernelClass::dram_bound);
    // Twice the bytes, twice the streaming time.
    CHECK(km.time(elementwise(2 * bytes)).time_s - launch == doctest::Approx(2 * (t.time_s - launch)).epsilon(1e-12));
  }
  SUBCASE("kernel classes (SEER)") {
    CHECK(km.time(gemm(64, 64, 64)).cls == KernelClass::under_utilized);
    CHECK(km.time(gemm(8192, 8192, 8192)).cls == KernelClass::compute_bound);
    CHECK(km.time(elementwise(1e9)).cls == KernelClass::dram_bound);
    CHECK(km.time(elementwise(1e4)).cls == KernelClass::under_utilized);
    // A skinny GEMM (matrix-vector-like) is limited by DRAM, not tensor cores.
    CHECK(km.time(gemm(65536, 8, 8192)).cls == KernelClass::dram_bound);
  }
  SUBCASE("a tiny GEMM is dominated by the launch overhead") {
    KernelTime t = km.time(gemm(64, 64, 64));
    CHECK(t.time_s >= launch);
    CHECK(t.time_s < 2 * launch);
  }
  SUBCASE("misaligned inner or leading dimensions are slower") {
    const KernelModel fast(compute_only_gpu(), Precision::bf16, kc);
    const double K = 8192;
    Op aligned = gemm(256 * 27, 128 * 4, K);
    Op odd_k = gemm(256 * 27, 128 * 4, K - 1);
    const double per_flop_aligned = (fast.time(aligned).time_s - launch) / aligned.flops;
    const double per_flop_odd = (fast.time(odd_k).time_s - launch) / odd_k.flops;
    // Same tiles, so the ratio is 1/misaligned_gemm_factor times the k-loop term's change.
    const double k_term = (K / (K + kc.gemm_k_overhead)) / ((K - 1) / (K - 1 + kc.gemm_k_overhead));
    CHECK(per_flop_odd / per_flop_aligned == doctest::Approx(k_term / kc.misaligned_gemm_factor).epsilon(1e-9));
    // A misaligned n (the leading dimension of the output) costs the same.
    Op odd_n = gemm(256 * 27, 128 * 4 - 1, K);
    CHECK(km.time(odd_n).time_s / odd_n.flops > km.time(aligned).time_s / aligned.flops);
  }
  SUBCASE("precision: an fp32 GEMM uses the fp32 peak") {
    const KernelModel f32(compute_only_gpu(), Precision::fp32, kc);
    const KernelModel b16(compute_only_gpu(), Precision::bf16, kc);
    Op op = gemm(8192, 8192, 8192);
    CHECK((f32.time(op).time_s - launch) / (b16.time(op).time_s - launch) == doctest::Approx(312.0 / 19.5).epsilon(1e-9));
  }
  SUBCASE("attention ops use the attention efficiencies, backward the _bwd one") {
    const KernelModel fast(compute_only_gpu(), Precision::bf16, kc);
    Op g = gemm(4096, 4096, 128, 64);
    Op fwd = g;
    fwd.kind = OpKind::attention;
    fwd.name = "flash_attention";
    Op bwd = fwd;
    bwd.name = "flash_attention_bwd";
    const double tg = fast.time(g).time_s - launch;
    CHECK((fast.time(fwd).time_s - launch) / tg == doctest::Approx(1 / kc.attention_fwd_efficiency).epsilon(1e-9));
    CHECK((fast.time(bwd).time_s - launch) / tg == doctest::Approx(1 / kc.attention_bwd_efficiency).epsilon(1e-9));
  }
  SUBCASE("time is monotone in the work") {
    double prev = 0;
    for (double k : {256.0, 1024.0, 4096.0, 16384.0}) {
      double t = km.time(gemm(4096, 4096, k)).time_s;
      CHECK(t > prev);
      prev = t;
    }
  }
}

TEST_CASE("KernelModel::time: fp8 GEMMs at fp8_gemm_factor of the bf16 efficiency, attention stays bf16") {
  const GpuSpec h100 = test::catalog().gpu("h100-sxm");
  const KernelCoefficients kc;
  const KernelModel bf16(h100, Precision::bf16, kc);
  const KernelModel fp8(h100, Precision::fp8, kc);
  const double launch = kc.launch_overhead_us * 1e-6;
  Op op = gemm(16384, 16384, 16384);
  const double ratio = (fp8.time(op).time_s - launch) / (bf16.time(op).time_s - launch);
  // The k-loop's fixed cost per tile is worth twice the k elements at the fp8 rate (the peaks' ratio).
  const double rate = h100.peak_flops(Precision::fp8) / h100.peak_flops(Precision::bf16);
  const double k = op.k, k0 = kc.gemm_k_overhead, k_loop = (k / (k + k0)) / (k / (k + rate * k0));
  CHECK(ratio == doctest::Approx(h100.peak_flops(Precision::bf16) / h100.peak_flops(Precision::fp8) / kc.fp8_gemm_factor * k_loop)
                     .epsilon(1e-9));
  // A short k-loop (a routed expert's 768-wide down projection) gains less from fp8 than a long one.
  Op shortk = gemm(16384, 16384, 768);
  const double short_ratio = (fp8.time(shortk).time_s - launch) / (bf16.time(shortk).time_s - launch);
  CHECK(short_ratio > ratio * 1.05);
  // Transformer Engine's blockwise recipe: block-scaled GEMMs at fp8_blockwise_gemm_factor of per-tensor ones.
  const KernelModel blockwise(h100, Precision::fp8, kc, LowPrecisionRecipe::blockwise);
  CHECK((blockwise.time(op).time_s - launch) / (fp8.time(op).time_s - launch) ==
        doctest::Approx(1 / kc.fp8_blockwise_gemm_factor).epsilon(1e-9));
  // The GEMMs fp8 training keeps in bf16 (the output layer) run at the bf16 rate.
  Op kept = op;
  kept.bf16_under_fp8 = true;
  CHECK(fp8.time(kept).time_s == doctest::Approx(bf16.time(kept).time_s).epsilon(1e-12));
  op.kind = OpKind::attention;
  op.name = "attention";
  CHECK(fp8.time(op).time_s == doctest::Approx(bf16.time(op).time_s).epsilon(1e-12));
}

TEST_CASE("KernelModel::gemm_utilization") {
  const KernelModel km(compute_only_gpu(), Precision::bf16, KernelCoefficients{});
  SUBCASE("wave quantization: tiles = SMs + 1 is slower per FLOP than tiles = SMs") {
    // One 256x128 tile per batch entry: 108 entries fill the 108 SMs exactly; 109 need a second,
    // almost empty wave (or smaller, less efficient tiles).
    double tiles = 0;
    CHECK(km.gemm_utilization(256, 128, 108, &tiles) == doctest::Approx(1.0));
    CHECK(tiles == 108);
    const double u109 = km.gemm_utilization(256, 128, 109, &tiles);
    CHECK(u109 < 0.75);
    Op full = gemm(256, 128, 8192, 108), over = gemm(256, 128, 8192, 109);
    CHECK(km.time(over).time_s / over.flops > 1.3 * km.time(full).time_s / full.flops);
  }
  SUBCASE("utilization never exceeds 1 and grows towards 1 for large outputs") {
    for (double m : {1.0, 100.0, 1000.0, 5000.0, 20000.0})
      for (double n : {8.0, 300.0, 4096.0}) {
        double u = km.gemm_utilization(m, n, 1);
        CHECK(u > 0);
        CHECK(u <= 1.0 + 1e-12);
      }
    CHECK(km.gemm_utilization(32768, 32768, 1) > 0.99);
  }
  SUBCASE("tile quantization: a partial edge tile wastes work") {
    CHECK(km.gemm_utilization(256 * 27 + 1, 512, 1) < km.gemm_utilization(256 * 27, 512, 1));
  }
}

TEST_CASE("KernelModel::total_time") {
  const KernelModel km(test::catalog().gpu("h100"), Precision::bf16, KernelCoefficients{});
  std::vector<Op> ops = {gemm(4096, 4096, 4096), elementwise(1e8), gemm(128, 128, 128)};
  double sum = 0;
  for (const auto& op : ops) sum += km.time(op).time_s;
  CHECK(km.total_time(ops) == doctest::Approx(sum).epsilon(1e-15));
  CHECK(km.total_time({}) == 0);
}

TEST_CASE("KernelModel::time: a sequential batch is one kernel per entry, a grouped one shares its waves") {
  const KernelModel km(test::catalog().gpu("h100"), Precision::bf16, KernelCoefficients{});
  // 16 experts of 512 tokens x 1536 x 2048: 4 x 12 = 48 tiles of 128 x 128 each, a third of a wave.
  Op grouped = gemm(512, 1536, 2048, 16);
  Op sequential = grouped;
  sequential.concurrent = 1;
  const Op one = gemm(512, 1536, 2048);
  CHECK(km.time(sequential).time_s == doctest::Approx(16 * km.time(one).time_s).epsilon(1e-12));
  CHECK(km.classify(sequential) == km.classify(one));
  CHECK(km.time(grouped).time_s < 0.6 * km.time(sequential).time_s);
  // Elementwise: the same bytes in 16 small kernels cost 16 fixed overheads.
  Op act = elementwise(16 * 4e6);
  Op act_seq = act;
  act_seq.concurrent = 1;
  act_seq.batch = 16;
  CHECK(km.time(act_seq).time_s == doctest::Approx(16 * km.time(elementwise(4e6)).time_s).epsilon(1e-12));
  CHECK(km.time(act_seq).time_s > km.time(act).time_s);
}

TEST_CASE("KernelModel::time: a batch in rounds of concurrent kernels") {
  const KernelModel km(test::catalog().gpu("h100"), Precision::bf16, KernelCoefficients{});
  // 10 experts of 1024 x 5760 x 2880, 4 in flight: two rounds of 4, then 2.
  Op rounds = gemm(1024, 5760, 2880, 10);
  rounds.concurrent = 4;
  const double expected = 2 * km.time(gemm(1024, 5760, 2880, 4)).time_s + km.time(gemm(1024, 5760, 2880, 2)).time_s;
  CHECK(km.time(rounds).time_s == doctest::Approx(expected).epsilon(1e-12));
  // Fewer waves' worth of tiles share each round than share one grouped kernel: never faster.
  CHECK(km.time(rounds).time_s >= km.time(gemm(1024, 5760, 2880, 10)).time_s);
  rounds.concurrent = 16;  // all in flight: one grouped kernel
  CHECK(km.time(rounds).time_s == doctest::Approx(km.time(gemm(1024, 5760, 2880, 10)).time_s).epsilon(1e-12));
}

TEST_CASE("KernelModel: the class decides the formula, and each class's coefficients move only its own kernels") {
  const GpuSpec h100 = test::catalog().gpu("h100-sxm");
  Op norm = elementwise(1e9);
  norm.name = "input_norm";
  norm.m = 8192.0 * 4096;  // 8192 rows of 4096
  norm.n = 4096;
  Op map = elementwise(1e9);
  Op attn = gemm(4096, 4096, 128, 32);
  attn.kind = OpKind::attention;
  attn.name = "flash_attention";
  attn.key_loop_scaling = true;
  Op attn_bwd = attn;
  attn_bwd.name = "flash_attention_bwd";
  const std::vector<Op> ops{gemm(8192, 8192, 8192), gemm(65536, 8, 8192), map, norm, gemm(512, 512, 4096), elementwise(1e4), attn, attn_bwd};
  const KernelModel base(h100, Precision::bf16, KernelCoefficients{});
  const std::vector<KernelClass> classes{KernelClass::compute_bound, KernelClass::dram_bound,     KernelClass::dram_bound,
                                         KernelClass::dram_bound,    KernelClass::under_utilized, KernelClass::under_utilized,
                                         KernelClass::attention_fwd, KernelClass::attention_bwd};
  for (std::size_t i = 0; i < ops.size(); ++i) CHECK(base.classify(ops[i]) == classes[i]);
  CHECK(memory_pattern(norm) == MemoryPattern::row_reduction);
  CHECK(memory_pattern(map) == MemoryPattern::elementwise_map);
  CHECK(memory_pattern(ops[1]) == MemoryPattern::gemm_operands);
  // Change one class's coefficient: exactly the kernels that class (or pattern) times change.
  struct Change {
    const char* what;
    void (*apply)(KernelCoefficients&);
    std::vector<bool> moves;  // per op above
  };
  const std::vector<Change> changes{
      {"launch_overhead_us", [](KernelCoefficients& c) { c.launch_overhead_us = 9; }, {1, 0, 0, 0, 0, 0, 1, 1}},
      {"dram_overhead_us", [](KernelCoefficients& c) { c.dram_overhead_us = 9; }, {0, 1, 1, 1, 0, 0, 0, 0}},
      {"under_utilized_overhead_us", [](KernelCoefficients& c) { c.under_utilized_overhead_us = 9; }, {0, 0, 0, 0, 1, 1, 0, 0}},
      {"under_utilized_gemm_factor", [](KernelCoefficients& c) { c.under_utilized_gemm_factor = 0.5; }, {0, 0, 0, 0, 1, 0, 0, 0}},
      {"row_memory_efficiency", [](KernelCoefficients& c) { c.row_memory_efficiency = 0.5; }, {0, 0, 0, 1, 0, 0, 0, 0}},
      {"gemm_memory_efficiency", [](KernelCoefficients& c) { c.gemm_memory_efficiency = 0.3; }, {0, 1, 0, 0, 1, 0, 0, 0}},
      {"elementwise_alu_efficiency", [](KernelCoefficients& c) { c.elementwise_alu_efficiency = 0.1; }, {0, 0, 1, 1, 0, 0, 0, 0}},
      {"l2_bandwidth_factor", [](KernelCoefficients& c) { c.l2_bandwidth_factor = 3; }, {0, 0, 1, 1, 0, 0, 0, 0}},
      {"attention_fwd_fixed_blocks", [](KernelCoefficients& c) { c.attention_fwd_fixed_blocks = 20; }, {0, 0, 0, 0, 0, 0, 1, 0}},
      {"attention_bwd_efficiency", [](KernelCoefficients& c) { c.attention_bwd_efficiency = 0.2; }, {0, 0, 0, 0, 0, 0, 0, 1}},
  };
  for (const auto& ch : changes) {
    KernelCoefficients c;
    ch.apply(c);
    const KernelModel changed(h100, Precision::bf16, c);
    for (std::size_t i = 0; i < ops.size(); ++i) {
      INFO(ch.what << " on op " << i << " (" << to_string(classes[i]) << ")");
      CHECK((changed.time(ops[i]).time_s != base.time(ops[i]).time_s) == ch.moves[i]);
      CHECK(changed.classify(ops[i]) == classes[i]);  // coefficients never change the class
    }
  }
  // Under-utilized GEMMs load only from their busy SMs: with a tiny per-SM load rate the bytes,
  // not the tensor cores, set the time.
  KernelCoefficients slow_sms;
  slow_sms.sm_load_bytes_per_clock = 1;
  const Op small = ops[4];
  CHECK(KernelModel(h100, Precision::bf16, slow_sms).time(small).time_s > 2 * base.time(small).time_s);
}

TEST_CASE("to_string(KernelClass)") {
  CHECK(std::string(to_string(KernelClass::compute_bound)) == "compute_bound");
  CHECK(std::string(to_string(KernelClass::dram_bound)) == "dram_bound");
  CHECK(std::string(to_string(KernelClass::under_utilized)) == "under_utilized");
  CHECK(std::string(to_string(KernelClass::attention_fwd)) == "attention_fwd");
  CHECK(std::string(to_string(KernelClass::attention_bwd)) == "attention_bwd");
  CHECK(std::string(to_string(MemoryPattern::row_reduction)) == "row_reduction");
}
}

TEST_SUITE("costmodel") {
TEST_CASE("key_loop_factor: flash attention speeds up with the keys per query tile, 1 at 2048 tokens") {
  CHECK(key_loop_factor(2048) == doctest::Approx(1.0));
  CHECK(key_loop_factor(8192) > key_loop_factor(4096));
  CHECK(key_loop_factor(4096) > 1.0);
  // Saturates: w/(w+5) can rise at most (8+5)/8 above the 2048-token rate.
  CHECK(key_loop_factor(1 << 20) < 13.0 / 8.0);
}

TEST_CASE("attention: a sliding window's query tiles loop over the window's keys, not the sequence's") {
  const GpuSpec h100 = test::catalog().gpu("h100-sxm");
  const KernelCoefficients kc = default_calibration(h100).kernel;
  const KernelModel model(h100, Precision::bf16, kc);
  auto windowed = [](double seq, double keys_per_query, double window_keys) {
    Op op = attention(seq, keys_per_query, 64, 64, true);
    op.kernel_keys_per_query = window_keys;
    return op;
  };
  const double launch = kc.launch_overhead_us * 1e-6;
  auto rate = [&](const Op& op) { return op.flops / (model.time(op).time_s - launch); };
  // A 128-key window over 4096 tokens: the rate of a causal tile that visits 128 keys on average
  // (a 256-token sequence), far below the 4096-token causal rate.
  const Op window = windowed(4096, 126, 126), full = windowed(4096, 2048, 0);
  CHECK(rate(window) / rate(full) == doctest::Approx(key_loop_factor(252, kc.cudnn_attention_fwd_fixed_blocks) /
                                                     key_loop_factor(4096, kc.cudnn_attention_fwd_fixed_blocks))
                                         .epsilon(1e-9));
  CHECK(rate(window) < 0.4 * rate(full));
  // A window at least as long as the sequence is no window.
  CHECK(rate(windowed(4096, 2048, 2048)) == doctest::Approx(rate(full)).epsilon(1e-9));
}

TEST_CASE("attention: dropout inside the fused kernel slows it by the measured factor of its kernel and direction") {
  const GpuSpec h100 = test::catalog().gpu("h100-sxm");
  const KernelCoefficients kc = default_calibration(h100).kernel;
  const KernelModel model(h100, Precision::bf16, kc);
  const double launch = kc.launch_overhead_us * 1e-6;
  for (bool cudnn : {false, true})
    for (bool backward : {false, true}) {
      CAPTURE(cudnn);
      CAPTURE(backward);
      Op op = attention(8192, 4096, 128, 32, cudnn);
      if (backward) op.name = cudnn ? "cudnn_attention_bwd" : "flash_attention_bwd";
      const double plain = model.time(op).time_s - launch;
      op.attention_dropout = true;
      const double factor = cudnn ? (backward ? kc.cudnn_attention_dropout_bwd_factor : kc.cudnn_attention_dropout_fwd_factor)
                                  : (backward ? kc.attention_dropout_bwd_factor : kc.attention_dropout_fwd_factor);
      CHECK(plain / (model.time(op).time_s - launch) == doctest::Approx(factor).epsilon(1e-9));
    }
  // cuDNN's forward loses about half its rate, FlashAttention-2 about a sixth (H200 measurements).
  CHECK(kc.cudnn_attention_dropout_fwd_factor < 0.6);
  CHECK(kc.attention_dropout_fwd_factor > 0.75);
}

TEST_CASE("low-precision recipes: NVFP4 GEMMs at the fp4 peak, MXFP8 and NVFP4 only on Blackwell") {
  const GpuSpec b200 = test::catalog().gpu("b200");
  const GpuSpec h100 = test::catalog().gpu("h100");
  Op g;
  g.name = "fc1";
  g.kind = OpKind::gemm;
  g.m = g.n = g.k = 8192;
  g.flops = 2.0 * g.m * g.n * g.k;
  g.bytes = 3 * 8192.0 * 8192 * 2;
  const KernelCoefficients kc;
  const double fp8 = KernelModel(b200, Precision::fp8, kc, LowPrecisionRecipe::mxfp8).time(g).time_s;
  const double fp4 = KernelModel(b200, Precision::fp8, kc, LowPrecisionRecipe::nvfp4).time(g).time_s;
  CHECK(fp4 < 0.6 * fp8);  // 9000 vs 4500 dense TFLOP/s
  CHECK(b200.recipe_unsupported(LowPrecisionRecipe::nvfp4).empty());
  CHECK(b200.recipe_unsupported(LowPrecisionRecipe::mxfp8).empty());
  CHECK_FALSE(h100.recipe_unsupported(LowPrecisionRecipe::mxfp8).empty());
  CHECK_FALSE(h100.recipe_unsupported(LowPrecisionRecipe::nvfp4).empty());
  CHECK(h100.recipe_unsupported(LowPrecisionRecipe::blockwise).empty());
  CHECK(recipe_from_string("tensorwise") == LowPrecisionRecipe::tensorwise);
  CHECK(recipe_from_string("fp8") == std::nullopt);
  CHECK(std::string(to_string(LowPrecisionRecipe::nvfp4)) == "nvfp4");
}
}

TEST_SUITE("costmodel") {
TEST_CASE("KernelModel::time: long-sequence attention never runs faster than the tensor-core peak") {
  const GpuSpec h100 = test::catalog().gpu("h100-sxm");
  KernelCoefficients kc;
  // Coefficients at their most generous: with the key-loop factor at 1M keys the product would be
  // ~1.45 of peak.
  kc.gemm_efficiency = 1.0;
  kc.gemm_k_overhead = 0;
  kc.attention_fwd_efficiency = 0.9;
  const KernelModel model(h100, Precision::bf16, kc);
  Op op = gemm(1 << 20, 1 << 20, 128);
  op.kind = OpKind::attention;
  op.name = "flash_attention";
  op.key_loop_scaling = true;
  op.bytes = 1e9;  // flash attention keeps the scores on chip: compute-bound
  const double launch = kc.launch_overhead_us * 1e-6;
  CHECK(model.time(op).time_s - launch >= op.flops / h100.peak_flops(Precision::bf16) * (1 - 1e-12));
}
}

TEST_SUITE("costmodel") {
TEST_CASE("attention: cuDNN's fused kernel has its own coefficients, and head dims past 128 gain nothing per FLOP") {
  const GpuSpec h100 = test::catalog().gpu("h100-sxm");
  const KernelCoefficients kc = default_calibration(h100).kernel;
  const KernelModel model(h100, Precision::bf16, kc);
  auto causal = [](double seq, double head_dim, bool cudnn) { return attention(seq, seq / 2, head_dim, 32, cudnn); };
  // Hopper: cuDNN ~1.5-1.7x FlashAttention-2 (H200 measurements), more so as the key loop grows.
  const double at2k = model.time(causal(2048, 128, false)).time_s / model.time(causal(2048, 128, true)).time_s;
  const double at64k = model.time(causal(65536, 128, false)).time_s / model.time(causal(65536, 128, true)).time_s;
  CHECK(at2k > 1.3);
  CHECK(at64k > 1.4);
  CHECK(at64k < 2.0);
  // Per FLOP, a 192-wide head (MLA's queries and keys) is no faster than a 128-wide one.
  const Op h192 = causal(16384, 192, true), h128 = causal(16384, 128, true);
  CHECK(model.time(h192).time_s / h192.flops >= model.time(h128).time_s / h128.flops * (1 - 1e-3));  // launch cost aside
  // Without Hopper measurements (Ampere) cuDNN's coefficients are FlashAttention-2's.
  const GpuSpec a100 = test::catalog().gpu("a100-80gb");
  const KernelModel ampere(a100, Precision::bf16, default_calibration(a100).kernel);
  CHECK(ampere.time(causal(8192, 128, true)).time_s == doctest::Approx(ampere.time(causal(8192, 128, false)).time_s));
}

TEST_CASE("attention: fp8 attention runs its products at the fp8 rate, its exponentials at the special-function rate") {
  auto speedup = [](const GpuSpec& gpu, double head_dim, bool backward) {
    const KernelCoefficients kc = default_calibration(gpu).kernel;
    const KernelModel model(gpu, Precision::fp8, kc);
    Op op = attention(8192, 4096, head_dim, 32, true);
    if (backward) {
      op.name = "cudnn_attention_bwd";
      op.flops *= 2.5;
    }
    const double launch = kc.launch_overhead_us * 1e-6;
    const double bf16 = model.time(op).time_s - launch;
    op.fp8_attention = true;
    return bf16 / (model.time(op).time_s - launch);
  };
  const GpuSpec h100 = test::catalog().gpu("h100-sxm"), b200 = test::catalog().gpu("b200");
  const KernelCoefficients kc = default_calibration(h100).kernel;
  const double tensor_cores = h100.peak_flops(Precision::fp8) / h100.peak_flops(Precision::bf16) * kc.fp8_gemm_factor;
  // Faster than bf16, slower than the tensor cores' ratio: the exponentials do not speed up.
  const double fwd = speedup(h100, 128, false), bwd = speedup(h100, 128, true);
  CHECK(fwd > 1.2);
  CHECK(fwd < tensor_cores);
  // The share of exponentials at the datasheet rates: 1 per score against 4 x 128 FLOPs forward,
  // 132 SMs x 16 per clock at the boost clock against the bf16 peak.
  const double exps = 1 / (h100.sm_count * 16.0 * h100.boost_clock_MHz * 1e6), mm = 512 / h100.peak_flops(Precision::bf16);
  const double share = exps / (exps + mm);
  CHECK(1 / fwd == doctest::Approx((1 - share) / tensor_cores + share).epsilon(1e-6));
  // Backward has 2.5x the products per exponential: it gains more; a 64-wide head, less.
  CHECK(bwd > fwd);
  CHECK(speedup(h100, 64, false) < fwd);
  // Blackwell doubles the tensor cores' rate per SM but not the special-function units': less gain.
  CHECK(speedup(b200, 128, false) < fwd);
  // Without the flag nothing changes, and a GPU without fp8 tensor cores runs it at the bf16 rate.
  const GpuSpec a100 = test::catalog().gpu("a100-80gb");
  const KernelModel ampere(a100, Precision::bf16, default_calibration(a100).kernel);
  Op op = attention(8192, 4096, 128, 32, true);
  const double t = ampere.time(op).time_s;
  op.fp8_attention = true;
  CHECK(ampere.time(op).time_s == doctest::Approx(t).epsilon(1e-12));
}
}
