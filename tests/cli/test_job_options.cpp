#include <doctest/doctest.h>

#include "cli/job_options.h"
#include "costmodel/predictor.h"
#include "test_util.h"

using namespace strata;
using test::input_error;

namespace {

// The command of the SC21 GPT-3 run: --model gpt3-175b --gpu a100-80gb --gpus 1024
// --global-batch 1536 --seq 2048 --tp 8 --pp 16 --mbs 1.
JobOptions sc21_options() {
  JobOptions o;
  o.model = "gpt3-175b";
  o.gpu = "a100-80gb";
  o.gpus = 1024;
  o.global_batch = 1536;
  o.seq = 2048;
  o.tp = 8;
  o.pp = 16;
  o.mbs = 1;
  return o;
}

}  // namespace

TEST_SUITE("cli") {
TEST_CASE("build_job") {
  SUBCASE("dp is inferred from --gpus") {
    Job job = build_job(sc21_options(), test::catalog());
    CHECK(job.plan.tp == 8);
    CHECK(job.plan.pp == 16);
    CHECK(job.plan.dp == 1024 / (8 * 16));
    CHECK(job.plan.world_size() == 1024);
    CHECK(job.training.global_batch_size == 1536);
    CHECK(job.training.seq_length == 2048);
    CHECK(job.model == test::catalog().model("gpt3-175b"));
    // --gpu alone picks the shipped preset around that GPU.
    CHECK(job.cluster.name == "dgx-a100-hdr");
    CHECK(job.calibration == test::catalog().calibration_or_default(job.cluster.gpu));
  }
  SUBCASE("cp takes its share of --gpus") {
    JobOptions o = sc21_options();
    o.cp = 2;
    CHECK(build_job(o, test::catalog()).plan.dp == 4);
  }
  SUBCASE("the CP exchange defaults to Megatron's ring, and to PyTorch's all-gather under --framework fsdp") {
    JobOptions o = sc21_options();
    o.cp = 2;
    CHECK(build_job(o, test::catalog()).runtime.cp_comm_type == CpCommType::p2p);
    o.framework = "fsdp";
    CHECK(build_job(o, test::catalog()).runtime.cp_comm_type == CpCommType::allgather);
    o.cp_comm_type = "p2p";
    CHECK(build_job(o, test::catalog()).runtime.cp_comm_type == CpCommType::p2p);
  }
  SUBCASE("fp8 without a recipe: Transformer Engine's delayed scaling, torchao's tensorwise under --framework fsdp") {
    JobOptions o = sc21_options();
    o.gpu = "h100-sxm";
    o.precision = "fp8";
    CHECK(build_job(o, test::catalog()).training.recipe == LowPrecisionRecipe::delayed);
    o.framework = "fsdp";
    CHECK(build_job(o, test::catalog()).training.recipe == LowPrecisionRecipe::tensorwise);
    o.fp8_recipe = "mxfp8";
    CHECK(build_job(o, test::catalog()).training.recipe == LowPrecisionRecipe::mxfp8);
  }
  SUBCASE("an explicit dp that matches --gpus") {
    JobOptions o = sc21_options();
    o.dp = 8;
    CHECK(build_job(o, test::catalog()).plan.dp == 8);
  }
  SUBCASE("tp*pp*dp*cp differing from --gpus is an InputError naming --gpus") {
    JobOptions o = sc21_options();
    o.dp = 4;
    std::string msg = input_error([&] { build_job(o, test::catalog()); });
    CHECK(msg.find("--gpus") != std::string::npos);
    CHECK(msg.find("tp*pp*dp*cp = 512 but --gpus is 1024") != std::string::npos);
  }
  SUBCASE("--gpus not divisible by tp*pp*cp") {
    JobOptions o = sc21_options();
    o.gpus = 1000;
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--gpus: 1000 GPUs are not divisible by tp*pp*cp = 128") !=
          std::string::npos);
  }
  SUBCASE("neither --gpus nor --dp") {
    JobOptions o = sc21_options();
    o.gpus.reset();
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--gpus") != std::string::npos);
  }
  SUBCASE("missing or bad workload flags are named") {
    JobOptions o = sc21_options();
    o.global_batch.reset();
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--global-batch") != std::string::npos);
    o = sc21_options();
    o.model.clear();
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--model") != std::string::npos);
    o = sc21_options();
    o.gpu.clear();
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--gpu NAME or --cluster NAME") != std::string::npos);
    o = sc21_options();
    o.precision = "fp4";
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--precision: expected fp32, tf32, fp16, bf16 or fp8, found \"fp4\"") !=
          std::string::npos);
    o = sc21_options();
    o.framework = "jax";
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--framework") != std::string::npos);
    o = sc21_options();
    o.tp = 0;
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--tp: expected a positive integer up to 1,000,000, found 0") != std::string::npos);
    o = sc21_options();
    o.zero = 4;
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--zero") != std::string::npos);
    o = sc21_options();
    o.seq = 0;
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--seq") != std::string::npos);
    o = sc21_options();
    o.memory_reserve_GiB = 80;
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--memory-reserve") != std::string::npos);
    o = sc21_options();
    o.step_overhead_s = -0.5;
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--step-overhead") != std::string::npos);
    o = sc21_options();
    o.recompute = "selective";
    o.recompute_modules = "core_attn,attn_proj";
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--recompute-modules: expected comma-separated") != std::string::npos);
    o.recompute = "full";
    o.recompute_modules = "moe_act";
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--recompute-modules: only applies with --recompute selective") !=
          std::string::npos);
    o = sc21_options();
    o.offload_modules = "core_attn,gdp_qkv";
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--offload-modules: expected comma-separated attn_norm") != std::string::npos);
    o.offload_modules = "core_attn,attn_proj";
    CHECK(build_job(o, test::catalog()).plan.offload.modules == (kOffloadCoreAttn | kOffloadAttnProj));
    o.min_offloaded_tensor_size = -1;
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--min-offloaded-tensor-size: expected a non-negative") != std::string::npos);
    o.offload_modules.clear();
    o.min_offloaded_tensor_size = 1000;
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--min-offloaded-tensor-size: only applies with --offload-modules") !=
          std::string::npos);
    o = sc21_options();
    o.cpu_offload_layers = -2;
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--cpu-offload-layers: expected a non-negative layer count") != std::string::npos);
    o = sc21_options();
    o.mtp_repeated_layer = true;  // GPT's SC21 shapes train no MTP module
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--mtp-repeated-layer: the model trains no MTP module") != std::string::npos);
    o.mtp_layers = 2;
    CHECK(build_job(o, test::catalog()).model.mtp_repeated_layer);
    // A hybrid model given MTP modules runs NemotronHConfig's default layers in them (attention then
    // its MLP kind); taking them away takes the pattern too.
    o = sc21_options();
    o.model = "nemotron-h-8b";
    o.mtp_layers = 1;
    CHECK(build_job(o, test::catalog()).model.hybrid_mtp_pattern == "*-");
    o.model = "nemotron-3-super-120b-a12b";
    o.mtp_layers = 0;
    CHECK(build_job(o, test::catalog()).model.hybrid_mtp_pattern.empty());
    o = sc21_options();
    o.mtp_layers = -1;
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--mtp-layers: expected 0..64") != std::string::npos);
  }
  SUBCASE("--mtp-layers overrides the model's multi-token prediction depth") {
    JobOptions o = sc21_options();
    o.model = "deepseek-v3";
    o.gpu = "h100";
    o.gpus = 1024;
    o.tp = 2;
    o.pp = 16;
    o.ep = 64;
    o.sp = true;
    CHECK(build_job(o, test::catalog()).model.mtp_layers == 1);
    o.mtp_layers = 0;
    CHECK(build_job(o, test::catalog()).model.mtp_layers == 0);
  }
  SUBCASE("--gpu and --cluster must agree") {
    JobOptions o = sc21_options();
    o.cluster = "dgx-h100-ndr";
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--gpu: \"a100-80gb\" differs from the GPU of cluster") !=
          std::string::npos);
    o.gpu = "h100";
    CHECK(build_job(o, test::catalog()).cluster.gpu.name == "H100-SXM5-80GB");
  }
  SUBCASE("--seq defaults to the model's context and --gpus-per-node overrides the cluster") {
    JobOptions o = sc21_options();
    o.seq.reset();
    o.gpus_per_node = 4;
    Job job = build_job(o, test::catalog());
    CHECK(job.training.seq_length == job.model.max_seq_length);
    CHECK(job.cluster.gpus_per_node == 4);
  }
  SUBCASE("runtime flags") {
    JobOptions o = sc21_options();
    o.no_flash_attention = true;
    o.tp_comm_overlap = true;
    o.no_overlap_grad_reduce = true;
    o.framework = "Megatron-DeepSpeed";
    CHECK(build_job(o, test::catalog()).runtime.fused_grad_accumulation);
    o.no_grad_accumulation_fusion = true;
    Job job = build_job(o, test::catalog());
    CHECK_FALSE(job.runtime.fused_grad_accumulation);
    CHECK_FALSE(job.runtime.flash_attention);
    CHECK(job.runtime.tp_comm_overlap);
    CHECK_FALSE(job.runtime.overlap_grad_reduce);
    CHECK(job.runtime.framework == Framework::deepspeed);
    CHECK(job.runtime.attention_kernel == AttentionKernel::automatic);
  }
  SUBCASE("--moe-paged-stash: under HybridEP's budget, Megatron's default pool or the one given") {
    JobOptions o = sc21_options();
    o.moe_paged_stash = true;
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--moe-paged-stash: needs --moe-rank-capacity-factor") !=
          std::string::npos);
    o.moe_token_dedup = true;
    o.moe_rank_capacity_factor = 1.5;
    CHECK(build_job(o, test::catalog()).runtime.moe_paged_stash_factor == kMegatronPagedStashFactor);
    o.moe_paged_stash_factor = -1.2;
    CHECK(build_job(o, test::catalog()).runtime.moe_paged_stash_factor == -1.2);
    o.moe_paged_stash_host_factor = 1.0;
    CHECK(build_job(o, test::catalog()).runtime.moe_paged_stash_host_factor == 1.0);
    o.moe_paged_stash_host_factor.reset();
    o.moe_paged_stash_factor = 0;
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("expected a non-zero factor") != std::string::npos);
    o.moe_paged_stash = false;
    o.moe_paged_stash_factor = 1.2;
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("only applies with --moe-paged-stash") != std::string::npos);
  }
  SUBCASE("--cuda-graphs: Megatron's module names, the whole layer, or the whole step") {
    JobOptions o = sc21_options();
    CHECK(build_job(o, test::catalog()).runtime.cuda_graph_modules == 0);
    o.cuda_graphs = "attn,mlp";
    CHECK(build_job(o, test::catalog()).runtime.cuda_graph_modules == (kCudaGraphAttn | kCudaGraphMlp));
    o.cuda_graphs = "layer";
    CHECK(build_job(o, test::catalog()).runtime.cuda_graph_modules == kCudaGraphWholeLayer);
    o.cuda_graphs = "full_iteration";
    CHECK(build_job(o, test::catalog()).runtime.cuda_graph_modules == (kCudaGraphWholeLayer | kCudaGraphFullIteration));
    o.cuda_graphs = "attn,router";
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--cuda-graphs: expected attn, mlp, moe") != std::string::npos);
  }
  SUBCASE("--attention-kernel") {
    JobOptions o = sc21_options();
    o.attention_kernel = "cuDNN";
    CHECK(build_job(o, test::catalog()).runtime.attention_kernel == AttentionKernel::cudnn);
    o.attention_kernel = "flash";
    CHECK(build_job(o, test::catalog()).runtime.attention_kernel == AttentionKernel::flash2);
    o.attention_kernel = "fa3";
    CHECK_THROWS_WITH_AS(build_job(o, test::catalog()), doctest::Contains("--attention-kernel: expected auto, flash or cudnn"), InputError);
    o.attention_kernel = "cudnn";
    o.no_flash_attention = true;
    CHECK_THROWS_WITH_AS(build_job(o, test::catalog()), doctest::Contains("--no-flash-attention"), InputError);
  }
  SUBCASE("--cross-entropy") {
    JobOptions o = sc21_options();
    CHECK(resolved_cross_entropy(build_job(o, test::catalog()).runtime) == CrossEntropyKernel::jit_fused);
    o.cross_entropy = "Eager";
    CHECK(build_job(o, test::catalog()).runtime.cross_entropy == CrossEntropyKernel::eager);
    o.cross_entropy = "single-pass";
    CHECK(build_job(o, test::catalog()).runtime.cross_entropy == CrossEntropyKernel::single_pass);
    o.cross_entropy = "liger";
    CHECK_THROWS_WITH_AS(build_job(o, test::catalog()), doctest::Contains("--cross-entropy: expected auto, eager, jit-fused or single-pass"),
                         InputError);
  }
  SUBCASE("stage layers") {
    JobOptions o = sc21_options();
    o.pp = 4;
    o.stage_layers = "22,26,26,22";
    CHECK(build_job(o, test::catalog()).plan.stage_layers == std::vector<int>{22, 26, 26, 22});
    for (const char* bad : {"22,x,26,22", "22,,26", "22,26.5", "22,-1", "22,0", "22 ,26", "abc"}) {
      CAPTURE(bad);
      o.stage_layers = bad;
      std::string msg = input_error([&] { build_job(o, test::catalog()); });
      CHECK(msg.find("--stage-layers: expected comma-separated positive layer counts") != std::string::npos);
    }
  }
  SUBCASE("a pipeline layout sets vpp and every chunk's layers; it excludes --stage-layers and another --vpp") {
    JobOptions o = sc21_options();  // GPT-3 175B, 96 layers
    o.pp = 4;
    o.pipeline_layout = "Et*8|t*13|t*13|t*12|t*15|t*12|t*12|t*11L";  // chunk-major: chunk 0 of ranks 0..3, then chunk 1
    const Job job = build_job(o, test::catalog());
    CHECK(job.plan.vpp == 2);
    CHECK(job.plan.stage_layers == std::vector<int>{23, 25, 25, 23});
    CHECK(chunk_layers(job.plan, 0, 23, 0, 0) == 8);
    CHECK(chunk_layers(job.plan, 0, 23, 1, 0) == 15);
    CHECK(check_plan(job).empty());
    o.stage_layers = "23,25,25,23";
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--pipeline-layout: give either") != std::string::npos);
    o.stage_layers.clear();
    o.vpp = 3;
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--vpp: 3 differs from the 2 model chunks") != std::string::npos);
    o.vpp.reset();
    o.pipeline_layout = "Et*8|t*13|t*13|t*12|t*15|t*12|t*12|t*10L";
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("holds 95 decoder layers, the model has 96") != std::string::npos);
  }
  SUBCASE("recompute") {
    JobOptions o = sc21_options();
    o.recompute = "selective";
    CHECK(build_job(o, test::catalog()).plan.recompute.granularity == RecomputeGranularity::selective);
    o.recompute = "full";
    Job full = build_job(o, test::catalog());
    CHECK(full.plan.recompute.granularity == RecomputeGranularity::full);
    CHECK(full.plan.recompute.num_layers == -1);  // every layer
    o.recompute_layers = 3;
    CHECK(build_job(o, test::catalog()).plan.recompute.num_layers == 3);
    o.recompute_layers = 0;
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--recompute-layers: expected a positive layer count") !=
          std::string::npos);
    o.recompute = "selective";
    o.recompute_layers = 3;
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--recompute-layers: only applies with --recompute full") !=
          std::string::npos);
    o.recompute_layers.reset();
    o.recompute = "sometimes";
    CHECK(input_error([&] { build_job(o, test::catalog()); }).find("--recompute: expected none, selective or full, found \"sometimes\"") !=
          std::string::npos);
  }
  SUBCASE("optimizer flags") {
    JobOptions o = sc21_options();
    o.dist_opt = true;
    o.optimizer = "Muon";
    CHECK(build_job(o, test::catalog()).training.optimizer.kind == OptimizerKind::muon);
    o.optimizer = "adamw";
    CHECK(input_error([&] { build_job(o, test::catalog()); }) ==
          "command line: --optimizer: expected adam, sgd, muon or lion, found \"adamw\"");
    o.optimizer.clear();
    o.exp_avg_dtype = "bf16";
    CHECK(input_error([&] { build_job(o, test::catalog()); }) == "command line: --exp-avg-dtype: needs --precision-aware-optimizer");
    o.precision_aware_optimizer = true;
    o.exp_avg_sq_dtype = "FP8";
    o.optimizer_offload_fraction = 0.5;
    const OptimizerSpec spec = build_job(o, test::catalog()).training.optimizer;
    CHECK(spec.precision_aware);
    CHECK(spec.exp_avg == StateDtype::bf16);
    CHECK(spec.exp_avg_sq == StateDtype::fp8);
    CHECK(spec.main_params == StateDtype::fp32);
    CHECK(spec.cpu_offload_fraction == 0.5);
    o.main_params_dtype = "fp64";
    CHECK(input_error([&] { build_job(o, test::catalog()); }) ==
          "command line: --main-params-dtype: expected fp32, bf16, fp16 or fp8, found \"fp64\"");
    o.main_params_dtype.clear();
    o.optimizer_offload_fraction = -0.5;
    CHECK(input_error([&] { build_job(o, test::catalog()); }) == "command line: --optimizer-offload-fraction: expected a share from 0 to 1");
    o.optimizer_offload_fraction = 0.5;
    o.precision_aware_optimizer = false;
    o.exp_avg_dtype = o.exp_avg_sq_dtype = "";
    CHECK(input_error([&] { build_job(o, test::catalog()); }) ==
          "command line: --optimizer-offload-fraction: needs --precision-aware-optimizer (Megatron's check)");
  }
  SUBCASE("sharding flags") {
    JobOptions o = sc21_options();
    o.dist_opt = true;
    CHECK(build_job(o, test::catalog()).plan.distributed_optimizer);
    o.dist_opt_instances = 4;
    CHECK(build_job(o, test::catalog()).plan.optimizer_instances == 4);
    o.dist_opt = false;
    CHECK(input_error([&] { build_job(o, test::catalog()); }) ==
          "command line: --dist-opt-instances: needs --dist-opt, or --zero 2 or 3 (Megatron-FSDP's hybrid sharding; with --framework fsdp, --zero 3 for FSDP2's)");
    o.zero = 3;  // Megatron-FSDP's hybrid sharding (HSDP)
    o.outer_dp_sharding = "optim";
    const Job hsdp = build_job(o, test::catalog());
    CHECK(hsdp.plan.sharded_copies() == 4);
    CHECK(hsdp.plan.outer_optimizer_sharding);
    o.outer_dp_sharding = "full";
    CHECK(input_error([&] { build_job(o, test::catalog()); }) ==
          "command line: --outer-dp-sharding-strategy: expected no_shard or optim, found \"full\"");
    o.outer_dp_sharding = "no_shard";
    o.dist_opt_instances = 1;
    o.zero = 2;
    CHECK(build_job(o, test::catalog()).plan.zero_stage == 2);
  }
}
}
