#include "costmodel/predictor.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/compile.h>
#include <fmt/format.h>

#include "costmodel/comm_model.h"
#include "costmodel/kernel_model.h"
#include "costmodel/layer_ops.h"
#include "costmodel/memory_model.h"
#include "layer_cost.h"
#include "prediction_notes.h"

namespace strata {

namespace {

// DeepSpeed's default stage3_prefetch_bucket_size / reduce_bucket_size, in elements.
constexpr double kZero3BucketElements = 5e7;

// Everything predicted of one pipeline stage (one allocation per prediction for all stages).
struct StageCost {
  double fwd = 0, bwd = 0;  // one micro-batch through all of the stage's chunks
  double compute = 0, recompute = 0, tp = 0, cp = 0, ep = 0, host = 0, offload = 0;  // per micro-batch
  double pp_blocking = 0;  // blocking p2p sends inside the stage's own ops (DeepSpeed), per micro-batch
  double recompute_flops = 0;  // per micro-batch, per GPU
  ParamSplit params;           // parameters per GPU: gradient accumulation, DP synchronization, memory
  double dp_exposed = 0, optimizer = 0;  // per iteration
  double finish = 0;                     // when the stage's step ends
};

// The part of a stage's data-parallel collective (`comm`: the gradient reduce-scatter or
// all-reduce, or the parameter all-gather) that runs behind compute, given the stage's time for one
// micro-batch through all its chunks in that direction (`pass`). Megatron-Core's
// DistributedDataParallel reduces each model chunk's buckets as soon as that chunk's last
// micro-batch has finished its backward (overlap_grad_reduce; param all-gathers likewise run ahead
// of each chunk's first forward, overlap_param_gather), so under interleaved 1F1B the chunks'
// collectives go out one after another through the drain: after chunk c's final backward the stage
// still runs pp backward chunk-steps for each later chunk (Narayanan et al. 2021 §2.2 schedule).
// Queued behind each other, the collectives finish max(comm/v - t, comm - (v-1) pp t - t) after the
// last chunk-step t = pass/v; with v = 1 this is the bucketed overlap behind the last backward.
double overlapped_dp_time(double comm, double pass, int vpp, int pp) {
  const double v = std::max(1, vpp);
  const double t = pass / v;
  const double window = t + (v - 1) * pp * t;
  const double exposed = std::max({0.0, comm / v - t, comm - window});
  return comm - exposed;
}

std::string plan_text(const ParallelPlan& p) {
  return fmt::format("tp={} pp={} dp={} cp={}", p.tp, p.pp, p.dp, p.cp);
}

// Why a plan does not fit. The memory model errs by some percent on published runs (as much as
// kTightMemoryFraction's margin): a plan over by less is not known not to fit, the mirror of the
// tight-fit note. Out of line: searches make thousands of predictions, few of them this close.
[[gnu::cold]] [[gnu::noinline]] std::string over_memory_reason(int stage, double need, double capacity, const std::string& gpu,
                                                               const ParallelPlan& p) {
  std::string why = fmt::format(FMT_COMPILE("stage {} needs {:.1f} GiB > {:.1f} GiB available on {} ({})"), stage, need, capacity, gpu,
                                plan_text(p));
  if (need * kTightMemoryFraction < capacity)
    why += fmt::format(FMT_COMPILE("; {:.0f}% over, within the memory model's error on published runs, so it may fit: "
                                   "measure it before ruling it out"),
                       100 * (need / capacity - 1));
  return why;
}

}  // namespace

Prediction predict(const Job& job, std::vector<PipelineEvent>* trace) {
  Prediction pred;
  pred.memory_capacity_GiB = job.cluster.gpu.memory_GiB - job.runtime.memory_reserve_GiB;
  if (std::string why = check_plan(job); !why.empty()) {
    pred.reason = why;
    pred.bottleneck = {"illegal", -1, 0, 0, why};
    return pred;
  }
  const ModelSpec& m = job.model;
  const ParallelPlan& p = job.plan;
  const ClusterSpec& cl = job.cluster;
  const Calibration& cal = job.calibration;
  const int eb = activation_bytes(job.training.precision);
  const bool sp = p.sequence_parallel && p.tp > 1;
  const std::int64_t micro_batches = job.num_micro_batches();

  KernelModel km(cl.gpu, job.training.precision, cal.kernel, job.training.recipe);
  // The layers a low-precision run keeps in bf16 (--first-last-layers-bf16) time at the bf16 rate;
  // built only for such runs (a prediction takes microseconds).
  std::optional<KernelModel> km_bf16;
  if (job.runtime.bf16_first_layers > 0 || job.runtime.bf16_last_layers > 0) km_bf16.emplace(cl.gpu, Precision::bf16, cal.kernel);
  CommModel comm(cl, cal.comm);
  // Megatron rank order tp, cp, dp, pp (fastest first): each group's stride and placement.
  const int gpn = cl.gpus_per_node;
  const GroupPlacement tp_g = place_group(p.tp, 1, gpn);
  const GroupPlacement cp_g = place_group(p.cp, p.tp, gpn);
  const GroupPlacement dp_g = place_group(p.dp * p.cp, p.tp, gpn);  // gradients reduce over dp x cp
  // Megatron-Core's expert grid orders ranks etp, ep, edp, pp (parallel_state.py): the EP x ETP
  // group that exchanges tokens is etp*ep consecutive ranks.
  const GroupPlacement ep_g = place_group(p.ep * p.etp, 1, gpn);
  const GroupPlacement edp_g = place_group(p.expert_data_parallel(), p.ep * p.etp, gpn);
  // Copies of the distributed optimizer (--num-distributed-optimizer-instances): each reduce-scatters
  // over its consecutive share of the data-parallel ranks (*_intra_g), then all-reduces its shard with
  // the same shard of the other copies (*_inter_g; parallel_state.py: intra/inter partial DP groups).
  const int instances = p.sharded_copies();
  const bool copies = instances > 1;  // (one copy: the whole data-parallel groups, placed above)
  const GroupPlacement dp_intra_g = copies ? place_group(p.optimizer_shard_ranks(), p.tp, gpn) : dp_g;
  const GroupPlacement dp_inter_g = copies ? place_group(instances, p.tp * p.optimizer_shard_ranks(), gpn) : GroupPlacement{};
  const GroupPlacement edp_intra_g = copies ? place_group(p.expert_optimizer_shard_ranks(), p.ep * p.etp, gpn) : edp_g;
  const GroupPlacement edp_inter_g =
      copies ? place_group(instances, p.ep * p.etp * p.expert_optimizer_shard_ranks(), gpn) : GroupPlacement{};
  const bool pp_inter_node = static_cast<std::int64_t>(p.tp) * p.cp * p.dp >= gpn;

  const LayerShape shape = micro_batch_shape(job);

  // ---- one decoder layer of each kind (MoE or dense MLP, sliding-window or full attention) ----
  const double tokens = static_cast<double>(p.micro_batch_size) * static_cast<double>(job.training.seq_length) / p.cp;
  const double act_bytes = tokens * static_cast<double>(m.hidden_size) * eb;
  // TP: two all-reduces per layer forward and two backward (Shoeybi et al. 2019, Fig. 4); with SP
  // each becomes an all-gather + reduce-scatter of the same volume (Korthikanti §4.2.2).
  const double tp_collective = p.tp > 1 ? (sp ? 2 * comm.all_gather(act_bytes, tp_g) : comm.all_reduce(act_bytes, tp_g)) : 0;
  // Fewer query groups than TP ranks (Megatron-Core Attention: "When num_kv_heads < tp_size"): each
  // rank's QKV projection output is all-gathered over TP (all_gather_last_dim_from_tensor_parallel_region,
  // a reduce-scatter backward) so that every rank can take its query heads' group.
  const double qkv_bytes = tokens * static_cast<double>(m.q_hidden() + 2 * m.kv_hidden()) * eb;
  const double qkv_gather = p.tp > 1 && !m.mla && m.num_query_groups < p.tp ? comm.all_gather(qkv_bytes, tp_g) : 0.0;
  const MoeHostTime moe_host = moe_layer_host_time(job);
  const DenseHostTime dense_host = dense_layer_host_time(job);
  const LayerCostInputs layer_inputs{job, shape, km, km_bf16 ? &*km_bf16 : nullptr, comm, cp_g, ep_g, tokens, tp_collective, qkv_gather, moe_host,
                                     dense_host};
  // At most eight kinds of layers: cost each once.
  std::vector<std::pair<LayerKind, LayerCost>> kind_costs;
  kind_costs.reserve(LayerKind::kCount);  // cost_of hands out references: never reallocate
  auto cost_of = [&](int layer) -> const LayerCost& {
    const LayerKind kind = layer_kind(job, layer);
    for (const auto& kc : kind_costs)
      if (kc.first == kind) return kc.second;
    kind_costs.emplace_back(kind, decoder_layer_cost(layer_inputs, kind));
    return kind_costs.back().second;
  };
  // Every layer of a uniform model is layer 0's kind.
  const bool uniform = uniform_layers(job);
  for (int i = 0; i < (uniform ? 1 : m.num_layers); ++i) cost_of(i);

  // ---- embedding and output layer -----------------------------------------------------------
  const LayerOps emb = embedding_ops(m, shape);
  const LayerOps out = output_layer_ops(m, shape);
  const double edge_tp = p.tp > 1 ? (sp ? comm.all_gather(act_bytes, tp_g) : comm.all_reduce(act_bytes, tp_g)) : 0;
  const double emb_fwd_compute = km.total_time(emb.forward), emb_bwd_compute = km.total_time(emb.backward);
  const double out_fwd_compute = km.total_time(out.forward), out_bwd_compute = km.total_time(out.backward);
  // The vocab-parallel embedding reduces its output forward; the output layer's input gradient is
  // reduced backward.
  const double emb_fwd = emb_fwd_compute + edge_tp, emb_bwd = emb_bwd_compute;
  const double out_fwd = out_fwd_compute, out_bwd = out_bwd_compute + edge_tp;

  auto layer_fwd = [](const LayerCost& lc) { return lc.fwd_compute + lc.fwd_tp + lc.fwd_cp + lc.fwd_ep + lc.fwd_host + lc.fwd_offload; };
  auto layer_bwd = [](const LayerCost& lc) { return lc.bwd_compute + lc.bwd_tp + lc.bwd_cp + lc.bwd_ep + lc.bwd_host + lc.bwd_offload; };

  // ---- multi-token prediction modules, on the last stage's last chunk ------------------------
  // Each runs the embedding of the next tokens, its norms and 2h -> h projection, a decoder layer of
  // the last layer's kind and the shared output layer with its own loss (Megatron-Core
  // MultiTokenPredictionLayer, process_mtp_loss). With TP the projection gathers its 2h input and
  // its h output (gather_from_tensor_model_parallel_region), counted as three edge collectives
  // each way.
  struct MtpCost {
    double fwd = 0, bwd = 0, compute = 0, tp = 0, ep = 0, cp = 0, host = 0, offload = 0;
    const LayerCost* layer = nullptr;
  } mtp;
  // A hybrid model's MTP module runs the layers of its own pattern: their costs summed as one layer's.
  LayerCost mtp_layers_cost;
  const int mtp_modules = m.num_layers > 0 ? std::max(0, m.mtp_layers) : 0;
  if (mtp_modules > 0 && !m.hybrid_mtp_pattern.empty()) {
    for (LayerKind kind : m.mtp_layer_kinds()) mtp_layers_cost += decoder_layer_cost(layer_inputs, kind);
  }
  if (mtp_modules > 0) {
    const LayerCost& lc = m.hybrid_mtp_pattern.empty() ? cost_of(m.num_layers - 1) : mtp_layers_cost;
    const LayerOps head = mtp_head_ops(m, shape);
    const double head_fwd = km.total_time(head.forward), head_bwd = km.total_time(head.backward);
    const double head_tp = 3 * edge_tp;
    mtp.layer = &lc;
    mtp.fwd = mtp_modules * (layer_fwd(lc) + head_fwd + head_tp + emb_fwd + out_fwd);
    mtp.bwd = mtp_modules * (layer_bwd(lc) + head_bwd + head_tp + emb_bwd + out_bwd);
    mtp.compute = mtp_modules * (lc.fwd_compute + lc.bwd_compute + head_fwd + head_bwd + emb_fwd_compute + emb_bwd_compute +
                                 out_fwd_compute + out_bwd_compute);
    mtp.tp = mtp_modules * (lc.fwd_tp + lc.bwd_tp + 2 * head_tp + 2 * edge_tp);
    mtp.ep = mtp_modules * (lc.fwd_ep + lc.bwd_ep);
    mtp.cp = mtp_modules * (lc.fwd_cp + lc.bwd_cp);
    mtp.host = mtp_modules * (lc.fwd_host + lc.bwd_host);
    mtp.offload = mtp_modules * (lc.fwd_offload + lc.bwd_offload);
  }

  // ---- per stage, per chunk ------------------------------------------------------------------
  const std::vector<int> stage_layers = resolve_stage_layers(p, m.num_layers);
  const int v = p.vpp;
  PipelineInput pin;
  pin.stages = p.pp;
  pin.chunks = v;
  pin.micro_batches = micro_batches;
  pin.microbatch_group = interleaved_microbatch_group(p, micro_batches);
  pin.combined_1f1b = combined_1f1b(job);
  pin.resize();
  // Both frameworks split the activation across TP ranks for the transfer and all-gather it on the
  // receiving side over NVLink: Megatron's scatter-gather optimization (Narayanan et al. 2021
  // §4.1), DeepSpeed's pipe-partitioned buffers (PipelineEngine: is_pipe_partitioned =
  // is_model_parallel, PartitionedTensor ... .full()). Megatron overlaps the transfer with
  // compute; the DeepSpeed pipeline engine runs send/recv as blocking instructions of its
  // schedule, so the transfer and the re-assembling all-gather also occupy the stage.
  const bool blocking_p2p = job.runtime.framework == Framework::deepspeed;
  pin.p2p_s = p.pp > 1 ? comm.p2p(act_bytes / p.tp, pp_inter_node) : 0;
  const double regather = p.pp > 1 && p.tp > 1 ? comm.all_gather(act_bytes, tp_g) : 0.0;
  const double blocking_send = blocking_p2p ? pin.p2p_s + regather : 0.0;
  std::vector<StageCost> sc(p.pp);
  // Full recompute of only `n` layers per stage (method block) when num_layers is set.
  auto full_layers = [&](int layers) {
    if (p.recompute.granularity != RecomputeGranularity::full) return 0;
    return p.recompute.num_layers < 0 ? layers : std::min(layers, p.recompute.num_layers);
  };
  // Communication (and host synchronisation) re-done by full recompute.
  auto layer_refwd = [](const LayerCost& lc) { return lc.fwd_tp + lc.fwd_cp + lc.fwd_ep + lc.fwd_host; };
  // Without gradient-accumulation fusion every micro-batch reads the fresh weight gradient and
  // read-modify-writes the accumulation buffer (fp32 main_grad in Megatron, model dtype in DeepSpeed).
  const bool sharded_grads = job.runtime.framework == Framework::fsdp || p.zero_stage >= 2;
  const double accum_bytes_per_param = (job.runtime.fused_grad_accumulation || sharded_grads) ? 0.0
                                       : job.runtime.framework == Framework::megatron ? eb + 8.0 : 3.0 * eb;
  // The middle stages of a uniform model (neither the embedding's nor the output layer's) are alike
  // when they hold as many layers: each such stage copies its predecessor's results below.
  auto like_previous_middle_stage = [&](int s) {
    return uniform && s >= 2 && s < p.pp - 1 && stage_layers[s] == stage_layers[s - 1];
  };
  for (int s = 0; s < p.pp; ++s)
    sc[s].params = like_previous_middle_stage(s) ? sc[s - 1].params : stage_param_split(job, s, stage_layers[s]);
  // Decoder layers of every virtual stage (chunk-major) and the global index of each one's first.
  const std::vector<int> chunk_counts = virtual_stage_layers(p, m);
  std::vector<int> chunk_first(chunk_counts.size(), 0);
  std::exclusive_scan(chunk_counts.begin(), chunk_counts.end(), chunk_first.begin(), 0);
  // Layer-level CPU offloading (Transformer Engine's offload handler; pp 1): the first layers'
  // activations go out on a side stream, each copy due by a later layer's end (its layer window map
  // spreads them over the forward), and come back ahead of their backward: the pass waits only for
  // what its own layers' work does not cover. The copy time of one micro-batch:
  const double cpu_offload_copy = p.cpu_offload_layers > 0 && p.pp == 1
                                      ? cpu_offloaded_bytes(job).total / (cl.gpu.pcie_GBps * 1e9 * kHostLinkEfficiency)
                                      : 0.0;
  for (int s = 0; s < p.pp; ++s) {
    const int layers = stage_layers[s];
    const int nfull = full_layers(layers);
    const double full_frac = layers > 0 ? static_cast<double>(nfull) / layers : 0;
    const bool full = p.recompute.granularity == RecomputeGranularity::full;
    auto rec_per_layer = [&](const LayerCost& lc) { return full ? full_frac * (lc.recompute + layer_refwd(lc)) : lc.recompute; };
    // Fully recomputed layers offload nothing (they keep only their input).
    auto offload_per_layer = [&](const LayerCost& lc, bool backward) {
      return (1 - full_frac) * (backward ? lc.bwd_offload : lc.fwd_offload);
    };
    const double accum_stage = sc[s].params.total() * accum_bytes_per_param /
                               (cl.gpu.hbm_GBps * 1e9 * cal.kernel.memory_efficiency);
    for (int c = 0; c < v; ++c) {
      // Uneven stages under interleaving split into chunks of whole layers (chunk_layers); each
      // chunk sums the costs of the layers it holds (dense-first and MoE layers differ).
      // A uniform model's chunk is that many copies of layer 0, with no need to place them.
      const std::size_t vs = static_cast<std::size_t>(c) * static_cast<std::size_t>(p.pp) + static_cast<std::size_t>(s);
      const int in_chunk = std::max(0, chunk_counts[vs]);
      const double accum_chunk = layers > 0 ? accum_stage * in_chunk / layers : 0.0;
      double f = 0, b = 0;
      // `n` layers of cost lc: a uniform chunk adds its layer once, n times over; a mixed one each layer.
      auto add_layers = [&](const LayerCost& lc, double n) {
        f += n * (layer_fwd(lc) - lc.fwd_offload + offload_per_layer(lc, false));
        b += n * (layer_bwd(lc) - lc.bwd_offload + offload_per_layer(lc, true) + rec_per_layer(lc));
        sc[s].offload += n * (offload_per_layer(lc, false) + offload_per_layer(lc, true));
        sc[s].compute += n * (lc.fwd_compute + lc.bwd_compute);
        sc[s].recompute += n * (full ? full_frac : 1.0) * lc.recompute;
        sc[s].tp += n * (lc.fwd_tp + lc.bwd_tp + (full ? full_frac : 0.0) * lc.fwd_tp);
        sc[s].cp += n * (lc.fwd_cp + lc.bwd_cp + (full ? full_frac : 0.0) * lc.fwd_cp);
        sc[s].ep += n * (lc.fwd_ep + lc.bwd_ep + (full ? full_frac : 0.0) * lc.fwd_ep);
        sc[s].host += n * (lc.fwd_host + lc.bwd_host + (full ? full_frac : 0.0) * lc.fwd_host);
        sc[s].recompute_flops += n * (full ? full_frac : 1.0) * lc.recompute_flops;
      };
      if (uniform) add_layers(kind_costs.front().second, in_chunk);
      else for (int id = chunk_first[vs]; id < chunk_first[vs] + in_chunk; ++id) add_layers(cost_of(id), 1.0);
      if (cpu_offload_copy > 0) {
        const double fwd_wait = std::max(0.0, cpu_offload_copy - f), bwd_wait = std::max(0.0, cpu_offload_copy - b);
        f += fwd_wait;
        b += bwd_wait;
        sc[s].offload += fwd_wait + bwd_wait;
      }
      if (s == 0 && c == 0) { f += emb_fwd; b += emb_bwd; }
      if (s == p.pp - 1 && c == v - 1) {
        f += out_fwd + mtp.fwd;
        b += out_bwd + mtp.bwd;
        if (mtp.layer) {
          // Recomputed with the plan's granularity; under full recompute the whole module layer
          // with its communication (MultiTokenPredictionLayer checkpoints its forward then).
          const LayerCost& lc = *mtp.layer;
          b += mtp_modules * (lc.recompute + (full ? layer_refwd(lc) : 0.0));
          sc[s].recompute += mtp_modules * lc.recompute;
          sc[s].recompute_flops += mtp_modules * lc.recompute_flops;
          if (full) {
            sc[s].tp += mtp_modules * lc.fwd_tp;
            sc[s].ep += mtp_modules * lc.fwd_ep;
            sc[s].cp += mtp_modules * lc.fwd_cp;
            sc[s].host += mtp_modules * lc.fwd_host;
          }
        }
      }
      const double send_fwd = (s < p.pp - 1 || c < v - 1) ? blocking_send : 0.0;  // activation to the next stage
      const double send_bwd = (s > 0 || c > 0) ? blocking_send : 0.0;              // gradient to the previous stage
      f += send_fwd;
      b += send_bwd + accum_chunk;
      sc[s].pp_blocking += send_fwd + send_bwd;
      pin.forward(s, c) = f;
      pin.backward(s, c) = b;
      sc[s].fwd += f;
      sc[s].bwd += b;
    }
    const bool first = s == 0, last = s == p.pp - 1;
    sc[s].compute += (first ? emb_fwd_compute + emb_bwd_compute : 0) + (last ? out_fwd_compute + out_bwd_compute + mtp.compute : 0) +
                     accum_stage;
    sc[s].tp += (first ? edge_tp : 0) + (last ? edge_tp + mtp.tp : 0);
    sc[s].ep += last ? mtp.ep : 0;
    sc[s].cp += last ? mtp.cp : 0;
    sc[s].host += last ? mtp.host : 0;
    sc[s].offload += last ? mtp.offload : 0;
  }

  const PipelineResult pr = simulate_pipeline(pin, trace);
  // Exposed p2p: the fill and drain critical path crosses every virtual-stage boundary once each
  // way, 2(p*v - 1) transfers; steady-state transfers hide behind other micro-batches' compute.
  const double pp_exposed = p.pp > 1 ? 2.0 * (p.pp * v - 1) * pin.p2p_s : 0.0;

  // ---- data-parallel synchronization and optimizer step, per stage ---------------------------
  const Framework fw = job.runtime.framework;
  const bool fp32_model = job.training.precision == Precision::fp32 || job.training.precision == Precision::tf32;
  // Megatron reduces its fp32 main_grad buffer unless --grad-reduce-in-bf16; with fp8 parameters
  // (--fp8-param-gather) the distributed optimizer all-gathers the linears' weights in fp8.
  const double grad_bytes = fp32_model ? 4 : fw == Framework::megatron && !job.runtime.grad_reduce_in_bf16 ? 4 : 2;
  const double weight_bytes = fp32_model ? 4 : 2;
  const bool fp8_params = te_fp8(job) && job.runtime.fp8_param_gather && job.training.recipe != LowPrecisionRecipe::nvfp4;
  const double dp_shard = static_cast<double>(p.dp) * p.cp;
  const bool fsdp_gathered_through_step = fsdp_keeps_stage_gathered(job);
  const OptimizerSpec& optimizer = job.training.optimizer;
  const double step_bytes = optimizer_step_bytes(optimizer, job.training.precision, job.training.recipe, grad_bytes, weight_bytes);
  double tied_embedding_sync = 0;
  if (m.tied_embeddings && p.pp > 1) {
    const double embedding_per_gpu = static_cast<double>(shape.vocab) * static_cast<double>(m.hidden_size) / p.tp;
    // The first and last stage's ranks, (pp-1)*tp*cp*dp apart in Megatron's rank order.
    const GroupPlacement ends_g = place_group(2, (p.pp - 1) * p.tp * p.cp * p.dp, gpn);
    tied_embedding_sync = comm.all_reduce(embedding_per_gpu * grad_bytes, ends_g);
  }
  for (int s = 0; s < p.pp; ++s) {
    if (like_previous_middle_stage(s) && sc[s].fwd == sc[s - 1].fwd && sc[s].bwd == sc[s - 1].bwd) {
      sc[s].dp_exposed = sc[s - 1].dp_exposed;
      sc[s].optimizer = sc[s - 1].optimizer;
      continue;
    }
    const ParamSplit& split = sc[s].params;
    const double params = split.total();
    // Routed-expert gradients reduce over the expert-data-parallel group, the rest over dp*cp
    // (Megatron-Core's separate expert gradient buffers).
    const double edp = std::max(1, p.expert_data_parallel());
    // Sharded state: the gradients reduce-scatter inside each optimizer copy's group and its shard
    // all-reduces across the copies; the updated parameters all-gather inside the group.
    const double shard_ranks = p.optimizer_shard_ranks(), expert_shard_ranks = p.expert_optimizer_shard_ranks();
    auto rs = [&](double bytes_dense, double bytes_expert) {
      double t = 0;
      if (dp_shard > 1)
        t += comm.reduce_scatter(bytes_dense, dp_intra_g) + (copies ? comm.all_reduce(bytes_dense / shard_ranks, dp_inter_g) : 0.0);
      if (edp > 1 && bytes_expert > 0)
        t += comm.reduce_scatter(bytes_expert, edp_intra_g) +
             (copies ? comm.all_reduce(bytes_expert / expert_shard_ranks, edp_inter_g) : 0.0);
      return t;
    };
    auto ag = [&](double bytes_dense, double bytes_expert) {
      return (dp_shard > 1 ? comm.all_gather(bytes_dense, dp_intra_g) : 0.0) +
             (edp > 1 && bytes_expert > 0 ? comm.all_gather(bytes_expert, edp_intra_g) : 0.0);
    };
    auto ar = [&](double bytes_dense, double bytes_expert) {
      return (dp_shard > 1 ? comm.all_reduce(bytes_dense, dp_g) : 0.0) +
             (edp > 1 && bytes_expert > 0 ? comm.all_reduce(bytes_expert, edp_g) : 0.0);
    };
    double dp_time = 0, hidden = 0;  // hidden: the part of dp_time that runs behind compute
    if (dp_shard > 1 || (edp > 1 && split.expert > 0)) {
      if (fsdp_gathered_through_step) {
        // FSDP2 under PyTorch's pipeline schedules (torch.distributed.pipelining, as torchtitan
        // runs it): each layer's parameters are gathered at its first forward and stay gathered
        // (torchtitan's default reshard_after_forward policy is False with PP, "to avoid
        // per-microbatch all-gathers"; the schedule sets reshard_after_backward and
        // requires_gradient_sync False on every backward but the last, PipelineStage's
        // backward_maybe_with_nosync). The gradients accumulate unsharded in the reduce dtype and
        // are reduce-scattered once, after the last backward, in one post-backward pass that has
        // no compute left to hide behind. The gathers are prefetched layer by layer behind the
        // first micro-batch's forward.
        const GroupPlacement& shard_g = copies ? dp_intra_g : dp_g;
        const double gather = comm.all_gather(fsdp_gathered_bytes(job, s, stage_layers[s], params), shard_g);
        dp_time = gather + comm.reduce_scatter(params * kFsdpReduceBytes, shard_g);
        hidden = overlapped_dp_time(gather, sc[s].fwd, p.vpp, p.pp);
        if (copies) dp_time += comm.all_reduce(params * kFsdpReduceBytes / shard_ranks, dp_inter_g);
      } else if (fw == Framework::fsdp || p.zero_stage >= 3) {
        // Parameters gathered for forward and again for backward, gradients reduce-scattered, for
        // every micro-batch; prefetching overlaps them with the compute of each micro-batch.
        // DeepSpeed ZeRO-3 moves parameters in buckets of stage3_prefetch_bucket_size (default
        // 5e7 elements); FSDP gathers one wrapped decoder layer at a time. Each collective pays
        // the ring latency of the whole data-parallel group.
        // Megatron-FSDP works like FSDP: one unit per decoder layer, the next unit's gather
        // prefetched behind the current one's compute (megatron/core/distributed/fsdp/src/docs/
        // runtime_schedule.md: AG_{i+1} before DO_i forward, AG_{i-1} before RS_i backward).
        const bool layerwise = fw != Framework::deepspeed;
        const double pieces = layerwise ? stage_layers[s] + 1.0 : std::ceil(params / kZero3BucketElements);
        // Hybrid sharding (HSDP) gathers and reduce-scatters inside each replica group, then once per
        // step all-reduces each gradient shard across the replicas, or, with the optimizer state
        // split across them (outer "optim"), reduce-scatters it and all-gathers the updated
        // parameters (Megatron-FSDP's outer data-parallel group).
        const GroupPlacement& shard_g = copies ? dp_intra_g : dp_g;
        // FSDP2's HSDP all-reduces each unit's gradient shard across the replicas right after its
        // reduce-scatter, on every backward that syncs (foreach_reduce's all-reduce group), which
        // is every micro-batch without a pipeline: per unit, behind the backward like the rest.
        const bool replica_reduce_per_mb = copies && fw == Framework::fsdp;
        // FSDP gathers the linears' weights in fp8 under torchao's float8 all-gather.
        const double gathered_bytes = fsdp_gathered_bytes(job, s, stage_layers[s], params);
        const double per_mb =
            pieces * (2 * comm.all_gather(gathered_bytes / pieces, shard_g) + comm.reduce_scatter(params * grad_bytes / pieces, shard_g) +
                      (replica_reduce_per_mb ? comm.all_reduce(params * grad_bytes / pieces / shard_ranks, dp_inter_g) : 0.0));
        dp_time = per_mb * static_cast<double>(micro_batches);
        // FSDP prefetches the next block's parameters while computing the current one. DeepSpeed
        // ZeRO-3 fetches sub-module parameters on demand, so its gathers sit on the critical path
        // (the bottleneck ZeRO++, Wang et al. 2023 §2, sets out to remove).
        if (layerwise) hidden = std::min(dp_time, (sc[s].fwd + sc[s].bwd) * static_cast<double>(micro_batches));
        if (copies && !replica_reduce_per_mb)
          dp_time += p.outer_optimizer_sharding ? comm.reduce_scatter(params * grad_bytes / shard_ranks, dp_inter_g) +
                                                      comm.all_gather(params * weight_bytes / shard_ranks, dp_inter_g)
                                                : comm.all_reduce(params * grad_bytes / shard_ranks, dp_inter_g);
      } else if (p.distributed_optimizer || p.zero_stage >= 1) {
        const double reduce_scatter = rs(split.dense * grad_bytes, split.expert * grad_bytes);
        // With fp8 parameters (--fp8-param-gather) the decoder linears are gathered as fp8, 1 byte each.
        const ParamSplit linears = fp8_params ? decoder_param_split(job, s, stage_layers[s]) : ParamSplit{};
        const double all_gather = ag((split.dense - linears.dense) * weight_bytes + linears.dense,
                                     (split.expert - linears.expert) * weight_bytes + linears.expert);
        dp_time = reduce_scatter + all_gather;
        // Each collective hides only behind its own window: the gradient reduce-scatter behind the
        // last micro-batch's backward (--overlap-grad-reduce), the parameter all-gather behind the
        // next iteration's first forward (--overlap-param-gather). DeepSpeed ZeRO-1/2 gathers the
        // updated parameters inside its optimizer step (all_gather_dp_groups), never overlapped.
        const bool gather_overlaps = job.runtime.overlap_param_gather && fw != Framework::deepspeed;
        hidden = (job.runtime.overlap_grad_reduce ? overlapped_dp_time(reduce_scatter, sc[s].bwd, p.vpp, p.pp) : 0.0) +
                 (gather_overlaps ? overlapped_dp_time(all_gather, sc[s].fwd, p.vpp, p.pp) : 0.0);
      } else {
        dp_time = ar(split.dense * grad_bytes, split.expert * grad_bytes);
        hidden = job.runtime.overlap_grad_reduce ? overlapped_dp_time(dp_time, sc[s].bwd, p.vpp, p.pp) : 0.0;
      }
    }
    // Overlapped communication is not free: it slows the compute it hides behind.
    sc[s].dp_exposed = dp_time - hidden + cal.kernel.overlap_interference * hidden;
    // Tied input/output embeddings split over a pipeline: the first and last stages each hold a
    // copy, and after backward they all-reduce its gradient between them, after the DP sync and
    // outside any overlap (Megatron finalize_model_grads `_allreduce_word_embedding_grads`,
    // DeepSpeed's pipeline `_exec_reduce_tied_grads`). Counted with the gradient synchronization.
    if (s == 0 || s == p.pp - 1) sc[s].dp_exposed += tied_embedding_sync;
    const bool sharded = fw == Framework::fsdp || p.distributed_optimizer || p.zero_stage >= 1;
    const double outer = p.outer_optimizer_sharding ? instances : 1;  // HSDP's optimizer split across the replicas
    const double updated = sharded ? (split.dense / shard_ranks + split.expert / expert_shard_ranks) / outer : params;
    // The offloaded share steps on the host: its gradients go down and its updated weights come back
    // over the GPU's host link (HybridDeviceOptimizer); the host's arithmetic is not costed (a note says so).
    const double offloaded = optimizer.cpu_offload_fraction;
    sc[s].optimizer = updated * (1 - offloaded) * step_bytes / (cl.gpu.hbm_GBps * 1e9 * cal.kernel.memory_efficiency) +
                      updated * offloaded * (grad_bytes + weight_bytes) / (cl.gpu.pcie_GBps * 1e9);
  }
  for (int s = 0; s < p.pp; ++s) sc[s].finish = pr.end_s[s] + sc[s].dp_exposed + sc[s].optimizer + job.runtime.step_overhead_s;
  const int crit = static_cast<int>(
      std::max_element(sc.begin(), sc.end(), [](const StageCost& a, const StageCost& b) { return a.finish < b.finish; }) - sc.begin());
  pred.iteration_time_s = sc[crit].finish;

  // ---- memory -----------------------------------------------------------------------------------
  pred.feasible = true;
  pred.stages.reserve(static_cast<std::size_t>(p.pp));
  int worst_mem = 0;
  LayerActivationBytes layer_bytes(job);
  for (int s = 0; s < p.pp; ++s) {
    StagePrediction st;
    st.stage = s;
    st.layers = stage_layers[s];
    st.forward_s = sc[s].fwd;
    st.backward_s = sc[s].bwd;
    st.recompute_s = sc[s].recompute;
    st.busy_s = pr.busy_s[s];
    st.in_flight_micro_batches = pr.peak_in_flight[s];
    st.memory = stage_memory(job, s, stage_layers[s], pr.peak_in_flight[s], sc[s].params, layer_bytes);
    if (st.memory.total_GiB > pred.memory_per_gpu_GiB) {
      pred.memory_per_gpu_GiB = st.memory.total_GiB;
      worst_mem = s;
    }
    pred.stages.push_back(st);
  }

  // ---- throughput and utilization -------------------------------------------------------------
  const double world = p.world_size();
  const double gbs = static_cast<double>(job.training.global_batch_size);
  const double seq = static_cast<double>(job.training.seq_length);
  pred.tokens_per_sec_per_gpu = gbs * seq / pred.iteration_time_s / world;
  double layers_model = 0;
  {
    // Summed layer by layer in order; each kind's FLOPs computed once (a uniform model: one kind).
    std::vector<std::pair<LayerKind, double>> kind_flops;
    if (m.uniform_layers()) layers_model = m.num_layers * layer_model_flops_fwd(m, seq, seq, kind_costs.front().first);
    else for (int i = 0; i < m.num_layers; ++i) {
      const LayerKind kind = m.layer_kind(i);
      auto it = std::find_if(kind_flops.begin(), kind_flops.end(), [&](const auto& kf) { return kf.first == kind; });
      if (it == kind_flops.end()) it = kind_flops.insert(it, {kind, layer_model_flops_fwd(m, seq, seq, kind)});
      layers_model += it->second;
    }
  }
  const double logits_model = 2.0 * seq * static_cast<double>(m.hidden_size) * static_cast<double>(m.vocab_size);
  // Megatron counts each MTP module as a layer of the last layer's kind, its 2h x h projection and
  // one more logit computation (training.py num_floating_point_operations).
  const double h_model = static_cast<double>(m.hidden_size);
  double mtp_layers_model = 0;
  if (mtp_modules > 0)
    for (LayerKind kind : m.mtp_layer_kinds()) mtp_layers_model += layer_model_flops_fwd(m, seq, seq, kind);
  const double mtp_model = mtp_modules > 0 ? mtp_modules * (mtp_layers_model + 2.0 * seq * 2.0 * h_model * h_model + logits_model) : 0.0;
  const double model_flops = 3.0 * gbs * (layers_model + logits_model + mtp_model);
  // Against the peak of the format the GEMMs run in: NVFP4's fp4 peak, not fp8's.
  const double peak = job.training.precision == Precision::fp8 ? cl.gpu.low_precision_peak_flops(job.training.recipe)
                                                               : cl.gpu.peak_flops(job.training.precision);
  pred.mfu = model_flops / (pred.iteration_time_s * world * peak);
  double rec_flops = 0;
  for (int s = 0; s < p.pp; ++s) rec_flops += sc[s].recompute_flops;
  // lc.recompute_flops is per GPU for one micro-batch of one TP/CP shard: scale to the whole job.
  const double hw_extra = rec_flops * static_cast<double>(micro_batches) * p.dp * p.tp * p.cp;
  pred.hfu = (model_flops + hw_extra) / (pred.iteration_time_s * world * peak);

  // ---- breakdown of the critical stage ------------------------------------------------------------
  const double mbs = static_cast<double>(micro_batches);
  TimeBreakdown& bd = pred.breakdown;
  bd.stage = crit;
  bd.compute_s = sc[crit].compute * mbs;
  bd.recompute_s = sc[crit].recompute * mbs;
  bd.tp_comm_s = sc[crit].tp * mbs;
  bd.cp_comm_s = sc[crit].cp * mbs;
  bd.ep_comm_s = sc[crit].ep * mbs;
  bd.host_s = sc[crit].host * mbs;
  bd.offload_s = sc[crit].offload * mbs;
  const double idle = std::max(0.0, pr.end_s[crit] - pr.busy_s[crit]);
  bd.pp_comm_s = std::min(idle, pp_exposed) + sc[crit].pp_blocking * mbs;
  // Part of the critical stage's idle time is waiting for a slower stage (imbalance), the rest is
  // the schedule's own fill/drain bubble.
  const double waiting = idle - std::min(idle, pp_exposed);
  const double max_busy = *std::max_element(pr.busy_s.begin(), pr.busy_s.end());
  bd.imbalance_s = std::min(waiting, max_busy - pr.busy_s[crit]);
  bd.bubble_s = waiting - bd.imbalance_s;
  bd.dp_comm_s = sc[crit].dp_exposed;
  bd.optimizer_s = sc[crit].optimizer;
  bd.step_overhead_s = job.runtime.step_overhead_s;

  // ---- feasibility and bottleneck -------------------------------------------------------------
  const StagePrediction& wm = pred.stages[worst_mem];
  if (wm.memory.total_GiB > pred.memory_capacity_GiB) {
    pred.feasible = false;
    pred.reason = over_memory_reason(worst_mem, wm.memory.total_GiB, pred.memory_capacity_GiB, cl.gpu.name, p);
    pred.bottleneck = {"memory", worst_mem, 0, 0, pred.reason};
    return pred;
  }
  // Host memory: what a GPU's offloaded activations and optimizer state take of its node's host
  // memory, shared by the node's GPUs (where the cluster gives it).
  int worst_host = 0;
  for (int s = 1; s < p.pp; ++s)
    if (pred.stages[s].memory.host_GiB > pred.stages[worst_host].memory.host_GiB) worst_host = s;
  const double host_need = pred.stages[worst_host].memory.host_GiB, host_share = cl.host_memory_GiB_per_gpu();
  if (host_share > 0 && host_need > host_share) {
    pred.feasible = false;
    pred.reason = fmt::format(FMT_COMPILE("stage {} needs {:.1f} GiB of host memory per GPU for offloaded activations and optimizer "
                                          "state > {:.1f} GiB ({:.0f} GiB per node over {} GPUs) on {} ({})"),
                              worst_host, host_need, host_share, cl.host_memory_GiB_per_node, cl.gpus_per_node, cl.name, plan_text(p));
    pred.bottleneck = {"memory", worst_host, 0, 0, pred.reason};
    return pred;
  }
  const double T = pred.iteration_time_s;
  // Aceso's bottleneck (Liu et al., EuroSys'24 §4): the busiest stage sets the pace, so what its
  // layers spend beyond compute (exposed TP/CP/EP communication, host waits, recompute) is read off
  // that stage; what follows from the schedule (bubble, PP/DP exposure, optimizer) off the stage
  // that ends the iteration. Uneven stages cost the busiest stage's work beyond the stages' mean,
  // what an even split would share out (the lighter stages' wait, `imbalance_s`, is larger where
  // the split cannot be evened, e.g. dense layers before MoE ones, so it is not the measure).
  const int slowest = static_cast<int>(std::max_element(pr.busy_s.begin(), pr.busy_s.end()) - pr.busy_s.begin());
  const StageCost& hot = sc[slowest];
  const double mean_busy = std::accumulate(pr.busy_s.begin(), pr.busy_s.end(), 0.0) / p.pp;
  struct Cand { const char* kind; double t; int stage; };
  const Cand cands[] = {{"bubble", bd.bubble_s, crit},          {"tp_comm", hot.tp * mbs, slowest},
                        {"cp_comm", hot.cp * mbs, slowest},     {"ep_comm", hot.ep * mbs, slowest},
                        {"host", hot.host * mbs, slowest},      {"offload", hot.offload * mbs, slowest},
                        {"pp_comm", bd.pp_comm_s, crit},
                        {"dp_comm", bd.dp_comm_s, crit},        {"recompute", hot.recompute * mbs, slowest},
                        {"optimizer", bd.optimizer_s, crit},    {"stage_time", max_busy - mean_busy, slowest}};
  const Cand* top = std::max_element(std::begin(cands), std::end(cands), [](const Cand& a, const Cand& b) { return a.t < b.t; });
  if (top->t < 0.03 * T) {
    // The host-side step overhead is left out: no plan of this job changes it.
    pred.bottleneck = {"compute", slowest, 0, T,
                       std::string("compute-bound: no overhead a plan can change (bubble, communication, recompute, optimizer "
                                   "step, stage imbalance) reaches 3% of the iteration")};
  } else {
    pred.bottleneck = {top->kind, top->stage, top->t, T, {}};
  }
  add_prediction_notes(job, shape, moe_host, dense_host, worst_mem, pred);
  if (host_need > 0)
    pred.notes.push_back(host_share > 0 ? fmt::format("host memory: stage {} keeps {:.1f} GiB per GPU offloaded, of the {:.1f} GiB its node "
                                                      "has per GPU (not counting what the OS, the data loader and pinned "
                                                      "communication buffers take)",
                                                      worst_host, host_need, host_share)
                                        : fmt::format("host memory: stage {} keeps {:.1f} GiB per GPU offloaded; the cluster gives no host "
                                                      "memory (host_memory_GiB), so whether it fits is not checked",
                                                      worst_host, host_need));
  return pred;
}

Prediction AnalyticalCostModel::predict(const Job& job) const { return strata::predict(job); }

}  // namespace strata
