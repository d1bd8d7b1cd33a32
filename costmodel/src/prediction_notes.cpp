#include "prediction_notes.h"

#include <fmt/compile.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "costmodel/predictor.h"

namespace strata {

void add_prediction_notes(const Job& job, const LayerShape& shape, const MoeHostTime& moe_host, const DenseHostTime& dense_host,
                          int worst_memory_stage, Prediction& pred) {
  const ModelSpec& m = job.model;
  const ParallelPlan& p = job.plan;
  const ClusterSpec& cl = job.cluster;
  const Calibration& cal = job.calibration;
  const TimeBreakdown& bd = pred.breakdown;
  const int worst_mem = worst_memory_stage;
  const StagePrediction& wm = pred.stages[static_cast<std::size_t>(worst_mem)];
  const bool moe_host_bound = moe_host.any();
  pred.notes.reserve(13);  // room for every note below: no regrowth per prediction
  if (m.language_model_of_multimodal)
    pred.notes.push_back("the model is the language model of a multimodal config (text_config): its vision or audio encoder and "
                         "projector are not costed, nor the image tokens they add to a sequence");
  if (job.training.seq_length > m.max_seq_length)
    pred.notes.push_back(fmt::format(FMT_COMPILE("sequence length {} exceeds the model's max_seq_length {}"), job.training.seq_length, m.max_seq_length));
  if (wm.memory.total_GiB > kTightMemoryFraction * pred.memory_capacity_GiB)
    pred.notes.push_back(fmt::format(FMT_COMPILE("stage {} needs {:.1f} GiB, within {:.0f}% of the {:.1f} GiB available: about the memory "
                                     "model's error on published runs, so it may not fit (keep headroom: --memory-reserve)"),
                                     worst_mem, wm.memory.total_GiB, 100 * (1 - kTightMemoryFraction), pred.memory_capacity_GiB));
  if (cal.source.starts_with("defaults")) pred.notes.push_back(
        "kernel and network efficiencies are uncalibrated defaults (a stack tuned like Megatron-LM's; fit them to yours with "
        "`strata calibrate --steps` or `--profile`)");
  else pred.notes.push_back("kernel and network efficiencies calibrated: " + cal.source);
  if (shape.cudnn_attention && job.runtime.attention_kernel == AttentionKernel::automatic && cl.gpu.architecture == "hopper")
    pred.notes.push_back("attention timed as cuDNN's fused kernel, which Transformer Engine runs on Hopper since 1.2 (1.5-1.8x "
                         "FlashAttention-2's rate); --attention-kernel flash for a stack that runs flash-attn");
  if (m.dsa)
    pred.notes.push_back(fmt::format(
        FMT_COMPILE("DeepSeek Sparse Attention: the indexer and the attention over the top-{} keys are timed as fused attention "
                    "kernels from their FLOPs, not measured (no DSA kernel in configs/measurements); the indexer's loss {}"),
        m.dsa->index_topk,
        m.dsa->indexer_loss_coeff > 0
            ? fmt::format("(coefficient {:g}, {}) is costed; a model's default of 0.001 sparse is Megatron-Bridge's GLM-5 setting",
                          m.dsa->indexer_loss_coeff, m.dsa->sparse_indexer_loss ? "over the top-k keys" : "over every key")
            : std::string("is off (the indexer is frozen)")));
  if (shape.fp8_attention)
    pred.notes.push_back("fp8 attention: the kernel's products at the fp8 tensor-core rate, its softmax exponentials at the "
                         "special-function rate, Q, K, V (backward also O and dO) quantized first; a model from the datasheet "
                         "rates, not measured (no fp8 attention measurement in configs/measurements)");
  if (m.moe && job.runtime.moe_load_imbalance == RuntimeOptions::kDefaultMoeLoadImbalance &&
      effective_moe_imbalance(job.runtime) > 1.0)
    pred.notes.push_back(fmt::format(FMT_COMPILE("MoE: the busiest expert-parallel rank is assumed to get {:g}x the mean routed tokens, a default "
                                     "guess for auxiliary-loss balanced routing (--moe-load-imbalance; 1 for force-balanced routing)"),
                                     job.runtime.moe_load_imbalance));
  const char* host_binding = !(bd.host_s > 0)
                                 ? "the GPU runs each layer longer than the host takes to issue it, so the host time is hidden"
                             : moe_host.synchronises
                                 ? "the dropless dispatcher synchronises the host once per layer, so the GPU waits for it"
                                 : "the dispatcher does not synchronise (fixed sizes), so the host runs ahead and the GPU waits only "
                                   "where the host issues a layer slower than the GPU runs it";
  if (m.moe && m.num_moe_layers() > 0 && moe_host_bound && moe_host.activation_syncs > 0)
    pred.notes.push_back(fmt::format(
        FMT_COMPILE("MoE: the experts' fused quick-GeGLU synchronises the host {} per layer forward (Megatron-Core's "
                    "weighted_bias_quick_geglu_impl builds its offset with a blocking host-to-device copy): the dispatch and fc1 "
                    "before it run with no host work queued behind them"),
        moe_host.activation_syncs == 1 ? std::string("once more") : fmt::format("at each of its {} experts", moe_host.activation_syncs)));
  if (m.moe && m.num_moe_layers() > 0 && moe_host_bound)
    pred.notes.push_back(
        moe_host.measured_override
            ? fmt::format(FMT_COMPILE("MoE: the host issues each MoE block in {:.2f} ms forward (calibration host.moe_forward_s, "
                                      "--moe-forward-host-ms) and {:.2f} ms backward (in the measured line's proportion), and its layer's "
                                      "attention block in {:.2f} ms and {:.2f} ms; {}: {:.3f} s of the iteration"),
                          1e3 * moe_host.forward_s, 1e3 * moe_host.backward_s, 1e3 * moe_host.attention_forward_s,
                          1e3 * moe_host.attention_backward_s, host_binding, bd.host_s)
            : fmt::format(FMT_COMPILE("MoE: the host issues each MoE block in {:.2f} ms forward and {:.2f} ms backward ({}), as "
                                      "Megatron-Core's MoE layer with {} measured on an H100 machine's CPU, and its layer's attention block in "
                                      "{:.2f} ms and {:.2f} ms (measured without Transformer Engine); {}: {:.3f} s of the iteration. A property of the "
                                      "stack and the CPU: measure yours (--moe-forward-host-ms, README \"The host time of a MoE layer\")"),
                          1e3 * moe_host.forward_s, 1e3 * moe_host.backward_s,
                          moe_host.experts_counted > 0
                              ? fmt::format("router and dispatcher, and {} local experts one after another", moe_host.experts_counted)
                              : fmt::format("router and dispatcher{}: Transformer Engine's grouped GEMM adds per-expert host work "
                                            "that was not measured, so this is a lower bound",
                                            moe_host.biased_experts > 0
                                                ? fmt::format(", and the eager fc2 bias of {} local experts", moe_host.biased_experts)
                                                : std::string(" only")),
                          moe_host.allgather_line ? "the allgather dispatcher"
                          : job.runtime.moe_token_dedup
                              ? "the alltoall dispatcher (DeepEP/HybridEP fuse its permutation and all-to-all into fewer calls; "
                                "not measured, so the dispatcher's part is an upper bound)"
                              : "the alltoall dispatcher",
                          1e3 * moe_host.attention_forward_s, 1e3 * moe_host.attention_backward_s, host_binding, bd.host_s));
  else if (moe_host_time_unmodelled(job))
    // (Padded to capacity, Megatron's dispatcher never waits on the host: nothing is left out.)
    pred.notes.push_back(fmt::format(
        FMT_COMPILE("MoE: the host time of the MoE layers is not modelled{}: read MoE throughput as an upper bound, or calibrate "
                    "with one measured step (strata calibrate --steps)"),
        job.runtime.framework != Framework::megatron ? " for this framework's dispatcher"
                                                     : " (the calibration's host line is zero; the dispatcher synchronises the "
                                                       "host once per layer for its token counts, so the host cannot run ahead of "
                                                       "small expert kernels)"));
  // A dense model whose layers the host issues slower than the GPU runs them (an MoE model's note
  // above covers its layers).
  if (!(m.moe && m.num_moe_layers() > 0) && dense_host.any() && bd.host_s > 0)
    pred.notes.push_back(fmt::format(
        FMT_COMPILE("host-bound layers: the host issues each decoder layer in {:.2f} ms forward and {:.2f} ms backward{}, longer "
                    "than the GPU runs it, so the GPU waits {:.3f} s of the iteration. Megatron-Core's attention block and MLP "
                    "measured on H200 and H100 machines' CPUs without Transformer Engine (HostCoefficients): a property of the stack and "
                    "the CPU; a larger micro-batch or less tensor parallelism gives the GPU more work per op, CUDA graphs "
                    "(--cuda-graphs, Megatron's --cuda-graph-impl) fewer ops to issue"),
        1e3 * dense_host.forward_s, 1e3 * dense_host.backward_s,
        (dense_host.graph_replays > 0 ? fmt::format(" ({} part(s) replayed as CUDA graphs)", dense_host.graph_replays) : std::string()) +
            (m.hybrid() ? " (a hybrid model's layer issues one part of that: its attention block, MLP or Mamba mixer)" : ""),
        bd.host_s));
  if (m.moe && m.num_moe_layers() > 0 && job.runtime.moe_rank_capacity_factor > 0)
    pred.notes.push_back(fmt::format(
        FMT_COMPILE("MoE: a static per-rank token budget ({:g} x the mean, moe_expert_rank_capacity_factor): the dispatcher never "
                    "waits on the host for its token counts{}; a rank receiving more drops the excess, and {}"),
        job.runtime.moe_rank_capacity_factor,
        (job.runtime.cuda_graph_modules & kCudaGraphFullIteration) ? ", and the whole step replays as one CUDA graph: no MoE host time"
                                                                   : "",
        job.runtime.moe_paged_stash_factor > 0
            ? fmt::format("the paged stash keeps what the experts store for backward in a pool of {:g} x the mean tokens",
                          job.runtime.moe_paged_stash_factor)
        : job.runtime.moe_paged_stash_factor < 0
            ? fmt::format("the paged stash keeps what the experts store for backward in a pool of {:g} x the largest count that "
                          "arrives", -job.runtime.moe_paged_stash_factor)
            : std::string("the experts store the budget's rows for backward however many arrived")));
  if (m.moe && m.num_moe_layers() > 0 && moe_host_bound && moe_host.graph_replays > 0) {
    const std::vector<std::string> names = cuda_graph_module_names(job.runtime.cuda_graph_modules);
    pred.notes.push_back(fmt::format(
        FMT_COMPILE("MoE: CUDA graphs capture {}: the host replays {} graph(s) each way in place of their eager ops, "
                    "{:.2f} ms per replay (a guess, not measured: calibration host.cuda_graph_replay_s){}"),
        names.empty() ? std::string("each whole layer") : fmt::format("{} of each layer", fmt::join(names, ", ")),
        moe_host.graph_replays, 1e3 * job.calibration.host.cuda_graph_replay_s,
        moe_host.synchronises ? "; the dispatcher's wait for its token counts cannot be captured, so the experts and the combine "
                                "after it stay eager"
                              : ""));
  }
  // Graph capture keeps each graph's inputs, outputs and private memory pool allocated between
  // replays (torch.cuda.graphs, Transformer Engine make_graphed_callables), which the memory model
  // does not count.
  if (job.runtime.cuda_graph_modules != 0)
    pred.notes.push_back("CUDA graphs: the memory their capture keeps (static inputs and outputs, the graphs' memory pools) is "
                         "not in the memory figure; leave headroom (--memory-reserve)");
  if (m.moe && m.num_moe_layers() > 0 && m.moe->num_experts > p.ep)
    pred.notes.push_back(job.runtime.moe_grouped_gemm
                             ? "MoE: the local experts are timed as Transformer Engine's grouped GEMM (--moe-grouped-gemm), four "
                               "expert GEMMs in flight"
                             : "MoE: the local experts are timed one after another (Megatron's SequentialMLP, what a launch "
                               "without --moe-grouped-gemm runs); --moe-grouped-gemm times grouped GEMMs");
  if (m.gdn && m.count_hybrid('G') > 0)
    pred.notes.push_back(fmt::format(
        FMT_COMPILE("hybrid: {} gated DeltaNet layers; their chunked delta rule (FLA's Triton kernels) is timed as batched GEMMs at "
                    "the GEMM model's rates and the state passing as a memory-bound pass, not measured kernels{}"),
        m.count_hybrid('G'), dense_host.any() ? "; a gated DeltaNet layer's host time is taken as an attention block's (a guess)" : ""));
  if (m.mamba && m.count_hybrid('M') > 0)
    pred.notes.push_back(fmt::format(
        FMT_COMPILE("hybrid: {} Mamba-2 layers; their SSD scan (mamba_ssm's Triton chunk kernels) is timed as batched GEMMs at the "
                    "GEMM model's rates and the conv and state passing as memory-bound passes, not measured kernels{}"),
        m.count_hybrid('M'),
        dense_host.any() ? "; a Mamba layer's host time is taken as an attention block's (a guess)" : ""));
  if (job.training.optimizer.cpu_offload_fraction > 0)
    pred.notes.push_back(fmt::format(
        FMT_COMPILE("optimizer: {:g}% of its state is kept and updated on the host (--optimizer-offload-fraction): the gradients "
                    "and weights of that share cross the {:g} GB/s host link every step (costed), the host's update itself is not"),
        100 * job.training.optimizer.cpu_offload_fraction, cl.gpu.pcie_GBps));
  else if (job.training.optimizer.kind == OptimizerKind::muon)
    pred.notes.push_back("optimizer: Muon is costed as one momentum buffer per parameter (Megatron keeps Adam's two moments for "
                         "the embeddings and other non-matrix parameters); its Newton-Schulz orthogonalisation is not costed");
  if (job.runtime.step_overhead_s == RuntimeOptions::kDefaultStepOverheadS) {
    // Formatted once: most predictions carry this note, and a search makes thousands.
    static const std::string default_overhead_note = fmt::format(
        FMT_COMPILE("host-side step overhead is a {:g} s default guess (--step-overhead)"), RuntimeOptions::kDefaultStepOverheadS);
    pred.notes.push_back(default_overhead_note);
  }
}

}  // namespace strata
