#include "layer_cost.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string_view>

#include "costmodel/memory_model.h"

namespace strata {

LayerShape micro_batch_shape(const Job& job) {
  const ModelSpec& m = job.model;
  const ParallelPlan& p = job.plan;
  const ClusterSpec& cl = job.cluster;
  LayerShape shape;
  shape.micro_batch = p.micro_batch_size;
  shape.seq = job.training.seq_length;
  shape.tp = p.tp;
  shape.cp = p.cp;
  shape.cp_ring = p.cp > 1 && job.runtime.cp_comm_type != CpCommType::allgather ? p.cp / cp_a2a_group_size(job) : 1;
  shape.ep = p.ep;
  shape.etp = p.etp;
  shape.moe_imbalance = m.moe ? effective_moe_imbalance(job.runtime) : 1.0;
  shape.moe_sort_chunks = m.moe && p.ep * p.etp > 1 && !job.runtime.moe_token_dedup && !job.runtime.moe_allgather_dispatch &&
                          job.runtime.framework == Framework::megatron;
  shape.moe_grouped_gemm = job.runtime.moe_grouped_gemm;
  shape.moe_dispatcher_pads = job.runtime.moe_token_dedup;
  shape.sequence_parallel = p.sequence_parallel && p.tp > 1;
  shape.flash_attention = job.runtime.flash_attention;
  shape.element_bytes = activation_bytes(job.training.precision);
  shape.fp8_linears = job.training.precision == Precision::fp8 && cl.gpu.low_precision_peak_flops(job.training.recipe) > 0;
  shape.recipe = job.training.recipe;
  // Megatron-Core runs Transformer Engine's attention: cuDNN's fused kernel on Hopper and later,
  // FlashAttention otherwise (resolved_attention_kernel); the rate of either grows with the keys per
  // query tile (key_loop_factor). The FSDP and DeepSpeed stacks of the published runs used
  // FlashAttention-2-era kernels, kept at the flat rate of the attention efficiencies.
  shape.cudnn_attention = resolved_attention_kernel(job.runtime, cl.gpu) == AttentionKernel::cudnn;
  shape.fp8_attention = job.runtime.fp8_attention && shape.cudnn_attention && job.training.precision == Precision::fp8;
  shape.attention_scales_with_seq = job.runtime.framework == Framework::megatron || shape.cudnn_attention;
  shape.vocab = padded_vocab_size(job);
  shape.cross_entropy = resolved_cross_entropy(job.runtime);
  shape.recompute_modules = p.recompute.modules;
  return shape;
}

namespace {

// The host time a layer exposes when nothing synchronises the host with the GPU: the host issues
// ahead, across layers and between forward and backward, so it binds only as a rate. Where it
// issues a layer's forward (h_fwd) and backward (h_bwd) slower than the GPU runs them (g_fwd, g_bwd)
// the GPU waits for the difference (a queue fed slower than it drains). Under full recompute the
// forward is issued and run twice. The excess is split between forward and backward by their host
// times; the predictor adds the forward's share once more for a recomputed layer (layer_refwd),
// which makes up the recompute's part.
void rate_bound_host(double h_fwd, double h_bwd, double g_fwd, double g_bwd, bool recomputed, LayerCost& lc) {
  const double again = recomputed ? 1.0 : 0.0;
  const double host = (1 + again) * h_fwd + h_bwd;
  const double excess = std::max(0.0, host - ((1 + again) * g_fwd + g_bwd));
  lc.fwd_host = host > 0 ? excess * h_fwd / host : 0.0;
  lc.bwd_host = host > 0 ? excess * h_bwd / host : 0.0;
}

// Part of a layer's forward between two host synchronisations, in issue order: its GPU time and
// the host's time to issue it.
struct IssuedPart {
  double gpu, host;
};

// A stretch of parts issued after a synchronisation (the GPU idle, the host's queue empty): each
// part's GPU work runs after the previous part's and ends no earlier than the host has issued it,
// its ops running as they are issued (a two-machine flow shop, host then GPU, in issue order).
double issued_stretch(std::initializer_list<IssuedPart> parts) {
  double gpu = 0, host = 0;
  for (const IssuedPart& part : parts) {
    host += part.host;
    gpu = std::max(gpu + part.gpu, host);
  }
  return gpu;
}

}  // namespace

LayerCost decoder_layer_cost(const LayerCostInputs& in, LayerKind kind) {
  const Job& job = in.job;
  const ParallelPlan& p = job.plan;
  const ModelSpec& m = job.model;
  const Calibration& cal = job.calibration;
  const LayerShape& shape = in.shape;
  const CommModel& comm = in.comm;
  const GroupPlacement cp_g = in.cp_group, ep_g = in.ep_group;
  const int gpn = job.cluster.gpus_per_node;
  const int eb = shape.element_bytes;
  const bool sp = shape.sequence_parallel;
  const double tokens = in.tokens, tp_collective = in.tp_collective;
  // --tp-comm-overlap pipelines TP collectives with the GEMMs; assume 80% hidden (a default).
  const double tp_exposed_frac = job.runtime.tp_comm_overlap ? 0.2 : 1.0;
  // A hybrid model's MoE layer holds no attention block: its host issues the MoE block alone (the
  // layers between two MoE layers are costed as their own layers).
  MoeHostTime moe_host = in.moe_host;
  if (kind.part == Sublayer::mlp) moe_host.attention_forward_s = moe_host.attention_backward_s = 0;
  const bool moe_host_bound = moe_host.any();
  const KernelModel& kernels = kind.bf16 ? *in.bf16_kernels : in.kernels;
  LayerShape kind_shape = shape;
  kind_shape.fp8_linears = shape.fp8_linears && !kind.bf16;
  const LayerOps ops = decoder_layer_ops(m, kind_shape, kind);
  LayerCost lc;
  lc.fwd_compute = kernels.total_time(ops.forward);
  lc.bwd_compute = kernels.total_time(ops.backward);
  // One TP collective per forward (and backward) for each of the layer's parts: a decoder layer's
  // attention and MLP, or a hybrid layer's one part (its row-parallel output projection).
  const double tp_parts = kind.part == Sublayer::decoder ? 2 : 1;
  lc.fwd_tp = tp_parts * tp_collective * tp_exposed_frac;
  lc.bwd_tp = tp_parts * tp_collective * tp_exposed_frac;
  if (kind.has_attention()) {  // not overlapped: the attention waits for its group's Q, K and V
    lc.fwd_tp += in.qkv_gather;
    lc.bwd_tp += in.qkv_gather;
  }
  if (job.runtime.async_tp_allreduce && p.tp > 1) {
    // Each of the two backward collectives hides behind the weight-gradient GEMM of the
    // column-parallel layer whose input gradient it reduces; overlapped NCCL kernels still slow
    // the GEMM they share the GPU with (overlap_interference).
    const double c = tp_collective * tp_exposed_frac;
    lc.bwd_tp = 0;
    for (const auto& op : ops.backward)
      if (op.weight_grad && (std::string_view(op.name) == "qkv_proj" || std::string_view(op.name) == "fc1" ||
                             std::string_view(op.name) == "q_up_proj" || std::string_view(op.name) == "expert_fc1" ||
                             std::string_view(op.name) == "mamba_in_proj" || std::string_view(op.name) == "gdn_in_proj")) {
        const double window = kernels.time(op).time_s;
        lc.bwd_tp += std::max(0.0, c - window) + cal.kernel.overlap_interference * std::min(c, window);
      }
  }
  // CP: ring exchange of K and V blocks, overlapped with the attention blocks it feeds (Liu et al.
  // 2023 ring attention; Megatron-Core CP); backward also returns dK, dV.
  if (p.cp > 1 && (kind.has_mamba() || kind.has_gdn())) {
    // A linear-time mixer's context parallelism trades the sequence split for a head split around
    // its conv and scan: an all-to-all of in_proj's outputs before, of the scan's output after;
    // backward the same for their gradients; nothing overlaps them. Per token and rank, the
    // channels each moves:
    //  - Mamba-2 (MambaContextParallel): z, x, B, C and dt before (B and C repeated when a rank
    //    holds fewer groups than there are CP ranks), y after;
    //  - gated DeltaNet (tensor_a2a_cp2hp / hp2cp): q, k, v, z, beta and alpha before, the output after.
    double before = 0, after = 0;
    if (kind.has_mamba() && m.mamba) {
      const MambaSpec& mb = *m.mamba;
      const double groups_local = std::max(1.0, static_cast<double>(mb.num_groups) / p.tp);
      const double repeat = std::max(1.0, p.cp / groups_local);
      after = static_cast<double>(mb.d_inner()) / p.tp;
      before = 2 * after + repeat * 2 * groups_local * static_cast<double>(mb.state_dim) + mb.num_heads / p.tp;
    } else if (kind.has_gdn() && m.gdn) {
      before = static_cast<double>(m.gdn->in_proj_width()) / p.tp;
      after = static_cast<double>(m.gdn->v_dim()) / p.tp;
    }
    lc.fwd_cp = comm.all_to_all(tokens * eb * before, cp_g) + comm.all_to_all(tokens * eb * after, cp_g);
    lc.bwd_cp = lc.fwd_cp;
  } else if (p.cp > 1 && kind.has_attention()) {
    // DSA's absorbed attention gathers the shared kv latent and rope key (whole on every TP rank)
    // and the indexer's keys (Megatron dsa.py gathers k over the CP group), not per-head K and V.
    const double kv_bytes = m.dsa && m.mla ? tokens * eb *
                                                 (static_cast<double>(m.mla->kv_lora_rank + m.mla->qk_rope_head_dim) +
                                                  m.indexer_share() * static_cast<double>(m.dsa->index_head_dim))
                                           : tokens * 2.0 * std::max(static_cast<double>(m.kv_hidden()) / p.tp,
                                                                       static_cast<double>(m.head_dim())) * eb;
    double attn_fwd = 0, attn_bwd = 0;
    for (const auto& op : ops.forward)
      if (op.kind == OpKind::attention) attn_fwd += kernels.time(op).time_s;
    for (const auto& op : ops.backward)
      if (op.kind == OpKind::attention) attn_bwd += kernels.time(op).time_s;
    if (job.runtime.cp_comm_type == CpCommType::allgather) {
      // --cp-comm-type allgather (TE AttnFuncWithCPAndKVAllGather): K and V of the whole sequence
      // are all-gathered before attention, dK and dV reduce-scattered after its backward; the
      // attention of the local half runs behind the gather of the rest (about half hidden).
      // PyTorch's context parallelism (torchtitan's "allgather" rotate method) gathers them behind
      // its first sub-attention only, the rank's own K/V block: 1/cp of the attention.
      const double behind = job.runtime.framework == Framework::fsdp ? 1.0 / p.cp : 0.5;
      lc.fwd_cp = std::max(0.0, comm.all_gather(kv_bytes * p.cp, cp_g) - behind * attn_fwd);
      lc.bwd_cp = std::max(0.0, comm.reduce_scatter(kv_bytes * p.cp, cp_g) - behind * attn_bwd);
    } else {
      // p2p, a2a and a2a+p2p are one mechanism over a CP ranks that exchange by all-to-all and
      // b = cp / a groups on a ring (cp_a2a_group_size: a = 1 for p2p, cp for a2a). The
      // all-to-alls (DeepSpeed-Ulysses; TE AttnFuncWithCPAndQKVOA2A) turn the sequence-sharded
      // Q, K, V into head-sharded ones before attention and O back after it, backward the same
      // for dO and dQ, dK, dV; nothing overlaps them. The ring (TE AttnFuncWithCPAndKVP2P; with
      // two groups Megatron's --hierarchical-context-parallel-sizes a b) passes K/V blocks of the
      // same bytes per step behind the attention they feed.
      const int b = shape.cp_ring, a = p.cp / b;  // the ring, and the all-to-all groups on it
      const GroupPlacement inner = place_group(a, p.tp, gpn), outer = place_group(b, p.tp * a, gpn);
      const double q_bytes = tokens * static_cast<double>(m.hidden_size) / p.tp * eb;
      const double a2a = a > 1 ? 2 * comm.all_to_all(q_bytes, inner) + comm.all_to_all(kv_bytes, inner) : 0.0;
      const double ring = (b - 1) * comm.p2p(kv_bytes, outer.spans_nodes());
      // With fp8 attention under delayed or current scaling the ring passes K and V quantized, 1
      // byte each (AttnFuncWithCPAndKVP2P sends the fp8 data; MXFP8 keeps them in bf16); the
      // gradients travel back in bf16.
      const bool fp8_ring = shape.fp8_attention && job.training.recipe != LowPrecisionRecipe::mxfp8;
      const double kv_ring = fp8_ring ? (b - 1) * comm.p2p(kv_bytes / eb, outer.spans_nodes()) : ring;
      lc.fwd_cp = a2a + std::max(0.0, kv_ring - attn_fwd);
      lc.bwd_cp = a2a + std::max(0.0, kv_ring + ring - attn_bwd);
    }
  }
  if (kind.moe && m.moe && p.ep * p.etp > 1) {
    // Token dispatch and combine: two all-to-alls forward, two backward (GShard; Megatron-Core
    // MoEAlltoAllTokenDispatcher). Each rank sends its (sequence-parallel) tokens' top_k copies,
    // times the routing imbalance, over the EP x ETP group; ranks of the group on other nodes
    // go over the network (the comm model places the group: ep ranks are etp apart,
    // parallel_state.py's expert grid). With --overlap-moe-expert-parallel-comm the all-to-all
    // runs behind another micro-batch's compute (Megatron's 1F1B A2A overlap).
    const double tokens_sp = sp ? tokens / p.tp : tokens;
    // A latent MoE dispatches its tokens at the latent width (Megatron-Core's dispatcher hidden_dim).
    const double token_bytes = tokens_sp * static_cast<double>(m.expert_width()) * eb * shape.moe_imbalance;
    // Copies of a token that leave for each destination: the top_k experts are spread evenly
    // over the group's n ranks on n/r nodes (r ranks per node). The plain all-to-all sends one
    // copy per expert: k(r-1)/n stay on the node, k(n-r)/n cross the network. DeepEP/HybridEP
    // (moe_token_dedup) send a token once per remote node and fan it out over NVLink there
    // (DeepSeek-V3 report §3.2.2): (nodes-1)(1-(1-1/nodes)^k) network copies.
    const double n = ep_g.size, r = std::min<double>(ep_g.ranks_per_node, n), nodes = std::max(1.0, n / r);
    const double k = m.moe->top_k;
    const double intra_copies = k * (r - 1) / n;
    const double inter_copies = job.runtime.moe_token_dedup ? (nodes - 1) * (1 - std::pow(1 - 1 / nodes, k)) : k * (n - r) / n;
    const double a2a = comm.all_to_all_two_level(token_bytes * intra_copies, token_bytes * inter_copies, ep_g);
    lc.fwd_ep = 2 * a2a;
    lc.bwd_ep = 2 * a2a;
    if (job.runtime.moe_allgather_dispatch) {
      // The allgather dispatcher moves every token of the group, routed here or not: an
      // all-gather of the group's tokens before the experts and a reduce-scatter of their outputs
      // after, mirrored in backward (gather_from/reduce_scatter_to_sequence_parallel_region over
      // the EP x ETP group).
      const double gathered = n * tokens_sp * static_cast<double>(m.expert_width()) * eb;
      lc.fwd_ep = comm.all_gather(gathered, ep_g) + comm.reduce_scatter(gathered, ep_g);
      lc.bwd_ep = lc.fwd_ep;
    }
    if (job.runtime.moe_a2a_overlap) {
      // The combined 1F1B schedule runs one micro-batch's forward beside another's backward,
      // layer by layer: "EP A2A in forward step is hidden by the attention/mlp computation in the
      // backward step, and vice versa" (Megatron-Core pipeline_parallel/combined_1f1b.py). So
      // compute hides at most its own length of all-to-all; the rest stays exposed, and the
      // hidden part still slows the compute it shares the GPU with (overlap_interference).
      auto exposed = [&](double comm_s, double compute_s) {
        return std::max(0.0, comm_s - compute_s) + cal.kernel.overlap_interference * std::min(comm_s, compute_s);
      };
      lc.fwd_ep = exposed(2 * a2a, lc.bwd_compute);
      lc.bwd_ep = exposed(2 * a2a, lc.fwd_compute);
    } else if (job.runtime.moe_shared_expert_overlap && !job.runtime.moe_allgather_dispatch) {
      // The shared experts on their side stream (SharedExpertMLP, token_dispatcher.py): forward,
      // fc1 and the activation run behind the dispatch all-to-all and fc2 behind the combine;
      // backward the mirror, fc2's gradients behind the combine's and fc1's behind the dispatch's.
      // Each all-to-all hides at most the shared work beside it, which the overlapped NCCL kernels
      // slow (overlap_interference).
      double fc1_fwd = 0, fc2_fwd = 0, fc1_bwd = 0, fc2_bwd = 0;
      for (const Op& op : ops.forward) {
        const std::string_view name = op.name;
        if (name == "shared_fc1" || name == "shared_activation") fc1_fwd += kernels.time(op).time_s;
        else if (name == "shared_fc2") fc2_fwd += kernels.time(op).time_s;
      }
      for (const Op& op : ops.backward) {
        const std::string_view name = op.name;
        if (name == "shared_fc1" || name == "shared_activation_bwd") fc1_bwd += kernels.time(op).time_s;
        else if (name == "shared_fc2") fc2_bwd += kernels.time(op).time_s;
      }
      auto exposed = [&](double comm_s, double compute_s) {
        return std::max(0.0, comm_s - compute_s) + cal.kernel.overlap_interference * std::min(comm_s, compute_s);
      };
      if (fc1_fwd + fc2_fwd > 0) {
        lc.fwd_ep = exposed(a2a, fc1_fwd) + exposed(a2a, fc2_fwd);
        lc.bwd_ep = exposed(a2a, fc2_bwd) + exposed(a2a, fc1_bwd);
      }
    }
  }
  // Full recompute issues a layer's forward a second time in its backward, host and GPU work both.
  const bool recomputed = p.recompute.granularity == RecomputeGranularity::full;
  const bool activation_syncs = kind.moe && m.moe && moe_host_bound && moe_host.activation_syncs > 0 && ops.experts_end > ops.experts_begin;
  if (kind.moe && m.moe && moe_host_bound && !moe_host.synchronises && !activation_syncs) {
    // No synchronisation (experts padded to capacity, or HybridEP's per-rank budget): the host
    // issues ahead of the GPU and binds only as a rate, as in a dense layer (below).
    const double g_fwd = lc.fwd_compute + lc.fwd_tp + lc.fwd_cp + lc.fwd_ep;
    const double g_bwd = lc.bwd_compute + lc.bwd_tp + lc.bwd_cp + lc.bwd_ep;
    rate_bound_host(moe_host.attention_forward_s + moe_host.forward_s, moe_host.attention_backward_s + moe_host.backward_s,
                    g_fwd, g_bwd, recomputed, lc);
  } else if (kind.moe && m.moe && moe_host_bound) {
    // The dispatcher's host synchronisation drains the GPU's queue once per MoE layer forward:
    // the synchronisation splits the layer. After it the host issues this layer's experts and
    // combine (`post`), then the next layer's attention block, router and permutation (`pre`),
    // and waits again. The GPU runs each part as it is issued, so one layer's forward takes
    //   max(max(G_post, H_post) + G_pre, H_post + H_pre)
    // (issued_stretch): the attention's GPU time hides none of the host time issued before it,
    // and the host times of both parts add up. (Measured on whole Megatron-Core decoder layers:
    // their wall time exceeded the larger of their GPU and host times by 5-60%; HostCoefficients.)
    // The TP collectives are one per part.
    // One pass over the forward's ops up to the synchronisations: before the dispatcher's, then
    // (with an activation's) the dispatch part and the experts, the first being the (first) fc1.
    double pre_compute = 0, dispatch_ops = 0, experts = 0, fc1 = 0;
    const std::size_t timed = activation_syncs ? ops.experts_end : ops.forward_sync;
    for (std::size_t i = 0; i < timed; ++i) {
      const double t = kernels.time(ops.forward[i]).time_s;
      if (i < ops.forward_sync) pre_compute += t;
      else if (i < ops.experts_begin) dispatch_ops += t;
      else experts += t;
      if (i == ops.experts_begin) fc1 = t;
    }
    const IssuedPart pre{pre_compute + lc.fwd_cp + 0.5 * lc.fwd_tp, moe_host.attention_forward_s + moe_host.forward_presync_s};
    const IssuedPart post{(lc.fwd_compute - pre_compute) + lc.fwd_ep + 0.5 * lc.fwd_tp, moe_host.forward_s - moe_host.forward_presync_s};
    double forward = issued_stretch({post, pre});
    if (activation_syncs) {
      // A synchronisation at each expert activation too (MoeHostTime::activation_syncs: one for a
      // grouped GEMM, one per SequentialMLP expert) splits `post` after the (first) expert's fc1:
      // the dispatch all-to-all, sort and fc1 run with no host work queued behind them, and the
      // activation, fc2 and combine join the next layer's `pre`. Between two SequentialMLP
      // experts' syncs run one expert's activation and fc2 and the next one's fc1: the experts
      // taken as alike, each such stretch is the larger of an expert's GPU and host time.
      const double n = moe_host.activation_syncs;
      const double g_dispatch = dispatch_ops + 0.5 * lc.fwd_ep, g_combine = post.gpu - g_dispatch - experts;
      const double h_dispatch = moe_host.forward_before_experts_s, h_experts = moe_host.experts_forward_s;
      const double h_combine = post.host - h_dispatch - h_experts;
      const IssuedPart first{g_dispatch + fc1 / n, h_dispatch + moe_host.first_activation_s};
      const IssuedPart last{(experts - fc1) / n + g_combine, h_experts / n - moe_host.first_activation_s + h_combine};
      const double between = (n - 1) * std::max(experts, h_experts) / n;
      // Without the dispatcher's synchronisation (padded to capacity) the activation's alone
      // splits the layer: the stretch runs from one layer's activation to the next one's.
      forward = moe_host.synchronises ? issued_stretch({first}) + between + issued_stretch({last, pre})
                                      : between + issued_stretch({last, pre, first});
    }
    lc.fwd_host = std::max(0.0, forward - (lc.fwd_compute + lc.fwd_tp + lc.fwd_cp + lc.fwd_ep));
    // The backward has no synchronisation, but the host issues it layer by layer: where that
    // takes longer than the layer's GPU time the GPU waits (measured: a Megatron-Core MoE
    // layer's backward at its real shapes took its host time, 2-3x its kernels' time). (A
    // recomputed activation synchronises again in the backward; not modelled apart.)
    lc.bwd_host = std::max(0.0, moe_host.backward_s + moe_host.attention_backward_s -
                                    (lc.bwd_compute + lc.bwd_tp + lc.bwd_cp + lc.bwd_ep));
  }
  if (!kind.moe && in.dense_host.any()) {
    // A dense layer has no synchronisation: where the host issues its ops slower than the GPU runs
    // them (small per-GPU shapes: high tp, short micro-batches, fast GPUs), the GPU waits. A hybrid
    // layer issues its one part.
    const DenseHostTime& d = in.dense_host;
    double h_fwd = d.forward_s, h_bwd = d.backward_s;
    if (kind.part == Sublayer::attention) h_fwd = d.attention_forward_s, h_bwd = d.attention_backward_s;
    if (kind.part == Sublayer::mlp) h_fwd = d.mlp_forward_s, h_bwd = d.mlp_backward_s;
    if (kind.has_mamba() || kind.has_gdn()) h_fwd = d.mixer_forward_s, h_bwd = d.mixer_backward_s;
    rate_bound_host(h_fwd, h_bwd, lc.fwd_compute + lc.fwd_tp + lc.fwd_cp, lc.bwd_compute + lc.bwd_tp + lc.bwd_cp, recomputed, lc);
  }
  switch (p.recompute.granularity) {
    case RecomputeGranularity::none: break;
    case RecomputeGranularity::selective:
      lc.recompute = kernels.total_time(ops.selective_recompute);
      lc.recompute_flops = total_flops(ops.selective_recompute);
      // Recomputing a whole MoE block dispatches and combines its tokens again (and synchronises
      // the host again).
      if (kind.moe && (p.recompute.modules & kRecomputeMoe)) lc.recompute += lc.fwd_ep + lc.fwd_host;
      break;
    case RecomputeGranularity::full:
      // The whole forward runs again, its TP/CP/EP communication included.
      lc.recompute = lc.fwd_compute;
      lc.recompute_flops = total_flops(ops.forward);
      break;
  }
  if (p.offload.modules != 0) {
    // Fine-grained activation offloading (Megatron-Core fine_grained_activation_offload.py): the
    // offloaded tensors go to pinned host memory on a side stream (d2h) while the layer and the
    // next ones compute, and come back on another (h2d) before the layer's backward; the layer
    // waits only for the part of a copy its own work does not cover. The copies cross the GPU's
    // host link (pcie_GBps: PCIe, or NVLink-C2C where the GPU file says so) at the link's
    // protocol efficiency. Under full recompute the stored bytes are a non-recomputed layer's
    // (the predictor weighs them by the layers that are not).
    const RecomputeGranularity kept = p.recompute.granularity == RecomputeGranularity::full ? RecomputeGranularity::none
                                                                                            : p.recompute.granularity;
    const double copy = layer_offloaded_bytes(job, kept, kind) / (job.cluster.gpu.pcie_GBps * 1e9 * kHostLinkEfficiency);
    lc.fwd_offload = std::max(0.0, copy - (lc.fwd_compute + lc.fwd_tp + lc.fwd_cp + lc.fwd_ep + lc.fwd_host));
    lc.bwd_offload = std::max(0.0, copy - (lc.bwd_compute + lc.bwd_tp + lc.bwd_cp + lc.bwd_ep + lc.bwd_host + lc.recompute));
  }
  return lc;
}

}  // namespace strata
