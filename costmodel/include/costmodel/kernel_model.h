#pragma once
// Kernel time on one GPU in the spirit of SEER (Lu et al., PACT'21): every kernel is classified
// from its shape, and the class chooses the model that times it:
//   compute-bound   the output fills at least one wave of tiles and its arithmetic intensity is at
//                   or above the roofline ridge: tensor-core rate with tile and wave quantization
//                   and the K-loop prologue/epilogue;
//   DRAM-bound      below the ridge: bytes at the bandwidth its access pattern reaches (streaming
//                   GEMM operands, elementwise maps, row reductions), plus the instructions of
//                   math-heavy elementwise kernels;
//   under-utilized  fewer tiles than SMs (or an elementwise kernel under 1 MB): one partial wave,
//                   whose loads come from only the SMs that are busy, plus its own latency;
//   attention       fused (flash) attention forward and backward: the GEMM rate times the
//                   attention efficiency, growing with the keys each query tile visits.
// The class is a function of the op and the GPU only (not of the coefficients), so a calibration
// fits each class's coefficients on exactly the kernels that class will time.
#include <vector>

#include "costmodel/calibration.h"
#include "costmodel/gpu_spec.h"
#include "costmodel/layer_ops.h"

namespace strata {

enum class KernelClass { compute_bound, dram_bound, under_utilized, attention_fwd, attention_bwd };
const char* to_string(KernelClass c);

// How a DRAM-bound kernel walks memory, which sets the bandwidth it reaches.
enum class MemoryPattern {
  gemm_operands,    // a GEMM below the ridge streams its (skinny) operands through the tiles
  elementwise_map,  // one pass: each element read and written once (activations, adds, casts)
  row_reduction,    // one thread block per row, several passes over it (norms, softmax)
};
const char* to_string(MemoryPattern p);
// Norms and softmax (by the op's name, as layer_ops and the profiler suite name them) reduce rows.
MemoryPattern memory_pattern(const Op& op);

struct KernelTime {
  double time_s = 0;
  KernelClass cls = KernelClass::dram_bound;
  double wave_utilization = 1;  // fraction of SM-tile slots doing useful work
};

// Flash attention's throughput at `keys` keys relative to its throughput at 2048 (see the .cpp).
// `fixed_blocks` is the per-tile fixed cost in key blocks (KernelCoefficients::attention_*_fixed_blocks).
double key_loop_factor(double keys, double fixed_blocks = 5);

class KernelModel {
 public:
  // `recipe` picks the tensor-core peak of low-precision GEMMs (fp4 for NVFP4, else fp8); it is
  // read only with Precision::fp8.
  KernelModel(const GpuSpec& gpu, Precision precision, const KernelCoefficients& coeff,
              LowPrecisionRecipe recipe = LowPrecisionRecipe::delayed);
  KernelTime time(const Op& op) const;
  double total_time(const std::vector<Op>& ops) const;

  // The SEER class of an op on this GPU (depends on the shape, never on the coefficients).
  KernelClass classify(const Op& op) const;

  // Tile utilization of an m x n (x batch) output on this GPU with the best of the usual cuBLAS
  // tile shapes (wave quantization: the last wave runs partly empty; tile quantization: partial
  // tiles at the edges do wasted work). Returns utilization times the tile shape's own efficiency.
  double gemm_utilization(double m, double n, double batch, double* tiles_out = nullptr) const;

 private:
  KernelClass classify_shape(const Op& op, double tiles) const;
  // One model per class (see the top of this file and the .cpp for each formula's source).
  double compute_bound_time(const Op& op, double util) const;
  double dram_bound_time(const Op& op, double util) const;
  double under_utilized_time(const Op& op, double util, double tiles) const;
  double attention_time(const Op& op, double util, bool backward) const;
  // gemm_efficiency times the tile/wave utilization, the K-loop term and the alignment penalty.
  double gemm_shape_efficiency(const Op& op, double util) const;
  // The tensor-core time of a GEMM-like op at the compute class's efficiency, and the peak it runs at.
  double tensor_core_time(const Op& op, double util) const;
  double op_peak_flops(const Op& op) const;
  // A GEMM that runs at the low-precision (fp8/fp4) rate.
  bool low_precision_gemm(const Op& op) const { return fp8_gemms_ && op.kind == OpKind::gemm && !op.bf16_under_fp8; }

  double peak_flops_;
  double half_peak_flops_;       // bf16/fp16 peak: fp8 training keeps attention and Op::bf16_under_fp8 GEMMs there
  double fp8_peak_flops_;        // the fp8 tensor cores' peak, for fp8 attention (Op::fp8_attention); 0: none
  double special_function_rate_;  // exponentials per second of all SMs (attention_time)
  bool fp8_gemms_;               // GEMMs run in fp8/fp4 (at fp8_gemm_factor of the bf16 efficiency)
  double low_precision_factor_;  // fp8_gemm_factor, times the block-scaled recipe's own factor
  double low_precision_k_overhead_;  // gemm_k_overhead in k elements at the low-precision rate
  double hbm_Bps_;
  double fp32_flops_;            // CUDA-core fp32 peak: the instruction rate of elementwise math
  double l2_bytes_;              // L2 capacity
  double saturating_sms_;        // SMs whose loads together reach the HBM bandwidth
  int sms_;
  KernelCoefficients c_;
};

}  // namespace strata
