#include <doctest/doctest.h>

#include <filesystem>

#include "test_util.h"

using namespace strata;

TEST_SUITE("cli") {
TEST_CASE("strata profile --list: prints the suite without a GPU") {
  auto r = test::run_strata("profile --list --quick --models llama3-8b --tp 1 --precisions bf16");
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("qkv_proj") != std::string::npos);
  CHECK(r.out.find("rmsnorm") != std::string::npos);
  CHECK(r.out.find("kernel ops") != std::string::npos);
}

TEST_CASE("strata profile without a GPU (or without the CUDA part): a clear message and exit 1") {
  // Meant for machines without a GPU (it is not labelled gpu); on a GPU machine the gpu suite covers it.
  if (std::filesystem::exists("/dev/nvidiactl")) {
    MESSAGE("a GPU driver is present: skipped");
    return;
  }
  auto r = test::run_strata("profile --quick --out /tmp/strata_never_written.profile.json");
  INFO(r.out);
  CHECK(r.exit_code == 1);
  bool explained = r.out.find("no usable NVIDIA GPU found") != std::string::npos ||
                   r.out.find("built without the CUDA profiler") != std::string::npos;
  CHECK(explained);
}

TEST_CASE("strata profile: bad precision is an input error") {
  auto r = test::run_strata("profile --list --precisions int4");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("--precisions: expected bf16, fp16, fp8 or fp32, found \"int4\"") != std::string::npos);
}
}
