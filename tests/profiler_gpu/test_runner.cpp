// GPU tests (ctest label gpu; `ctest -LE gpu` leaves them out). They skip with a message when no
// CUDA device is usable.
#include <doctest/doctest.h>

#include <cuda_runtime_api.h>
#include <filesystem>

#include "profiler/classify.h"
#include "profiler/profile_db.h"
#include "profiler/runner.h"
#include "test_util.h"

using namespace strata;

namespace {
bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}
std::string temp(const std::string& name) { return (std::filesystem::temp_directory_path() / name).string(); }
}  // namespace

TEST_SUITE("profiler_gpu") {
TEST_CASE("run_profile: records labelled kernels with launch configuration and device properties") {
  if (!have_gpu()) {
    MESSAGE("no CUDA device: skipped");
    return;
  }
  profiler::ProfileOptions o;
  o.out = temp("strata_gpu_test.profile.json");
  o.suite.quick = true;
  o.suite.models = {"gpt3-125m"};
  o.suite.tp = {1};
  o.suite.seq = {2048};
  o.suite.precisions = {"bf16"};
  o.repetitions = 3;
  REQUIRE(profiler::run_profile(test::catalog(), o) == 0);
  profiler::ProfileDb p = profiler::load_profile(o.out);
  REQUIRE(!p.devices.empty());
  CHECK(p.devices[0].sm_count > 0);
  CHECK(p.driver_version > 0);
  CHECK(p.cupti_version > 0);
  int gemm_kernels = 0, copies = 0;
  for (const auto& r : p.records) {
    REQUIRE(r.op_index >= 0);
    const auto& op = p.ops[r.op_index];
    if (op.kind == "gemm" && r.kind == profiler::ActivityKind::kernel) {
      ++gemm_kernels;
      CHECK(r.grid.count() > 0);
      CHECK(r.block.count() > 0);
      CHECK(r.registers_per_thread > 0);
      CHECK(r.end_ns > r.start_ns);
    }
    if (r.kind == profiler::ActivityKind::memcpy) ++copies;
  }
  CHECK(gemm_kernels > 0);
  CHECK(copies > 0);
  auto r = test::run_strata("calibrate --profile " + o.out);
  INFO(r.out);
  CHECK(r.exit_code == 0);
  std::filesystem::remove(o.out);
}

TEST_CASE("strata trace: records a cuBLAS program through the injection library") {
  if (!have_gpu()) {
    MESSAGE("no CUDA device: skipped");
    return;
  }
  const std::string out = temp("strata_gpu_trace.json");
  auto r = test::run_strata("trace --out " + out + " -- " + STRATA_TRACE_TARGET);
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  profiler::ProfileDb p = profiler::load_profile(temp("strata_gpu_trace.profile.json"));
  int kernels = 0, copies = 0;
  for (const auto& k : p.records) {
    kernels += k.kind == profiler::ActivityKind::kernel;
    copies += k.kind == profiler::ActivityKind::memcpy;
  }
  CHECK(kernels >= 3);
  CHECK(copies >= 3);
  CHECK(std::filesystem::exists(out));
}
}
