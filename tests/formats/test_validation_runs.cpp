#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "costmodel/json_reader.h"
#include "costmodel/predictor.h"
#include "formats/validation_runs.h"
#include "test_util.h"

using namespace strata;

namespace {

const std::vector<ValidationRun>& small_runs() {
  static const std::vector<ValidationRun> runs = [] {
    const std::string path = test::data_file("validation_runs_small.json");
    return load_validation_runs(load_json_file(path), path, test::catalog());
  }();
  return runs;
}

const ValidationRun& run(const std::string& id) {
  const auto& runs = small_runs();
  auto it = std::find_if(runs.begin(), runs.end(), [&](const ValidationRun& r) { return r.id == id; });
  REQUIRE_MESSAGE(it != runs.end(), "no run " << id);
  return *it;
}

bool any_contains(const std::vector<std::string>& v, const std::string& part) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& s) { return s.find(part) != std::string::npos; });
}

}  // namespace

TEST_SUITE("formats") {
TEST_CASE("load_validation_runs") {
  REQUIRE(small_runs().size() == 8);

  SUBCASE("a fully specified Megatron record") {
    const ValidationRun& r = run("sc21_gpt3_175b_like");
    REQUIRE(r.job.has_value());
    CHECK(r.error.empty());
    CHECK(r.source_group == "handmade_megatron");
    CHECK(r.tier == "A");
    const Job& j = *r.job;
    CHECK(j.cluster.gpu.name == "A100-SXM4-80GB");
    CHECK(j.cluster.nics_per_node == 8);          // "8x200 Gb/s HCAs"
    CHECK(j.cluster.nic_Gbps == 200);
    CHECK(j.cluster.gpus_per_node == 8);
    CHECK(j.training.precision == Precision::fp16);  // "fp16 mixed"
    CHECK(j.plan.recompute.granularity == RecomputeGranularity::full);  // "full (...)"
    CHECK(j.plan.tp == 8);
    CHECK(j.plan.pp == 16);
    CHECK(j.plan.dp == 8);
    CHECK(j.plan.zero_stage == 0);
    CHECK_FALSE(j.plan.distributed_optimizer);
    CHECK(j.runtime.framework == Framework::megatron);
    CHECK_FALSE(j.runtime.flash_attention);  // a 2021 Megatron-LM
    CHECK(j.model.dropout);                  // GPT recipes train with dropout
    CHECK(j.model.num_query_groups == 96);
    CHECK(j.model.tied_embeddings);
    CHECK_FALSE(r.unknown.micro_batch);
    CHECK(r.measured_tokens_per_sec_per_gpu == 150.0);
    CHECK_FALSE(r.measured_memory_GiB.has_value());
  }
  SUBCASE("\"A100 (memory size not stated)\", OmniPath NICs, DeepSpeed ZeRO stage 1, bf16") {
    const ValidationRun& r = run("a100_unstated_memory_omnipath_zero1");
    REQUIRE_MESSAGE(r.job.has_value(), r.error);
    const Job& j = *r.job;
    CHECK(j.cluster.gpu.name.starts_with("A100"));
    CHECK(j.cluster.nics_per_node == 4);  // "4x OmniPath (100 Gb/s)"
    CHECK(j.cluster.nic_Gbps == 100);
    CHECK(j.cluster.gpus_per_node == 4);
    CHECK(j.cluster.inter_node_GBps_per_gpu() == doctest::Approx(4 * 100.0 / 8 / 4));
    CHECK(j.runtime.framework == Framework::deepspeed);
    CHECK_FALSE(j.runtime.async_tp_allreduce);  // Megatron-DeepSpeed of 2022, before its 2023 rebase
    CHECK(j.plan.zero_stage == 1);
    CHECK(j.training.precision == Precision::bf16);
    CHECK(j.plan.recompute.granularity == RecomputeGranularity::selective);
    CHECK(j.model.ffn_hidden_size == 4 * 2048);  // null ffn: the GPT 4h convention
    CHECK(j.model.num_query_groups == 16);       // null num_kv_heads: MHA
    // derived_* is the fallback for a missing meas_* figure; published "GB" of memory is GiB.
    CHECK(r.measured_tokens_per_sec_per_gpu == 9000.0);
    CHECK(r.measured_memory_GiB == 30.0);
  }
  SUBCASE("\"inter-node 800 Gb/s per node\", FSDP FULL_SHARD, amp_bf16, unknown micro-batch") {
    const ValidationRun& r = run("mpt_fsdp_h100_per_node_link");
    REQUIRE_MESSAGE(r.job.has_value(), r.error);
    const Job& j = *r.job;
    CHECK(j.cluster.gpu.name == "H100-SXM5-80GB");
    CHECK(j.cluster.nics_per_node * j.cluster.nic_Gbps == 800);
    CHECK(j.cluster.inter_node_GBps_per_gpu() == doctest::Approx(800.0 / 8 / 8));
    CHECK(j.runtime.framework == Framework::fsdp);
    CHECK(j.plan.zero_stage == 3);
    CHECK(j.training.precision == Precision::bf16);
    CHECK(j.plan.recompute.granularity == RecomputeGranularity::none);
    CHECK(j.model.position_embedding == PositionEmbedding::alibi);
    CHECK_FALSE(j.model.dropout);
    CHECK(j.runtime.flash_attention);
    CHECK(r.unknown.micro_batch);
    CHECK(any_contains(r.assumptions, "micro_batch_size"));
  }
  SUBCASE("a per-node total read as such: \"1600 Gb/s node-node RoCE\"") {
    const std::string path = test::data_file("validation_runs_small.json");
    nlohmann::json all = load_json_file(path);
    nlohmann::json rec;
    for (const auto& r : all)
      if (r["id"] == "mpt_fsdp_h100_per_node_link") rec = r;
    REQUIRE(rec.is_object());
    rec["interconnect"] = "1600 Gb/s node-node RoCE";
    const std::vector<ValidationRun> runs = load_validation_runs(nlohmann::json::array({rec}), path, test::catalog());
    REQUIRE_MESSAGE(runs.at(0).job.has_value(), runs.at(0).error);
    const ClusterSpec& c = runs.at(0).job->cluster;
    CHECK(c.nics_per_node * c.nic_Gbps == 1600);
    CHECK_FALSE(any_contains(runs.at(0).assumptions, "inter-node network not stated"));
  }
  SUBCASE("the distributed optimizer, \"fp16\", a modern Megatron, \"no dropout\"") {
    const ValidationRun& r = run("a100_40gb_in_text");
    REQUIRE_MESSAGE(r.job.has_value(), r.error);
    const Job& j = *r.job;
    CHECK(j.plan.distributed_optimizer);
    CHECK(j.plan.zero_stage == 0);
    CHECK(j.training.precision == Precision::fp16);
    CHECK(j.runtime.flash_attention);  // Megatron-LM 2023
    CHECK_FALSE(j.model.dropout);
    // No interconnect given: the assumption is recorded.
    CHECK(any_contains(r.assumptions, "inter-node network not stated"));
  }
  SUBCASE("records that cannot be turned into a job get an error, not an exception") {
    const ValidationRun& tpu = run("tpu_cannot_predict");
    CHECK_FALSE(tpu.job.has_value());
    CHECK(tpu.error.find("unknown GPU type \"TPU v4\"") != std::string::npos);
    const ValidationRun& mismatch = run("num_gpus_mismatch");
    CHECK_FALSE(mismatch.job.has_value());
    CHECK(mismatch.error.find("/num_gpus") != std::string::npos);
    CHECK(mismatch.error.find("tp*pp*dp*cp = 32 differs from num_gpus 100") != std::string::npos);
    const ValidationRun& missing = run("missing_layers");
    CHECK_FALSE(missing.job.has_value());
    CHECK(missing.error.find("/num_layers: missing required key") != std::string::npos);
    CHECK(missing.error.find("validation_runs_small.json [6]") != std::string::npos);
  }
  SUBCASE("a record with an illegal plan becomes a job whose prediction says why") {
    const ValidationRun& r = run("tp_does_not_divide_heads");
    REQUIRE(r.job.has_value());
    Prediction p = predict(*r.job);
    CHECK_FALSE(p.feasible);
    CHECK(p.reason.find("tp=5 does not divide the 24 attention heads") != std::string::npos);
  }
  SUBCASE("non-object records and non-array files") {
    auto runs = load_validation_runs(nlohmann::json::parse(R"([42, {"id": "x"}])"), "runs.json", test::catalog());
    REQUIRE(runs.size() == 2);
    CHECK(runs[0].id == "#0");
    CHECK(runs[0].error.find("expected a JSON object") != std::string::npos);
    CHECK(runs[1].id == "x");
    CHECK_FALSE(runs[1].job.has_value());
    CHECK_FALSE(runs[1].error.empty());
    CHECK(test::input_error([] { load_validation_runs(nlohmann::json::object(), "runs.json", test::catalog()); })
              .find("runs.json: /: expected a JSON array of run records") != std::string::npos);
  }
}

TEST_CASE("load_validation_runs: a framework without a year takes the source's publication year") {
  // Table 2 of SC21 says only "Megatron-LM": the run is as old as the paper, so no flash attention
  // and no overlapped gradient reduction, like the same paper's Table 1 ("Megatron-LM (2021)").
  const std::string path = test::data_file("validation_runs_small.json");
  nlohmann::json records = load_json_file(path);
  nlohmann::json base;
  for (const auto& r : records)
    if (r.value("id", "") == "sc21_gpt3_175b_like") base = r;
  REQUIRE(base.is_object());
  auto runtime_for = [&](const std::string& source) {
    nlohmann::json r = base;
    r["framework"] = "Megatron-LM";
    r["source"] = source;
    auto runs = load_validation_runs(nlohmann::json::array({r}), "inline", test::catalog());
    REQUIRE(runs.size() == 1);
    REQUIRE_MESSAGE(runs[0].job.has_value(), runs[0].error);
    return runs[0].job->runtime;
  };
  for (const char* old : {"Narayanan et al., SC21 (arXiv:2104.04473) Table 2", "a paper (arXiv:2104.04473)",
                          "vTrain, MICRO'24 artifact (Megatron-LM 2021 fork)", "measured in 2021"}) {
    CAPTURE(old);
    RuntimeOptions rt = runtime_for(old);
    CHECK_FALSE(rt.flash_attention);
    CHECK_FALSE(rt.overlap_grad_reduce);
    CHECK_FALSE(rt.fused_grad_accumulation);
    CHECK_FALSE(rt.async_tp_allreduce);  // Megatron-LM's async TP all-reduce arrived in 2022
    CHECK(rt.grad_reduce_in_bf16);  // an fp16 model's gradients, reduced in fp16: Megatron's default
  }
  CHECK(runtime_for("NVIDIA/Megatron-LM README tables, 2020-09").grad_reduce_in_bf16);
  // Without any year, a Megatron-LM record is read as a current one.
  RuntimeOptions now = runtime_for("a blog post, commit a2019bc");  // a hash is not a year
  CHECK(now.flash_attention);
  CHECK(now.overlap_grad_reduce);
  RuntimeOptions later = runtime_for("Megatron-Core benchmarks, 2024-05");
  CHECK(later.flash_attention);
  CHECK(later.async_tp_allreduce);
}

TEST_CASE("load_validation_runs: GPU memory size from the free text") {
  const ValidationRun& forty = run("a100_40gb_in_text");
  REQUIRE(forty.job.has_value());
  CHECK(forty.job->cluster.gpu.name == "A100-SXM4-40GB");
  const ValidationRun& unstated = run("a100_unstated_memory_omnipath_zero1");
  REQUIRE(unstated.job.has_value());
  CHECK(any_contains(unstated.assumptions, "memory size not stated"));
}

TEST_CASE("load_validation_runs: an unknown GPU names the runs file and /gpu_type") {
  const ValidationRun& r = run("tpu_cannot_predict");
  CHECK(r.error.find("validation_runs_small.json") != std::string::npos);
  CHECK(r.error.find("/gpu_type") != std::string::npos);
  CHECK(r.error.find("--gpu") == std::string::npos);
}

TEST_CASE("load_validation_runs: an unknown GPU without a stated memory size is named, with no assumed size") {
  nlohmann::json rec = load_json_file(test::data_file("validation_runs_small.json")).at(0);
  rec["gpu_type"] = "MI450X";
  rec["gpu_memory_gb"] = nullptr;
  const auto runs = load_validation_runs(nlohmann::json::array({rec}), "runs.json", test::catalog());
  CHECK_FALSE(runs.at(0).job);
  CHECK(runs.at(0).error.find("unknown GPU type \"MI450X\"; `strata list gpus`") != std::string::npos);
  CHECK(runs.at(0).error.find("80 GB") == std::string::npos);
  rec["gpu_memory_gb"] = 432;  // a stated size names the missing part
  const auto stated = load_validation_runs(nlohmann::json::array({rec}), "runs.json", test::catalog());
  CHECK(stated.at(0).error.find("no mi450x part with 432 GB is known") != std::string::npos);
  // A listed part of another memory size is another part too.
  rec["gpu_type"] = "MI355X";
  CHECK(load_validation_runs(nlohmann::json::array({rec}), "runs.json", test::catalog()).at(0).error.find(
            "no mi355x part with 432 GB is known") != std::string::npos);
  rec["gpu_memory_gb"] = 288;
  CHECK(load_validation_runs(nlohmann::json::array({rec}), "runs.json", test::catalog()).at(0).job->cluster.gpu.name == "MI355X");
}
}

TEST_SUITE("formats") {
TEST_CASE("load_validation_runs: MoE records take the architecture from model_config and the routing from the notes") {
  const std::string path = std::string(STRATA_SOURCE_DIR) + "/../shared/validation/modern_runs.json";
  const auto runs = load_validation_runs(load_json_file(path), path, test::catalog());
  auto find = [&](const std::string& id) -> const ValidationRun& {
    auto it = std::find_if(runs.begin(), runs.end(), [&](const ValidationRun& r) { return r.id == id; });
    REQUIRE_MESSAGE(it != runs.end(), "no run " << id);
    return *it;
  };
  const ValidationRun& q = find("mbridge26.04_h100_qwen3_235b_256gpu");
  REQUIRE(q.job);
  CHECK(q.job->model.moe.has_value());
  CHECK(q.job->model.moe->expert_ffn_hidden_size == 1536);
  CHECK(q.job->model.head_dim() == 128);
  CHECK(q.job->training.seq_length == 4096);  // the run's sequence, not the config's 40960
  CHECK(q.job->training.precision == Precision::fp8);
  CHECK(q.job->runtime.moe_load_imbalance == 1.0);  // "force-balance"
  CHECK(q.job->runtime.moe_a2a_overlap);
  CHECK(q.job->plan.etp == 1);
  CHECK(q.job->plan.sequence_parallel);
  // 94 layers over pp 8 x vpp 4: the embedding and the loss take a layer's place each.
  CHECK(q.job->plan.stage_layers == std::vector<int>{11, 12, 12, 12, 12, 12, 12, 11});
  CHECK(check_plan(*q.job).empty());
  // GPT-OSS's recipe recomputes the MoE layers' pre-MLP norm and the experts' activation.
  const ValidationRun& g = find("mbridge26.04_h100_gpt_oss_64gpu");
  REQUIRE(g.job);
  CHECK(g.job->plan.recompute.granularity == RecomputeGranularity::selective);
  CHECK(g.job->plan.recompute.modules == (kRecomputeLayernorm | kRecomputeMoeAct));
  const ValidationRun& d = find("simumax_b200_deepseekv3_l4_tp1_ep8_pp1_dp8_mbc4_cef");
  REQUIRE(d.job);
  CHECK(d.job->model.mla.has_value());
  CHECK(d.job->model.num_moe_layers() == 3);
  CHECK(d.job->runtime.moe_capacity_factor == 1.0);  // capacity factor 1 with padding
  // Grouped expert GEMMs: Megatron-Bridge's MoE recipes set them; SimuMax's notes say so.
  CHECK(q.job->runtime.moe_grouped_gemm);
  CHECK(d.job->runtime.moe_grouped_gemm);
  // Unstated: grouped, as published MoE runs run, and said so; a record naming SequentialMLP is read so.
  nlohmann::json recs = load_json_file(path), one = nlohmann::json::array();
  for (const auto& r : recs)
    if (r.at("id") == "simumax_b200_deepseekv3_l4_tp1_ep8_pp1_dp8_mbc4_cef") one.push_back(r);
  REQUIRE(one.size() == 1);
  auto assumed = [](const ValidationRun& run, const std::string& part) {
    return std::any_of(run.assumptions.begin(), run.assumptions.end(), [&](const std::string& a) { return a.find(part) != std::string::npos; });
  };
  std::string notes = one[0].at("notes").get<std::string>();
  const auto at = notes.find("grouped GEMM");
  REQUIRE(at != std::string::npos);
  one[0]["notes"] = notes.replace(at, 12, "experts");
  const ValidationRun unstated = load_validation_runs(one, path, test::catalog()).at(0);
  REQUIRE(unstated.job);
  CHECK(unstated.job->runtime.moe_grouped_gemm);
  CHECK(assumed(unstated, "grouped GEMM not stated; assumed on"));
  one[0]["notes"] = notes + " Experts: SequentialMLP.";
  const ValidationRun sequential = load_validation_runs(one, path, test::catalog()).at(0);
  REQUIRE(sequential.job);
  CHECK_FALSE(sequential.job->runtime.moe_grouped_gemm);
  CHECK_FALSE(assumed(sequential, "grouped GEMM not stated"));
}
}

TEST_SUITE("formats") {
// Regression guard for the MoE/MLA cost model on ../shared/validation/modern_runs.json: every MoE
// record is predicted (no error, no OOM on runs that ran), and the measured memory of SimuMax's
// layer-truncated DeepSeek-V2/V3 runs on B200 (max_memory_allocated, compared as allocated) stays
// within 10% MAPE (3.4% when written, 1.3% compared as allocated).
TEST_CASE("MoE and MLA validation records: predicted, and DeepSeek memory within 10%") {
  const std::string path = std::string(STRATA_SOURCE_DIR) + "/../shared/validation/modern_runs.json";
  const auto runs = load_validation_runs(load_json_file(path), path, test::catalog());
  double sum = 0;
  int n = 0, moe = 0;
  for (const ValidationRun& r : runs) {
    if (!r.job || !r.job->model.moe) continue;
    CAPTURE(r.id);
    ++moe;
    const Prediction p = predict(*r.job);
    CHECK(p.iteration_time_s > 0);
    if (r.id.find("simumax") != std::string::npos) {
      CHECK(p.feasible);
      REQUIRE(r.measured_memory_GiB);
      CHECK(r.memory_measure == MemoryMeasure::allocated);  // "torch.cuda.max_memory_allocated()" in the notes
      const double predicted = peak_measured_as_GiB(p, r.memory_measure);
      sum += std::fabs(predicted - *r.measured_memory_GiB) / *r.measured_memory_GiB;
      ++n;
    }
  }
  CHECK(moe >= 30);
  REQUIRE(n > 0);
  CHECK(sum / n < 0.10);
}
}

namespace {

// The handmade SC21-like record with some fields replaced, read as one run.
// `base` with `changes` written over it.
nlohmann::json merged(nlohmann::json base, const nlohmann::json& changes) {
  for (auto it = changes.begin(); it != changes.end(); ++it) base[it.key()] = it.value();
  return base;
}

ValidationRun read_modified(const nlohmann::json& changes) {
  const nlohmann::json rec = merged(load_json_file(test::data_file("validation_runs_small.json")).at(0), changes);
  auto runs = load_validation_runs(nlohmann::json::array({rec}), "test", test::catalog());
  REQUIRE(runs.size() == 1);
  REQUIRE_MESSAGE(runs[0].job.has_value(), runs[0].error);
  return runs[0];
}

}  // namespace

TEST_CASE("load_validation_runs: what a record says of flash attention, in any of its free-text fields") {
  auto read = [](const nlohmann::json& changes) { return read_modified(changes); };
  // Megatron-DeepSpeed's flash attention is opt-in: unstated, it is off, and the output says so.
  const ValidationRun ds = read({{"framework", "Megatron-DeepSpeed"}, {"source", "a 2024 report"}});
  CHECK_FALSE(ds.job->runtime.flash_attention);
  CHECK(any_contains(ds.assumptions, "attention kernel not stated"));
  // Named in the framework text or the notes, it is on.
  CHECK(read({{"framework", "Megatron-DeepSpeed (--use-flash-attn-v2)"}}).job->runtime.flash_attention);
  const ValidationRun noted = read({{"framework", "Megatron-DeepSpeed"}, {"notes", "FlashAttention-2 enabled."}});
  CHECK(noted.job->runtime.flash_attention);
  CHECK_FALSE(any_contains(noted.assumptions, "attention kernel not stated"));
  // A negation is not a mention.
  CHECK_FALSE(read({{"framework", "Megatron-LM 2024"}, {"arch_notes", "GPT, no flash attention (unfused softmax)"}})
                  .job->runtime.flash_attention);
  CHECK_FALSE(read({{"framework", "Megatron-LM 2024"}, {"notes", "unfused attention"}}).job->runtime.flash_attention);
}

TEST_CASE("load_validation_runs: precision text, fp8 recipes and fp8 parameters") {
  const nlohmann::json h100 = {{"gpu_type", "H100-SXM5-80GB"}, {"framework", "NeMo 24.07"}};
  auto precision_of = [&](const char* text) {
    nlohmann::json c = h100;
    c["precision"] = text;
    return read_modified(c).job->training;
  };
  // An fp8 run that also names its bf16 master weights is an fp8 run (the MLPerf records).
  auto t = precision_of("FP8 hybrid (Transformer Engine, amax history 1024) with BF16 master");
  CHECK(t.precision == Precision::fp8);
  CHECK(t.recipe == LowPrecisionRecipe::delayed);
  CHECK(precision_of("FP8-CS (table) per-tensor current scaling, BF16 master").recipe == LowPrecisionRecipe::tensorwise);
  CHECK(precision_of("Float8 (torchao)").recipe == LowPrecisionRecipe::tensorwise);
  CHECK(precision_of("MXFP8").recipe == LowPrecisionRecipe::mxfp8);
  // Megatron-Bridge's recipe names: FP8-SC is sub-channel (blockwise) scaling, FP8-DS delayed.
  CHECK(precision_of("FP8-SC").recipe == LowPrecisionRecipe::blockwise);
  CHECK(precision_of("FP8-DS").recipe == LowPrecisionRecipe::delayed);
  CHECK(precision_of("FP8-CS").recipe == LowPrecisionRecipe::tensorwise);
  CHECK(precision_of("FP8-MX").recipe == LowPrecisionRecipe::mxfp8);
  CHECK(precision_of("fp8_mx").recipe == LowPrecisionRecipe::mxfp8);
  CHECK(precision_of("FP8 (table); recipe *_B200_FP8_MX_V1").recipe == LowPrecisionRecipe::mxfp8);
  // A table cell naming the run's recipe and an alternative in parentheses: the first is the run's.
  CHECK(precision_of("FP8-CS (FP8-MX)").recipe == LowPrecisionRecipe::tensorwise);
  CHECK(precision_of("FP8-MX (FP8-CS)").recipe == LowPrecisionRecipe::mxfp8);
  CHECK(read_modified({{"precision", "FP8-MX with fp8 params"}}).job->runtime.fp8_param_gather);
  // A word that only starts like a short name is not one: "fp8_scaling" is not FP8-SC.
  const auto scaling = precision_of("fp8_scaling delayed, amax history 1024");
  CHECK(scaling.recipe == LowPrecisionRecipe::delayed);
  CHECK(precision_of("FP8 per-block scaling (1x128 activations, 128x128 weights)").recipe == LowPrecisionRecipe::blockwise);
  CHECK(precision_of("fp8 block-wise").recipe == LowPrecisionRecipe::blockwise);
  // TF32 runs fp32 tensors on the TF32 tensor cores, not on the fp32 CUDA cores.
  CHECK(precision_of("TF32").precision == Precision::tf32);
  CHECK(precision_of("fp32 (no mixed precision)").precision == Precision::fp32);
  // Layers kept in bf16, as records word them.
  auto bf16_layers = [&](const char* precision, const char* notes) {
    nlohmann::json c = h100;
    c["precision"] = precision;
    c["notes"] = notes;
    const Job job = *read_modified(c).job;
    return std::pair<int, int>{job.runtime.bf16_first_layers, job.runtime.bf16_last_layers};
  };
  CHECK(bf16_layers("NVFP4 (Transformer Engine, 4 last layers BF16)", "") == std::pair<int, int>{0, 4});
  CHECK(bf16_layers("NVFP4", "knobs {\"first_last_layers_bf16\": true, \"num_layers_at_end_in_bf16\": 14}") ==
        std::pair<int, int>{1, 14});
  CHECK(bf16_layers("FP8-CS", "--first-last-layers-bf16") == std::pair<int, int>{1, 1});
  CHECK(bf16_layers("FP8-CS", "first 2 layers in BF16, last 2 layers in BF16") == std::pair<int, int>{2, 2});
  CHECK(bf16_layers("BF16", "first and last layers in BF16") == std::pair<int, int>{0, 0});  // a bf16 run already
  {
    nlohmann::json c = h100;
    c["precision"] = "FP8, first and last layers in BF16";  // no recipe named: not delayed, which Megatron refuses
    const ValidationRun r = read_modified(c);
    CHECK(r.job->training.recipe == LowPrecisionRecipe::tensorwise);
    CHECK(any_contains(r.assumptions, "read as current scaling"));
  }
  CHECK(precision_of("NVFP4 with BF16 last layers").recipe == LowPrecisionRecipe::nvfp4);
  CHECK(precision_of("BF16 (--bf16, --accumulate-allreduce-grads-in-fp32)").precision == Precision::bf16);
  CHECK(precision_of("fp16 or bf16 (not stated)").precision == Precision::fp16);

  nlohmann::json c = h100;
  c["precision"] = "FP8 hybrid (Transformer Engine) with BF16 master; FP8 params";
  const ValidationRun r = read_modified(c);
  CHECK(r.job->runtime.fp8_param_gather);
  CHECK_FALSE(r.job->runtime.grad_reduce_in_bf16);
  CHECK(r.unknown.fp8_memory_options);  // the gradient dtype is not stated
  // Megatron-Bridge's performance recipes reduce gradients in bf16, whatever the precision.
  c["precision"] = "BF16";
  c["framework"] = "Megatron-Bridge / NeMo 26.04 container";
  const ValidationRun bridge = read_modified(c);
  CHECK(bridge.job->runtime.grad_reduce_in_bf16);
  CHECK(any_contains(bridge.assumptions, "as Megatron-Bridge's performance recipes set it"));
  c["framework"] = "NeMo 24.07";
  CHECK_FALSE(read_modified(c).job->runtime.grad_reduce_in_bf16);
}

TEST_CASE("load_validation_runs: published GPU names, Llama defaults, stated overlaps") {
  CHECK(read_modified({{"gpu_type", "GB300 (NVL72)"}, {"gpu_memory_gb", nullptr}}).job->cluster.gpu.name == "GB300-B300-288GB");
  CHECK(read_modified({{"gpu_type", "B200 (HGX B200)"}, {"gpu_memory_gb", 180}}).job->cluster.gpu.name == "B200-SXM-180GB");
  CHECK(read_modified({{"gpu_type", "H100-SXM5-80GB (DGX-H100)"}}).job->cluster.gpu.name == "H100-SXM5-80GB");
  // The vendor or system named before the part.
  CHECK(read_modified({{"gpu_type", "DGX B200"}, {"gpu_memory_gb", nullptr}}).job->cluster.gpu.name == "B200-SXM-180GB");
  CHECK(read_modified({{"gpu_type", "NVIDIA B200 180GB"}, {"gpu_memory_gb", nullptr}}).job->cluster.gpu.name == "B200-SXM-180GB");
  CHECK(read_modified({{"gpu_type", "NVIDIA H100 80GB HBM3"}}).job->cluster.gpu.name == "H100-SXM5-80GB");
  // A GPU count before the part ("8x H100 SXM"), and the architecture's names.
  CHECK(read_modified({{"gpu_type", "8x H100 SXM"}}).job->cluster.gpu.name == "H100-SXM5-80GB");
  CHECK(read_modified({{"gpu_type", "Grace Blackwell GB200 NVL72"}, {"gpu_memory_gb", nullptr}}).job->cluster.gpu.name ==
        "GB200-B200-186GB");
  CHECK(read_modified({{"gpu_type", "AMD Instinct MI300X"}, {"gpu_memory_gb", 192}}).job->cluster.gpu.vendor == "amd");
  // Grace Hopper: the quad-GH200 node (4 GPUs on NVLink, one 200 Gb/s NIC each) unless the record says otherwise.
  const ClusterSpec gh = read_modified({{"gpu_type", "NVIDIA GH200 (96GB HBM3)"}, {"gpu_memory_gb", nullptr}, {"gpus_per_node", 4},
                                       {"nvlink_domain", 4}, {"interconnect", "not stated"}})
                             .job->cluster;
  CHECK(gh.gpu.name == "GH200-H100-96GB");
  CHECK(gh.gpus_per_node == 4);
  CHECK(gh.nics_per_node == 4);
  CHECK(gh.nic_Gbps == 200);
  CHECK(read_modified({{"gpu_type", "GH200"}, {"gpu_memory_gb", 144}}).job->cluster.name == "gh200-144gb-quad");

  // A Llama-family record that names no architecture details gets Llama's.
  const ValidationRun llama = read_modified({{"model_family", "llama"}, {"arch_notes", "Llama-3-70B shape truncated to 12 layers"}});
  CHECK(llama.job->model.activation == Activation::swiglu);
  CHECK(llama.job->model.normalization == Normalization::rmsnorm);
  CHECK_FALSE(llama.job->model.tied_embeddings);
  CHECK_FALSE(llama.job->model.embedding_norm);
  // A BLOOM-family record normalizes its embedding (Megatron-DeepSpeed --embed-layernorm).
  CHECK(read_modified({{"model_family", "bloom"}}).job->model.embedding_norm);

  const ValidationRun off = read_modified(
      {{"zero_or_dist_optimizer", "Megatron distributed optimizer; no overlap flags (overlap-grad-reduce/param-gather off; TP comm "
                                  "overlap explicitly disabled)"}});
  CHECK_FALSE(off.job->runtime.overlap_grad_reduce);
  CHECK_FALSE(off.job->runtime.tp_comm_overlap);
  CHECK(read_modified({{"notes", "TP communication overlap enabled."}}).job->runtime.tp_comm_overlap);

  // Hierarchical context parallelism, with its group sizes or without.
  const nlohmann::json cp = {{"gpu_type", "H100-SXM5-80GB"}, {"tp", 2}, {"pp", 1}, {"cp", 8}, {"dp", 1}, {"num_gpus", 16},
                             {"seq_length", 16384}};
  nlohmann::json hier = cp;
  hier["notes"] = "--cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 4";
  const ValidationRun stated = read_modified(hier);
  CHECK(stated.job->runtime.cp_comm_type == CpCommType::a2a_p2p);
  CHECK(stated.job->runtime.cp_a2a_size == 2);
  hier["notes"] = "CP comm type a2a+p2p";
  const ValidationRun unstated = read_modified(hier);
  CHECK(unstated.job->runtime.cp_comm_type == CpCommType::a2a_p2p);
  CHECK(unstated.job->runtime.cp_a2a_size == 0);
  CHECK(any_contains(unstated.assumptions, "hierarchical CP group sizes not stated"));
  hier["notes"] = "hierarchical_context_parallel_sizes [4, 4], cp_comm_type a2a+p2p";
  auto runs = load_validation_runs(nlohmann::json::array({[&] {
                                     nlohmann::json rec = load_json_file(test::data_file("validation_runs_small.json")).at(0);
                                     for (auto it = hier.begin(); it != hier.end(); ++it) rec[it.key()] = it.value();
                                     return rec;
                                   }()}),
                                   "runs.json", test::catalog());
  CHECK(runs.at(0).error.find("do not multiply to cp = 8") != std::string::npos);
}

TEST_CASE("load_validation_runs: a record's doubt about its own measured throughput is kept") {
  CHECK(read_modified({{"uncertain_fields", {"meas_tokens_per_sec_per_gpu (throughput anomaly, see notes)"}}}).throughput_doubt ==
        "meas_tokens_per_sec_per_gpu (throughput anomaly, see notes)");
  CHECK(read_modified({{"uncertain_fields", {"precision", "meas_iteration_time_s (single snapshot at iteration 2)"}}})
            .throughput_doubt == "meas_iteration_time_s (single snapshot at iteration 2)");
  // A derived iteration time is not the figure compared, and other fields are not the throughput.
  CHECK(read_modified({{"uncertain_fields", {"derived_iteration_time_s", "recompute"}}}).throughput_doubt.empty());
  CHECK(read_modified({{"uncertain_fields", "meas_tokens_per_sec_per_gpu"}}).throughput_doubt.empty());  // not a list
}

TEST_CASE("load_validation_runs: the loss's kernels as a record states them, else as its stack runs them") {
  auto loss_of = [](const nlohmann::json& changes) { return read_modified(changes).job->runtime.cross_entropy; };
  // Megatron's own default, said as an assumption.
  const ValidationRun plain = read_modified({{"framework", "Megatron-LM"}});
  CHECK(plain.job->runtime.cross_entropy == CrossEntropyKernel::eager);
  CHECK(any_contains(plain.assumptions, "cross-entropy fusion not stated"));
  CHECK(loss_of({{"framework", "Megatron-LM"}, {"notes", "--cross-entropy-loss-fusion"}}) == CrossEntropyKernel::jit_fused);
  CHECK(loss_of({{"framework", "Megatron-LM"}, {"notes", "--cross-entropy-loss-fusion --cross-entropy-fusion-impl te"}}) ==
        CrossEntropyKernel::single_pass);
  // SimuMax's "_cef" cases, Megatron-Bridge's performance recipes and llm-foundry's MPT.
  CHECK(loss_of({{"framework", "Megatron-LM"}, {"source", "SimuMax summary (row llama3_70b_l12_tp8_pp1_dp1_mbc4_cef)"}}) ==
        CrossEntropyKernel::single_pass);
  CHECK(loss_of({{"framework", "Megatron-Bridge / NeMo 26.04 container"}}) == CrossEntropyKernel::single_pass);
  CHECK(loss_of({{"framework", "MosaicML llm-foundry (FSDP)"}}) == CrossEntropyKernel::single_pass);
  // Megatron-DeepSpeed has no fused loss: the automatic choice is the eager one.
  const ValidationRun ds = read_modified({{"framework", "Megatron-DeepSpeed"}});
  CHECK(resolved_cross_entropy(ds.job->runtime) == CrossEntropyKernel::eager);
}

TEST_CASE("predict_validation_run: an unstated optimizer sharding is sharded only when the run would not fit otherwise") {
  // GPT-3 175B on Megatron-DeepSpeed, tp 4 x pp 16 x dp 8, micro-batch 4: the fp32 optimizer
  // states alone take about 43 GiB per GPU unsharded (vTrain's ground-truth configuration).
  const nlohmann::json ds = {{"framework", "Megatron-DeepSpeed"}, {"tp", 4}, {"pp", 16}, {"dp", 8}, {"num_gpus", 512},
                             {"micro_batch_size", 4}, {"zero_or_dist_optimizer", "not stated (DeepSpeed; assumed none/zero-0 or 1)"}};
  ValidationRun r = read_modified(ds);
  CHECK(r.unknown.optimizer_sharding);
  CHECK(r.job->plan.zero_stage == 0);
  const Prediction p = predict_validation_run(r);
  CHECK(p.feasible);
  CHECK(r.job->plan.zero_stage == 1);
  CHECK(r.job->plan.vpp == 1);  // DeepSpeed's pipeline engine does not interleave
  CHECK(any_contains(r.assumptions, "ZeRO-1"));
  // A micro-batch of 1 fits unsharded: the stated reading is kept.
  nlohmann::json small = ds;
  small["micro_batch_size"] = 1;
  small["pp"] = 32;
  small["dp"] = 4;
  ValidationRun s = read_modified(small);
  const Prediction q = predict_validation_run(s);
  CHECK(q.feasible);
  CHECK(s.job->plan.zero_stage == 0);
  // A stated sharding is not a guess.
  nlohmann::json stated = ds;
  stated["zero_or_dist_optimizer"] = "ZeRO stage 1";
  CHECK_FALSE(read_modified(stated).unknown.optimizer_sharding);
}

TEST_CASE("predict_validation_run: null plan fields get the fastest memory-feasible completion, reported") {
  // 126 layers over pp 16: vpp left out, micro-batch left out, recompute not stated.
  ValidationRun r = read_modified({{"num_layers", 126}, {"tp", 8}, {"pp", 16}, {"dp", 8}, {"vpp", nullptr},
                                   {"micro_batch_size", nullptr}, {"recompute", "not stated"}, {"num_gpus", 1024}});
  CHECK(r.unknown.micro_batch);
  CHECK(r.unknown.vpp);
  CHECK(r.unknown.recompute);
  const Prediction p = predict_validation_run(r);
  CHECK(p.feasible);
  CHECK(any_contains(r.assumptions, "completed with the fastest memory-feasible choice"));
  // The completion is the fastest feasible one among the candidates: no other micro-batch size fits and is faster.
  for (int mbs : {1, 2, 4}) {
    Job j = *r.job;
    j.plan.micro_batch_size = mbs;
    if (!check_plan(j).empty()) continue;
    const Prediction q = predict(j);
    if (q.feasible) CHECK(q.iteration_time_s >= p.iteration_time_s - 1e-12);
  }
}

namespace {

// The completion `p` of run `r` is the fastest of the feasible plans that differ from it in one
// field, set to each of `values` by `set` (legal ones only), and at least two of them fit.
void check_fastest_of(const ValidationRun& r, const Prediction& p, std::initializer_list<int> values,
                      const std::function<void(Job&, int)>& set) {
  int feasible = 0;
  for (int v : values) {
    CAPTURE(v);
    Job j = *r.job;
    set(j, v);
    if (!check_plan(j).empty()) continue;
    const Prediction q = predict(j);
    if (!q.feasible) continue;
    ++feasible;
    CHECK(q.iteration_time_s >= p.iteration_time_s - 1e-12);
  }
  CHECK(feasible >= 2);  // not vacuous
}

}  // namespace

TEST_CASE("predict_validation_run: an unstated vpp may interleave down to one layer per model chunk") {
  // Llama 3.1 405B's 126 layers over pp 16 on 2048 H100s, vpp and recompute left out: with the
  // embedding and the loss counted as layers, 128 = 16 x 8 chunks of one. The candidates stopped
  // at 126 / 16 = 7 chunks per stage; the completion is the fastest of every vpp Megatron runs.
  const nlohmann::json llama = {{"num_layers", 126}, {"hidden_size", 16384}, {"num_attention_heads", 128}, {"num_kv_heads", 8},
                                {"ffn_hidden_size", 53248}, {"vocab_size", 128256}, {"seq_length", 8192}, {"model_family", "llama"},
                                {"arch_notes", "Llama 3: GQA, SwiGLU, RoPE, RMSNorm"}, {"gpu_type", "H100-SXM5-80GB"},
                                {"num_gpus", 2048}, {"tp", 8}, {"pp", 16}, {"dp", 16}, {"sequence_parallel", true}, {"vpp", nullptr},
                                {"global_batch_size", 256}, {"recompute", "not stated"}, {"precision", "bf16"},
                                {"zero_or_dist_optimizer", "distributed optimizer"}, {"framework", "Megatron-Core"}};
  ValidationRun r = read_modified(llama);
  REQUIRE(r.unknown.vpp);
  const Prediction p = predict_validation_run(r);
  REQUIRE(p.feasible);
  CHECK(max_virtual_stages(r.job->model, 16) == 8);
  // 16 micro-batches over 16 stages: the bubble dominates, and the most interleaving wins (the
  // candidates up to 7 chunks completed with vpp 4 and full recompute of 4 layers per stage).
  CHECK(r.job->plan.vpp == 8);
  CHECK(any_contains(r.assumptions, "vpp 8"));
  // With the recompute it chose, no other vpp is faster.
  check_fastest_of(r, p, {1, 2, 4, 8}, [](Job& j, int vpp) {
    j.plan.vpp = vpp;
    j.plan.stage_layers = standard_stage_layers(126, 16, vpp);
  });
}

namespace {

// The recompute settings an unstated recompute may complete with on a Megatron stack:namespace {

// The recompute settings an unstated recompute may complete with on a Megatron stack: selective
// recompute of any set of a dense model's modules, full recompute of every layer, or of k layers
// of each model chunk (k x vpp per stage).
std::vector<RecomputeSpec> dense_recompute_space(const Job& job) {
  std::vector<RecomputeSpec> out = {{RecomputeGranularity::full, -1}};
  for (unsigned sub = 1; sub < 8; ++sub) {
    RecomputeSpec r{RecomputeGranularity::selective, -1};
    r.modules = (sub & 1 ? kRecomputeCoreAttn : 0u) | (sub & 2 ? kRecomputeLayernorm : 0u) | (sub & 4 ? kRecomputeMlp : 0u);
    out.push_back(r);
  }
  const int stage = job.model.num_layers / job.plan.pp;
  for (int n = job.plan.vpp; n < stage; n += job.plan.vpp) out.push_back({RecomputeGranularity::full, n});
  return out;
}

// The completion is the fastest feasible setting of that space (the plan otherwise as completed).
void check_fastest_recompute(const ValidationRun& r, const Prediction& p) {
  int feasible = 0;
  for (const RecomputeSpec& rc : dense_recompute_space(*r.job)) {
    Job j = *r.job;
    j.plan.recompute = rc;
    const Prediction q = predict(j);
    if (!q.feasible) continue;
    ++feasible;
    CHECK(q.iteration_time_s >= p.iteration_time_s);
  }
  CHECK(feasible > 1);  // not vacuous: the chosen setting and at least one other fit
}

}  // namespace

TEST_CASE("predict_validation_run: an unstated recompute completes with the fastest setting that fits, module sets and block counts included") {
  // GPT-3 175B, tp 8 without sequence parallelism: neither no recompute nor Megatron's default
  // selective recompute (core_attn) fits in 80 GB at these shapes.
  const nlohmann::json rec = {{"recompute", "not stated"}, {"vpp", 1}, {"micro_batch_size", 2}, {"sequence_parallel", false}};
  SUBCASE("full recompute of only some layers per stage (pp 8: 12 layers per stage)") {
    ValidationRun r = read_modified(merged(rec, {{"pp", 8}, {"dp", 16}}));
    REQUIRE(r.unknown.recompute);
    const Prediction p = predict_validation_run(r);
    REQUIRE(p.feasible);
    const RecomputeSpec& chosen = r.job->plan.recompute;
    CHECK(chosen.granularity == RecomputeGranularity::full);
    CHECK(chosen.num_layers >= 1);
    CHECK(chosen.num_layers < 12);
    CHECK(any_contains(r.assumptions, fmt::format("recompute full, method block, {} layers of each stage", chosen.num_layers)));
    check_fastest_recompute(r, p);
    Job fewer = *r.job;  // one layer fewer recomputed does not fit
    fewer.plan.recompute.num_layers = chosen.num_layers - 1;
    if (fewer.plan.recompute.num_layers >= 1) CHECK_FALSE(predict(fewer).feasible);
  }
  SUBCASE("selective recompute of more modules than the attention core (pp 16)") {
    ValidationRun r = read_modified(rec);
    const Prediction p = predict_validation_run(r);
    REQUIRE(p.feasible);
    const RecomputeSpec& chosen = r.job->plan.recompute;
    CHECK(chosen.granularity == RecomputeGranularity::selective);
    CHECK(chosen.modules != kRecomputeCoreAttn);
    CHECK(any_contains(r.assumptions, "recompute selective of " + fmt::format("{}", fmt::join(recompute_module_names(chosen.modules), ", "))));
    check_fastest_recompute(r, p);
  }
  SUBCASE("interleaved: block counts are whole layers per model chunk") {
    ValidationRun r = read_modified(merged(rec, {{"pp", 8}, {"dp", 16}, {"vpp", 2}, {"micro_batch_size", 1}}));
    const Prediction p = predict_validation_run(r);
    REQUIRE(p.feasible);
    const RecomputeSpec& chosen = r.job->plan.recompute;
    if (chosen.granularity == RecomputeGranularity::full && chosen.num_layers >= 0) {
      CHECK(recompute_layers_per_chunk(r.job->plan, r.job->model) == chosen.num_layers / 2);
      CHECK(any_contains(r.assumptions, fmt::format("({} per model chunk)", chosen.num_layers / 2)));
    }
    check_fastest_recompute(r, p);  // over block counts 2, 4, ... per stage
  }
  SUBCASE("DeepSpeed's pipeline engine checkpoints whole layers: neither module sets nor block counts") {
    ValidationRun d = read_modified(merged(rec, {{"framework", "Megatron-DeepSpeed"}}));
    predict_validation_run(d);
    CHECK(d.job->plan.recompute.num_layers == -1);
    CHECK(d.job->plan.recompute.modules == kRecomputeCoreAttn);
  }
}

TEST_SUITE("formats") {
TEST_CASE("load_validation_runs: a recipe's pp_layout knob sets vpp and each rank's layers, MTP layers included") {
  // A Megatron-Bridge DeepSeek-V3 record as the shared files write them: the Hugging Face config
  // (one MTP module) and the recipe's knobs in the notes.
  nlohmann::json r = {{"id", "bridge_dsv3"},
                      {"source_group", "test"},
                      {"model_name", "DeepSeek-V3"},
                      {"num_layers", 61},
                      {"hidden_size", 7168},
                      {"num_attention_heads", 128},
                      {"vocab_size", 129280},
                      {"seq_length", 4096},
                      {"gpu_type", "H100-SXM5-80GB"},
                      {"num_gpus", 1024},
                      {"tp", 2},
                      {"pp", 16},
                      {"dp", 32},
                      {"ep", 64},
                      {"sequence_parallel", true},
                      {"vpp", nullptr},
                      {"micro_batch_size", 1},
                      {"global_batch_size", 8192},
                      {"recompute", "none"},
                      {"precision", "BF16"},
                      {"framework", "Megatron-Bridge"},
                      {"meas_tokens_per_sec_per_gpu", 1000},
                      {"model_config", load_json_file(test::data_file("hf/deepseek-v3.json"))},
                      {"notes", "force-balance. matching recipe(s) ['X'] at v0: knobs {\"pp_layout\": \"Et|(tt|)*30mL\", "
                                "\"moe_a2a_overlap\": false}."}};
  nlohmann::json runs = nlohmann::json::array({r});
  auto loaded = load_validation_runs(runs, "runs.json", test::catalog());
  REQUIRE(loaded.size() == 1);
  REQUIRE_MESSAGE(loaded[0].job, loaded[0].error);
  const Job& job = *loaded[0].job;
  CHECK(job.model.mtp_layers == 1);
  CHECK(job.plan.vpp == 2);
  // Rank 0: E t | tt; ranks 1-14: tt | tt; rank 15: tt | m L.
  std::vector<int> expected(16, 4);
  expected.front() = 3;
  expected.back() = 2;
  CHECK(job.plan.stage_layers == expected);
  CHECK(any_contains(loaded[0].assumptions, "pipeline layout \"Et|(tt|)*30mL\" from the recipe: vpp 2"));
  // Each rank's chunks as the layout gives them, so no approximation is reported.
  CHECK(chunk_layers(job.plan, 0, 3, 0, 1) == 1);
  CHECK(chunk_layers(job.plan, 15, 2, 0, 1) == 2);
  CHECK(chunk_layers(job.plan, 15, 2, 1, 1) == 0);
  CHECK_FALSE(any_contains(loaded[0].assumptions, "unevenly"));
  CHECK(check_plan(job).empty());
  // fp8 with moe_act recompute and no recipe named: not delayed scaling, which Megatron refuses with it.
  runs[0]["precision"] = "FP8";
  runs[0]["recompute"] = "selective, recompute_modules ['moe_act', 'mla_up_proj']";
  loaded = load_validation_runs(runs, "runs.json", test::catalog());
  REQUIRE(loaded[0].job);
  CHECK(loaded[0].job->plan.recompute.modules == (kRecomputeMoeAct | kRecomputeMlaUpProj));
  CHECK(loaded[0].job->training.recipe == LowPrecisionRecipe::tensorwise);
  CHECK(any_contains(loaded[0].assumptions, "assumed current (tensorwise) scaling: the run recomputes moe_act"));
  CHECK(check_plan(*loaded[0].job).empty());
  runs[0]["recompute"] = "selective, recompute_modules ['core_attn', 'attn_proj']";
  loaded = load_validation_runs(runs, "runs.json", test::catalog());
  CHECK_FALSE(loaded[0].job);
  CHECK(loaded[0].error.find("/recompute") != std::string::npos);
  runs[0]["precision"] = "BF16";
  runs[0]["recompute"] = "none";
  // An FSDP stack (torchtitan's FSDP2) trains the main model only.
  nlohmann::json fsdp = runs;
  fsdp[0]["framework"] = "torchtitan";
  fsdp[0]["pp"] = 1;
  fsdp[0]["dp"] = 512;
  fsdp[0]["notes"] = "";
  loaded = load_validation_runs(fsdp, "runs.json", test::catalog());
  REQUIRE(loaded[0].job);
  CHECK(loaded[0].job->runtime.framework == Framework::fsdp);
  CHECK(loaded[0].job->model.mtp_layers == 0);
  CHECK(any_contains(loaded[0].assumptions, "multi-token prediction module(s) are not trained by this framework"));
  // A layout without the MTP layer the model trains is refused as Megatron refuses it.
  runs[0]["notes"] = "knobs {\"pp_layout\": \"Et|(tt|)*30L\"}";
  loaded = load_validation_runs(runs, "runs.json", test::catalog());
  REQUIRE(loaded.size() == 1);
  CHECK_FALSE(loaded[0].job);
  CHECK(loaded[0].error.find("holds 0 MTP layers ('m'), the model trains 1") != std::string::npos);
  // pp 8 x vpp 4 and no layout in the record: 61 layers divide into 32 virtual stages neither
  // evenly nor with the embedding and loss counted, so the record is read with the balanced
  // layout, which is the one Megatron-Bridge's H100 recipe writes out for this shape.
  runs[0]["pp"] = 8;
  runs[0]["dp"] = 64;
  runs[0]["vpp"] = 4;
  runs[0]["notes"] = "force-balance.";
  const auto no_layout = load_validation_runs(runs, "runs.json", test::catalog());
  REQUIRE_MESSAGE(no_layout[0].job, no_layout[0].error);
  runs[0]["notes"] = "knobs {\"pp_layout\": \"Et|(tt|)*30mL\"}";
  const auto recipe = load_validation_runs(runs, "runs.json", test::catalog());
  REQUIRE_MESSAGE(recipe[0].job, recipe[0].error);
  CHECK(no_layout[0].job->plan.vpp == 4);
  CHECK(no_layout[0].job->plan.stage_layers == recipe[0].job->plan.stage_layers);
  CHECK(no_layout[0].job->plan.stage_layers == std::vector<int>{7, 8, 8, 8, 8, 8, 8, 6});
  CHECK(any_contains(no_layout[0].assumptions, "the embedding, the loss and the MTP layers counted as layers"));
  CHECK(check_plan(*no_layout[0].job).empty());
  CHECK(predict(*no_layout[0].job).iteration_time_s > 0);
}
}

TEST_SUITE("formats") {
TEST_CASE("load_validation_runs: what the measured memory counts, and the CUDA context of the stack's year") {
  SUBCASE("the tool named in the notes or the uncertain fields") {
    const ValidationRun allocated =
        read_modified({{"meas_per_gpu_memory_gb", 40}, {"notes", "Memory = max over ranks of torch.cuda.max_memory_allocated() (GiB)"}});
    CHECK(allocated.memory_measure == MemoryMeasure::allocated);
    CHECK_FALSE(any_contains(allocated.assumptions, "memory figure's tool not stated"));
    const ValidationRun reserved = read_modified(
        {{"meas_per_gpu_memory_gb", 40}, {"uncertain_fields", nlohmann::json::array({"meas_per_gpu_memory_gb (torch.cuda.max_memory_reserved)"})}});
    CHECK(reserved.memory_measure == MemoryMeasure::reserved);
    const ValidationRun smi = read_modified({{"meas_per_gpu_memory_gb", 40}, {"notes", "peak of nvidia-smi during the run"}});
    CHECK(smi.memory_measure == MemoryMeasure::device);
    CHECK_FALSE(any_contains(smi.assumptions, "memory figure's tool not stated"));
    // Unnamed: the whole device, and the run says so.
    const ValidationRun unnamed = read_modified({{"meas_per_gpu_memory_gb", 40}, {"notes", ""}});
    CHECK(unnamed.memory_measure == MemoryMeasure::device);
    CHECK(any_contains(unnamed.assumptions, "memory figure's tool not stated"));
    // No memory figure, nothing to say.
    const ValidationRun none = read_modified({{"meas_per_gpu_memory_gb", nullptr}, {"notes", ""}});
    CHECK_FALSE(any_contains(none.assumptions, "memory figure's tool not stated"));
  }
  SUBCASE("a stack of 2022 or before loads every CUDA module at start-up; a later one lazily") {
    const ValidationRun old = read_modified({{"framework", "Megatron-LM (BigScience fork, early 2022)"}});
    CHECK_FALSE(old.job->runtime.lazy_module_loading);
    CHECK(any_contains(old.assumptions, "CUDA modules loaded at start-up"));
    const ValidationRun later = read_modified({{"framework", "Megatron-LM (2024)"}});
    CHECK(later.job->runtime.lazy_module_loading);
    CHECK_FALSE(any_contains(later.assumptions, "CUDA modules loaded at start-up"));
    // The same plan needs the larger context's difference more on the device, none in the allocator.
    const Prediction a = predict(*old.job), b = predict(*later.job);
    CHECK(a.stages.at(0).memory.outside_allocator_GiB - b.stages.at(0).memory.outside_allocator_GiB ==
          doctest::Approx(1573.0 / 1024 - 0.5));
  }
}
}

namespace {

// A DeepSeek-V3 record of Megatron-Bridge's shape (its Hugging Face config in model_config), with
// the given notes: the MoE settings a record's free text decides.
nlohmann::json deepseek_record(const std::string& notes, const std::string& framework = "Megatron-Bridge",
                               const std::string& recompute = "none") {
  return {{"id", "dsv3"}, {"source_group", "test"}, {"model_name", "DeepSeek-V3"}, {"num_layers", 61},
          {"hidden_size", 7168}, {"num_attention_heads", 128}, {"vocab_size", 129280}, {"seq_length", 4096},
          {"gpu_type", "H100-SXM5-80GB"}, {"num_gpus", 1024}, {"tp", 2}, {"pp", 16}, {"dp", 32}, {"ep", 64},
          {"sequence_parallel", true}, {"vpp", nullptr}, {"micro_batch_size", 1}, {"global_batch_size", 8192},
          {"recompute", recompute}, {"precision", "BF16"}, {"framework", framework},
          {"meas_tokens_per_sec_per_gpu", 1000},
          {"model_config", load_json_file(test::data_file("hf/deepseek-v3.json"))}, {"notes", notes}};
}

ValidationRun deepseek_with_notes(const std::string& notes, const std::string& framework = "Megatron-Bridge",
                                  const std::string& recompute = "none") {
  auto runs = load_validation_runs(nlohmann::json::array({deepseek_record(notes, framework, recompute)}), "runs.json", test::catalog());
  REQUIRE(runs.size() == 1);
  REQUIRE_MESSAGE(runs[0].job, runs[0].error);
  return runs[0];
}

}  // namespace

TEST_SUITE("formats") {
TEST_CASE("load_validation_runs: a parallel degree left out is what num_gpus or the batch leaves for it") {
  // The hand-made GPT-3 record: tp 8, pp 16, dp 8 on 1024 GPUs, micro-batch 1, global batch 1536.
  for (const char* degree : {"tp", "pp", "dp"}) {
    CAPTURE(degree);
    const ValidationRun r = read_modified({{degree, nullptr}});
    CHECK(r.job->plan.tp == 8);
    CHECK(r.job->plan.pp == 16);
    CHECK(r.job->plan.dp == 8);
    CHECK(any_contains(r.assumptions, std::string(degree) + " not published; num_gpus / the other degrees"));
  }
  // Without num_gpus, dp from the batch: 1536 / (1 x 192 micro-batches per replica).
  const ValidationRun b = read_modified({{"dp", nullptr}, {"num_gpus", nullptr}, {"num_microbatches_per_replica", 192}});
  CHECK(b.job->plan.dp == 8);
  CHECK(any_contains(b.assumptions, "global_batch_size / (micro_batch_size x num_microbatches_per_replica) = 8"));
  // Degrees that fill num_gpus as stated: a null one is 1, and the output says so.
  const ValidationRun one = read_modified({{"cp", nullptr}, {"tp", nullptr}, {"dp", 64}});
  CHECK(one.job->plan.tp == 1);
  CHECK(any_contains(one.assumptions, "tp not published; read as 1"));
  // What cannot be derived is an error naming the field.
  auto error = [](const nlohmann::json& changes) {
    const nlohmann::json rec = merged(load_json_file(test::data_file("validation_runs_small.json")).at(0), changes);
    const auto runs = load_validation_runs(nlohmann::json::array({rec}), "runs.json", test::catalog());
    REQUIRE(runs.size() == 1);
    CHECK_FALSE(runs[0].job.has_value());
    return runs[0].error;
  };
  CHECK(error({{"tp", nullptr}, {"pp", nullptr}}) ==
        "runs.json [0]: /num_gpus: tp*pp*dp*cp = 8 differs from num_gpus 1024 (more than one of tp, pp and dp not published)");
  CHECK(error({{"dp", nullptr}, {"num_gpus", 1000}}) ==
        "runs.json [0]: /dp: not published, and num_gpus 1000 is not a multiple of the other degrees' product 128");
  CHECK(error({{"tp", 1 << 20}, {"pp", 1 << 20}, {"dp", 1 << 24}, {"cp", 1 << 20}}) ==
        "runs.json [0]: /num_gpus: tp*pp*dp*cp = 2^30 or more differs from num_gpus 1024");
  // tp, pp and dp stated, cp left out: Megatron's dp excludes the CP ranks, which fill num_gpus.
  const ValidationRun cp = read_modified({{"cp", nullptr}, {"dp", 4}});
  CHECK(cp.job->plan.cp == 2);
  CHECK(any_contains(cp.assumptions, "cp not published; num_gpus / (tp x pp x dp) = 2"));
  // A stated cp stays what it is: the mismatch is an error.
  CHECK(error({{"cp", 1}, {"dp", 4}}) == "runs.json [0]: /num_gpus: tp*pp*dp*cp = 512 differs from num_gpus 1024");
}

TEST_CASE("load_validation_runs: torchtitan's replicate degree is FSDP2's hybrid sharding") {
  // The hand-made GPT-3 record: dp 8 on 1024 GPUs.
  const ValidationRun r =
      read_modified({{"framework", "torchtitan"}, {"notes", "--parallelism.data_parallel_replicate_degree 2"}});
  CHECK(r.job->runtime.framework == Framework::fsdp);
  CHECK(r.job->plan.optimizer_instances == 2);
  CHECK(r.job->plan.optimizer_shard_ranks() == 4);
  CHECK(any_contains(r.assumptions, "FSDP2 hybrid sharding (HSDP): 2 replica groups, each sharding over 4 ranks"));
  CHECK(check_plan(*r.job) == "");
  // Not on a Megatron stack, and only a whole number of groups dividing the data-parallel ranks.
  CHECK(read_modified({{"notes", "data_parallel_replicate_degree: 2"}}).job->plan.optimizer_instances == 1);
  const nlohmann::json bad = merged(load_json_file(test::data_file("validation_runs_small.json")).at(0),
                                    {{"framework", "torchtitan"}, {"notes", "data_parallel_replicate_degree: 3"}});
  const auto runs = load_validation_runs(nlohmann::json::array({bad}), "runs.json", test::catalog());
  CHECK(runs.at(0).error.find("/notes: data_parallel_replicate_degree 3: expected a whole number of replica groups dividing dp x cp = 8") !=
        std::string::npos);
}

TEST_CASE("load_validation_runs: torchtitan's float8 all-gather knob gathers FSDP's linears in fp8") {
  const ValidationRun r = read_modified({{"framework", "torchtitan"},
                                         {"precision", "Float8 (torchao, tensorwise)"},
                                         {"notes", "--float8.enable_fsdp_float8_all_gather true"}});
  CHECK(r.job->runtime.fp8_param_gather);
  CHECK(fsdp_float8_all_gather(*r.job));
  CHECK(any_contains(r.assumptions, "FSDP float8 all-gather"));
  // An unnamed fp8 recipe is torchao's default on an FSDP stack, Transformer Engine's on Megatron.
  const ValidationRun titan = read_modified({{"framework", "torchtitan"}, {"precision", "FP8"}});
  CHECK(titan.job->training.recipe == LowPrecisionRecipe::tensorwise);
  CHECK(any_contains(titan.assumptions, "assumed torchao's default Float8 training, tensorwise scaling"));
  CHECK_FALSE(any_contains(titan.assumptions, "Transformer Engine's default delayed"));
  const ValidationRun nemo = read_modified({{"framework", "NeMo"}, {"precision", "FP8"}});
  CHECK(nemo.job->training.recipe == LowPrecisionRecipe::delayed);
  CHECK(any_contains(nemo.assumptions, "assumed Transformer Engine's default delayed scaling"));
  // Only on an FSDP stack: Megatron's own flag is --fp8-param-gather.
  CHECK_FALSE(read_modified({{"precision", "FP8 current scaling"}, {"notes", "enable_fsdp_float8_all_gather: true"}}).job->runtime.fp8_param_gather);
}

TEST_CASE("load_validation_runs: vpp 0 is no interleaving, as some tables write Megatron's None") {
  const ValidationRun r = read_modified({{"vpp", 0}});
  CHECK(r.job->plan.vpp == 1);
  CHECK_FALSE(r.unknown.vpp);
  CHECK(any_contains(r.assumptions, "vpp 0 read as no interleaving"));
}

TEST_CASE("predict_validation_run: an MoE record without ep completes with the fastest expert parallelism that fits") {
  // DeepSeek-V3 on 1024 H100s at tp 2 x pp 8 x dp 64: more than one expert-parallel size fits.
  nlohmann::json rec = deepseek_record("");
  rec["ep"] = nullptr;
  rec["pp"] = 8;
  rec["dp"] = 64;
  auto runs = load_validation_runs(nlohmann::json::array({rec}), "runs.json", test::catalog());
  REQUIRE(runs[0].job);
  ValidationRun& r = runs[0];
  CHECK(r.unknown.expert_parallel);
  const Prediction p = predict_validation_run(r);
  REQUIRE(p.feasible);
  CHECK(r.job->plan.ep > 1);  // 256 experts replicated on every GPU do not fit
  CHECK(any_contains(r.assumptions, fmt::format("ep {}", r.job->plan.ep)));
  check_fastest_of(r, p, {1, 2, 4, 8, 16, 32, 64, 128, 256}, [](Job& j, int ep) { j.plan.ep = ep; });
  // A stated ep is not a guess, and dense records have none to complete.
  CHECK_FALSE(deepseek_with_notes("").unknown.expert_parallel);
  CHECK_FALSE(read_modified({}).unknown.expert_parallel);
}

TEST_CASE("load_validation_runs: an MoE record that counts expert parallelism beside data parallelism") {
  // tp 2 x pp 16 x dp 4 x ep 8 = 1024: Megatron's data-parallel size is 32, the experts' ranks carved from it.
  nlohmann::json rec = deepseek_record("");
  rec["dp"] = 4;
  rec["ep"] = 8;
  auto runs = load_validation_runs(nlohmann::json::array({rec}), "runs.json", test::catalog());
  REQUIRE(runs[0].job);
  CHECK(runs[0].job->plan.dp == 32);
  CHECK(runs[0].job->plan.ep == 8);
  CHECK(any_contains(runs[0].assumptions, "read as Megatron's data-parallel size dp x ep = 32"));
  // Megatron's own convention (dp already counts the expert ranks) is read as it stands.
  rec["dp"] = 32;
  runs = load_validation_runs(nlohmann::json::array({rec}), "runs.json", test::catalog());
  REQUIRE(runs[0].job);
  CHECK(runs[0].job->plan.dp == 32);
  CHECK_FALSE(any_contains(runs[0].assumptions, "beside expert parallelism"));
  // A dense model has no expert ranks to count: the mismatch stays an error.
  CHECK_FALSE(load_validation_runs(nlohmann::json::array({merged(load_json_file(test::data_file("validation_runs_small.json")).at(0),
                                                                 {{"dp", 1}, {"ep", 8}})}),
                                   "runs.json", test::catalog())[0].job.has_value());
}



TEST_CASE("load_validation_runs: settings in any spelling a source uses (recipe knob, Megatron flag, TransformerConfig field)") {
  SUBCASE("MoE routing, dispatcher, overlap and expert tensor parallelism") {
    const ValidationRun knob = deepseek_with_notes("knobs {\"moe_a2a_overlap\": true, \"moe_flex_dispatcher_backend\": \"deepep\"}");
    CHECK(knob.job->runtime.moe_a2a_overlap);
    CHECK(knob.job->runtime.moe_token_dedup);
    const ValidationRun flags = deepseek_with_notes(
        "launched with --moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep --overlap-moe-expert-parallel-comm "
        "--expert-tensor-parallel-size 2 --moe-router-force-load-balancing");
    CHECK(flags.job->runtime.moe_token_dedup);
    CHECK(flags.job->runtime.moe_a2a_overlap);
    CHECK(flags.job->plan.etp == 2);
    CHECK(flags.job->runtime.moe_load_imbalance == 1.0);
    const ValidationRun config = deepseek_with_notes("TransformerConfig(overlap_moe_expert_parallel_comm=True, moe_enable_deepep=True)");
    CHECK(config.job->runtime.moe_a2a_overlap);
    CHECK(config.job->runtime.moe_token_dedup);
    const ValidationRun off = deepseek_with_notes("knobs {\"moe_a2a_overlap\": false, \"moe_flex_dispatcher_backend\": null}");
    CHECK_FALSE(off.job->runtime.moe_a2a_overlap);
    CHECK_FALSE(off.job->runtime.moe_token_dedup);
  }
  SUBCASE("Megatron-Bridge's H100 Qwen3-235B function: the all-to-all dispatcher whatever backend its base config names") {
    const std::string container = "Megatron-Bridge / NeMo 26.02.01 container";
    const ValidationRun r030 = deepseek_with_notes(
        "matching recipe(s) ['QWEN3_235B_A22B_PRETRAIN_CONFIG_H100_FP8_CS_V2'] at r0.3.0 (8301abfc): knobs "
        "{\"moe_flex_dispatcher_backend\": \"deepep\", \"moe_a2a_overlap\": true}",
        container);
    CHECK_FALSE(r030.job->runtime.moe_token_dedup);
    CHECK(r030.job->runtime.moe_a2a_overlap);
    // Its tp_comm_overlap=False is read, not completed.
    CHECK_FALSE(r030.job->runtime.tp_comm_overlap);
    CHECK_FALSE(r030.unknown.tp_comm_overlap);
    CHECK(any_contains(r030.assumptions, "sets the all-to-all dispatcher"));
    // v0.1.0rc3's run_script passed tp_comm_overlap=True: unstated in the record, so completed.
    const ValidationRun rc3 = deepseek_with_notes(
        "matching recipe(s) ['QWEN3_235B_A22B_H100_FP8_CS'] at v0.1.0rc3 (bf71eba0): knobs {\"etp\": 1}", "Megatron-Bridge / NeMo 25.09 container");
    CHECK(rc3.unknown.tp_comm_overlap);
    // Only the H100 function does this: the same recipe name on another GPU keeps its backend.
    nlohmann::json b200 = deepseek_record(
        "matching recipe(s) ['QWEN3_235B_A22B_PRETRAIN_CONFIG_B200_FP8_CS_V1'], unlike the H100 one: knobs "
        "{\"moe_flex_dispatcher_backend\": \"deepep\"}",
        container);
    b200["gpu_type"] = "B200";
    const auto on_b200 = load_validation_runs(nlohmann::json::array({b200}), "runs.json", test::catalog());
    REQUIRE(on_b200.size() == 1);
    REQUIRE_MESSAGE(on_b200[0].job, on_b200[0].error);
    CHECK(on_b200[0].job->runtime.moe_token_dedup);
    // The 30B function sets the flex dispatcher: its backend knob is read.
    const ValidationRun q30 = deepseek_with_notes(
        "matching recipe(s) ['QWEN3_30B_A3B_PRETRAIN_CONFIG_H100_FP8_CS_V1'] at v0.3.0 (21b02e0c): knobs "
        "{\"moe_flex_dispatcher_backend\": \"deepep\"}",
        container);
    CHECK(q30.job->runtime.moe_token_dedup);
    CHECK(q30.unknown.tp_comm_overlap);
  }
  SUBCASE("recompute the record's field leaves unsaid, from the recipe knobs in its notes") {
    const std::string unsaid = "model recipe default applies; not restated";
    const ValidationRun modules = deepseek_with_notes(
        "knobs {\"recompute_modules\": [\"mla_up_proj\", \"mlp\"], \"moe_a2a_overlap\": false}", "Megatron-Bridge", unsaid);
    CHECK_FALSE(modules.unknown.recompute);
    CHECK(modules.job->plan.recompute.granularity == RecomputeGranularity::selective);
    CHECK(modules.job->plan.recompute.modules == (kRecomputeMlaUpProj | kRecomputeMlp));
    CHECK(any_contains(modules.assumptions, "read from the recipe knobs in the notes: selective, recompute_modules [mla_up_proj, mlp]"));
    const ValidationRun block = deepseek_with_notes(
        "knobs {\"recompute_granularity\": \"full\", \"recompute_method\": \"block\", \"recompute_num_layers\": 2}",
        "Megatron-Bridge", unsaid);
    CHECK(block.job->plan.recompute.granularity == RecomputeGranularity::full);
    CHECK(block.job->plan.recompute.num_layers == 2);
    // Nothing in either place: completed, as before.
    CHECK(deepseek_with_notes("knobs {\"etp\": 1}", "Megatron-Bridge", unsaid).unknown.recompute);
    // A stated field wins over the notes.
    CHECK(deepseek_with_notes("knobs {\"recompute_modules\": [\"mlp\"]}").job->plan.recompute.granularity ==
          RecomputeGranularity::none);
  }
  SUBCASE("Megatron-FSDP: the recipe knob, the FSDP column of Megatron-Bridge's tables, or the optimizer field") {
    const ValidationRun column = deepseek_with_notes("Table row: {\"FSDP\": \"1\", \"TP\": \"2\"}");
    CHECK(column.job->plan.zero_stage == 3);
    CHECK_FALSE(column.job->plan.distributed_optimizer);
    CHECK(any_contains(column.assumptions, "Megatron-FSDP (optim_grads_params)"));
    const ValidationRun knob = deepseek_with_notes(
        "knobs {\"use_megatron_fsdp\": true, \"data_parallel_sharding_strategy\": \"optim_grads\", \"cpu_offloading_num_layers\": 30}");
    CHECK(knob.job->plan.zero_stage == 2);
    CHECK(any_contains(knob.assumptions, "layer-level CPU offloading of the first 30 layers"));
    CHECK(deepseek_with_notes("knobs {\"use_megatron_fsdp\": true, \"data_parallel_sharding_strategy\": \"optim\"}")
              .job->plan.distributed_optimizer);
    const ValidationRun unsharded = deepseek_with_notes("knobs {\"use_megatron_fsdp\": true, \"data_parallel_sharding_strategy\": \"no_shard\"}");
    CHECK(unsharded.job->plan.zero_stage == 0);
    CHECK_FALSE(unsharded.job->plan.distributed_optimizer);
    const auto bad = load_validation_runs(
        nlohmann::json::array({deepseek_record("knobs {\"use_megatron_fsdp\": true, \"data_parallel_sharding_strategy\": \"zero3\"}")}),
        "runs.json", test::catalog());
    REQUIRE(bad.size() == 1);
    CHECK_FALSE(bad[0].job);
    CHECK(bad[0].error.find("data_parallel_sharding_strategy \"zero3\": expected no_shard, optim, optim_grads or optim_grads_params") !=
          std::string::npos);
    const ValidationRun off = deepseek_with_notes("Table row: {\"FSDP\": \"0\", \"TP\": \"2\"}");
    CHECK(off.job->plan.zero_stage == 0);
    CHECK_FALSE(any_contains(off.assumptions, "Megatron-FSDP"));
  }
  SUBCASE("CUDA graphs a recipe turns on: the modules it captures, in the spellings recipes and launches use") {
    const ValidationRun graphs = deepseek_with_notes(
        "knobs {\"cuda_graph_impl\": \"transformer_engine\", \"cuda_graph_scope\": [\"attn\", \"moe_router\", \"moe_preprocess\"], \"etp\": 1}");
    CHECK(graphs.job->runtime.cuda_graph_modules == (kCudaGraphAttn | kCudaGraphMoeRouter | kCudaGraphMoePreprocess));
    CHECK(any_contains(graphs.assumptions, "CUDA graphs (transformer_engine, attn, moe_router, moe_preprocess)"));
    CHECK(any_contains(graphs.assumptions, "one graph replay of host time each way"));
    // Megatron's flags, followed by prose: the list ends at the first word that is not a module.
    CHECK(deepseek_with_notes("ran with --cuda-graph-impl transformer_engine --cuda-graph-modules moe_router moe_preprocess and EP 8")
              .job->runtime.cuda_graph_modules == (kCudaGraphMoeRouter | kCudaGraphMoePreprocess));
    // No modules (Bridge's older "cuda_graphs": true, an empty scope, full_iteration): the whole layer.
    CHECK(deepseek_with_notes("knobs {\"cuda_graphs\": true}").job->runtime.cuda_graph_modules == kCudaGraphWholeLayer);
    CHECK(deepseek_with_notes("knobs {\"cuda_graph_impl\": \"local\", \"cuda_graph_scope\": []}").job->runtime.cuda_graph_modules ==
          kCudaGraphWholeLayer);
    // A graph of the whole step, with HybridEP's static per-rank budget that lets it capture the MoE layers.
    const ValidationRun whole = deepseek_with_notes(
        "knobs {\"cuda_graph_impl\": \"full_iteration\", \"moe_flex_dispatcher_backend\": \"hybridep\", "
        "\"moe_expert_rank_capacity_factor\": 1.5}");
    CHECK(whole.job->runtime.cuda_graph_modules == (kCudaGraphWholeLayer | kCudaGraphFullIteration));
    CHECK(whole.job->runtime.moe_rank_capacity_factor == 1.5);
    CHECK(whole.job->runtime.moe_paged_stash_factor == 0);
    // Megatron-Bridge's DeepSeek recipes stash the experts' tensors under that budget.
    const ValidationRun stashed = deepseek_with_notes(
        "knobs {\"moe_flex_dispatcher_backend\": \"hybridep\", \"moe_expert_rank_capacity_factor\": 1.5, "
        "\"moe_paged_stash\": true, \"moe_paged_stash_buffer_size_factor_cuda\": 1.2, "
        "\"moe_paged_stash_buffer_size_factor_cpu\": 1.0}");
    CHECK(stashed.job->runtime.moe_paged_stash_factor == 1.2);
    CHECK(stashed.job->runtime.moe_paged_stash_host_factor == 1.0);
    CHECK(any_contains(whole.assumptions, "CUDA graphs (full_iteration, the whole step)"));
    // The budget is HybridEP's: beside DeepEP it is not read.
    CHECK(deepseek_with_notes("knobs {\"moe_flex_dispatcher_backend\": \"deepep\", \"moe_expert_rank_capacity_factor\": 1.5}")
              .job->runtime.moe_rank_capacity_factor == 0);
    CHECK(deepseek_with_notes("knobs {\"cuda_graphs\": false, \"etp\": 1}").job->runtime.cuda_graph_modules == 0);
    CHECK_FALSE(any_contains(deepseek_with_notes("knobs {\"cuda_graph_impl\": \"none\"}").assumptions, "CUDA graphs"));
    // A module strata does not know is refused, naming the knob.
    const auto mamba = load_validation_runs(
        nlohmann::json::array({deepseek_record("knobs {\"cuda_graph_impl\": \"transformer_engine\", \"cuda_graph_scope\": [\"gdn\"]}")}),
        "runs.json", test::catalog());
    REQUIRE(mamba.size() == 1);
    CHECK_FALSE(mamba[0].job);
    CHECK(mamba[0].error.find("/notes (cuda_graph_scope): expected CUDA graph modules") != std::string::npos);
  }
  SUBCASE("uneven first and last pipeline stages, as TransformerConfig or Megatron's flags name them") {
    // DeepSeek-V3's 61 layers over pp 16: 5 first and 14 last leave 42 = 14 x 3 for the other stages; 5 and 2
    // leave 54, which 14 stages cannot share.
    const ValidationRun both = deepseek_with_notes("knobs {\"num_layers_in_first_pipeline_stage\": 5, \"num_layers_in_last_pipeline_stage\": 14}");
    std::vector<int> expected(16, 3);
    expected.front() = 5;
    expected.back() = 14;
    CHECK(both.job->plan.stage_layers == expected);
    CHECK(any_contains(both.assumptions, "uneven first/last pipeline stages from the recipe"));
    CHECK(deepseek_with_notes("ran with --decoder-first-pipeline-num-layers 5 --decoder-last-pipeline-num-layers 14").job->plan.stage_layers ==
          expected);
    const auto bad = load_validation_runs(
        nlohmann::json::array({deepseek_record("knobs {\"num_layers_in_first_pipeline_stage\": 5, \"num_layers_in_last_pipeline_stage\": 2}")}),
        "runs.json", test::catalog());
    REQUIRE(bad.size() == 1);
    CHECK_FALSE(bad[0].job);
    CHECK(bad[0].error.find("cannot share evenly") != std::string::npos);
  }
  SUBCASE("fine-grained activation offloading and shared MTP depths, as recipe knobs") {
    const ValidationRun off = deepseek_with_notes(
        "knobs {\"fine_grained_activation_offloading\": true, \"offload_modules\": [\"core_attn\", \"attn_proj\"], "
        "\"min_offloaded_tensor_size\": 350_000_000, \"mtp_num_layers\": 2, \"mtp_use_repeated_layer\": true}");
    REQUIRE(off.job);
    CHECK(off.job->plan.offload.modules == (kOffloadCoreAttn | kOffloadAttnProj));
    CHECK(off.job->plan.offload.min_tensor_elements == 350000000);
    CHECK(off.job->model.mtp_layers == 2);  // over the config's one
    CHECK(off.job->model.mtp_repeated_layer);
    CHECK(any_contains(off.assumptions, "fine-grained activation offloading of core_attn, attn_proj"));
    CHECK(any_contains(off.assumptions, "2 MTP depth(s) from the recipe"));
    // Layer-level CPU offloading (Megatron-Bridge's Llama 3 recipes on Blackwell).
    const ValidationRun layers = deepseek_with_notes("knobs {\"cpu_offloading\": true, \"cpu_offloading_num_layers\": 5}");
    CHECK(layers.job->plan.cpu_offload_layers == 5);
    CHECK(any_contains(layers.assumptions, "layer-level CPU offloading of the first 5 layers"));
    CHECK(deepseek_with_notes("knobs {\"cpu_offloading\": false, \"cpu_offloading_num_layers\": 5}").job->plan.cpu_offload_layers == 0);
    // The module list alone, as Megatron-Core reads it without the switch, offloads nothing.
    CHECK(deepseek_with_notes("knobs {\"offload_modules\": [\"core_attn\"]}").job->plan.offload.modules == 0);
    const auto bad = load_validation_runs(
        nlohmann::json::array({deepseek_record("knobs {\"fine_grained_activation_offloading\": true, \"offload_modules\": []}")}),
        "runs.json", test::catalog());
    REQUIRE(bad.size() == 1);
    CHECK_FALSE(bad[0].job);
    CHECK(bad[0].error.find("/notes (offload_modules): fine_grained_activation_offloading needs offload_modules") != std::string::npos);
  }
  SUBCASE("a negated phrase is not the phrase") {
    CHECK(deepseek_with_notes("routing is force-balanced").job->runtime.moe_load_imbalance == 1.0);
    const ValidationRun real = deepseek_with_notes("routing is not force-balanced (aux-loss balancing)");
    CHECK(real.job->runtime.moe_load_imbalance == RuntimeOptions::kDefaultMoeLoadImbalance);
  }
  SUBCASE("a layout's own split of a rank over its chunks is kept (Megatron-Bridge's GB200 DeepSeek-V3 layout)") {
    nlohmann::json rec = deepseek_record("knobs {\"pp_layout\": \"Et*4|(tttt|)*14tmL\"}", "Megatron-Bridge", "none");
    rec["pp"] = 4;
    rec["dp"] = 128;
    auto runs = load_validation_runs(nlohmann::json::array({rec}), "runs.json", test::catalog());
    REQUIRE_MESSAGE(runs[0].job, runs[0].error);
    const Job& job = *runs[0].job;
    REQUIRE(job.plan.vpp == 4);
    CHECK(job.plan.stage_layers == std::vector<int>{16, 16, 16, 13});
    for (int c = 0; c < 3; ++c) CHECK(chunk_layers(job.plan, 3, 13, c, 1) == 4);
    CHECK(chunk_layers(job.plan, 3, 13, 3, 1) == 1);  // "tmL"
    CHECK(chunk_layers(job.plan, 0, 16, 0, 1) == 4);  // "Et*4"
    CHECK_FALSE(any_contains(runs[0].assumptions, "unevenly"));
    CHECK(check_plan(job).empty());
    CHECK(job.plan.chunk_layout.size() == 16);  // kept: the rule would give the last rank 4, 4, 3, 2
  }
  SUBCASE("a pipeline layout as a Megatron flag or a Python keyword") {
    for (const char* notes : {"--pipeline-model-parallel-layout \"Et|(tt|)*30mL\"", "pipeline_model_parallel_layout='Et|(tt|)*30mL'"}) {
      CAPTURE(notes);
      const ValidationRun r = deepseek_with_notes(notes);
      CHECK(r.job->plan.vpp == 2);
      CHECK(r.job->plan.stage_layers.front() == 3);
    }
  }
  SUBCASE("the optimizer's state: Megatron's knobs and flags, or words; it implies the distributed optimizer") {
    const ValidationRun knobs = deepseek_with_notes(
        "knobs {\"use_precision_aware_optimizer\": true, \"exp_avg_dtype\": \"bf16\", \"exp_avg_sq_dtype\": \"bf16\"}");
    const OptimizerSpec& o = knobs.job->training.optimizer;
    CHECK(o.precision_aware);
    CHECK(o.exp_avg == StateDtype::bf16);
    CHECK(o.exp_avg_sq == StateDtype::bf16);
    CHECK(o.main_params == StateDtype::fp32);
    CHECK(knobs.job->plan.distributed_optimizer);
    CHECK(std::any_of(knobs.assumptions.begin(), knobs.assumptions.end(),
                      [](const std::string& a) { return a.find("optimizer state as stated: precision-aware Adam") != std::string::npos; }));
    const ValidationRun flags = deepseek_with_notes("--use-precision-aware-optimizer --exp-avg-sq-dtype fp8 --optimizer-cpu-offload "
                                                    "--optimizer-offload-fraction 0.5");
    CHECK(flags.job->training.optimizer.exp_avg == StateDtype::fp32);
    CHECK(flags.job->training.optimizer.exp_avg_sq == StateDtype::fp8);
    CHECK(flags.job->training.optimizer.cpu_offload_fraction == 0.5);
    CHECK(deepseek_with_notes("trained with BF16 optimizer states").job->training.optimizer.exp_avg == StateDtype::bf16);
    CHECK(deepseek_with_notes("no optimizer offload").job->training.optimizer.is_default());
    CHECK(deepseek_with_notes("optimizer offload disabled").job->training.optimizer.is_default());
    CHECK(deepseek_with_notes("knobs {\"optimizer_cpu_offload\": false}").job->training.optimizer.is_default());
    CHECK(deepseek_with_notes("plain Adam").job->training.optimizer.is_default());
    nlohmann::json bad = load_json_file(test::data_file("validation_runs_small.json")).at(0);
    bad["notes"] = "exp_avg_dtype=fp4";
    const auto runs = load_validation_runs(nlohmann::json::array({bad}), "runs.json", test::catalog());
    REQUIRE(runs.size() == 1);
    CHECK_FALSE(runs[0].job.has_value());
    CHECK(runs[0].error.find("/notes: exp_avg_dtype \"fp4\": expected fp32, bf16, fp16 or fp8") != std::string::npos);
  }
  SUBCASE("TP communication overlap, fp8 parameters and the CP exchange, as knobs") {
    CHECK(read_modified({{"notes", "knobs {\"tp_comm_overlap\": true}"}}).job->runtime.tp_comm_overlap);
    CHECK_FALSE(read_modified({{"notes", "knobs {\"tp_comm_overlap\": false}"}}).job->runtime.tp_comm_overlap);
    CHECK(read_modified({{"notes", "flags: --tp-comm-overlap --sequence-parallel"}}).job->runtime.tp_comm_overlap);
    CHECK(read_modified({{"notes", "with --tp-comm-overlap and userbuffers"}}).job->runtime.tp_comm_overlap);
    const ValidationRun fp8 = read_modified({{"precision", "FP8 current scaling"}, {"notes", "--fp8-param-gather"}});
    CHECK(fp8.job->runtime.fp8_param_gather);
    const ValidationRun cp = read_modified({{"cp", 2}, {"dp", 4}, {"notes", "knobs {\"cp_comm_type\": \"a2a\"}"}});
    CHECK(cp.job->runtime.cp_comm_type == CpCommType::a2a);
    const ValidationRun ag = read_modified({{"cp", 2}, {"dp", 4}, {"notes", "--cp-comm-type allgather"}});
    CHECK(ag.job->runtime.cp_comm_type == CpCommType::allgather);
    // Unstated: Megatron's ring, or PyTorch's all-gather on an FSDP stack (torchtitan's default).
    CHECK(read_modified({{"cp", 2}, {"dp", 4}}).job->runtime.cp_comm_type == CpCommType::p2p);
    const ValidationRun titan = read_modified({{"cp", 2}, {"dp", 4}, {"framework", "torchtitan"}});
    CHECK(titan.job->runtime.framework == Framework::fsdp);
    CHECK(titan.job->runtime.cp_comm_type == CpCommType::allgather);
    CHECK(any_contains(titan.assumptions, "torchtitan's default context_parallel_rotate_method"));
    CHECK(read_modified({{"cp", 2}, {"dp", 4}, {"framework", "torchtitan"}, {"notes", "cp p2p"}}).job->runtime.cp_comm_type ==
          CpCommType::p2p);
    CHECK(read_modified({{"cp", 2}, {"dp", 4}, {"framework", "torchtitan"}, {"notes", "--parallelism.context_parallel_rotate_method alltoall"}})
              .job->runtime.cp_comm_type == CpCommType::p2p);
  }
}

TEST_CASE("load_validation_runs: precision, recompute and framework texts as sources write them") {
  SUBCASE("fp8 recipes by their Transformer Engine and prose names; MXFP4 is refused") {
    CHECK(read_modified({{"precision", "FP8 (Transformer Engine Float8BlockScaling)"}}).job->training.recipe == LowPrecisionRecipe::blockwise);
    CHECK(read_modified({{"precision", "FP8 per-tensor dynamic scaling"}}).job->training.recipe == LowPrecisionRecipe::tensorwise);
    CHECK(read_modified({{"precision", "FP8 (Float8CurrentScaling)"}}).job->training.recipe == LowPrecisionRecipe::tensorwise);
    const std::string path = test::data_file("validation_runs_small.json");
    nlohmann::json rec = load_json_file(path).at(0);
    rec["precision"] = "MXFP4 (OCP microscaling)";
    const auto runs = load_validation_runs(nlohmann::json::array({rec}), "runs.json", test::catalog());
    CHECK_FALSE(runs.at(0).job);
    CHECK(runs.at(0).error.find("/precision") != std::string::npos);
    CHECK(runs.at(0).error.find("MXFP4 training is not modelled") != std::string::npos);
    // Integer training is refused too, not read as the bf16 a record that states nothing gets.
    rec["precision"] = "INT8 (SwitchBack)";
    const auto int8 = load_validation_runs(nlohmann::json::array({rec}), "runs.json", test::catalog());
    CHECK_FALSE(int8.at(0).job);
    CHECK(int8.at(0).error.find("INT8 training is not modelled") != std::string::npos);
  }
  SUBCASE("fp8 attention as Megatron-Bridge's knob; ignored, and said so, where the run cannot have it") {
    const ValidationRun on = read_modified({{"precision", "FP8 current scaling"}, {"notes", "knobs {\"fp8_dot_product_attention\": true}"}});
    CHECK(on.job->runtime.fp8_attention);
    CHECK_FALSE(read_modified({{"precision", "FP8 current scaling"}}).job->runtime.fp8_attention);
    const ValidationRun bf16 = read_modified({{"precision", "BF16"}, {"notes", "fp8_dpa: true"}});
    CHECK_FALSE(bf16.job->runtime.fp8_attention);
    CHECK(any_contains(bf16.assumptions, "attention timed in bf16"));
    // In words, in the precision text or the notes; a negated mention is not one.
    CHECK(read_modified({{"precision", "FP8 current scaling with fp8 dot product attention"}}).job->runtime.fp8_attention);
    auto fp8_attention_with_notes = [](const char* notes) {
      return read_modified({{"precision", "FP8-CS"}, {"notes", notes}}).job->runtime.fp8_attention;
    };
    CHECK(fp8_attention_with_notes("FP8 attention on"));
    CHECK_FALSE(fp8_attention_with_notes("no fp8 attention"));
    CHECK_FALSE(fp8_attention_with_notes("fp8 attention: false"));
    CHECK_FALSE(fp8_attention_with_notes("FP8 attention disabled"));
  }
  SUBCASE("bf16 first and last layers in one phrase") {
    const ValidationRun r = read_modified({{"precision", "FP8 current scaling; first 2 and last 3 layers in BF16"}});
    CHECK(r.job->runtime.bf16_first_layers == 2);
    CHECK(r.job->runtime.bf16_last_layers == 3);
  }
  SUBCASE("shape fields left null get defaults the assumptions name") {
    const ValidationRun r = read_modified({{"num_kv_heads", nullptr}, {"ffn_hidden_size", nullptr}});
    CHECK(r.job->model.num_query_groups == r.job->model.num_attention_heads);
    CHECK(r.job->model.ffn_hidden_size == 4 * r.job->model.hidden_size);
    CHECK(any_contains(r.assumptions, "num_kv_heads not stated; assumed multi-head attention"));
    CHECK(any_contains(r.assumptions, "ffn_hidden_size not stated; assumed 4 x hidden"));
    CHECK_FALSE(any_contains(read_modified({}).assumptions, "not stated; assumed multi-head"));
  }
  SUBCASE("recompute said on without a granularity: selective or full, never none") {
    ValidationRun yes = read_modified({{"recompute", "yes"}});
    CHECK(yes.unknown.recompute_on);
    CHECK(yes.job->plan.recompute.granularity == RecomputeGranularity::selective);
    const Prediction p = predict_validation_run(yes);
    CHECK(p.iteration_time_s > 0);
    CHECK(yes.job->plan.recompute.granularity != RecomputeGranularity::none);
    CHECK(any_contains(yes.assumptions, "recompute granularity"));
    CHECK(read_modified({{"recompute", "activation checkpointing"}}).unknown.recompute_on);
    // Megatron's flags name their granularity: stated, so the completion keeps it.
    const ValidationRun flag = read_modified({{"recompute", "--recompute-activations"}});
    CHECK(flag.job->plan.recompute.granularity == RecomputeGranularity::selective);
    CHECK_FALSE(flag.unknown.recompute);
    CHECK_FALSE(flag.unknown.recompute_on);
    const ValidationRun old_flag = read_modified({{"recompute", "--checkpoint-activations"}});
    CHECK(old_flag.job->plan.recompute.granularity == RecomputeGranularity::full);
    CHECK_FALSE(old_flag.unknown.recompute);
    // DeepSpeed checkpoints whole layers.
    const ValidationRun ds = read_modified({{"recompute", "activation checkpointing"}, {"framework", "DeepSpeed"}});
    CHECK(ds.job->plan.recompute.granularity == RecomputeGranularity::full);
    // Words that do not say it is on leave it unknown, tried from none.
    const ValidationRun unsure = read_modified({{"recompute", "not stated"}});
    CHECK(unsure.unknown.recompute);
    CHECK_FALSE(unsure.unknown.recompute_on);
    // Selective modules in the field itself, as recipes list them.
    const ValidationRun modules = read_modified({{"recompute", "recompute_modules: [core_attn, mlp]"}});
    CHECK(modules.job->plan.recompute.granularity == RecomputeGranularity::selective);
    CHECK(modules.job->plan.recompute.modules == (kRecomputeCoreAttn | kRecomputeMlp));
    // Off in other words is stated, not unknown: the completion does not turn it on.
    for (const char* off : {"disabled", "False", "no activation checkpointing", "not used"}) {
      CAPTURE(off);
      const ValidationRun r = read_modified({{"recompute", off}});
      CHECK(r.job->plan.recompute.granularity == RecomputeGranularity::none);
      CHECK_FALSE(r.unknown.recompute);
    }
    // Megatron's own flags quoted in the field.
    const ValidationRun flags = read_modified({{"recompute", "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1"}});
    CHECK(flags.job->plan.recompute.granularity == RecomputeGranularity::full);
    CHECK(flags.job->plan.recompute.num_layers == -1);
    CHECK_FALSE(flags.unknown.recompute);
  }
  SUBCASE("recompute: a labelled value, Megatron's block method, a list of selective modules") {
    const ValidationRun labelled = read_modified({{"recompute", "activation checkpointing: full"}});
    CHECK(labelled.job->plan.recompute.granularity == RecomputeGranularity::full);
    CHECK_FALSE(labelled.unknown.recompute);
    const ValidationRun block = read_modified({{"recompute", "full --recompute-method block --recompute-num-layers 2"}});
    CHECK(block.job->plan.recompute.granularity == RecomputeGranularity::full);
    CHECK(block.job->plan.recompute.num_layers == 2);
    const ValidationRun uniform = read_modified({{"recompute", "full --recompute-method uniform --recompute-num-layers 1"}});
    CHECK(uniform.job->plan.recompute.num_layers < 0);  // every layer
    // The block method in prose, said; a transformer "block" is not the method.
    const ValidationRun prose = read_modified({{"recompute", "full recompute, block method, 4 layers"}});
    CHECK(prose.job->plan.recompute.num_layers == 4);
    CHECK(any_contains(prose.assumptions, "recompute read as Megatron's block method: the first 4 layers of each stage"));
    CHECK(read_modified({{"recompute", "full (every transformer block, 96 layers)"}}).job->plan.recompute.num_layers < 0);
    CHECK(read_modified({{"recompute", "selective (core_attn, mlp)"}}).job->plan.recompute.modules == (kRecomputeCoreAttn | kRecomputeMlp));
    // A remark in parentheses is not a module list: Megatron's default module, and the output says so.
    const ValidationRun remark = read_modified({{"recompute", "selective (Korthikanti et al. 2022)"}});
    CHECK(remark.job->plan.recompute.modules == kRecomputeCoreAttn);
    CHECK(any_contains(remark.assumptions, "selective recompute modules not named; Megatron's default, core_attn"));
    // Modules named without brackets, as identifiers or in a paper's words, are read, and said.
    const ValidationRun listed = read_modified({{"recompute", "selective: core_attn, mlp"}});
    CHECK(listed.job->plan.recompute.modules == (kRecomputeCoreAttn | kRecomputeMlp));
    CHECK(any_contains(listed.assumptions, "selective recompute modules read from the recompute text: core_attn, mlp"));
    CHECK(read_modified({{"recompute", "selective recompute of the RMSNorm and the MLP"}}).job->plan.recompute.modules ==
          (kRecomputeLayernorm | kRecomputeMlp));
    CHECK(read_modified({{"recompute", "selective (attention core only) + sequence parallelism"}}).job->plan.recompute.modules ==
          kRecomputeCoreAttn);
    // "no recompute override in the base config": not a statement of no recompute.
    CHECK(read_modified({{"recompute", "no recompute override in the workload base config"}}).unknown.recompute);
  }
  SUBCASE("FSDP in the optimizer field beside a Megatron framework is Megatron's sharding") {
    const ValidationRun r = read_modified({{"framework", "Megatron-Core"}, {"zero_or_dist_optimizer", "FSDP-style sharding (ZeRO-1/2-like)"}});
    CHECK(r.job->runtime.framework == Framework::megatron);
    CHECK(any_contains(r.assumptions, "read as Megatron's sharding (the distributed optimizer), not PyTorch FSDP"));
    CHECK(r.job->plan.distributed_optimizer);
    const ValidationRun plain = read_modified({{"framework", "PyTorch"}, {"zero_or_dist_optimizer", "FSDP FULL_SHARD"}});
    CHECK(plain.job->runtime.framework == Framework::fsdp);
    // torchtitan's op-level selective checkpointing is not Megatron's: costed as it, and said.
    const ValidationRun titan = read_modified({{"framework", "torchtitan"}, {"recompute", "selective"}});
    CHECK(titan.job->runtime.framework == Framework::fsdp);
    CHECK(any_contains(titan.assumptions, "selective recompute on an FSDP stack"));
    CHECK_FALSE(any_contains(read_modified({{"framework", "Megatron-Core"}, {"recompute", "selective"}}).assumptions,
                             "selective recompute on an FSDP stack"));
  }
  SUBCASE("the distributed optimizer in the words, flags and knobs sources use for it") {
    for (const char* text : {"--use-distributed-optimizer", "use_distributed_optimizer=True", "dist_opt", "sharded optimizer states",
                             "optimizer sharding across DP", "Megatron distributed optimizer (ZeRO-1 equivalent)"}) {
      CAPTURE(text);
      const ValidationRun r = read_modified({{"framework", "Megatron-Core"}, {"zero_or_dist_optimizer", text}});
      CHECK(r.job->plan.distributed_optimizer);
      CHECK_FALSE(r.unknown.optimizer_sharding);
    }
    CHECK_FALSE(read_modified({{"framework", "Megatron-Core"}, {"zero_or_dist_optimizer", "use_distributed_optimizer=False"}})
                    .job->plan.distributed_optimizer);
    CHECK_FALSE(read_modified({{"framework", "Megatron-Core"}, {"zero_or_dist_optimizer", "without distributed optimizer"}})
                    .job->plan.distributed_optimizer);
    // On a DeepSpeed stack the same sharding is ZeRO-1.
    const ValidationRun ds = read_modified({{"framework", "Megatron-DeepSpeed"}, {"zero_or_dist_optimizer", "sharded optimizer states"}});
    CHECK(ds.job->plan.zero_stage == 1);
    CHECK_FALSE(ds.job->plan.distributed_optimizer);
  }
  SUBCASE("a framework strata does not model is costed as Megatron-LM, and says so") {
    const ValidationRun jax = read_modified({{"framework", "MaxText (JAX)"}});
    CHECK(jax.job->runtime.framework == Framework::megatron);
    CHECK(any_contains(jax.assumptions, "framework \"MaxText (JAX)\" is none strata models: costed as Megatron-LM"));
    CHECK(any_contains(read_modified({{"framework", nullptr}}).assumptions, "framework not stated: costed as Megatron-LM"));
    CHECK_FALSE(any_contains(read_modified({{"framework", "NeMo 24.07"}}).assumptions, "costed as Megatron-LM"));
  }
  SUBCASE("an NGC container's YY.MM dates the stack") {
    const ValidationRun r = read_modified({{"framework", "Megatron-Bridge / NeMo 25.11 container"}, {"notes", ""}, {"source", "a table"}});
    CHECK(r.unknown.tp_comm_overlap);  // a 2025 Megatron-Core stack with tp > 1: completed like the other fields
    CHECK(r.job->runtime.flash_attention);
  }
}

TEST_CASE("load_validation_runs: NICs quoted per GPU or per NVL72 compute tray, and other spellings of a rate") {
  auto cluster = [](const nlohmann::json& changes) { return read_modified(changes).job->cluster; };
  const nlohmann::json nvl72 = {{"gpu_type", "GB200 (NVL72)"}, {"nvlink_domain", 72}, {"gpus_per_node", 72}, {"gpu_memory_gb", nullptr}};
  auto with = [&](const std::string& interconnect) {
    nlohmann::json c = nvl72;
    c["interconnect"] = interconnect;
    return cluster(c);
  };
  ClusterSpec c = with("NVLink5 72-GPU domain; 4x 400 Gb/s ConnectX-7 per compute tray (one per GPU)");
  CHECK(c.nics_per_node == 72);
  CHECK(c.nic_Gbps == 400);
  c = with("4x 400 Gb/s ConnectX-7 per compute tray");
  CHECK(c.nics_per_node == 72);  // 18 trays of 4 GPUs
  c = with("InfiniBand XDR 800 Gb/s per GPU");
  CHECK(c.nics_per_node == 72);
  CHECK(c.nic_Gbps == 800);
  c = cluster({{"interconnect", "4x 400Gbps RoCE per node"}});
  CHECK(c.nics_per_node == 4);
  CHECK(c.nic_Gbps == 400);
  // InfiniBand generations after a port count, and rates in Tb/s.
  c = cluster({{"interconnect", "4x HDR InfiniBand per node"}});
  CHECK(c.nics_per_node == 4);
  CHECK(c.nic_Gbps == 200);
  c = cluster({{"interconnect", "8x ConnectX-7 NDR400 per node"}});
  CHECK(c.nics_per_node == 8);
  CHECK(c.nic_Gbps == 400);
  c = cluster({{"interconnect", "3.2 Tbps per node RoCE"}});
  CHECK(c.nics_per_node == 1);
  CHECK(c.nic_Gbps == 3200);
  // A generation named without a count is no rate: the stated one is read.
  c = cluster({{"interconnect", "HDR InfiniBand, 2x 200 Gb/s HCAs per node"}});
  CHECK(c.nics_per_node == 2);
  CHECK(c.nic_Gbps == 200);
  // Ethernet port speeds, a per-node total with words between, a cloud instance's total.
  c = cluster({{"interconnect", "RoCEv2 8x400GbE"}});
  CHECK(c.nics_per_node == 8);
  CHECK(c.nic_Gbps == 400);
  c = cluster({{"interconnect", "NVLink 4 + 3.2 Tbps InfiniBand per node"}});
  CHECK(c.nics_per_node == 1);
  CHECK(c.nic_Gbps == 3200);
  c = cluster({{"interconnect", "8x 400 Gb/s NDR InfiniBand per VM"}});
  CHECK(c.nics_per_node == 8);
  // A rate with no count: above any single port the node's total, else each of the preset's NICs.
  ValidationRun r = read_modified({{"interconnect", "AWS p5.48xlarge, EFA v2 3200 Gbps"}});
  CHECK(r.job->cluster.nics_per_node == 1);
  CHECK(r.job->cluster.nic_Gbps == 3200);
  CHECK(any_contains(r.assumptions, "read as the node's total"));
  r = read_modified({{"interconnect", "TCP over 25GbE"}});
  CHECK(r.job->cluster.nic_Gbps == 25);
  CHECK(r.job->cluster.nics_per_node == 8);  // the DGX A100 preset's
  CHECK(any_contains(r.assumptions, "read as each NIC's rate, 8 NICs per node"));
  CHECK_FALSE(any_contains(r.assumptions, "inter-node network not stated"));
}

TEST_CASE("load_validation_runs: a GPU variant strata does not list is refused, never read as its SXM part") {
  const std::string path = test::data_file("validation_runs_small.json");
  for (const char* gpu : {"NVIDIA H100 NVL", "H200 NVL", "H100-SXM5-94GB", "GH200 (120GB)"}) {
    CAPTURE(gpu);
    nlohmann::json rec = load_json_file(path).at(0);
    rec["gpu_type"] = gpu;
    rec["gpu_memory_gb"] = nullptr;
    const auto runs = load_validation_runs(nlohmann::json::array({rec}), "runs.json", test::catalog());
    CHECK_FALSE(runs.at(0).job);
    CHECK(runs.at(0).error.find("/gpu_type") != std::string::npos);
  }
}
}

TEST_SUITE("formats") {
TEST_CASE("load_validation_runs: a DeepSeek Sparse Attention record reads its indexer and runs CP by all-gather") {
  // GLM-5 long-context (Megatron-Bridge's glm5 performance recipes run cp 32 with allgather): a
  // record that leaves the CP exchange out gets the one Megatron's DSA runs, and says so.
  nlohmann::json rec = deepseek_record("");
  rec["model_config"] = load_json_file(test::data_file("hf/glm-5.json"));
  rec["num_layers"] = 78;
  rec["hidden_size"] = 6144;
  rec["num_attention_heads"] = 64;
  rec["vocab_size"] = 154880;
  rec["seq_length"] = 131072;
  rec["num_gpus"] = 512;
  rec["tp"] = 1;
  rec["pp"] = 8;
  rec["cp"] = 32;
  rec["dp"] = 2;
  rec["ep"] = 32;
  rec["sequence_parallel"] = false;
  rec["global_batch_size"] = 64;
  rec["recompute"] = "full";
  auto runs = load_validation_runs(nlohmann::json::array({rec}), "runs.json", test::catalog());
  REQUIRE(runs.size() == 1);
  REQUIRE_MESSAGE(runs[0].job, runs[0].error);
  const Job& job = *runs[0].job;
  REQUIRE(job.model.dsa.has_value());
  CHECK(job.model.dsa->index_heads == 32);
  CHECK(job.runtime.cp_comm_type == CpCommType::allgather);
  CHECK(any_contains(runs[0].assumptions, "the only one Megatron-Core's DeepSeek Sparse Attention runs"));
  CHECK(check_plan(job).empty());
  rec["notes"] = "cp_comm_type=p2p";
  runs = load_validation_runs(nlohmann::json::array({rec}), "runs.json", test::catalog());
  REQUIRE(runs[0].job);
  CHECK(runs[0].job->runtime.cp_comm_type == CpCommType::p2p);
  CHECK(check_plan(*runs[0].job).find("--cp-comm-type allgather only") != std::string::npos);
}
}

TEST_SUITE("formats") {
TEST_CASE("load_validation_runs: Megatron-FSDP's hybrid sharding (HSDP) from a Megatron-Bridge record's knobs") {
  nlohmann::json rec = deepseek_record(
      "knobs {\"use_megatron_fsdp\": true, \"num_distributed_optimizer_instances\": 4, \"outer_dp_sharding_strategy\": \"optim\"}");
  rec["tp"] = 1;
  rec["pp"] = 1;
  rec["dp"] = 1024;
  rec["ep"] = 32;
  rec["sequence_parallel"] = false;
  auto runs = load_validation_runs(nlohmann::json::array({rec}), "runs.json", test::catalog());
  REQUIRE(runs.size() == 1);
  REQUIRE_MESSAGE(runs[0].job, runs[0].error);
  const ParallelPlan& p = runs[0].job->plan;
  CHECK(p.zero_stage == 3);
  CHECK(p.sharded_copies() == 4);
  CHECK(p.outer_optimizer_sharding);
  CHECK(any_contains(runs[0].assumptions, "hybrid sharding (HSDP): 4 replica groups, the optimizer state split across them"));
  rec["notes"] = "knobs {\"use_megatron_fsdp\": true, \"num_distributed_optimizer_instances\": 2.5}";
  runs = load_validation_runs(nlohmann::json::array({rec}), "runs.json", test::catalog());
  REQUIRE(runs.size() == 1);
  CHECK_FALSE(runs[0].job.has_value());
  CHECK(runs[0].error.find("num_distributed_optimizer_instances: expected a whole number") != std::string::npos);
}
}
