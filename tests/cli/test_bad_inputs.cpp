// Bad input end to end: every loader and flag rejects it with exit code 1 and a message naming the
// file (or flag), the JSON path and what was expected; a valid request with no feasible plan exits
// 2; the same inputs give byte-identical JSON. Input files live in tests/data/bad/.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "test_util.h"

namespace {

struct BadInput {
  const char* name;
  std::string args;      // strata arguments; $BAD is tests/data/bad
  int exit_code;
  const char* fragment;  // must appear in the output
};

const std::string kBad = std::string(STRATA_SOURCE_DIR) + "/tests/data/bad";
const std::string kWorkload = "--gpu a100-80gb --gpus 8 --global-batch 16";

std::string expand(std::string args) {
  for (std::size_t pos; (pos = args.find("$BAD")) != std::string::npos;) args.replace(pos, 4, kBad);
  return args;
}

void check_cases(const std::vector<BadInput>& cases) {
  for (const auto& c : cases) {
    SUBCASE(c.name) {
      const auto r = strata::test::run_strata(expand(c.args));
      INFO("strata " << c.args << "\n" << r.out);
      CHECK(r.exit_code == c.exit_code);
      CHECK(r.out.find(c.fragment) != std::string::npos);
      // Never a crash report, a NaN or an uncaught exception.
      CHECK(r.out.find("internal error") == std::string::npos);
      CHECK(r.out.find(" nan") == std::string::npos);
    }
  }
}

std::string predict_model(const char* file) { return std::string("predict --model $BAD/") + file + " " + kWorkload; }

}  // namespace

TEST_SUITE("cli") {
TEST_CASE("bad model files exit 1 naming the file, the JSON path and what was expected") {
  check_cases({
      {"empty file", predict_model("model_empty.json"), 1, "model_empty.json: the file is empty"},
      {"whitespace only", predict_model("model_whitespace.json"), 1, "the file is empty"},
      {"truncated", predict_model("model_truncated.json"), 1, "unexpected end of input"},
      {"not UTF-8", predict_model("model_not_utf8.json"), 1, "ill-formed UTF-8"},
      {"not an object", predict_model("model_not_object.json"), 1, "/: expected a JSON object, found an array"},
      {"missing key", predict_model("model_missing_hidden.json"), 1, "/hidden_size: missing required key"},
      {"null counts as missing", predict_model("model_null_name.json"), 1, "/name: missing required key"},
      {"wrong type", predict_model("model_hidden_string.json"), 1, "/hidden_size: expected an integer, found a string"},
      {"unknown key with a suggestion", predict_model("model_unknown_key.json"), 1, "/hiden_size: unknown key (did you mean \"hidden_size\"?)"},
      {"negative size", predict_model("model_negative_layers.json"), 1, "/num_layers: expected an integer in [1, 100000], found -4"},
      {"zero heads", predict_model("model_zero_heads.json"), 1, "/num_attention_heads: expected an integer in [1,"},
      {"fractional count", predict_model("model_fractional_layers.json"), 1, "/num_layers: expected an integer, found 2.5"},
      {"1e999 overflows to inf", predict_model("model_inf_hidden.json"), 1, "number overflow parsing '1e999'"},
      {"10^30 layers", predict_model("model_1e30_layers.json"), 1, "/num_layers: expected an integer in [1, 100000], found 1e+30"},
      {"integer beyond 64 bits", predict_model("model_huge_vocab.json"), 1, "/vocab_size: expected an integer in"},
      {"hidden not divisible by heads", predict_model("model_heads_not_divisible.json"), 1, "/hidden_size: hidden_size 1000 is not divisible by num_attention_heads 16"},
      {"query groups do not divide heads", predict_model("model_bad_groups.json"), 1, "/num_query_groups: num_query_groups 5 must divide"},
      {"unknown activation", predict_model("model_bad_activation.json"), 1, "/activation: expected \"gelu\", \"swiglu\" or \"squared_relu\", found \"relu\""},
      {"MoE top_k above experts", predict_model("model_moe_top_k.json"), 1, "/moe/top_k: top_k must be between 1 and num_experts"},
      {"HF config without a layer count", predict_model("hf_missing_layers.json"), 1, "/num_hidden_layers: missing the layer count"},
      {"HF config with 0 KV heads", predict_model("hf_zero_kv_heads.json"), 1, "/num_key_value_heads: expected an integer in [1,"},
      {"missing file", "predict --model $BAD/no_such_file.json " + kWorkload, 1, "no_such_file.json: no such file (given to --model)"},
      {"unknown model name", "predict --model gtp3-175b " + kWorkload, 1, "unknown model \"gtp3-175b\" (did you mean \"gpt3-175b\"?)"},
  });
}

TEST_CASE("bad GPU, cluster and calibration files exit 1") {
  const std::string m = "predict --model gpt3-1.3b --gpus 8 --global-batch 16 ";
  check_cases({
      {"negative memory", m + "--gpu $BAD/gpu_negative_memory.json", 1, "/memory_GiB: expected a positive number no larger than 100000, found -80"},
      {"zero bandwidth", m + "--gpu $BAD/gpu_zero_hbm.json", 1, "/hbm_GBps: expected a positive number"},
      {"denormal bandwidth", m + "--gpu $BAD/gpu_denormal_hbm.json", 1, "/hbm_GBps: expected a positive number of at least 1e-06"},
      {"unknown GPU key", m + "--gpu $BAD/gpu_unknown_key.json", 1, "/fp16_tflop: unknown key (did you mean \"fp16_tflops\"?)"},
      {"GPU count as a string", m + "--gpu $BAD/gpu_sm_count_string.json", 1, "/sm_count: expected an integer, found a string"},
      {"0 GPUs per node", m + "--cluster $BAD/cluster_zero_gpus_per_node.json", 1, "/gpus_per_node: expected an integer in [1, 100000], found 0"},
      {"cluster without a GPU", m + "--cluster $BAD/cluster_missing_gpu.json", 1, "cluster_missing_gpu.json: /gpu: missing required key"},
      {"cluster with an unknown GPU", m + "--cluster $BAD/cluster_unknown_gpu.json", 1, "cluster_unknown_gpu.json: /gpu: unknown gpu \"tpu-v5e\""},
      {"negative bandwidth", m + "--cluster $BAD/cluster_negative_bandwidth.json", 1, "/intra_node_GBps: expected a positive number"},
      {"efficiency above 1", m + "--gpu a100-80gb --calibration $BAD/calibration_efficiency_above_1.json", 1, "/kernel/gemm_efficiency: expected a positive number no larger than 1, found 1.5"},
      {"unknown calibration section", m + "--gpu a100-80gb --calibration $BAD/calibration_unknown_section.json", 1, "/kernal: unknown key (did you mean \"kernel\"?)"},
      {"interference above 1", m + "--gpu a100-80gb --calibration $BAD/calibration_overlap.json", 1, "/kernel/overlap_interference: expected 0..1"},
      {"calibration of another GPU", m + "--gpu a100-80gb --calibration $BAD/calibration_other_gpu.json", 1,
       "calibration_other_gpu.json: /gpu: calibrated on H100-SXM5-80GB, but the job runs on A100-SXM4-80GB"},
      {"calibration of an unknown GPU", m + "--gpu a100-80gb --calibration $BAD/calibration_unknown_gpu.json", 1,
       "calibration_unknown_gpu.json: /gpu: unknown gpu \"tpu-v5e\""},
  });
}

TEST_CASE("bad plan files exit 1") {
  check_cases({
      {"schema version", "predict --plan $BAD/plan_schema_99.json", 1, "/schema_version: this strata reads plan schema version 1"},
      {"missing section", "predict --plan $BAD/plan_missing_parallel.json", 1, "/parallel: missing required key"},
      {"tp 0", "predict --plan $BAD/plan_tp_zero.json", 1, "/parallel/tp: expected an integer in [1, 1000000], found 0"},
      {"GPU count overflows int", "predict --plan $BAD/plan_world_overflow.json", 1, "/parallel: tp*pp*dp*cp = 1000000000000000000 GPUs"},
      {"batch not divisible", "predict --plan $BAD/plan_batch_not_divisible.json", 1, "/training/global_batch_size: global batch 129 is not divisible by dp*micro_batch_size"},
      {"stage count differs from pp", "predict --plan $BAD/plan_stages_mismatch.json", 1, "/stages: 2 stage layer counts for pp=4"},
      {"num_gpus inconsistent", "predict --plan $BAD/plan_num_gpus_wrong.json", 1, "/num_gpus: does not equal tp*pp*dp*cp = 64"},
      {"unknown precision", "predict --plan $BAD/plan_bad_precision.json", 1, "/training/precision: expected fp32, tf32, fp16, bf16 or fp8"},
      {"embedded model is invalid", "predict --plan $BAD/plan_model_heads.json", 1, "plan_model_heads.json: /model/hidden_size: hidden_size 8001 is not divisible"},
      {"too many virtual stages", "predict --plan $BAD/plan_vpp_huge.json", 1, "/parallel/vpp: pp*vpp = 4000000 virtual pipeline stages"},
      {"negative memory reserve", "predict --plan $BAD/plan_memory_reserve.json", 1, "/runtime/memory_reserve_GiB: expected 0 <= GiB"},
      {"not a file", "predict --plan " + std::string(STRATA_SOURCE_DIR) + "/tests", 1, "/tests: is a directory; expected a regular file"},
      {"missing file", "predict --plan $BAD/no_such_plan.json", 1, "no_such_plan.json: cannot open the file for reading"},
  });
}

TEST_CASE("bad validation-run files exit 1, a bad record gets an error of its own") {
  check_cases({
      {"not an array", "validate --json --runs $BAD/runs_not_array.json", 1, "runs_not_array.json: /: expected a JSON array of run records"},
      {"empty file", "validate --json --runs $BAD/runs_empty.json", 1, "runs_empty.json: the file is empty"},
      {"record without num_layers", "validate --json --runs $BAD/runs_missing_layers.json", 0, "runs_missing_layers.json [0]: /num_layers: missing required key"},
      {"absurd NIC count in free text", "validate --json --runs $BAD/runs_bad_interconnect.json", 0, "[0]: /interconnect: the value 99999999999"},
      {"negative measurement", "validate --json --runs $BAD/runs_negative_measurement.json", 0, "[0]: /meas_tokens_per_sec_per_gpu: expected a positive number or null, found -5"},
      {"record not an object", "validate --json --runs $BAD/runs_not_object.json", 0, "runs_not_object.json [0]: expected a JSON object (one run record), found number"},
  });
}

TEST_CASE("bad flags exit 1 naming the flag, infeasible plans exit 2") {
  const std::string m = "predict --model gpt3-1.3b --gpu a100-80gb ";
  check_cases({
      {"0 GPUs", m + "--gpus 0 --global-batch 16", 1, "--gpus: expected 1..10,000,000 GPUs"},
      {"no --gpus", m + "--global-batch 16", 1, "--gpus: give --gpus (or --dp)"},
      {"no --model", "predict --gpu a100-80gb --gpus 8 --global-batch 16", 1, "--model: give --model NAME"},
      {"batch not divisible by dp", m + "--gpus 8 --global-batch 12", 1, "--global-batch: global batch 12 is not divisible by dp*micro_batch_size = 8*1"},
      {"batch too large to simulate", m + "--gpus 1 --global-batch 536870912", 1, "--global-batch: 536870912 micro-batches"},
      {"tp 0", m + "--gpus 8 --global-batch 16 --tp 0", 1, "--tp: expected a positive integer"},
      {"tp not a number", m + "--gpus 8 --global-batch 16 --tp eight", 1, "--tp"},
      {"GPU count overflows int", m + "--global-batch 16 --tp 1000000 --pp 1000000 --dp 1000", 1, "--gpus: tp*pp*dp*cp = 1000000000000000 GPUs"},
      {"NaN memory reserve", m + "--gpus 8 --global-batch 16 --memory-reserve nan", 1, "--memory-reserve: expected 0 <= GiB"},
      {"NaN step overhead", m + "--gpus 8 --global-batch 16 --step-overhead nan", 1, "--step-overhead: expected 0..3600 seconds"},
      {"unknown precision", m + "--gpus 8 --global-batch 16 --precision fp12", 1, "--precision: expected fp32, tf32, fp16, bf16 or fp8, found \"fp12\""},
      {"stage layers not numbers", m + "--gpus 8 --global-batch 16 --pp 2 --dp 4 --stage-layers 12,x", 1, "--stage-layers: expected comma-separated positive layer counts, found \"x\""},
      {"stage layers beyond int", m + "--gpus 8 --global-batch 16 --pp 2 --dp 4 --stage-layers 2147483647,2147483647", 1, "--stage-layers"},
      {"stage layers do not add up", m + "--gpus 8 --global-batch 16 --pp 2 --dp 4 --stage-layers 12,13", 1, "--stage-layers: stage layers add up to 25, the model has 24 layers"},
      {"ZeRO stage 5", m + "--gpus 8 --global-batch 16 --zero 5", 1, "--zero: expected 0, 1, 2 or 3"},
      {"unknown flag", m + "--gpus 8 --global-batch 16 --bogus", 1, "--bogus"},
      {"unknown list kind", "list widgets", 1, "list: expected models, gpus or clusters"},
      {"tp does not divide the heads (infeasible)", m + "--gpus 24 --global-batch 16 --tp 3", 2, "tp=3 does not divide the 16 attention heads"},
      {"does not fit in memory (infeasible)", "predict --model gpt3-175b --gpu a100-80gb --gpus 8 --global-batch 8 --tp 8", 2, "GiB > "},
  });
}

TEST_CASE("the same inputs give byte-identical JSON across runs and thread counts") {
  const std::string predict = "predict --model llama3-70b --cluster dgx-h100-ndr --gpus 64 --global-batch 128 --tp 8 --pp 4 --vpp 2 --sp --json";
  std::string runs = std::string(STRATA_SOURCE_DIR) + "/../shared/validation/public_runs.json";
  if (!std::filesystem::exists(runs)) runs = kBad + "/runs_ok.json";
  for (const std::string& args : {predict, "validate --json --runs " + runs}) {
    INFO("strata " << args);
    setenv("OMP_NUM_THREADS", "1", 1);
    const auto a = strata::test::run_strata(args);
    const auto b = strata::test::run_strata(args);
    setenv("OMP_NUM_THREADS", "2", 1);
    const auto c = strata::test::run_strata(args);
    unsetenv("OMP_NUM_THREADS");
    REQUIRE(a.exit_code == 0);
    CHECK(a.out.size() > 100);
    CHECK(a.out == b.out);
    CHECK(a.out == c.out);
  }
}
}
