#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "costmodel/memory_model.h"
#include "costmodel/predictor.h"
#include "test_util.h"

using namespace strata;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The setting of Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
// Models", §4): GPT-3 175B (MHA, GELU, dropout), fp16, unfused attention.
Job korthikanti_job(int tp, bool sp) {
  Job job = test::gpt3_175b_job();
  job.training.precision = Precision::fp16;
  job.runtime.flash_attention = false;
  job.plan.tp = tp;
  job.plan.sequence_parallel = sp;
  job.plan.cp = 1;
  job.plan.micro_batch_size = 1;
  return job;
}

}  // namespace

TEST_SUITE("costmodel") {
TEST_CASE("layer_activation_bytes") {
  const double s = 2048, b = 1, h = 12288, a = 96;
  const double sbh = s * b * h;
  REQUIRE(test::catalog().model("gpt3-175b").dropout);

  SUBCASE("no parallelism, no recompute: sbh(34 + 5as/h)  (Korthikanti eq. 1)") {
    Job job = korthikanti_job(1, false);
    CHECK(layer_activation_bytes(job, RecomputeGranularity::none) == doctest::Approx(sbh * (34 + 5 * a * s / h)).epsilon(1e-12));
  }
  SUBCASE("tensor parallelism: sbh(10 + 24/t + 5as/(ht))  (eq. 2)") {
    for (int t : {2, 4, 8}) {
      CAPTURE(t);
      Job job = korthikanti_job(t, false);
      CHECK(layer_activation_bytes(job, RecomputeGranularity::none) ==
            doctest::Approx(sbh * (10 + 24.0 / t + 5 * a * s / (h * t))).epsilon(1e-12));
    }
  }
  SUBCASE("tensor + sequence parallelism: sbh/t (34 + 5as/h)  (eq. 3)") {
    for (int t : {2, 8}) {
      CAPTURE(t);
      Job job = korthikanti_job(t, true);
      CHECK(layer_activation_bytes(job, RecomputeGranularity::none) ==
            doctest::Approx(sbh / t * (34 + 5 * a * s / h)).epsilon(1e-12));
    }
  }
  SUBCASE("selective recompute with TP + SP: 34 sbh / t  (§5)") {
    for (int t : {1, 8}) {
      CAPTURE(t);
      Job job = korthikanti_job(t, t > 1);
      CHECK(layer_activation_bytes(job, RecomputeGranularity::selective) == doctest::Approx(34 * sbh / t).epsilon(1e-12));
    }
  }
  SUBCASE("full recompute keeps the layer input: 2sbh/t with SP, 2sbh without") {
    CHECK(layer_activation_bytes(korthikanti_job(8, true), RecomputeGranularity::full) == doctest::Approx(2 * sbh / 8).epsilon(1e-12));
    CHECK(layer_activation_bytes(korthikanti_job(8, false), RecomputeGranularity::full) == doctest::Approx(2 * sbh).epsilon(1e-12));
  }
  SUBCASE("sequence parallelism saves exactly the 10sbh(1 - 1/t) of the replicated tensors") {
    Job tp = korthikanti_job(8, false), tpsp = korthikanti_job(8, true);
    CHECK(layer_activation_bytes(tp, RecomputeGranularity::none) - layer_activation_bytes(tpsp, RecomputeGranularity::none) ==
          doctest::Approx(10 * sbh * (1 - 1.0 / 8)).epsilon(1e-9));
  }
  SUBCASE("a GELU model without dropout drops the masks: sbh(32 + 2as/h)") {
    // Eq. 1 less the two sbh dropout masks and the as^2b mask + 2as^2b dropout output.
    Job job = korthikanti_job(1, false);
    job.model.dropout = false;
    CHECK(layer_activation_bytes(job, RecomputeGranularity::none) == doctest::Approx(sbh * (32 + 2 * a * s / h)).epsilon(1e-12));
  }
  SUBCASE("activations scale linearly with the micro-batch and with the sequence per CP rank") {
    Job job = korthikanti_job(8, true);
    const double one = layer_activation_bytes(job, RecomputeGranularity::selective);
    job.plan.micro_batch_size = 4;
    CHECK(layer_activation_bytes(job, RecomputeGranularity::selective) == doctest::Approx(4 * one).epsilon(1e-12));
    job.plan.micro_batch_size = 1;
    job.plan.cp = 2;
    CHECK(layer_activation_bytes(job, RecomputeGranularity::selective) == doctest::Approx(one / 2).epsilon(1e-12));
  }
  SUBCASE("with flash attention no s^2 term is stored, so selective recompute saves nothing more") {
    Job job = korthikanti_job(8, true);
    job.runtime.flash_attention = true;
    const double none = layer_activation_bytes(job, RecomputeGranularity::none);
    CHECK(none == doctest::Approx(layer_activation_bytes(job, RecomputeGranularity::selective)).epsilon(1e-12));
    CHECK(none < 35 * sbh / 8);  // 34 sbh/t plus the small fp32 softmax statistics
    CHECK(none > 34 * sbh / 8);
  }
  SUBCASE("fp8 through Transformer Engine: linear inputs saved as fp8, an fp8 copy of the attention output") {
    // GPT-3 175B, tp 8 + SP, flash attention: the QKV and fc1 inputs (sbh/t each) and the fc2
    // input (4sbh/t) drop from 2 bytes to 1; the output projection's input adds 1 byte (sbh/t).
    Job job = korthikanti_job(8, true);
    job.runtime.flash_attention = true;
    job.training.precision = Precision::bf16;
    const double bf16 = layer_activation_bytes(job, RecomputeGranularity::none);
    job.training.precision = Precision::fp8;
    CHECK(bf16 - layer_activation_bytes(job, RecomputeGranularity::none) == doctest::Approx((1 + 1 + 4 - 1) * sbh / 8).epsilon(1e-9));
    CHECK(layer_activation_bytes(job, RecomputeGranularity::full) == doctest::Approx(2 * sbh / 8).epsilon(1e-12));
    // Unfused attention does not keep its output: the projection's input is only the fp8 copy.
    job.runtime.flash_attention = false;
    const double unfused_fp8 = layer_activation_bytes(job, RecomputeGranularity::none);
    job.training.precision = Precision::bf16;
    CHECK(layer_activation_bytes(job, RecomputeGranularity::none) - unfused_fp8 == doctest::Approx(7 * sbh / 8).epsilon(1e-9));
    // FSDP stacks do not go through Transformer Engine: no change.
    job.runtime.framework = Framework::fsdp;
    const double fsdp_bf16 = layer_activation_bytes(job, RecomputeGranularity::none);
    job.training.precision = Precision::fp8;
    CHECK(layer_activation_bytes(job, RecomputeGranularity::none) == doctest::Approx(fsdp_bf16).epsilon(1e-12));
  }
  SUBCASE("fp32 activations are twice fp16") {
    Job job = korthikanti_job(8, true);
    const double f16 = layer_activation_bytes(job, RecomputeGranularity::full);
    job.training.precision = Precision::fp32;
    CHECK(layer_activation_bytes(job, RecomputeGranularity::full) == doctest::Approx(2 * f16));
  }
}

TEST_CASE("stage_params_per_gpu") {
  SUBCASE("the stages of a TP=1 pipeline hold the whole model (plus the tied output copy on the last stage)") {
    for (const char* name : {"gpt3-175b", "llama2-70b"}) {
      CAPTURE(name);
      Job job = test::gpt3_175b_job();
      job.model = test::catalog().model(name);
      job.plan.tp = 1;
      job.plan.pp = 4;
      job.runtime.vocab_divisor = 1;  // the model's own vocabulary, no Megatron padding
      const auto layers = resolve_stage_layers(job.plan, job.model.num_layers);
      double sum = 0;
      for (int s = 0; s < 4; ++s) sum += stage_params_per_gpu(job, s, layers[s]);
      const double tied_copy = job.model.tied_embeddings ? static_cast<double>(job.model.vocab_size) * static_cast<double>(job.model.hidden_size) : 0;
      CHECK(sum == doctest::Approx(job.model.total_params(job.training.seq_length) + tied_copy).epsilon(1e-12));
    }
  }
  SUBCASE("a middle stage holds its layers' parameters split over TP") {
    Job job = test::gpt3_175b_job();
    CHECK(stage_params_per_gpu(job, 3, 6) == doctest::Approx(6 * job.model.layer_params() / 8).epsilon(1e-12));
  }
}

TEST_CASE("stage_memory") {
  Job job = test::gpt3_175b_job();  // tp8 pp16 dp8, Megatron
  job.plan.distributed_optimizer = false;
  const int stage = 5, layers = 6;  // a middle stage: no embedding, no logits
  const double P = stage_params_per_gpu(job, stage, layers);

  SUBCASE("fp8 through Transformer Engine keeps an fp8 weight and its transpose per decoder linear") {
    const MemoryBreakdown bf16 = stage_memory(job, stage, layers, 4);
    job.training.precision = Precision::fp8;
    const MemoryBreakdown fp8 = stage_memory(job, stage, layers, 4);
    CHECK((fp8.weights_GiB - bf16.weights_GiB) * kGiB == doctest::Approx(2 * decoder_params_per_gpu(job, layers)).epsilon(1e-12));
    CHECK(fp8.gradients_GiB == bf16.gradients_GiB);
    CHECK(fp8.optimizer_GiB == bf16.optimizer_GiB);
    CHECK(decoder_params_per_gpu(job, layers) == doctest::Approx(P).epsilon(1e-12));  // a middle stage: layers only
  }
  SUBCASE("DeepSpeed's pipe buffers keep each in-flight micro-batch's output partition until its backward") {
    // GPT-3 175B: 2048 tokens x 12288 x 2 B per micro-batch, 1/tp of it on each TP rank.
    const double output = 2048.0 * 12288 * 2 / 8;
    const MemoryBreakdown mg = stage_memory(job, stage, layers, 4);
    job.runtime.framework = Framework::deepspeed;
    const MemoryBreakdown ds = stage_memory(job, stage, layers, 4);
    CHECK((ds.activations_GiB - mg.activations_GiB) * kGiB == doctest::Approx(4 * output).epsilon(1e-9));
    // The last stage sends nothing forward.
    const int last = job.plan.pp - 1;
    const double ds_last = stage_memory(job, last, layers, 4).activations_GiB;
    job.runtime.framework = Framework::megatron;
    CHECK(ds_last == doctest::Approx(stage_memory(job, last, layers, 4).activations_GiB).epsilon(1e-12));
  }
  SUBCASE("the first stage keeps the embedding's dropout mask and an embedding norm's input per in-flight micro-batch") {
    // GPT-3 175B (dropout, tp 8 with sequence parallelism): a 1-byte mask per element of the
    // 2048 x 12288 / 8 shard per in-flight micro-batch; nothing else of the embedding's output.
    job.plan.sequence_parallel = true;
    const double shard = 2048.0 * 12288 / 8;
    auto first_minus_middle = [&](int in_flight) {
      return (stage_memory(job, 0, layers, in_flight).activations_GiB - stage_memory(job, stage, layers, in_flight).activations_GiB) * kGiB;
    };
    REQUIRE(job.model.dropout);
    CHECK(first_minus_middle(4) == doctest::Approx(4 * shard).epsilon(1e-9));
    job.model.dropout = false;  // Llama-style: the embedding keeps nothing
    CHECK(first_minus_middle(4) == doctest::Approx(0).epsilon(1e-9));
    job.model.embedding_norm = true;  // BLOOM: the norm keeps its bf16 input
    CHECK(first_minus_middle(4) == doctest::Approx(4 * 2 * shard).epsilon(1e-9));
    // Interleaved, only the first chunk embeds: never more than every micro-batch of the step.
    job.plan.vpp = 2;
    const std::int64_t m = job.num_micro_batches();
    REQUIRE(m < 1000);
    CHECK(first_minus_middle(1000) == doctest::Approx(static_cast<double>(m) * 2 * shard).epsilon(1e-9));
  }
  SUBCASE("Megatron mixed precision: 2 B weights, 4 B fp32 main grads, 12 B Adam states per parameter") {
    MemoryBreakdown m = stage_memory(job, stage, layers, 1);
    CHECK(m.weights_GiB * kGiB == doctest::Approx(2 * P).epsilon(1e-12));
    CHECK(m.gradients_GiB * kGiB == doctest::Approx(4 * P).epsilon(1e-12));
    CHECK(m.optimizer_GiB * kGiB == doctest::Approx(12 * P).epsilon(1e-12));
    CHECK(m.logits_GiB == 0);
  }
  SUBCASE("the distributed optimizer shards exactly the 12 B optimizer part over dp*cp") {
    job.plan.distributed_optimizer = true;
    MemoryBreakdown d8 = stage_memory(job, stage, layers, 1);
    CHECK(d8.optimizer_GiB * kGiB == doctest::Approx(12 * P / 8).epsilon(1e-12));
    job.plan.dp = 16;
    MemoryBreakdown d16 = stage_memory(job, stage, layers, 1);
    CHECK(d16.optimizer_GiB == doctest::Approx(d8.optimizer_GiB / 2).epsilon(1e-12));
    CHECK(d16.weights_GiB == d8.weights_GiB);
    CHECK(d16.gradients_GiB == d8.gradients_GiB);
    job.plan.cp = 2;  // Megatron shards over the dp x cp group
    CHECK(stage_memory(job, stage, layers, 1).optimizer_GiB == doctest::Approx(d8.optimizer_GiB / 4).epsilon(1e-12));
  }
  SUBCASE("the precision-aware optimizer keeps 16-bit remainders of the master weights and moments in their dtypes") {
    job.plan.distributed_optimizer = true;
    OptimizerSpec& o = job.training.optimizer;
    o.precision_aware = true;
    o.exp_avg = StateDtype::bf16;
    o.exp_avg_sq = StateDtype::bf16;
    // bf16 parameters: 2 B of remainder + 2 + 2 B of moments, sharded over dp = 8 (Adam's 12 B before).
    CHECK(stage_memory(job, stage, layers, 1).optimizer_GiB * kGiB == doctest::Approx(6 * P / 8).epsilon(1e-12));
    o.exp_avg_sq = StateDtype::fp8;
    CHECK(stage_memory(job, stage, layers, 1).optimizer_GiB * kGiB == doctest::Approx(5 * P / 8).epsilon(1e-12));
    // fp8 with current scaling and fp32 main params: Megatron keeps its own fp32 master weights.
    job.training.precision = Precision::fp8;
    job.training.recipe = LowPrecisionRecipe::tensorwise;
    CHECK(stage_memory(job, stage, layers, 1).optimizer_GiB * kGiB == doctest::Approx(7 * P / 8).epsilon(1e-12));
    job.training.recipe = LowPrecisionRecipe::delayed;  // FusedAdam casts with delayed scaling itself: remainders
    CHECK(stage_memory(job, stage, layers, 1).optimizer_GiB * kGiB == doctest::Approx(5 * P / 8).epsilon(1e-12));
    // The gradients stay in their buffer's dtype.
    CHECK(stage_memory(job, stage, layers, 1).gradients_GiB * kGiB == doctest::Approx(4 * P).epsilon(1e-12));
  }
  SUBCASE("copies of the distributed optimizer each shard the state over their share of dp*cp") {
    job.plan.distributed_optimizer = true;
    const double one = stage_memory(job, stage, layers, 1).optimizer_GiB;
    job.plan.optimizer_instances = 4;  // dp 8: two ranks per copy
    CHECK(stage_memory(job, stage, layers, 1).optimizer_GiB == doctest::Approx(4 * one).epsilon(1e-12));
    CHECK(stage_memory(job, stage, layers, 1).optimizer_GiB * kGiB == doctest::Approx(12 * P / 2).epsilon(1e-12));
  }
  SUBCASE("an offloaded share of the optimizer state leaves the GPU; one-moment optimizers keep 8 B") {
    const double adam = stage_memory(job, stage, layers, 1).optimizer_GiB;
    job.training.optimizer.precision_aware = true;
    job.training.optimizer.main_params = StateDtype::fp16;  // no remainders: 2 + 4 + 4 B
    job.training.optimizer.cpu_offload_fraction = 0.75;
    CHECK(stage_memory(job, stage, layers, 1).optimizer_GiB * kGiB == doctest::Approx(0.25 * 10 * P).epsilon(1e-12));
    job.training.optimizer = OptimizerSpec{};
    job.training.optimizer.kind = OptimizerKind::sgd;
    CHECK(stage_memory(job, stage, layers, 1).optimizer_GiB == doctest::Approx(adam * 8 / 12).epsilon(1e-12));
  }
  SUBCASE("without sharding, dp does not change per-GPU state") {
    MemoryBreakdown a = stage_memory(job, stage, layers, 1);
    job.plan.dp = 64;
    CHECK(stage_memory(job, stage, layers, 1).optimizer_GiB == a.optimizer_GiB);
  }
  SUBCASE("DeepSpeed ZeRO stages shard optimizer (1), gradients (2), parameters (3)") {
    job.runtime.framework = Framework::deepspeed;
    const double dp = job.plan.dp;
    job.plan.zero_stage = 0;
    MemoryBreakdown z0 = stage_memory(job, stage, layers, 1);
    // 16-bit grads; fp32 master + moments (12) + DeepSpeed's fp32 gradient copy (4).
    REQUIRE(job.training.precision == Precision::bf16);
    CHECK(z0.weights_GiB * kGiB == doctest::Approx(2 * P).epsilon(1e-12));
    CHECK(z0.gradients_GiB * kGiB == doctest::Approx(2 * P).epsilon(1e-12));
    CHECK(z0.optimizer_GiB * kGiB == doctest::Approx(16 * P).epsilon(1e-12));
    // fp16's FP16_Optimizer casts each gradient to fp32 and flattens the casts: both copies are
    // alive in its step (4 + 4).
    job.training.precision = Precision::fp16;
    CHECK(stage_memory(job, stage, layers, 1).optimizer_GiB * kGiB == doctest::Approx(20 * P).epsilon(1e-12));
    job.training.precision = Precision::bf16;
    job.plan.zero_stage = 1;
    MemoryBreakdown z1 = stage_memory(job, stage, layers, 1);
    // Partitioned fp32 states + fp32 grad partition + averaged fp16 grads: 18 B, over dp.
    CHECK(z1.optimizer_GiB * kGiB == doctest::Approx(18 * P / dp).epsilon(1e-12));
    CHECK(z1.gradients_GiB == z0.gradients_GiB);
    CHECK(z1.weights_GiB == z0.weights_GiB);
    CHECK(z1.buffers_GiB > z0.buffers_GiB);  // reduce / all-gather buckets
    job.plan.zero_stage = 2;
    MemoryBreakdown z2 = stage_memory(job, stage, layers, 1);
    CHECK(z2.gradients_GiB == doctest::Approx(z0.gradients_GiB / dp).epsilon(1e-12));
    CHECK(z2.optimizer_GiB == z1.optimizer_GiB);
    CHECK(z2.weights_GiB == z0.weights_GiB);
    job.plan.zero_stage = 3;
    MemoryBreakdown z3 = stage_memory(job, stage, layers, 1);
    CHECK(z3.weights_GiB == doctest::Approx(z0.weights_GiB / dp).epsilon(1e-12));
    CHECK(z3.gradients_GiB == z2.gradients_GiB);
    CHECK(z3.total_GiB < z2.total_GiB);
    CHECK(z2.total_GiB < z1.total_GiB);
    CHECK(z1.total_GiB < z0.total_GiB + z1.buffers_GiB - z0.buffers_GiB);
  }
  SUBCASE("FSDP FULL_SHARD: 16 B/param of fp32 state sharded, plus two gathered bf16 layers") {
    job.runtime.framework = Framework::fsdp;
    job.plan.pp = 1;
    const double shard = job.plan.dp * job.plan.cp;
    const double P1 = stage_params_per_gpu(job, 0, layers);
    MemoryBreakdown f = stage_memory(job, 0, layers, 1);
    CHECK_FALSE(fsdp_keeps_stage_gathered(job));
    CHECK(f.gradients_GiB * kGiB == doctest::Approx(4 * P1 / shard).epsilon(1e-12));
    CHECK(f.optimizer_GiB * kGiB == doctest::Approx(8 * P1 / shard).epsilon(1e-12));
    CHECK(f.weights_GiB * kGiB == doctest::Approx(4 * P1 / shard + 2 * (P1 / layers) * 2).epsilon(1e-12));
  }
  SUBCASE("FSDP's float8 all-gather gathers the linears' weights at one byte") {
    job.runtime.framework = Framework::fsdp;
    job.training.precision = Precision::fp8;
    job.training.recipe = LowPrecisionRecipe::tensorwise;
    const double shard = job.plan.dp * job.plan.cp;
    REQUIRE(decoder_params_per_gpu(job, layers) == doctest::Approx(P).epsilon(1e-12));  // a middle stage: linears (and norms) only
    const double bf16_gather = stage_memory(job, stage, layers, 1).weights_GiB * kGiB;
    job.runtime.fp8_param_gather = true;
    CHECK(fsdp_float8_all_gather(job));
    const MemoryBreakdown f = stage_memory(job, stage, layers, 1);
    CHECK(f.weights_GiB * kGiB == doctest::Approx(4 * P / shard + P).epsilon(1e-12));  // pp 16: the whole stage, 1 byte each
    CHECK(bf16_gather == doctest::Approx(4 * P / shard + 2 * P).epsilon(1e-12));
  }
  SUBCASE("FSDP under a pipeline schedule keeps the stage's bf16 weights gathered and an unsharded fp32 gradient") {
    job.runtime.framework = Framework::fsdp;  // pp 16
    const double shard = job.plan.dp * job.plan.cp;
    MemoryBreakdown f = stage_memory(job, stage, layers, 1);
    CHECK(fsdp_keeps_stage_gathered(job));
    CHECK(f.weights_GiB * kGiB == doctest::Approx(4 * P / shard + 2 * P).epsilon(1e-12));
    CHECK(f.gradients_GiB * kGiB == doctest::Approx(4 * P / shard + 4 * P).epsilon(1e-12));
    CHECK(f.optimizer_GiB * kGiB == doctest::Approx(8 * P / shard).epsilon(1e-12));
  }
  SUBCASE("Megatron-FSDP (ZeRO-3 under Megatron) keeps its sharded weights and two gathered layers, the current and the prefetched") {
    job.plan.zero_stage = 2;
    const MemoryBreakdown z2 = stage_memory(job, stage, layers, 1);
    job.plan.zero_stage = 3;
    const MemoryBreakdown z3 = stage_memory(job, stage, layers, 1);
    const double shard = job.plan.dp * job.plan.cp;
    CHECK(z3.weights_GiB * kGiB == doctest::Approx(z2.weights_GiB * kGiB / shard + 2 * (P / layers) * 2).epsilon(1e-12));
    // Hybrid sharding (HSDP) over 2 replica groups: each shards over half the ranks; with the outer
    // "optim" strategy the replicas split the optimizer state again.
    job.plan.optimizer_instances = 2;
    const MemoryBreakdown hsdp = stage_memory(job, stage, layers, 1);
    CHECK(hsdp.gradients_GiB == doctest::Approx(2 * z3.gradients_GiB).epsilon(1e-12));
    CHECK(hsdp.optimizer_GiB == doctest::Approx(2 * z3.optimizer_GiB).epsilon(1e-12));
    job.plan.outer_optimizer_sharding = true;
    const MemoryBreakdown outer = stage_memory(job, stage, layers, 1);
    CHECK(outer.gradients_GiB == hsdp.gradients_GiB);
    CHECK(outer.optimizer_GiB == doctest::Approx(z3.optimizer_GiB).epsilon(1e-12));
  }
  SUBCASE("stored activations: in-flight micro-batches x layers x the per-layer bytes") {
    const double per_layer = layer_activation_bytes(job, RecomputeGranularity::selective);
    for (int k : {1, 3, 16}) {
      MemoryBreakdown m = stage_memory(job, stage, layers, k);
      CHECK(m.activations_GiB * kGiB == doctest::Approx(k * layers * per_layer).epsilon(1e-12));
    }
    // Fragmentation is a fixed share of activation-like memory, and the total adds up.
    MemoryBreakdown m = stage_memory(job, stage, layers, 4);
    CHECK(m.total_GiB == doctest::Approx(m.weights_GiB + m.gradients_GiB + m.optimizer_GiB + m.activations_GiB + m.logits_GiB +
                                         m.buffers_GiB + m.fragmentation_GiB).epsilon(1e-12));
  }
  SUBCASE("full recompute stores only layer inputs, plus one layer's working set") {
    job.plan.recompute.granularity = RecomputeGranularity::full;
    MemoryBreakdown m = stage_memory(job, stage, layers, 4);
    const double expected = 4 * layers * layer_activation_bytes(job, RecomputeGranularity::full) +
                            layer_activation_bytes(job, RecomputeGranularity::none);
    CHECK(m.activations_GiB * kGiB == doctest::Approx(expected).epsilon(1e-12));
  }
  SUBCASE("the last stage holds the logits, the first the embedding output") {
    MemoryBreakdown last = stage_memory(job, job.plan.pp - 1, layers, 1);
    MemoryBreakdown mid = stage_memory(job, stage, layers, 1);
    // fp16/bf16 logits + fp32 softmax of the vocab-parallel cross entropy: (2 + 4) * s * b * V / t,
    // V = 51200: GPT-2's 50257 rows padded to a multiple of 128 * tp by Megatron.
    CHECK(last.logits_GiB * kGiB == doctest::Approx(6.0 * 2048 * 51200 / 8).epsilon(1e-12));
    CHECK(stage_memory(job, 0, layers, 1).activations_GiB > mid.activations_GiB);
    // Transformer Engine's single-pass cross entropy overwrites the 16-bit logits with their
    // gradient and saves them alone: 2 * s * b * V / t. Megatron's fused loss keeps the fp32 copy.
    job.runtime.cross_entropy = CrossEntropyKernel::single_pass;
    CHECK(stage_memory(job, job.plan.pp - 1, layers, 1).logits_GiB * kGiB == doctest::Approx(2.0 * 2048 * 51200 / 8).epsilon(1e-12));
    job.runtime.cross_entropy = CrossEntropyKernel::jit_fused;
    CHECK(stage_memory(job, job.plan.pp - 1, layers, 1).logits_GiB == last.logits_GiB);
  }
}

TEST_CASE("nccl_communicators: one per process group a step uses, each with its own buffers") {
  Job job = test::gpt3_175b_job();  // tp8 pp16 dp8, Megatron, tied embeddings
  REQUIRE(job.model.tied_embeddings);
  // world, TP, DP, pipeline group, model-parallel group; the first and last stage also join the
  // tied-embedding group.
  CHECK(nccl_communicators(job, 5) == 5);
  CHECK(nccl_communicators(job, 0) == 6);
  CHECK(nccl_communicators(job, job.plan.pp - 1) == 6);
  // DeepSpeed's pipeline engine uses a two-rank group per neighbour.
  job.runtime.framework = Framework::deepspeed;
  CHECK(nccl_communicators(job, 5) == 6);
  CHECK(nccl_communicators(job, 0) == 6);
  job.runtime.framework = Framework::megatron;
  // Context and expert parallelism add their groups.
  job.plan.cp = 2;
  job.plan.ep = 2;
  CHECK(nccl_communicators(job, 5) == 7);
  // A single GPU talks to nobody; pure data parallelism: the world and the DP group.
  job.plan = ParallelPlan{};
  CHECK(nccl_communicators(job, 0) == 0);
  job.plan.dp = 64;
  CHECK(nccl_communicators(job, 0) == 2);
  // Every communicator adds the same buffers to the stage's memory.
  const MemoryBreakdown pure_dp = stage_memory(job, 0, job.model.num_layers, 1);
  job.plan.dp = 1;
  const MemoryBreakdown single = stage_memory(job, 0, job.model.num_layers, 1);
  job.plan.dp = 8;
  job.plan.tp = 8;
  const MemoryBreakdown tp_dp = stage_memory(job, 0, job.model.num_layers, 1);
  const double per_comm = (pure_dp.buffers_GiB - single.buffers_GiB) / 2;
  CHECK(per_comm > 0);
  CHECK(tp_dp.buffers_GiB - single.buffers_GiB == doctest::Approx(4 * per_comm));  // world, TP, DP, model-parallel
}

TEST_CASE("1F1B in-flight micro-batches") {
  // PipeDream-Flush / 1F1B (Narayanan et al. 2021 §2.2.1): stage i holds min(pp - i, m).
  SUBCASE("many micro-batches") {
    Job job = test::gpt3_175b_job();  // pp 16, 192 micro-batches
    Prediction p = predict(job);
    REQUIRE(p.stages.size() == 16);
    for (int i = 0; i < 16; ++i) CHECK(p.stages[i].in_flight_micro_batches == 16 - i);
  }
  SUBCASE("fewer micro-batches than stages") {
    Job job = test::gpt3_175b_job();
    job.training.global_batch_size = 8 * 4;  // dp 8, mbs 1: 4 micro-batches
    Prediction p = predict(job);
    REQUIRE(p.stages.size() == 16);
    for (int i = 0; i < 16; ++i) CHECK(p.stages[i].in_flight_micro_batches == std::min(16 - i, 4));
  }
  SUBCASE("and memory follows: stage 1 holds one micro-batch of activations more than stage 2") {
    Job job = test::gpt3_175b_job();
    Prediction p = predict(job);
    const double per_mb = 6 * layer_activation_bytes(job, RecomputeGranularity::selective) / kGiB;
    CHECK(p.stages[1].memory.activations_GiB - p.stages[2].memory.activations_GiB == doctest::Approx(per_mb).epsilon(1e-9));
  }
}
}

TEST_SUITE("costmodel") {
TEST_CASE("stage_params_per_gpu: routed experts split over ep x etp, the rest over tp, dense-first layers per stage") {
  Job job = test::workload("deepseek-v3", "dgx-h100-ndr", 1024, 4096);
  job.plan.tp = 1;
  job.plan.pp = 1;
  job.plan.dp = 64;
  job.plan.ep = 64;
  const ModelSpec& m = job.model;
  // 58 MoE layers, and the MTP module's MoE layer on the last stage.
  REQUIRE(m.mtp_layers == 1);
  const ParamSplit all = stage_param_split(job, 0, m.num_layers);
  CHECK(all.expert == doctest::Approx(59.0 * 256 * m.expert_params() / 64).epsilon(1e-12));
  CHECK(all.dense + all.expert * 64 == doctest::Approx(m.total_params(4096) + m.mtp_params()).epsilon(1e-9));
  // Two stages: the first holds the three dense layers, so fewer expert parameters.
  job.plan.pp = 2;
  job.plan.dp = 32;
  job.plan.ep = 32;
  const ParamSplit first = stage_param_split(job, 0, 31), last = stage_param_split(job, 1, 30);
  CHECK(first.expert == doctest::Approx(28.0 * 256 * m.expert_params() / 32).epsilon(1e-12));
  CHECK(last.expert == doctest::Approx(31.0 * 256 * m.expert_params() / 32).epsilon(1e-12));
  // Expert optimizer states shard over the expert-data-parallel group: ep 32 of 32 ranks leaves 1.
  job.plan.distributed_optimizer = true;
  CHECK(job.plan.expert_data_parallel() == 1);
  const MemoryBreakdown ep32 = stage_memory(job, 1, 30, 1);
  job.plan.ep = 8;  // edp 4: the expert states shard 4 ways, the expert weights are 4x larger
  CHECK(job.plan.expert_data_parallel() == 4);
  const MemoryBreakdown ep8 = stage_memory(job, 1, 30, 1);
  CHECK(ep8.optimizer_GiB == doctest::Approx(ep32.optimizer_GiB).epsilon(1e-9));
  const double bf16_bytes = 2, GiB = 1024.0 * 1024 * 1024;
  CHECK(ep8.weights_GiB - ep32.weights_GiB == doctest::Approx(3 * last.expert * bf16_bytes / GiB).epsilon(1e-9));
}

TEST_CASE("layer_activation_bytes: MoE layers store the routed token copies") {
  Job job = test::workload("qwen3-30b-a3b", "dgx-h100-ndr", 256, 4096);
  job.plan.dp = 8;
  job.plan.ep = 8;
  job.runtime.moe_load_imbalance = 1.0;
  const double moe = layer_activation_bytes(job, RecomputeGranularity::none, LayerKind{true, false});
  job.runtime.moe_load_imbalance = 1.5;
  CHECK(layer_activation_bytes(job, RecomputeGranularity::none, LayerKind{true, false}) > moe);
  job.runtime.moe_capacity_factor = 1.0;  // drops tokens beyond the mean: no imbalance left
  CHECK(layer_activation_bytes(job, RecomputeGranularity::none, LayerKind{true, false}) == doctest::Approx(moe).epsilon(1e-12));
  CHECK(moe_tokens_per_gpu(job, 4096) == doctest::Approx(4096.0 * 8));
  // HybridEP's static per-rank budget hands the experts a buffer of the budget's rows, which they
  // keep for backward however many tokens arrived: GPT-OSS's recipes budget 5 to 7x the mean.
  job.runtime.moe_capacity_factor = 0;
  job.runtime.moe_rank_capacity_factor = 5;
  CHECK(moe_tokens_per_gpu(job, 4096) == doctest::Approx(5 * 4096.0 * 8));
  CHECK(layer_activation_bytes(job, RecomputeGranularity::none, LayerKind{true, false}) > 2 * moe);
  // Megatron-Core's paged stash keeps what arrived, in a pool of its factor x the mean tokens, or
  // (negative) of the largest count that arrives: the busiest rank's.
  job.runtime.moe_paged_stash_factor = kMegatronPagedStashFactor;
  CHECK(moe_tokens_per_gpu(job, 4096) == doctest::Approx(1.1 * 4096.0 * 8));
  job.runtime.moe_load_imbalance = 1.5;
  job.runtime.moe_paged_stash_factor = -1.2;
  CHECK(moe_tokens_per_gpu(job, 4096) == doctest::Approx(1.2 * 1.5 * 4096.0 * 8));
  job.runtime.moe_load_imbalance = 1.0;
  job.runtime.moe_paged_stash_factor = 0;
  job.runtime.moe_rank_capacity_factor = 0;

  // Megatron-Core weights the tokens by their routing probabilities inside the expert activation,
  // so its combine keeps no expert outputs; a combine that weights the outputs (DeepSpeed) keeps
  // one bf16 row of h per routed copy.
  job.runtime.moe_capacity_factor = 0;
  job.runtime.moe_load_imbalance = 1.0;
  job.training.precision = Precision::bf16;
  job.runtime.framework = Framework::megatron;
  const double megatron = layer_activation_bytes(job, RecomputeGranularity::none, LayerKind{true, false});
  job.runtime.framework = Framework::deepspeed;
  const double weighted_combine = layer_activation_bytes(job, RecomputeGranularity::none, LayerKind{true, false});
  const double copies = moe_tokens_per_gpu(job, 4096);  // micro-batch 1
  CHECK(weighted_combine - megatron == doctest::Approx(copies * 2.0 * static_cast<double>(job.model.hidden_size)).epsilon(1e-9));
}

TEST_CASE("paged stash: a pool instead of the budget's rows, and the running layer's experts at the budget's rows") {
  Job job = test::workload("qwen3-30b-a3b", "dgx-h100-ndr", 256, 4096);
  job.plan.dp = 8;
  job.plan.ep = 8;
  job.runtime.moe_grouped_gemm = true;
  job.runtime.moe_token_dedup = true;
  job.runtime.moe_rank_capacity_factor = 4;
  const int L = job.model.num_layers;
  const LayerKind moe{true, false};
  const MemoryBreakdown budget = stage_memory(job, 0, L, 1);
  const double budget_layer = layer_activation_bytes(job, RecomputeGranularity::none, moe);
  job.runtime.moe_paged_stash_factor = kMegatronPagedStashFactor;
  REQUIRE(check_plan(job).empty());
  const MemoryBreakdown stash = stage_memory(job, 0, L, 1);
  const double per_layer = budget_layer - layer_activation_bytes(job, RecomputeGranularity::none, moe);
  CHECK(per_layer > 0);
  // Every layer of the micro-batch in flight stores the pool's share, but the one whose experts
  // run, which holds the budget's rows until they are stashed.
  CHECK((budget.activations_GiB - stash.activations_GiB) * kGiB == doctest::Approx((L - 1) * per_layer).epsilon(1e-9));
  // A pinned host pool (Bridge's DeepSeek recipes: 1.0 beside 1.2 on the GPU) takes host memory
  // for the same in-flight tokens at its own factor, and no GPU memory.
  CHECK(stash.host_GiB == 0);
  job.runtime.moe_paged_stash_host_factor = 1.0;
  const MemoryBreakdown host = stage_memory(job, 0, L, 1);
  CHECK(host.total_GiB == doctest::Approx(stash.total_GiB).epsilon(1e-12));
  job.runtime.moe_paged_stash_host_factor = 2.0;
  CHECK(stage_memory(job, 0, L, 1).host_GiB == doctest::Approx(2 * host.host_GiB).epsilon(1e-9));
  job.runtime.moe_paged_stash_factor = 2 * kMegatronPagedStashFactor;
  // The GPU pool grows by (L - 1) layers' share per unit of its factor (the running layer holds the
  // budget's rows either way); the host pool holds all L layers' at 1.0.
  const double gpu_pool_per_factor = (stage_memory(job, 0, L, 1).activations_GiB - stash.activations_GiB) / kMegatronPagedStashFactor;
  CHECK(host.host_GiB == doctest::Approx(L * gpu_pool_per_factor / (L - 1)).epsilon(1e-6));
  job.runtime.moe_paged_stash_factor = kMegatronPagedStashFactor;
  job.runtime.moe_paged_stash_host_factor = 0;
  // Megatron-Core's rules: a budget, no expert offload modules, grouped experts.
  job.runtime.moe_rank_capacity_factor = 0;
  CHECK(check_plan(job).find("needs HybridEP's per-rank budget") != std::string::npos);
  job.runtime.moe_rank_capacity_factor = 4;
  job.plan.offload.modules = kOffloadExpertFc1;
  CHECK(check_plan(job).find("must not include expert_fc1, moe_act or fused_group_mlp") != std::string::npos);
  job.plan.offload.modules = 0;
  job.runtime.moe_grouped_gemm = false;
  CHECK(check_plan(job).find("SequentialMLP stashes nothing") != std::string::npos);
}

TEST_CASE("fp8 memory: fp8 parameters replace the bf16 weights, bf16 gradient buffers halve the gradients") {
  Job bf16 = test::gpt3_175b_job();
  bf16.cluster = test::catalog().cluster("dgx-h100-ndr");
  bf16.calibration = test::catalog().calibration_or_default(bf16.cluster.gpu);
  Job fp8 = bf16;
  fp8.training.precision = Precision::fp8;
  const int layers = 6;
  const MemoryBreakdown m16 = stage_memory(bf16, 1, layers, 8);
  const MemoryBreakdown m8 = stage_memory(fp8, 1, layers, 8);
  // Transformer Engine's cached fp8 weight and transpose: 2 bytes per decoder-linear parameter on top.
  CHECK(m8.weights_GiB - m16.weights_GiB == doctest::Approx(2.0 * decoder_params_per_gpu(fp8, layers) / kGiB));
  // fp8 saved GEMM inputs make the activations smaller, never larger.
  CHECK(m8.activations_GiB < m16.activations_GiB);

  // With --fp8-param-gather the fp8 copy is the parameter: no more weight memory than in bf16.
  fp8.runtime.fp8_param_gather = true;
  const MemoryBreakdown params8 = stage_memory(fp8, 1, layers, 8);
  CHECK(params8.weights_GiB <= m16.weights_GiB + 1e-9);
  CHECK(params8.total_GiB < m16.total_GiB);

  fp8.runtime.grad_reduce_in_bf16 = true;
  CHECK(stage_memory(fp8, 1, layers, 8).gradients_GiB == doctest::Approx(m16.gradients_GiB / 2));

  // NVFP4 keeps two 4-bit copies with a scale per 16 elements: 1.125 bytes per parameter.
  CHECK(quantized_weight_cache_bytes(LowPrecisionRecipe::nvfp4) == doctest::Approx(1.125));
  CHECK(quantized_input_bytes(LowPrecisionRecipe::mxfp8) == doctest::Approx(1 + 1.0 / 32));
}

TEST_CASE("bf16 first/last layers of a low-precision run: no quantized weight copy, bf16 saved inputs, bf16 GEMM rate") {
  // GPT-3 175B, pp 16 (6 layers per stage), fp8 current scaling on H100.
  Job job = test::gpt3_175b_job();
  job.cluster = test::catalog().cluster("dgx-h100-ndr");
  job.calibration = test::catalog().calibration_or_default(job.cluster.gpu);
  job.training.precision = Precision::fp8;
  job.training.recipe = LowPrecisionRecipe::tensorwise;
  const Prediction all_fp8 = predict(job);
  const MemoryBreakdown first_fp8 = stage_memory(job, 0, 6, 16), middle_fp8 = stage_memory(job, 7, 6, 16);
  job.runtime.bf16_first_layers = 2;
  job.runtime.bf16_last_layers = 1;
  REQUIRE(check_plan(job).empty());
  CHECK(layer_kind(job, 1).bf16);
  CHECK_FALSE(layer_kind(job, 2).bf16);
  CHECK(layer_kind(job, 95).bf16);
  CHECK_FALSE(uniform_layers(job));
  // Stage 0 holds layers 0-5: two of them keep no 2-byte quantized weight copy and save bf16 inputs.
  const MemoryBreakdown first = stage_memory(job, 0, 6, 16);
  CHECK(first_fp8.weights_GiB - first.weights_GiB == doctest::Approx(2 * 2.0 * decoder_params_per_gpu(job, 1) / kGiB));
  CHECK(first.activations_GiB > first_fp8.activations_GiB);
  // A middle stage is untouched.
  CHECK(stage_memory(job, 7, 6, 16).total_GiB == doctest::Approx(middle_fp8.total_GiB));
  // The end stages run slower, the middle ones as before.
  const Prediction mixed = predict(job);
  CHECK(mixed.stages.front().forward_s > all_fp8.stages.front().forward_s);
  CHECK(mixed.stages.back().forward_s > all_fp8.stages.back().forward_s);
  CHECK(mixed.stages[7].forward_s == doctest::Approx(all_fp8.stages[7].forward_s));
  CHECK(mixed.iteration_time_s > all_fp8.iteration_time_s);
  // Megatron's checks: not with delayed scaling, at most a stage's share of layers, fp8 runs only.
  job.training.recipe = LowPrecisionRecipe::delayed;
  CHECK(check_plan(job).find("delayed scaling does not support") != std::string::npos);
  job.training.recipe = LowPrecisionRecipe::tensorwise;
  job.runtime.bf16_last_layers = 7;
  CHECK(check_plan(job).find("between 0 and the layers per pipeline stage (6)") != std::string::npos);
  job.runtime.bf16_last_layers = 1;
  job.training.precision = Precision::bf16;
  CHECK(check_plan(job).find("need an fp8 or fp4 run") != std::string::npos);
}
}

TEST_SUITE("costmodel") {
TEST_CASE("layer_activation_bytes: selective recompute modules keep less, each what it re-runs") {
  Job job = test::workload("qwen3-30b-a3b", "dgx-h100-ndr", 256, 4096);
  job.plan.ep = 8;
  job.plan.dp = 32;
  job.plan.recompute.granularity = RecomputeGranularity::selective;
  const LayerKind moe{true, false};
  const double core = layer_activation_bytes(job, RecomputeGranularity::selective, moe);  // flash: nothing to save
  CHECK(core == layer_activation_bytes(job, RecomputeGranularity::none, moe));
  const double eb = 2, sbh = 4096.0 * 2048, fe = 768;
  const double tok = moe_tokens_per_gpu(job, 4096);
  job.plan.recompute.modules = kRecomputeMoeAct;  // the experts' activation outputs (fc2 inputs)
  CHECK(core - layer_activation_bytes(job, RecomputeGranularity::selective, moe) == doctest::Approx(eb * tok * fe).epsilon(1e-12));
  job.plan.recompute.modules = kRecomputeLayernorm;  // the MoE norm's output (router and dispatch input)
  CHECK(core - layer_activation_bytes(job, RecomputeGranularity::selective, moe) == doctest::Approx(eb * sbh).epsilon(1e-12));
  // The whole MoE block keeps only its input; with layernorm as well, its output is not saved twice.
  job.plan.recompute.modules = kRecomputeMoe;
  const double whole = layer_activation_bytes(job, RecomputeGranularity::selective, moe);
  CHECK(whole < core - eb * tok * fe);
  job.plan.recompute.modules = kRecomputeMoe | kRecomputeLayernorm | kRecomputeMoeAct;
  CHECK(layer_activation_bytes(job, RecomputeGranularity::selective, moe) == doctest::Approx(whole).epsilon(1e-12));
  // Unfused attention keeps its scores unless the attention core is recomputed.
  job.runtime.flash_attention = false;
  job.plan.recompute.modules = kRecomputeMoeAct;
  const double scores_kept = layer_activation_bytes(job, RecomputeGranularity::selective, moe);
  job.plan.recompute.modules = kRecomputeMoeAct | kRecomputeCoreAttn;
  CHECK(layer_activation_bytes(job, RecomputeGranularity::selective, moe) < scores_kept);
}

TEST_CASE("MTP depths sharing one module: the last stage holds its weights once, its activations per depth") {
  Job job = test::workload("deepseek-v3", "dgx-h100-ndr", 1024, 4096);
  job.plan = ParallelPlan{};
  job.plan.tp = 2;
  job.plan.pp = 16;
  job.plan.ep = 64;
  job.plan.dp = 32;
  job.plan.sequence_parallel = true;
  job.plan.distributed_optimizer = true;
  job.model.mtp_layers = 2;
  const int last = job.plan.pp - 1;
  const ParamSplit own = mtp_param_split(job, last);
  job.model.mtp_repeated_layer = true;
  const ParamSplit shared = mtp_param_split(job, last);
  CHECK(shared.dense == doctest::Approx(own.dense / 2).epsilon(1e-12));
  CHECK(shared.expert == doctest::Approx(own.expert / 2).epsilon(1e-12));
  CHECK(mtp_param_split(job, 0).total() == 0);
  const Prediction p = predict(job);
  job.model.mtp_repeated_layer = false;
  const Prediction q = predict(job);
  CHECK(p.stages[last].memory.weights_GiB < q.stages[last].memory.weights_GiB);
  CHECK(p.stages[last].memory.activations_GiB == doctest::Approx(q.stages[last].memory.activations_GiB).epsilon(1e-12));
  CHECK(p.stages[0].memory.total_GiB == doctest::Approx(q.stages[0].memory.total_GiB).epsilon(1e-12));
}

TEST_CASE("fine-grained activation offloading: what each module's saved tensors weigh, the size floor, the margin") {
  Job job = test::workload("qwen3-30b-a3b", "dgx-h100-ndr", 256, 4096);
  job.plan.ep = 8;
  job.plan.dp = 32;
  const LayerKind moe{true, false};
  const RecomputeGranularity none = RecomputeGranularity::none;
  const double kept = layer_activation_bytes(job, none, moe);
  CHECK(layer_offloaded_bytes(job, none, moe) == 0);
  // Qwen3-30B-A3B at tp 1, 4096 tokens: 32 query heads and 4 KV heads of 128, hidden 2048, experts
  // of 768 (gated), bf16.
  const double eb = 2, s = 4096, q = 32 * 128, kv = 4 * 128, h = 2048, fe = 768;
  const double tok = moe_tokens_per_gpu(job, s);
  auto offloaded_by = [&](unsigned modules) {
    job.plan.offload.modules = modules;
    const double off = layer_offloaded_bytes(job, none, moe);
    // What goes to the host is what the layer no longer keeps on the GPU.
    CHECK(kept - layer_activation_bytes(job, none, moe) == doctest::Approx(off).epsilon(1e-12));
    return off;
  };
  CHECK(offloaded_by(kOffloadCoreAttn) == doctest::Approx(eb * s * (q + 2 * kv)).epsilon(1e-12));  // Q, K, V
  CHECK(offloaded_by(kOffloadCoreAttn | kOffloadAttnProj) == doctest::Approx(eb * s * (2 * q + 2 * kv)).epsilon(1e-12));
  CHECK(offloaded_by(kOffloadQkvLinear) == doctest::Approx(2 * eb * s * h).epsilon(1e-12));  // LayerNormLinear's input and ln_out
  CHECK(offloaded_by(kOffloadAttnNorm) == 0);  // fused into the QKV linear: an IdentityOp
  CHECK(offloaded_by(kOffloadMlpNorm) == doctest::Approx(eb * s * h).epsilon(1e-12));  // the MoE block's standalone norm
  CHECK(offloaded_by(kOffloadExpertFc1) == doctest::Approx(eb * tok * h).epsilon(1e-12));
  CHECK(offloaded_by(kOffloadMoeAct) == doctest::Approx(eb * tok * 2 * fe).epsilon(1e-12));
  CHECK(offloaded_by(kOffloadFusedGroupMlp) == doctest::Approx(eb * tok * (h + 3 * fe)).epsilon(1e-12));
  // Recomputing the activation leaves fc2's input out of the fused MLP's group: it is not kept.
  job.plan.recompute.granularity = RecomputeGranularity::selective;
  job.plan.recompute.modules = kRecomputeMoeAct;
  job.plan.offload.modules = kOffloadFusedGroupMlp;
  CHECK(layer_offloaded_bytes(job, RecomputeGranularity::selective, moe) == doctest::Approx(eb * tok * (h + 2 * fe)).epsilon(1e-12));
  job.plan.recompute = RecomputeSpec{};
  // Tensors under the size floor stay: K and V (4096 x 512 elements each) below it, Q (4096 x 4096) above.
  job.plan.offload.min_tensor_elements = 4096 * 512 + 1;
  CHECK(offloaded_by(kOffloadCoreAttn) == doctest::Approx(eb * s * q).epsilon(1e-12));
  job.plan.offload.min_tensor_elements = ActivationOffloadSpec{}.min_tensor_elements;
  // A fully recomputed layer keeps only its input: nothing to offload.
  CHECK(layer_offloaded_bytes(job, RecomputeGranularity::full, moe) == 0);
  {
    // In fp8 with current scaling fc1 keeps its input quantized, but offloaded it saves the 16-bit
    // original (set_save_original_input), which the host then holds; MXFP8 offloads the quantized copy.
    Job f = job;
    f.training.precision = Precision::fp8;
    f.training.recipe = LowPrecisionRecipe::tensorwise;
    f.plan.offload.modules = 0;
    const double quantized_kept = layer_activation_bytes(f, none, moe);
    f.plan.offload.modules = kOffloadExpertFc1;
    CHECK(layer_offloaded_bytes(f, none, moe) == doctest::Approx(eb * tok * h).epsilon(1e-12));
    const double q8 = quantized_input_bytes(LowPrecisionRecipe::tensorwise);
    CHECK(quantized_kept - layer_activation_bytes(f, none, moe) == doctest::Approx(q8 * tok * h).epsilon(1e-12));
    f.training.recipe = LowPrecisionRecipe::mxfp8;
    CHECK(layer_offloaded_bytes(f, none, moe) == doctest::Approx(quantized_input_bytes(LowPrecisionRecipe::mxfp8) * tok * h).epsilon(1e-12));
  }

  // The stage: every in-flight layer's offloaded tensors leave the GPU but one layer's (the last
  // layer's groups Megatron keeps, each layer's reload before its backward).
  job.plan.offload.modules = 0;
  const Prediction before = predict(job);
  job.plan.offload.modules = kOffloadCoreAttn | kOffloadAttnProj;
  const Prediction after = predict(job);
  REQUIRE(before.stages.size() == 1);
  const double off = layer_offloaded_bytes(job, none, moe);
  const double layers = job.model.num_layers * before.stages[0].in_flight_micro_batches;
  CHECK((before.stages[0].memory.activations_GiB - after.stages[0].memory.activations_GiB) * kGiB ==
        doctest::Approx((layers - 1) * off).epsilon(1e-9));
}

TEST_CASE("memory as each tool counts it: the device, the caching allocator's reservation, the live tensors") {
  Job job = test::gpt3_175b_job();  // tp8 pp16 dp8: five or six NCCL communicators per stage
  const Prediction p = predict(job);
  REQUIRE_FALSE(p.stages.empty());
  for (const StagePrediction& s : p.stages) {
    const MemoryBreakdown& m = s.memory;
    CAPTURE(s.stage);
    // Outside PyTorch's allocator: the CUDA context and NCCL's buffers, part of the buffers.
    CHECK(m.outside_allocator_GiB == doctest::Approx(0.5 + 0.25 * nccl_communicators(job, s.stage)));
    CHECK(m.outside_allocator_GiB <= m.buffers_GiB);
    CHECK(measured_as_GiB(m, MemoryMeasure::device) == m.total_GiB);
    CHECK(measured_as_GiB(m, MemoryMeasure::reserved) == doctest::Approx(m.total_GiB - m.outside_allocator_GiB));
    CHECK(measured_as_GiB(m, MemoryMeasure::allocated) ==
          doctest::Approx(m.total_GiB - m.outside_allocator_GiB - m.fragmentation_GiB));
  }
  // The published figure is the fullest GPU's, in the tool's view.
  CHECK(peak_measured_as_GiB(p, MemoryMeasure::device) == p.memory_per_gpu_GiB);
  double peak_allocated = 0;
  for (const StagePrediction& s : p.stages) peak_allocated = std::max(peak_allocated, measured_as_GiB(s.memory, MemoryMeasure::allocated));
  CHECK(peak_measured_as_GiB(p, MemoryMeasure::allocated) == peak_allocated);
  CHECK(peak_allocated < peak_measured_as_GiB(p, MemoryMeasure::reserved));
  CHECK(peak_measured_as_GiB(p, MemoryMeasure::reserved) < p.memory_per_gpu_GiB);
  CHECK(std::string(to_string(MemoryMeasure::allocated)) == "allocated");
}

TEST_CASE("CUDA context: a stack that loads every kernel module at start-up holds 1573 MiB, a lazy one 0.5 GiB") {
  Job job = test::gpt3_175b_job();
  const MemoryBreakdown lazy = stage_memory(job, 3, 6, 4);
  job.runtime.lazy_module_loading = false;
  const MemoryBreakdown eager = stage_memory(job, 3, 6, 4);
  CHECK(eager.outside_allocator_GiB - lazy.outside_allocator_GiB == doctest::Approx(1573.0 / 1024 - 0.5));
  CHECK(eager.total_GiB - lazy.total_GiB == doctest::Approx(1573.0 / 1024 - 0.5));
  // Nothing inside the allocator moves.
  CHECK(measured_as_GiB(eager, MemoryMeasure::allocated) == doctest::Approx(measured_as_GiB(lazy, MemoryMeasure::allocated)));
}
}
