#include "costmodel/kernel_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace strata {

const char* to_string(KernelClass c) {
  switch (c) {
    case KernelClass::compute_bound: return "compute_bound";
    case KernelClass::dram_bound: return "dram_bound";
    case KernelClass::under_utilized: return "under_utilized";
    case KernelClass::attention_fwd: return "attention_fwd";
    case KernelClass::attention_bwd: return "attention_bwd";
  }
  return "?";
}

const char* to_string(MemoryPattern p) {
  switch (p) {
    case MemoryPattern::gemm_operands: return "gemm_operands";
    case MemoryPattern::elementwise_map: return "elementwise_map";
    case MemoryPattern::row_reduction: return "row_reduction";
  }
  return "?";
}

MemoryPattern memory_pattern(const Op& op) {
  if (op.kind != OpKind::elementwise) return MemoryPattern::gemm_operands;
  const std::string_view name(op.name);
  if (name.find("norm") != std::string_view::npos || name.find("softmax") != std::string_view::npos)
    return MemoryPattern::row_reduction;
  return MemoryPattern::elementwise_map;
}

namespace {

// An elementwise kernel that moves less than this cannot fill the GPU's memory pipeline.
constexpr double kSmallElementwiseBytes = 1e6;
// Widest head-dim tile of the fused attention kernels (attention_time).
constexpr double kAttentionHeadDimTile = 128;
// Bytes per clock one SM's load path delivers from L2: the A100 whitepaper's L2 bandwidth of
// 5120 B/clk over 108 SMs is ~47 B/clk per SM; 64 B/clk (one L1 cache line per two clocks) is the
// default until calibrated. With it, ~26 H100 SMs together reach the 3.35 TB/s of HBM3.
double saturating_sms(const GpuSpec& gpu, const KernelCoefficients& c) {
  if (gpu.boost_clock_MHz <= 0 || c.sm_load_bytes_per_clock <= 0) return 1;  // unknown: never limits
  return gpu.hbm_GBps * 1e9 / (c.sm_load_bytes_per_clock * gpu.boost_clock_MHz * 1e6);
}

// Special-function results (exp2, rcp, rsqrt, ...) per clock per SM: the CUDA C++ Programming
// Guide's arithmetic-instruction throughput table gives 16 for compute capabilities 5.x to 9.0,
// assumed the same on Blackwell. FlashAttention-3 (Shah et al. 2024, §3.1) sets H100 SXM's 3.9 T
// exponentials/s (132 SMs x 16 x 1.83 GHz) against its 989 TFLOP/s of bf16 matmul; strata takes
// the clock of the GPU file (boost_clock_MHz).
constexpr double kSpecialFunctionsPerClockPerSm = 16;

}  // namespace

KernelModel::KernelModel(const GpuSpec& gpu, Precision precision, const KernelCoefficients& coeff, LowPrecisionRecipe recipe)
    : peak_flops_(precision == Precision::fp8 ? gpu.low_precision_peak_flops(recipe) : gpu.peak_flops(precision)),
      half_peak_flops_(precision == Precision::fp8 ? gpu.peak_flops(Precision::bf16) : gpu.peak_flops(precision)),
      fp8_peak_flops_(gpu.fp8_tflops * 1e12),
      special_function_rate_(gpu.sm_count * kSpecialFunctionsPerClockPerSm * gpu.boost_clock_MHz * 1e6),
      fp8_gemms_(precision == Precision::fp8 && gpu.low_precision_peak_flops(recipe) > 0),
      hbm_Bps_(gpu.hbm_GBps * 1e9),
      fp32_flops_(gpu.fp32_tflops * 1e12),
      l2_bytes_(gpu.l2_MiB * 1024 * 1024),
      saturating_sms_(saturating_sms(gpu, coeff)),
      sms_(gpu.sm_count),
      c_(coeff) {
  if (peak_flops_ <= 0) peak_flops_ = gpu.peak_flops(Precision::fp16);  // caller checks support
  if (half_peak_flops_ <= 0) half_peak_flops_ = peak_flops_;
  // Transformer Engine's blockwise recipe (1x128 activation, 128x128 weight scales) runs cuBLASLt's
  // block-scaled fp8 GEMMs, which apply the scales inside the k-loop (fp8_blockwise_gemm_factor).
  low_precision_factor_ = coeff.fp8_gemm_factor * (recipe == LowPrecisionRecipe::blockwise ? coeff.fp8_blockwise_gemm_factor : 1.0);
  // A tile's prologue and epilogue (loading the first stages, writing C) take the same time at any
  // precision, while a k-step at the low-precision rate takes 1/2 (fp8) or 1/4 (fp4) of a bf16
  // one: the fixed cost is worth that many times more k elements. Measured on an H200
  // (configs/measurements h200-2026-11-27, CUPTI kernel times): fp8 GEMMs with K = 768-2048 run
  // 1.5-1.6x their bf16 twins, K >= 4096 1.77x.
  low_precision_k_overhead_ = coeff.gemm_k_overhead * (peak_flops_ / half_peak_flops_);
}

namespace {
// std::ceil of a non-negative x, exactly, without the general path of std::ceil (which the
// compiler cannot turn into one instruction for the baseline x86-64 target, and this runs for
// every tile shape of every GEMM of every prediction). Every double from 2^52 up is an integer.
double ceil_non_negative(double x) {
  if (!(x < 0x1p52)) return x;
  const double truncated = static_cast<double>(static_cast<std::int64_t>(x));
  return truncated < x ? truncated + 1 : truncated;
}
}  // namespace

double KernelModel::gemm_utilization(double m, double n, double batch, double* tiles_out) const {
  // Tile shapes cuBLAS picks among for large to small problems, with the relative throughput of
  // each tile shape (smaller tiles re-read operands more often). Defaults, not measurements.
  //
  // Utilization of a tile shape: the problem's area over the area its waves of tiles cover, times
  // the shape's throughput, eff * m*n*batch / (waves * sms * tm*tn). This runs for every GEMM of
  // every prediction, and divisions dominate its time: tile sides are powers of two, so their
  // reciprocals multiply exactly, and the shapes are compared by eff / (waves*tm*tn) cross-
  // multiplied (integers below 2^53, exact), dividing once for the winner.
  struct Tile {
    double tm, tn, eff;
  };
  static constexpr Tile kTiles[] = {{256, 128, 1.00}, {128, 128, 0.95}, {128, 64, 0.85}, {64, 64, 0.70}};
  if (tiles_out) *tiles_out = 1;
  if (!(m > 0 && n > 0 && batch > 0)) return 0;
  double best_eff = 0, best_area = 1, best_tiles = 1;  // area: waves * tm * tn of the best shape
  for (const auto& t : kTiles) {
    const double tiles = ceil_non_negative(m * (1 / t.tm)) * ceil_non_negative(n * (1 / t.tn)) * batch;
    const double area = ceil_non_negative(tiles / sms_) * t.tm * t.tn;
    if (t.eff * best_area > best_eff * area) {
      best_eff = t.eff;
      best_area = area;
      best_tiles = tiles;
    }
  }
  if (tiles_out) *tiles_out = best_tiles;
  return (m * n * batch) / (best_area * sms_) * best_eff;
}

double key_loop_factor(double keys, double fixed_blocks) {
  // A flash-attention query tile loads Q, then loops over 128-key blocks (a causal tile visits
  // w = keys/256 of them on average), then rescales and writes O and the log-sum-exp: a fixed cost
  // of c blocks per tile. Throughput follows w/(w + c) (c ~ 5 fits the committed H100
  // attention-scaling measurements within 5%, configs/measurements/README.md, forward and
  // backward, 2k-16k tokens; a calibration fits c per direction). Relative to 2048 tokens, the
  // length the attention efficiencies describe.
  constexpr double kReferenceBlocks = 2048.0 / 256;
  const double c = std::max(fixed_blocks, 0.0);
  const double w = std::max(1.0, keys / 256);
  return (w / (w + c)) / (kReferenceBlocks / (kReferenceBlocks + c));
}

namespace {
// `entries` of an op's batch entries as one round of concurrent kernels, with their share of the
// FLOPs and bytes.
Op some_entries(const Op& op, double entries) {
  Op part = op;
  part.concurrent = 0;
  part.batch = entries;
  part.flops = op.flops * entries / op.batch;
  part.bytes = op.bytes * entries / op.batch;
  return part;
}

// x is a whole multiple of 8. Scaling by a power of two is exact in binary floating point, so this
// equals std::fmod(x, 8) == 0 at a fraction of fmod's cost (it runs for every GEMM of every
// prediction).
bool multiple_of_8(double x) { return std::floor(x * 0.125) * 8.0 == x; }
}  // namespace

KernelClass KernelModel::classify(const Op& op) const {
  if (op.concurrent > 0 && op.batch > op.concurrent) return classify(some_entries(op, op.concurrent));
  double tiles = 1;
  if (op.kind == OpKind::gemm) gemm_utilization(op.m, op.n, op.batch, &tiles);
  return classify_shape(op, tiles);
}

KernelClass KernelModel::classify_shape(const Op& op, double tiles) const {
  if (op.kind == OpKind::attention)
    return std::string_view(op.name).ends_with("_bwd") ? KernelClass::attention_bwd : KernelClass::attention_fwd;
  if (op.kind == OpKind::elementwise)
    return op.bytes < kSmallElementwiseBytes ? KernelClass::under_utilized : KernelClass::dram_bound;
  // From the problem's tiles, not the launched grid: persistent GEMM kernels (cuBLAS nvjet on
  // Hopper) launch about one CTA per SM whatever the problem size.
  if (tiles < sms_) return KernelClass::under_utilized;
  // Roofline ridge (Williams et al. 2009) at the datasheet rates of the precision the op runs in.
  if (op.bytes <= 0) return KernelClass::compute_bound;
  return op.flops / op.bytes >= op_peak_flops(op) / hbm_Bps_ ? KernelClass::compute_bound : KernelClass::dram_bound;
}

double KernelModel::op_peak_flops(const Op& op) const {
  return low_precision_gemm(op) ? peak_flops_ : half_peak_flops_;
}

double KernelModel::gemm_shape_efficiency(const Op& op, double util) const {
  const double k_overhead = low_precision_gemm(op) ? low_precision_k_overhead_ : c_.gemm_k_overhead;
  double eff = c_.gemm_efficiency * util * (op.k / (op.k + k_overhead));
  // Tensor cores need the contiguous dimensions in multiples of 16 bytes (8 fp16/bf16 elements);
  // otherwise cuBLAS falls back to narrow-alignment kernels at a fraction of the rate (NVIDIA
  // "Matrix Multiplication Background" guide, §4 and its K=8190 vs 8192 comparison). The
  // factor is a default until calibrated.
  if (!multiple_of_8(op.k) || !multiple_of_8(op.n)) eff *= c_.misaligned_gemm_factor;
  return eff;
}

double KernelModel::tensor_core_time(const Op& op, double util) const {
  double eff = gemm_shape_efficiency(op, util);
  if (low_precision_gemm(op)) eff *= low_precision_factor_;
  return op.flops / (op_peak_flops(op) * eff);
}

// Compute-bound: t = launch + flops / (peak * gemm_efficiency * tile/wave utilization * K/(K + k0)).
double KernelModel::compute_bound_time(const Op& op, double util) const {
  return c_.launch_overhead_us * 1e-6 + tensor_core_time(op, util);
}

// DRAM-bound: t = overhead + bytes / (HBM * efficiency of the access pattern * fill) + math, where
//  - a GEMM below the ridge streams its operands (and cannot beat its tensor-core time);
//  - a row reduction runs one thread block per row: with fewer rows than row_rows_per_sm per SM
//    part of the GPU has nothing to load (fill = rows / (SMs * rows per SM), at most 1);
//  - up to the L2's size of an elementwise kernel's bytes may be served from L2 (the input the
//    previous kernel just wrote), at l2_bandwidth_factor times the HBM rate;
//  - an elementwise kernel also issues its math on the CUDA cores (erf, exp), which a kernel with
//    few bytes in flight per thread cannot hide behind its loads (Little's law: bandwidth = bytes
//    in flight / latency); elementwise_alu_efficiency 0 means fully hidden (vectorized fused kernels).
double KernelModel::dram_bound_time(const Op& op, double util) const {
  double t = c_.dram_overhead_us * 1e-6;
  const MemoryPattern pattern = memory_pattern(op);
  if (pattern == MemoryPattern::gemm_operands)
    return t + std::max(op.bytes / (hbm_Bps_ * c_.gemm_memory_efficiency), tensor_core_time(op, util));
  // Up to the L2's size of the bytes can be served from L2, at l2_bandwidth_factor times the rate.
  const double in_l2 = std::min(op.bytes, l2_bytes_);
  const double hbm_equivalent_bytes = op.bytes - in_l2 + in_l2 / c_.l2_bandwidth_factor;
  if (pattern == MemoryPattern::row_reduction) {
    double fill = 1;
    if (op.n > 0 && op.m > 0 && c_.row_rows_per_sm > 0) fill = std::min(1.0, (op.m / op.n) / (sms_ * c_.row_rows_per_sm));
    t += hbm_equivalent_bytes / (hbm_Bps_ * c_.row_memory_efficiency * fill);
  } else {
    t += hbm_equivalent_bytes / (hbm_Bps_ * c_.memory_efficiency);
  }
  if (c_.elementwise_alu_efficiency > 0 && fp32_flops_ > 0) t += op.flops / (fp32_flops_ * c_.elementwise_alu_efficiency);
  return t;
}

// Under-utilized (SEER: an analytical part plus a latency): one partial wave of `tiles` tiles. Its
// compute is the tensor-core time of that wave at under_utilized_gemm_factor of the full-wave
// rate; its loads come only from the busy SMs, each of which delivers sm_load_bytes_per_clock, so
// bandwidth = HBM * min(1, busy SMs / SMs that saturate HBM). Small elementwise kernels are latency
// plus their bytes at the map bandwidth.
double KernelModel::under_utilized_time(const Op& op, double util, double tiles) const {
  const double latency = c_.under_utilized_overhead_us * 1e-6;
  if (op.kind == OpKind::elementwise) return latency + op.bytes / (hbm_Bps_ * c_.memory_efficiency);
  const double busy = std::min<double>(tiles, sms_);
  const double bandwidth = hbm_Bps_ * c_.gemm_memory_efficiency * std::min(1.0, busy / saturating_sms_);
  return latency + std::max(tensor_core_time(op, util) / c_.under_utilized_gemm_factor, op.bytes / bandwidth);
}

// Attention: the tensor-core time at the direction's attention efficiency (FlashAttention-2 runs
// at ~70% / ~55% of the GEMM rate forward / backward, Dao 2023; cuDNN's fused kernel, with its
// own coefficients, faster on Hopper), times the key-loop factor of long sequences for fused
// kernels (key_loop_factor); never faster than the tensor-core peak.
double KernelModel::attention_time(const Op& op, double util, bool backward) const {
  // The head dim is the inner dimension of Q K^T, but past 128 the fused kernels gain nothing per
  // FLOP: they hold at most a 128-wide head-dim tile per pass (FlashAttention-2 and cuDNN tile the
  // larger ones with fewer query rows). Measured on an H200 (cuDNN, configs/measurements
  // h200-2026-11-27): MLA's 192/128 heads run at 0.99x (forward) and 0.89x (backward) the rate
  // of 128/128 heads, not the 1.12x the GEMM K-loop factor would give.
  Op tiles = op;
  tiles.k = std::min(op.k, kAttentionHeadDimTile);
  double eff = gemm_shape_efficiency(tiles, util);
  const bool cudnn = op.cudnn_attention;
  eff *= backward ? (cudnn ? c_.cudnn_attention_bwd_efficiency : c_.attention_bwd_efficiency)
                  : (cudnn ? c_.cudnn_attention_fwd_efficiency : c_.attention_fwd_efficiency);
  const double fixed_blocks = backward ? (cudnn ? c_.cudnn_attention_bwd_fixed_blocks : c_.attention_bwd_fixed_blocks)
                                       : (cudnn ? c_.cudnn_attention_fwd_fixed_blocks : c_.attention_fwd_fixed_blocks);
  // A sliding window's query tile loops over about its window of keys, whatever the sequence
  // length (Beltagy et al. 2020; FlashAttention and cuDNN skip the key blocks outside the window),
  // and a context-parallel ring step's over one rank's K/V block: the causal tile's mean of n/2
  // keys becomes the kernel's own, so short loops pay the tile's fixed cost over few blocks.
  const double keys = op.kernel_keys_per_query > 0 ? 2 * op.kernel_keys_per_query : op.n;
  if (op.key_loop_scaling) eff *= key_loop_factor(keys, fixed_blocks);
  if (op.attention_dropout)
    eff *= backward ? (cudnn ? c_.cudnn_attention_dropout_bwd_factor : c_.attention_dropout_bwd_factor)
                    : (cudnn ? c_.cudnn_attention_dropout_fwd_factor : c_.attention_dropout_fwd_factor);
  eff = std::min(eff, 1.0);
  double t = op.flops / (half_peak_flops_ * eff);
  if (op.fp8_attention && fp8_peak_flops_ > 0 && special_function_rate_ > 0) {
    // fp8 attention: the kernel's two (forward) or five (backward) products run on the fp8 tensor
    // cores, at fp8_gemm_factor of the rate ratio as fp8 GEMMs do, while its softmax still takes one
    // exponential per score on the special-function units, which fp8 does not speed up. The share
    // of the bf16 kernel's time that is exponentials is taken at the two units' peak rates (as if
    // the kernel did not overlap them: an upper bound on the share, so a lower bound on the gain).
    // A model, not measured: strata has no fp8 attention measurement (configs/measurements).
    const double matmul = op.flops / half_peak_flops_, exps = op.attention_scores / special_function_rate_;
    const double exp_share = matmul + exps > 0 ? exps / (matmul + exps) : 0.0;
    const double speedup = fp8_peak_flops_ * c_.fp8_gemm_factor / half_peak_flops_;
    if (speedup > 1) t *= (1 - exp_share) / speedup + exp_share;
  }
  return c_.launch_overhead_us * 1e-6 + t;
}

KernelTime KernelModel::time(const Op& op) const {
  if (op.concurrent > 0 && op.batch > op.concurrent) {
    // Rounds of `concurrent` kernels that share the GPU (one kernel at a time when 1), then the
    // remainder, each round timed and classed on its own share.
    const double rounds = std::floor(op.batch / op.concurrent), rest = op.batch - rounds * op.concurrent;
    KernelTime kt = time(some_entries(op, op.concurrent));
    kt.time_s *= rounds;
    if (rest > 0) kt.time_s += time(some_entries(op, rest)).time_s;
    return kt;
  }
  KernelTime kt;
  double tiles = 1, util = 1;
  if (op.kind != OpKind::elementwise) util = gemm_utilization(op.m, op.n, op.batch, &tiles);
  kt.wave_utilization = util;
  kt.cls = classify_shape(op, tiles);
  switch (kt.cls) {
    case KernelClass::compute_bound: kt.time_s = compute_bound_time(op, util); break;
    case KernelClass::dram_bound: kt.time_s = dram_bound_time(op, util); break;
    case KernelClass::under_utilized: kt.time_s = under_utilized_time(op, util, tiles); break;
    case KernelClass::attention_fwd: kt.time_s = attention_time(op, util, false); break;
    case KernelClass::attention_bwd: kt.time_s = attention_time(op, util, true); break;
  }
  return kt;
}

double KernelModel::total_time(const std::vector<Op>& ops) const {
  double t = 0;
  for (const auto& op : ops) t += time(op).time_s;
  return t;
}

}  // namespace strata
