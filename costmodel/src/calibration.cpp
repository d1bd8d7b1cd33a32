#include "costmodel/calibration.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "costmodel/gpu_spec.h"
#include "costmodel/json_reader.h"

namespace strata {

namespace {

// cuDNN's fused flash attention on Hopper (Transformer Engine's FusedAttention), measured on an
// H200 (configs/measurements, h200-2026-11-27: 49 forward and 49 backward kernels, head dims 64,
// 128 and MLA's 192/128, 8 and 32 heads, 2k-128k tokens, causal and full blocks). cuDNN reaches
// 56-61% of the dense bf16 peak forward and ~55% backward from 16k tokens on (head dim 128), 1.7x
// FlashAttention-2's 33-35% on the same GPU; at 2k tokens 41% / 34% against 21% / 21%.
// `strata calibrate` fits 0.99 / 0.76 of the Hopper default GEMM efficiency with 3.9 / 6.2 fixed
// blocks (median error 4.2% / 4.7%; 4.1% / 8.0% with each head dim held out of the fit). The
// efficiencies are relative to gemm_efficiency, so they are the attention kernel's rate over a
// GEMM's at the same clock: the short bursts that timed the attention ran GEMMs at 0.70 of peak
// (median of 72 large bf16 GEMMs of the same run), not the default's sustained 0.64, so each
// takes 0.64 / 0.70 of its fit. Under the power limit of a training step attention then slows
// like the GEMMs, as the longest cuDNN kernels of the run did (128k tokens, seconds back to back:
// 10% below their 64k rate forward). FlashAttention-2's kernels on the same GPU fit 0.53 / 0.48
// with 5.7 / 6.1 fixed blocks against the default base, within 4% of the Hopper defaults above,
// which stay as they are.
void set_hopper_cudnn_attention(KernelCoefficients& k) {
  constexpr double kBurstGemmEfficiency = 0.70, kDefaultGemmEfficiency = 0.64;
  constexpr double same_clock = kDefaultGemmEfficiency / kBurstGemmEfficiency;
  k.cudnn_attention_fwd_efficiency = 0.99 * same_clock;
  k.cudnn_attention_bwd_efficiency = 0.76 * same_clock;
  k.cudnn_attention_fwd_fixed_blocks = 3.9;
  k.cudnn_attention_bwd_fixed_blocks = 6.2;
}

}  // namespace

Calibration default_calibration(const GpuSpec& gpu) {
  Calibration c;
  const std::string& arch = gpu.architecture;
  if (arch == "ampere") {
    c.kernel.gemm_efficiency = 0.80;
    c.kernel.attention_fwd_efficiency = 0.70;
    c.kernel.attention_bwd_efficiency = 0.55;
  } else if (arch == "cdna3" || arch == "cdna4") {
    // CDNA 4 (MI355X) is not measured: it takes CDNA 3's fractions of its own peaks (a guess).
    c.kernel.gemm_efficiency = 0.48;
    c.kernel.attention_fwd_efficiency = 0.55;
    c.kernel.attention_bwd_efficiency = 0.47;
  } else if (arch == "blackwell") {
    // Power-limited like Hopper: an H100 holds 668 TFLOP/s of bf16 GEMMs at its 700 W limit
    // (configs/measurements, sustained-gemm), 0.95 TFLOP/s per watt. Blackwell is made on the same
    // 4nm-class process; its tensor cores are taken as 1.2x more energy-efficient per FLOP (a
    // guess, no public measurement). At its power limit that is 1000 W x 0.95 x 1.2 = 1150 TFLOP/s
    // on a B200 (51% of the 2250 dense peak); bounded by the Hopper fraction.
    constexpr double kHopperSustainedTflopsPerWatt = 668.0 / 700.0, kBlackwellEnergyGain = 1.2;
    const double sustained = kHopperSustainedTflopsPerWatt * kBlackwellEnergyGain * gpu.power_W;
    c.kernel.gemm_efficiency = gpu.bf16_tflops > 0 ? std::min(0.64, sustained / gpu.bf16_tflops) : 0.64;
    // Attention is timed relative to the GEMM rate (KernelModel::attention_time), but the power limit
    // that holds GEMMs down does not bind it: its tensor cores wait on the softmax much of the time.
    // Its fraction of the tensor-core peak is the Hopper one, a property of the kernel's pipeline.
    const double unthrottled = 0.64 / c.kernel.gemm_efficiency;
    c.kernel.attention_fwd_efficiency = 0.55 * unthrottled;
    c.kernel.attention_bwd_efficiency = 0.47 * unthrottled;
    // cuDNN's attention on Blackwell (its own tcgen05 kernels) is not measured: its coefficients
    // stay FlashAttention-2's, the Hopper fraction as above (KernelCoefficients' defaults would be
    // Ampere's).
    c.kernel.cudnn_attention_fwd_efficiency = c.kernel.attention_fwd_efficiency;
    c.kernel.cudnn_attention_bwd_efficiency = c.kernel.attention_bwd_efficiency;
  } else {  // hopper, and the guess for ada and unknown architectures
    c.kernel.gemm_efficiency = 0.64;
    c.kernel.attention_fwd_efficiency = 0.55;
    c.kernel.attention_bwd_efficiency = 0.47;
    if (arch == "hopper") set_hopper_cudnn_attention(c.kernel);
  }
  c.source = "defaults (uncalibrated, " + (arch.empty() ? std::string("unknown") : arch) + " architecture)";
  return c;
}

namespace {

// An optional number within [lo, hi] (0 allowed where lo is 0), else the default.
double in_range(const JsonReader& k, const char* key, double fallback, double lo, double hi, const char* unit) {
  if (!k.has(key)) return fallback;
  const double v = k.get_number(key);
  if (!(v >= lo && v <= hi)) k.fail(key, fmt::format("expected {}..{} {}", lo, hi, unit));
  return v;
}

}  // namespace

Calibration calibration_from_json(const json& j, const std::string& where, const std::string& path) {
  JsonReader r(j, where, path);
  r.reject_unknown_keys({"schema_version", "source", "gpu", "kernel", "comm", "host", "fit", "notes"});
  // Only the schema this strata writes (calibration_to_json): a newer file may mean something else
  // by the same keys. Files without the key (hand-written ones) are read as schema 1.
  if (r.has("schema_version") && r.get_int("schema_version", 0, 1000000) != kCalibrationSchemaVersion)
    r.fail("schema_version", "this strata reads calibration schema version " + std::to_string(kCalibrationSchemaVersion) +
                                 ", found " + r.raw("schema_version").dump());
  Calibration c;
  c.source = r.opt_string("source").value_or(where);
  if (r.has("kernel")) {
    JsonReader k = r.child("kernel");
    k.reject_unknown_keys({"gemm_efficiency", "attention_fwd_efficiency", "attention_bwd_efficiency",
                           "memory_efficiency", "launch_overhead_us", "gemm_k_overhead", "misaligned_gemm_factor",
                           "fp8_gemm_factor", "fp8_blockwise_gemm_factor", "overlap_interference", "gemm_memory_efficiency", "row_memory_efficiency",
                           "row_rows_per_sm", "elementwise_alu_efficiency", "dram_overhead_us", "sm_load_bytes_per_clock",
                           "under_utilized_overhead_us", "under_utilized_gemm_factor", "l2_bandwidth_factor", "attention_fwd_fixed_blocks", "attention_bwd_fixed_blocks",
                           "cudnn_attention_fwd_efficiency", "cudnn_attention_bwd_efficiency", "cudnn_attention_fwd_fixed_blocks",
                           "cudnn_attention_bwd_fixed_blocks", "attention_dropout_fwd_factor", "attention_dropout_bwd_factor",
                           "cudnn_attention_dropout_fwd_factor", "cudnn_attention_dropout_bwd_factor"});
    auto& kc = c.kernel;
    kc.gemm_efficiency = k.opt_positive("gemm_efficiency", 1.0).value_or(kc.gemm_efficiency);
    kc.attention_fwd_efficiency = k.opt_positive("attention_fwd_efficiency", 1.5).value_or(kc.attention_fwd_efficiency);
    kc.attention_bwd_efficiency = k.opt_positive("attention_bwd_efficiency", 1.5).value_or(kc.attention_bwd_efficiency);
    kc.memory_efficiency = k.opt_positive("memory_efficiency", 1.0).value_or(kc.memory_efficiency);
    kc.launch_overhead_us = k.has("launch_overhead_us") ? k.get_number("launch_overhead_us") : kc.launch_overhead_us;
    if (kc.launch_overhead_us < 0 || kc.launch_overhead_us > 1e4) k.fail("launch_overhead_us", "expected 0..10000 microseconds");
    kc.gemm_k_overhead = k.has("gemm_k_overhead") ? k.get_number("gemm_k_overhead") : kc.gemm_k_overhead;
    if (kc.gemm_k_overhead < 0 || kc.gemm_k_overhead > 1e5) k.fail("gemm_k_overhead", "expected 0..100000");
    kc.misaligned_gemm_factor = k.opt_positive("misaligned_gemm_factor", 1.0).value_or(kc.misaligned_gemm_factor);
    kc.fp8_gemm_factor = k.opt_positive("fp8_gemm_factor", 1.5).value_or(kc.fp8_gemm_factor);
    kc.fp8_blockwise_gemm_factor = k.opt_positive("fp8_blockwise_gemm_factor", 1.5).value_or(kc.fp8_blockwise_gemm_factor);
    kc.overlap_interference = k.has("overlap_interference") ? k.get_number("overlap_interference") : kc.overlap_interference;
    if (kc.overlap_interference < 0 || kc.overlap_interference > 1) k.fail("overlap_interference", "expected 0..1");
    kc.gemm_memory_efficiency = k.opt_positive("gemm_memory_efficiency", 1.5).value_or(kc.gemm_memory_efficiency);
    kc.row_memory_efficiency = k.opt_positive("row_memory_efficiency", 1.5).value_or(kc.row_memory_efficiency);
    kc.row_rows_per_sm = k.opt_positive("row_rows_per_sm", 1e4).value_or(kc.row_rows_per_sm);
    kc.sm_load_bytes_per_clock = k.opt_positive("sm_load_bytes_per_clock", 1e4).value_or(kc.sm_load_bytes_per_clock);
    kc.attention_fwd_fixed_blocks = in_range(k, "attention_fwd_fixed_blocks", kc.attention_fwd_fixed_blocks, 0, 1e3, "blocks");
    kc.attention_bwd_fixed_blocks = in_range(k, "attention_bwd_fixed_blocks", kc.attention_bwd_fixed_blocks, 0, 1e3, "blocks");
    kc.cudnn_attention_fwd_efficiency = k.opt_positive("cudnn_attention_fwd_efficiency", 1.5).value_or(kc.cudnn_attention_fwd_efficiency);
    kc.cudnn_attention_bwd_efficiency = k.opt_positive("cudnn_attention_bwd_efficiency", 1.5).value_or(kc.cudnn_attention_bwd_efficiency);
    kc.cudnn_attention_fwd_fixed_blocks = in_range(k, "cudnn_attention_fwd_fixed_blocks", kc.cudnn_attention_fwd_fixed_blocks, 0, 1e3, "blocks");
    kc.cudnn_attention_bwd_fixed_blocks = in_range(k, "cudnn_attention_bwd_fixed_blocks", kc.cudnn_attention_bwd_fixed_blocks, 0, 1e3, "blocks");
    for (auto [key, field] : {std::pair{"attention_dropout_fwd_factor", &kc.attention_dropout_fwd_factor},
                              std::pair{"attention_dropout_bwd_factor", &kc.attention_dropout_bwd_factor},
                              std::pair{"cudnn_attention_dropout_fwd_factor", &kc.cudnn_attention_dropout_fwd_factor},
                              std::pair{"cudnn_attention_dropout_bwd_factor", &kc.cudnn_attention_dropout_bwd_factor}})
      *field = k.opt_positive(key, 1.0).value_or(*field);
    kc.elementwise_alu_efficiency = in_range(k, "elementwise_alu_efficiency", kc.elementwise_alu_efficiency, 0, 1.5, "(a fraction of the fp32 peak)");
    kc.dram_overhead_us = in_range(k, "dram_overhead_us", kc.dram_overhead_us, 0, 1e4, "microseconds");
    kc.l2_bandwidth_factor = in_range(k, "l2_bandwidth_factor", kc.l2_bandwidth_factor, 1, 100, "(L2 over HBM bandwidth)");
    kc.under_utilized_gemm_factor = k.opt_positive("under_utilized_gemm_factor", 2.0).value_or(kc.under_utilized_gemm_factor);
    kc.under_utilized_overhead_us = in_range(k, "under_utilized_overhead_us", kc.under_utilized_overhead_us, 0, 1e4, "microseconds");
  }
  if (r.has("comm")) {
    JsonReader m = r.child("comm");
    m.reject_unknown_keys({"nvlink_efficiency", "network_efficiency", "half_bandwidth_bytes"});
    c.comm.nvlink_efficiency = m.opt_positive("nvlink_efficiency", 1.0).value_or(c.comm.nvlink_efficiency);
    c.comm.network_efficiency = m.opt_positive("network_efficiency", 1.0).value_or(c.comm.network_efficiency);
    c.comm.half_bandwidth_bytes = m.opt_positive("half_bandwidth_bytes", 1e12).value_or(c.comm.half_bandwidth_bytes);
  }
  if (r.has("host")) {
    JsonReader h = r.child("host");
    h.reject_unknown_keys({"moe_forward_s", "moe_forward_fixed_s", "moe_forward_per_expert_s", "moe_backward_fixed_s",
                           "moe_backward_per_expert_s", "moe_allgather_forward_fixed_s", "moe_allgather_forward_per_expert_s",
                           "moe_allgather_backward_fixed_s", "moe_allgather_backward_per_expert_s", "moe_forward_presync_fraction", "moe_forward_before_experts_fraction",
                           "moe_expert_before_activation_fraction", "moe_attention_forward_s",
                           "moe_attention_backward_s", "moe_expert_bias_forward_per_expert_s", "moe_expert_bias_backward_per_expert_s",
                           "cuda_graph_replay_s"});
    c.host.cuda_graph_replay_s = in_range(h, "cuda_graph_replay_s", c.host.cuda_graph_replay_s, 0, 1, "seconds per CUDA graph replay");
    c.host.moe_forward_s = in_range(h, "moe_forward_s", c.host.moe_forward_s, 0, 1, "seconds per MoE layer forward");
    c.host.moe_forward_fixed_s = in_range(h, "moe_forward_fixed_s", c.host.moe_forward_fixed_s, 0, 1, "seconds per MoE layer forward");
    c.host.moe_forward_per_expert_s =
        in_range(h, "moe_forward_per_expert_s", c.host.moe_forward_per_expert_s, 0, 1, "seconds per local expert, forward");
    c.host.moe_backward_fixed_s = in_range(h, "moe_backward_fixed_s", c.host.moe_backward_fixed_s, 0, 1, "seconds per MoE layer backward");
    c.host.moe_backward_per_expert_s =
        in_range(h, "moe_backward_per_expert_s", c.host.moe_backward_per_expert_s, 0, 1, "seconds per local expert, backward");
    c.host.moe_allgather_forward_fixed_s = in_range(h, "moe_allgather_forward_fixed_s", c.host.moe_allgather_forward_fixed_s, 0, 1,
                                                    "seconds per MoE layer forward (allgather dispatcher)");
    c.host.moe_allgather_forward_per_expert_s = in_range(h, "moe_allgather_forward_per_expert_s", c.host.moe_allgather_forward_per_expert_s,
                                                         0, 1, "seconds per local expert, forward (allgather dispatcher)");
    c.host.moe_allgather_backward_fixed_s = in_range(h, "moe_allgather_backward_fixed_s", c.host.moe_allgather_backward_fixed_s, 0, 1,
                                                     "seconds per MoE layer backward (allgather dispatcher)");
    c.host.moe_allgather_backward_per_expert_s = in_range(h, "moe_allgather_backward_per_expert_s",
                                                          c.host.moe_allgather_backward_per_expert_s, 0, 1,
                                                          "seconds per local expert, backward (allgather dispatcher)");
    c.host.moe_forward_presync_fraction = in_range(h, "moe_forward_presync_fraction", c.host.moe_forward_presync_fraction, 0, 1,
                                                   "share of the fixed forward host time issued before the synchronisation");
    c.host.moe_forward_before_experts_fraction =
        in_range(h, "moe_forward_before_experts_fraction", c.host.moe_forward_before_experts_fraction, 0, 1,
                 "share of the fixed forward host time after the synchronisation issued before the first expert");
    c.host.moe_expert_before_activation_fraction =
        in_range(h, "moe_expert_before_activation_fraction", c.host.moe_expert_before_activation_fraction, 0, 1,
                 "share of an expert's forward host time issued before its activation");
    c.host.moe_attention_forward_s =
        in_range(h, "moe_attention_forward_s", c.host.moe_attention_forward_s, 0, 1, "seconds per MoE layer's attention block, forward");
    c.host.moe_attention_backward_s =
        in_range(h, "moe_attention_backward_s", c.host.moe_attention_backward_s, 0, 1, "seconds per MoE layer's attention block, backward");
    c.host.moe_expert_bias_forward_per_expert_s = in_range(h, "moe_expert_bias_forward_per_expert_s", c.host.moe_expert_bias_forward_per_expert_s,
                                                           0, 1, "seconds per biased local expert, forward");
    c.host.moe_expert_bias_backward_per_expert_s = in_range(h, "moe_expert_bias_backward_per_expert_s", c.host.moe_expert_bias_backward_per_expert_s,
                                                            0, 1, "seconds per biased local expert, backward");
  }
  return c;
}

json calibration_to_json(const Calibration& c) {
  return {{"schema_version", kCalibrationSchemaVersion},
          {"source", c.source},
          {"kernel",
           {{"gemm_efficiency", c.kernel.gemm_efficiency},
            {"attention_fwd_efficiency", c.kernel.attention_fwd_efficiency},
            {"attention_bwd_efficiency", c.kernel.attention_bwd_efficiency},
            {"memory_efficiency", c.kernel.memory_efficiency},
            {"launch_overhead_us", c.kernel.launch_overhead_us},
            {"gemm_k_overhead", c.kernel.gemm_k_overhead},
            {"misaligned_gemm_factor", c.kernel.misaligned_gemm_factor},
            {"fp8_gemm_factor", c.kernel.fp8_gemm_factor},
            {"fp8_blockwise_gemm_factor", c.kernel.fp8_blockwise_gemm_factor},
            {"overlap_interference", c.kernel.overlap_interference},
            {"gemm_memory_efficiency", c.kernel.gemm_memory_efficiency},
            {"row_memory_efficiency", c.kernel.row_memory_efficiency},
            {"row_rows_per_sm", c.kernel.row_rows_per_sm},
            {"elementwise_alu_efficiency", c.kernel.elementwise_alu_efficiency},
            {"dram_overhead_us", c.kernel.dram_overhead_us},
            {"sm_load_bytes_per_clock", c.kernel.sm_load_bytes_per_clock},
            {"under_utilized_overhead_us", c.kernel.under_utilized_overhead_us},
            {"under_utilized_gemm_factor", c.kernel.under_utilized_gemm_factor},
            {"l2_bandwidth_factor", c.kernel.l2_bandwidth_factor},
            {"attention_fwd_fixed_blocks", c.kernel.attention_fwd_fixed_blocks},
            {"attention_bwd_fixed_blocks", c.kernel.attention_bwd_fixed_blocks},
            {"cudnn_attention_fwd_efficiency", c.kernel.cudnn_attention_fwd_efficiency},
            {"cudnn_attention_bwd_efficiency", c.kernel.cudnn_attention_bwd_efficiency},
            {"cudnn_attention_fwd_fixed_blocks", c.kernel.cudnn_attention_fwd_fixed_blocks},
            {"cudnn_attention_bwd_fixed_blocks", c.kernel.cudnn_attention_bwd_fixed_blocks},
            {"attention_dropout_fwd_factor", c.kernel.attention_dropout_fwd_factor},
            {"attention_dropout_bwd_factor", c.kernel.attention_dropout_bwd_factor},
            {"cudnn_attention_dropout_fwd_factor", c.kernel.cudnn_attention_dropout_fwd_factor},
            {"cudnn_attention_dropout_bwd_factor", c.kernel.cudnn_attention_dropout_bwd_factor}}},
          {"comm",
           {{"nvlink_efficiency", c.comm.nvlink_efficiency},
            {"network_efficiency", c.comm.network_efficiency},
            {"half_bandwidth_bytes", c.comm.half_bandwidth_bytes}}},
          {"host",
           {{"moe_forward_s", c.host.moe_forward_s},
            {"moe_forward_fixed_s", c.host.moe_forward_fixed_s},
            {"moe_forward_per_expert_s", c.host.moe_forward_per_expert_s},
            {"moe_backward_fixed_s", c.host.moe_backward_fixed_s},
            {"moe_backward_per_expert_s", c.host.moe_backward_per_expert_s},
            {"moe_allgather_forward_fixed_s", c.host.moe_allgather_forward_fixed_s},
            {"moe_allgather_forward_per_expert_s", c.host.moe_allgather_forward_per_expert_s},
            {"moe_allgather_backward_fixed_s", c.host.moe_allgather_backward_fixed_s},
            {"moe_allgather_backward_per_expert_s", c.host.moe_allgather_backward_per_expert_s},
            {"moe_forward_presync_fraction", c.host.moe_forward_presync_fraction},
            {"moe_forward_before_experts_fraction", c.host.moe_forward_before_experts_fraction},
            {"moe_expert_before_activation_fraction", c.host.moe_expert_before_activation_fraction},
            {"moe_attention_forward_s", c.host.moe_attention_forward_s},
            {"moe_attention_backward_s", c.host.moe_attention_backward_s},
            {"moe_expert_bias_forward_per_expert_s", c.host.moe_expert_bias_forward_per_expert_s},
            {"moe_expert_bias_backward_per_expert_s", c.host.moe_expert_bias_backward_per_expert_s},
            {"cuda_graph_replay_s", c.host.cuda_graph_replay_s}}}};
}

}  // namespace strata
