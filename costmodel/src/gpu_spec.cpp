#include "costmodel/gpu_spec.h"

#include "costmodel/json_reader.h"

namespace strata {

const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
    case Precision::fp8: return "fp8";
  }
  return "?";
}

std::optional<Precision> precision_from_string(const std::string& s) {
  if (s == "fp32") return Precision::fp32;
  if (s == "tf32") return Precision::tf32;
  if (s == "fp16") return Precision::fp16;
  if (s == "bf16") return Precision::bf16;
  if (s == "fp8") return Precision::fp8;
  return std::nullopt;
}

const char* to_string(LowPrecisionRecipe r) {
  switch (r) {
    case LowPrecisionRecipe::delayed: return "delayed";
    case LowPrecisionRecipe::tensorwise: return "tensorwise";
    case LowPrecisionRecipe::blockwise: return "blockwise";
    case LowPrecisionRecipe::mxfp8: return "mxfp8";
    case LowPrecisionRecipe::nvfp4: return "nvfp4";
  }
  return "?";
}

std::optional<LowPrecisionRecipe> recipe_from_string(const std::string& s) {
  if (s == "delayed") return LowPrecisionRecipe::delayed;
  if (s == "tensorwise" || s == "current") return LowPrecisionRecipe::tensorwise;
  if (s == "blockwise") return LowPrecisionRecipe::blockwise;
  if (s == "mxfp8") return LowPrecisionRecipe::mxfp8;
  if (s == "nvfp4") return LowPrecisionRecipe::nvfp4;
  return std::nullopt;
}

double GpuSpec::low_precision_peak_flops(LowPrecisionRecipe r) const {
  return (r == LowPrecisionRecipe::nvfp4 ? fp4_tflops : fp8_tflops) * 1e12;
}

std::string GpuSpec::recipe_unsupported(LowPrecisionRecipe r) const {
  if (fp8_tflops <= 0) return name + " has no fp8 tensor cores";
  // Block-scaled MMA (tcgen05 kind::mxf8f6f4 / kind::mxf4nvf4) is a Blackwell feature; Transformer
  // Engine refuses MXFP8 and NVFP4 recipes below compute capability 10.0 (check_mxfp8_support,
  // check_nvfp4_support in transformer_engine/pytorch/fp8.py).
  if (r == LowPrecisionRecipe::mxfp8 && architecture != "blackwell")
    return name + " has no MXFP8 block-scaled tensor cores (Blackwell and later)";
  if (r == LowPrecisionRecipe::nvfp4 && fp4_tflops <= 0) return name + " has no fp4 tensor cores (NVFP4 needs Blackwell)";
  return "";
}

int activation_bytes(Precision p) { return (p == Precision::fp32 || p == Precision::tf32) ? 4 : 2; }

double GpuSpec::peak_flops(Precision p) const {
  double t = 0;
  switch (p) {
    case Precision::fp32: t = fp32_tflops; break;
    case Precision::tf32: t = tf32_tflops; break;
    case Precision::fp16: t = fp16_tflops; break;
    case Precision::bf16: t = bf16_tflops; break;
    case Precision::fp8: t = fp8_tflops; break;
  }
  return t * 1e12;
}

GpuSpec gpu_from_json(const json& j, const std::string& where, const std::string& path) {
  JsonReader r(j, where, path);
  r.reject_unknown_keys({"name", "aliases", "memory_GiB", "fp32_tflops", "tf32_tflops", "fp16_tflops", "bf16_tflops",
                         "fp8_tflops", "fp4_tflops", "hbm_GBps", "sm_count", "l2_MiB", "boost_clock_MHz", "power_W", "nvlink_GBps",
                         "pcie_GBps", "vendor", "architecture", "sources", "notes"});
  GpuSpec g;
  g.name = r.get_string("name");
  g.aliases = r.opt_string_list("aliases");
  g.vendor = r.opt_string("vendor").value_or("nvidia");
  g.architecture = r.opt_string("architecture").value_or("");
  g.memory_GiB = r.get_positive("memory_GiB", 1e5);
  g.fp32_tflops = r.get_positive("fp32_tflops", 1e6);
  g.tf32_tflops = r.opt_positive("tf32_tflops", 1e6).value_or(g.fp32_tflops);
  g.fp16_tflops = r.get_positive("fp16_tflops", 1e6);
  g.bf16_tflops = r.opt_positive("bf16_tflops", 1e6).value_or(g.fp16_tflops);
  g.fp8_tflops = r.opt_positive("fp8_tflops", 1e6).value_or(0);
  g.fp4_tflops = r.opt_positive("fp4_tflops", 1e6).value_or(0);
  g.hbm_GBps = r.get_positive("hbm_GBps", 1e6);
  g.sm_count = static_cast<int>(r.get_int("sm_count", 1, 100000));
  g.l2_MiB = r.opt_positive("l2_MiB", 1e6).value_or(0);
  g.boost_clock_MHz = r.opt_positive("boost_clock_MHz", 1e5).value_or(0);
  g.power_W = r.get_positive("power_W", 1e5);
  g.nvlink_GBps = r.has("nvlink_GBps") ? r.get_number("nvlink_GBps") : 0;
  if (g.nvlink_GBps < 0 || (g.nvlink_GBps > 0 && g.nvlink_GBps < JsonReader::kMinPositive) || g.nvlink_GBps > 1e6)
    r.fail("nvlink_GBps", "expected 0 (no NVLink) or a bandwidth between 1e-06 and 1e+06 GB/s");
  g.pcie_GBps = r.opt_positive("pcie_GBps", 1e5).value_or(32);
  return g;
}

json gpu_to_json(const GpuSpec& g) {
  json j = {{"name", g.name},          {"aliases", g.aliases},       {"vendor", g.vendor},
            {"architecture", g.architecture}, {"memory_GiB", g.memory_GiB}, {"fp32_tflops", g.fp32_tflops},
            {"tf32_tflops", g.tf32_tflops}, {"fp16_tflops", g.fp16_tflops}, {"bf16_tflops", g.bf16_tflops},
            {"hbm_GBps", g.hbm_GBps},    {"sm_count", g.sm_count},     {"power_W", g.power_W},
            {"nvlink_GBps", g.nvlink_GBps}, {"pcie_GBps", g.pcie_GBps}};
  // Optional figures are written only when known (0 means absent and would not read back).
  j["fp8_tflops"] = g.fp8_tflops > 0 ? json(g.fp8_tflops) : json(nullptr);
  if (g.fp4_tflops > 0) j["fp4_tflops"] = g.fp4_tflops;
  if (g.l2_MiB > 0) j["l2_MiB"] = g.l2_MiB;
  if (g.boost_clock_MHz > 0) j["boost_clock_MHz"] = g.boost_clock_MHz;
  return j;
}

}  // namespace strata
