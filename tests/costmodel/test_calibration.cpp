#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "costmodel/calibration.h"
#include "costmodel/gpu_spec.h"
#include "costmodel/json_reader.h"
#include "test_util.h"

using namespace strata;
using test::input_error;

TEST_SUITE("costmodel") {
TEST_CASE("default_calibration") {
  const GpuSpec a100 = test::catalog().gpu("a100-80gb");
  const GpuSpec h100 = test::catalog().gpu("h100");
  const Calibration ca = default_calibration(a100);
  const Calibration ch = default_calibration(h100);
  SUBCASE("ampere and hopper defaults differ; A100 GEMMs reach a larger fraction of their peak") {
    CHECK(ca.kernel.gemm_efficiency != ch.kernel.gemm_efficiency);
    CHECK(ca.kernel.gemm_efficiency > ch.kernel.gemm_efficiency);
    // Still H100 is faster in absolute terms.
    CHECK(ch.kernel.gemm_efficiency * h100.peak_flops(Precision::bf16) > ca.kernel.gemm_efficiency * a100.peak_flops(Precision::bf16));
  }
  SUBCASE("the source says these are defaults, and for which architecture") {
    CHECK(ca.source.starts_with("defaults"));
    CHECK(ca.source.find("ampere") != std::string::npos);
    CHECK(ch.source.starts_with("defaults"));
    CHECK(ch.source.find("hopper") != std::string::npos);
    GpuSpec unknown = a100;
    unknown.architecture = "";
    CHECK(default_calibration(unknown).source.find("unknown") != std::string::npos);
  }
  SUBCASE("every efficiency is a fraction") {
    for (const auto& e : test::catalog().list("gpus")) {
      CAPTURE(e.id);
      Calibration c = default_calibration(test::catalog().gpu(e.path));
      CHECK(c.kernel.gemm_efficiency > 0);
      CHECK(c.kernel.gemm_efficiency <= 1);
      CHECK(c.kernel.memory_efficiency > 0);
      CHECK(c.kernel.memory_efficiency <= 1);
      CHECK(c.comm.nvlink_efficiency <= 1);
      CHECK(c.comm.network_efficiency <= 1);
    }
  }
  SUBCASE("Blackwell: power-limited GEMMs, attention at Hopper's fraction of the tensor-core peak") {
    const Calibration cb = default_calibration(test::catalog().gpu("b200"));
    CHECK(cb.kernel.gemm_efficiency < ch.kernel.gemm_efficiency);
    // Attention runs at gemm_efficiency * attention_*_efficiency of the peak (KernelModel).
    CHECK(cb.kernel.gemm_efficiency * cb.kernel.attention_fwd_efficiency ==
          doctest::Approx(ch.kernel.gemm_efficiency * ch.kernel.attention_fwd_efficiency));
    CHECK(cb.kernel.gemm_efficiency * cb.kernel.attention_bwd_efficiency ==
          doctest::Approx(ch.kernel.gemm_efficiency * ch.kernel.attention_bwd_efficiency));
  }
  SUBCASE("CDNA 4 (MI355X), not measured, takes CDNA 3's fractions of its own peaks") {
    const Calibration c3 = default_calibration(test::catalog().gpu("mi300x")), c4 = default_calibration(test::catalog().gpu("mi355x"));
    CHECK(c4.kernel == c3.kernel);
    CHECK(c4.source.find("cdna4") != std::string::npos);
  }
  SUBCASE("the catalog falls back to these defaults when no calibration file exists") {
    CHECK(test::catalog().calibration_or_default(a100) == (test::catalog().calibration_for(a100) ? *test::catalog().calibration_for(a100) : ca));
  }
}

TEST_CASE("calibration_from_json") {
  SUBCASE("round trip of the defaults and of a modified calibration") {
    for (const char* g : {"a100-80gb", "h100", "mi300x"}) {
      Calibration c = default_calibration(test::catalog().gpu(g));
      CHECK(calibration_from_json(calibration_to_json(c), "cal.json") == c);
    }
    Calibration c;
    c.source = "fit from profiles";
    c.kernel.gemm_efficiency = 0.71;
    c.kernel.launch_overhead_us = 0;
    c.kernel.overlap_interference = 0;
    c.comm.half_bandwidth_bytes = 1e6;
    // Every class's own coefficients (kernel_model.h).
    c.kernel.gemm_memory_efficiency = 0.77;
    c.kernel.row_memory_efficiency = 1.1;
    c.kernel.row_rows_per_sm = 5.5;
    c.kernel.elementwise_alu_efficiency = 0.09;
    c.kernel.dram_overhead_us = 0.5;
    c.kernel.sm_load_bytes_per_clock = 48;
    c.kernel.under_utilized_overhead_us = 1.7;
    c.kernel.under_utilized_gemm_factor = 1.08;
    c.kernel.l2_bandwidth_factor = 1.3;
    c.kernel.attention_fwd_fixed_blocks = 7.5;
    c.kernel.attention_bwd_fixed_blocks = 0;
    c.host.moe_forward_s = 0.0051;
    CHECK(calibration_from_json(calibration_to_json(c), "cal.json") == c);
  }
  SUBCASE("keys left out keep the documented defaults; source defaults to the file") {
    Calibration c = calibration_from_json(json::parse(R"({"kernel": {"gemm_efficiency": 0.5}})"), "cal.json");
    CHECK(c.kernel.gemm_efficiency == 0.5);
    CHECK(c.kernel.memory_efficiency == KernelCoefficients{}.memory_efficiency);
    CHECK(c.comm == CommCoefficients{});
    CHECK(c.host.moe_forward_s == 0);  // no measured forward of the user's stack: the line applies
    CHECK(c.host == HostCoefficients{});
    CHECK(c.source == "cal.json");
  }
  SUBCASE("out-of-range values are rejected with the JSON path") {
    auto err = [](const char* text) { return input_error([&] { calibration_from_json(json::parse(text), "cal.json"); }); };
    CHECK(err(R"({"kernel": {"gemm_efficiency": 0}})").find("cal.json: /kernel/gemm_efficiency: expected a positive number") != std::string::npos);
    CHECK(err(R"({"kernel": {"gemm_efficiency": 1.5}})").find("/kernel/gemm_efficiency") != std::string::npos);
    CHECK(err(R"({"kernel": {"memory_efficiency": -0.8}})").find("/kernel/memory_efficiency") != std::string::npos);
    CHECK(err(R"({"kernel": {"launch_overhead_us": -1}})").find("/kernel/launch_overhead_us: expected 0..10000") != std::string::npos);
    CHECK(err(R"({"kernel": {"dram_overhead_us": -1}})").find("/kernel/dram_overhead_us: expected 0..10000 microseconds") != std::string::npos);
    CHECK(err(R"({"kernel": {"elementwise_alu_efficiency": 3}})").find("/kernel/elementwise_alu_efficiency: expected 0..1.5") != std::string::npos);
    CHECK(err(R"({"kernel": {"attention_fwd_fixed_blocks": -2}})").find("/kernel/attention_fwd_fixed_blocks") != std::string::npos);
    CHECK(err(R"({"kernel": {"l2_bandwidth_factor": 0.5}})").find("/kernel/l2_bandwidth_factor: expected 1..100") != std::string::npos);
    CHECK(err(R"({"kernel": {"sm_load_bytes_per_clock": 0}})").find("/kernel/sm_load_bytes_per_clock") != std::string::npos);
    CHECK(err(R"({"kernel": {"overlap_interference": 2}})").find("/kernel/overlap_interference: expected 0..1") != std::string::npos);
    CHECK(err(R"({"comm": {"network_efficiency": 0}})").find("/comm/network_efficiency") != std::string::npos);
    CHECK(err(R"({"comm": {"half_bandwidth_bytes": -4}})").find("/comm/half_bandwidth_bytes") != std::string::npos);
    CHECK(err(R"({"kernel": {"gemm_efficency": 0.7}})").find("did you mean \"gemm_efficiency\"") != std::string::npos);
    CHECK(err(R"({"kernel": 0.7})").find("/kernel: expected an object") != std::string::npos);
    CHECK(err(R"({"host": {"moe_forward_s": 5}})").find("/host/moe_forward_s: expected 0..1 seconds") != std::string::npos);
    CHECK(err(R"({"host": {"moe_forward_ms": 5}})").find("/host") != std::string::npos);
    CHECK(err(R"({"host": {"moe_backward_per_expert_s": -1}})").find("/host/moe_backward_per_expert_s: expected 0..1") != std::string::npos);
    CHECK(err(R"({"host": {"moe_forward_presync_fraction": 1.5}})").find("/host/moe_forward_presync_fraction: expected 0..1") !=
          std::string::npos);
    CHECK(err(R"({"host": {"moe_attention_forward_s": "2ms"}})").find("/host/moe_attention_forward_s") != std::string::npos);
  }
  SUBCASE("the host line round-trips") {
    Calibration c;
    c.host.moe_forward_fixed_s = 1e-3;
    c.host.moe_backward_per_expert_s = 2e-4;
    c.host.moe_forward_presync_fraction = 0.5;
    c.host.moe_attention_backward_s = 3e-3;
    c.host.moe_allgather_backward_per_expert_s = 4e-4;
    CHECK(calibration_from_json(calibration_to_json(c), "cal.json").host == c.host);
  }
}

TEST_CASE("the MoE host-time defaults are the least-squares line of the committed measurement") {
  // configs/measurements/h100-2026-11-27.moe-layer-host.json: Megatron-Core's MoELayer, alltoall
  // and allgather dispatchers, the tiny-token twin of each sweep case (its wall time is the
  // host's), the median of the runs per local-expert count; scripts/fit_moe_host.py prints the same fit.
  const json file = load_json_file(std::string(STRATA_SOURCE_DIR) + "/configs/measurements/h100-2026-11-27.moe-layer-host.json");
  auto fit = [&](const char* key, const char* dispatcher = "alltoall") {
    std::map<int, std::vector<double>> samples;
    for (const auto& run : file.at("runs"))
      for (const auto& c : run.at("cases"))
        if (c.at("dispatcher") == dispatcher && c.at("case").get<std::string>().rfind("sweep_", 0) == 0)
          samples[c.at("local_experts").get<int>()].push_back(c.at(key).get<double>());
    std::vector<std::pair<double, double>> pts;
    for (auto& [e, v] : samples) {
      std::sort(v.begin(), v.end());
      const std::size_t n = v.size();
      pts.emplace_back(e, n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
    }
    REQUIRE(pts.size() >= 5);
    const double n = static_cast<double>(pts.size());
    double mx = 0, my = 0;
    for (auto [x, y] : pts) mx += x / n, my += y / n;
    double sxy = 0, sxx = 0;
    for (auto [x, y] : pts) sxy += (x - mx) * (y - my), sxx += (x - mx) * (x - mx);
    return std::pair{my - sxy / sxx * mx, sxy / sxx};
  };
  const HostCoefficients h;
  const auto [fwd_fixed, fwd_slope] = fit("tiny_fwd_s");
  const auto [bwd_fixed, bwd_slope] = fit("tiny_bwd_s");
  CHECK(h.moe_forward_fixed_s == doctest::Approx(fwd_fixed).epsilon(0.005));
  CHECK(h.moe_forward_per_expert_s == doctest::Approx(fwd_slope).epsilon(0.005));
  CHECK(h.moe_backward_fixed_s == doctest::Approx(bwd_fixed).epsilon(0.005));
  CHECK(h.moe_backward_per_expert_s == doctest::Approx(bwd_slope).epsilon(0.005));
  const auto [ag_fwd_fixed, ag_fwd_slope] = fit("tiny_fwd_s", "allgather");
  const auto [ag_bwd_fixed, ag_bwd_slope] = fit("tiny_bwd_s", "allgather");
  CHECK(h.moe_allgather_forward_fixed_s == doctest::Approx(ag_fwd_fixed).epsilon(0.005));
  CHECK(h.moe_allgather_forward_per_expert_s == doctest::Approx(ag_fwd_slope).epsilon(0.005));
  CHECK(h.moe_allgather_backward_fixed_s == doctest::Approx(ag_bwd_fixed).epsilon(0.005));
  CHECK(h.moe_allgather_backward_per_expert_s == doctest::Approx(ag_bwd_slope).epsilon(0.005));
}
}
