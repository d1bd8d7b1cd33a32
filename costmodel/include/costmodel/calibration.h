#pragma once
// Coefficients of the kernel and communication models. Every field has a documented default (used
// when no calibration file exists for the GPU); `strata calibrate` fits them from CUPTI profiles.
#include <string>

#include <nlohmann/json.hpp>

namespace strata {

// SEER-style per-class time model (Lu et al., "SEER", PACT'21 style): a kernel is
//   compute-bound:   t = flops / (peak * gemm_efficiency * wave_utilization) + launch
//   DRAM-bound:      t = bytes / (hbm * memory_efficiency) + launch
//   under-utilized:  t = launch + the larger of the two above (a grid smaller than one wave)
struct KernelCoefficients {
  // Fraction of dense tensor-core peak a large, well-shaped GEMM reaches (cuBLAS, mixed precision).
  // Default 0.75: A100 fp16 cuBLAS reaches 230-260 of 312 TFLOP/s on large square GEMMs; H100 SXM
  // bf16 reaches ~650-750 of 989 (NVIDIA "Matrix multiplication background" guide, measured
  // cuBLAS sweeps). A guess until calibrated.
  double gemm_efficiency = 0.75;
  // Fraction of peak that fused attention reaches relative to gemm_efficiency (FlashAttention-2
  // forward ~70% of GEMM speed, backward ~60%: Dao 2023, Fig. 4-6). A default.
  double attention_fwd_efficiency = 0.70;
  double attention_bwd_efficiency = 0.55;
  // Fraction of HBM bandwidth that streaming elementwise kernels reach (~80-90% in STREAM-like copies).
  double memory_efficiency = 0.80;
  // Per-kernel launch + tail overhead in microseconds.
  double launch_overhead_us = 4.0;
  // Relative cost of the k-loop prologue/epilogue: a GEMM with inner dimension K runs at
  // K / (K + gemm_k_overhead) of its tile throughput.
  double gemm_k_overhead = 64.0;
  bool operator==(const KernelCoefficients&) const = default;
};

struct CommCoefficients {
  // Achieved NCCL bus bandwidth as a fraction of the link's per-direction rate, for large messages.
  double nvlink_efficiency = 0.80;   // nccl-tests all-reduce busbw ~230/300 GB/s on DGX A100
  double network_efficiency = 0.85;  // ~21-23 of 25 GB/s per HDR rail in nccl-tests
  // Message size at which a collective reaches half of its large-message bandwidth.
  double half_bandwidth_bytes = 4.0 * 1024 * 1024;
  bool operator==(const CommCoefficients&) const = default;
};

struct Calibration {
  std::string source = "defaults (uncalibrated)";  // where the coefficients came from
  KernelCoefficients kernel;
  CommCoefficients comm;
  bool operator==(const Calibration&) const = default;
};

Calibration calibration_from_json(const nlohmann::json& j, const std::string& where);
nlohmann::json calibration_to_json(const Calibration& c);

}  // namespace strata
