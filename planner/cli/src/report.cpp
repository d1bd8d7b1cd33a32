#include "cli/report.h"

#include <string_view>

#include <fmt/format.h>

namespace strata {

std::string prediction_report(const Job& job, const Prediction& pred) {
  std::string out;
  const auto& p = job.plan;
  out += fmt::format("model     {} ({:.1f}B parameters, {:.1f}B active), seq {}, global batch {}, {}\n", job.model.name,
                     job.model.total_params(job.training.seq_length) / 1e9, job.model.active_params(job.training.seq_length) / 1e9,
                     job.training.seq_length, job.training.global_batch_size,
                     job.training.precision == Precision::fp8 ? fmt::format("fp8 ({} recipe)", to_string(job.training.recipe))
                                                              : std::string(to_string(job.training.precision)));
  out += fmt::format("cluster   {} x {} ({}, {} GPUs/node)\n", p.world_size(), job.cluster.gpu.name, job.cluster.name,
                     job.cluster.gpus_per_node);
  out += fmt::format("plan      {}; {} micro-batches per iteration", plan_summary(p), job.num_micro_batches());
  const std::int64_t group = interleaved_microbatch_group(p, job.num_micro_batches());
  if (p.vpp > 1 && group != p.pp) out += fmt::format(", interleaved in groups of {} (not pp: Megatron-Core's micro-batch groups)", group);
  out += "\n";
  if (const OptimizerSpec& o = job.training.optimizer; !o.is_default()) {
    out += fmt::format("optimizer {}", to_string(o.kind));
    if (o.precision_aware)
      out += fmt::format(", precision-aware: {} B master weights, moments {}/{}",
                         master_weight_bytes(o, job.training.precision, job.training.recipe), to_string(o.exp_avg), to_string(o.exp_avg_sq));
    if (o.cpu_offload_fraction > 0) out += fmt::format(", {:g}% of its state on the host", 100 * o.cpu_offload_fraction);
    out += "\n";
  }
  if (!pred.feasible && pred.iteration_time_s <= 0) {
    out += fmt::format("INFEASIBLE: {}\n", pred.reason);
    return out;
  }
  if (!pred.feasible) out += fmt::format("INFEASIBLE: {}\n", pred.reason);
  out += fmt::format("iteration {:.3f} s\n", pred.iteration_time_s);
  out += fmt::format("tokens/s/GPU {:.0f}\n", pred.tokens_per_sec_per_gpu);
  out += fmt::format("MFU       {:.1f}% (HFU {:.1f}%)\n", 100 * pred.mfu, 100 * pred.hfu);
  out += fmt::format("memory    {:.1f} GiB per GPU (largest stage) of {:.1f} GiB\n", pred.memory_per_gpu_GiB, pred.memory_capacity_GiB);
  const auto& b = pred.breakdown;
  auto pct = [&](double t) { return 100 * t / pred.iteration_time_s; };
  out += fmt::format("breakdown (critical stage {}: its step ends the iteration):\n", b.stage);
  const std::pair<const char*, double> parts[] = {{"compute", b.compute_s},       {"recompute", b.recompute_s},
                                                   {"TP comm (exposed)", b.tp_comm_s}, {"CP comm (exposed)", b.cp_comm_s},
                                                   {"EP comm (exposed)", b.ep_comm_s},
                                                   {"layer host (exposed)", b.host_s},
                                                   {"PP comm (exposed)", b.pp_comm_s}, {"pipeline bubble", b.bubble_s},
                                                   {"stage imbalance (idle)", b.imbalance_s},
                                                   {"DP comm (exposed)", b.dp_comm_s}, {"optimizer step", b.optimizer_s},
                                                   {"step overhead (host)", b.step_overhead_s}};
  for (const auto& [name, t] : parts) {
    out += fmt::format("  {:<22} {:9.3f} s {:6.1f}%\n", name, t, pct(t));
    // Only plans that offload activations wait for the copies: the line stays out of the others.
    if (std::string_view(name) == "layer host (exposed)" && b.offload_s > 0)
      out += fmt::format("  {:<22} {:9.3f} s {:6.1f}%\n", "act. offload (exposed)", b.offload_s, pct(b.offload_s));
  }
  out += "stages:\n  stage layers  fwd/mb(ms)  bwd/mb(ms)  busy(s)  in-flight  memory(GiB)\n";
  for (const auto& s : pred.stages)
    out += fmt::format("  {:5} {:6} {:11.2f} {:11.2f} {:8.2f} {:10} {:12.1f}\n", s.stage, s.layers, 1e3 * s.forward_s,
                       1e3 * s.backward_s, s.busy_s, s.in_flight_micro_batches, s.memory.total_GiB);
  if (!pred.stages.empty()) {
    const auto& m = pred.stages[pred.bottleneck.kind == "memory" && pred.bottleneck.stage >= 0 ? pred.bottleneck.stage : 0].memory;
    out += fmt::format("memory of stage {}: weights {:.1f}, grads {:.1f}, optimizer {:.1f}, activations {:.1f}, logits {:.1f}, "
                       "buffers {:.1f} (CUDA context and NCCL {:.1f}), fragmentation {:.1f} GiB",
                       pred.bottleneck.kind == "memory" ? pred.bottleneck.stage : 0, m.weights_GiB, m.gradients_GiB, m.optimizer_GiB,
                       m.activations_GiB, m.logits_GiB, m.buffers_GiB, m.outside_allocator_GiB, m.fragmentation_GiB);
    // Offloaded activations and optimizer state, in host memory (not in the GPU total).
    out += m.host_GiB > 0 ? fmt::format("; on the host {:.1f} GiB\n", m.host_GiB) : std::string("\n");
  }
  out += fmt::format("bottleneck {} (stage {}): {}\n", pred.bottleneck.kind, pred.bottleneck.stage, pred.bottleneck.detail());
  for (const auto& n : pred.notes) out += "note: " + n + "\n";
  return out;
}

std::string sensitivity_report(const std::vector<Sensitivity>& figures) {
  if (figures.empty()) return "sensitivity: none (the plan has no iteration time to perturb)\n";
  std::string out = "sensitivity: iteration time when one figure is worse (largest first):\n";
  for (const auto& f : figures)
    out += fmt::format("  {:<24} {:>5}  {:+6.1f}%  {}\n", f.figure, f.direction, 100 * f.time_change, f.what);
  out += "  (measure the top figures with `strata profile` and `strata calibrate` before trusting small differences between plans)\n";
  return out;
}

nlohmann::json sensitivity_to_json(const std::vector<Sensitivity>& figures) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& f : figures)
    a.push_back({{"figure", f.figure}, {"change", f.direction}, {"iteration_time_change", f.time_change}, {"meaning", f.what}});
  return a;
}

}  // namespace strata
