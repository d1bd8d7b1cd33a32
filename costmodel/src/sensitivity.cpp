#include "costmodel/sensitivity.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "costmodel/predictor.h"

namespace strata {

namespace {

struct Figure {
  const char* name;
  const char* what;
  bool higher_is_worse;              // overheads and latencies; efficiencies are worse when lower
  std::function<void(Job&, double)> scale;  // multiplies the figure(s) by the factor
};

const std::vector<Figure>& figures() {
  static const std::vector<Figure> list = {
      {"gemm_efficiency", "share of tensor-core peak that large GEMMs reach", false,
       [](Job& j, double f) { j.calibration.kernel.gemm_efficiency *= f; }},
      {"attention_efficiency", "fused attention speed relative to GEMMs (forward and backward)", false,
       [](Job& j, double f) {
         j.calibration.kernel.attention_fwd_efficiency *= f;
         j.calibration.kernel.attention_bwd_efficiency *= f;
       }},
      {"memory_efficiency", "share of HBM bandwidth that elementwise kernels reach", false,
       [](Job& j, double f) { j.calibration.kernel.memory_efficiency *= f; }},
      {"launch_overhead_us", "launch and tail time of every kernel", true,
       [](Job& j, double f) { j.calibration.kernel.launch_overhead_us *= f; }},
      {"gemm_k_overhead", "GEMM k-loop prologue and epilogue", true,
       [](Job& j, double f) { j.calibration.kernel.gemm_k_overhead *= f; }},
      {"misaligned_gemm_factor", "speed of GEMMs with dimensions not a multiple of 8", false,
       [](Job& j, double f) { j.calibration.kernel.misaligned_gemm_factor *= f; }},
      {"fp8_gemm_factor", "speed of fp8 GEMMs relative to bf16 ones (fp8 runs only)", false,
       [](Job& j, double f) { j.calibration.kernel.fp8_gemm_factor *= f; }},
      {"overlap_interference", "slowdown of compute under overlapped communication", true,
       [](Job& j, double f) { j.calibration.kernel.overlap_interference *= f; }},
      {"nvlink_efficiency", "share of the NVLink rate that NCCL reaches", false,
       [](Job& j, double f) { j.calibration.comm.nvlink_efficiency *= f; }},
      {"network_efficiency", "share of the NIC rate that NCCL reaches between nodes", false,
       [](Job& j, double f) { j.calibration.comm.network_efficiency *= f; }},
      {"half_bandwidth_bytes", "message size at which a collective reaches half its bandwidth", true,
       [](Job& j, double f) { j.calibration.comm.half_bandwidth_bytes *= f; }},
      {"link_latency_us", "per-hop latency of collectives (intra- and inter-node)", true,
       [](Job& j, double f) {
         j.cluster.intra_node_latency_us *= f;
         j.cluster.inter_node_latency_us *= f;
       }},
      {"layer_host_time", "host time to issue each layer (measured on one machine's CPU)", true,
       [](Job& j, double f) {
         HostCoefficients& h = j.calibration.host;
         for (double* x : {&h.moe_forward_s, &h.moe_forward_fixed_s, &h.moe_forward_per_expert_s, &h.moe_backward_fixed_s,
                           &h.moe_backward_per_expert_s, &h.moe_allgather_forward_fixed_s, &h.moe_allgather_forward_per_expert_s,
                           &h.moe_allgather_backward_fixed_s, &h.moe_allgather_backward_per_expert_s, &h.moe_attention_forward_s,
                           &h.moe_attention_backward_s, &h.moe_expert_bias_forward_per_expert_s,
                           &h.moe_expert_bias_backward_per_expert_s, &h.cuda_graph_replay_s})
           *x *= f;
       }},
      {"step_overhead_s", "host-side time of each training step", true,
       [](Job& j, double f) { j.runtime.step_overhead_s *= f; }},
  };
  return list;
}

}  // namespace

std::vector<RankingFlip> ranking_sensitivity(const Job& chosen, const std::vector<Job>& alternatives, double tie) {
  std::vector<RankingFlip> out;
  for (const Figure& fig : figures()) {
    for (const double sign : {-1.0, 1.0}) {
      const double factor = 1 + sign * kSensitivityStep;
      Job c = chosen;
      fig.scale(c, factor);
      const double base = predict(c).iteration_time_s;
      if (!(base > 0)) continue;
      RankingFlip best;
      for (std::size_t i = 0; i < alternatives.size(); ++i) {
        Job a = alternatives[i];
        fig.scale(a, factor);
        const Prediction p = predict(a);
        if (!p.feasible || !(p.iteration_time_s > 0)) continue;
        const double faster_by = 1 - p.iteration_time_s / base;
        if (faster_by > tie && faster_by > best.faster_by) {
          best.alternative = static_cast<int>(i);
          best.faster_by = faster_by;
        }
      }
      if (best.alternative < 0) continue;
      best.figure = fig.name;
      best.direction = fmt::format("{:+.0f}%", 100 * sign * kSensitivityStep);
      out.push_back(std::move(best));
    }
  }
  return out;
}

std::vector<Sensitivity> prediction_sensitivity(const Job& job) {
  std::vector<Sensitivity> out;
  const Prediction base = predict(job);
  if (!(base.iteration_time_s > 0) || !std::isfinite(base.iteration_time_s)) return out;
  for (const Figure& fig : figures()) {
    Job worse = job;
    fig.scale(worse, fig.higher_is_worse ? 1 + kSensitivityStep : 1 - kSensitivityStep);
    const Prediction p = predict(worse);
    Sensitivity s;
    s.figure = fig.name;
    s.what = fig.what;
    s.direction = fmt::format("{:+.0f}%", (fig.higher_is_worse ? 100 : -100) * kSensitivityStep);
    s.time_change = p.iteration_time_s / base.iteration_time_s - 1;
    out.push_back(std::move(s));
  }
  // Largest effect first; a stable sort keeps the list's order among equal effects.
  std::stable_sort(out.begin(), out.end(),
                   [](const Sensitivity& a, const Sensitivity& b) { return std::abs(a.time_change) > std::abs(b.time_change); });
  return out;
}

}  // namespace strata
