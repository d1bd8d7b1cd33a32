#include <doctest/doctest.h>

#include <algorithm>
#include <optional>

#include "costmodel/json_reader.h"
#include "costmodel/predictor.h"
#include "launch/megatron_args.h"
#include "test_util.h"

using namespace strata;

namespace {

bool has(const std::vector<std::string>& a, const std::string& flag) { return std::find(a.begin(), a.end(), flag) != a.end(); }

// The value following `flag`, if the flag is present.
std::optional<std::string> value_of(const std::vector<std::string>& a, const std::string& flag) {
  auto it = std::find(a.begin(), a.end(), flag);
  if (it == a.end() || it + 1 == a.end()) return std::nullopt;
  return *(it + 1);
}

Job llama3_70b_job() {
  Job job;
  job.model = test::catalog().model("llama3-70b");
  job.cluster = test::catalog().cluster("dgx-h100-ndr");
  job.training.global_batch_size = 512;
  job.training.seq_length = 8192;
  job.plan.tp = 8;
  job.plan.pp = 4;
  job.plan.dp = 8;
  job.plan.sequence_parallel = true;
  return job;
}

// A small job of a tests/data/hf config, each parallel size 1 but ep.
Job hf_job(const std::string& name) {
  Job job = test::gpt3_175b_job();
  job.model = model_from_json(load_json_file(test::data_file("hf/" + name + ".json")), name);
  job.plan = ParallelPlan{};
  job.plan.dp = 8;
  job.plan.ep = job.model.moe ? 8 : 1;
  job.training = {256, 4096, Precision::bf16, OptimizerSpec{}};
  return job;
}

}  // namespace

TEST_SUITE("launch") {
TEST_CASE("megatron_args: the model details of today's Hugging Face configs") {
  SUBCASE("DeepSeek-V3: latent norms, YaRN in MLA, group-limited routing with scaled weights") {
    const Job job = hf_job("deepseek-v3");
    const auto a = megatron_args(job);
    const RopeScalingParams& p = job.model.rope_params;
    CHECK(has(a, "--qk-layernorm"));
    CHECK(value_of(a, "--position-embedding-type") == "rope");  // MLA's YaRN comes with its rope_type
    CHECK(std::stod(*value_of(a, "--rotary-scaling-factor")) == p.factor);
    CHECK(std::stod(*value_of(a, "--mscale-all-dim")) == p.mscale_all_dim);
    CHECK_FALSE(has(a, "--mscale"));  // 1.0, Megatron's default
    CHECK(value_of(a, "--moe-router-num-groups") == std::to_string(job.model.moe->num_groups));
    CHECK(value_of(a, "--moe-router-group-topk") == std::to_string(job.model.moe->group_topk));
    CHECK(std::stod(*value_of(a, "--moe-router-topk-scaling-factor")) == job.model.moe->topk_scaling_factor);
    CHECK(has(a, "--moe-router-enable-expert-bias"));
    CHECK_FALSE(has(a, "--moe-router-pre-softmax"));
  }
  SUBCASE("Qwen2-MoE: the gated shared expert, a softmax router that does not renormalize") {
    const auto a = megatron_args(hf_job("qwen1.5-moe-a2.7b"));
    CHECK(value_of(a, "--moe-shared-expert-intermediate-size") == "5632");
    CHECK(has(a, "--moe-shared-expert-gate"));
    CHECK(has(a, "--moe-router-pre-softmax"));  // norm_topk_prob false
    CHECK_FALSE(has(megatron_args(hf_job("deepseek-v3")), "--moe-shared-expert-gate"));
  }
  SUBCASE("GLM-4.5: a sigmoid router with expert bias") {
    const auto a = megatron_args(hf_job("glm-4.5"));
    CHECK(value_of(a, "--moe-router-score-function") == "sigmoid");
    CHECK(has(a, "--moe-router-enable-expert-bias"));
    CHECK_FALSE(has(a, "--moe-router-num-groups"));  // n_group 1
  }
  SUBCASE("GPT-OSS: quick-GeGLU with offset and clamp, learnable sinks, YaRN, the window less the query") {
    const Job job = hf_job("gpt-oss-20b");
    const auto a = megatron_args(job);
    CHECK(has(a, "--quick-geglu"));
    CHECK_FALSE(has(a, "--swiglu"));
    CHECK(value_of(a, "--glu-linear-offset") == "1");
    CHECK(value_of(a, "--activation-func-clamp-value") == "7");
    CHECK(value_of(a, "--softmax-type") == "learnable");
    CHECK(value_of(a, "--position-embedding-type") == "yarn");
    CHECK(std::stod(*value_of(a, "--rotary-scaling-factor")) == job.model.rope_params.factor);
    CHECK(value_of(a, "--yarn-original-max-position-embeddings") == std::to_string(job.model.rope_params.original_max_position));
    CHECK(has(a, "--no-yarn-correction-range-round-to-int"));
    CHECK(value_of(a, "--window-size") == "(" + std::to_string(job.model.sliding_window - 1) + ",0)");
  }
  SUBCASE("Llama 3's scaling factor is written when it is not Megatron's 8; Llama 4's L2 qk norm") {
    Job job = hf_job("llama-3.1-8b");
    CHECK(has(megatron_args(job), "--use-rope-scaling"));
    CHECK_FALSE(has(megatron_args(job), "--rope-scaling-factor"));
    job.model.rope_params.factor = 32;  // Llama 3.2
    CHECK(value_of(megatron_args(job), "--rope-scaling-factor") == "32");
    job.model.rope_scaling = "linear";  // position interpolation (CodeLlama-style linear scaling)
    job.model.rope_params = {.factor = 4};
    CHECK(value_of(megatron_args(job), "--rotary-seq-len-interpolation-factor") == "4");
    CHECK_FALSE(has(megatron_args(job), "--use-rope-scaling"));
    job.model.rope_params.factor = 2.5;  // Megatron's flag is an integer
    CHECK(megatron_launch(job).refused.find("not a whole number") != std::string::npos);
    job.model.rope_scaling = "longrope";  // Phi-3's
    CHECK(megatron_launch(job).refused.find("LongRoPE") != std::string::npos);
    job.model.rope_scaling = "dynamic";  // NTK beyond the original positions only: launched, with a note
    CHECK(megatron_launch(job).refused.empty());
    job.model.rope_scaling = "llama3";
    job.model.rope_params = {.factor = 32, .original_max_position = 8192};
    job.model.qk_l2_norm = true;
    CHECK(has(megatron_args(job), "--qk-l2-norm"));
    CHECK_FALSE(has(megatron_args(job), "--qk-layernorm"));
  }
  SUBCASE("details no Megatron flag expresses refuse the launch, naming them") {
    CHECK(megatron_launch(hf_job("llama-4-scout")).refused.find("high_freq_factor 1") != std::string::npos);
    CHECK(megatron_launch(hf_job("kimi-k2")).refused.find("beta_fast 1") != std::string::npos);
    CHECK(megatron_launch(hf_job("deepseek-v2")).refused.find("group-limited greedy") != std::string::npos);
    Job glm = hf_job("glm-4.5");
    glm.model.moe->normalize_top_k = false;
    CHECK(megatron_launch(glm).refused.find("norm_topk_prob") != std::string::npos);
    // A top-1 softmax router renormalizing its one pick: Megatron-Core builds it only with sinkhorn.
    Job top1 = hf_job("glm-4.5");
    top1.model.moe->router_score_function = "softmax";
    top1.model.moe->top_k = 1;
    top1.model.moe->num_groups = 0;
    top1.model.moe->group_topk = 0;
    top1.model.moe->normalize_top_k = true;
    CHECK(megatron_launch(top1).refused.find("Please use --moe-router-pre-softmax when topk is 1") != std::string::npos);
    top1.model.moe->normalize_top_k = false;  // the softmax before the top-1: Megatron's --moe-router-pre-softmax
    CHECK(megatron_launch(top1).refused.find("top-1") == std::string::npos);
    // Sinkhorn routing: written as itself, and the router flags it bypasses are not.
    top1.model.moe->normalize_top_k = true;
    top1.model.moe->sinkhorn = true;
    const LaunchPlan sinkhorn = megatron_launch(top1);
    CHECK(sinkhorn.refused.find("top-1") == std::string::npos);
    CHECK(has(sinkhorn.megatron_args, "sinkhorn"));
    CHECK_FALSE(has(sinkhorn.megatron_args, "--moe-router-score-function"));
    // Query/key norms over all heads (OLMo-2, MiniMax-M2 "per_layer") and OLMo-2's norms after its
    // sublayers: Megatron norms each head and the layers' inputs.
    CHECK(megatron_launch(hf_job("minimax-m2")).refused.find("span all heads") != std::string::npos);
    Job olmo = hf_job("olmo-2-7b");
    CHECK(megatron_launch(olmo).refused.find("span all heads") != std::string::npos);
    olmo.model.qk_norm_across_heads = false;
    CHECK(megatron_launch(olmo).refused.find("pre-norm") != std::string::npos);
    olmo.model.norm_after_sublayers = false;
    CHECK(megatron_launch(olmo).refused.empty());
    // Parallel residual, norms around the sublayers, configured multipliers, cross-layer K/V.
    CHECK(megatron_launch(hf_job("gpt-neox-20b")).refused.find("side by side") != std::string::npos);
    CHECK(megatron_launch(hf_job("falcon-40b")).refused.find("side by side") != std::string::npos);
    CHECK(megatron_launch(hf_job("glm-4-9b-0414")).refused.find("input and its output") != std::string::npos);
    CHECK(megatron_launch(hf_job("exaone-4.0-32b")).refused.find("pre-norm") != std::string::npos);
    Job granite = hf_job("granite-3.1-8b");
    CHECK(megatron_launch(granite).refused.find("multipliers") != std::string::npos);
    granite.model.scalar_multipliers = false;
    CHECK(megatron_launch(granite).refused.empty());
    granite.model.kv_shared_across_layers = true;
    CHECK(megatron_launch(granite).refused.find("cross-layer attention") != std::string::npos);
    granite.model.kv_shared_across_layers = false;
    granite.model.partial_linear_biases = true;
    CHECK(megatron_launch(granite).refused.find("--add-qkv-bias") != std::string::npos);
    granite.model.partial_linear_biases = false;
    granite.model.embedding_norm = true;  // BLOOM's embedding LayerNorm
    CHECK(megatron_launch(granite).refused.find("normalizes its embedding output") != std::string::npos);
    // A tanh-approximated GELU launches with a note (Megatron-LM trains erf GELU).
    Job tanh_gelu = hf_job("llama-3.1-8b");
    CHECK(megatron_launch(tanh_gelu).notes.empty());
    tanh_gelu.model.gelu_tanh_approximation = true;
    const LaunchPlan noted = megatron_launch(tanh_gelu);
    CHECK(noted.refused.empty());
    REQUIRE(noted.notes.size() == 1);
    CHECK(noted.notes[0].find("erf GELU") != std::string::npos);
    // Per-head q/k norms (Qwen3, GLM-4.5) are Megatron's --qk-layernorm and launch.
    CHECK(megatron_launch(hf_job("qwen3-32b")).refused.empty());
  }
}

TEST_CASE("megatron_args") {
  SUBCASE("golden: the SC21 GPT-3 175B plan, spelled as Megatron-LM's arguments.py spells it") {
    // tp8 pp16 dp8, SP, selective recompute, distributed optimizer, bf16; GPT-3 is MHA with GELU,
    // LayerNorm, learned positions, tied embeddings and dropout (Megatron's defaults).
    const std::vector<std::string> expected = {
        "--num-layers", "96", "--hidden-size", "12288", "--ffn-hidden-size", "49152", "--num-attention-heads", "96",
        "--position-embedding-type", "learned_absolute", "--vocab-size", "50257",
        "--micro-batch-size", "1", "--global-batch-size", "1536", "--seq-length", "2048", "--max-position-embeddings", "2048",
        "--tensor-model-parallel-size", "8", "--pipeline-model-parallel-size", "16", "--sequence-parallel",
        "--recompute-granularity", "selective", "--use-distributed-optimizer", "--overlap-grad-reduce",
        "--overlap-param-gather", "--cross-entropy-loss-fusion", "--bf16"};
    CHECK(megatron_args(test::gpt3_175b_job()) == expected);
  }
  SUBCASE("the loss the prediction timed: Megatron's fused cross entropy by default, none for the eager one") {
    Job job = test::gpt3_175b_job();
    auto has_flag = [](const std::vector<std::string>& a, const char* f) { return std::find(a.begin(), a.end(), f) != a.end(); };
    CHECK(has_flag(megatron_args(job), "--cross-entropy-loss-fusion"));
    job.runtime.cross_entropy = CrossEntropyKernel::eager;
    CHECK_FALSE(has_flag(megatron_args(job), "--cross-entropy-loss-fusion"));
    // Megatron-LM refuses Transformer Engine's, so a job timed with it has no launch.
    job.runtime.cross_entropy = CrossEntropyKernel::single_pass;
    CHECK(megatron_launch(job).refused.find("Transformer Engine's cross entropy") != std::string::npos);
  }
  SUBCASE("a Llama 3 model: GQA, SwiGLU, RMSNorm, untied, RoPE, no dropout") {
    auto a = megatron_args(llama3_70b_job());
    CHECK(has(a, "--group-query-attention"));
    CHECK(value_of(a, "--num-query-groups") == "8");
    CHECK(has(a, "--swiglu"));
    CHECK(value_of(a, "--normalization") == "RMSNorm");
    CHECK(has(a, "--untie-embeddings-and-output-weights"));
    CHECK(value_of(a, "--position-embedding-type") == "rope");
    CHECK(value_of(a, "--rotary-base") == "500000");  // Llama 3's rope_theta, not Megatron's 10000
    CHECK(has(a, "--disable-bias-linear"));
    CHECK(value_of(a, "--attention-dropout") == "0.0");
    CHECK(value_of(a, "--hidden-dropout") == "0.0");
    CHECK(value_of(a, "--ffn-hidden-size") == "28672");
    CHECK(value_of(a, "--max-position-embeddings") == "8192");
    // Not distributed optimizer: no param-gather overlap.
    CHECK_FALSE(has(a, "--use-distributed-optimizer"));
    CHECK_FALSE(has(a, "--overlap-param-gather"));
    CHECK(has(a, "--overlap-grad-reduce"));
  }
  SUBCASE("MHA models carry no GQA flags") {
    auto a = megatron_args(test::gpt3_175b_job());
    CHECK_FALSE(has(a, "--group-query-attention"));
    CHECK_FALSE(has(a, "--num-query-groups"));
    CHECK_FALSE(has(a, "--swiglu"));
    CHECK_FALSE(has(a, "--untie-embeddings-and-output-weights"));
  }
  SUBCASE("interleaving: layers per virtual stage = layers / (pp * vpp)") {
    Job job = test::gpt3_175b_job();
    job.plan.vpp = 3;
    CHECK(value_of(megatron_args(job), "--num-layers-per-virtual-pipeline-stage") == std::to_string(96 / (16 * 3)));
  }
  SUBCASE("uneven stages differing only first and last use the decoder-first/last flags") {
    Job job = test::gpt3_175b_job();
    job.plan.pp = 4;
    job.plan.stage_layers = {22, 26, 26, 22};
    auto a = megatron_args(job);
    CHECK(value_of(a, "--decoder-first-pipeline-num-layers") == "22");
    CHECK(value_of(a, "--decoder-last-pipeline-num-layers") == "22");
    CHECK_FALSE(has(a, "--pipeline-model-parallel-layout"));
    job.plan.stage_layers = {18, 26, 26, 26};
    a = megatron_args(job);
    CHECK(value_of(a, "--decoder-first-pipeline-num-layers") == "18");
    CHECK_FALSE(has(a, "--decoder-last-pipeline-num-layers"));
    job.plan.stage_layers = {24, 24, 24, 24};  // even after all: nothing to say
    a = megatron_args(job);
    CHECK_FALSE(has(a, "--decoder-first-pipeline-num-layers"));
    CHECK_FALSE(has(a, "--pipeline-model-parallel-layout"));
  }
  SUBCASE("other uneven splits use --pipeline-model-parallel-layout, one '|'-separated entry per stage") {
    Job job = test::gpt3_175b_job();
    job.plan.pp = 4;
    job.plan.stage_layers = {20, 30, 26, 20};
    auto a = megatron_args(job);
    CHECK_FALSE(has(a, "--decoder-first-pipeline-num-layers"));
    auto layout = value_of(a, "--pipeline-model-parallel-layout");
    REQUIRE(layout.has_value());
    // Embedding on the first stage, loss on the last, t*N decoder layers on each.
    CHECK(*layout == "Et*20|t*30|t*26|t*20L");
  }
  SUBCASE("uneven stages with interleaving: one layout entry per virtual stage, chunk-major") {
    Job job = test::gpt3_175b_uneven_interleaved_job();
    auto a = megatron_args(job);
    CHECK_FALSE(has(a, "--num-layers-per-virtual-pipeline-stage"));  // the layout sets the chunks
    CHECK_FALSE(has(a, "--decoder-first-pipeline-num-layers"));
    auto layout = value_of(a, "--pipeline-model-parallel-layout");
    REQUIRE(layout.has_value());
    // Chunk 0 of stages 0..3, then chunk 1 of stages 0..3; the embedding and loss chunks are short.
    CHECK(*layout == "Et*11|t*13|t*13|t*12|t*12|t*12|t*12|t*11L");
  }
  SUBCASE("an MTP model's layout gives the loss and MTP layers their own last chunk where they weigh a chunk's layers") {
    Job job = test::workload("deepseek-v3", "dgx-h100-ndr", 8192, 4096);  // 61 layers, one MTP layer
    REQUIRE(job.model.mtp_layers == 1);
    job.plan.tp = 2;
    job.plan.pp = 16;
    job.plan.vpp = 2;
    job.plan.dp = 32;
    job.plan.ep = 64;
    job.plan.stage_layers = standard_stage_layers(61, 16, 2, 1);
    auto layout = value_of(megatron_args(job), "--pipeline-model-parallel-layout");
    REQUIRE(layout.has_value());
    // Megatron-Bridge's DeepSeek-V3 layout "Et|(tt|)*30mL", written out.
    std::string bridge = "Et*1";
    for (int i = 0; i < 30; ++i) bridge += "|t*2";
    CHECK(*layout == bridge + "|mL");
  }
  SUBCASE("an explicit chunk layout is written as it is (Megatron-Bridge's GB200 DeepSeek-V3 layout)") {
    Job job = test::workload("deepseek-v3", "dgx-h100-ndr", 8192, 4096);
    job.plan.pp = 4;
    job.plan.vpp = 4;
    job.plan.dp = 256;
    job.plan.ep = 64;
    job.plan.stage_layers = {16, 16, 16, 13};
    job.plan.chunk_layout = std::vector<int>(16, 4);
    job.plan.chunk_layout.back() = 1;
    REQUIRE(check_plan(job).empty());
    std::string layout = "Et*4";
    for (int i = 0; i < 14; ++i) layout += "|t*4";
    CHECK(value_of(megatron_args(job), "--pipeline-model-parallel-layout") == layout + "|t*1mL");
  }
  SUBCASE("selective recompute modules other than Megatron's default core_attn are listed") {
    Job job = test::gpt3_175b_job();
    job.model = test::catalog().model("deepseek-v3");
    job.model.mtp_layers = 0;
    job.plan = ParallelPlan{};
    job.plan.tp = 2;
    job.plan.dp = 8;
    job.plan.ep = 8;
    job.plan.sequence_parallel = true;
    job.plan.recompute.granularity = RecomputeGranularity::selective;
    auto a = megatron_args(job);
    CHECK(value_of(a, "--recompute-granularity") == "selective");
    CHECK_FALSE(has(a, "--recompute-modules"));
    job.plan.recompute.modules = kRecomputeMlaUpProj | kRecomputeLayernorm;
    a = megatron_args(job);
    const auto at = std::find(a.begin(), a.end(), "--recompute-modules");
    REQUIRE(at != a.end());
    CHECK(std::vector<std::string>(at + 1, at + 3) == std::vector<std::string>{"layernorm", "mla_up_proj"});
    // moe_act needs --moe-grouped-gemm, which strata does not write: no launch, and why.
    job.plan.recompute.modules = kRecomputeMoeAct;
    CHECK(megatron_args(job).empty());
    CHECK(megatron_launch(job).refused.find("moe_act") != std::string::npos);
    // A plan timed with grouped-GEMM experts gets no launch either: the launch would run them one
    // after another (strata does not write --moe-grouped-gemm).
    job.plan.recompute.modules = kRecomputeCoreAttn;
    REQUIRE_FALSE(megatron_args(job).empty());
    job.runtime.moe_grouped_gemm = true;
    CHECK(megatron_args(job).empty());
    CHECK(megatron_launch(job).refused.find("--moe-grouped-gemm") != std::string::npos);
    // CUDA graphs over the router and the dispatcher's preprocessing are written as Transformer
    // Engine's per-layer graphs of those modules, as the plan times them.
    job.runtime.moe_grouped_gemm = false;
    job.runtime.cuda_graph_modules = kCudaGraphMoeRouter | kCudaGraphMoePreprocess;
    const std::vector<std::string> graphed = megatron_args(job);
    const auto impl = std::find(graphed.begin(), graphed.end(), "--cuda-graph-impl");
    REQUIRE(impl + 1 < graphed.end());
    CHECK(*(impl + 1) == "transformer_engine");
    const auto modules = std::find(graphed.begin(), graphed.end(), "--cuda-graph-modules");
    REQUIRE(graphed.end() - modules >= 3);
    CHECK(std::vector<std::string>(modules + 1, modules + 3) == std::vector<std::string>{"moe_router", "moe_preprocess"});
    // Whole-layer graphs stop at the dropless dispatcher's wait for token counts, which Transformer
    // Engine cannot capture: the launch names the parts before it, which the plan counts as captured,
    // and DeepSeek-V3's three dense layers' MLPs.
    job.runtime.cuda_graph_modules = kCudaGraphWholeLayer;
    const LaunchPlan whole = megatron_launch(job);
    const auto named = std::find(whole.megatron_args.begin(), whole.megatron_args.end(), "--cuda-graph-modules");
    REQUIRE(whole.megatron_args.end() - named >= 5);
    CHECK(std::vector<std::string>(named + 1, named + 5) == std::vector<std::string>{"attn", "mlp", "moe_router", "moe_preprocess"});
    CHECK(std::any_of(whole.notes.begin(), whole.notes.end(), [](const std::string& n) { return n.find("stop at a dropless MoE") != std::string::npos; }));
    // Padded to capacity nothing waits: the whole layer is captured, no module named.
    job.runtime.moe_capacity_factor = 1.0;
    job.runtime.moe_pad_to_capacity = true;
    CHECK_FALSE(has(megatron_args(job), "--cuda-graph-modules"));
    job.runtime.moe_capacity_factor = 0;
    job.runtime.moe_pad_to_capacity = false;
    // Nor HybridEP's static per-rank budget (strata's launch dispatches with DeepEP).
    job.runtime.cuda_graph_modules = 0;
    job.runtime.moe_token_dedup = true;
    REQUIRE_FALSE(megatron_args(job).empty());
    job.runtime.moe_rank_capacity_factor = 1.5;
    CHECK(megatron_args(job).empty());
    CHECK(megatron_launch(job).refused.find("--moe-expert-rank-capacity-factor") != std::string::npos);
    // Nor fp8 attention, which Megatron-LM has no flag for.
    job.runtime.moe_rank_capacity_factor = 0;
    REQUIRE_FALSE(megatron_args(job).empty());
    job.runtime.fp8_attention = true;
    CHECK(megatron_args(job).empty());
    CHECK(megatron_launch(job).refused.find("fp8_dot_product_attention") != std::string::npos);
  }
  SUBCASE("multi-token prediction: --mtp-num-layers, and its layers beside the loss in a layout") {
    Job job = test::gpt3_175b_job();
    job.model = test::catalog().model("deepseek-v3");
    job.plan = ParallelPlan{};
    job.plan.tp = 2;
    job.plan.pp = 4;
    job.plan.dp = 8;
    job.plan.ep = 8;
    job.plan.sequence_parallel = true;
    job.plan.stage_layers = {14, 17, 15, 15};
    auto a = megatron_args(job);
    CHECK(value_of(a, "--mtp-num-layers") == "1");
    // Megatron wants the MTP layers after every decoder layer, in the last virtual stage.
    CHECK(value_of(a, "--pipeline-model-parallel-layout") == "Et*14|t*17|t*15|t*15mL");
    job.model.mtp_layers = 0;
    a = megatron_args(job);
    CHECK_FALSE(has(a, "--mtp-num-layers"));
    CHECK(value_of(a, "--pipeline-model-parallel-layout") == "Et*14|t*17|t*15|t*15L");
  }
  SUBCASE("recompute flags") {
    Job job = test::gpt3_175b_job();
    job.plan.recompute.granularity = RecomputeGranularity::full;
    auto a = megatron_args(job);
    CHECK(value_of(a, "--recompute-granularity") == "full");
    CHECK(value_of(a, "--recompute-method") == "uniform");
    CHECK(value_of(a, "--recompute-num-layers") == "1");
    job.plan.recompute.num_layers = 4;
    a = megatron_args(job);
    CHECK(value_of(a, "--recompute-method") == "block");
    CHECK(value_of(a, "--recompute-num-layers") == "4");
    job.plan.recompute.granularity = RecomputeGranularity::none;
    a = megatron_args(job);
    CHECK_FALSE(has(a, "--recompute-granularity"));
    CHECK_FALSE(has(a, "--recompute-method"));
  }
  SUBCASE("precision flags") {
    Job job = test::gpt3_175b_job();
    job.training.precision = Precision::fp16;
    auto a = megatron_args(job);
    CHECK(has(a, "--fp16"));
    CHECK_FALSE(has(a, "--bf16"));
    job = llama3_70b_job();
    job.training.precision = Precision::fp8;
    a = megatron_args(job);
    CHECK(has(a, "--bf16"));
    CHECK(value_of(a, "--fp8-format") == "hybrid");
    job.training.precision = Precision::fp32;
    a = megatron_args(job);
    CHECK_FALSE(has(a, "--bf16"));
    CHECK_FALSE(has(a, "--fp16"));
  }
  SUBCASE("context, expert, TP-overlap and gradient-accumulation flags appear only when used") {
    Job job = llama3_70b_job();
    CHECK_FALSE(has(megatron_args(job), "--context-parallel-size"));
    job.plan.cp = 2;
    job.runtime.tp_comm_overlap = true;
    auto a = megatron_args(job);
    CHECK(value_of(a, "--context-parallel-size") == "2");
    CHECK(has(a, "--tp-comm-overlap"));
    CHECK_FALSE(has(a, "--no-gradient-accumulation-fusion"));
    job.runtime.fused_grad_accumulation = false;
    CHECK(has(megatron_args(job), "--no-gradient-accumulation-fusion"));
    Job moe = llama3_70b_job();
    moe.model = test::catalog().model("mixtral-8x7b");
    moe.plan.ep = 4;
    a = megatron_args(moe);
    CHECK(value_of(a, "--num-experts") == std::to_string(moe.model.moe->num_experts));
    CHECK(value_of(a, "--moe-router-topk") == std::to_string(moe.model.moe->top_k));
    CHECK(value_of(a, "--expert-model-parallel-size") == "4");
    // The shared experts' overlap with the dispatcher: written only where there are shared experts.
    moe.runtime.moe_shared_expert_overlap = true;
    CHECK_FALSE(has(megatron_args(moe), "--moe-shared-expert-overlap"));
    moe.model.moe->shared_expert_ffn_hidden_size = 14336;
    CHECK(has(megatron_args(moe), "--moe-shared-expert-overlap"));
  }
  SUBCASE("no data parallelism, nothing to overlap; tp = 1 has no sequence parallelism") {
    Job job = test::gpt3_175b_job();
    job.plan.dp = 1;
    job.plan.tp = 1;
    auto a = megatron_args(job);
    CHECK_FALSE(has(a, "--overlap-grad-reduce"));
    CHECK_FALSE(has(a, "--overlap-param-gather"));
    CHECK_FALSE(has(a, "--sequence-parallel"));
    // A MoE model's expert gradients still reduce over the expert-data-parallel group
    // (tp*dp*cp / (ep*etp) = 8 here): the overlap the prediction assumed is asked for.
    Job moe = test::gpt3_175b_job();
    moe.model = test::catalog().model("mixtral-8x7b");
    moe.plan.pp = 4;
    moe.plan.dp = 1;
    CHECK(moe.plan.expert_data_parallel() == 8);
    CHECK(has(megatron_args(moe), "--overlap-grad-reduce"));
  }
  SUBCASE("the gradient reduction dtype: fp32 unless asked, in the spelling of the model's precision") {
    Job job = llama3_70b_job();
    job.training.precision = Precision::fp16;
    CHECK(has(megatron_args(job), "--accumulate-allreduce-grads-in-fp32"));  // Megatron's fp16 default is fp16 gradients
    job.runtime.grad_reduce_in_bf16 = true;
    CHECK_FALSE(has(megatron_args(job), "--accumulate-allreduce-grads-in-fp32"));
    CHECK_FALSE(has(megatron_args(job), "--grad-reduce-in-bf16"));
    job.training.precision = Precision::bf16;
    CHECK(has(megatron_args(job), "--grad-reduce-in-bf16"));
    job.runtime.grad_reduce_in_bf16 = false;
    CHECK_FALSE(has(megatron_args(job), "--grad-reduce-in-bf16"));
    CHECK_FALSE(has(megatron_args(job), "--accumulate-allreduce-grads-in-fp32"));  // forced for bf16
  }
  SUBCASE("every flag is spelled --kebab-case and given once") {
    Job job = llama3_70b_job();
    job.plan.stage_layers = {20, 30, 16, 14};
    job.plan.recompute.granularity = RecomputeGranularity::full;
    job.plan.distributed_optimizer = true;
    std::vector<std::string> flags;
    for (const auto& x : megatron_args(job))
      if (x.starts_with("--")) flags.push_back(x);
    for (const auto& f : flags) {
      CAPTURE(f);
      CHECK(std::all_of(f.begin() + 2, f.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }));
    }
    std::sort(flags.begin(), flags.end());
    CHECK(std::adjacent_find(flags.begin(), flags.end()) == flags.end());
  }
}

TEST_CASE("join_args") {
  CHECK(join_args({"--tensor-model-parallel-size", "8", "--bf16"}) == "--tensor-model-parallel-size 8 --bf16");
  // Shell metacharacters in values are quoted.
  CHECK(join_args({"--pipeline-model-parallel-layout", "Et*20|t*30L"}) == "--pipeline-model-parallel-layout 'Et*20|t*30L'");
  CHECK(join_args({}) == "");
}

TEST_CASE("megatron_args: golden flags of the published GPT-3 175B plan") {
  const Job job = test::gpt3_175b_job();
  CHECK(join_args(megatron_args(job)) ==
        "--num-layers 96 --hidden-size 12288 --ffn-hidden-size 49152 --num-attention-heads 96 "
        "--position-embedding-type learned_absolute --vocab-size 50257 --micro-batch-size 1 --global-batch-size 1536 "
        "--seq-length 2048 --max-position-embeddings 2048 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 "
        "--sequence-parallel --recompute-granularity selective --use-distributed-optimizer --overlap-grad-reduce "
        "--overlap-param-gather --cross-entropy-loss-fusion --bf16");
}

TEST_CASE("megatron_args: interleaving, context parallelism, partial full recompute") {
  Job job = test::gpt3_175b_job();
  job.plan.vpp = 2;
  job.plan.cp = 2;
  job.plan.dp = 4;
  job.plan.recompute = {RecomputeGranularity::full, 2};
  const std::string s = join_args(megatron_args(job));
  CHECK(s.find("--context-parallel-size 2") != std::string::npos);
  CHECK(s.find("--num-layers-per-virtual-pipeline-stage 3") != std::string::npos);
  // strata's 2 layers per stage are 1 in each of the stage's 2 model chunks: Megatron counts
  // --recompute-num-layers per chunk (transformer_block.py, method block).
  CHECK(s.find("--recompute-granularity full --recompute-method block --recompute-num-layers 1") != std::string::npos);
  job.plan.recompute = {RecomputeGranularity::full, 3};  // not a whole number per chunk: no launch
  CHECK(megatron_args(job).empty());
  CHECK(megatron_launch_refusal(job).value_or("").find("model chunks") != std::string::npos);
}

TEST_CASE("megatron_args: uneven stages, as Megatron-LM spells them") {
  Job job = test::gpt3_175b_job();
  SUBCASE("first and last stage differ: --decoder-first/last-pipeline-num-layers") {
    job.plan.stage_layers = {5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 7};
    const std::string s = join_args(megatron_args(job));
    CHECK(s.find("--decoder-first-pipeline-num-layers 5 --decoder-last-pipeline-num-layers 7") != std::string::npos);
    CHECK(s.find("--pipeline-model-parallel-layout") == std::string::npos);
  }
  SUBCASE("a middle stage differs: --pipeline-model-parallel-layout") {
    job.plan.stage_layers = {6, 6, 6, 5, 7, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6};
    const std::string s = join_args(megatron_args(job));
    CHECK(s.find("--pipeline-model-parallel-layout 'Et*6|t*6|t*6|t*5|t*7|t*6|t*6|t*6|t*6|t*6|t*6|t*6|t*6|t*6|t*6|t*6L'") !=
          std::string::npos);
  }
}
}

TEST_SUITE("launch") {
TEST_CASE("megatron_launch: environment, torchrun shape and refusals") {
  Job job = test::gpt3_175b_job();  // tp8 pp16 dp8 on DGX A100 nodes of 8
  SUBCASE("tensor parallelism before Blackwell needs CUDA_DEVICE_MAX_CONNECTIONS=1") {
    const LaunchPlan l = megatron_launch(job);
    REQUIRE_FALSE(l.megatron_args.empty());
    CHECK(l.env == std::vector<std::pair<std::string, std::string>>{{"CUDA_DEVICE_MAX_CONNECTIONS", "1"}});
    CHECK(l.nnodes == 128);
    CHECK(l.nproc_per_node == 8);
    CHECK(l.num_micro_batches == job.num_micro_batches());
    job.plan.tp = 1;
    job.plan.dp = 64;
    job.plan.sequence_parallel = false;
    CHECK(megatron_launch(job).env.empty());
  }
  SUBCASE("Blackwell no longer needs it (arguments.py: get_device_arch_version() < 10)") {
    job.cluster.gpu.architecture = "blackwell";
    CHECK(megatron_launch(job).env.empty());
  }
  SUBCASE("an infeasible plan carries no launch, only the reason") {
    const LaunchPlan l = megatron_launch(job, false, "stage 0 needs 91.2 GiB > 80 GiB");
    CHECK(l.megatron_args.empty());
    CHECK(l.refused.find("91.2 GiB") != std::string::npos);
  }
  SUBCASE("runtimes and models Megatron-LM does not run are refused, not written as DDP flags") {
    Job ds = job;
    ds.runtime.framework = Framework::deepspeed;
    ds.plan.zero_stage = 1;
    CHECK(megatron_launch(ds).refused.find("Megatron-DeepSpeed") != std::string::npos);
    Job fsdp = job;
    fsdp.runtime.framework = Framework::fsdp;
    CHECK(megatron_args(fsdp).empty());
    Job alibi = job;
    alibi.model.position_embedding = PositionEmbedding::alibi;
    CHECK(megatron_launch(alibi).refused.find("ALiBi") != std::string::npos);
    // CUDA graphs shorten a dense layer's host time too, so a plan timed with them is written with
    // them (Megatron-LM's functional test gpt_grpo_..._cudagraphs, written without, read back at
    // 0.377 s against 0.141 s): the whole layer names no module; the whole step has no NaN check.
    Job graphs = job;
    graphs.runtime.cuda_graph_modules = kCudaGraphWholeLayer;
    const std::vector<std::string> layer = megatron_args(graphs);
    CHECK(has(layer, "--cuda-graph-impl"));
    CHECK_FALSE(has(layer, "--cuda-graph-modules"));
    CHECK_FALSE(has(layer, "--no-check-for-nan-in-loss-and-grad"));
    graphs.runtime.cuda_graph_modules = kCudaGraphWholeLayer | kCudaGraphFullIteration;
    const std::vector<std::string> step = megatron_args(graphs);
    const auto impl = std::find(step.begin(), step.end(), "--cuda-graph-impl");
    REQUIRE(impl + 1 < step.end());
    CHECK(*(impl + 1) == "full_iteration");
    CHECK(has(step, "--no-check-for-nan-in-loss-and-grad"));
    CHECK_FALSE(has(step, "--cuda-graph-modules"));
  }
  SUBCASE("ZeRO-2/3 under Megatron-LM is Megatron-FSDP, which wants CUDA_DEVICE_MAX_CONNECTIONS unset") {
    job.plan.zero_stage = 3;
    const LaunchPlan l = megatron_launch(job);
    CHECK(has(l.megatron_args, "--use-megatron-fsdp"));
    CHECK(value_of(l.megatron_args, "--data-parallel-sharding-strategy") == "optim_grads_params");
    CHECK(l.env.empty());
  }
  SUBCASE("layers that pp does not divide get an explicit split, not Megatron's refusal") {
    job.model.num_layers = 95;
    const auto a = megatron_args(job);
    CHECK((has(a, "--decoder-first-pipeline-num-layers") || has(a, "--decoder-last-pipeline-num-layers") ||
           has(a, "--pipeline-model-parallel-layout")));
  }
}

TEST_CASE("launch_script") {
  const Job job = test::gpt3_175b_job();
  const std::string s = launch_script(job, megatron_launch(job));
  CHECK(s.find("export CUDA_DEVICE_MAX_CONNECTIONS=1") != std::string::npos);
  CHECK(s.find("torchrun --nnodes 128 --nproc-per-node 8") != std::string::npos);
  CHECK(s.find("--tensor-model-parallel-size 8") != std::string::npos);
  CHECK(s.find("DATA_PATH:?") != std::string::npos);  // the data is the user's to give
  Job refused = job;
  refused.runtime.framework = Framework::fsdp;
  const std::string r = launch_script(refused, megatron_launch(refused));
  CHECK(r.find("exit 1") != std::string::npos);
  CHECK(r.find("torchrun") == std::string::npos);
}
}
