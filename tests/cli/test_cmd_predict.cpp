#include <doctest/doctest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "test_util.h"

using strata::test::run_strata;
using strata::test::TempFile;

namespace {

// The issue's command: GPT-3 175B on 1024 A100-80GB, the Megatron-LM SC21 plan.
const std::string kIssue =
    "predict --model gpt3-175b --gpu a100-80gb --gpus 1024 --global-batch 1536 --seq 2048 "
    "--tp 8 --pp 16 --dp 8 --mbs 1 --sp --recompute selective --dist-opt";

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_SUITE("cli") {
TEST_CASE("strata predict") {
  SUBCASE("the issue's command prints iteration, tokens, MFU, memory and bottleneck lines") {
    auto r = run_strata(kIssue);
    CHECK_MESSAGE(r.exit_code == 0, r.out);
    for (const char* line : {"\niteration ", "\ntokens/s/GPU ", "\nMFU ", "\nmemory ", "\nbottleneck "})
      CHECK_MESSAGE(has(r.out, line), line);
    CHECK(has(r.out, "plan      tp=8 pp=16 dp=8 sp mbs=1 recompute=selective dist-opt; 192 micro-batches per iteration"));
    CHECK(has(r.out, "cluster   1024 x A100-SXM4-80GB"));
  }
  SUBCASE("--sensitivity lists every default figure with its effect, in text and JSON") {
    auto r = run_strata(kIssue + " --sensitivity");
    CHECK_MESSAGE(r.exit_code == 0, r.out);
    CHECK(has(r.out, "sensitivity: iteration time when one figure is worse"));
    CHECK(has(r.out, "\n  gemm_efficiency "));
    auto j = run_strata(kIssue + " --sensitivity --json");
    REQUIRE_MESSAGE(j.exit_code == 0, j.out);
    nlohmann::json plan;
    REQUIRE_NOTHROW(plan = nlohmann::json::parse(j.out));
    REQUIRE(plan.at("sensitivity").is_array());
    CHECK(plan.at("sensitivity").size() >= 10);
    CHECK(plan.at("sensitivity")[0].at("figure") == "gemm_efficiency");
    CHECK(plan.at("sensitivity")[0].at("iteration_time_change").get<double>() > 0);
    // The plan file with its sensitivity still reads back as a plan.
    TempFile f("sensitivity_plan.json", j.out);
    CHECK_MESSAGE(run_strata("predict --plan '" + f.path() + "'").exit_code == 0, j.out);
  }
  SUBCASE("--make-vocab-size-divisible-by reaches the plan file and the Megatron flags") {
    auto r = run_strata(kIssue + " --make-vocab-size-divisible-by 1 --json");
    REQUIRE_MESSAGE(r.exit_code == 0, r.out);
    nlohmann::json plan = nlohmann::json::parse(r.out);
    CHECK(plan.at("runtime").at("make_vocab_size_divisible_by") == 1);
    const auto& args = plan.at("launch").at("megatron_args");
    auto it = std::find(args.begin(), args.end(), "--make-vocab-size-divisible-by");
    REQUIRE(it != args.end());
    CHECK(*(it + 1) == "1");
    auto bad = run_strata(kIssue + " --make-vocab-size-divisible-by 0");
    CHECK(bad.exit_code == 1);
    CHECK(has(bad.out, "--make-vocab-size-divisible-by"));
  }
  SUBCASE("--json prints the plan file with the prediction and the launch flags") {
    auto r = run_strata(kIssue + " --json");
    REQUIRE_MESSAGE(r.exit_code == 0, r.out);
    nlohmann::json j;
    REQUIRE_NOTHROW(j = nlohmann::json::parse(r.out));
    const auto& p = j.at("prediction");
    for (const char* key : {"iteration_time_s", "tokens_per_sec_per_gpu", "mfu", "memory_per_gpu_GiB"}) {
      CAPTURE(key);
      REQUIRE(p.contains(key));
      CHECK(p[key].get<double>() > 0);
    }
    CHECK(p["mfu"].get<double>() < 1);
    CHECK(p["feasible"] == true);
    REQUIRE(p["stages"].is_array());
    CHECK(p["stages"].size() == 16);
    CHECK(p["bottleneck"].contains("kind"));
    CHECK(p["breakdown"].contains("bubble_s"));
    CHECK(p["breakdown"].contains("imbalance_s"));
    CHECK(p["breakdown"]["stage"] == 0);
    // tokens/s/GPU x iteration time x GPUs = global batch x sequence.
    CHECK(p["tokens_per_sec_per_gpu"].get<double>() * p["iteration_time_s"].get<double>() * 1024 ==
          doctest::Approx(1536.0 * 2048).epsilon(1e-9));
    const auto args = j.at("launch").at("megatron_args").get<std::vector<std::string>>();
    CHECK(std::find(args.begin(), args.end(), "--tensor-model-parallel-size") != args.end());
    CHECK(std::find(args.begin(), args.end(), "--use-distributed-optimizer") != args.end());
    CHECK(j["parallel"]["dp"] == 8);
  }
  SUBCASE("--eager-module-loading: a 1.5 GiB CUDA context, kept by the plan file; not an override of a plan file") {
    auto lazy = run_strata(kIssue + " --json");
    TempFile out("eager.json", "");
    auto eager = run_strata(kIssue + " --eager-module-loading --json -o '" + out.path() + "'");
    REQUIRE(lazy.exit_code == 0);
    REQUIRE_MESSAGE(eager.exit_code == 0, eager.out);
    auto jl = nlohmann::json::parse(lazy.out), je = nlohmann::json::parse(eager.out);
    CHECK(je.at("runtime").at("lazy_module_loading") == false);
    CHECK_FALSE(jl.at("runtime").contains("lazy_module_loading"));
    CHECK(je["prediction"]["memory_per_gpu_GiB"].get<double>() - jl["prediction"]["memory_per_gpu_GiB"].get<double>() ==
          doctest::Approx(1573.0 / 1024 - 0.5));
    CHECK(je["prediction"]["iteration_time_s"] == jl["prediction"]["iteration_time_s"]);
    auto again = run_strata("predict --json --plan '" + out.path() + "'");
    REQUIRE_MESSAGE(again.exit_code == 0, again.out);
    CHECK(nlohmann::json::parse(again.out)["prediction"]["memory_per_gpu_GiB"] == je["prediction"]["memory_per_gpu_GiB"]);
    auto refused = run_strata("predict --plan '" + out.path() + "' --eager-module-loading");
    CHECK(refused.exit_code == 1);
    CHECK(has(refused.out, "--eager-module-loading"));
  }
  SUBCASE("-o writes the plan and --plan predicts it again, identically") {
    TempFile out("plan.json", "");
    auto a = run_strata(kIssue + " --json -o '" + out.path() + "'");
    REQUIRE(a.exit_code == 0);
    auto b = run_strata("predict --json --plan '" + out.path() + "'");
    REQUIRE_MESSAGE(b.exit_code == 0, b.out);
    auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
    CHECK(ja["prediction"]["iteration_time_s"] == jb["prediction"]["iteration_time_s"]);
    CHECK(ja["prediction"]["memory_per_gpu_GiB"] == jb["prediction"]["memory_per_gpu_GiB"]);
    CHECK(ja["launch"] == jb["launch"]);
  }
  SUBCASE("--megatron-args: a launch script predicts as the same job given by flags") {
    const std::string script = strata::test::data_file("megatron_gpt3_175b.sh");
    auto r = run_strata("predict --megatron-args " + script + " --cluster dgx-a100-hdr");
    CHECK_MESSAGE(r.exit_code == 0, r.out);
    CHECK(has(r.out, "plan      tp=8 pp=16 dp=8 mbs=1 recompute=none; 192 micro-batches per iteration"));
    CHECK(has(r.out, "note: 1024 GPUs from torchrun --nnodes 128 x --nproc-per-node 8"));
    // The script gives no --overlap-grad-reduce, so Megatron does not overlap the DP all-reduce, and no
    // --cross-entropy-loss-fusion, so its loss is the eager one.
    auto a = run_strata("predict --megatron-args " + script + " --cluster dgx-a100-hdr --json");
    auto b = run_strata("predict --model gpt3-175b --cluster dgx-a100-hdr --gpus 1024 --global-batch 1536 --seq 2048 "
                        "--tp 8 --pp 16 --mbs 1 --no-overlap-grad-reduce --no-overlap-param-gather --cross-entropy eager --json");
    REQUIRE_MESSAGE(a.exit_code == 0, a.out);
    REQUIRE_MESSAGE(b.exit_code == 0, b.out);
    const auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
    CHECK(ja["prediction"]["iteration_time_s"] == jb["prediction"]["iteration_time_s"]);
    CHECK(ja["prediction"]["memory_per_gpu_GiB"] == jb["prediction"]["memory_per_gpu_GiB"]);
    CHECK(ja["megatron_launch"]["notes"].size() == 1);
    // --gpus overrides torchrun's world (what-if on half the nodes), and says so.
    auto half = run_strata("predict --megatron-args " + script + " --cluster dgx-a100-hdr --gpus 512");
    CHECK(has(half.out, "tp=8 pp=16 dp=4"));
    CHECK(has(half.out, "note: --gpus 512 given; the launch's torchrun starts 1024"));
    // The plan JSON it writes reads back with --plan.
    TempFile out("launch_plan.json", "");
    auto w = run_strata("predict --megatron-args " + script + " --cluster dgx-a100-hdr -o " + out.path());
    REQUIRE_MESSAGE(w.exit_code == 0, w.out);
    auto back = run_strata("predict --plan " + out.path() + " --json");
    REQUIRE_MESSAGE(back.exit_code == 0, back.out);
    CHECK(nlohmann::json::parse(back.out)["prediction"]["iteration_time_s"] == ja["prediction"]["iteration_time_s"]);
  }
  SUBCASE("--megatron-args: bad launches and conflicting flags exit 1 naming the file or flag") {
    const std::string script = strata::test::data_file("megatron_gpt3_175b.sh");
    auto conflict = run_strata("predict --megatron-args " + script + " --cluster dgx-a100-hdr --tp 4");
    CHECK(conflict.exit_code == 1);
    CHECK(has(conflict.out, "--tp: is set by the launch in --megatron-args " + script + "; change it there"));
    // Megatron-LM has no flag for fp8 attention: a Megatron launch cannot have it.
    auto fp8_attention = run_strata("predict --megatron-args " + script + " --cluster dgx-a100-hdr --fp8-attention");
    CHECK(fp8_attention.exit_code == 1);
    CHECK(has(fp8_attention.out, "--fp8-attention: a Megatron-LM launch cannot run fp8 attention"));
    // A launch written for more GPUs than its torchrun line starts (Megatron-LM's examples/gpt3 on
    // one node): the error says how to predict it where it is meant to run.
    TempFile one_node("one_node.sh", "torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py --num-layers 4 --hidden-size 256 "
                                     "--num-attention-heads 8 --seq-length 128 --micro-batch-size 1 --vocab-size 128 --bf16 "
                                     "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 2");
    auto too_few = run_strata("predict --megatron-args " + one_node.path() + " --cluster dgx-h100");
    CHECK(too_few.exit_code == 1);
    CHECK(has(too_few.out, "--nnodes: 8 GPUs are not divisible by tensor x pipeline x context parallel = 16; give --gpus N, a "
                           "multiple of 16, for the cluster it is meant for"));
    CHECK(run_strata("predict --megatron-args " + one_node.path() + " --cluster dgx-h100 --gpus 16").exit_code == 0);
    auto bf16_attention = run_strata("predict --model llama3-8b --gpu h100 --gpus 8 --global-batch 64 --fp8-attention");
    CHECK(bf16_attention.exit_code == 1);
    CHECK(has(bf16_attention.out, "--fp8-attention: needs --precision fp8"));
    auto both = run_strata("predict --megatron-args " + script + " --plan x.json");
    CHECK(both.exit_code == 1);
    CHECK(has(both.out, "give either --plan or --megatron-args"));
    TempFile unresolved("launch.sh", "pretrain_gpt.py --num-layers $LAYERS --hidden-size 1024 --num-attention-heads 16");
    auto u = run_strata("predict --megatron-args " + unresolved.path() + " --gpu h100 --gpus 8");
    CHECK(u.exit_code == 1);
    CHECK(has(u.out, unresolved.path() + ": --num-layers: value \"$LAYERS\" is a shell expansion"));
    TempFile no_world("flags.txt", "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 "
                                   "--micro-batch-size 1 --vocab-size 1000 --bf16");
    auto nw = run_strata("predict --megatron-args " + no_world.path() + " --gpu h100");
    CHECK(nw.exit_code == 1);
    CHECK(has(nw.out, "--gpus: give --gpus: the launch in " + no_world.path() + " does not say how many GPUs run it"));
    auto indivisible = run_strata("predict --megatron-args " + no_world.path() + " --gpu h100 --gpus 8 --global-batch 3");
    CHECK(has(indivisible.out, "--global-batch: is set by the launch"));
    auto piped = run_strata("predict --megatron-args - --gpu h100 --gpus 8 --json < " + no_world.path());
    CHECK_MESSAGE(piped.exit_code == 0, piped.out);
    CHECK(has(piped.out, "\"megatron_launch\""));
    auto missing = run_strata("predict --megatron-args /nonexistent/launch.sh --gpu h100 --gpus 8");
    CHECK(missing.exit_code == 1);
    CHECK(has(missing.out, "--megatron-args: cannot read \"/nonexistent/launch.sh\""));
  }
  SUBCASE("an infeasible plan exits 2 with the reason") {
    auto r = run_strata("predict --model gpt3-175b --gpu a100-80gb --gpus 8 --global-batch 8 --tp 8 --pp 1");
    CHECK(r.exit_code == 2);
    CHECK(has(r.out, "INFEASIBLE: stage 0 needs"));
    CHECK(has(r.out, "strata: plan is infeasible:"));
    CHECK(has(r.out, "GiB"));
  }
  SUBCASE("an illegal plan exits 2 with the reason") {
    // tp = 3 divides the 96 heads of GPT-3 but not the 2048-token sequence that --sp splits.
    auto r = run_strata("predict --model gpt3-175b --gpu a100-80gb --gpus 384 --global-batch 1536 --seq 2048 "
                        "--tp 3 --pp 16 --sp");
    CHECK(r.exit_code == 2);
    CHECK(has(r.out, "divisible by tp=3"));
    auto r5 = run_strata("predict --model gpt3-175b --gpu a100-80gb --gpus 640 --global-batch 1536 --tp 5 --pp 16");
    CHECK(r5.exit_code == 2);
    CHECK(has(r5.out, "tp=5 does not divide the 96 attention heads"));
  }
  SUBCASE("--moe-forward-host-ms: a measured host time per MoE layer forward reaches the breakdown and the plan file") {
    const std::string moe =
        "predict --model qwen3-30b-a3b --gpu h100-sxm --gpus 16 --global-batch 1024 --seq 4096 --dp 16 --ep 16 --dist-opt "
        "--precision fp8 --moe-load-imbalance 1 --moe-grouped-gemm --moe-token-dedup";
    auto plain = run_strata(moe);
    REQUIRE_MESSAGE(plain.exit_code == 0, plain.out);
    // By default the measured Megatron-Core host time, of which a grouped GEMM counts the router and
    // dispatcher part.
    CHECK(has(plain.out, "MoE: the host issues each MoE block in 3.74 ms forward and 2.02 ms backward (router and dispatcher only"));
    CHECK_FALSE(has(plain.out, "not modelled"));
    auto host = run_strata(moe + " --moe-forward-host-ms 6 --json");
    REQUIRE_MESSAGE(host.exit_code == 0, host.out);
    const auto j = nlohmann::json::parse(host.out);
    CHECK(j["calibration"]["host"]["moe_forward_s"].get<double>() == doctest::Approx(0.006));
    CHECK(j["prediction"]["breakdown"]["host_s"].get<double>() > 0);
    const auto& notes = j["prediction"]["notes"];
    CHECK(std::any_of(notes.begin(), notes.end(), [](const auto& n) {
      return has(n.template get<std::string>(), "the host issues each MoE block in 6.00 ms forward (calibration host.moe_forward_s");
    }));
    // A plan file keeps its plan; the host time adjusts its prediction like a calibration does.
    TempFile plan("host_plan.json", "");
    REQUIRE(run_strata(moe + " -o '" + plan.path() + "'").exit_code == 0);
    auto again = run_strata("predict --plan '" + plan.path() + "' --moe-forward-host-ms 6 --json");
    REQUIRE_MESSAGE(again.exit_code == 0, again.out);
    CHECK(nlohmann::json::parse(again.out)["prediction"]["breakdown"]["host_s"] == j["prediction"]["breakdown"]["host_s"]);
    auto bad = run_strata(moe + " --moe-forward-host-ms 5000");
    CHECK(bad.exit_code == 1);
    CHECK(has(bad.out, "--moe-forward-host-ms: expected 0..1000 milliseconds per MoE layer forward"));
  }
  SUBCASE("bad input exits 1 with a message naming the flag or file and field") {
    auto r = run_strata("predict --model gtp3-175b --gpu a100-80gb --gpus 1024 --global-batch 1536");
    CHECK(r.exit_code == 1);
    CHECK(has(r.out, "strata: error: command line: --model: unknown model \"gtp3-175b\""));
    CHECK(has(r.out, "did you mean \"gpt3-175b\"?"));

    r = run_strata("predict --model gpt3-175b --gpu a100-80gb --gpus 1000 --global-batch 1536 --tp 8 --pp 16 --dp 8");
    CHECK(r.exit_code == 1);
    CHECK(has(r.out, "--gpus: tp*pp*dp*cp = 1024 but --gpus is 1000"));

    r = run_strata("predict --model gpt3-175b --gpu a100-80gb --gpus 1024 --tp 8 --pp 16");
    CHECK(r.exit_code == 1);
    CHECK(has(r.out, "--global-batch"));

    r = run_strata("predict --model gpt3-175b --gpu a100-80gb --gpus 32 --global-batch 64 --tp 8 --pp 4 --stage-layers 24,x,24,24");
    CHECK(r.exit_code == 1);
    CHECK(has(r.out, "--stage-layers: expected comma-separated positive layer counts, found \"x\""));

    r = run_strata("predict --plan /nonexistent/plan.json");
    CHECK(r.exit_code == 1);
    CHECK(has(r.out, "/nonexistent/plan.json: cannot open the file"));

    r = run_strata("predict --model gpt3-175b --gpu tpu-v9 --gpus 8 --global-batch 8");
    CHECK(r.exit_code == 1);
    CHECK(has(r.out, "--gpu: unknown gpu \"tpu-v9\""));

    r = run_strata("predict --model gpt3-175b --gpu a100-80gb --gpus 8 --global-batch 8 --tp eight");
    CHECK(r.exit_code == 1);
    CHECK(has(r.out, "--tp"));
  }
  SUBCASE("a plan JSON with a wrong type exits 1 naming the JSON path") {
    auto a = run_strata(kIssue + " --json");
    REQUIRE(a.exit_code == 0);
    auto j = nlohmann::json::parse(a.out);
    j["parallel"]["tp"] = "8";
    TempFile bad("bad_plan.json", j.dump(2));
    auto r = run_strata("predict --plan '" + bad.path() + "'");
    CHECK(r.exit_code == 1);
    CHECK(has(r.out, bad.path() + ": /parallel/tp: expected an integer, found a string"));
    TempFile truncated("truncated_plan.json", a.out.substr(0, a.out.size() / 2));
    r = run_strata("predict --plan '" + truncated.path() + "'");
    CHECK(r.exit_code == 1);
    CHECK(has(r.out, truncated.path() + ": not valid JSON"));
  }
  SUBCASE("no subcommand or an unknown flag is a usage error") {
    CHECK(run_strata("").exit_code != 0);
    CHECK(run_strata("predict --bogus-flag").exit_code == 1);
  }
}
}
