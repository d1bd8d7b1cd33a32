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

}  // namespace

TEST_SUITE("cli") {
TEST_CASE("strata predict --trace: a Chrome trace of the simulated schedule") {
  const std::string path = tmp("trace.json");
  auto r = test::run_strata("predict --model gpt3-1.3b --gpu a100-80gb --gpus 8 --global-batch 16 --seq 2048 --tp 2 --pp 2 --mbs 1 --sp "
                            "--recompute selective --dist-opt --trace " + path);
  CHECK(r.exit_code == 0);
  const auto j = nlohmann::json::parse(slurp(path));
  REQUIRE(j.contains("traceEvents"));
  int f = 0;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X" && e["cat"] == "forward") ++f;
  CHECK(f == 2 * 8);  // pp x micro-batches (16 / (dp 2 x mbs 1))
  std::remove(path.c_str());
  r = test::run_strata("predict --model gpt3-1.3b --gpu a100-80gb --gpus 8 --global-batch 16 --trace /nonexistent-dir/t.json");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("--trace") != std::string::npos);
}
}
