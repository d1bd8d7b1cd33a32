#pragma once
// The processor part of the system description: datasheet peaks, each with its source in the JSON.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata {

enum class Precision { fp32, tf32, fp16, bf16, fp8 };

struct GpuSpec {
  std::string name;
  std::vector<std::string> aliases;
  std::string vendor = "nvidia";
  std::string architecture;
  double memory_GiB = 0;
  double fp32_tflops = 0;
  double tf32_tflops = 0;
  double fp16_tflops = 0;
  double bf16_tflops = 0;
  double fp8_tflops = 0;  // 0: no fp8 tensor cores
  double hbm_GBps = 0;
  int sm_count = 0;
  double l2_MiB = 0;
  double boost_clock_MHz = 0;
  double power_W = 0;
  double nvlink_GBps = 0;  // per GPU, per direction; 0 for PCIe-only parts
  double pcie_GBps = 0;

  // Dense tensor-core peak for the precision of the matrix math, in FLOP/s.
  double peak_flops(Precision p) const;
  bool operator==(const GpuSpec&) const = default;
};

// `path`: the JSON path of the object inside its file ("" at the top, "/gpu" in a plan).
GpuSpec gpu_from_json(const nlohmann::json& j, const std::string& where, const std::string& path = "");
nlohmann::json gpu_to_json(const GpuSpec& g);

const char* to_string(Precision p);
std::optional<Precision> precision_from_string(const std::string& s);  // "bf16", "fp16", ...
// Bytes of one element of activations/weights stored in this precision (fp8 training keeps
// bf16 activations and master weights, so it maps to 2).
int activation_bytes(Precision p);

}  // namespace strata
