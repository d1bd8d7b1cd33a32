#include "costmodel/memory_model.h"

#include <algorithm>
#include <cmath>

namespace strata {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// CUDA context with lazily loaded kernel modules and cuBLAS workspaces. An estimate, not a
// measurement.
constexpr double kLazyContextGiB = 0.5;
// The same with every kernel module loaded at start-up (CUDA before 11.7, PyTorch before 1.13):
// 1573 MiB on an A100, measured by BigScience for their early-2022 stack as what
// `torch.ones(1).cuda()` leaves in nvidia-smi (bigscience train/tr11-176B-ml/chronicles-prequel.md).
// PyTorch's switch to lazy loading measured 667 MB -> 287 MB on a smaller build (PyTorch PR
// #86509). A lower bound for a training process (cuBLAS and NCCL load theirs on first use).
constexpr double kEagerContextGiB = 1573.0 / 1024;
// GPU buffers of one NCCL communicator: every ring connection of every channel gets a receive
// buffer per protocol, 4 MiB (Simple, NCCL_BUFFSIZE) + 4.7 MiB (LL128) + 0.5 MiB (LL), and NCCL
// runs 16-32 channels on NVSwitch/multi-NIC nodes: about 0.25 GiB. An estimate from NCCL's
// default buffer sizes, not a measurement.
constexpr double kNcclCommunicatorGiB = 0.25;
// DeepSpeed ZeRO-1/2 reduce and all-gather buckets (default 5e8 elements each, 2 bytes).
constexpr double kDeepSpeedBucketBytes = 2 * 5e8 * 2;
// PyTorch caching-allocator fragmentation, as a fraction of activation-like (short-lived) memory.
constexpr double kFragmentation = 0.10;

}  // namespace

const char* to_string(MemoryMeasure m) {
  switch (m) {
    case MemoryMeasure::device: return "device";
    case MemoryMeasure::reserved: return "reserved";
    case MemoryMeasure::allocated: return "allocated";
  }
  return "?";
}

double measured_as_GiB(const MemoryBreakdown& m, MemoryMeasure what) {
  switch (what) {
    case MemoryMeasure::device: return m.total_GiB;
    case MemoryMeasure::reserved: return m.total_GiB - m.outside_allocator_GiB;
    case MemoryMeasure::allocated: return m.total_GiB - m.outside_allocator_GiB - m.fragmentation_GiB;
  }
  return m.total_GiB;
}

double peak_measured_as_GiB(const Prediction& p, MemoryMeasure what) {
  if (what == MemoryMeasure::device || p.stages.empty()) return p.memory_per_gpu_GiB;
  double peak = 0;
  for (const StagePrediction& s : p.stages) peak = std::max(peak, measured_as_GiB(s.memory, what));
  return peak;
}

int nccl_communicators(const Job& job, int stage) {
  const ParallelPlan& p = job.plan;
  if (p.world_size() <= 1) return 0;
  // PyTorch creates a process group's NCCL communicator on its first collective, so only the
  // groups a step uses count, plus the world group of the start-up barrier.
  int n = 1;
  if (p.tp > 1) ++n;
  if (p.dp * p.cp > 1) ++n;  // gradient reduction (the DP group, or DP x CP with context parallelism)
  if (p.cp > 1) ++n;
  if (p.ep > 1) ++n;
  if (p.pp > 1) {
    const bool edge = stage == 0 || stage == p.pp - 1;
    // DeepSpeed's pipeline engine talks to each neighbour through its own two-rank group;
    // Megatron sends over the one pipeline group.
    n += job.runtime.framework == Framework::deepspeed && !edge ? 2 : 1;
    if (edge && job.model.tied_embeddings) ++n;  // embedding-gradient all-reduce, first <-> last
  }
  if (p.tp * p.pp > 1) ++n;  // model-parallel group: gradient-norm and overflow all-reduces
  return n;
}

bool fsdp_keeps_stage_gathered(const Job& job) { return job.runtime.framework == Framework::fsdp && job.plan.pp > 1; }

bool fsdp_float8_all_gather(const Job& job) {
  return job.runtime.framework == Framework::fsdp && job.training.precision == Precision::fp8 && job.runtime.fp8_param_gather;
}

double fsdp_gathered_bytes(const Job& job, int stage, int layers, double params) {
  const bool fp32_model = job.training.precision == Precision::fp32 || job.training.precision == Precision::tf32;
  const double weight_b = fp32_model ? 4 : 2;
  if (!fsdp_float8_all_gather(job)) return params * weight_b;
  const double linears = decoder_param_split(job, stage, layers).total();
  return (params - linears) * weight_b + linears;
}

bool te_fp8(const Job& job) {
  return job.training.precision == Precision::fp8 && job.runtime.framework != Framework::fsdp;
}

double quantized_input_bytes(LowPrecisionRecipe r) {
  switch (r) {
    case LowPrecisionRecipe::delayed:
    case LowPrecisionRecipe::tensorwise: return 1.0;
    case LowPrecisionRecipe::blockwise: return 1.0 + 4.0 / 128;  // fp32 scale per 1x128 block
    case LowPrecisionRecipe::mxfp8: return 1.0 + 1.0 / 32;      // E8M0 scale per 32 elements
    case LowPrecisionRecipe::nvfp4: return 0.5 + 1.0 / 16;      // E2M1 data, E4M3 scale per 16
  }
  return 1.0;
}

double quantized_weight_cache_bytes(LowPrecisionRecipe r) {
  // A GEMM reads each operand once along each of its two uses (forward: rows; backward dgrad:
  // columns), so Transformer Engine keeps the weight quantized both ways: Float8Tensor data plus
  // its cached transpose (Hopper's fp8 MMA is TN-only), or the rowwise and columnwise copies of
  // MXFP8Tensor / NVFP4Tensor / Float8BlockwiseQTensor (transformer_engine/pytorch/tensor/).
  return 2.0 * quantized_input_bytes(r);
}


namespace {

// A layer's `params` per GPU (its DSA indexer's `indexer` among them), split into the part sharded
// over TP (attention, norms, dense MLP, shared experts, router) and the routed experts, which sit on
// the EP x ETP grid (Megatron-Core MoE: each EP rank holds num_experts/ep experts, each split over
// etp ranks). The DSA indexer and a latent MoE's projections are whole on every TP rank.
ParamSplit params_per_gpu(const Job& job, double params, bool moe_layer, double indexer) {
  const ModelSpec& m = job.model;
  const ParallelPlan& p = job.plan;
  ParamSplit out;
  if (moe_layer && m.moe) {
    const double experts = m.moe->num_experts * m.expert_params(), latent = m.moe_latent_params();
    out.dense = (params - experts - indexer - latent) / p.tp + latent;
    out.expert = experts / (static_cast<double>(p.ep) * std::max(1, p.etp));
  } else {
    out.dense = (params - indexer) / p.tp;
  }
  out.dense += indexer;
  return out;
}

// The same for decoder layer `layer`.
ParamSplit layer_params_per_gpu(const Job& job, int layer) {
  return params_per_gpu(job, job.model.layer_params_at(layer), job.model.is_moe_layer(layer), job.model.indexer_params_at(layer));
}

// The stage's layer indices; `layers` differing from the plan's split (a caller asking about a
// hypothetical stage) takes that many layers from where the stage starts.
std::vector<int> layer_ids_of(const Job& job, int stage, int layers) {
  std::vector<int> ids = stage_layer_ids(job.plan, job.model, stage);
  if (static_cast<int>(ids.size()) == layers) return ids;
  const int first = ids.empty() ? 0 : ids.front();
  ids.assign(std::max(0, layers), 0);
  for (int i = 0; i < layers; ++i) ids[i] = (first + i) % std::max(1, job.model.num_layers);
  return ids;
}

// Calls visit(id, kind) for each decoder layer of the stage, in order. Uniform models need not
// place their layers: every layer is layer 0's kind.
template <class Visit>
void for_each_stage_layer(const Job& job, int stage, int layers, Visit visit) {
  if (uniform_layers(job)) {
    const LayerKind kind = layer_kind(job, 0);
    for (int i = 0; i < layers; ++i) visit(0, kind);
    return;
  }
  for (int id : layer_ids_of(job, stage, layers)) visit(id, layer_kind(job, id));
}

// A value that depends on a decoder layer only through its kind, computed once per kind (from the
// first layer of that kind) however many layers ask: stage sums keep adding it layer by layer.
template <class T>
class PerLayerKind {
 public:
  template <class Compute>
  const T& get(int id, LayerKind kind, Compute compute) {
    const int i = kind.index();
    if (!known_[i]) {
      value_[i] = compute(id, kind);
      known_[i] = true;
    }
    return value_[i];
  }

 private:
  T value_[LayerKind::kCount]{};
  bool known_[LayerKind::kCount]{};
};

}  // namespace

ParamSplit decoder_param_split(const Job& job, int stage, int layers) {
  if (uniform_layers(job)) {  // `layers` copies of layer 0
    const ParamSplit l = layer_params_per_gpu(job, 0);
    return {layers * l.dense, layers * l.expert};
  }
  PerLayerKind<ParamSplit> params;  // a layer's parameters depend on whether it is an MoE layer
  ParamSplit sum;
  for_each_stage_layer(job, stage, layers, [&](int id, LayerKind kind) {
    const ParamSplit& l = params.get(id, kind, [&](int i, LayerKind) { return layer_params_per_gpu(job, i); });
    sum.dense += l.dense;
    sum.expert += l.expert;
  });
  return sum;
}

ParamSplit mtp_param_split(const Job& job, int stage) {
  const ModelSpec& m = job.model;
  const ParallelPlan& p = job.plan;
  ParamSplit out;
  if (m.mtp_layers <= 0 || stage != p.pp - 1 || m.num_layers <= 0) return out;
  // Each MTP module's decoder layer is the last layer's kind; its 2h x h projection is column-
  // parallel over TP, and its three norms go with it, as layer_params_per_gpu counts a layer's norms.
  // A hybrid model's MTP module holds its pattern's layers instead.
  ParamSplit layer = layer_params_per_gpu(job, m.num_layers - 1);
  if (!m.hybrid_mtp_pattern.empty()) {
    layer = {};
    for (LayerKind kind : m.mtp_layer_kinds()) {
      const ParamSplit part = params_per_gpu(job, m.kind_params(kind, m.moe ? m.moe->num_experts : 0), kind.moe, 0);
      layer.dense += part.dense;
      layer.expert += part.expert;
    }
  }
  out.dense = m.mtp_weight_copies() * (layer.dense + m.mtp_head_params() / p.tp);
  out.expert = m.mtp_weight_copies() * layer.expert;
  return out;
}

double decoder_params_per_gpu(const Job& job, int layers) {
  // The mean layer of the model, `layers` times.
  const int n = std::max(1, job.model.num_layers);
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += layer_params_per_gpu(job, i).total();
  return layers * sum / n;
}

ParamSplit stage_param_split(const Job& job, int stage, int layers) {
  const ModelSpec& m = job.model;
  const ParallelPlan& p = job.plan;
  const double h = static_cast<double>(m.hidden_size);
  ParamSplit params = decoder_param_split(job, stage, layers);
  const double vocab = static_cast<double>(padded_vocab_size(job)) * h / p.tp;
  if (stage == 0) {
    params.dense += vocab;
    if (m.position_embedding == PositionEmbedding::learned) params.dense += static_cast<double>(job.training.seq_length) * h;
  }
  if (stage == p.pp - 1) {
    // Untied output layer, or the tied copy Megatron keeps on the last stage when pp > 1.
    if (!m.tied_embeddings || p.pp > 1) params.dense += vocab;
    params.dense += 2 * h;
    const ParamSplit mtp = mtp_param_split(job, stage);
    params.dense += mtp.dense;
    params.expert += mtp.expert;
  }
  return params;
}

double stage_params_per_gpu(const Job& job, int stage, int layers) { return stage_param_split(job, stage, layers).total(); }

double layer_activation_bytes(const Job& job, RecomputeGranularity g) {
  return layer_activation_bytes(job, g, job.model.layer_kind(0));
}

namespace {
// A linear-time mixer layer's stored tensors: its input (the residual, kept by the norm) and the
// in_proj input (Transformer Engine's LayerNormLinear: fp8 when the linears are), the out_proj
// input (fp8 likewise), and the mixer's own tensors, in bf16 unless said otherwise, per token
// and rank:
//  - Mamba-2 (the mixer's memory-efficient path): the in_proj output z x B C dt that
//    mamba_split_conv1d_scan_combined saves to recompute the conv and the scan from, the scan's
//    ungated output (out_x) it saves too, and the group norm's input; the norms' fp32 statistics
//    per token and group are left out (well under 1%);
//  - gated DeltaNet (FLA's kernels): in_proj's output, the conv's output, q and k repeated to the
//    value heads with the fp32 gates (chunk_gated_delta_rule saves q, k, v, g, beta), and the
//    kernel's output (the gated norm's input).
double mixer_layer_activation_bytes(const Job& job, LayerKind kind) {
  const ModelSpec& m = job.model;
  const ParallelPlan& p = job.plan;
  const double eb = activation_bytes(job.training.precision);
  const double tokens = static_cast<double>(job.training.seq_length) / p.cp * p.micro_batch_size;
  const double t = p.tp, sp = (p.sequence_parallel && p.tp > 1) ? t : 1.0;
  const double h = static_cast<double>(m.hidden_size);
  const bool fp8 = te_fp8(job) && !kind.bf16;
  const double gemm_in = fp8 ? quantized_input_bytes(job.training.recipe) : eb;
  double out_proj_in = 0, own = 0;
  if (kind.has_mamba() && m.mamba) {
    const MambaSpec& mb = *m.mamba;
    out_proj_in = static_cast<double>(mb.d_inner()) / t;
    own = eb * (static_cast<double>(mb.in_proj_width()) / t + 2 * out_proj_in);
  } else if (kind.has_gdn() && m.gdn) {
    const GdnSpec& g = *m.gdn;
    out_proj_in = static_cast<double>(g.v_dim()) / t;
    const double repeated_qk = 2.0 * g.num_value_heads * static_cast<double>(g.key_head_dim) / t;
    own = eb * (static_cast<double>(g.in_proj_width() + g.conv_channels()) / t + repeated_qk + out_proj_in) +
          8.0 * g.num_value_heads / t;
  }
  return tokens * ((eb + gemm_in) * h / sp + own + gemm_in * out_proj_in);
}
}  // namespace

namespace {
// The bytes a layer keeps for its backward (layer_activation_bytes) and, of them, those its offload
// modules move to the host.
struct LayerActivation {
  double stored = 0, offloaded = 0;
};

LayerActivation layer_activation(const Job& job, RecomputeGranularity g, LayerKind kind);
}  // namespace

double layer_activation_bytes(const Job& job, RecomputeGranularity g, LayerKind kind) {
  const LayerActivation a = layer_activation(job, g, kind);
  return std::max(0.0, a.stored - a.offloaded);
}

double layer_offloaded_bytes(const Job& job, RecomputeGranularity g, LayerKind kind) {
  if (job.plan.offload.modules == 0) return 0.0;
  return layer_activation(job, g, kind).offloaded;
}

namespace {
LayerActivation layer_activation(const Job& job, RecomputeGranularity g, LayerKind kind) {
  const ModelSpec& m = job.model;
  const ParallelPlan& p = job.plan;
  const double eb = activation_bytes(job.training.precision);
  const double s = static_cast<double>(job.training.seq_length) / p.cp;
  const double b = p.micro_batch_size;
  const double h = static_cast<double>(m.hidden_size);
  const double kv = static_cast<double>(m.kv_hidden());
  const double qh = static_cast<double>(m.q_hidden());
  const double t = p.tp;
  const double sp = (p.sequence_parallel && p.tp > 1) ? t : 1.0;  // divisor of the non-TP-sharded tensors
  const double sbh = s * b * h;
  // A fully recomputed layer keeps only its input; a mixer layer's modules offload nothing.
  if (g == RecomputeGranularity::full) return {eb * sbh / sp, 0.0};
  if ((kind.has_mamba() && m.mamba) || (kind.has_gdn() && m.gdn)) return {mixer_layer_activation_bytes(job, kind), 0.0};
  // Fine-grained activation offloading: a tensor an offloaded module saves goes to the host when it
  // has at least min_tensor_elements elements (FineGrainedActivationOffloadingInterface: smaller
  // ones stay). `elements` per tensor, the bytes are elements times its element size.
  const unsigned offload = kind.has_mamba() || kind.has_gdn() ? 0u : job.plan.offload.modules;
  const double min_elements = static_cast<double>(job.plan.offload.min_tensor_elements);
  double offloaded = 0;
  auto offload_tensor = [&](unsigned module, double bytes_per_element, double elements) {
    if ((offload & module) && elements >= min_elements) offloaded += bytes_per_element * elements;
  };

  const double mask = m.dropout ? 1.0 : 0.0;
  // Transformer Engine in fp8 saves the inputs of its linears for the weight gradient as fp8 (one
  // byte, transposed: Linear/LayerNormLinear save inputmat_t). The output projection's input is
  // also the attention output, which flash attention keeps in bf16 for its own backward, so there
  // the fp8 copy comes on top.
  const bool fp8 = te_fp8(job) && !kind.bf16;
  const double q = quantized_input_bytes(job.training.recipe);
  const double gemm_in = fp8 ? q : eb;
  // fp8 attention (RuntimeOptions::fp8_attention): the kernel keeps its Q, K, V and output for the
  // backward as fp8, 1 byte each (Transformer Engine FusedAttention's fp8 path saves the quantized
  // tensors), not in bf16.
  const bool fp8_dpa = fp8 && job.runtime.fp8_attention && job.runtime.flash_attention;
  const double attn_saved = fp8_dpa ? 1.0 : eb;
  const double proj_in = fp8 ? (job.runtime.flash_attention ? attn_saved + q : q) : eb;
  // Attention block (Korthikanti §4.1): norm input, QKV input, Q+K+V, output-projection input,
  // dropout mask.
  double attn = 0;
  if (m.mla) {
    // Multi-latent attention (Megatron-Core MLASelfAttention): the down projections run on every TP
    // rank (not split), so their outputs are whole: the q latent (norm input and up-projection
    // input), the kv latent + shared rope key, its norm input and up-projection input; then the
    // per-head Q, K (nope+rope) and V, and the output projection's input.
    const double H = m.num_attention_heads;
    const double ql = static_cast<double>(m.mla->q_lora_rank), kl = static_cast<double>(m.mla->kv_lora_rank);
    const double dqk = static_cast<double>(m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim);
    const double dv = static_cast<double>(m.mla->v_head_dim);
    attn = eb * sbh / sp + gemm_in * sbh / sp + (eb + gemm_in) * s * b * ql +
           eb * s * b * (kl + static_cast<double>(m.mla->qk_rope_head_dim)) + gemm_in * s * b * kl +
           (m.dsa ? 0.0 : attn_saved * s * b * H * (2 * dqk + dv) / t) + proj_in * s * b * H * dv / t + mask * sbh / sp;
    if (m.dsa) {
      // DSA's absorbed MLA (Megatron-Core AbsorbedMLASelfAttention): each head's nope query (the
      // W_UK absorption's input) and absorbed query (kv_lora + rope channels), the shared latent key
      // (which is also the value), and each head's latent output (kv_lora, the W_UV einsum's
      // input); the selected key indices (int32, index_topk per query) of the layers that run
      // the indexer, on every TP rank; with the indexer loss on, the indexer's q, k and weights.
      const double rope = static_cast<double>(m.mla->qk_rope_head_dim);
      const double topk = static_cast<double>(m.dsa->index_topk);
      const double iq = static_cast<double>(m.dsa->index_heads * m.dsa->index_head_dim);
      const double ik = static_cast<double>(m.dsa->index_head_dim + m.dsa->index_heads);
      attn += attn_saved * s * b * (H * (static_cast<double>(m.mla->qk_nope_head_dim) + kl + rope + kl) / t + kl + rope);
      attn += m.indexer_share() * s * b * (4.0 * topk + (m.dsa->indexer_loss_coeff > 0 ? eb * (iq + ik) : 0.0));
    }
    if (kind.has_attention()) {
      // MLA's input norm stands alone (attn_norm keeps its input); the down projections keep the
      // norm's output unless the norms are recomputed; the core keeps the per-head Q, K and V (DSA:
      // the absorbed query and the shared latent key) unless the up projections are recomputed.
      const unsigned rec = g == RecomputeGranularity::selective ? p.recompute.modules : 0u;
      const double rope = static_cast<double>(m.mla->qk_rope_head_dim);
      offload_tensor(kOffloadAttnNorm, eb, sbh / sp);
      if (!(rec & kRecomputeLayernorm)) offload_tensor(kOffloadQkvLinear, gemm_in, sbh / sp);
      if (m.dsa) {
        if (!(rec & kRecomputeMlaUpProj)) offload_tensor(kOffloadCoreAttn, attn_saved, s * b * H * (kl + rope) / t);
        offload_tensor(kOffloadCoreAttn, attn_saved, s * b * (kl + rope));
      } else if (!(rec & kRecomputeMlaUpProj)) {
        offload_tensor(kOffloadCoreAttn, attn_saved, s * b * H * dqk / t);
        offload_tensor(kOffloadCoreAttn, attn_saved, s * b * H * dqk / t);
        offload_tensor(kOffloadCoreAttn, attn_saved, s * b * H * dv / t);
      }
      offload_tensor(kOffloadAttnProj, proj_in, s * b * H * dv / t);
    }
  } else {
    // With fewer query groups than TP ranks a rank keeps one group's K and V.
    const double kv_rank = std::max(kv / t, static_cast<double>(m.head_dim()));
    attn = eb * sbh / sp + gemm_in * sbh / sp + attn_saved * s * b * (qh / t + 2 * kv_rank) + proj_in * s * b * qh / t + mask * sbh / sp;
    // An output gate keeps the gate and the ungated output for its backward.
    if (m.attention_output_gate) attn += 2.0 * eb * s * b * qh / t;
    if (kind.has_attention()) {
      // Transformer Engine's LayerNormLinear keeps the QKV projection's input and its normalized
      // copy (the norm itself is an IdentityOp, so attn_norm has nothing); the core keeps Q, K and
      // V; the output projection its input (the kernel's output, Megatron asking for core_attn
      // with it, so both references go).
      offload_tensor(kOffloadQkvLinear, eb, sbh / sp);
      offload_tensor(kOffloadQkvLinear, gemm_in, sbh / sp);
      offload_tensor(kOffloadCoreAttn, attn_saved, s * b * qh / t);
      offload_tensor(kOffloadCoreAttn, attn_saved, s * b * kv_rank);
      offload_tensor(kOffloadCoreAttn, attn_saved, s * b * kv_rank);
      offload_tensor(kOffloadAttnProj, proj_in, s * b * qh / t);
    }
  }
  // MLP block: norm input, fc1 input, activation input (2f for gated units), fc2 input, mask.
  const double gate = m.gated_mlp() ? 2 : 1;
  auto dense_mlp = [&](double f) { return eb * s * b * gate * f / t + gemm_in * s * b * f / t; };
  double mlp = eb * sbh / sp + mask * sbh / sp;
  // Parts the selective recompute modules below may leave out: the experts' activation outputs
  // (fc2 inputs) and the shared experts' stored tensors.
  double expert_act_out = 0, shared = 0;
  if (kind.moe) {
    // Router input (the norm output, kept for the router's weight gradient) and its fp32 scores;
    // the local experts' tokens: top_k copies of each token spread over EP x ETP like their FLOPs
    // (moe_tokens_per_gpu), stored as fc1 input, activation input and fc2 input; the shared
    // experts like a dense MLP. A combine that weights the expert outputs by the routing
    // probabilities keeps those outputs for the probabilities' gradient; Megatron-Core applies the
    // probabilities inside the expert activation instead ("memory efficient token permutation",
    // Megatron-LM 2659630721, April 2025: weighted_bias_swiglu saves its input and the
    // probabilities, the unpermute is a plain scatter-add), so there the outputs are not kept.
    const double fe = static_cast<double>(m.moe->expert_ffn_hidden_size) / std::max(1, p.etp);
    const double tok = moe_tokens_per_gpu(job, s * b);
    // A latent MoE's experts read and write the latent width; its up projection keeps its latent
    // input per local token (the down projection's input is the router's, kept already).
    const double w = static_cast<double>(m.expert_width());
    const double kept_expert_output = job.runtime.framework == Framework::megatron ? 0.0 : eb * w;
    // With expert_fc1 offloaded outside MXFP8 and NVFP4, TEGroupedMLP has fc1 save its original
    // 16-bit input instead of the quantized copies (moe/experts.py set_save_original_input: one
    // device-to-host copy), so that tensor weighs 16 bits.
    const bool fc1_original = fp8 && (offload & kOffloadExpertFc1) && job.training.recipe != LowPrecisionRecipe::mxfp8 &&
                              job.training.recipe != LowPrecisionRecipe::nvfp4;
    const double fc1_in = fc1_original ? eb : gemm_in;
    mlp += eb * sbh / sp + 4.0 * s * b * m.moe->num_experts / sp;
    if (m.moe->latent_size > 0) mlp += gemm_in * s * b * w / sp;
    expert_act_out = gemm_in * tok * fe;
    if (m.moe->shared_expert_ffn_hidden_size > 0) shared = dense_mlp(static_cast<double>(m.moe->shared_expert_ffn_hidden_size));
    mlp += fc1_in * tok * w + eb * tok * gate * fe + expert_act_out + 4.0 * tok + kept_expert_output * tok + shared;
    if (kind.has_mlp()) {
      // The pre-MLP norm stands alone before the router; the experts keep fc1's input, the
      // activation's input and fc2's input (the last not when moe_act is recomputed); the fused
      // grouped MLP all three. Megatron refuses offloading inside an MoE block recomputed whole.
      const unsigned rec = g == RecomputeGranularity::selective ? p.recompute.modules : 0u;
      offload_tensor(kOffloadMlpNorm, eb, sbh / sp);
      offload_tensor(kOffloadExpertFc1 | kOffloadFusedGroupMlp, fc1_in, tok * w);
      offload_tensor(kOffloadMoeAct | kOffloadFusedGroupMlp, eb, tok * gate * fe);
      if (!(rec & kRecomputeMoeAct)) offload_tensor(kOffloadFusedGroupMlp, gemm_in, tok * fe);
    }
  } else {
    mlp += gemm_in * sbh / sp + dense_mlp(static_cast<double>(m.ffn_hidden_size));
  }
  // Attention scores: softmax output (eb), dropout mask (1) and dropout output (eb) per score,
  // 5as^2b/t for fp16 with dropout; absent with flash attention or when the attention core is
  // recomputed.
  const unsigned modules = g == RecomputeGranularity::selective ? p.recompute.modules : 0u;
  const double S = static_cast<double>(job.training.seq_length);
  double scores = 0;
  if (!job.runtime.flash_attention && !(modules & kRecomputeCoreAttn))
    scores = (eb + (m.dropout ? 1 + eb : 0)) * m.num_attention_heads * s * S * b / t;
  else if (job.runtime.flash_attention)
    scores = 4.0 * m.num_attention_heads * s * b / t;  // fp32 log-sum-exp per query row
  // What the other selective modules do not keep (the ops selective_recompute_ops re-runs): the
  // outputs of the norms that stand alone (MLA's input norm feeding its down projections, an MoE
  // layer's pre-MLP norm feeding the router and the dispatch), MLA's per-head Q, K and V, the
  // experts' activation outputs (fc2 inputs), a dense MLP or a whole MoE block but its input, the
  // shared experts.
  double saved = 0;
  if (modules & kRecomputeLayernorm)  // the MoE norm's output is the MoE block's when that is recomputed whole
    saved += (m.mla ? gemm_in * sbh / sp : 0.0) + (kind.moe && !(modules & kRecomputeMoe) ? eb * sbh / sp : 0.0);
  if ((modules & kRecomputeMlaUpProj) && m.mla) {
    // The per-head tensors the up projections write: Q, K and V, or under DSA the absorbed query.
    const double per_head = m.dsa ? static_cast<double>(m.mla->kv_lora_rank + m.mla->qk_rope_head_dim)
                                  : 2.0 * static_cast<double>(m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim) +
                                        static_cast<double>(m.mla->v_head_dim);
    saved += attn_saved * s * b * m.num_attention_heads * per_head / t;
  }
  if (kind.moe) {
    if (modules & kRecomputeMoe) {
      saved += mlp - eb * sbh / sp - mask * sbh / sp;  // everything of the block but its input and the dropout mask
    } else {
      if (modules & kRecomputeMoeAct) saved += expert_act_out;
      if (modules & kRecomputeSharedExperts) saved += shared;
    }
  } else if ((modules & kRecomputeMlp) && kind.has_mlp()) {
    saved += gemm_in * sbh / sp + dense_mlp(static_cast<double>(m.ffn_hidden_size));
  }
  // A hybrid model's layer keeps what its one part keeps.
  if (!kind.has_attention()) attn = scores = 0;
  if (!kind.has_mlp()) mlp = 0;
  const double stored = std::max(0.0, attn + mlp + scores - saved);
  return {stored, std::min(stored, offloaded)};
}
}  // namespace

namespace {
// Token rows per mean row that Megatron-Core's paged stash pools at `factor` (its buffer-size
// factors: positive x the mean tokens, negative x the largest count that arrives, the busiest
// rank's).
double paged_stash_rows(const RuntimeOptions& rt, double factor) {
  return factor > 0 ? factor : -factor * effective_moe_imbalance(rt);
}
}  // namespace

double moe_tokens_per_gpu(const Job& job, double tokens) {
  const ModelSpec& m = job.model;
  const ParallelPlan& p = job.plan;
  if (!m.moe) return 0;
  // The expert work of a stage's tp*dp*cp ranks is spread evenly over them whatever the EP x ETP
  // split: a rank serves top_k * tokens * etp / tp token-expert pairs on 1/etp of each expert's FFN
  // (tokens = this rank's micro-batch tokens; with tp > 1, sequence parallelism splits them over
  // TP first). The busiest rank gets the load-imbalance factor more, capped by the capacity factor
  // when tokens are dropped.
  const double mean = tokens * m.moe->top_k * std::max(1, p.etp) / p.tp;
  // HybridEP's static per-rank budget (--moe-expert-rank-capacity-factor) gives every rank a
  // buffer of the budget's rows (token_dispatcher.py: num_permuted_tokens = tokens x top_k x
  // factor), and the grouped experts keep their inputs at that shape for backward whatever the rank
  // received: the budget, not the load, sizes what they store.
  // Paged stash keeps what arrived instead, in pages of a pool sized at its factor of the mean (or,
  // negative, of the largest actual count: the busiest rank's, capped by the budget).
  if (job.runtime.moe_rank_capacity_factor > 0 && job.runtime.moe_paged_stash_factor != 0)
    return mean * paged_stash_rows(job.runtime, job.runtime.moe_paged_stash_factor);
  if (job.runtime.moe_rank_capacity_factor > 0) return mean * std::max(1.0, job.runtime.moe_rank_capacity_factor);
  return mean * effective_moe_imbalance(job.runtime);
}

void LayerActivationBytes::compute(int gi, int ki, RecomputeGranularity g, LayerKind kind) {
  value_[gi][ki] = layer_activation_bytes(job_, g, kind);
  known_[gi][ki] = true;
}

CpuOffloadBytes cpu_offloaded_bytes(const Job& job) {
  CpuOffloadBytes out;
  const int n = std::min(job.plan.cpu_offload_layers, job.model.num_layers);
  if (n <= 0) return out;
  // Megatron runs it with pp 1 (check_plan): the model's first n layers, in order.
  int seen = 0;
  PerLayerKind<double> stored_of;
  for_each_stage_layer(job, 0, job.model.num_layers, [&](int id, LayerKind kind) {
    if (seen++ >= n) return;
    const double bytes = stored_of.get(id, kind, [&](int, LayerKind k) { return layer_activation_bytes(job, RecomputeGranularity::none, k); });
    out.total += bytes;
    out.largest_layer = std::max(out.largest_layer, bytes);
  });
  return out;
}

MemoryBreakdown stage_memory(const Job& job, int stage, int layers, int peak_in_flight_chunks) {
  LayerActivationBytes layer_bytes(job);
  return stage_memory(job, stage, layers, peak_in_flight_chunks, stage_param_split(job, stage, layers), layer_bytes);
}

MemoryBreakdown stage_memory(const Job& job, int stage, int layers, int peak_in_flight_chunks, const ParamSplit& split,
                             LayerActivationBytes& layer_bytes) {
  const ParallelPlan& p = job.plan;
  const Framework fw = job.runtime.framework;
  MemoryBreakdown mb;
  const double params = split.total();
  const bool fp32_model = job.training.precision == Precision::fp32 || job.training.precision == Precision::tf32;
  const double weight_b = fp32_model ? 4 : 2;
  // Megatron accumulates into fp32 main_grad buffers (2 bytes with --grad-reduce-in-bf16);
  // DeepSpeed keeps grads in the model dtype.
  const double grad_b = fp32_model ? 4 : fw == Framework::megatron && !job.runtime.grad_reduce_in_bf16 ? 4 : 2;
  // Mixed-precision Adam: fp32 master copy + two fp32 moments (12 B/param); other optimizers and
  // Transformer Engine's precision-aware FusedAdam keep less (optimizer_spec.h). Pure fp32 keeps no
  // master copy. DeepSpeed also materializes fp32 gradients for the master weights (+4: its
  // FP16_Optimizer and ZeRO-1/2's single_partition_of_fp32_groups grads), and ZeRO-1/2 keep the
  // partition's averaged fp16 gradients (+2, stage_1_and_2.py averaged_gradients). Without ZeRO,
  // fp16's FP16_Optimizer.step casts every gradient to fp32 and then flattens the casts into the
  // master gradient (runtime/fp16/fused_optimizer.py: _flatten_dense_tensors([p.grad.to(fp32)
  // ...])): both fp32 copies are alive at the peak (+8).
  const OptimizerSpec& optimizer = job.training.optimizer;
  double opt_b = master_weight_bytes(optimizer, job.training.precision, job.training.recipe) + moment_bytes(optimizer);
  // The offloaded share of the master weights and moments lives in host memory (HybridDeviceOptimizer).
  opt_b *= 1 - optimizer.cpu_offload_fraction;
  if (fw == Framework::deepspeed && !fp32_model) {
    const bool fp16_optimizer = p.zero_stage == 0 && job.training.precision == Precision::fp16;
    opt_b += p.zero_stage >= 1 ? 6 : fp16_optimizer ? 8 : 4;
  }
  // Optimizer state is sharded over the data-parallel group, which includes CP ranks in Megatron
  // (over 1/N of it with N distributed-optimizer instances).
  const double shard = p.sharded_copies() > 1 ? p.optimizer_shard_ranks() : static_cast<double>(p.dp) * p.cp;
  // Routed-expert states shard over the expert-data-parallel group instead (Megatron's distributed
  // optimizer keeps a separate buffer for expert parameters over that group).
  const double expert_shard = p.sharded_copies() > 1 ? p.expert_optimizer_shard_ranks() : std::max(1, p.expert_data_parallel());
  const double expert_frac = params > 0 ? split.expert / params : 0;
  const double shard_mix = (1 - expert_frac) / shard + expert_frac / expert_shard;  // mean 1/shard per parameter
  double w = params * weight_b, gr = params * grad_b, opt = params * opt_b;
  // The offloaded share of the optimizer state, sharded as the rest of it is.
  double host_opt = params * (master_weight_bytes(optimizer, job.training.precision, job.training.recipe) + moment_bytes(optimizer)) *
                    optimizer.cpu_offload_fraction;
  if (fw == Framework::fsdp) {
    // FULL_SHARD with mixed precision: sharded fp32 params, grads and Adam moments; the bf16
    // parameters of the layer being computed (and the next, prefetched) are gathered transiently
    // (the linears' in fp8 with torchao's float8 all-gather, fsdp_gathered_bytes).
    const double gathered = fsdp_gathered_bytes(job, stage, layers, params);
    const double per_layer_gathered = layers > 0 ? gathered / std::max(1, layers) : 0;
    w = params * 4 / shard + 2 * per_layer_gathered;
    gr = params * 4 / shard;
    // Under a pipeline schedule the whole stage stays gathered through the step and its gradients
    // accumulate unsharded (fsdp_keeps_stage_gathered): every layer's weights and an unsharded
    // gradient beside the shards.
    if (fsdp_keeps_stage_gathered(job)) {
      w = params * 4 / shard + gathered;
      gr = params * 4 / shard + params * kFsdpReduceBytes;
    }
    opt = params * moment_bytes(optimizer) / shard;
    host_opt = 0;
  } else {
    if (p.distributed_optimizer || p.zero_stage >= 1) opt *= shard_mix, host_opt *= shard_mix;
    if (p.outer_optimizer_sharding) opt /= p.sharded_copies(), host_opt /= p.sharded_copies();  // HSDP: split across the replicas too
    if (p.zero_stage >= 2) gr *= shard_mix;
    if (p.zero_stage >= 3) {
      w *= shard_mix;
      // Megatron-FSDP gathers a layer's parameters into a buffer and prefetches the next one's
      // (fsdp_double_buffer; runtime_schedule.md): two layers whole, transiently, as FSDP's.
      if (fw == Framework::megatron && layers > 0) w += 2 * params / std::max(1, layers) * weight_b;
    }
  }
  // Transformer Engine keeps a quantized copy of each decoder linear's weight, both ways, between
  // micro-batches (cast on the first micro-batch, is_first_microbatch): 2 bytes/param in fp8.
  // With fp8 parameters (--fp8-param-gather; TE Float8Tensor params) that copy is the parameter
  // itself and no bf16 weight exists beside it (Megatron-Core fp8_utils / TE
  // fp8_model_init): the linears cost the quantized copy in place of their 2 bf16 bytes.
  if (te_fp8(job)) {
    // Only the low-precision layers: the bf16 ones (--first-last-layers-bf16) keep no quantized copy.
    double low_precision = 0;
    PerLayerKind<double> per_layer;
    for_each_stage_layer(job, stage, layers, [&](int id, LayerKind kind) {
      if (!kind.bf16) low_precision += per_layer.get(id, kind, [&](int i, LayerKind) { return layer_params_per_gpu(job, i).total(); });
    });
    const double linears = low_precision + mtp_param_split(job, stage).total();
    double per_param = quantized_weight_cache_bytes(job.training.recipe);
    if (job.runtime.fp8_param_gather && job.training.recipe != LowPrecisionRecipe::nvfp4) per_param -= weight_b;
    if (p.zero_stage >= 3) per_param = std::max(0.0, per_param) / shard;
    w += linears * per_param;
  }
  mb.weights_GiB = w / kGiB;
  mb.gradients_GiB = gr / kGiB;
  mb.optimizer_GiB = opt / kGiB;

  // Activations: in-flight micro-batches times the stage's per-chunk layers, with full recompute
  // on `n_full` layers of the stage; plus the working set of one layer while it is recomputed
  // and back-propagated.
  const RecomputeGranularity g = p.recompute.granularity;
  int n_full = 0;
  if (g == RecomputeGranularity::full)
    n_full = p.recompute.num_layers < 0 ? layers : std::min(layers, p.recompute.num_layers);
  const double full_store = layer_bytes(RecomputeGranularity::full, job.model.layer_kind(0));
  // Mean stored bytes over the stage's layers (MoE and dense layers differ), and the largest
  // layer's working set while it is recomputed.
  const RecomputeGranularity kept = g == RecomputeGranularity::selective ? RecomputeGranularity::selective : RecomputeGranularity::none;
  double normal_store = 0, largest_layer = 0;
  if (uniform_layers(job)) {  // every layer is layer 0's kind
    const LayerKind kind = layer_kind(job, 0);
    if (layers > 0) {
      normal_store = layer_bytes(kept, kind);
      largest_layer = layer_bytes(RecomputeGranularity::none, kind);
    }
  } else {
    int n = 0;
    for_each_stage_layer(job, stage, layers, [&](int, LayerKind kind) {
      normal_store += layer_bytes(kept, kind);
      largest_layer = std::max(largest_layer, layer_bytes(RecomputeGranularity::none, kind));
      ++n;
    });
    if (n > 0) normal_store /= static_cast<double>(n);
  }
  const double per_chunk_layers = static_cast<double>(layers) / p.vpp;
  const double full_frac = layers > 0 ? static_cast<double>(n_full) / layers : 0;
  double per_mb = per_chunk_layers * (full_frac * full_store + (1 - full_frac) * normal_store);
  double act = peak_in_flight_chunks * per_mb;
  if (n_full > 0) act += largest_layer;
  // Offloaded tensors (layer_activation_bytes left them out) are back on the GPU for one layer at a
  // time: Megatron keeps the last offload group of each module of the step's last layer on the GPU
  // so that the first backward does not wait for its reload (the "offload margin" of
  // fine_grained_activation_offload.py), and reloads each layer's just before its backward.
  // Layer-level CPU offloading: the first layers' activations of every micro-batch in flight live
  // on the host, but for the layer being reloaded for its backward (Transformer Engine's offload
  // handler reloads a layer ahead of its backward).
  double host_act = 0;
  if (p.cpu_offload_layers > 0 && p.pp == 1) {
    const CpuOffloadBytes off = cpu_offloaded_bytes(job);
    act = std::max(0.0, act - peak_in_flight_chunks * off.total) + off.largest_layer;
    host_act += peak_in_flight_chunks * off.total;
  }
  if (p.offload.modules != 0 && n_full < layers) {
    // One pass over the stage's layers, each kind's offloaded bytes computed once: the largest
    // layer's stays on the GPU; every in-flight layer's is on the host.
    PerLayerKind<double> offloaded_of;
    double margin = 0, per_mb_offloaded = 0;
    for_each_stage_layer(job, stage, layers, [&](int id, LayerKind kind) {
      const double bytes = offloaded_of.get(id, kind, [&](int, LayerKind k) { return layer_offloaded_bytes(job, kept, k); });
      margin = std::max(margin, bytes);
      per_mb_offloaded += bytes;
    });
    act += margin;
    host_act += (1 - full_frac) * peak_in_flight_chunks * per_mb_offloaded / p.vpp;
  }
  // Paged stash: the routed experts' saved tensors scale with the token rows they hold
  // (moe_tokens_per_gpu); `unit` is an MoE layer's bytes per mean row, the difference of two pool
  // sizes. The layer whose experts run (forward before their tensors are stashed, backward after
  // they are reloaded) holds the budget's rows beside the pool; the pinned host pool holds the
  // in-flight layers' rows at its own factor.
  const RuntimeOptions& rt = job.runtime;
  if (rt.moe_paged_stash_factor != 0 && rt.moe_rank_capacity_factor > 0 && n_full < layers) {
    Job one = job, two = job;
    one.runtime.moe_paged_stash_factor = 1.0;
    two.runtime.moe_paged_stash_factor = 2.0;
    double unit_max = 0, unit_sum = 0;
    PerLayerKind<double> unit_of;
    for_each_stage_layer(job, stage, layers, [&](int id, LayerKind kind) {
      if (!kind.moe) return;
      const double unit = unit_of.get(id, kind, [&](int, LayerKind k) {
        return layer_activation_bytes(two, kept, k) - layer_activation_bytes(one, kept, k);
      });
      unit_max = std::max(unit_max, unit);
      unit_sum += unit;
    });
    act += std::max(0.0, std::max(1.0, rt.moe_rank_capacity_factor) - paged_stash_rows(rt, rt.moe_paged_stash_factor)) * unit_max;
    if (rt.moe_paged_stash_host_factor != 0)
      host_act += paged_stash_rows(rt, rt.moe_paged_stash_host_factor) * (1 - full_frac) * peak_in_flight_chunks * unit_sum / p.vpp;
  }
  const double eb = activation_bytes(job.training.precision);
  const double tokens = static_cast<double>(job.training.seq_length) / p.cp * p.micro_batch_size;
  // The embedding keeps nothing of its output for the backward (it needs only the token ids; the
  // first layer's norm keeps that output as its input, counted above) but the mask of its dropout:
  // one byte per element of the sequence-parallel shard (Korthikanti et al. 2022 §4.3, sbhp/t), and
  // none without dropout (ATen's dropout returns its input when p is 0). A norm after the embedding
  // (BLOOM) keeps its input too, outside any recomputed layer. Only the first model chunk embeds:
  // interleaved, at most every micro-batch has its embedding in flight, never more than the
  // stage's in-flight chunks.
  if (stage == 0) {
    const double embedding_bytes = (job.model.dropout ? 1.0 : 0.0) + (job.model.embedding_norm ? eb : 0.0);
    const std::int64_t embedding_in_flight =
        p.vpp > 1 ? std::min<std::int64_t>(peak_in_flight_chunks, job.num_micro_batches()) : peak_in_flight_chunks;
    act += static_cast<double>(embedding_in_flight) * embedding_bytes * tokens * static_cast<double>(job.model.hidden_size) /
           (p.sequence_parallel ? p.tp : 1);
  }
  // DeepSpeed's pipeline engine keeps each in-flight micro-batch's stage output in its pipe
  // buffers until that micro-batch's backward (PipelineEngine pipe_buffers["outputs"]): with
  // tp > 1 only this rank's 1/tp partition of it (is_pipe_partitioned clears the full tensor),
  // else the whole tensor. Megatron frees the sent output's storage (deallocate_output_tensor).
  if (fw == Framework::deepspeed && p.pp > 1 && stage != p.pp - 1)
    act += peak_in_flight_chunks * eb * tokens * static_cast<double>(job.model.hidden_size) / p.tp;
  const int mtp = stage == p.pp - 1 ? std::max(0, job.model.mtp_layers) : 0;
  if (mtp > 0) {
    // The MTP modules run on the last virtual stage, whose micro-batch goes from forward to
    // backward at once: one micro-batch of each module's decoder layer (the last layer's kind,
    // recomputed like the others under full recompute), plus its two normalized inputs and their
    // 2h concatenation kept for the projection's backward.
    // A hybrid model's module holds its MTP pattern's layers.
    double layer = 0;
    for (LayerKind kind : job.model.mtp_layer_kinds()) layer += g == RecomputeGranularity::full ? full_store : layer_bytes(kept, kind);
    const double head = 4.0 * eb * tokens * static_cast<double>(job.model.hidden_size) / (p.sequence_parallel ? p.tp : 1);
    act += mtp * (layer + head);
  }
  mb.activations_GiB = act / kGiB;
  if (stage == p.pp - 1) {
    // fp16/bf16 logits kept for backward plus the fp32 softmax of the vocab-parallel cross entropy,
    // once for the model's loss and once per MTP module's. Transformer Engine's single-pass kernel
    // (Megatron --cross-entropy-fusion-impl te: parallel_cross_entropy on the 16-bit logits) writes
    // the gradient over the logits in place and saves that tensor alone: no fp32 copy.
    const double per_logit = resolved_cross_entropy(job.runtime) == CrossEntropyKernel::single_pass ? eb : eb + 4.0;
    mb.logits_GiB = (1 + mtp) * per_logit * tokens * static_cast<double>(padded_vocab_size(job)) / p.tp / kGiB;
  }
  const double context = job.runtime.lazy_module_loading ? kLazyContextGiB : kEagerContextGiB;
  mb.outside_allocator_GiB = context + kNcclCommunicatorGiB * nccl_communicators(job, stage);
  double buffers = mb.outside_allocator_GiB * kGiB;
  if (fw == Framework::deepspeed && p.zero_stage >= 1) buffers += kDeepSpeedBucketBytes;  // torch tensors
  mb.buffers_GiB = buffers / kGiB;
  mb.fragmentation_GiB = kFragmentation * (mb.activations_GiB + mb.logits_GiB);
  mb.host_GiB = (host_opt + host_act) / kGiB;
  mb.total_GiB = mb.weights_GiB + mb.gradients_GiB + mb.optimizer_GiB + mb.activations_GiB + mb.logits_GiB +
                 mb.buffers_GiB + mb.fragmentation_GiB;
  return mb;
}

}  // namespace strata
