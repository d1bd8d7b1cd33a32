#pragma once
// The processor part of the system description: datasheet peaks, each with its source in the JSON.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata {

enum class Precision { fp32, tf32, fp16, bf16, fp8 };

// How the GEMMs of an fp8 (low-precision) run are quantized: Transformer Engine's recipes
// (transformer_engine/common/recipe/__init__.py; Megatron --fp8-recipe, --fp4-recipe). Only
// meaningful with Precision::fp8; it decides the GEMM rate (which tensor-core peak, how the
// scales are applied) and the cast kernels that run around each GEMM.
enum class LowPrecisionRecipe {
  delayed,     // DelayedScaling: per-tensor scale from an amax history (Hopper and later)
  tensorwise,  // Float8CurrentScaling ("FP8-CS", torchao Float8 tensorwise): per-tensor amax of this step
  blockwise,   // Float8BlockScaling: 1x128 activation / 128x128 weight blocks (DeepSeek-V3 style)
  mxfp8,       // MXFP8BlockScaling: 32-element blocks with E8M0 scales (Blackwell tensor cores)
  nvfp4,       // NVFP4BlockScaling: fp4 E2M1 GEMMs, 16-element blocks with E4M3 scales (Blackwell)
};
const char* to_string(LowPrecisionRecipe r);
std::optional<LowPrecisionRecipe> recipe_from_string(const std::string& s);  // "delayed", "tensorwise", ...

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
  double fp4_tflops = 0;  // dense fp4 (NVFP4/MXFP4) tensor-core peak; 0: none (before Blackwell)
  double hbm_GBps = 0;
  int sm_count = 0;
  double l2_MiB = 0;
  double boost_clock_MHz = 0;
  double power_W = 0;
  double nvlink_GBps = 0;  // per GPU, per direction; 0 for PCIe-only parts
  double pcie_GBps = 0;

  // Dense tensor-core peak for the precision of the matrix math, in FLOP/s.
  double peak_flops(Precision p) const;
  // Peak of the GEMMs a low-precision recipe runs: the fp4 peak for NVFP4, else the fp8 peak.
  double low_precision_peak_flops(LowPrecisionRecipe r) const;
  // Why this GPU cannot run the recipe ("" when it can): MXFP8 and NVFP4 need Blackwell's
  // block-scaled tensor cores.
  std::string recipe_unsupported(LowPrecisionRecipe r) const;
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
