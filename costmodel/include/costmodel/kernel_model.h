#pragma once
// Kernel time on one GPU (SEER-style, Lu et al. PACT'21): roofline with wave and tile quantization,
// each kernel classified as compute-bound, DRAM-bound or under-utilized and timed by its class.
#include <vector>

#include "costmodel/calibration.h"
#include "costmodel/gpu_spec.h"
#include "costmodel/layer_ops.h"

namespace strata {

enum class KernelClass { compute_bound, dram_bound, under_utilized };
const char* to_string(KernelClass c);

struct KernelTime {
  double time_s = 0;
  KernelClass cls = KernelClass::dram_bound;
  double wave_utilization = 1;  // fraction of SM-tile slots doing useful work
};

// Flash attention's throughput at `keys` keys relative to its throughput at 2048 (see the .cpp).
double key_loop_factor(double keys);

class KernelModel {
 public:
  // `recipe` picks the tensor-core peak of low-precision GEMMs (fp4 for NVFP4, else fp8); it is
  // read only with Precision::fp8.
  KernelModel(const GpuSpec& gpu, Precision precision, const KernelCoefficients& coeff,
              LowPrecisionRecipe recipe = LowPrecisionRecipe::delayed);
  KernelTime time(const Op& op) const;
  double total_time(const std::vector<Op>& ops) const;

  // Tile utilization of an m x n (x batch) output on this GPU with the best of the usual cuBLAS
  // tile shapes (wave quantization: the last wave runs partly empty; tile quantization: partial
  // tiles at the edges do wasted work). Returns utilization times the tile shape's own efficiency.
  double gemm_utilization(double m, double n, double batch, double* tiles_out = nullptr) const;

 private:
  double peak_flops_;
  double half_peak_flops_;       // bf16/fp16 peak: fp8 training keeps attention and Op::bf16_under_fp8 GEMMs there
  bool fp8_gemms_;               // GEMMs run in fp8/fp4 (at fp8_gemm_factor of the bf16 efficiency)
  double hbm_Bps_;
  int sms_;
  KernelCoefficients c_;
};

}  // namespace strata
