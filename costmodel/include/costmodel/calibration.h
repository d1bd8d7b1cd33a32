#pragma once
// Coefficients of the kernel and communication models. Every field has a documented default (used
// when no calibration file exists for the GPU); `strata calibrate` fits them from CUPTI profiles.
#include <string>

#include <nlohmann/json.hpp>

namespace strata {

// Coefficients of KernelModel's per-class models (costmodel/kernel_model.h gives each formula):
//   compute-bound:  t = launch + flops / (peak * gemm_efficiency * wave_util * K/(K + k_overhead))
//   DRAM-bound:     t = dram_overhead + bytes / (hbm * efficiency of the access pattern * row fill)
//                       (the bytes that fit in L2 at l2_bandwidth_factor times that rate)
//                       + elementwise flops / (fp32 peak * elementwise_alu_efficiency)
//   under-utilized: t = under_utilized_overhead + max(tensor-core time of one partial wave
//                       / under_utilized_gemm_factor,
//                       bytes / (hbm * gemm_memory_efficiency * min(1, busy SMs / saturating SMs)))
//   attention:      the tensor-core time at attention_{fwd,bwd}_efficiency and the key-loop factor
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
  // Per-kernel launch + tail overhead in microseconds (compute-bound and attention kernels).
  double launch_overhead_us = 4.0;
  // Relative cost of the k-loop prologue/epilogue: a GEMM with inner dimension K runs at
  // K / (K + gemm_k_overhead) of its tile throughput.
  double gemm_k_overhead = 64.0;
  // Throughput of a GEMM whose inner or leading dimension is not a multiple of 8 elements,
  // relative to an aligned one (narrow-alignment cuBLAS kernels). A default.
  double misaligned_gemm_factor = 0.5;
  // Efficiency of fp8 GEMMs relative to bf16/fp16 ones (each against its own tensor-core peak):
  // measured on an H100 SXM (configs/measurements, 441 GEMMs over 0.5 TFLOP profiled in both
  // precisions): fp8 reached a median 78% of the 1979 TFLOP/s fp8 peak where bf16 reached 85% of
  // 989, a 1.83x speedup rather than 2x. Used for every GPU with fp8 (a guess beyond Hopper).
  double fp8_gemm_factor = 0.92;
  // Transformer Engine's blockwise fp8 recipe (Float8BlockScaling: 1x128 scales on activations and
  // gradients, 128x128 on weights) against per-tensor scaling: cuBLASLt's block-scaled GEMMs ran at
  // a median 0.93 of the per-tensor ones' rate on 34 training shapes (H200, CUPTI kernel times,
  // configs/measurements h200-2026-11-27). Measured on Hopper; a guess elsewhere.
  double fp8_blockwise_gemm_factor = 0.93;
  // DRAM-bound class. Bandwidth fractions of the other two access patterns (memory_efficiency is
  // the elementwise maps'): GEMMs below the ridge streaming their operands, and row reductions
  // (norms, softmax). Defaults: the map's 0.80 until calibrated.
  double gemm_memory_efficiency = 0.80;
  double row_memory_efficiency = 0.80;
  // Rows a row-reduction kernel needs resident per SM to keep every SM loading (one thread block
  // per row). Default 1: a kernel with fewer rows than SMs leaves SMs idle.
  double row_rows_per_sm = 1.0;
  // Rate of elementwise math on the CUDA cores as a fraction of the fp32 peak, for kernels that
  // cannot hide it behind their loads. Default 0: hidden, as in vectorized fused kernels
  // (Transformer Engine, apex); a calibration on scalar kernels measures it.
  double elementwise_alu_efficiency = 0.0;
  // Bandwidth of the part of an elementwise kernel's bytes that can stay in L2 (at most the L2's
  // size: an input the previous kernel just wrote, or a small tensor re-read), relative to its
  // HBM rate. Default 1 (no L2 reuse assumed) until calibrated.
  double l2_bandwidth_factor = 1.0;
  // Fixed cost of a DRAM-bound kernel (launch, ramp-up and drain of the memory pipeline), in us.
  double dram_overhead_us = 4.0;
  // Under-utilized class: bytes per clock one SM loads (sets how many SMs saturate HBM; 64, one
  // 128-byte line every two clocks, is a default) and the fixed latency of a partial wave, in us.
  double sm_load_bytes_per_clock = 64.0;
  double under_utilized_overhead_us = 4.0;
  // Tensor-core rate of a partial wave's tiles relative to a full wave's (gemm_efficiency): with
  // SMs idle, each busy SM has more of the L2 and HBM bandwidth to itself. Default 1 until calibrated.
  double under_utilized_gemm_factor = 1.0;
  // Attention class: the fixed cost of a flash-attention query tile in 128-key blocks (load Q,
  // rescale and write O), forward and backward (key_loop_factor). Default 5 (H100 measurements).
  double attention_fwd_fixed_blocks = 5.0;
  double attention_bwd_fixed_blocks = 5.0;
  // The same four for cuDNN's fused flash attention (Transformer Engine's FusedAttention, what
  // Megatron-Core runs on Hopper and later: resolved_attention_kernel), relative to gemm_efficiency
  // like FlashAttention-2's. Defaults: FlashAttention-2's (no measured difference assumed) except on
  // Hopper, where default_calibration sets the H200 measurements (Blackwell, unmeasured, keeps
  // FlashAttention-2's Hopper fraction).
  double cudnn_attention_fwd_efficiency = 0.70;
  double cudnn_attention_bwd_efficiency = 0.55;
  double cudnn_attention_fwd_fixed_blocks = 5.0;
  double cudnn_attention_bwd_fixed_blocks = 5.0;
  // Rate of fused attention with dropout on its probabilities (p 0.1) relative to without, forward
  // and backward, FlashAttention-2 and cuDNN: measured on an H200 at 2k-16k tokens, where the ratio
  // held within 3% across lengths (scripts/attention_dropout.py on
  // configs/measurements/h200-2026-11-27.attention-variants.json; a guess on other GPUs).
  double attention_dropout_fwd_factor = 0.832;
  double attention_dropout_bwd_factor = 0.883;
  double cudnn_attention_dropout_fwd_factor = 0.516;
  double cudnn_attention_dropout_bwd_factor = 0.832;
  // Slowdown of compute while overlapped NCCL kernels share its SMs and HBM bandwidth: each second
  // of overlapped communication costs this fraction of a second of compute. A default (NCCL uses
  // ~8-32 of the SMs for its channels).
  double overlap_interference = 0.15;
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

// Time the host (Python, PyTorch dispatch, kernel launches) takes to issue GPU work where the GPU
// cannot run ahead of it. A property of the software stack and the CPU, like the kernel
// efficiencies of the GPU.
//
// A dropless Megatron-Core dispatcher synchronises the host with the GPU once per MoE layer
// forward (the token counts it needs on the host: MoEAlltoAllTokenDispatcher's
// _maybe_dtoh_and_synchronize, HybridEP's blocking dispatch), so the host cannot queue work ahead
// and the layer's forward takes at least the host's time to issue it; a backward whose host time
// exceeds its GPU time leaves the GPU waiting too.
//
// The defaults are measured: Megatron-Core's own MoELayer (snapshot of 2026-08, alltoall and
// allgather dispatchers, one line each, SequentialMLP experts, PyTorch permutation, bf16) on an H100 machine's CPU (Xeon,
// Emerald Rapids, KVM guest), host time per layer = fixed + per local expert x experts on the GPU:
// least squares over 1-64 local experts, medians of three runs
// (configs/measurements/h100-2026-11-27.moe-layer-host.json; scripts/fit_moe_host.py prints the
// fit, and a test keeps these figures equal to it). Transformer Engine's grouped GEMM
// (--moe-grouped-gemm) issues the experts from one module: its per-expert host work was not
// measured (no Transformer Engine on that machine), so grouped-GEMM layers count the fixed part
// only.
//
// The synchronisation splits each layer's forward in two. Most of the fixed part (router, aux loss,
// permutation) is issued before it, the experts and the combine after it; the next layer's
// attention block is issued after that, up to the next synchronisation. So that attention's GPU
// time cannot hide the host time issued ahead of it, and its own host time (norms, QKV, rotary,
// attention, projection, residuals) adds to the MoE block's (layer_cost.cpp, "the synchronisation
// splits the layer"). Both are measured too: the share before the synchronisation in the profiled
// H100 layers (configs/measurements/h100-2026-11-27.moe-layer-*.trace.json.gz: 0.78 and 0.70), the
// attention block's host time as a whole Megatron-Core decoder layer's minus its MoE block's, paired
// in one process on an H200 machine (configs/measurements/h200-2026-11-27.moe-whole-layer-host.json,
// median of six pairs; local spec: unfused attention, no Transformer Engine).
// scripts/moe_sync_split.py prints both, and a test keeps these figures equal to it.
struct HostCoefficients {
  // A measured CPU time per MoE layer forward of your stack, in seconds; it replaces the line
  // below (the backward scales with it in the line's proportion). 0: use the line. Measure it on a
  // timeline (Nsight Systems: the CPU span of one MoE layer's forward), or fit it to measured
  // steps at micro-batch 1 (`strata calibrate --steps --fit moe-host`).
  double moe_forward_s = 0;
  double moe_forward_fixed_s = 3.74e-3;         // router, dispatcher, permutation, the synchronisation
  double moe_forward_per_expert_s = 0.375e-3;   // each local expert's linears and activation
  double moe_backward_fixed_s = 2.02e-3;
  double moe_backward_per_expert_s = 0.569e-3;
  // The same line for Megatron-Core's allgather dispatcher (MoEAllGatherTokenDispatcher, Megatron's
  // default without --moe-token-dispatcher-type: three all-gathers and one local permutation, no
  // split-size lists or chunk sort), measured in the same runs; used when runtime.moe_allgather_dispatch.
  double moe_allgather_forward_fixed_s = 2.60e-3;
  double moe_allgather_forward_per_expert_s = 0.328e-3;
  double moe_allgather_backward_fixed_s = 2.37e-3;
  double moe_allgather_backward_per_expert_s = 0.453e-3;
  double moe_forward_presync_fraction = 0.74;   // of the fixed forward part, issued before the synchronisation
  // Where in the rest of the forward a second synchronisation falls, one at the experts' activation
  // (GPT-OSS's fused quick-GeGLU, MoeHostTime::activation_syncs): the share of the fixed part after
  // the dispatcher's synchronisation issued before the first expert, and the share of a
  // SequentialMLP expert's host time issued before its activation. From the same profiled layers
  // (scripts/moe_sync_split.py; 0.45 and 0.42, and 0.27 and 0.26).
  double moe_forward_before_experts_fraction = 0.43;
  double moe_expert_before_activation_fraction = 0.26;
  double moe_attention_forward_s = 2.10e-3;     // the rest of an MoE decoder layer (attention block), forward
  double moe_attention_backward_s = 2.41e-3;    // and backward
  // Biased experts under a grouped GEMM (GPT-OSS; layer_ops add_expert_bias_ops): the fc2 bias is
  // added expert by expert in eager PyTorch, two ops forward (aten::mul, aten::add) and their
  // autograd nodes backward (MulBackward0, AddBackward0) per local expert, issued after the
  // synchronisation. From the profiled H100 MoE layers (scripts/eager_op_host.py).
  double moe_expert_bias_forward_per_expert_s = 3.5e-05;
  double moe_expert_bias_backward_per_expert_s = 4.86e-05;
  // Host time of one CUDA graph replay (runtime.cuda_graph_modules), each direction: Transformer
  // Engine's graphed callable copies its inputs into the static buffers and launches the graph
  // (cudaGraphLaunch) under an autograd Function. A guess, not measured: 0.1 ms, a few kernel
  // launches and a Python call or two.
  double cuda_graph_replay_s = 1e-4;
  bool operator==(const HostCoefficients&) const = default;
};

struct Calibration {
  std::string source = "defaults (uncalibrated)";  // where the coefficients came from
  KernelCoefficients kernel;
  CommCoefficients comm;
  HostCoefficients host;
  bool operator==(const Calibration&) const = default;
};

struct GpuSpec;
// Per-architecture defaults, used until `strata calibrate` has measured the GPU:
//  ampere (A100): cuBLAS fp16/bf16 reaches ~80% of the 312 TFLOP/s peak on large training GEMMs
//    (MosaicML's A100 runs report 75-79% HFU, which bounds it from below); FlashAttention-2
//    forward ~70%, backward ~55% of the GEMM rate (Dao 2023, Fig. 4-6 on A100).
//  hopper (H100/H200): at the 700 W limit bf16 GEMMs sustain ~630 of 989 TFLOP/s (~64%): clocks
//    drop from 1.83 GHz under tensor-core load; FlashAttention-2 (no wgmma) reaches ~35% of peak
//    forward and ~30% backward (Shah et al. 2024, FlashAttention-3, Fig. 5 baselines).
//    Checked on one H100 (configs/measurements): back-to-back 8192^3 bf16 GEMMs held 668 TFLOP/s
//    (67.5%) at ~1335 MHz; with these defaults, measured layer steps and whole one-GPU training
//    iterations come out within ~10%. A training mix draws less power than pure GEMMs and kept
//    1725-1965 MHz there (2 s averages, which cannot resolve the clock of each GEMM).
//  blackwell: power-limited like hopper: GEMMs at the H100's sustained 0.95 TFLOP/s per watt
//    times 1.2 (a guess for Blackwell's energy per FLOP) times the GPU's power limit, at most the
//    hopper fraction (B200: 51% of its dense peak); attention as hopper.
//  ada (L40S, PCIe, 350 W): the hopper figures (a guess).
//  cdna3 (MI300X): hipBLASLt bf16 reaches ~45-50% of the 1307 TFLOP/s peak on training shapes
//    (public MI300X training benchmarks, 2024); attention as hopper (a guess).
//  cdna4 (MI355X): the cdna3 fractions of its own peaks (a guess, not measured).
// The Calibration's `source` says which default was used.
Calibration default_calibration(const GpuSpec& gpu);

// `path` is the JSON path of the object inside its file ("" at the top, "/calibration" in a plan).
// The calibration file schema written by calibration_to_json and the only one read.
inline constexpr int kCalibrationSchemaVersion = 1;
Calibration calibration_from_json(const nlohmann::json& j, const std::string& where, const std::string& path = "");
nlohmann::json calibration_to_json(const Calibration& c);

}  // namespace strata
