#include "search/plan_space.h"

#include <algorithm>
#include <numeric>
#include <tuple>

#include <fmt/format.h>

#include "costmodel/predictor.h"

namespace strata {

namespace {

bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

int max_stage_layers(const ParallelPlan& p, int num_layers) {
  const std::vector<int> layers = resolve_stage_layers(p, num_layers);
  return layers.empty() ? 0 : *std::max_element(layers.begin(), layers.end());
}

std::vector<int> powers_of_two_up_to(int n) {
  std::vector<int> out;
  for (int v = 1; v <= n; v *= 2) out.push_back(v);
  return out;
}

}  // namespace

ParallelPlan start_plan(const SearchOptions& o, const ModelSpec& model, int tp, int pp, int cp) {
  ParallelPlan p;
  p.tp = tp;
  p.pp = pp;
  p.cp = cp;
  p.dp = std::max(1, o.num_gpus / (tp * pp * cp));
  p.vpp = o.vpp.value_or(1);
  // A fixed vpp the layers do not divide into starts from the split the search interleaves with.
  if (auto layout = interleaved_stage_layers(model, pp, p.vpp)) p.stage_layers = *layout;
  p.micro_batch_size = o.micro_batch_size.value_or(1);
  p.sequence_parallel = tp > 1 && o.sequence_parallel.value_or(true);
  p.distributed_optimizer = p.dp * p.cp > 1;
  if (model.moe) {
    p.ep = o.ep.value_or(std::gcd(model.moe->num_experts, p.dp * p.cp));
    p.etp = o.etp.value_or(1);
  }
  return p;
}

std::vector<ParallelPlan> start_plans(const SearchOptions& o, const Job& job, int tp, int pp, int cp) {
  std::vector<ParallelPlan> out = {start_plan(o, job.model, tp, pp, cp)};
  const ParallelPlan& wide = out.front();
  if (!job.model.moe || o.ep) return out;
  int local = 1;
  for (int d : divisors(std::gcd(job.model.moe->num_experts, wide.dp * wide.cp)))
    if (static_cast<std::int64_t>(d) * wide.etp <= job.cluster.gpus_per_node) local = d;
  if (local != wide.ep) {
    out.push_back(wide);
    out.back().ep = local;
  }
  return out;
}

std::optional<std::vector<int>> interleaved_stage_layers(const ModelSpec& model, int pp, int vpp) {
  const int L = model.num_layers;
  if (pp < 2 || vpp < 2) return std::nullopt;
  // Megatron's own splits: even, or with the embedding and loss counted as layers.
  auto megatron_split = [&](int v) -> std::optional<std::vector<int>> {
    if (L % (pp * v) == 0) return std::vector<int>{};
    std::vector<int> accounted = accounted_stage_layers(L, pp, v);
    if (!accounted.empty()) return accounted;
    return std::nullopt;
  };
  if (auto split = megatron_split(vpp)) return split;
  for (int v = 2; v <= max_virtual_stages(model, pp); ++v)
    if (megatron_split(v)) return std::nullopt;
  std::vector<int> balanced = standard_stage_layers(L, pp, vpp, model.mtp_layers);
  if (balanced.empty()) return std::nullopt;
  return balanced;
}

std::vector<int> divisors(std::int64_t n) {
  std::vector<int> small, large;
  for (std::int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    small.push_back(static_cast<int>(d));
    if (d != n / d) large.push_back(static_cast<int>(n / d));
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

int smallest_prime_factor(int n) {
  for (int d = 2; d * d <= n; ++d)
    if (n % d == 0) return d;
  return n;
}

std::string plan_illegal_reason(const Job& job, const SearchOptions& o) {
  const ParallelPlan& p = job.plan;
  const int gpn = job.cluster.gpus_per_node;
  // The user's fixed dimensions come first: they explain most rejections.
  if (o.tp && p.tp != *o.tp) return fmt::format("tp is fixed to {} (--tp)", *o.tp);
  if (o.pp && p.pp != *o.pp) return fmt::format("pp is fixed to {} (--pp)", *o.pp);
  if (o.cp && p.cp != *o.cp) return fmt::format("cp is fixed to {} (--cp)", *o.cp);
  if (o.ep && p.ep != *o.ep) return fmt::format("ep is fixed to {} (--ep)", *o.ep);
  if (o.etp && p.etp != *o.etp) return fmt::format("etp is fixed to {} (--etp)", *o.etp);
  if (o.vpp && p.vpp != *o.vpp) return fmt::format("vpp is fixed to {} (--vpp)", *o.vpp);
  if (o.micro_batch_size && p.micro_batch_size != *o.micro_batch_size)
    return fmt::format("the micro-batch size is fixed to {} (--mbs)", *o.micro_batch_size);
  if (o.recompute && p.recompute.granularity != *o.recompute)
    return fmt::format("recompute is fixed to {} (--recompute)", to_string(*o.recompute));
  if (p.offload.modules != 0 && !o.allow_offload) return "activation offloading is searched only with --allow-offload";
  if (o.sequence_parallel && p.tp > 1 && p.sequence_parallel != *o.sequence_parallel)
    return fmt::format("sequence parallelism is fixed {}", *o.sequence_parallel ? "on" : "off");
  if (p.world_size() != o.num_gpus)
    return fmt::format("tp*pp*dp*cp = {} differs from the {} GPUs", p.world_size(), o.num_gpus);
  if (!is_power_of_two(p.tp)) return fmt::format("tp={} is not a power of two", p.tp);
  if (p.tp > gpn && !o.allow_tp_across_nodes)
    return fmt::format("tp={} spans nodes of {} GPUs (--allow-tp-across-nodes allows it)", p.tp, gpn);
  if (o.runtime == "megatron") {
    // Stock Megatron-LM shards with its distributed optimizer, not ZeRO stages; uneven stages are
    // expressible (--decoder-first/last-pipeline-num-layers, --pipeline-model-parallel-layout,
    // which with interleaving lists every virtual stage).
    if (p.zero_stage != 0) return "ZeRO stages are not part of stock Megatron-LM (use the distributed optimizer)";
    if (job.runtime.framework != Framework::megatron)
      return fmt::format("runtime megatron searches Megatron-LM plans, the workload's framework is {}", to_string(job.runtime.framework));
  }
  // Megatron-LM runs --tp-comm-overlap only with sequence parallelism (arguments.py).
  if (job.runtime.tp_comm_overlap && p.tp > 1 && !p.sequence_parallel)
    return "--tp-comm-overlap needs sequence parallelism in Megatron-LM";
  // Canonical forms: one representation per physical plan, so caches and counts are honest.
  if (p.sequence_parallel && p.tp == 1) return "sequence parallelism needs tp > 1";
  if (p.distributed_optimizer && p.dp * p.cp == 1) return "the distributed optimizer needs a data-parallel group (dp*cp > 1)";
  if (p.recompute.granularity != RecomputeGranularity::full && p.recompute.num_layers != -1)
    return "a recomputed layer count applies to full recompute only";
  if (p.recompute.granularity != RecomputeGranularity::selective && p.recompute.modules != kRecomputeCoreAttn)
    return "recompute modules apply to selective recompute only";
  if (p.recompute.granularity == RecomputeGranularity::full && p.recompute.num_layers != -1 &&
      (p.recompute.num_layers < 1 || p.recompute.num_layers >= max_stage_layers(p, job.model.num_layers)))
    return "full recompute of every layer is written num_layers = -1";
  // Megatron-LM's --recompute-method block --recompute-num-layers k counts layers per model chunk:
  // with interleaving a stage's n must be k per chunk, vpp dividing it and every chunk holding k.
  if (o.runtime == "megatron" && p.recompute.granularity == RecomputeGranularity::full && p.recompute.num_layers != -1 &&
      !recompute_layers_per_chunk(p, job.model))
    return "recomputing some layers per stage (--recompute-method block) is counted per model chunk in Megatron-LM: "
           "the layers per stage must be a multiple of vpp that every chunk holds";
  if (!p.stage_layers.empty()) {
    ParallelPlan even = p;
    even.stage_layers.clear();
    if (static_cast<int>(p.stage_layers.size()) == p.pp && p.stage_layers == resolve_stage_layers(even, job.model.num_layers))
      return "an even split is written as empty stage_layers";
  }
  // The cost model's rules: divisibility, layers >= stages, vpp needs pp >= 2 and a micro-batch
  // group Megatron-Core accepts, a layer per model chunk on every stage, ...
  return check_plan(job);
}

void canonicalize(ParallelPlan& p, int num_layers) {
  if (p.tp == 1) p.sequence_parallel = false;
  // The search's plans split stages over their chunks by chunk_layers' rule; an explicit layout
  // describes one launch, not a point the moves can keep consistent.
  p.chunk_layout.clear();
  // The micro-batch group follows from pp and the micro-batches (interleaved_microbatch_group): a
  // group kept from a plan with another pp or batch would no longer be the one to run.
  p.microbatch_group = 0;
  if (p.dp * p.cp == 1) p.distributed_optimizer = false;
  if (!p.stage_layers.empty()) {
    ParallelPlan even = p;
    even.stage_layers.clear();
    if (static_cast<int>(p.stage_layers.size()) != p.pp || p.stage_layers == resolve_stage_layers(even, num_layers))
      p.stage_layers.clear();
  }
  if (p.recompute.granularity != RecomputeGranularity::full) p.recompute.num_layers = -1;
  else if (p.recompute.num_layers >= max_stage_layers(p, num_layers)) p.recompute.num_layers = -1;
  // A layer recomputed whole keeps only its input: nothing is left to offload.
  if (p.recompute.granularity == RecomputeGranularity::full && p.recompute.num_layers == -1) p.offload.modules = 0;
  // Module sets mean something only to selective recompute.
  if (p.recompute.granularity != RecomputeGranularity::selective) p.recompute.modules = kRecomputeCoreAttn;
}

std::vector<ParallelPlan> uniform_grid(const Job& w, const SearchOptions& o) {
  std::vector<ParallelPlan> out;
  const int n = o.num_gpus;
  const int max_tp = o.allow_tp_across_nodes ? n : std::min(n, w.cluster.gpus_per_node);
  const bool moe = w.model.moe.has_value();
  Job probe = w;
  for (int tp : powers_of_two_up_to(max_tp)) {
    if (n % tp != 0) continue;
    for (int cp : powers_of_two_up_to(n / tp)) {
      if ((n / tp) % cp != 0) continue;
      for (int pp : divisors(n / (tp * cp))) {
        if (pp > w.model.num_layers) break;
        const int dp = n / (tp * cp * pp);
        const std::int64_t per_replica = w.training.global_batch_size / dp;
        if (w.training.global_batch_size % dp != 0) continue;
        const std::vector<int> eps = moe ? divisors(w.model.moe->num_experts) : std::vector<int>{1};
        for (int ep : eps) {
         // Expert tensor parallelism: experts whole (etp 1) or split like the dense layers (etp tp),
         // the two layouts Megatron-Core recipes use; ep*etp must tile tp*dp*cp (check_plan).
         for (int etp : o.etp ? std::vector<int>{*o.etp} : (moe && tp > 1) ? std::vector<int>{1, tp} : std::vector<int>{1}) {
          if ((static_cast<std::int64_t>(tp) * dp * cp) % (static_cast<std::int64_t>(ep) * etp) != 0) continue;
          for (int vpp : divisors(w.model.num_layers / pp)) {
            if (vpp > 1 && (pp < 2 || w.model.num_layers % (pp * vpp) != 0)) continue;
            for (int mbs : divisors(per_replica)) {
              if (mbs > kMaxGridMicroBatch) break;
              {
                const bool sp = tp > 1 && o.sequence_parallel.value_or(true);
                for (RecomputeGranularity g : {RecomputeGranularity::none, RecomputeGranularity::selective, RecomputeGranularity::full}) {
                  ParallelPlan& p = probe.plan;
                  p = ParallelPlan{};
                  p.tp = tp;
                  p.pp = pp;
                  p.dp = dp;
                  p.cp = cp;
                  p.ep = ep;
                  p.etp = etp;
                  p.vpp = vpp;
                  p.micro_batch_size = mbs;
                  p.sequence_parallel = sp;
                  p.recompute.granularity = g;
                  p.distributed_optimizer = dp * cp > 1;
                  if (plan_illegal_reason(probe, o).empty()) out.push_back(p);
                }
              }
            }
          }
         }
        }
      }
    }
  }
  return out;
}

std::uint64_t plan_hash(const ParallelPlan& p) {
  // FNV-1a over the fields; stage_layers included element by element.
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&h](std::int64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= static_cast<std::uint64_t>(v >> (8 * i)) & 0xffu;
      h *= 1099511628211ull;
    }
  };
  for (std::int64_t v : {std::int64_t{p.tp}, std::int64_t{p.pp}, std::int64_t{p.dp}, std::int64_t{p.cp}, std::int64_t{p.ep}, std::int64_t{p.etp},
                         std::int64_t{p.sequence_parallel}, std::int64_t{p.vpp}, std::int64_t{p.micro_batch_size},
                         static_cast<std::int64_t>(p.recompute.granularity), std::int64_t{p.recompute.num_layers},
                         std::int64_t{p.recompute.modules}, std::int64_t{p.zero_stage}, std::int64_t{p.distributed_optimizer},
                         std::int64_t{p.offload.modules}, p.offload.min_tensor_elements, std::int64_t{p.cpu_offload_layers}})
    mix(v);
  mix(static_cast<std::int64_t>(p.stage_layers.size()));
  for (int l : p.stage_layers) mix(l);
  return h;
}

bool plan_less(const ParallelPlan& a, const ParallelPlan& b) {
  auto key = [](const ParallelPlan& p) {
    return std::tie(p.tp, p.pp, p.dp, p.cp, p.ep, p.etp, p.sequence_parallel, p.vpp, p.micro_batch_size, p.recompute.granularity,
                    p.recompute.num_layers, p.recompute.modules, p.zero_stage, p.distributed_optimizer, p.offload.modules,
                    p.offload.min_tensor_elements, p.cpu_offload_layers, p.stage_layers);
  };
  return key(a) < key(b);
}

}  // namespace strata
