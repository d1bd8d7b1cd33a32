#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "search/searcher.h"
#include "test_util.h"

using namespace strata;

namespace {

const std::string kGpt3 = "--model gpt3-175b --gpu a100-80gb --gpus 1024 --global-batch 1536 --seq 2048 --quiet";

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("strata-test-" + std::to_string(getpid()) + "-" + name)).string();
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_SUITE("cli") {
TEST_CASE("strata plan: prints the plan, its numbers, why it wins and the Megatron-LM flags") {
  const auto r = test::run_strata("plan " + kGpt3);
  REQUIRE_MESSAGE(r.exit_code == 0, r.out);  // a crash shows its report
  for (const char* part : {"search    bottleneck (seed 0)", "plan      tp=", "iteration ", "tokens/s/GPU ", "MFU ", "memory    ",
                           "why it wins:", "it ends on \"", "runner-up 1:", "runner-up 3:", "Megatron-LM flags:",
                           "--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--micro-batch-size",
                           "--global-batch-size 1536", "--use-distributed-optimizer"}) {
    INFO(std::string(part));
    CHECK(r.out.find(part) != std::string::npos);
  }
  // Whether the ranking holds with one default figure 10% off, either way.
  CHECK((r.out.find("10% higher or lower") != std::string::npos || r.out.find("with one figure 10% off, a runner-up wins") != std::string::npos));
}

TEST_CASE("strata plan -o, then strata predict --plan: the same prediction") {
  const std::string path = temp_path("plan.json");
  const auto r = test::run_strata("plan " + kGpt3 + " -o '" + path + "'");
  REQUIRE_MESSAGE(r.exit_code == 0, r.out);  // a crash shows its report
  const nlohmann::json plan = read_json(path);
  CHECK(plan["search"]["algorithm"] == "bottleneck");
  CHECK(plan["search"]["seed"] == 0);
  CHECK(plan["search"]["plans_evaluated"].get<int>() > 0);
  CHECK(plan["search"]["runners_up"].size() == 3);
  CHECK_FALSE(plan["search"].contains("seconds"));  // timings go to stderr: the JSON is byte-identical across runs
  CHECK(plan["search"]["ranking_flips"].is_array());
  CHECK(plan["launch"]["megatron_args"].size() > 10);
  const auto p = test::run_strata("predict --json --plan '" + path + "'");
  REQUIRE(p.exit_code == 0);
  const nlohmann::json again = nlohmann::json::parse(p.out);
  CHECK(again["prediction"] == plan["prediction"]);
  CHECK(again["parallel"] == plan["parallel"]);
  CHECK(again["stages"] == plan["stages"]);
  CHECK(again["launch"] == plan["launch"]);
  std::filesystem::remove(path);
}

TEST_CASE("strata plan --json: byte-identical for the same seed whatever the thread count") {
  auto run = [](int threads, const std::string& extra) {
    // The seed drives the bottleneck search's kicks; the exhaustive search has none and refuses it.
    const std::string seed = extra.find("exhaustive") == std::string::npos ? "--seed 3 " : "";
    const auto r = test::run_strata("plan --json " + seed + "--threads " + std::to_string(threads) + " " + extra);
    REQUIRE_MESSAGE(r.exit_code == 0, r.out);  // a crash shows its report
    return r.out;  // byte-identical: no wall-clock time in the JSON
  };
  // --quiet: a search slower than a second (sanitizers, a loaded machine) prints progress on stderr.
  for (const std::string& workload : {kGpt3, std::string("--model llama3-70b --gpu h100 --gpus 512 --global-batch 1024 --seq 8192 --quiet")}) {
    INFO(workload);
    CHECK(run(1, workload) == run(2, workload));
    CHECK(run(1, workload + " --search exhaustive") == run(2, workload + " --search exhaustive"));
  }
}

TEST_CASE("strata plan: no plan fits: a clear message and exit code 2") {
  const auto r = test::run_strata("plan --model llama3.1-405b --gpu a100-80gb --gpus 8 --global-batch 16 --seq 8192 --quiet");
  CHECK(r.exit_code == 2);
  CHECK(r.out.find("strata: no feasible plan: no plan fits in the 78.0 GiB per GPU available on A100-SXM4-80GB: the leanest (") != std::string::npos);
  CHECK(r.out.find(" GiB per GPU; ") != std::string::npos);
  CHECK(r.out.find(" GPUs of this type would fit a plan (try --gpus ") != std::string::npos);
}

TEST_CASE("strata plan --allow-offload: a plan that fits only with activations on the host, suggested where it may help") {
  // Llama 3 8B at 96k tokens without recompute: 84 GiB at best on 8 H100s, most of it activations.
  const std::string job = "plan --model llama3-8b --gpu h100 --gpus 8 --global-batch 8 --seq 98304 --recompute none --quiet";
  auto r = test::run_strata(job);
  CHECK(r.exit_code == 2);
  CHECK(r.out.find("note: --allow-offload lets the search move activations to host memory") != std::string::npos);
  const std::string out = temp_path("offload-plan.json");
  r = test::run_strata(job + " --allow-offload -o " + out);
  REQUIRE_MESSAGE(r.exit_code == 0, r.out);
  const nlohmann::json plan = read_json(out);
  std::filesystem::remove(out);
  CHECK(plan["search"]["allow_offload"] == true);
  CHECK_FALSE(plan["activation_offload"]["modules"].empty());
  CHECK(plan["launch"]["megatron_args"].dump().find("--fine-grained-activation-offloading") != std::string::npos);
  // Weights and optimizer state decide the fit here: offloading activations cannot help, so no hint.
  r = test::run_strata("plan --model llama3.1-405b --gpu h100 --gpus 64 --global-batch 256 --seq 8192 --quiet");
  CHECK(r.exit_code == 2);
  CHECK(r.out.find("--allow-offload") == std::string::npos);
  r = test::run_strata(job + " --allow-offload --search exhaustive");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("--allow-offload: applies to the bottleneck search") != std::string::npos);
}

TEST_CASE("strata plan: constraints no plan can meet: which rule they break, exit code 2") {
  const auto r = test::run_strata("plan " + kGpt3 + " --tp 16");
  CHECK(r.exit_code == 2);
  CHECK(r.out.find("no legal parallel plan exists for 1024 GPUs with these constraints (e.g. tp=16 spans nodes of 8 GPUs "
                   "(--allow-tp-across-nodes allows it))") != std::string::npos);
}

TEST_CASE("strata plan: bad input exits 1 naming the flag") {
  auto r = test::run_strata("plan --model gpt3-175b --gpu a100-80gb --gpus 1024 --global-batch 1536 --search genetic");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("--search: expected bottleneck or exhaustive, found \"genetic\"") != std::string::npos);
  r = test::run_strata("plan --model gpt3-175b --gpu a100-80gb --global-batch 1536");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("--gpus") != std::string::npos);
  r = test::run_strata("plan --model gpt3-175b --gpu a100-80gb --gpus 64 --global-batch 64 --recompute sometimes");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("--recompute: expected none, selective or full") != std::string::npos);
}

TEST_CASE("strata plan --megatron-args: searches the launch's workload and compares the launch's own plan") {
  const std::string script = test::data_file("megatron_gpt3_175b.sh");
  const auto r = test::run_strata("plan --megatron-args " + script + " --cluster dgx-a100-hdr --quiet");
  CHECK_MESSAGE(r.exit_code == 0, r.out);
  CHECK(r.out.find("your launch (" + script + "): tp=8 pp=16 dp=8 mbs=1 recompute=none") != std::string::npos);
  const auto j = test::run_strata("plan --megatron-args " + script + " --cluster dgx-a100-hdr --quiet --json");
  REQUIRE_MESSAGE(j.exit_code == 0, j.out);
  const auto plan = nlohmann::json::parse(j.out);
  const auto& launch = plan["search"]["megatron_launch"];
  CHECK(launch["feasible"] == true);
  CHECK(plan["num_gpus"] == 1024);  // torchrun's world, as --gpus was not given
  // The search's winner is at least as fast as the launch, up to the tie margin.
  CHECK(launch["speedup_of_best"].get<double>() >= 1 - kTimeTie);
  CHECK(launch["iteration_time_s"].get<double>() ==
        doctest::Approx(launch["speedup_of_best"].get<double>() * plan["prediction"]["iteration_time_s"].get<double>()));
  // Its DP all-reduce, after stage 0's last backward, is exposed with or without the overlap
  // flag: nothing to suggest.
  CHECK(launch["flag_speedups"].empty());
}

TEST_CASE("strata plan --megatron-args: a launch that offloads activations lets the search offload too") {
  const std::string launch = temp_path("offload-launch.txt");
  const std::string flags =
      "--num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 --group-query-attention "
      "--num-query-groups 8 --swiglu --normalization RMSNorm --disable-bias-linear --untie-embeddings-and-output-weights "
      "--position-embedding-type rope --vocab-size 128256 --micro-batch-size 1 --global-batch-size 64 --seq-length 8192 "
      "--max-position-embeddings 8192 --tensor-model-parallel-size 2 --sequence-parallel --bf16 --use-distributed-optimizer ";
  auto allowed = [&](const std::string& extra) {
    std::ofstream(launch) << flags << extra << "\n";
    const auto r = test::run_strata("plan --megatron-args " + launch + " --gpus 8 --cluster dgx-h100-ndr --quiet --json");
    REQUIRE_MESSAGE(r.exit_code == 0, r.out);
    return nlohmann::json::parse(r.out)["search"]["allow_offload"].get<bool>();
  };
  CHECK(allowed("--fine-grained-activation-offloading --offload-modules core_attn attn_proj"));
  CHECK_FALSE(allowed(""));
  std::filesystem::remove(launch);
}

TEST_CASE("strata plan --megatron-args: on a GPU count the launch's own plan does not divide, still plans its workload") {
  const std::string script = test::data_file("megatron_gpt3_175b.sh");
  const auto r = test::run_strata("plan --megatron-args " + script + " --cluster dgx-a100-hdr --gpus 64 --quiet --json");
  REQUIRE_MESSAGE(r.exit_code == 0, r.out);
  const auto plan = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  CHECK(plan["num_gpus"] == 64);
  CHECK(plan["training"]["global_batch_size"] == 1536);
  CHECK(plan["search"]["megatron_launch"]["feasible"] == false);
  CHECK(r.out.find("note: the launch's own plan does not run on these GPUs: command line: --gpus: 64 GPUs are not divisible by "
                   "tensor x pipeline x context parallel = 128") != std::string::npos);
}

TEST_CASE("strata plan --megatron-args: the overlaps a launch leaves off, and what each would bring") {
  // Data parallelism over 64 GPUs with the distributed optimizer, no overlap flags.
  const test::TempFile script("dp_launch.sh",
                              "torchrun --nnodes 8 --nproc-per-node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 "
                              "--num-attention-heads 32 --seq-length 4096 --micro-batch-size 2 --global-batch-size 512 --bf16 "
                              "--vocab-size 32000 --swiglu --tensor-model-parallel-size 2 --sequence-parallel "
                              "--use-distributed-optimizer\n");
  const auto r = test::run_strata("plan --megatron-args " + script.path() + " --cluster dgx-h100-ndr --quiet --json");
  REQUIRE_MESSAGE(r.exit_code == 0, r.out);
  const auto speedups = nlohmann::json::parse(r.out)["search"]["megatron_launch"]["flag_speedups"];
  for (const char* flag : {"--overlap-grad-reduce", "--overlap-param-gather", "--tp-comm-overlap"}) {
    INFO(flag);
    REQUIRE(speedups.contains(flag));
    CHECK(speedups[flag].get<double>() > 1 + kTimeTie);
  }
  // Gradients are fp32, parameters bf16: hiding the reduce-scatter saves more than hiding the gather.
  CHECK(speedups["--overlap-grad-reduce"].get<double>() > speedups["--overlap-param-gather"].get<double>());
  const auto text = test::run_strata("plan --megatron-args " + script.path() + " --cluster dgx-h100-ndr --quiet");
  CHECK(text.out.find("adding --overlap-grad-reduce to the launch as it is: ") != std::string::npos);
  CHECK_FALSE(speedups.contains("--overlap-moe-expert-parallel-comm"));  // a dense model

  // An MoE launch whose all-to-alls cross nodes: the combined 1F1B overlap is offered, unless the
  // launch recomputes fully (Megatron refuses the overlap then).
  const std::string moe = "torchrun --nnodes 2 --nproc-per-node 8 pretrain_gpt.py --num-layers 8 --hidden-size 2048 "
                          "--num-attention-heads 16 --seq-length 4096 --micro-batch-size 1 --global-batch-size 64 --bf16 "
                          "--vocab-size 32000 --swiglu --num-experts 64 --moe-router-topk 8 --moe-ffn-hidden-size 768 "
                          "--moe-token-dispatcher-type alltoall --expert-model-parallel-size 16 --use-distributed-optimizer "
                          "--overlap-grad-reduce --overlap-param-gather";
  const test::TempFile moe_script("moe_launch.sh", moe + "\n");
  const auto m = test::run_strata("plan --megatron-args " + moe_script.path() + " --cluster dgx-h100-ndr --quiet --json");
  REQUIRE_MESSAGE(m.exit_code == 0, m.out);
  const auto moe_speedups = nlohmann::json::parse(m.out)["search"]["megatron_launch"]["flag_speedups"];
  REQUIRE(moe_speedups.contains("--overlap-moe-expert-parallel-comm"));
  CHECK(moe_speedups["--overlap-moe-expert-parallel-comm"].get<double>() > 1 + kTimeTie);
  const test::TempFile full_script("moe_full.sh", moe + " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1\n");
  const auto f = test::run_strata("plan --megatron-args " + full_script.path() + " --cluster dgx-h100-ndr --quiet --json");
  REQUIRE_MESSAGE(f.exit_code == 0, f.out);
  CHECK_FALSE(nlohmann::json::parse(f.out)["search"]["megatron_launch"]["flag_speedups"].contains("--overlap-moe-expert-parallel-comm"));
}

TEST_CASE("strata plan: --ep and --etp fix the experts' layout of an MoE model, and are refused for a dense one") {
  const std::string mixtral = "plan --json --model mixtral-8x7b --cluster dgx-h100-ndr --gpus 64 --global-batch 256 --seq 4096 --quiet";
  const auto r = test::run_strata(mixtral + " --ep 4 --etp 1");
  REQUIRE_MESSAGE(r.exit_code == 0, r.out);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["parallel"]["ep"] == 4);
  CHECK(j["parallel"]["etp"] == 1);
  const auto dense = test::run_strata("plan " + kGpt3 + " --ep 8");
  CHECK(dense.exit_code == 1);
  CHECK(dense.out.find("--ep: applies to MoE models; gpt3-175b has no experts") != std::string::npos);
  const auto zero = test::run_strata(mixtral + " --etp 0");
  CHECK(zero.exit_code == 1);
  CHECK(zero.out.find("--etp: expected a positive integer, found 0") != std::string::npos);
}

TEST_CASE("strata plan: constraint flags fix dimensions") {
  const auto r = test::run_strata("plan --json " + kGpt3 + " --tp 8 --pp 16 --mbs 1 --recompute selective");
  REQUIRE_MESSAGE(r.exit_code == 0, r.out);  // a crash shows its report
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["parallel"]["tp"] == 8);
  CHECK(j["parallel"]["pp"] == 16);
  CHECK(j["parallel"]["micro_batch_size"] == 1);
  CHECK(j["recompute"]["granularity"] == "selective");
  // Megatron runs TP communication overlap only when asked; with tp 8 it would hide some of the
  // exposed TP all-gathers and reduce-scatters. The gradient and parameter overlaps are on already.
  const nlohmann::json& flags = j["search"]["flag_speedups"];
  REQUIRE(flags.contains("--tp-comm-overlap"));
  CHECK(flags["--tp-comm-overlap"].get<double>() > 1.005);
  CHECK_FALSE(flags.contains("--overlap-grad-reduce"));
}
}
