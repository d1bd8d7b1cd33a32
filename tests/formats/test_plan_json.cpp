#include <doctest/doctest.h>

#include "costmodel/predictor.h"
#include "formats/plan_json.h"
#include "launch/megatron_args.h"
#include "test_util.h"

using namespace strata;
using test::input_error;

namespace {

// Job has no operator==: compare its value-type parts. Cluster aliases are compared separately
// (see the known bug below).
void check_same_job(const Job& a, const Job& b) {
  CHECK(a.model == b.model);
  ClusterSpec ca = a.cluster, cb = b.cluster;
  ca.aliases.clear();
  cb.aliases.clear();
  CHECK(ca == cb);
  CHECK(a.training == b.training);
  CHECK(a.plan == b.plan);
  CHECK(a.runtime == b.runtime);
  CHECK(a.calibration == b.calibration);
}

Job round_trip(const Job& job) { return plan_from_json(plan_to_json(job, predict(job)), "plan.json"); }

nlohmann::json plan_of(const Job& job) { return plan_to_json(job, predict(job)); }

}  // namespace

TEST_SUITE("formats") {
TEST_CASE("plan_from_json") {
  SUBCASE("round trip of an even plan") {
    Job job = test::gpt3_175b_job();
    check_same_job(round_trip(job), job);
  }
  SUBCASE("round trip of an uneven plan with full recompute of some layers") {
    Job job = test::gpt3_175b_job();
    job.plan.pp = 4;
    job.plan.dp = 32;
    job.plan.stage_layers = {20, 28, 28, 20};
    job.plan.recompute.granularity = RecomputeGranularity::full;
    job.plan.recompute.num_layers = 3;
    Job back = round_trip(job);
    check_same_job(back, job);
    CHECK(back.plan.stage_layers == std::vector<int>{20, 28, 28, 20});
  }
  SUBCASE("round trip of activation offloading (fine-grained and layer-level) and shared MTP depths") {
    Job job = test::gpt3_175b_job();
    job.plan.offload.modules = kOffloadCoreAttn | kOffloadAttnProj | kOffloadQkvLinear;
    job.plan.offload.min_tensor_elements = 350000000;
    check_same_job(round_trip(job), job);
    job.plan.offload = ActivationOffloadSpec{};
    job.plan.pp = 1;
    job.plan.dp = 128;
    job.plan.cpu_offload_layers = 40;
    check_same_job(round_trip(job), job);
    job.model = test::catalog().model("deepseek-v3");
    job.model.mtp_layers = 2;
    job.model.mtp_repeated_layer = true;
    job.plan.ep = 8;
    check_same_job(round_trip(job), job);
  }
  SUBCASE("round trip of interleaving, cp, ZeRO, runtime options and a custom calibration") {
    Job job;
    job.model = test::catalog().model("llama3-70b");
    job.cluster = test::catalog().cluster("dgx-h100-ndr");
    job.training.global_batch_size = 256;
    job.training.seq_length = 8192;
    job.training.precision = Precision::fp8;
    job.plan.tp = 4;
    job.plan.pp = 4;
    job.plan.cp = 2;
    job.plan.dp = 4;
    job.plan.vpp = 5;
    job.plan.micro_batch_size = 2;
    job.plan.zero_stage = 1;
    job.runtime.framework = Framework::deepspeed;
    job.runtime.flash_attention = false;
    job.runtime.tp_comm_overlap = true;
    job.runtime.overlap_param_gather = false;
    job.runtime.memory_reserve_GiB = 2.5;
    job.runtime.step_overhead_s = 0.35;
    job.runtime.async_tp_allreduce = false;
    job.runtime.moe_grouped_gemm = true;
    job.runtime.moe_capacity_factor = 1.25;
    job.runtime.moe_pad_to_capacity = true;
    job.runtime.lazy_module_loading = false;
    job.runtime.attention_kernel = AttentionKernel::cudnn;
    job.runtime.cross_entropy = CrossEntropyKernel::eager;
    job.runtime.cuda_graph_modules = kCudaGraphAttn | kCudaGraphMoeRouter | kCudaGraphMoePreprocess;
    job.runtime.moe_rank_capacity_factor = 1.5;
    job.runtime.moe_paged_stash_factor = -1.2;
    job.runtime.moe_paged_stash_host_factor = 1.0;
    job.runtime.moe_shared_expert_overlap = true;
    job.calibration = default_calibration(job.cluster.gpu);
    job.calibration.host.cuda_graph_replay_s = 2e-4;
    job.calibration.kernel.gemm_efficiency = 0.61;
    job.calibration.host.moe_forward_s = 0.004;
    job.calibration.source = "fit from profiles";
    check_same_job(round_trip(job), job);
    // A graph of the whole step is written as its name and read back so.
    Job whole_step = job;
    whole_step.runtime.cuda_graph_modules = kCudaGraphWholeLayer | kCudaGraphFullIteration;
    CHECK(plan_of(whole_step).at("runtime").at("cuda_graph_modules") == nlohmann::json::array({"full_iteration"}));
    check_same_job(round_trip(whole_step), whole_step);
    // Hierarchical CP: the group size the plan resolved is written, so the file says it.
    job.runtime.framework = Framework::megatron;
    job.runtime.cp_comm_type = CpCommType::a2a_p2p;
    Job back = round_trip(job);
    CHECK(back.runtime.cp_comm_type == CpCommType::a2a_p2p);
    CHECK(back.runtime.cp_a2a_size == 2);  // tp 4 x 2 CP ranks fill a node of 8
    CHECK(plan_to_json(job, predict(job)).at("runtime").at("cp_a2a_size") == 2);
    // fp8 attention is written only when on, and read back.
    CHECK_FALSE(plan_of(job).at("runtime").contains("fp8_attention"));
    job.runtime.flash_attention = true;
    job.runtime.fp8_attention = true;
    CHECK(plan_of(job).at("runtime").at("fp8_attention") == true);
    CHECK(round_trip(job).runtime.fp8_attention);
  }
  SUBCASE("round trip of the optimizer, its state's dtypes and CPU offload; a plain Adam plan writes no optimizer_state") {
    Job job = test::gpt3_175b_job();
    CHECK_FALSE(plan_of(job).at("training").contains("optimizer_state"));
    CHECK(plan_of(job).at("training").at("optimizer") == "adam");
    job.training.optimizer.precision_aware = true;
    job.training.optimizer.exp_avg = StateDtype::bf16;
    job.training.optimizer.exp_avg_sq = StateDtype::fp8;
    job.training.optimizer.cpu_offload_fraction = 0.25;
    check_same_job(round_trip(job), job);
    CHECK(plan_of(job).at("training").at("optimizer_state").at("exp_avg_sq_dtype") == "fp8");
    job.training.optimizer = OptimizerSpec{};
    job.training.optimizer.kind = OptimizerKind::lion;
    check_same_job(round_trip(job), job);
    job.plan.distributed_optimizer = true;
    job.plan.optimizer_instances = 2;
    check_same_job(round_trip(job), job);
    CHECK(plan_of(job).at("parallel").at("distributed_optimizer_instances") == 2);
  }
  SUBCASE("interleaving in micro-batch groups other than pp: the group is written and read back") {
    Job job = test::gpt3_175b_job();
    job.plan.vpp = 2;
    job.training.global_batch_size = 8 * 200;  // 200 micro-batches over pp 16: groups of 20
    const nlohmann::json j = plan_of(job);
    CHECK(j["parallel"]["microbatch_group_size_per_vp_stage"] == 20);
    Job back = plan_from_json(j, "plan.json");
    CHECK(back.plan.microbatch_group == 20);
    CHECK(predict(back).iteration_time_s == predict(job).iteration_time_s);
    CHECK_FALSE(plan_of(test::gpt3_175b_job())["parallel"].contains("microbatch_group_size_per_vp_stage"));  // the default pp
  }
  SUBCASE("an explicit chunk layout (a launch's --pipeline-model-parallel-layout) is written and read back") {
    Job job = test::gpt3_175b_uneven_interleaved_job();
    // Chunk-major: chunk 0 of stages 0..3, then chunk 1; the rule would give 11/12, 13/12, 13/12, 12/11.
    job.plan.chunk_layout = {8, 13, 13, 12, 15, 12, 12, 11};
    const nlohmann::json j = plan_of(job);
    CHECK(j["stage_chunks"][0] == nlohmann::json::array({8, 15}));
    check_same_job(round_trip(job), job);
    nlohmann::json wrong = j;
    wrong["stage_chunks"][0][1] = -1;
    CHECK(input_error([&] { plan_from_json(wrong, "plan.json"); }).find("/stage_chunks/0/1: expected a layer count >= 0") != std::string::npos);
    wrong = j;
    wrong["stage_chunks"][0] = nlohmann::json::array({8, 14});
    CHECK(input_error([&] { plan_from_json(wrong, "plan.json"); }).find("/stage_chunks/0: the chunks hold 22 layers, the stage 23") != std::string::npos);
    job.plan.chunk_layout.clear();  // the rule's own split is not stored
    CHECK(round_trip(job).plan.chunk_layout.empty());
  }
  SUBCASE("an explicitly even stage list reads back as the even split") {
    Job job = test::gpt3_175b_job();
    job.plan.stage_layers = std::vector<int>(16, 6);
    CHECK(round_trip(job).plan.stage_layers.empty());
  }
  SUBCASE("the plan file carries stages, the prediction and the launch flags") {
    Job job = test::gpt3_175b_job();
    Prediction pred = predict(job);
    nlohmann::json j = plan_to_json(job, pred);
    CHECK(j["schema_version"] == kPlanSchemaVersion);
    CHECK(j["num_gpus"] == 1024);
    CHECK(j["stages"].size() == 16);
    int sum = 0;
    for (const auto& s : j["stages"]) sum += s.get<int>();
    CHECK(sum == 96);
    CHECK(j["prediction"]["iteration_time_s"].get<double>() == pred.iteration_time_s);
    CHECK(j["launch"]["megatron_args"].get<std::vector<std::string>>() == megatron_args(job));
  }
  SUBCASE("schema_version") {
    nlohmann::json j = plan_of(test::gpt3_175b_job());
    j["schema_version"] = kPlanSchemaVersion + 1;
    std::string msg = input_error([&] { plan_from_json(j, "plan.json"); });
    CHECK(msg.find("plan.json: /schema_version") != std::string::npos);
    CHECK(msg.find("reads plan schema version 1") != std::string::npos);
    j.erase("schema_version");
    CHECK(input_error([&] { plan_from_json(j, "plan.json"); }).find("/schema_version: missing required key") != std::string::npos);
  }
  SUBCASE("unknown keys are rejected with a suggestion") {
    nlohmann::json j = plan_of(test::gpt3_175b_job());
    j["paralel"] = j["parallel"];
    CHECK(input_error([&] { plan_from_json(j, "plan.json"); }).find("/paralel: unknown key (did you mean \"parallel\"?)") !=
          std::string::npos);
    j = plan_of(test::gpt3_175b_job());
    j["parallel"]["tpp"] = 8;
    CHECK(input_error([&] { plan_from_json(j, "plan.json"); }).find("/parallel/tpp: unknown key") != std::string::npos);
  }
  SUBCASE("wrong types name the JSON path") {
    nlohmann::json j = plan_of(test::gpt3_175b_job());
    j["parallel"]["tp"] = "8";
    CHECK(input_error([&] { plan_from_json(j, "plan.json"); }).find("plan.json: /parallel/tp: expected an integer, found a string") !=
          std::string::npos);
    j = plan_of(test::gpt3_175b_job());
    j["training"]["global_batch_size"] = 1536.5;
    CHECK(input_error([&] { plan_from_json(j, "plan.json"); }).find("/training/global_batch_size: expected an integer") !=
          std::string::npos);
    j = plan_of(test::gpt3_175b_job());
    j["stages"][3] = "6";
    CHECK(input_error([&] { plan_from_json(j, "plan.json"); }).find("/stages/3: expected a positive layer count") != std::string::npos);
    j = plan_of(test::gpt3_175b_job());
    j["recompute"]["granularity"] = "sometimes";
    CHECK(input_error([&] { plan_from_json(j, "plan.json"); }).find("/recompute/granularity") != std::string::npos);
    j = plan_of(test::gpt3_175b_job());
    j["model"] = 3;
    CHECK(input_error([&] { plan_from_json(j, "plan.json"); }).find("/model: expected an object") != std::string::npos);
    j = plan_of(test::gpt3_175b_job());
    j["model"]["num_layers"] = "96";
    std::string msg = input_error([&] { plan_from_json(j, "plan.json"); });
    CHECK(msg.find("plan.json") != std::string::npos);
    CHECK(msg.find("num_layers") != std::string::npos);
  }
  SUBCASE("optimizer names, state dtypes and offload fractions are checked") {
    nlohmann::json j = plan_of(test::gpt3_175b_job());
    j["training"]["optimizer"] = "adamw";
    CHECK(input_error([&] { plan_from_json(j, "plan.json"); }).find("/training/optimizer: expected adam, sgd, muon or lion") !=
          std::string::npos);
    j = plan_of(test::gpt3_175b_job());
    j["training"]["optimizer_state"] = {{"precision_aware", true}, {"exp_avg_dtype", "fp4"}};
    CHECK(input_error([&] { plan_from_json(j, "plan.json"); }).find("/training/optimizer_state/exp_avg_dtype: expected fp32, bf16") !=
          std::string::npos);
    j["training"]["optimizer_state"] = {{"precision_aware", true}, {"cpu_offload_fraction", 2}};
    CHECK(input_error([&] { plan_from_json(j, "plan.json"); }).find("/training/optimizer_state/cpu_offload_fraction: expected a number "
                                                                    "from 0 to 1") != std::string::npos);
    j["training"]["optimizer_state"] = {{"exp_avg_dtype", "bf16"}, {"master_dtype", "fp32"}};
    CHECK(input_error([&] { plan_from_json(j, "plan.json"); }).find("/training/optimizer_state/master_dtype: unknown key") !=
          std::string::npos);
  }
  SUBCASE("num_gpus must match the plan") {
    nlohmann::json j = plan_of(test::gpt3_175b_job());
    j["num_gpus"] = 512;
    CHECK(input_error([&] { plan_from_json(j, "plan.json"); }).find("/num_gpus: does not equal tp*pp*dp*cp = 1024") !=
          std::string::npos);
  }
}

TEST_CASE("plan_to_json") {
  Job job = test::gpt3_175b_job();
  job.runtime.fused_grad_accumulation = false;
  Job back = round_trip(job);
  CHECK(back.cluster.aliases == job.cluster.aliases);
  CHECK(back.runtime == job.runtime);
}

TEST_CASE("plan_from_json: errors inside the embedded specs carry the full JSON path") {
  nlohmann::json j = plan_of(test::gpt3_175b_job());
  j["model"]["num_layers"] = "96";
  CHECK(input_error([&] { plan_from_json(j, "plan.json"); }).find("plan.json: /model/num_layers") != std::string::npos);
  j = plan_of(test::gpt3_175b_job());
  j["gpu"]["memory_GiB"] = -1;
  CHECK(input_error([&] { plan_from_json(j, "plan.json"); }).find("plan.json: /gpu/memory_GiB") != std::string::npos);
}
}
