#include <doctest/doctest.h>

#include "costmodel/gpu_spec.h"
#include "costmodel/json_reader.h"
#include "test_util.h"

using namespace strata;
using test::input_error;

namespace {

json minimal_gpu() {
  return json::parse(R"({"name": "toy", "memory_GiB": 16, "fp32_tflops": 10, "fp16_tflops": 100,
                         "hbm_GBps": 1000, "sm_count": 40, "power_W": 300})");
}

}  // namespace

TEST_SUITE("costmodel") {
TEST_CASE("gpu_from_json") {
  SUBCASE("every shipped GPU round-trips through gpu_to_json") {
    auto entries = test::catalog().list("gpus");
    REQUIRE_FALSE(entries.empty());
    for (const auto& e : entries) {
      CAPTURE(e.id);
      GpuSpec g = test::catalog().gpu(e.path);
      CHECK(gpu_from_json(gpu_to_json(g), "rt.json") == g);
    }
  }
  SUBCASE("optional peaks default to their neighbours: bf16 to fp16, tf32 to fp32, fp8 to none") {
    GpuSpec g = gpu_from_json(minimal_gpu(), "toy.json");
    CHECK(g.bf16_tflops == g.fp16_tflops);
    CHECK(g.tf32_tflops == g.fp32_tflops);
    CHECK(g.fp8_tflops == 0);
    CHECK(g.nvlink_GBps == 0);
    CHECK(g.l2_MiB == 0);
  }
  SUBCASE("zero, negative and mistyped values are rejected with the key named") {
    auto err = [](const char* key, json value) {
      json j = minimal_gpu();
      j[key] = value;
      return input_error([&] { gpu_from_json(j, "toy.json"); });
    };
    CHECK(err("memory_GiB", 0).find("toy.json: /memory_GiB: expected a positive number") != std::string::npos);
    CHECK(err("memory_GiB", -80).find("/memory_GiB: expected a positive number") != std::string::npos);
    CHECK(err("fp16_tflops", 0).find("/fp16_tflops") != std::string::npos);
    CHECK(err("hbm_GBps", -1).find("/hbm_GBps") != std::string::npos);
    CHECK(err("fp8_tflops", -1).find("/fp8_tflops") != std::string::npos);
    CHECK(err("sm_count", 0).find("/sm_count: expected an integer in [1,") != std::string::npos);
    CHECK(err("sm_count", 40.5).find("/sm_count: expected an integer") != std::string::npos);
    CHECK(err("nvlink_GBps", -1).find("/nvlink_GBps: expected 0 (no NVLink) or a bandwidth") != std::string::npos);
    CHECK(err("power_W", "400").find("/power_W: expected a number, found a string") != std::string::npos);
    CHECK(err("hbm_GBs", 1000).find("/hbm_GBs: unknown key (did you mean \"hbm_GBps\"?)") != std::string::npos);
  }
  SUBCASE("a missing required peak") {
    json j = minimal_gpu();
    j.erase("fp16_tflops");
    CHECK(input_error([&] { gpu_from_json(j, "toy.json"); }).find("/fp16_tflops: missing required key") != std::string::npos);
  }
}

TEST_CASE("gpu_to_json: a GPU without the optional l2_MiB / boost_clock_MHz round-trips") {
  GpuSpec g = gpu_from_json(minimal_gpu(), "toy.json");
  CHECK(gpu_from_json(gpu_to_json(g), "rt.json") == g);
}

TEST_CASE("GpuSpec::peak_flops") {
  // NVIDIA A100 datasheet (dense): FP32 19.5, TF32 156, FP16/BF16 312 TFLOP/s, no FP8.
  GpuSpec a100 = test::catalog().gpu("a100-80gb");
  CHECK(a100.peak_flops(Precision::fp32) == doctest::Approx(19.5e12));
  CHECK(a100.peak_flops(Precision::tf32) == doctest::Approx(156e12));
  CHECK(a100.peak_flops(Precision::fp16) == doctest::Approx(312e12));
  CHECK(a100.peak_flops(Precision::bf16) == doctest::Approx(312e12));
  CHECK(a100.peak_flops(Precision::fp8) == 0);
  // H100 SXM: dense FP8 is twice dense BF16, BF16 twice TF32 (datasheet, sparsity halved).
  GpuSpec h100 = test::catalog().gpu("h100");
  CHECK(h100.peak_flops(Precision::fp8) == doctest::Approx(2 * h100.peak_flops(Precision::bf16)).epsilon(1e-3));
  CHECK(h100.peak_flops(Precision::bf16) == doctest::Approx(2 * h100.peak_flops(Precision::tf32)).epsilon(1e-3));
  CHECK(h100.peak_flops(Precision::bf16) > 3 * a100.peak_flops(Precision::bf16));
}

TEST_CASE("precision_from_string") {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16, Precision::fp8})
    CHECK(precision_from_string(to_string(p)) == p);
  CHECK_FALSE(precision_from_string("int8").has_value());
  CHECK_FALSE(precision_from_string("").has_value());
}

TEST_CASE("activation_bytes") {
  CHECK(activation_bytes(Precision::fp32) == 4);
  CHECK(activation_bytes(Precision::tf32) == 4);
  CHECK(activation_bytes(Precision::fp16) == 2);
  CHECK(activation_bytes(Precision::bf16) == 2);
  CHECK(activation_bytes(Precision::fp8) == 2);  // fp8 training keeps bf16 activations
}
}
