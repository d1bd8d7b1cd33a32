#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "test_util.h"

using namespace strata;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string tmp(const std::string& name) { return "/tmp/strata_test_" + std::to_string(::getpid()) + "_" + name; }

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_SUITE("cli") {
TEST_CASE("strata whatif: table, CSV and SVG for a GPU type x count sweep") {
  const std::string csv = tmp("w.csv"), svg = tmp("w.svg");
  auto r = test::run_strata("whatif --model llama3-8b --gpu a100-80gb,h100 --gpus 8,16,32 --global-batch 256 --seq 8192 --tokens 1e11 -q --csv " +
                            csv + " --plot " + svg);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("llama3-8b: time to train 100B tokens") != std::string::npos);
  CHECK(r.out.find("tok/s/GPU") != std::string::npos);
  CHECK(r.out.find("DEFAULT prices of the cluster presets") != std::string::npos);
  CHECK(r.out.find("[=") == std::string::npos);  // --quiet: no progress bar
  const std::string c = slurp(csv);
  CHECK(c.rfind("gpu,cluster,gpus,gpus_used,", 0) == 0);
  CHECK(count(c, "\n") == 1 + 6);
  const std::string s = slurp(svg);
  CHECK(count(s, "<path class=\"series\"") == 2 * 2);
  CHECK(count(s, "<text class=\"legend-label\"") == 2);
  std::remove(csv.c_str());
  std::remove(svg.c_str());
}

TEST_CASE("strata whatif --json: machine-readable rows over network and batch sweeps") {
  auto r = test::run_strata("whatif --model llama3-8b --gpu h100 --gpus 16,32 --global-batch 128,256 --inter-node-GBps 12.5,50 --seq 4096 "
                            "--tokens 1e10 --json --price-per-gpu-hour 2 --carbon-intensity 100 -q 2>/dev/null");
  REQUIRE_MESSAGE(r.exit_code == 0, r.out);  // a crash shows its report
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["rows"].size() == 2 * 2 * 2);
  for (const auto& row : j["rows"]) {
    CHECK(row["feasible"] == true);
    CHECK(row["price_per_gpu_hour_usd"] == 2.0);
    CHECK(row["price_is_default"] == false);
    CHECK(row["carbon_is_default"] == false);
    CHECK(row["cost_usd"].get<double>() == doctest::Approx(row["gpu_hours"].get<double>() * 2));
  }
  CHECK(j["rows"][0]["inter_node_GBps"] == 12.5);
  CHECK(j["rows"][4]["inter_node_GBps"] == 50.0);
  // A slower network never makes the same point faster.
  CHECK(j["rows"][0]["time_to_train_s"].get<double>() >= j["rows"][4]["time_to_train_s"].get<double>() * (1 - 1e-9));
}

TEST_CASE("strata whatif --megatron-args: the launch's workload over the hardware sweep") {
  const std::string script = test::data_file("megatron_gpt3_175b.sh");
  auto r = test::run_strata("whatif --megatron-args " + script + " --gpu a100-80gb,h100 --gpus 1024 --tokens 1e11 --json -q");
  REQUIRE_MESSAGE(r.exit_code == 0, r.out);
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["rows"].size() == 2);
  for (const auto& row : j["rows"]) {
    CHECK(row["global_batch"] == 1536);  // the launch's batch and sequence
    CHECK(row["seq_length"] == 2048);
    CHECK(row["feasible"] == true);
  }
  // The same study given by flags: the launch overlaps neither DP collective and runs the eager loss.
  auto flags = test::run_strata("whatif --model gpt3-175b --gpu a100-80gb,h100 --gpus 1024 --global-batch 1536 --seq 2048 "
                                "--no-overlap-grad-reduce --no-overlap-param-gather --cross-entropy eager --tokens 1e11 --json -q");
  REQUIRE_MESSAGE(flags.exit_code == 0, flags.out);
  const auto jf = nlohmann::json::parse(flags.out);
  for (int i = 0; i < 2; ++i) CHECK(j["rows"][i]["time_to_train_s"] == jf["rows"][i]["time_to_train_s"]);
  // What the launch decides cannot be swept beside it.
  auto conflict = test::run_strata("whatif --megatron-args " + script + " --gpu h100 --gpus 1024 --global-batch 512 --tokens 1e11");
  CHECK(conflict.exit_code == 1);
  CHECK(conflict.out.find("--global-batch: is set by the launch") != std::string::npos);
  const test::TempFile no_batch("no_batch.txt", "--num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 "
                                                "--micro-batch-size 1 --vocab-size 1000 --bf16");
  auto nb = test::run_strata("whatif --megatron-args " + no_batch.path() + " --gpu h100 --gpus 8 --tokens 1e9");
  CHECK(nb.exit_code == 1);
  CHECK(nb.out.find(no_batch.path() + ": --global-batch-size: missing: whatif needs the launch's global batch") != std::string::npos);
}

TEST_CASE("strata whatif --deadline-days: smallest count per GPU type, one step fewer misses") {
  auto r = test::run_strata("whatif --model llama3-8b --gpu h100,b200 --global-batch 256 --seq 8192 --tokens 1e12 --deadline-days 20 "
                            "--max-gpus 1024 --json -q 2>/dev/null");
  REQUIRE_MESSAGE(r.exit_code == 0, r.out);  // a crash shows its report
  const auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["deadline"].size() == 2);
  for (const auto& d : j["deadline"]) {
    REQUIRE(d["met"] == true);
    CHECK(d["time_to_train_days"].get<double>() <= 20);
    const int n = d["gpus"];
    CHECK(n % 8 == 0);
    if (d.contains("fewer_gpus")) {
      CHECK(d["fewer_gpus"] == n / 2);
      if (d["fewer_feasible"] == true) CHECK(d["fewer_time_to_train_days"].get<double>() > 20);
    }
  }
  auto t = test::run_strata("whatif --model llama3-8b --gpu h100 --global-batch 256 --seq 8192 --tokens 1e12 --deadline-days 20 --max-gpus 1024 -q");
  CHECK(t.exit_code == 0);
  CHECK(t.out.find("smallest GPU count that trains 1T tokens within 20 days:") != std::string::npos);
  CHECK(t.out.find("one step fewer:") != std::string::npos);
}

TEST_CASE("strata whatif: bad input exits 1 naming the flag") {
  auto r = test::run_strata("whatif --model llama3-8b --gpu h100 --gpus 8,abc --global-batch 256 --tokens 1e10");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("--gpus") != std::string::npos);
  r = test::run_strata("whatif --model llama3-8b --gpu h100 --gpus 8 --global-batch 256");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("--tokens") != std::string::npos);
  r = test::run_strata("whatif --model llama3-8b --gpu h100 --global-batch 256 --tokens 1e10");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("--gpus") != std::string::npos);
  r = test::run_strata("whatif --model llama3-8b --gpu h100 --gpus 8 --global-batch 256 --tokens 1e10 --inter-node-GBps -3");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("--inter-node-GBps") != std::string::npos);
  r = test::run_strata("whatif --model llama3-8b --gpu nosuchgpu --gpus 8 --global-batch 256 --tokens 1e10");
  CHECK(r.exit_code == 1);
}

TEST_CASE("strata whatif: no feasible plan anywhere exits 2 and still prints the table with reasons") {
  auto r = test::run_strata("whatif --model llama3.1-405b --gpu a100-40gb --gpus 8,16 --global-batch 64 --seq 8192 --tokens 1e10 -q");
  CHECK(r.exit_code == 2);
  CHECK(r.out.find("no feasible plan") != std::string::npos);
  CHECK(r.out.find("8 x a100-40gb:") != std::string::npos);
  CHECK(r.out.find("16 x a100-40gb:") != std::string::npos);
}
}
