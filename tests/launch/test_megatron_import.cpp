#include <doctest/doctest.h>

#include <algorithm>

#include "costmodel/json_reader.h"
#include "launch/megatron_args.h"
#include "launch/megatron_import.h"
#include "test_util.h"

using namespace strata;

namespace {

MegatronLaunch read(const std::string& text, const ModelSpec* base = nullptr) { return read_megatron_launch(text, "launch.sh", base); }

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string error_of(const std::string& text) {
  return test::input_error([&] { (void)read(text); });
}

bool has_note(const MegatronLaunch& l, const std::string& part) {
  return std::any_of(l.notes.begin(), l.notes.end(), [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

// The shape fields a Megatron launch can express (names, aliases and sources are strata's own).
void check_same_shape(const ModelSpec& a, const ModelSpec& b) {
  CHECK(a.num_layers == b.num_layers);
  CHECK(a.hidden_size == b.hidden_size);
  CHECK(a.num_attention_heads == b.num_attention_heads);
  CHECK(a.num_query_groups == b.num_query_groups);
  CHECK(a.ffn_hidden_size == b.ffn_hidden_size);
  CHECK(a.vocab_size == b.vocab_size);
  CHECK(a.activation == b.activation);
  CHECK(a.normalization == b.normalization);
  CHECK(a.tied_embeddings == b.tied_embeddings);
  CHECK(a.position_embedding == b.position_embedding);
  CHECK(a.dropout == b.dropout);
  CHECK(a.moe == b.moe);
}

// megatron_args(job) read back: the same model shape, batch, plan (but dp, which the world size
// gives) and runtime features.
void check_round_trip(const Job& job) {
  const MegatronLaunch l = read("torchrun pretrain_gpt.py " + join_args(megatron_args(job)));
  check_same_shape(l.model, job.model);
  CHECK(l.training == job.training);
  ParallelPlan expected = job.plan, got = l.plan;
  // The micro-batch group the schedule runs: chosen by strata, given by the launch (pp when it says nothing).
  expected.microbatch_group = static_cast<int>(interleaved_microbatch_group(expected, job.num_micro_batches()));
  got.microbatch_group = static_cast<int>(interleaved_microbatch_group(got, job.num_micro_batches()));
  if (expected.vpp == 1) expected.microbatch_group = got.microbatch_group = 0;
  expected.dp = got.dp = 1;
  // An explicit even split and no split are the same plan.
  expected.stage_layers = resolve_stage_layers(expected, job.model.num_layers);
  got.stage_layers = resolve_stage_layers(got, job.model.num_layers);
  CHECK(got == expected);
  CHECK(l.runtime.flash_attention == job.runtime.flash_attention);
  CHECK(l.runtime.overlap_grad_reduce == job.runtime.overlap_grad_reduce);
  CHECK(l.runtime.tp_comm_overlap == job.runtime.tp_comm_overlap);
  CHECK(l.runtime.fused_grad_accumulation == job.runtime.fused_grad_accumulation);
  CHECK(l.runtime.vocab_divisor == job.runtime.vocab_divisor);
  CHECK(l.runtime.bf16_first_layers == job.runtime.bf16_first_layers);
  CHECK(l.runtime.bf16_last_layers == job.runtime.bf16_last_layers);
  CHECK(resolved_cross_entropy(l.runtime) == resolved_cross_entropy(job.runtime));
  if (job.plan.cp > 1) {
    CHECK(l.runtime.cp_comm_type == job.runtime.cp_comm_type);
    if (job.runtime.cp_comm_type == CpCommType::a2a_p2p) CHECK(l.runtime.cp_a2a_size == cp_a2a_group_size(job));
  }
  if (job.model.moe) {
    CHECK(l.runtime.moe_token_dedup == job.runtime.moe_token_dedup);
    CHECK(l.runtime.moe_allgather_dispatch == job.runtime.moe_allgather_dispatch);
    CHECK(l.runtime.moe_a2a_overlap == (job.runtime.moe_a2a_overlap && job.plan.ep > 1));
    CHECK(l.runtime.moe_capacity_factor == job.runtime.moe_capacity_factor);
    CHECK(l.runtime.moe_pad_to_capacity == job.runtime.moe_pad_to_capacity);
  }
}

}  // namespace

TEST_SUITE("launch") {
TEST_CASE("megatron_import") {
  SUBCASE("round trip: every plan strata prints as Megatron flags reads back as the same job") {
    Job gpt3 = test::gpt3_175b_job();
    check_round_trip(gpt3);

    Job llama = gpt3;
    llama.model = test::catalog().model("llama3-70b");  // GQA, SwiGLU, RMSNorm, rope, untied, no dropout
    llama.training = {512, 8192, Precision::fp8, OptimizerSpec{}};
    llama.plan.tp = 8;
    llama.plan.pp = 4;
    llama.plan.cp = 2;
    llama.plan.vpp = 5;
    llama.plan.recompute = {RecomputeGranularity::full, 5};  // one layer in each of the 5 chunks
    llama.runtime.tp_comm_overlap = true;
    llama.runtime.vocab_divisor = 64;
    check_round_trip(llama);
    llama.training.global_batch_size = 8 * 36;  // 36 micro-batches over pp 4... and pp 8 below
    check_round_trip(llama);
    llama.plan.pp = 8;
    llama.plan.vpp = 2;
    llama.plan.recompute = {};
    check_round_trip(llama);  // --microbatch-group-size-per-virtual-pipeline-stage 9
    llama.plan.microbatch_group = 12;
    check_round_trip(llama);
    llama.plan.microbatch_group = 0;
    llama.plan.pp = 4;
    llama.plan.vpp = 5;
    llama.plan.recompute = {RecomputeGranularity::full, 5};
    llama.training.global_batch_size = 512;
    llama.runtime.cp_comm_type = CpCommType::a2a_p2p;  // --hierarchical-context-parallel-sizes 1 2 (tp 8 fills a node)
    check_round_trip(llama);
    llama.runtime.cp_comm_type = CpCommType::p2p;
    llama.training.recipe = LowPrecisionRecipe::tensorwise;  // bf16 end layers: --first-last-layers-bf16
    llama.runtime.bf16_first_layers = 0;
    llama.runtime.bf16_last_layers = 2;
    check_round_trip(llama);
    llama.runtime.bf16_last_layers = 0;
    llama.training.recipe = LowPrecisionRecipe::delayed;

    Job lean = llama;  // the precision-aware optimizer's dtypes and CPU offload
    lean.training.optimizer.precision_aware = true;
    lean.training.optimizer.exp_avg = StateDtype::bf16;
    lean.training.optimizer.exp_avg_sq = StateDtype::fp8;
    lean.training.optimizer.main_params = StateDtype::fp16;
    check_round_trip(lean);
    lean.training.optimizer.cpu_offload_fraction = 0.35;
    check_round_trip(lean);
    lean.training.optimizer = OptimizerSpec{};
    lean.training.optimizer.kind = OptimizerKind::muon;
    check_round_trip(lean);
    lean.plan.distributed_optimizer = true;
    lean.plan.optimizer_instances = 2;  // --num-distributed-optimizer-instances
    check_round_trip(lean);

    Job uneven = llama;
    uneven.plan.vpp = 1;
    uneven.plan.stage_layers = {19, 21, 21, 19};  // first and last differ: --decoder-first/last-pipeline-num-layers
    uneven.runtime.flash_attention = false;
    uneven.runtime.overlap_grad_reduce = false;
    check_round_trip(uneven);
    uneven.plan.stage_layers = {18, 22, 20, 20};  // not first/last only: --pipeline-model-parallel-layout
    check_round_trip(uneven);
    uneven.plan.vpp = 2;  // a layout of pp*vpp virtual stages
    uneven.plan.recompute = {RecomputeGranularity::full, 4};  // 2 in each chunk
    check_round_trip(uneven);

    Job moe = gpt3;
    moe.model = test::catalog().model("mixtral-8x7b");
    moe.training = {256, 4096, Precision::fp16, OptimizerSpec{}};
    moe.plan.tp = 2;
    moe.plan.pp = 2;
    moe.plan.ep = 4;
    moe.plan.recompute = {RecomputeGranularity::full, -1};
    moe.runtime.fused_grad_accumulation = false;
    check_round_trip(moe);
    // DeepEP dispatch and the combined 1F1B all-to-all overlap (no full recompute with it).
    moe.plan.recompute = {};
    moe.plan.vpp = 2;
    moe.training.precision = Precision::bf16;
    moe.runtime.moe_token_dedup = true;
    moe.runtime.moe_a2a_overlap = true;
    moe.runtime.moe_capacity_factor = 1.25;
    check_round_trip(moe);
    moe.runtime.moe_pad_to_capacity = true;  // --moe-pad-expert-input-to-capacity
    check_round_trip(moe);
    moe.runtime.moe_pad_to_capacity = false;
    // Selective recompute of whole MoE blocks and the shared experts' neighbours (no overlap with it).
    moe.runtime.moe_a2a_overlap = false;
    moe.plan.recompute = {RecomputeGranularity::selective, -1, kRecomputeMoe | kRecomputeLayernorm};
    check_round_trip(moe);
  }

  SUBCASE("today's models read back whole: MLA, MoE layer patterns, shared experts, windows, head dims") {
    for (const std::string name : {"deepseek-v3", "qwen3-30b-a3b", "gpt-oss-120b", "llama-4-maverick", "tests/data/hf/minitron-8b.json",
                                   "tests/data/hf/deepseek-v3.json", "tests/data/hf/glm-4.5.json", "tests/data/hf/gpt-oss-20b.json",
                                   "tests/data/hf/mistral-7b-v0.1.json", "tests/data/hf/qwen1.5-moe-a2.7b.json"}) {
      CAPTURE(name);
      Job job = test::gpt3_175b_job();
      job.model = name.ends_with(".json") ? model_from_json(load_json_file(std::string(STRATA_SOURCE_DIR) + "/" + name), name)
                                          : test::catalog().model(name);
      job.plan = ParallelPlan{};
      job.plan.tp = 2;
      job.plan.dp = 8;
      job.plan.ep = 8;
      job.plan.sequence_parallel = true;
      job.training = {256, 4096, Precision::bf16, OptimizerSpec{}};
      const std::vector<std::string> flags = megatron_args(job);
      REQUIRE_FALSE(flags.empty());
      ModelSpec back = read("torchrun pretrain_gpt.py " + join_args(flags)).model;
      back.name = job.model.name;
      back.source = job.model.source;
      back.aliases = job.model.aliases;
      if (job.model.moe && job.model.moe->router_bias && job.model.moe->router_score_function != "sigmoid")
        back.moe->router_bias = true;  // GPT-OSS's router bias has no Megatron flag (a launch note says so)
      if (job.model.rope_scaling != "llama3" && job.model.rope_scaling != "yarn") {  // other scalings: a launch note
        back.rope_scaling = job.model.rope_scaling;
        back.rope_params = job.model.rope_params;
      }
      // Chunked attention has no Megatron flag; a launch is written only up to one chunk, where it
      // is causal attention.
      back.attention_chunk_size = job.model.attention_chunk_size;
      CHECK(model_to_json(back).dump() == model_to_json(job.model).dump());
    }
  }
  SUBCASE("rotary scaling, router groups, L2 qk norm, sinks and GPT-OSS's activation read back as Megatron builds them") {
    const std::string shape = "pretrain_gpt.py --num-layers 4 --hidden-size 256 --num-attention-heads 8 --vocab-size 100 --seq-length 64 "
                              "--micro-batch-size 1 --position-embedding-type rope ";
    ModelSpec m = read(shape + "--use-rope-scaling").model;
    CHECK(m.rope_scaling == "llama3");
    CHECK(m.rope_params.factor == 8);  // Megatron's default --rope-scaling-factor
    CHECK(read(shape + "--use-rope-scaling --rope-scaling-factor 32").model.rope_params.factor == 32);
    // Linear position interpolation: every position divided by the factor.
    m = read(shape + "--rotary-seq-len-interpolation-factor 4").model;
    CHECK(m.rope_scaling == "linear");
    CHECK(m.rope_params.factor == 4);
    CHECK(read(shape + "--rotary-seq-len-interpolation-factor 1").model.rope_scaling.empty());
    // MLA builds YaRN by default; factor 1 (Megatron's default) leaves the frequencies alone.
    const std::string mla = shape + "--multi-latent-attention --kv-lora-rank 64 ";
    CHECK(read(mla).model.rope_scaling.empty());
    m = read(mla + "--rotary-scaling-factor 40 --mscale-all-dim 0.707 --qk-layernorm").model;
    CHECK(m.rope_scaling == "yarn");
    CHECK(m.rope_params.factor == 40);
    CHECK(m.rope_params.mscale_all_dim == 0.707);
    CHECK(m.rope_params.original_max_position == 4096);
    CHECK(m.qk_layernorm);
    CHECK(read(mla + "--rotary-scaling-factor 40 --rope-type rope").model.rope_scaling.empty());
    m = read(shape + "--position-embedding-type yarn --rotary-scaling-factor 32 --yarn-beta-fast 16 "
                     "--no-yarn-correction-range-round-to-int --quick-geglu --glu-linear-offset 1.0 "
                     "--activation-func-clamp-value 7.0 --softmax-type learnable --qk-l2-norm")
            .model;
    CHECK(m.position_embedding == PositionEmbedding::rope);
    CHECK(m.rope_scaling == "yarn");
    CHECK(m.rope_params.beta_fast == 16);
    CHECK(m.rope_params.original_max_position == 4096);  // argument_utils.py's default
    CHECK_FALSE(m.rope_params.truncate);
    CHECK(m.activation == Activation::quick_geglu);
    CHECK(m.glu_linear_offset == 1.0);
    CHECK(m.activation_clamp == 7.0);
    CHECK(m.attention_sinks);
    CHECK(m.qk_l2_norm);
    CHECK(has(error_of(shape + "--softmax-type off-by-one"), "--softmax-type"));
    CHECK(has(error_of(shape + "--swiglu --quick-geglu"), "Megatron takes one"));
    const std::string moe = shape + "--num-experts 16 --moe-router-topk 4 ";
    m = read(moe + "--moe-router-num-groups 4 --moe-router-group-topk 2 --moe-router-topk-scaling-factor 2.5 --moe-router-pre-softmax").model;
    CHECK(m.moe->num_groups == 4);
    CHECK(m.moe->group_topk == 2);
    CHECK(m.moe->topk_scaling_factor == 2.5);
    CHECK_FALSE(m.moe->normalize_top_k);
    CHECK_FALSE(m.moe->sinkhorn);
    CHECK(read(moe + "--moe-router-load-balancing-type sinkhorn").model.moe->sinkhorn);
    CHECK_FALSE(read(moe + "--moe-router-load-balancing-type seq_aux_loss").model.moe->sinkhorn);
    CHECK(has(error_of(moe + "--moe-router-load-balancing-type balanced"), "--moe-router-load-balancing-type: expected aux_loss"));
  }
  SUBCASE("--no-rope-freq: every Nth layer without RoPE, or Megatron's per-layer list (1 = no RoPE)") {
    const std::string base = "torchrun pretrain_gpt.py --num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 128 "
                             "--micro-batch-size 1 --vocab-size 100 --position-embedding-type rope ";
    CHECK(read(base + "--no-rope-freq 4").model.no_rope_layers == std::vector<int>{0, 0, 0, 1, 0, 0, 0, 1});
    CHECK(read(base + "--no-rope-freq '([1]+[0]*7)'").model.no_rope_layers == std::vector<int>{1, 0, 0, 0, 0, 0, 0, 0});
    CHECK(read(base).model.no_rope_layers.empty());
    CHECK(has(error_of(base.substr(std::string("torchrun pretrain_gpt.py ").size()) + "--no-rope-freq 3"), "--no-rope-freq: 3 does not divide the 8 layers"));
    // Without rotary positions there is nothing to skip.
    CHECK(read("torchrun pretrain_gpt.py --num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 128 --micro-batch-size 1 "
               "--vocab-size 100 --no-rope-freq 4").model.no_rope_layers.empty());
  }
  SUBCASE("Megatron's defaults where the flags are silent") {
    const MegatronLaunch l = read("--num-layers 2 --hidden-size 768 --num-attention-heads 12 --seq-length 1024 "
                                  "--micro-batch-size 4 --vocab-size 1000 --swiglu --group-query-attention");
    CHECK(l.model.ffn_hidden_size == 2048);   // int(4h * 2/3 / 64) * 64 for SwiGLU
    CHECK(l.model.num_query_groups == 1);     // --num-query-groups defaults to 1 with GQA
    CHECK(l.model.dropout);                   // attention and hidden dropout default to 0.1
    CHECK(l.model.tied_embeddings);
    CHECK(l.model.position_embedding == PositionEmbedding::learned);
    CHECK(l.model.max_seq_length == 1024);
    CHECK(l.training.precision == Precision::fp32);  // no --bf16/--fp16
    CHECK(has_note(l, "fp32"));
    CHECK(l.training.global_batch_size == 0);       // Megatron's default needs dp: filled by the caller
    CHECK(l.plan.tp == 1);
    CHECK(l.plan.pp == 1);
    CHECK(l.plan.recompute.granularity == RecomputeGranularity::none);
    CHECK_FALSE(l.runtime.overlap_grad_reduce);  // Megatron overlaps only when asked
    CHECK_FALSE(l.runtime.overlap_param_gather);
    CHECK(l.runtime.fused_grad_accumulation);
    CHECK(l.runtime.flash_attention);
    CHECK(has_note(l, "attention assumed fused"));
    CHECK(l.runtime.cross_entropy == CrossEntropyKernel::eager);  // no --cross-entropy-loss-fusion
    CHECK(read("--num-layers 2 --hidden-size 768 --num-attention-heads 12 --seq-length 8 --micro-batch-size 1 --vocab-size 9")
              .model.ffn_hidden_size == 3072);
    // Interleaving runs groups of pp micro-batches (ModelParallelConfig.__post_init__), so a
    // launch whose micro-batches pp does not divide is refused as Megatron-Core's schedule refuses it.
    const std::string vpp = "--num-layers 8 --hidden-size 768 --num-attention-heads 12 --seq-length 1024 --micro-batch-size 1 "
                            "--vocab-size 1000 --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 2 ";
    // Gradients: an fp16 model's are reduced in fp16 unless --accumulate-allreduce-grads-in-fp32, a
    // bf16 model's in fp32 unless --grad-reduce-in-bf16 (arguments.py).
    CHECK(read(vpp + "--fp16").runtime.grad_reduce_in_bf16);
    CHECK_FALSE(read(vpp + "--fp16 --accumulate-allreduce-grads-in-fp32").runtime.grad_reduce_in_bf16);
    CHECK_FALSE(read(vpp + "--bf16").runtime.grad_reduce_in_bf16);
    CHECK(read(vpp + "--bf16 --grad-reduce-in-bf16").runtime.grad_reduce_in_bf16);
    CHECK(read(vpp).plan.microbatch_group == 2);
    CHECK(read(vpp + "--microbatch-group-size-per-virtual-pipeline-stage 3").plan.microbatch_group == 3);
    CHECK(read("--num-layers 2 --hidden-size 768 --num-attention-heads 12 --seq-length 8 --micro-batch-size 1 --vocab-size 9 "
               "--microbatch-group-size-per-virtual-pipeline-stage 3")
              .plan.microbatch_group == 0);  // without interleaving Megatron never reads it
    // Vocabularies fixed by Megatron's tokenizer classes: TikTokenizer is built with 2**17 tokens
    // unless --vocab-size says otherwise (Megatron-LM's functional-test launches rely on it).
    const std::string shape = "--num-layers 2 --hidden-size 768 --num-attention-heads 12 --seq-length 8 --micro-batch-size 1 ";
    CHECK(read(shape + "--tokenizer-type TikTokenizer --tiktoken-pattern v2").model.vocab_size == 131072);
    CHECK(read(shape + "--tokenizer-type TikTokenizer --vocab-size 100000").model.vocab_size == 100000);
    CHECK(read(shape + "--tokenizer-type Llama2Tokenizer").model.vocab_size == 32000);
    CHECK(has(error_of(shape + "--tokenizer-type HuggingFaceTokenizer"), "--vocab-size: missing"));
    // Sequence parallelism without tensor parallelism: Megatron's validate_args turns it off.
    const MegatronLaunch sp1 = read(shape + "--vocab-size 9 --sequence-parallel");
    CHECK_FALSE(sp1.plan.sequence_parallel);
    CHECK(has_note(sp1, "--sequence-parallel with tensor parallel size 1: Megatron disables it"));
    const MegatronLaunch sp2 = read(shape + "--vocab-size 9 --sequence-parallel --tensor-model-parallel-size 2");
    CHECK(sp2.plan.sequence_parallel);
    CHECK_FALSE(has_note(sp2, "Megatron disables it"));
  }

  SUBCASE("older and DeepSpeed spellings") {
    const std::string shape = "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 2 ";
    MegatronLaunch l = read(shape + "--tokenizer-type GPT2BPETokenizer --checkpoint-activations --fp16 --use-rotary-position-embeddings "
                                    "--transformer-impl local");
    CHECK(l.model.vocab_size == 50257);
    CHECK(l.plan.recompute == RecomputeSpec{RecomputeGranularity::full, -1});
    CHECK(l.model.position_embedding == PositionEmbedding::rope);
    CHECK_FALSE(l.runtime.flash_attention);  // local implementation without --use-flash-attn
    CHECK(read(shape + "--vocab-size 8 --transformer-impl local --use-flash-attn").runtime.flash_attention);
    // Which fused kernel: the flash-attn package for the local implementation and --attention-backend
    // flash, cuDNN's for fused, Transformer Engine's own choice for auto (resolved by the GPU).
    CHECK(read(shape + "--vocab-size 8 --transformer-impl local --use-flash-attn").runtime.attention_kernel == AttentionKernel::flash2);
    CHECK(read(shape + "--vocab-size 8 --attention-backend flash").runtime.attention_kernel == AttentionKernel::flash2);
    CHECK(read(shape + "--vocab-size 8 --attention-backend fused").runtime.attention_kernel == AttentionKernel::cudnn);
    CHECK(read(shape + "--vocab-size 8 --attention-backend auto").runtime.attention_kernel == AttentionKernel::automatic);
    CHECK(read(shape + "--vocab-size 8").runtime.attention_kernel == AttentionKernel::automatic);
    CHECK(read(shape + "--vocab-size 8 --recompute-activations").plan.recompute.granularity == RecomputeGranularity::selective);
    l = read(shape + "--vocab-size 8 --deepspeed --deepspeed_config ds.json --overlap-grad-reduce");
    CHECK(l.runtime.framework == Framework::deepspeed);
    CHECK(l.plan.zero_stage == 1);
    CHECK(has_note(l, "ZeRO stage 1"));
    CHECK_FALSE(l.runtime.overlap_grad_reduce);
    CHECK(read(shape + "--vocab-size 8 --deepspeed --zero-stage=3").plan.zero_stage == 3);
    // BLOOM's Megatron-DeepSpeed launch: ALiBi, the padded vocabulary, the deepspeed launcher's world.
    l = read("deepspeed --num_nodes 48 --num_gpus 8 pretrain_gpt.py " + shape +
             "--position-embedding-type alibi --pad-vocab-size-to 250880 --tokenizer-type PretrainedFromHF --deepspeed");
    CHECK(l.model.position_embedding == PositionEmbedding::alibi);
    CHECK(l.model.vocab_size == 250880);
    CHECK(l.nnodes == 48);
    CHECK(l.nproc_per_node == 8);
  }

  SUBCASE("a launch script: variables, arrays, torchrun's world") {
    const std::string script = R"(#!/bin/bash
GPUS_PER_NODE=8
NNODES=${NNODES:-4}
TP=4
MODEL_ARGS=(
    --num-layers 32 --hidden-size 4096 --num-attention-heads 32   # 7B
    --seq-length 4096 --max-position-embeddings 4096
)
torchrun --nproc_per_node $GPUS_PER_NODE --nnodes $NNODES pretrain_gpt.py \
    ${MODEL_ARGS[@]} --tensor-model-parallel-size $TP --pipeline-model-parallel-size 2 \
    --micro-batch-size 1 --global-batch-size $((NNODES * 64)) --bf16 --vocab-size 32000 --sequence-parallel \
    --use-distributed-optimizer --overlap-grad-reduce --recompute-granularity full --recompute-method block --recompute-num-layers 3
)";
    const MegatronLaunch l = read(script);
    CHECK(l.nnodes == 4);
    CHECK(l.nproc_per_node == 8);
    CHECK(l.plan.tp == 4);
    CHECK(l.plan.pp == 2);
    CHECK(l.plan.sequence_parallel);
    CHECK(l.plan.distributed_optimizer);
    CHECK(l.plan.recompute == RecomputeSpec{RecomputeGranularity::full, 3});
    CHECK(l.training.global_batch_size == 256);
    CHECK(l.training.precision == Precision::bf16);
    CHECK(l.runtime.overlap_grad_reduce);
    CHECK(l.notes.size() == 1);  // only the attention default; nothing else needed guessing
  }

  SUBCASE("Megatron-LM's own example launches: quoted flag-and-value array elements, tuple windows, GPT-2 BPE files") {
    // examples/llama/train_llama3_8b_h100_fp8.sh: ARGS+=("--vocab-size 128256"), expanded ${ARGS[@]}.
    const std::string shape = "--num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --micro-batch-size 1 ";
    MegatronLaunch l = read("A=()\nif [[ x == y ]]; then\nA+=(\n  \"--vocab-size 128256\"\n  \"--tokenizer-type NullTokenizer\"\n)\nfi\n"
                            "torchrun pretrain_gpt.py " + shape + "${A[@]}");
    CHECK(l.model.vocab_size == 128256);
    // examples/gptoss: --window-size 127,0 (tuple_type accepts it without parentheses) is GPT-OSS's
    // Hugging Face sliding_window 128: the 127 keys before the query and the query itself.
    l = read(shape + "--vocab-size 100 --window-size 127,0");
    CHECK(l.model.sliding_window == 128);
    CHECK(read(shape + "--vocab-size 100 --window-size \"(128, 0)\"").model.sliding_window == 129);
    CHECK(read(shape + "--vocab-size 100 --window-size \"(0, 0)\"").model.sliding_window == 1);
    CHECK(has(error_of(shape + "--vocab-size 100 --window-size 127,5"), "expected (left, 0)"));
    // examples/gpt3: --vocab-file and --merge-file with no tokenizer type are GPT-2's BPE.
    l = read(shape + "--vocab-file $VOCAB --merge-file $MERGES");
    CHECK(l.model.vocab_size == 50257);
    CHECK(has_note(l, "GPT-2 BPE's 50257 tokens assumed"));
    // examples/mixtral: rope with --no-position-embedding is rope, without a note.
    l = read(shape + "--vocab-size 100 --position-embedding-type rope --no-position-embedding");
    CHECK(l.model.position_embedding == PositionEmbedding::rope);
    CHECK_FALSE(has_note(l, "has no learned table"));
  }

  SUBCASE("a variable assigned in several branches: the value used is named in a note") {
    const MegatronLaunch l = read(R"(
case $SIZE in
  7B)  LAYERS=32; HIDDEN=4096 ;;
  13B) LAYERS=40; HIDDEN=5120 ;;
esac
pretrain_gpt.py --num-layers $LAYERS --hidden-size $HIDDEN --num-attention-heads 32 --seq-length $((LAYERS * 64))   --micro-batch-size 1 --vocab-size 32000 --bf16
)");
    CHECK(l.model.num_layers == 40);
    CHECK(has_note(l, "--num-layers 40 comes from $LAYERS, which the file assigns 2 times (32, 40)"));
    CHECK(has_note(l, "--hidden-size 5120 comes from $HIDDEN"));
    CHECK(has_note(l, "--seq-length 2560 comes from $LAYERS"));  // through $(( )) arithmetic too
    CHECK_FALSE(has_note(l, "--num-attention-heads"));
  }

  SUBCASE("flags in a string variable, expanded unquoted: split as bash splits them, with the case branches noted") {
    // Megatron-LM's examples/mamba/train.sh: a case picks the size, options="..." collects the
    // flags, `torchrun --nproc_per_node 8 pretrain_hybrid.py ${options}` runs them.
    const MegatronLaunch l = read(R"(
case "${MODEL_SCALE}" in
    "800M") HIDDEN_SIZE=1024 ;;
    "8B") HIDDEN_SIZE=4096 ;;
esac
options=" \
       --tensor-model-parallel-size 2 \
       --hybrid-layer-pattern M-M* \
       --hidden-size ${HIDDEN_SIZE} --num-attention-heads 32 --seq-length 4096 --micro-batch-size 1 --vocab-size 32000 --bf16"
torchrun --nproc_per_node 8 ../../pretrain_hybrid.py ${options}
)");
    CHECK(l.model.hidden_size == 4096);
    CHECK(l.model.num_layers == 4);
    CHECK(l.plan.tp == 2);
    CHECK(has_note(l, "--hidden-size 4096 comes from $HIDDEN_SIZE, which the file assigns 2 times (1024, 4096)"));
    CHECK_FALSE(has_note(l, "--tensor-model-parallel-size 2 comes from"));
    // torchrun without --nnodes runs one node.
    CHECK(l.nnodes == 1);
    CHECK(l.nproc_per_node == 8);
    CHECK(has_note(l, "torchrun gives no --nnodes: one node"));
    // DeepSpeed's launcher without --num_nodes reads its hostfile: the node count stays unknown.
    CHECK_FALSE(read("deepspeed --num_gpus 8 pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 "
                     "--seq-length 128 --micro-batch-size 1 --vocab-size 100").nnodes.has_value());
  }

  SUBCASE("a sourced fragment that only sets flag variables is read through them") {
    // Megatron-LM's examples/post_training/modelopt/conf/Qwen/Qwen3-8B.sh: MODEL_ARGS="..." and no command.
    const MegatronLaunch l = read(R"(#!/bin/bash
if [ -z ${HF_MODEL_CKPT} ]; then
    HF_MODEL_CKPT=Qwen/Qwen3-8B
fi
MODEL_ARGS=" \
    --micro-batch-size 1 --bf16 --swiglu --num-layers 36 --hidden-size 4096 --ffn-hidden-size 12288 \
    --num-attention-heads 32 --group-query-attention --num-query-groups 8 --kv-channels 128 --seq-length 4096 \
"
EXTRA="--vocab-size 151936"
)");
    CHECK(l.model.num_layers == 36);
    CHECK(l.model.num_query_groups == 8);
    CHECK(l.model.vocab_size == 151936);
    CHECK(has_note(l, "its flags were read from $MODEL_ARGS, $EXTRA"));
    // A launch that runs its flags is read from its command alone.
    CHECK_FALSE(has_note(read("X=\"--num-layers 9\"\npretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 "
                              "--seq-length 128 --micro-batch-size 1 --vocab-size 100"),
                         "fragment"));
  }

  SUBCASE("a named model fills what the launch leaves out") {
    const ModelSpec llama = test::catalog().model("llama3-8b");
    const std::string shape = "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 "
                              "--group-query-attention --num-query-groups 8 --swiglu --normalization RMSNorm "
                              "--position-embedding-type rope --untie-embeddings-and-output-weights --attention-dropout 0 "
                              "--hidden-dropout 0 --tokenizer-type HuggingFaceTokenizer ";
    const std::string batch = "--seq-length 8192 --micro-batch-size 1 --bf16";
    check_same_shape(read(shape + batch, &llama).model, llama);  // the vocabulary from the named model
    const MegatronLaunch only_parallel = read("--tensor-model-parallel-size 2 " + batch, &llama);
    CHECK(only_parallel.model == llama);
    CHECK(only_parallel.plan.tp == 2);
    CHECK(has(error_of(shape + batch), "--vocab-size: missing"));
    CHECK(has(error_of(shape + batch), "HuggingFaceTokenizer"));
    CHECK(has(error_of(batch), "--num-layers: missing"));
  }

  SUBCASE("two launch commands with their own flags are refused, not merged") {
    const std::string shape = "--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 128 --micro-batch-size 1 --vocab-size 100";
    const std::string two = "torchrun pretrain_gpt.py " + shape + " --tensor-model-parallel-size 2\n" +
                            "if [ -n \"$X\" ]; then\n  torchrun pretrain_gpt.py " + shape + " --tensor-model-parallel-size 4\nfi\n";
    CHECK(error_of(two) == "launch.sh: 2 launch commands with their own Megatron flags (lines 1, 3); strata reads one launch "
                           "and will not merge two: keep one of them in the file");
    // Flags shared through variables or arrays, one launch line: one launch. The unquoted $PAR
    // splits into the flag and its value, as bash splits it.
    CHECK(read("ARGS=(" + shape + ")\nPAR=\"--tensor-model-parallel-size 2\"\ntorchrun pretrain_gpt.py ${ARGS[@]} $PAR\n"
               "python tools/checkpoint_util.py --load x\n").plan.tp == 2);
    CHECK(read("torchrun pretrain_gpt.py " + shape + " --tensor-model-parallel-size 2\necho done\n").plan.tp == 2);
    // A here-document of notes is not a second launch, nor flags.
    CHECK(read("cat <<EOF\npretrain_gpt.py --tensor-model-parallel-size 8\nEOF\ntorchrun pretrain_gpt.py " + shape).plan.tp == 1);
  }

  SUBCASE("--model naming another model than the launch's shape: a note says which is predicted") {
    const ModelSpec llama = test::catalog().model("llama3-8b");
    const std::string gpt = "--num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --micro-batch-size 1 --vocab-size 51200";
    const MegatronLaunch l = read(gpt, &llama);
    CHECK(l.model.num_layers == 24);
    CHECK(has_note(l, "--model " + llama.name + " has --num-layers 32, the launch --num-layers 24: the launch's model is predicted"));
    CHECK_FALSE(has_note(read(gpt), "the launch's model is predicted"));  // no --model, no note
  }

  SUBCASE("MoE dispatch: the dispatcher, its backend, the all-to-all overlap and forced balance") {
    const std::string base = "--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 128 --micro-batch-size 1 "
                             "--vocab-size 100 --num-experts 8 --moe-router-topk 2 --expert-model-parallel-size 4 ";
    auto runtime_of = [&](const std::string& flags) { return read("torchrun pretrain_gpt.py " + base + flags).runtime; };
    auto notes_of = [&](const std::string& flags) { return read("torchrun pretrain_gpt.py " + base + flags).notes; };
    auto any_note = [](const std::vector<std::string>& notes, const std::string& part) {
      return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(part) != std::string::npos; });
    };
    CHECK_FALSE(runtime_of("--moe-token-dispatcher-type alltoall").moe_token_dedup);
    CHECK(runtime_of("--moe-token-dispatcher-type flex").moe_token_dedup);  // DeepEP, the flex default
    CHECK(runtime_of("--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep").moe_token_dedup);
    CHECK_FALSE(runtime_of("--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend ncclep").moe_token_dedup);
    CHECK(any_note(notes_of(""), "Megatron's default allgather dispatcher"));
    CHECK(runtime_of("").moe_allgather_dispatch);
    CHECK_FALSE(runtime_of("--moe-token-dispatcher-type alltoall").moe_allgather_dispatch);
    CHECK(runtime_of("--moe-token-dispatcher-type alltoall --overlap-moe-expert-parallel-comm").moe_a2a_overlap);
    CHECK(runtime_of("--moe-token-dispatcher-type alltoall --moe-grouped-gemm").moe_grouped_gemm);
    CHECK_FALSE(runtime_of("--moe-token-dispatcher-type alltoall").moe_grouped_gemm);  // Megatron's SequentialMLP
    CHECK(runtime_of("--moe-router-force-load-balancing").moe_load_imbalance == 1.0);
    CHECK(runtime_of("").moe_load_imbalance == RuntimeOptions::kDefaultMoeLoadImbalance);
    CHECK(runtime_of("--moe-expert-capacity-factor 1.5 --moe-pad-expert-input-to-capacity").moe_load_imbalance == 1.5);
    CHECK(runtime_of("--moe-expert-capacity-factor 1.5 --moe-pad-expert-input-to-capacity").moe_pad_to_capacity);
    CHECK_FALSE(runtime_of("--moe-expert-capacity-factor 1.5").moe_pad_to_capacity);
    CHECK(has(error_of(base + "--moe-token-dispatcher-type alltoall_seq"),
              "--moe-token-dispatcher-type: expected allgather, alltoall or flex, found \"alltoall_seq\""));
    CHECK(has(error_of(base + "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend nvshmem"),
              "--moe-flex-dispatcher-backend: expected deepep, hybridep or ncclep, found \"nvshmem\""));
  }

  SUBCASE("bad launches are errors naming the file and the flag") {
    const std::string base = "--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 128 --micro-batch-size 1 --vocab-size 100 ";
    CHECK(error_of(base + "--tensor-model-parallel-size $TP") ==
          "launch.sh: --tensor-model-parallel-size: value \"$TP\" is a shell expansion strata cannot resolve; set the variable "
          "in the file (NAME=value) or write the number");
    CHECK(error_of(base + "--pipeline-model-parallel-size two") ==
          "launch.sh: --pipeline-model-parallel-size: expected an integer 1..1000000, found \"two\"");
    CHECK(has(error_of(base + "--bf16 --fp16"), "launch.sh: --bf16: --fp16 and --bf16 are both given"));
    CHECK(has(error_of(base + "--swiglu --squared-relu"), "launch.sh: --swiglu: more than one of --swiglu, --squared-relu and --quick-geglu is given"));
    CHECK(has(error_of(base + "--sequence-parallel=true"), "--sequence-parallel: is a switch and takes no value"));
    CHECK(has(error_of(base + "--global-batch-size"), "--global-batch-size: expects a value after it"));
    CHECK(has(error_of(base + "--global-batch-size --bf16"), "--global-batch-size: expects a value after it"));
    CHECK(has(error_of(base + "--recompute-granularity partial"), "--recompute-granularity: expected full or selective"));
    CHECK(has(error_of(base + "--recompute-granularity full --recompute-method even"), "--recompute-method: expected uniform or block"));
    CHECK(has(error_of(base + "--normalization BatchNorm"), "--normalization: expected LayerNorm or RMSNorm"));
    CHECK(has(error_of(base + "--attention-backend magic"), "--attention-backend: expected flash, fused"));
    CHECK(has(error_of(base + "--num-experts 8 --moe-layer-freq '([0]*3+[1]*4)'"), "gives 7 layers, the model has 8"));
    CHECK(has(error_of(base + "--num-experts 8 --moe-layer-freq '([0]*3+[2]*5)'"), "lists 0 or 1 per layer"));
    CHECK(has(error_of(base + "--window-size '(128,64)'"), "--window-size: expected (left, 0)"));
    CHECK(has(error_of(base + "--fp8-format e5m2"), "--fp8-format: expected hybrid or e4m3"));
    CHECK(has(error_of(base + "--hidden-dropout 1.5"), "--hidden-dropout: expected a number"));
    CHECK(has(error_of(base + "--pipeline-model-parallel-size 3 --num-layers-per-virtual-pipeline-stage 2"),
              "--num-layers-per-virtual-pipeline-stage: 8 layers are not divisible by pipeline size 3 x 2"));
    CHECK(has(error_of(base + "--pipeline-model-parallel-size 3 --decoder-first-pipeline-num-layers 1"),
              "--decoder-first-pipeline-num-layers: the other 2 pipeline stages cannot share the remaining 7 of 8 layers evenly"));
    CHECK(has(error_of(base + "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'Et*4|t*3L'"),
              "--pipeline-model-parallel-layout: holds 7 decoder layers, the model has 8 (--num-layers)"));
    CHECK(has(error_of(base + "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'Et*4|t*2|t*2L'"),
              "3 stages for pipeline size 2"));
    CHECK(has(error_of(base + "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'Et*4|x'"), "unexpected 'x'"));
    CHECK(has(error_of(base + "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout '(Et*4|t*4L'"), "unclosed '('"));
    CHECK(has(error_of(base + "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'E|t*8L'"),
              "pipeline rank 0 holds no decoder layer"));
    CHECK(has(error_of("--num-layers 8 --seq-length 128"), "--hidden-size: missing"));
    CHECK(has(error_of(base + "--micro-batch-size 0"), "--micro-batch-size: expected an integer 1..1000000, found \"0\""));
    // Megatron-LM refuses Transformer Engine's loss (arguments.py), so such a launch would not start.
    CHECK(read(base + "--cross-entropy-loss-fusion").runtime.cross_entropy == CrossEntropyKernel::jit_fused);
    CHECK(read(base + "--cross-entropy-loss-fusion --cross-entropy-fusion-impl native").runtime.cross_entropy ==
          CrossEntropyKernel::jit_fused);
    CHECK(has(error_of(base + "--cross-entropy-loss-fusion --cross-entropy-fusion-impl te"),
              "launch.sh: --cross-entropy-fusion-impl: Megatron-LM refuses te with --cross-entropy-loss-fusion"));
    CHECK(has(error_of(base + "--cross-entropy-fusion-impl triton"), "--cross-entropy-fusion-impl: expected native or te"));
  }

  SUBCASE("hybrid models: the pattern's layers, its pipeline segments, the Mamba shape with Megatron's defaults") {
    const std::string base = "--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 128 --micro-batch-size 1 --vocab-size 100 ";
    const MegatronLaunch h = read("torchrun pretrain_hybrid.py " + base + "--hybrid-layer-pattern 'M-M*-M-M*' --position-embedding-type none");
    CHECK(h.model.hybrid_pattern == "M-M*-M-M*");
    CHECK(h.model.num_layers == 9);  // the pattern's count; Megatron ignores --num-layers then
    REQUIRE(h.model.mamba.has_value());
    CHECK(h.model.mamba->num_heads == 16);  // 2h / head dim 64
    CHECK(h.model.mamba->state_dim == 128);
    CHECK(h.model.mamba->num_groups == 8);
    CHECK(h.model.position_embedding == PositionEmbedding::none);
    const MegatronLaunch old_name = read("torchrun pretrain_mamba.py " + base + "--hybrid-override-pattern M-M* --mamba-num-heads 32 "
                                         "--mamba-state-dim 64 --mamba-num-groups 4 --mamba-head-dim 32");
    CHECK(old_name.model.hybrid_pattern == "M-M*");
    CHECK(old_name.model.mamba->num_heads == 32);
    CHECK(old_name.model.mamba->head_dim == 32);
    CHECK(old_name.model.mamba->state_dim == 64);
    CHECK(old_name.model.mamba->num_groups == 4);
    const MegatronLaunch piped = read("torchrun pretrain_hybrid.py " + base + "--pipeline-model-parallel-size 2 --hybrid-layer-pattern 'M-|M*|-M|-M*-'");
    CHECK(piped.plan.vpp == 2);
    CHECK(piped.plan.stage_layers == std::vector<int>{4, 6});  // segments 0+2 and 1+3
    CHECK(has(error_of("torchrun pretrain_hybrid.py " + base + "--pipeline-model-parallel-size 2 --hybrid-layer-pattern 'M-|M*|-M'"),
              "--hybrid-layer-pattern: 3 stages for pipeline size 2"));
    // MTP modules of their own pattern ("main/mtp/mtp"), a latent MoE.
    const std::string moe = "--num-experts 8 --moe-router-topk 2 --moe-ffn-hidden-size 256 --moe-latent-size 128 ";
    const MegatronLaunch mtp = read("torchrun pretrain_hybrid.py " + base + moe + "--pipeline-model-parallel-size 2 "
                                    "--hybrid-layer-pattern 'ME*E|ME*E/*E/*E' --position-embedding-type none");
    CHECK(mtp.model.hybrid_pattern == "ME*EME*E");
    CHECK(mtp.model.hybrid_mtp_pattern == "*E");
    CHECK(mtp.model.mtp_layers == 2);
    CHECK(mtp.model.moe->latent_size == 128);
    CHECK(mtp.plan.pp == 2);
    CHECK(has(error_of("torchrun pretrain_hybrid.py " + base + moe + "--hybrid-layer-pattern 'ME*E/*E/E*'"), "MTP parts differ"));
  }

  SUBCASE("models strata does not cost are refused naming the flag or script; unmodelled runtime features are noted") {
    const std::string base = "--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 128 --micro-batch-size 1 --vocab-size 100 ";
    CHECK(has(error_of("torchrun pretrain_hybrid.py " + base + "--hybrid-layer-pattern 'MD*-'"), "symbol 'D' (DeepSeek sparse attention"));
    // Gated DeltaNet layers, TransformerConfig's defaults where no flag is given; the output gate.
    const MegatronLaunch gdn = read("torchrun pretrain_hybrid.py " + base + "--hybrid-layer-pattern 'G-G-*-' --linear-num-value-heads 64 "
                                    "--attention-output-gate");
    REQUIRE(gdn.model.gdn.has_value());
    CHECK(gdn.model.gdn->num_key_heads == 16);
    CHECK(gdn.model.gdn->num_value_heads == 64);
    CHECK(gdn.model.gdn->key_head_dim == 128);
    CHECK(gdn.model.attention_output_gate);
    // Megatron-Bridge's GPT form: gated DeltaNet as the attention variant, every 4th layer softmax
    // attention; each decoder layer two of strata's, the pipeline split kept in pairs.
    const MegatronLaunch gpt = read("torchrun pretrain_gpt.py " + base + "--experimental-attention-variant gated_delta_net "
                                    "--linear-attention-freq 4 --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 2");
    CHECK(gpt.model.hybrid_pattern == "G-G-G-*-G-G-G-*-");
    CHECK(gpt.model.num_layers == 16);
    CHECK(gpt.plan.vpp == 2);
    CHECK(resolve_stage_layers(gpt.plan, gpt.model.num_layers) == std::vector<int>{8, 8});
    CHECK(virtual_stage_layers(gpt.plan, gpt.model) == std::vector<int>{4, 4, 4, 4});
    CHECK(has(error_of(base + "--experimental-attention-variant gated_delta_net"), "--linear-attention-freq: missing"));
    CHECK(has(error_of("torchrun pretrain_hybrid.py " + base), "pretrain_hybrid.py without --hybrid-layer-pattern"));
    CHECK(has(error_of(base + "--experimental-attention-variant gdn2"), "--experimental-attention-variant: \"gdn2\" is not modelled"));
    CHECK(has(error_of(base + "--experimental-attention-variant dsa"), "dsa needs --multi-latent-attention"));
    // DeepSeek Sparse Attention on MLA: the indexer's shape, Megatron's defaults for the rest.
    const std::string mla = base + "--multi-latent-attention --q-lora-rank 64 --kv-lora-rank 32 --experimental-attention-variant dsa ";
    CHECK(has(error_of(mla), "--dsa-indexer-n-heads: missing"));
    const MegatronLaunch dsa = read(mla + "--dsa-indexer-n-heads 4 --dsa-indexer-head-dim 32 --dsa-indexer-topk 64");
    REQUIRE(dsa.model.dsa.has_value());
    CHECK(dsa.model.dsa->index_heads == 4);
    CHECK(dsa.model.dsa->index_topk == 64);
    CHECK(dsa.model.dsa->indexer_loss_coeff == 0);  // Megatron's default: no indexer loss
    CHECK(dsa.model.dsa->rotate_activation);
    CHECK(has_note(dsa, "--dsa-kernel-backend none: Megatron runs DSA's PyTorch fallback"));
    const MegatronLaunch fused = read(mla + "--dsa-indexer-n-heads 4 --dsa-indexer-head-dim 32 --dsa-indexer-topk 64 --dsa-kernel-backend cudnn "
                                            "--dsa-indexer-loss-coeff 0.01 --dsa-indexer-use-sparse-loss --dsa-indexer-topk-freq 2 "
                                            "--no-dsa-indexer-rotate-activation");
    CHECK(fused.model.dsa->indexer_loss_coeff == 0.01);
    CHECK(fused.model.dsa->sparse_indexer_loss);
    CHECK(fused.model.dsa->topk_freq == 2);
    CHECK_FALSE(fused.model.dsa->rotate_activation);
    CHECK_FALSE(has_note(fused, "--dsa-kernel-backend"));
    CHECK(has(error_of(base + "--heterogeneous-layers-config-path nas.json"), "per-layer shapes from a file are not read"));
    CHECK(has(error_of(base + "--yaml-cfg gpt.yaml"), "--yaml-cfg: the arguments are in the YAML file"));

    CHECK(has(error_of("python pretrain_t5.py " + base), "runs pretrain_t5.py"));
    CHECK_NOTHROW(read("echo not pretrain_bert.py\ntorchrun pretrain_gpt.py " + base));

    const MegatronLaunch dense = read("torchrun pretrain_gpt.py " + base + "--cuda-graph-impl transformer_engine --first-last-layers-bf16");
    CHECK(dense.runtime.cuda_graph_modules == kCudaGraphWholeLayer);  // no modules: the whole layer
    CHECK_FALSE(has_note(dense, "CUDA graphs"));  // a dense layer's prediction does not depend on them
    CHECK(has_note(dense, "--first-last-layers-bf16 without --fp8-format or --fp4-format"));  // modelled with fp8 (below)
    CHECK(read(base + "--enable-cuda-graph").runtime.cuda_graph_modules == kCudaGraphWholeLayer);
    CHECK(read(base + "--cuda-graph-impl none --cuda-graph-modules attn").runtime.cuda_graph_modules == 0);
    CHECK(has(error_of(base + "--cuda-graph-impl eager"), "--cuda-graph-impl: expected none, local, transformer_engine or full_iteration"));
    CHECK(has(error_of(base + "--cuda-graph-impl local --cuda-graph-modules gdn"), "--cuda-graph-modules: expected attn, mlp"));
    const MegatronLaunch moe = read(base + "--num-experts 8 --moe-router-topk 2 --moe-token-dispatcher-type alltoall "
                                           "--moe-shared-expert-intermediate-size 512 --moe-shared-expert-overlap --cuda-graph-impl "
                                           "transformer_engine --cuda-graph-modules attn moe_router moe_preprocess");
    CHECK(moe.runtime.cuda_graph_modules == (kCudaGraphAttn | kCudaGraphMoeRouter | kCudaGraphMoePreprocess));
    CHECK(has_note(moe, "one graph replay of host time each way"));
    CHECK(read(base + "--num-experts 8 --moe-router-topk 2 --cuda-graph-impl local --cuda-graph-scope moe_router moe_preprocess")
              .runtime.cuda_graph_modules == (kCudaGraphMoeRouter | kCudaGraphMoePreprocess));
    // Megatron's own graphs capture the router and the preprocessing together when either is named;
    // Transformer Engine's capture what is named.
    CHECK(read(base + "--num-experts 8 --moe-router-topk 2 --cuda-graph-impl local --cuda-graph-modules moe_router")
              .runtime.cuda_graph_modules == (kCudaGraphMoeRouter | kCudaGraphMoePreprocess));
    CHECK(read(base + "--num-experts 8 --moe-router-topk 2 --cuda-graph-impl transformer_engine --cuda-graph-modules moe_router")
              .runtime.cuda_graph_modules == kCudaGraphMoeRouter);
    // HybridEP's static per-rank budget, which a full-iteration graph needs to capture the MoE layers.
    const std::string moe8 = base + "--num-experts 8 --moe-router-topk 2 ";
    const MegatronLaunch budget = read(moe8 + "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep "
                                              "--moe-expert-rank-capacity-factor 1.5 --cuda-graph-impl full_iteration");
    CHECK(budget.runtime.moe_rank_capacity_factor == 1.5);
    CHECK(budget.runtime.cuda_graph_modules == (kCudaGraphWholeLayer | kCudaGraphFullIteration));
    CHECK_FALSE(has_note(budget, "one graph replay"));
    // Megatron-Core refuses it beside DeepEP (the flex dispatcher's default backend); the other
    // dispatchers ignore it.
    CHECK(has(error_of(moe8 + "--moe-token-dispatcher-type flex --moe-expert-rank-capacity-factor 1.5"),
              "--moe-expert-rank-capacity-factor: needs --moe-flex-dispatcher-backend hybridep or ncclep"));
    const MegatronLaunch ignored =
        read(moe8 + "--moe-token-dispatcher-type alltoall --moe-flex-dispatcher-backend hybridep --moe-expert-rank-capacity-factor 2");
    CHECK(ignored.runtime.moe_rank_capacity_factor == 0);
    CHECK(has_note(ignored, "the alltoall dispatcher ignores it"));
    // Megatron-Core's paged stash under the budget: in the grouped experts' fused path only.
    const std::string hybridep = moe8 + "--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep "
                                        "--moe-expert-rank-capacity-factor 1.5 --moe-paged-stash ";
    const MegatronLaunch stash = read(hybridep + "--moe-grouped-gemm --use-transformer-engine-op-fuser "
                                                 "--moe-paged-stash-buffer-size-factor-cuda 1.2");
    CHECK(stash.runtime.moe_paged_stash_factor == 1.2);
    CHECK(stash.runtime.moe_paged_stash_host_factor == 0);
    CHECK(read(hybridep + "--moe-grouped-gemm --use-transformer-engine-op-fuser --moe-paged-stash-buffer-size-factor-cpu 1.0")
              .runtime.moe_paged_stash_host_factor == 1.0);
    CHECK(read(hybridep + "--moe-grouped-gemm --use-transformer-engine-op-fuser").runtime.moe_paged_stash_factor ==
          kMegatronPagedStashFactor);
    const MegatronLaunch unfused = read(hybridep + "--moe-grouped-gemm");
    CHECK(unfused.runtime.moe_paged_stash_factor == 0);
    CHECK(has_note(unfused, "without it nothing is stashed"));
    CHECK(has(error_of(moe8 + "--moe-paged-stash"), "--moe-paged-stash: needs --moe-expert-rank-capacity-factor"));
    CHECK(moe.runtime.moe_shared_expert_overlap);  // the shared experts beside the dispatcher's all-to-alls
  }

  SUBCASE("the optimizer: --optimizer, the precision-aware optimizer's dtypes and CPU offload; unmodelled offloads are noted") {
    const std::string base = "--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 128 --micro-batch-size 1 "
                             "--vocab-size 100 --bf16 --use-distributed-optimizer ";
    const MegatronLaunch plain = read(base);
    CHECK(plain.training.optimizer == OptimizerSpec{});
    CHECK_FALSE(plain.runtime.grad_reduce_in_bf16);
    const MegatronLaunch lean = read(base + "--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16 "
                                            "--main-grads-dtype bf16 --optimizer-cpu-offload --optimizer-offload-fraction 0.5");
    CHECK(lean.training.optimizer.precision_aware);
    CHECK(lean.training.optimizer.exp_avg == StateDtype::bf16);
    CHECK(lean.training.optimizer.exp_avg_sq == StateDtype::bf16);
    CHECK(lean.training.optimizer.main_params == StateDtype::fp32);
    CHECK(lean.training.optimizer.cpu_offload_fraction == 0.5);
    CHECK(lean.runtime.grad_reduce_in_bf16);  // bf16 main grads: Megatron's 2-byte gradient buffer
    CHECK(read(base + "--use-precision-aware-optimizer --optimizer-cpu-offload").training.optimizer.cpu_offload_fraction == 1);
    CHECK(has_note(read(base + "--optimizer-offload-fraction 0.5"), "without --optimizer-cpu-offload: nothing is offloaded"));
    CHECK(read(base + "--optimizer sgd").training.optimizer.kind == OptimizerKind::sgd);
    CHECK(read(base + "--optimizer dist_muon").training.optimizer.kind == OptimizerKind::muon);
    // Muon with the distributed optimizer (or dist_muon, its old spelling) is Megatron's layer-wise
    // distributed optimizer: sharded state, costed as the distributed optimizer and said so.
    for (const char* muon : {"--optimizer dist_muon", "--optimizer muon --use-distributed-optimizer"}) {
      const MegatronLaunch l = read(base + muon);
      CHECK_MESSAGE(l.plan.distributed_optimizer, muon);
      CHECK_MESSAGE(has_note(l, "Megatron runs its layer-wise distributed optimizer"), muon);
    }
    const std::string replicated = "--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 128 --micro-batch-size 1 "
                                   "--vocab-size 100 --bf16 --optimizer muon";
    CHECK_FALSE(read(replicated).plan.distributed_optimizer);
    CHECK_FALSE(has_note(read(replicated), "layer-wise"));
    CHECK(has(error_of(base + "--optimizer soap"), "launch.sh: --optimizer: \"soap\" is not modelled"));
    CHECK(has(error_of(base + "--optimizer adamw"), "--optimizer: expected adam, sgd, muon"));
    CHECK(has(error_of(base + "--use-precision-aware-optimizer --main-params-dtype bf16"),
              "--main-params-dtype: expected one of fp32, fp16, found \"bf16\""));
    CHECK(has(error_of(base + "--exp-avg-dtype fp4"), "--exp-avg-dtype: expected one of fp32, fp16, bf16, fp8"));
    CHECK(has(error_of(base + "--main-grads-dtype bf16"), "--main-grads-dtype: bf16 main grads need --use-precision-aware-optimizer"));
    CHECK(has(error_of(base + "--use-precision-aware-optimizer --main-grads-dtype bf16 --accumulate-allreduce-grads-in-fp32"),
              "can only be fp32 with --accumulate-allreduce-grads-in-fp32"));
    CHECK(has(error_of(base + "--optimizer-cpu-offload --optimizer-offload-fraction 1.5"), "--optimizer-offload-fraction: expected a number"));
    // Megatron's FSDP2 is ZeRO-3 sharding; copies of the distributed optimizer are read; offloading activations is read
    // (its own subcase).
    const MegatronLaunch fsdp2 = read(base + "--use-torch-fsdp2");
    CHECK(fsdp2.plan.zero_stage == 3);
    CHECK(has_note(fsdp2, "--use-torch-fsdp2 costed as Megatron-FSDP's sharding (ZeRO-3)"));
    CHECK(read(base + "--use-torch-fsdp2 --torch-fsdp2-no-reshard-after-forward").plan.zero_stage == 2);
    CHECK(read(base + "--fine-grained-activation-offloading --offload-modules core_attn").plan.offload.modules == kOffloadCoreAttn);
    CHECK(read(base + "--num-distributed-optimizer-instances 2").plan.optimizer_instances == 2);
    CHECK(read(base).plan.optimizer_instances == 1);
    // Megatron-FSDP with instances is hybrid sharding (HSDP), its outer strategy read; FSDP2's is refused.
    const MegatronLaunch hsdp = read(base + "--use-megatron-fsdp --num-distributed-optimizer-instances 2 --outer-dp-sharding-strategy optim");
    CHECK(hsdp.plan.zero_stage == 3);
    CHECK(hsdp.plan.sharded_copies() == 2);
    CHECK(hsdp.plan.outer_optimizer_sharding);
    CHECK_FALSE(read(base + "--use-megatron-fsdp --num-distributed-optimizer-instances 2").plan.outer_optimizer_sharding);
    CHECK(has(error_of(base + "--use-megatron-fsdp --outer-dp-sharding-strategy half"), "expected no_shard or optim"));
    CHECK(has(error_of(base + "--use-torch-fsdp2 --num-distributed-optimizer-instances 2"), "with FSDP2 (hybrid sharding) is not modelled"));
  }

  SUBCASE("layouts with repeats, and a repeated flag: the last wins, with a note") {
    const std::string base = "--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 128 --micro-batch-size 1 --vocab-size 100 ";
    MegatronLaunch l = read(base + "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'E(tt|)*2t*2|t*2L'");
    CHECK(l.plan.vpp == 2);
    CHECK(l.plan.stage_layers == std::vector<int>{4, 4});
    l = read(base + "--pipeline-model-parallel-size 4 --pipeline-model-parallel-size 2");
    CHECK(l.plan.pp == 2);
    CHECK(has_note(l, "--pipeline-model-parallel-size is given more than once"));
    l = read(base + "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'Et*3|t*5L'");
    CHECK(l.plan.stage_layers == std::vector<int>{3, 5});
  }

  SUBCASE("--account-for-embedding/loss-in-pipeline-split: the embedding and the loss count as layers") {
    // Megatron-Core transformer_block.py get_num_layers_to_build: num_layers + 1 or 2 slots over
    // pp ranks and vpp chunks; the first (last) chunk builds one decoder layer fewer. Llama 3.1
    // 405B's 126 layers over pp 16: 8 slots a rank.
    const std::string base = "--num-layers 126 --hidden-size 512 --num-attention-heads 8 --seq-length 128 --micro-batch-size 1 "
                             "--vocab-size 100 --pipeline-model-parallel-size 16 ";
    const std::string both = base + "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split ";
    std::vector<int> ends_fewer(16, 8);
    ends_fewer.front() = ends_fewer.back() = 7;
    MegatronLaunch l = read(both);
    CHECK(l.plan.vpp == 1);
    CHECK(l.plan.stage_layers == ends_fewer);
    l = read(both + "--num-layers-per-virtual-pipeline-stage 2");  // 8 slots a rank in chunks of 2
    CHECK(l.plan.vpp == 4);
    CHECK(l.plan.stage_layers == ends_fewer);
    CHECK(read(both + "--num-virtual-stages-per-pipeline-rank 2").plan.vpp == 2);
    std::vector<int> first_fewer(16, 8);
    first_fewer.front() = 7;
    l = read("--num-layers 127" + base.substr(std::string("--num-layers 126").size()) + "--account-for-embedding-in-pipeline-split");
    CHECK(l.plan.stage_layers == first_fewer);
    // Refused as Megatron refuses them: slots that do not divide, and other ways of splitting beside.
    const std::pair<std::string, std::string> refusals[] = {
        {base + "--account-for-loss-in-pipeline-split",
         "--account-for-loss-in-pipeline-split: 126 layers plus the embedding and/or the loss (127) are not divisible by pipeline size 16"},
        {both + "--num-layers-per-virtual-pipeline-stage 3",
         "--num-layers-per-virtual-pipeline-stage: 8 layers per pipeline rank (the embedding and/or loss counted) are not divisible by 3"},
        {both + "--decoder-first-pipeline-num-layers 7",
         "--account-for-embedding-in-pipeline-split: cannot be set with --decoder-first-pipeline-num-layers"},
        {both + "--pipeline-model-parallel-layout 'Et*7|(t*8|)*14t*7L'", "cannot be set with --pipeline-model-parallel-layout"},
    };
    for (const auto& [launch, message] : refusals) CHECK(has(error_of(launch), message));
  }

  SUBCASE("--recompute-modules: Megatron's list of selective recompute modules") {
    const std::string base = "--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 128 --micro-batch-size 1 "
                             "--vocab-size 100 --recompute-granularity selective ";
    MegatronLaunch l = read(base + "--recompute-modules moe_act layernorm --bf16");
    CHECK(l.plan.recompute.granularity == RecomputeGranularity::selective);
    CHECK(l.plan.recompute.modules == (kRecomputeMoeAct | kRecomputeLayernorm));
    CHECK(l.training.precision == Precision::bf16);  // the list stops at the next flag
    CHECK(read(base).plan.recompute.modules == kRecomputeCoreAttn);  // Megatron's default
    // moe_act acts only in grouped-GEMM experts: Megatron's SequentialMLP keeps the activation.
    const std::string moe = base + "--num-experts 8 --moe-router-topk 2 ";
    l = read(moe + "--recompute-modules moe_act layernorm");
    CHECK(l.plan.recompute.modules == kRecomputeLayernorm);
    CHECK(has_note(l, "moe_act without --moe-grouped-gemm"));
    CHECK(read(moe + "--recompute-modules moe_act").plan.recompute.granularity == RecomputeGranularity::none);
    CHECK(read(moe + "--recompute-modules moe_act --moe-grouped-gemm").plan.recompute.modules == kRecomputeMoeAct);
    CHECK(has(error_of(base + "--recompute-modules core_attn gdn_norm_out"),
              "--recompute-modules: expected core_attn, moe_act, layernorm, mla_up_proj, mlp, moe or shared_experts"));
  }

  SUBCASE("--cpu-offloading-num-layers: layer-level CPU offloading of the first layers") {
    const std::string base = "--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 128 --micro-batch-size 1 "
                             "--vocab-size 100 ";
    CHECK(read(base + "--cpu-offloading-num-layers 3").plan.cpu_offload_layers == 3);
    CHECK(read(base).plan.cpu_offload_layers == 0);
  }

  SUBCASE("--mtp-use-repeated-layer: the MTP depths share one module") {
    const std::string base = "--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 128 --micro-batch-size 1 "
                             "--vocab-size 100 --position-embedding-type rope ";
    CHECK(read(base + "--mtp-num-layers 2 --mtp-use-repeated-layer").model.mtp_repeated_layer);
    CHECK_FALSE(read(base + "--mtp-num-layers 2").model.mtp_repeated_layer);
    CHECK_FALSE(read(base + "--mtp-use-repeated-layer").model.mtp_repeated_layer);  // no MTP module to share
  }

  SUBCASE("fine-grained activation offloading: the modules, the smallest tensor, what Megatron asks with them") {
    const std::string base = "--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 128 --micro-batch-size 1 "
                             "--vocab-size 100 ";
    MegatronLaunch l = read(base + "--fine-grained-activation-offloading --offload-modules core_attn attn_proj --bf16");
    CHECK(l.plan.offload.modules == (kOffloadCoreAttn | kOffloadAttnProj));
    CHECK(l.plan.offload.min_tensor_elements == 1048576);
    CHECK(l.training.precision == Precision::bf16);  // the list stops at the next flag
    l = read(base + "--fine-grained-activation-offloading --offload-modules fused_group_mlp --use-transformer-engine-op-fuser "
                    "--min-offloaded-tensor-size 350000000");
    CHECK(l.plan.offload.modules == kOffloadFusedGroupMlp);
    CHECK(l.plan.offload.min_tensor_elements == 350000000);
    // The list alone does nothing in Megatron-Core; the switch alone fails its assertion.
    l = read(base + "--offload-modules core_attn");
    CHECK(l.plan.offload.modules == 0);
    CHECK(has_note(l, "offloads nothing"));
    CHECK(has(error_of(base + "--fine-grained-activation-offloading"), "needs --offload-modules"));
    CHECK(has(error_of(base + "--fine-grained-activation-offloading --offload-modules core_attn gdp_qkv"),
              "--offload-modules: expected attn_norm, qkv_linear, core_attn"));
    CHECK(has(error_of(base + "--fine-grained-activation-offloading --offload-modules fused_group_mlp"),
              "fused_group_mlp needs --use-transformer-engine-op-fuser"));
    // Inside the experts only TEGroupedMLP offloads: without --moe-grouped-gemm the list's expert
    // modules do nothing (Megatron's SequentialMLP), and the launch is read as Megatron runs it.
    const std::string moe = base + "--num-experts 8 --moe-router-topk 2 --fine-grained-activation-offloading ";
    l = read(moe + "--offload-modules core_attn expert_fc1 moe_act");
    CHECK(l.plan.offload.modules == kOffloadCoreAttn);
    CHECK(has_note(l, "expert_fc1 moe_act without --moe-grouped-gemm"));
    l = read(moe + "--offload-modules core_attn expert_fc1 --moe-grouped-gemm");
    CHECK(l.plan.offload.modules == (kOffloadCoreAttn | kOffloadExpertFc1));
    // Squared-ReLU experts fuse only with Megatron's fused weighted kernel (TEGroupedMLP asserts).
    const std::string fused = moe + "--moe-grouped-gemm --use-transformer-engine-op-fuser --offload-modules fused_group_mlp --squared-relu ";
    CHECK(has(error_of(fused), "needs --use-fused-weighted-squared-relu"));
    CHECK(read(fused + "--use-fused-weighted-squared-relu").plan.offload.modules == kOffloadFusedGroupMlp);
  }

  SUBCASE("--cp-comm-type: one type or Megatron's per-layer list; a2a+p2p with its hierarchical group sizes") {
    const std::string base = "--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 4096 --micro-batch-size 1 "
                             "--vocab-size 100 --context-parallel-size 8 ";
    MegatronLaunch l = read(base + "--cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 4 2 --bf16");
    CHECK(l.runtime.cp_comm_type == CpCommType::a2a_p2p);
    CHECK(l.runtime.cp_a2a_size == 4);
    CHECK(l.training.precision == Precision::bf16);  // the lists stop at the next flag
    CHECK(read(base + "--cp-comm-type a2a a2a a2a").runtime.cp_comm_type == CpCommType::a2a);
    CHECK(has(error_of(base + "--cp-comm-type a2a p2p"), "--cp-comm-type: a different type per layer"));
    CHECK(has(error_of(base + "--cp-comm-type a2a+p2p"), "--hierarchical-context-parallel-sizes: must be set when a2a+p2p"));
    CHECK(has(error_of(base + "--cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 4 4"),
              "the sizes multiply to 16, the context-parallel size is 8"));
    CHECK(has(error_of(base + "--cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 2 2"), "expected two sizes"));
    CHECK(has(error_of(base + "--cp-comm-type ring"), "expected p2p, a2a, allgather or a2a+p2p"));
  }

  SUBCASE("--first-last-layers-bf16: Megatron's one layer at each end unless the counts say otherwise") {
    const std::string base = "--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 4096 --micro-batch-size 1 "
                             "--vocab-size 100 --bf16 ";
    MegatronLaunch l = read(base + "--fp8-format e4m3 --fp8-recipe tensorwise --first-last-layers-bf16");
    CHECK(l.runtime.bf16_first_layers == 1);
    CHECK(l.runtime.bf16_last_layers == 1);
    l = read(base + "--fp4-format e2m1 --first-last-layers-bf16 --num-layers-at-start-in-bf16 0 --num-layers-at-end-in-bf16 4");
    CHECK(l.runtime.bf16_first_layers == 0);
    CHECK(l.runtime.bf16_last_layers == 4);
    // The counts alone do nothing in Megatron; without fp8 or fp4 the flag does nothing either.
    CHECK(read(base + "--fp8-format e4m3 --num-layers-at-end-in-bf16 4").runtime.bf16_last_layers == 0);
    l = read(base + "--first-last-layers-bf16");
    CHECK(l.runtime.bf16_last_layers == 0);
    CHECK(has_note(l, "every layer runs in bf16 already"));
  }

  SUBCASE("multi-token prediction: --mtp-num-layers, and as many 'm' in a layout as Megatron requires") {
    const std::string base = "--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 128 --micro-batch-size 1 "
                             "--vocab-size 100 --position-embedding-type rope ";
    CHECK(read(base).model.mtp_layers == 0);
    MegatronLaunch l = read(base + "--mtp-num-layers 1 --pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'Et*5|t*3mL'");
    CHECK(l.model.mtp_layers == 1);
    CHECK(l.plan.stage_layers == std::vector<int>{5, 3});
    CHECK(has(error_of(base + "--pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'Et*4|t*4mL'"),
              "holds 1 MTP layers ('m'), the model trains 0"));
    CHECK(has(error_of(base + "--mtp-num-layers 2 --pipeline-model-parallel-size 2 --pipeline-model-parallel-layout 'Et*4|t*4mL'"),
              "holds 1 MTP layers ('m'), the model trains 2"));
    CHECK(has(error_of(base + "--mtp-num-layers -1"), "--mtp-num-layers: expected an integer 0..64"));
  }

  SUBCASE("megatron_flag_for names the flag of a plan field") {
    CHECK(megatron_flag_for("tp") == "--tensor-model-parallel-size");
    CHECK(megatron_flag_for("global_batch_size") == "--global-batch-size");
    CHECK(megatron_flag_for("unknown") == "unknown");
  }
}
}
