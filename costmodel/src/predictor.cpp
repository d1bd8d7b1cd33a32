#include "costmodel/predictor.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "costmodel/comm_model.h"
#include "costmodel/kernel_model.h"
#include "costmodel/layer_ops.h"
#include "costmodel/memory_model.h"

namespace strata {

namespace {

// Bytes the optimizer phase of a step moves per parameter it updates (Megatron's mixed-precision
// optimizer): the grad-norm pass reads the fp32 gradient (4 B); Adam reads fp32 param, grad, m, v
// (16 B) and writes param, m, v (12 B); the update is copied to the bf16/fp16 model weights (read
// 4 B, write 2 B); the gradient buffer is zeroed for the next step (4 B). Megatron rescales the
// gradient (8 B more) only when its norm exceeds the clipping threshold; not counted. PyTorch's
// clip_grad_norm_ rescales on every step: 50 B, measured on an H100 as 50.9 ms for GPT-3 2.7B's
// 2.65B parameters (configs/measurements, train-steps), 2.6 TB/s.
constexpr double kAdamBytesPerParam = 42;
// DeepSpeed's default stage3_prefetch_bucket_size / reduce_bucket_size, in elements.
constexpr double kZero3BucketElements = 5e7;

// Per-micro-batch cost of one layer on one GPU, split by where the time goes.
struct LayerCost {
  double fwd_compute = 0;
  double bwd_compute = 0;
  double recompute = 0;   // extra forward work done in backward
  double fwd_tp = 0;      // exposed TP communication, forward
  double bwd_tp = 0;      // exposed TP communication, backward (incl. recomputed forward's)
  double fwd_cp = 0;
  double bwd_cp = 0;
  double fwd_ep = 0;      // MoE all-to-all
  double bwd_ep = 0;
  double recompute_flops = 0;
};

struct StageCost {
  double fwd = 0, bwd = 0;  // one micro-batch through all of the stage's chunks
  double compute = 0, recompute = 0, tp = 0, cp = 0, ep = 0;  // per micro-batch
  double pp_blocking = 0;  // blocking p2p sends inside the stage's own ops (DeepSpeed), per micro-batch
};

std::string plan_text(const ParallelPlan& p) {
  return fmt::format("tp={} pp={} dp={} cp={}", p.tp, p.pp, p.dp, p.cp);
}

}  // namespace

std::string check_plan(const Job& job) {
  const ModelSpec& m = job.model;
  const ParallelPlan& p = job.plan;
  const TrainingSpec& t = job.training;
  if (p.tp < 1 || p.pp < 1 || p.dp < 1 || p.cp < 1 || p.ep < 1 || p.vpp < 1 || p.micro_batch_size < 1)
    return "tp, pp, dp, cp, ep, vpp and micro-batch size must all be at least 1";
  if (t.global_batch_size < 1) return "global batch size must be at least 1";
  if (t.seq_length < 1) return "sequence length must be at least 1";
  if (m.num_attention_heads % p.tp != 0)
    return fmt::format("tp={} does not divide the {} attention heads", p.tp, m.num_attention_heads);
  if (m.num_query_groups % p.tp != 0)
    return fmt::format("tp={} does not divide the {} query groups (GQA)", p.tp, m.num_query_groups);
  if (m.ffn_hidden_size % p.tp != 0 && !m.moe)
    return fmt::format("tp={} does not divide ffn_hidden_size {}", p.tp, m.ffn_hidden_size);
  if (t.seq_length % p.cp != 0 || (p.cp > 1 && t.seq_length % (2 * p.cp) != 0))
    return fmt::format("cp={} needs the sequence length {} divisible by 2*cp (load-balanced causal split)", p.cp, t.seq_length);
  if (p.sequence_parallel && p.tp > 1 && (t.seq_length / p.cp) % p.tp != 0)
    return fmt::format("sequence parallelism needs the per-CP sequence {} divisible by tp={}", t.seq_length / p.cp, p.tp);
  const std::int64_t per_step = static_cast<std::int64_t>(p.dp) * p.micro_batch_size;
  if (t.global_batch_size % per_step != 0)
    return fmt::format("global batch {} is not divisible by dp*micro_batch = {}*{}", t.global_batch_size, p.dp, p.micro_batch_size);
  // Each factor is at most 2^40 / 10^6 / 10^6 (job_options.h limits): compare by division, no overflow.
  if (job.num_micro_batches() > kMaxSimulatedChunks / (static_cast<std::int64_t>(p.pp) * p.vpp))
    return fmt::format("{} micro-batches x pp*vpp = {} pipeline steps is more than the {} strata simulates", job.num_micro_batches(),
                       static_cast<std::int64_t>(p.pp) * p.vpp, kMaxSimulatedChunks);
  if (p.pp > m.num_layers) return fmt::format("pp={} exceeds the {} layers", p.pp, m.num_layers);
  if (!p.stage_layers.empty()) {
    if (static_cast<int>(p.stage_layers.size()) != p.pp)
      return fmt::format("{} stage layer counts given for pp={}", p.stage_layers.size(), p.pp);
    if (std::any_of(p.stage_layers.begin(), p.stage_layers.end(), [](int l) { return l < 1; }))
      return "every pipeline stage needs at least one layer";
    int sum = std::accumulate(p.stage_layers.begin(), p.stage_layers.end(), 0);
    if (sum != m.num_layers) return fmt::format("stage layers add up to {}, the model has {}", sum, m.num_layers);
  }
  if (p.vpp > 1) {
    if (p.pp < 2) return "interleaved pipelining (vpp > 1) needs pp >= 2";
    if (p.stage_layers.empty() && m.num_layers % (p.pp * p.vpp) != 0)
      return fmt::format("{} layers are not divisible by pp*vpp = {}; give uneven --stage-layers to split them", m.num_layers,
                         p.pp * p.vpp);
    for (std::size_t s = 0; s < p.stage_layers.size(); ++s)
      if (p.stage_layers[s] < p.vpp)
        return fmt::format("stage {} has {} layers, fewer than its vpp={} model chunks", s, p.stage_layers[s], p.vpp);
    if (job.num_micro_batches() % p.pp != 0)
      return fmt::format("interleaved pipelining needs the {} micro-batches divisible by pp={}", job.num_micro_batches(), p.pp);
  }
  if (p.zero_stage < 0 || p.zero_stage > 3) return "ZeRO stage must be 0..3";
  if (p.distributed_optimizer && p.zero_stage > 0) return "the distributed optimizer and ZeRO are alternatives; use one";
  if (m.moe) {
    if (m.moe->num_experts % p.ep != 0) return fmt::format("ep={} does not divide the {} experts", p.ep, m.moe->num_experts);
    if ((p.dp * p.cp) % p.ep != 0) return fmt::format("ep={} must divide dp*cp = {}", p.ep, p.dp * p.cp);
  } else if (p.ep != 1) {
    return "ep > 1 needs a mixture-of-experts model";
  }
  if (job.training.precision == Precision::fp8 && job.cluster.gpu.fp8_tflops <= 0)
    return fmt::format("{} has no fp8 tensor cores", job.cluster.gpu.name);
  if (job.cluster.gpu.peak_flops(job.training.precision) <= 0)
    return fmt::format("{} lists no {} throughput", job.cluster.gpu.name, to_string(job.training.precision));
  if (p.recompute.granularity == RecomputeGranularity::full && p.recompute.num_layers == 0)
    return "full recompute with 0 layers: use recompute none";
  return "";
}

Prediction predict(const Job& job, std::vector<PipelineEvent>* trace) {
  Prediction pred;
  pred.memory_capacity_GiB = job.cluster.gpu.memory_GiB - job.runtime.memory_reserve_GiB;
  if (std::string why = check_plan(job); !why.empty()) {
    pred.reason = why;
    pred.bottleneck = {"illegal", -1, why};
    return pred;
  }
  const ModelSpec& m = job.model;
  const ParallelPlan& p = job.plan;
  const ClusterSpec& cl = job.cluster;
  const Calibration& cal = job.calibration;
  const int eb = activation_bytes(job.training.precision);
  const bool sp = p.sequence_parallel && p.tp > 1;
  const std::int64_t micro_batches = job.num_micro_batches();

  KernelModel km(cl.gpu, job.training.precision, cal.kernel);
  CommModel comm(cl, cal.comm);
  // Megatron rank order tp, cp, dp, pp (fastest first): each group's stride and placement.
  const int gpn = cl.gpus_per_node;
  const GroupPlacement tp_g = place_group(p.tp, 1, gpn);
  const GroupPlacement cp_g = place_group(p.cp, p.tp, gpn);
  const GroupPlacement dp_g = place_group(p.dp * p.cp, p.tp, gpn);  // gradients reduce over dp x cp
  const GroupPlacement ep_g = place_group(p.ep, p.tp * p.cp, gpn);
  const bool pp_inter_node = static_cast<std::int64_t>(p.tp) * p.cp * p.dp >= gpn;

  LayerShape shape;
  shape.micro_batch = p.micro_batch_size;
  shape.seq = job.training.seq_length;
  shape.tp = p.tp;
  shape.cp = p.cp;
  shape.ep = p.ep;
  shape.sequence_parallel = sp;
  shape.flash_attention = job.runtime.flash_attention;
  shape.element_bytes = eb;
  shape.fp8_linears = job.training.precision == Precision::fp8 && cl.gpu.peak_flops(Precision::fp8) > 0;
  shape.vocab = padded_vocab_size(job);

  // ---- one decoder layer -------------------------------------------------------------------
  const LayerOps ops = decoder_layer_ops(m, shape);
  LayerCost lc;
  lc.fwd_compute = km.total_time(ops.forward);
  lc.bwd_compute = km.total_time(ops.backward);
  const double tokens = static_cast<double>(p.micro_batch_size) * static_cast<double>(job.training.seq_length) / p.cp;
  const double act_bytes = tokens * static_cast<double>(m.hidden_size) * eb;
  // TP: two all-reduces per layer forward and two backward (Shoeybi et al. 2019, Fig. 4); with SP
  // each becomes an all-gather + reduce-scatter of the same volume (Korthikanti §4.2.2).
  const double tp_collective = p.tp > 1 ? (sp ? 2 * comm.all_gather(act_bytes, tp_g) : comm.all_reduce(act_bytes, tp_g)) : 0;
  // --tp-comm-overlap pipelines TP collectives with the GEMMs; assume 80% hidden (a default).
  const double tp_exposed_frac = job.runtime.tp_comm_overlap ? 0.2 : 1.0;
  lc.fwd_tp = 2 * tp_collective * tp_exposed_frac;
  lc.bwd_tp = 2 * tp_collective * tp_exposed_frac;
  if (job.runtime.async_tp_allreduce && p.tp > 1) {
    // Each of the two backward collectives hides behind the weight-gradient GEMM of the
    // column-parallel layer whose input gradient it reduces; overlapped NCCL kernels still slow
    // the GEMM they share the GPU with (overlap_interference).
    const double c = tp_collective * tp_exposed_frac;
    lc.bwd_tp = 0;
    for (const auto& op : ops.backward)
      if (op.weight_grad && (std::string_view(op.name) == "qkv_proj" || std::string_view(op.name) == "fc1")) {
        const double window = km.time(op).time_s;
        lc.bwd_tp += std::max(0.0, c - window) + cal.kernel.overlap_interference * std::min(c, window);
      }
  }
  // CP: ring exchange of K and V blocks, overlapped with the attention blocks it feeds (Liu et al.
  // 2023 ring attention; Megatron-Core CP); backward also returns dK, dV.
  if (p.cp > 1) {
    const double kv_bytes = tokens * 2.0 * static_cast<double>(m.kv_hidden()) / p.tp * eb;
    const double ring_fwd = (p.cp - 1) * comm.p2p(kv_bytes, cp_g.spans_nodes());
    double attn_fwd = 0, attn_bwd = 0;
    for (const auto& op : ops.forward)
      if (op.kind == OpKind::attention) attn_fwd += km.time(op).time_s;
    for (const auto& op : ops.backward)
      if (op.kind == OpKind::attention) attn_bwd += km.time(op).time_s;
    lc.fwd_cp = std::max(0.0, ring_fwd - attn_fwd);
    lc.bwd_cp = std::max(0.0, 2 * ring_fwd - attn_bwd);
  }
  if (m.moe && p.ep > 1) {
    // Token dispatch and combine: two all-to-alls forward, two backward (GShard; Megatron-Core MoE).
    const double a2a = comm.all_to_all(act_bytes * m.moe->top_k, ep_g);
    lc.fwd_ep = 2 * a2a;
    lc.bwd_ep = 2 * a2a;
  }
  switch (p.recompute.granularity) {
    case RecomputeGranularity::none: break;
    case RecomputeGranularity::selective:
      lc.recompute = km.total_time(ops.selective_recompute);
      lc.recompute_flops = total_flops(ops.selective_recompute);
      break;
    case RecomputeGranularity::full:
      // The whole forward runs again, its TP/CP/EP communication included.
      lc.recompute = lc.fwd_compute;
      lc.recompute_flops = total_flops(ops.forward);
      break;
  }

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

  // ---- per stage, per chunk ------------------------------------------------------------------
  const std::vector<int> stage_layers = resolve_stage_layers(p, m.num_layers);
  const int v = p.vpp;
  PipelineInput pin;
  pin.stages = p.pp;
  pin.chunks = v;
  pin.micro_batches = micro_batches;
  pin.forward_s.assign(p.pp, std::vector<double>(v, 0));
  pin.backward_s.assign(p.pp, std::vector<double>(v, 0));
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
  const double layer_fwd = lc.fwd_compute + lc.fwd_tp + lc.fwd_cp + lc.fwd_ep;
  const double layer_bwd = lc.bwd_compute + lc.bwd_tp + lc.bwd_cp + lc.bwd_ep;
  const double layer_refwd = lc.fwd_tp + lc.fwd_cp + lc.fwd_ep;  // comm re-done by full recompute
  // Without gradient-accumulation fusion every micro-batch reads the fresh weight gradient and
  // read-modify-writes the accumulation buffer (fp32 main_grad in Megatron, model dtype in DeepSpeed).
  const bool sharded_grads = job.runtime.framework == Framework::fsdp || p.zero_stage >= 2;
  const double accum_bytes_per_param = (job.runtime.fused_grad_accumulation || sharded_grads) ? 0.0
                                       : job.runtime.framework == Framework::megatron ? eb + 8.0 : 3.0 * eb;
  for (int s = 0; s < p.pp; ++s) {
    const int layers = stage_layers[s];
    const int nfull = full_layers(layers);
    const double full_frac = layers > 0 ? static_cast<double>(nfull) / layers : 0;
    const double rec_per_layer = p.recompute.granularity == RecomputeGranularity::full
                                     ? full_frac * (lc.recompute + layer_refwd)
                                     : lc.recompute;
    const double accum_stage = stage_params_per_gpu(job, s, layers) * accum_bytes_per_param /
                               (cl.gpu.hbm_GBps * 1e9 * cal.kernel.memory_efficiency);
    for (int c = 0; c < v; ++c) {
      // Uneven stages under interleaving split into chunks of whole layers (chunk_layers).
      const double in_chunk = chunk_layers(p, s, layers, c);
      const double accum_chunk = layers > 0 ? accum_stage * in_chunk / layers : 0.0;
      double f = in_chunk * layer_fwd;
      double b = in_chunk * (layer_bwd + rec_per_layer);
      if (s == 0 && c == 0) { f += emb_fwd; b += emb_bwd; }
      if (s == p.pp - 1 && c == v - 1) { f += out_fwd; b += out_bwd; }
      const double send_fwd = (s < p.pp - 1 || c < v - 1) ? blocking_send : 0.0;  // activation to the next stage
      const double send_bwd = (s > 0 || c > 0) ? blocking_send : 0.0;              // gradient to the previous stage
      f += send_fwd;
      b += send_bwd + accum_chunk;
      sc[s].pp_blocking += send_fwd + send_bwd;
      pin.forward_s[s][c] = f;
      pin.backward_s[s][c] = b;
      sc[s].fwd += f;
      sc[s].bwd += b;
    }
    const bool first = s == 0, last = s == p.pp - 1;
    sc[s].compute = layers * (lc.fwd_compute + lc.bwd_compute) + (first ? emb_fwd_compute + emb_bwd_compute : 0) +
                    (last ? out_fwd_compute + out_bwd_compute : 0) + accum_stage;
    sc[s].recompute = p.recompute.granularity == RecomputeGranularity::full ? nfull * lc.recompute : layers * lc.recompute;
    sc[s].tp = layers * (lc.fwd_tp + lc.bwd_tp) + nfull * lc.fwd_tp + (first ? edge_tp : 0) + (last ? edge_tp : 0);
    sc[s].cp = layers * (lc.fwd_cp + lc.bwd_cp) + nfull * lc.fwd_cp;
    sc[s].ep = layers * (lc.fwd_ep + lc.bwd_ep) + nfull * lc.fwd_ep;
  }

  const PipelineResult pr = simulate_pipeline(pin, trace);
  // Exposed p2p: the fill and drain critical path crosses every virtual-stage boundary once each
  // way, 2(p*v - 1) transfers; steady-state transfers hide behind other micro-batches' compute.
  const double pp_exposed = p.pp > 1 ? 2.0 * (p.pp * v - 1) * pin.p2p_s : 0.0;

  // ---- data-parallel synchronization and optimizer step, per stage ---------------------------
  const Framework fw = job.runtime.framework;
  const bool fp32_model = job.training.precision == Precision::fp32 || job.training.precision == Precision::tf32;
  const double grad_bytes = (fw == Framework::megatron || fp32_model) ? 4 : 2;
  const double weight_bytes = fp32_model ? 4 : 2;
  const double dp_shard = static_cast<double>(p.dp) * p.cp;
  std::vector<double> dp_exposed(p.pp, 0), opt_time(p.pp, 0), stage_finish(p.pp, 0);
  double tied_embedding_sync = 0;
  if (m.tied_embeddings && p.pp > 1) {
    const double embedding_per_gpu = static_cast<double>(shape.vocab) * static_cast<double>(m.hidden_size) / p.tp;
    // The first and last stage's ranks, (pp-1)*tp*cp*dp apart in Megatron's rank order.
    const GroupPlacement ends_g = place_group(2, (p.pp - 1) * p.tp * p.cp * p.dp, gpn);
    tied_embedding_sync = comm.all_reduce(embedding_per_gpu * grad_bytes, ends_g);
  }
  for (int s = 0; s < p.pp; ++s) {
    const double params = stage_params_per_gpu(job, s, stage_layers[s]);
    double dp_time = 0, hidden = 0;  // hidden: the part of dp_time that runs behind compute
    if (dp_shard > 1) {
      if (fw == Framework::fsdp || p.zero_stage >= 3) {
        // Parameters gathered for forward and again for backward, gradients reduce-scattered, for
        // every micro-batch; prefetching overlaps them with the compute of each micro-batch.
        // DeepSpeed ZeRO-3 moves parameters in buckets of stage3_prefetch_bucket_size (default
        // 5e7 elements); FSDP gathers one wrapped decoder layer at a time. Each collective pays
        // the ring latency of the whole data-parallel group.
        const double pieces = fw == Framework::fsdp ? stage_layers[s] + 1.0 : std::ceil(params / kZero3BucketElements);
        const double per_mb = pieces * (2 * comm.all_gather(params * weight_bytes / pieces, dp_g) +
                                        comm.reduce_scatter(params * grad_bytes / pieces, dp_g));
        dp_time = per_mb * static_cast<double>(micro_batches);
        // FSDP prefetches the next block's parameters while computing the current one. DeepSpeed
        // ZeRO-3 fetches sub-module parameters on demand, so its gathers sit on the critical path
        // (the bottleneck ZeRO++, Wang et al. 2023 §2, sets out to remove).
        if (fw == Framework::fsdp) hidden = std::min(dp_time, (sc[s].fwd + sc[s].bwd) * static_cast<double>(micro_batches));
      } else if (p.distributed_optimizer || p.zero_stage >= 1) {
        const double reduce_scatter = comm.reduce_scatter(params * grad_bytes, dp_g);
        const double all_gather = comm.all_gather(params * weight_bytes, dp_g);
        dp_time = reduce_scatter + all_gather;
        // Each collective hides only behind its own window: the gradient reduce-scatter behind the
        // last micro-batch's backward (--overlap-grad-reduce), the parameter all-gather behind the
        // next iteration's first forward (--overlap-param-gather). DeepSpeed ZeRO-1/2 gathers the
        // updated parameters inside its optimizer step (all_gather_dp_groups), never overlapped.
        const bool gather_overlaps = job.runtime.overlap_param_gather && fw != Framework::deepspeed;
        hidden = std::min(reduce_scatter, job.runtime.overlap_grad_reduce ? sc[s].bwd : 0.0) +
                 std::min(all_gather, gather_overlaps ? sc[s].fwd : 0.0);
      } else {
        dp_time = comm.all_reduce(params * grad_bytes, dp_g);
        hidden = std::min(dp_time, job.runtime.overlap_grad_reduce ? sc[s].bwd : 0.0);
      }
    }
    // Overlapped communication is not free: it slows the compute it hides behind.
    dp_exposed[s] = dp_time - hidden + cal.kernel.overlap_interference * hidden;
    // Tied input/output embeddings split over a pipeline: the first and last stages each hold a
    // copy, and after backward they all-reduce its gradient between them, after the DP sync and
    // outside any overlap (Megatron finalize_model_grads `_allreduce_word_embedding_grads`,
    // DeepSpeed's pipeline `_exec_reduce_tied_grads`). Counted with the gradient synchronization.
    if (s == 0 || s == p.pp - 1) dp_exposed[s] += tied_embedding_sync;
    const bool sharded = fw == Framework::fsdp || p.distributed_optimizer || p.zero_stage >= 1;
    const double updated = sharded ? params / dp_shard : params;
    opt_time[s] = updated * kAdamBytesPerParam / (cl.gpu.hbm_GBps * 1e9 * cal.kernel.memory_efficiency);
    stage_finish[s] = pr.end_s[s] + dp_exposed[s] + opt_time[s] + job.runtime.step_overhead_s;
  }
  const int crit = static_cast<int>(std::max_element(stage_finish.begin(), stage_finish.end()) - stage_finish.begin());
  pred.iteration_time_s = stage_finish[crit];

  // ---- memory -----------------------------------------------------------------------------------
  pred.feasible = true;
  int worst_mem = 0;
  for (int s = 0; s < p.pp; ++s) {
    StagePrediction st;
    st.stage = s;
    st.layers = stage_layers[s];
    st.forward_s = sc[s].fwd;
    st.backward_s = sc[s].bwd;
    st.recompute_s = sc[s].recompute;
    st.busy_s = pr.busy_s[s];
    st.in_flight_micro_batches = pr.peak_in_flight[s];
    st.memory = stage_memory(job, s, stage_layers[s], pr.peak_in_flight[s]);
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
  const double layer_model = layer_model_flops_fwd(m, seq, seq);
  const double logits_model = 2.0 * seq * static_cast<double>(m.hidden_size) * static_cast<double>(m.vocab_size);
  const double model_flops = 3.0 * gbs * (m.num_layers * layer_model + logits_model);
  const double peak = cl.gpu.peak_flops(job.training.precision);
  pred.mfu = model_flops / (pred.iteration_time_s * world * peak);
  double rec_flops = 0;
  for (int s = 0; s < p.pp; ++s) {
    const int layers = stage_layers[s];
    const int nfull = full_layers(layers);
    rec_flops += (p.recompute.granularity == RecomputeGranularity::full ? nfull : layers) * lc.recompute_flops;
  }
  // lc.recompute_flops is per GPU for one micro-batch of one TP/CP shard: scale to the whole job.
  const double hw_extra = rec_flops * static_cast<double>(micro_batches) * p.dp * p.tp * p.cp;
  pred.hfu = (model_flops + hw_extra) / (pred.iteration_time_s * world * peak);

  // ---- breakdown of the critical stage ------------------------------------------------------------
  const double mbs = static_cast<double>(micro_batches);
  TimeBreakdown& bd = pred.breakdown;
  bd.compute_s = sc[crit].compute * mbs;
  bd.recompute_s = sc[crit].recompute * mbs;
  bd.tp_comm_s = sc[crit].tp * mbs;
  bd.cp_comm_s = (sc[crit].cp + sc[crit].ep) * mbs;
  const double idle = std::max(0.0, pr.end_s[crit] - pr.busy_s[crit]);
  bd.pp_comm_s = std::min(idle, pp_exposed) + sc[crit].pp_blocking * mbs;
  bd.bubble_s = idle - std::min(idle, pp_exposed);
  // Part of the critical stage's idle time is waiting for a slower stage (imbalance), the rest is
  // the schedule's own fill/drain bubble.
  const double max_busy = *std::max_element(pr.busy_s.begin(), pr.busy_s.end());
  const double imbalance = std::min(bd.bubble_s, max_busy - pr.busy_s[crit]);
  bd.dp_comm_s = dp_exposed[crit];
  bd.optimizer_s = opt_time[crit];
  bd.step_overhead_s = job.runtime.step_overhead_s;

  // ---- feasibility and bottleneck -------------------------------------------------------------
  const StagePrediction& wm = pred.stages[worst_mem];
  if (wm.memory.total_GiB > pred.memory_capacity_GiB) {
    pred.feasible = false;
    pred.reason = fmt::format("stage {} needs {:.1f} GiB > {:.1f} GiB available on {} ({})", worst_mem, wm.memory.total_GiB,
                              pred.memory_capacity_GiB, cl.gpu.name, plan_text(p));
    pred.bottleneck = {"memory", worst_mem, pred.reason};
    return pred;
  }
  const double T = pred.iteration_time_s;
  const int slowest = static_cast<int>(std::max_element(pr.busy_s.begin(), pr.busy_s.end()) - pr.busy_s.begin());
  struct Cand { const char* kind; double t; };
  Cand cands[] = {{"bubble", bd.bubble_s - imbalance}, {"tp_comm", bd.tp_comm_s}, {"cp_comm", bd.cp_comm_s},
                  {"pp_comm", bd.pp_comm_s}, {"dp_comm", bd.dp_comm_s}, {"recompute", bd.recompute_s},
                  {"optimizer", bd.optimizer_s}, {"stage_time", imbalance}};
  const Cand* top = std::max_element(std::begin(cands), std::end(cands), [](const Cand& a, const Cand& b) { return a.t < b.t; });
  if (top->t < 0.03 * T) {
    pred.bottleneck = {"compute", slowest, fmt::format("compute-bound: overheads are under 3% of the iteration")};
  } else {
    pred.bottleneck = {top->kind, std::string_view(top->kind) == "stage_time" ? slowest : crit,
                       fmt::format("{} costs {:.3f} s of the {:.3f} s iteration ({:.1f}%)", top->kind, top->t, T, 100 * top->t / T)};
  }
  if (job.training.seq_length > m.max_seq_length)
    pred.notes.push_back(fmt::format("sequence length {} exceeds the model's max_seq_length {}", job.training.seq_length, m.max_seq_length));
  if (wm.memory.total_GiB > kTightMemoryFraction * pred.memory_capacity_GiB)
    pred.notes.push_back(fmt::format("stage {} needs {:.1f} GiB, within {:.0f}% of the {:.1f} GiB available: about the memory "
                                     "model's error on published runs, so it may not fit (keep headroom: --memory-reserve)",
                                     worst_mem, wm.memory.total_GiB, 100 * (1 - kTightMemoryFraction), pred.memory_capacity_GiB));
  if (cal.source.starts_with("defaults")) pred.notes.push_back(
        "kernel and network efficiencies are uncalibrated defaults (a stack tuned like Megatron-LM's; fit them to yours with "
        "`strata calibrate --steps` or `--profile`)");
  else pred.notes.push_back("kernel and network efficiencies calibrated: " + cal.source);
  if (job.runtime.step_overhead_s == RuntimeOptions::kDefaultStepOverheadS)
    pred.notes.push_back(fmt::format("host-side step overhead is a {:g} s default guess (--step-overhead)", job.runtime.step_overhead_s));
  return pred;
}

Prediction AnalyticalCostModel::predict(const Job& job) const { return strata::predict(job); }

}  // namespace strata
