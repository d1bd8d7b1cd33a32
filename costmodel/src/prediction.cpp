#include "costmodel/prediction.h"

#include <fmt/format.h>

namespace strata {

std::string Bottleneck::detail() const {
  if (!text.empty() || iteration_s <= 0) return text;
  return fmt::format("{} costs {:.3f} s of the {:.3f} s iteration ({:.1f}%)", kind, seconds, iteration_s, 100 * seconds / iteration_s);
}

namespace {

nlohmann::json memory_to_json(const MemoryBreakdown& m) {
  return {{"weights_GiB", m.weights_GiB},       {"gradients_GiB", m.gradients_GiB}, {"optimizer_GiB", m.optimizer_GiB},
          {"activations_GiB", m.activations_GiB}, {"logits_GiB", m.logits_GiB},     {"buffers_GiB", m.buffers_GiB},
          {"outside_allocator_GiB", m.outside_allocator_GiB}, {"fragmentation_GiB", m.fragmentation_GiB}, {"host_GiB", m.host_GiB},
          {"total_GiB", m.total_GiB}};
}

}  // namespace

nlohmann::json prediction_to_json(const Prediction& p) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& s : p.stages)
    stages.push_back({{"stage", s.stage},
                      {"layers", s.layers},
                      {"forward_s", s.forward_s},
                      {"backward_s", s.backward_s},
                      {"recompute_s", s.recompute_s},
                      {"busy_s", s.busy_s},
                      {"in_flight_micro_batches", s.in_flight_micro_batches},
                      {"memory_GiB", s.memory.total_GiB},
                      {"memory", memory_to_json(s.memory)}});
  const auto& b = p.breakdown;
  return {{"feasible", p.feasible},
          {"reason", p.reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.reason)},
          {"iteration_time_s", p.iteration_time_s},
          {"tokens_per_sec_per_gpu", p.tokens_per_sec_per_gpu},
          {"mfu", p.mfu},
          {"hfu", p.hfu},
          {"memory_per_gpu_GiB", p.memory_per_gpu_GiB},
          {"memory_capacity_GiB", p.memory_capacity_GiB},
          {"stages", stages},
          {"bottleneck", {{"kind", p.bottleneck.kind}, {"stage", p.bottleneck.stage}, {"detail", p.bottleneck.detail()}}},
          {"breakdown",
           {{"compute_s", b.compute_s},
            {"recompute_s", b.recompute_s},
            {"tp_comm_s", b.tp_comm_s},
            {"cp_comm_s", b.cp_comm_s},
            {"ep_comm_s", b.ep_comm_s},
            {"host_s", b.host_s},
            {"offload_s", b.offload_s},
            {"pp_comm_s", b.pp_comm_s},
            {"dp_comm_s", b.dp_comm_s},
            {"stage", b.stage},
            {"bubble_s", b.bubble_s},
            {"imbalance_s", b.imbalance_s},
            {"optimizer_s", b.optimizer_s},
            {"step_overhead_s", b.step_overhead_s}}},
          {"notes", p.notes}};
}

}  // namespace strata
