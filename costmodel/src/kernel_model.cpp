#include "costmodel/kernel_model.h"

#include <algorithm>
#include <cmath>

namespace strata {

const char* to_string(KernelClass c) {
  switch (c) {
    case KernelClass::compute_bound: return "compute_bound";
    case KernelClass::dram_bound: return "dram_bound";
    case KernelClass::under_utilized: return "under_utilized";
  }
  return "?";
}

KernelModel::KernelModel(const GpuSpec& gpu, Precision precision, const KernelCoefficients& coeff, LowPrecisionRecipe recipe)
    : peak_flops_(precision == Precision::fp8 ? gpu.low_precision_peak_flops(recipe) : gpu.peak_flops(precision)),
      half_peak_flops_(precision == Precision::fp8 ? gpu.peak_flops(Precision::bf16) : gpu.peak_flops(precision)),
      fp8_gemms_(precision == Precision::fp8 && gpu.low_precision_peak_flops(recipe) > 0),
      hbm_Bps_(gpu.hbm_GBps * 1e9),
      sms_(gpu.sm_count),
      c_(coeff) {
  if (peak_flops_ <= 0) peak_flops_ = gpu.peak_flops(Precision::fp16);  // caller checks support
  if (half_peak_flops_ <= 0) half_peak_flops_ = peak_flops_;
}

double KernelModel::gemm_utilization(double m, double n, double batch, double* tiles_out) const {
  // Tile shapes cuBLAS picks among for large to small problems, with the relative throughput of
  // each tile shape (smaller tiles re-read operands more often). Defaults, not measurements.
  struct Tile {
    double tm, tn, eff;
  };
  static constexpr Tile kTiles[] = {{256, 128, 1.00}, {128, 128, 0.95}, {128, 64, 0.85}, {64, 64, 0.70}};
  double best = 0, best_tiles = 1;
  for (const auto& t : kTiles) {
    double tiles = std::ceil(m / t.tm) * std::ceil(n / t.tn) * batch;
    double waves = std::ceil(tiles / sms_);
    double util = (m * n * batch) / (waves * sms_ * t.tm * t.tn) * t.eff;
    if (util > best) {
      best = util;
      best_tiles = tiles;
    }
  }
  if (tiles_out) *tiles_out = best_tiles;
  return best;
}

double key_loop_factor(double keys) {
  // A flash-attention query tile loads Q, then loops over 128-key blocks (a causal tile visits
  // w = keys/256 of them on average), then rescales and writes O and the log-sum-exp: a fixed cost
  // of c ~ 5 blocks per tile. Throughput follows w/(w + c) (fitted within 5% to the committed H100
  // attention-scaling measurements, configs/measurements/README.md, forward and backward, 2k-16k
  // tokens). Relative to 2048 tokens, the length the attention efficiencies describe.
  constexpr double kFixedBlocks = 5, kReferenceBlocks = 2048.0 / 256;
  const double w = std::max(1.0, keys / 256);
  return (w / (w + kFixedBlocks)) / (kReferenceBlocks / (kReferenceBlocks + kFixedBlocks));
}

KernelTime KernelModel::time(const Op& op) const {
  KernelTime kt;
  const double launch = c_.launch_overhead_us * 1e-6;
  const double t_mem = op.bytes / (hbm_Bps_ * c_.memory_efficiency);
  if (op.kind == OpKind::elementwise) {
    kt.time_s = t_mem + launch;
    kt.cls = KernelClass::dram_bound;
    // An elementwise kernel smaller than ~1 MB cannot fill the GPU's memory pipeline.
    if (op.bytes < 1e6) kt.cls = KernelClass::under_utilized;
    return kt;
  }
  double tiles = 1;
  double util = gemm_utilization(op.m, op.n, op.batch, &tiles);
  double eff = c_.gemm_efficiency * util * (op.k / (op.k + c_.gemm_k_overhead));
  // Tensor cores need the contiguous dimensions in multiples of 16 bytes (8 fp16/bf16 elements);
  // otherwise cuBLAS falls back to narrow-alignment kernels at a fraction of the rate (NVIDIA
  // "Matrix Multiplication Background" guide, §4 and its K=8190 vs 8192 comparison). The
  // factor is a default until calibrated.
  if (std::fmod(op.k, 8.0) != 0 || std::fmod(op.n, 8.0) != 0) eff *= c_.misaligned_gemm_factor;
  const bool fp8 = fp8_gemms_ && op.kind == OpKind::gemm && !op.bf16_under_fp8;
  if (op.kind == OpKind::attention) {
    bool bwd = std::string_view(op.name).ends_with("_bwd");
    eff *= bwd ? c_.attention_bwd_efficiency : c_.attention_fwd_efficiency;
    if (op.key_loop_scaling) eff *= key_loop_factor(op.n);
    // Whatever the sequence, a kernel runs at most at the tensor cores' peak.
    eff = std::min(eff, 1.0);
  } else if (fp8) {
    eff *= c_.fp8_gemm_factor;
  }
  const double peak = fp8 ? peak_flops_ : half_peak_flops_;
  const double t_compute = op.flops / (peak * eff);
  kt.wave_utilization = util;
  kt.time_s = std::max(t_compute, t_mem) + launch;
  if (tiles < sms_) kt.cls = KernelClass::under_utilized;
  else kt.cls = t_compute >= t_mem ? KernelClass::compute_bound : KernelClass::dram_bound;
  return kt;
}

double KernelModel::total_time(const std::vector<Op>& ops) const {
  double t = 0;
  for (const auto& op : ops) t += time(op).time_s;
  return t;
}

}  // namespace strata
