#include "costmodel/job.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <iterator>
#include <numeric>
#include <utility>

#include <fmt/format.h>

#include "costmodel/pipeline_sim.h"

namespace strata {

const char* to_string(RecomputeGranularity g) {
  switch (g) {
    case RecomputeGranularity::none: return "none";
    case RecomputeGranularity::selective: return "selective";
    case RecomputeGranularity::full: return "full";
  }
  return "?";
}

namespace {

constexpr std::pair<const char*, unsigned> kRecomputeModuleNames[] = {
    {"core_attn", kRecomputeCoreAttn}, {"moe_act", kRecomputeMoeAct},         {"layernorm", kRecomputeLayernorm},
    {"mla_up_proj", kRecomputeMlaUpProj}, {"mlp", kRecomputeMlp},             {"moe", kRecomputeMoe},
    {"shared_experts", kRecomputeSharedExperts}};

constexpr std::pair<const char*, unsigned> kOffloadModuleNames[] = {
    {"attn_norm", kOffloadAttnNorm},     {"qkv_linear", kOffloadQkvLinear}, {"core_attn", kOffloadCoreAttn},
    {"attn_proj", kOffloadAttnProj},     {"mlp_norm", kOffloadMlpNorm},     {"expert_fc1", kOffloadExpertFc1},
    {"moe_act", kOffloadMoeAct},         {"fused_group_mlp", kOffloadFusedGroupMlp}};

// Names separated by spaces, commas or tabs, each one of `table`'s, as bits; nullopt for an unknown
// name or none.
template <std::size_t N>
std::optional<unsigned> module_bits(const std::string& names, const std::pair<const char*, unsigned> (&table)[N]) {
  unsigned bits = 0;
  std::string word;
  auto take = [&]() {
    if (word.empty()) return true;
    const auto it = std::find_if(std::begin(table), std::end(table), [&](const auto& e) { return word == e.first; });
    if (it == std::end(table)) return false;
    bits |= it->second;
    word.clear();
    return true;
  };
  for (char c : names) {
    if (c == ' ' || c == ',' || c == '\t') {
      if (!take()) return std::nullopt;
    } else {
      word += c;
    }
  }
  if (!take() || bits == 0) return std::nullopt;
  return bits;
}

template <std::size_t N>
std::vector<std::string> module_names(unsigned modules, const std::pair<const char*, unsigned> (&table)[N]) {
  std::vector<std::string> out;
  for (const auto& [name, bit] : table)
    if (modules & bit) out.emplace_back(name);
  return out;
}

}  // namespace

std::optional<unsigned> recompute_modules_from_string(const std::string& names) { return module_bits(names, kRecomputeModuleNames); }

std::optional<unsigned> offload_modules_from_string(const std::string& names) { return module_bits(names, kOffloadModuleNames); }
std::vector<std::string> offload_module_names(unsigned modules) { return module_names(modules, kOffloadModuleNames); }

namespace {

// Megatron's CudaGraphModule names; "full" (the whole layer) is read, not written.
constexpr std::pair<const char*, unsigned> kCudaGraphModuleNames[] = {
    {"attn", kCudaGraphAttn},
    {"mlp", kCudaGraphMlp},
    {"moe", kCudaGraphMoe},
    {"moe_router", kCudaGraphMoeRouter},
    {"moe_preprocess", kCudaGraphMoePreprocess},
    {"mamba", kCudaGraphMamba},
    {"full", kCudaGraphWholeLayer},
    {"full_iteration", kCudaGraphWholeLayer | kCudaGraphFullIteration}};

}  // namespace

std::optional<unsigned> cuda_graph_modules_from_string(const std::string& names) {
  unsigned bits = 0;
  std::string word;
  for (std::size_t i = 0; i <= names.size(); ++i) {
    const char c = i < names.size() ? names[i] : ' ';
    if (c != ' ' && c != ',' && c != '\t') {
      word += c;
      continue;
    }
    if (word.empty()) continue;
    const auto it = std::find_if(std::begin(kCudaGraphModuleNames), std::end(kCudaGraphModuleNames),
                                 [&](const auto& e) { return word == e.first; });
    if (it == std::end(kCudaGraphModuleNames)) return std::nullopt;
    bits |= it->second;
    word.clear();
  }
  return bits == 0 ? kCudaGraphWholeLayer : bits;
}

std::vector<std::string> cuda_graph_module_names(unsigned modules) {
  if (modules & kCudaGraphFullIteration) return {"full_iteration"};
  if (modules == kCudaGraphWholeLayer) return {};
  std::vector<std::string> out;
  for (const auto& [name, bit] : kCudaGraphModuleNames)
    if (std::has_single_bit(bit) && (modules & bit)) out.emplace_back(name);  // not "full" nor "full_iteration"
  return out;
}

std::vector<std::string> recompute_module_names(unsigned modules) { return module_names(modules, kRecomputeModuleNames); }

const char* to_string(Framework f) {
  switch (f) {
    case Framework::megatron: return "megatron";
    case Framework::deepspeed: return "deepspeed";
    case Framework::fsdp: return "fsdp";
  }
  return "?";
}

const char* to_string(CpCommType t) {
  switch (t) {
    case CpCommType::p2p: return "p2p";
    case CpCommType::a2a: return "a2a";
    case CpCommType::allgather: return "allgather";
    case CpCommType::a2a_p2p: return "a2a+p2p";
  }
  return "?";
}

std::optional<CpCommType> cp_comm_type_from_string(const std::string& s) {
  if (s == "p2p") return CpCommType::p2p;
  if (s == "a2a") return CpCommType::a2a;
  if (s == "allgather") return CpCommType::allgather;
  if (s == "a2a+p2p") return CpCommType::a2a_p2p;
  return std::nullopt;
}

const char* to_string(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::automatic: return "auto";
    case AttentionKernel::flash2: return "flash";
    case AttentionKernel::cudnn: return "cudnn";
  }
  return "?";
}

std::optional<AttentionKernel> attention_kernel_from_string(const std::string& s) {
  if (s == "auto") return AttentionKernel::automatic;
  if (s == "flash") return AttentionKernel::flash2;
  if (s == "cudnn") return AttentionKernel::cudnn;
  return std::nullopt;
}

AttentionKernel resolved_attention_kernel(const RuntimeOptions& rt, const GpuSpec& gpu) {
  if (rt.attention_kernel != AttentionKernel::automatic) return rt.attention_kernel;
  const bool hopper_or_later = gpu.architecture == "hopper" || gpu.architecture == "blackwell";
  return rt.framework == Framework::megatron && hopper_or_later ? AttentionKernel::cudnn : AttentionKernel::flash2;
}

const char* to_string(CrossEntropyKernel k) {
  switch (k) {
    case CrossEntropyKernel::automatic: return "auto";
    case CrossEntropyKernel::eager: return "eager";
    case CrossEntropyKernel::jit_fused: return "jit-fused";
    case CrossEntropyKernel::single_pass: return "single-pass";
  }
  return "?";
}

std::optional<CrossEntropyKernel> cross_entropy_kernel_from_string(const std::string& s) {
  for (auto k : {CrossEntropyKernel::automatic, CrossEntropyKernel::eager, CrossEntropyKernel::jit_fused, CrossEntropyKernel::single_pass})
    if (s == to_string(k)) return k;
  return std::nullopt;
}

CrossEntropyKernel resolved_cross_entropy(const RuntimeOptions& rt) {
  if (rt.cross_entropy != CrossEntropyKernel::automatic) return rt.cross_entropy;
  return rt.framework == Framework::megatron ? CrossEntropyKernel::jit_fused : CrossEntropyKernel::eager;
}

std::int64_t padded_vocab_size(const Job& job) {
  const std::int64_t v = job.model.vocab_size;
  if (job.runtime.framework == Framework::fsdp || v <= 0) return v;
  const std::int64_t multiple = static_cast<std::int64_t>(std::max(1, job.runtime.vocab_divisor)) * std::max(1, job.plan.tp);
  return (v + multiple - 1) / multiple * multiple;
}

std::string microbatch_group_problem(std::int64_t group, int pp, std::int64_t micro_batches) {
  if (microbatch_group_accepted(group, pp, micro_batches)) return {};
  if (group < pp || group > micro_batches)
    return fmt::format("a micro-batch group of {} per virtual pipeline stage must lie in [pp={}, micro-batches={}]", group, pp,
                       micro_batches);
  return fmt::format("the {} micro-batches leave a last group of {} (groups of {}), fewer than pp={}; Megatron-Core refuses it "
                     "(it would stall the pipeline)",
                     micro_batches, micro_batches % group, group, pp);
}

std::int64_t interleaved_microbatch_group(const ParallelPlan& plan, std::int64_t micro_batches) {
  if (plan.vpp <= 1) return micro_batches;
  if (plan.microbatch_group > 0) return plan.microbatch_group;
  // The loop ends by group = micro_batches (always legal) and, in practice, within pp steps.
  for (std::int64_t g = std::max(1, plan.pp); g <= micro_batches; ++g)
    if (microbatch_group_accepted(g, plan.pp, micro_batches)) return g;
  return 0;
}

std::vector<int> resolve_stage_layers(const ParallelPlan& plan, int num_layers) {
  if (!plan.stage_layers.empty()) return plan.stage_layers;
  std::vector<int> out(plan.pp > 0 ? plan.pp : 1, 0);
  const int n = static_cast<int>(out.size());
  for (int i = 0; i < n; ++i) out[i] = num_layers / n + (i < num_layers % n ? 1 : 0);
  return out;
}

std::vector<int> accounted_stage_layers(int num_layers, int pp, int vpp) {
  const int v = std::max(1, vpp);
  if (pp <= 1 || num_layers <= 0 || static_cast<std::int64_t>(pp) * v > num_layers + 2) return {};
  const int chunks = pp * v;
  if (num_layers % chunks == 0) return {};
  for (int extra : {2, 1}) {
    if ((num_layers + extra) % chunks != 0) continue;
    // One slot per chunk leaves the embedding's and the loss's chunks without a decoder layer
    // (Llama 3.1 405B's 126 layers at pp 16 x vpp 8: "E|t|t|...|t|L"); chunk_layers empties exactly those.
    const int per_chunk = (num_layers + extra) / chunks;
    std::vector<int> out(pp, per_chunk * v);
    out.back() -= 1;                  // the loss (and output layer) counted as a layer
    if (extra == 2) out.front() -= 1;  // the embedding too
    return out;
  }
  return {};
}

int max_virtual_stages(const ModelSpec& model, int pp) { return pp > 0 ? (model.num_layers + 2 + model.mtp_layers) / pp : 0; }

std::vector<int> standard_stage_layers(int num_layers, int pp, int vpp, int mtp_layers) {
  const int v = std::max(1, vpp);
  const int mtp = std::max(0, mtp_layers);
  if (pp <= 1 || num_layers <= 0 || static_cast<std::int64_t>(pp) * v > num_layers + 2 + mtp) return {};
  const int chunks = pp * v;
  if (num_layers % chunks == 0) return {};
  if (std::vector<int> accounted = accounted_stage_layers(num_layers, pp, vpp); !accounted.empty()) return accounted;
  // Neither count divides (DeepSeek-V3 and Kimi-K2: 61 layers over 16 or 32 virtual stages): the
  // balanced layout, every virtual stage holding at most T = ceil((layers + 2 + mtp) / chunks)
  // with the embedding, the loss and each MTP layer counted as one, the first and last virtual
  // stages lighter by what they carry. Megatron-Bridge's DeepSeek-V3 H100 recipe writes this
  // layout for pp 8 x vpp 4: "Et|(tt|)*30mL" (perf_recipes/deepseek/h100/deepseek_v3.py). The
  // layers T leaves over come off the middle virtual stages, the last ones first.
  const int units = num_layers + 2 + mtp;
  const int T = (units + chunks - 1) / chunks;
  if (T < 2) return {};
  std::vector<int> chunk(static_cast<std::size_t>(chunks), T);  // Megatron's order: chunk-major
  chunk.front() = T - 1;
  chunk.back() = std::max(0, T - 1 - mtp);
  int excess = std::accumulate(chunk.begin(), chunk.end(), 0) - num_layers;
  for (int i = chunks - 2; excess > 0 && i >= 1; --i, --excess) chunk[static_cast<std::size_t>(i)] -= 1;
  for (int i : {chunks - 1, 0}) {
    if (excess > 0 && chunk[static_cast<std::size_t>(i)] > 0) {
      chunk[static_cast<std::size_t>(i)] -= 1;
      --excess;
    }
  }
  if (excess != 0) return {};
  std::vector<int> out(static_cast<std::size_t>(pp), 0);
  for (int i = 0; i < chunks; ++i) out[static_cast<std::size_t>(i % pp)] += chunk[static_cast<std::size_t>(i)];
  // strata spreads a stage's layers over its chunks (chunk_layers); each chunk needs one, but the
  // embedding's and the loss's.
  for (int s = 0; s < pp; ++s)
    if (out[static_cast<std::size_t>(s)] < min_stage_layers(pp, v, s)) return {};
  return out;
}

int min_stage_layers(int pp, int vpp, int stage) {
  const int v = std::max(1, vpp);
  if (v == 1) return 1;
  return v - (stage == 0 ? 1 : 0) - (stage == pp - 1 ? 1 : 0);
}

namespace {
// All vpp chunks of a stage holding `stage_layers` layers (chunk_layers' rule, job.h).
std::vector<int> stage_chunk_layers(const ParallelPlan& plan, int stage, int stage_layers, int mtp_layers) {
  const int v = std::max(1, plan.vpp);
  if (v == 1) return {stage_layers};
  std::vector<int> n(static_cast<std::size_t>(v));
  if (plan.chunk_layout.size() == static_cast<std::size_t>(plan.pp) * static_cast<std::size_t>(v)) {
    for (int c = 0; c < v; ++c)
      n[static_cast<std::size_t>(c)] = plan.chunk_layout[static_cast<std::size_t>(c) * static_cast<std::size_t>(plan.pp) +
                                                         static_cast<std::size_t>(std::clamp(stage, 0, plan.pp - 1))];
    return n;
  }
  // What each chunk carries besides decoder layers, counted as layers the way Megatron's layouts
  // count them: the embedding (first stage, first chunk), the loss and the MTP layers (last stage,
  // last chunk).
  auto carried = [&](int c) {
    return (stage == 0 && c == 0 ? 1 : 0) + (stage == plan.pp - 1 && c == v - 1 ? 1 + std::max(0, mtp_layers) : 0);
  };
  auto heavy = [&](int c) { return carried(c) > 0; };
  auto layers = [&](int c) -> int& { return n[static_cast<std::size_t>(c)]; };
  // Whole layers as evenly as they go, remainder layers to the chunks that carry nothing first
  // (the Llama 3 layout), each group in chunk order.
  for (int c = 0; c < v; ++c) layers(c) = stage_layers / v;
  for (int c = 0, given = 0; given < stage_layers % v && c < 2 * v; ++c) {
    const int k = c % v;
    if (heavy(k) == (c >= v)) {
      ++layers(k);
      ++given;
    }
  }
  // A split Megatron runs from an explicit layout (stages holding different layer counts): layers
  // then move off a chunk whose load (layers + what it carries) exceeds another's by two or more.
  // Only the MTP chunk can; it ends holding the loss and MTP layers alone where they weigh as much
  // as a chunk's layers (DeepSeek-V3's "...|tt|mL", Megatron-Bridge's layout). Equal stages keep
  // Megatron's even split (--num-layers-per-virtual-pipeline-stage).
  const bool explicit_layout = std::adjacent_find(plan.stage_layers.begin(), plan.stage_layers.end(), std::not_equal_to<>()) != plan.stage_layers.end();
  auto load = [&](int c) { return layers(c) + carried(c); };
  while (explicit_layout) {
    int hi = -1, lo = 0;  // the most loaded chunk that holds a layer, the least loaded chunk
    for (int c = 0; c < v; ++c) {
      if (layers(c) > 0 && (hi < 0 || load(c) > load(hi))) hi = c;
      if (load(c) < load(lo)) lo = c;
    }
    if (hi < 0 || load(hi) - load(lo) < 2) break;
    --layers(hi);
    ++layers(lo);
  }
  return n;
}

}  // namespace

int chunk_layers(const ParallelPlan& plan, int stage, int stage_layers, int chunk, int mtp_layers) {
  const int v = std::max(1, plan.vpp);
  if (v == 1) return stage_layers;
  return stage_chunk_layers(plan, stage, stage_layers, mtp_layers)[static_cast<std::size_t>(std::clamp(chunk, 0, v - 1))];
}

std::vector<int> virtual_stage_layers(const ParallelPlan& plan, const ModelSpec& model) {
  const std::vector<int> stages = resolve_stage_layers(plan, model.num_layers);
  const std::size_t pp = stages.size(), v = static_cast<std::size_t>(std::max(1, plan.vpp));
  std::vector<int> out(pp * v);
  for (std::size_t s = 0; s < pp; ++s) {
    const std::vector<int> chunks = stage_chunk_layers(plan, static_cast<int>(s), stages[s], model.mtp_layers);
    for (std::size_t c = 0; c < v; ++c) out[c * pp + s] = chunks[c];
  }
  return out;
}

std::vector<int> first_last_stage_layers(int num_layers, int pp, std::optional<int> first, std::optional<int> last) {
  const int edges = (first ? 1 : 0) + (last ? 1 : 0);
  const std::int64_t rest = static_cast<std::int64_t>(num_layers) - first.value_or(0) - last.value_or(0);
  const int middle = pp - edges;
  if (pp < 1 || edges == 0 || (middle < 1 ? rest != 0 : (rest < middle || rest % middle != 0))) return {};
  std::vector<int> out(static_cast<std::size_t>(pp), middle > 0 ? static_cast<int>(rest / middle) : 0);
  if (first) out.front() = *first;
  if (last) out.back() = *last;
  return out;
}

unsigned applicable_recompute_modules(const ModelSpec& m) {
  unsigned bits = kRecomputeCoreAttn | kRecomputeLayernorm;
  if (m.mla) bits |= kRecomputeMlaUpProj;
  bool dense = false, moe = false;
  for (int l = 0; l < m.num_layers; ++l) (m.is_moe_layer(l) ? moe : dense) = true;
  if (dense) bits |= kRecomputeMlp;
  if (moe) bits |= kRecomputeMoeAct | kRecomputeMoe;
  if (moe && m.moe && m.moe->shared_expert_ffn_hidden_size > 0) bits |= kRecomputeSharedExperts;
  return bits;
}

std::optional<int> recompute_layers_per_chunk(const ParallelPlan& p, const ModelSpec& model) {
  const int n = p.recompute.num_layers;
  if (p.vpp <= 1) return n;
  if (n % p.vpp != 0) return std::nullopt;
  for (int layers : virtual_stage_layers(p, model))
    if (layers < n / p.vpp) return std::nullopt;
  return n / p.vpp;
}

namespace {
bool has_bf16_layers(const Job& job) {
  return job.training.precision == Precision::fp8 && (job.runtime.bf16_first_layers > 0 || job.runtime.bf16_last_layers > 0);
}
}  // namespace

LayerKind layer_kind(const Job& job, int layer) {
  LayerKind kind = job.model.layer_kind(layer);
  kind.bf16 = has_bf16_layers(job) &&
              (layer < job.runtime.bf16_first_layers || layer >= job.model.num_layers - job.runtime.bf16_last_layers);
  return kind;
}

bool uniform_layers(const Job& job) { return job.model.uniform_layers() && !has_bf16_layers(job); }

int cp_a2a_group_size(const Job& job) {
  const ParallelPlan& p = job.plan;
  if (p.cp <= 1 || job.runtime.cp_comm_type == CpCommType::p2p || job.runtime.cp_comm_type == CpCommType::allgather) return 1;
  if (job.runtime.cp_comm_type == CpCommType::a2a) return p.cp;
  if (job.runtime.cp_a2a_size > 0) return job.runtime.cp_a2a_size;
  const int tp = std::max(1, p.tp), node = std::max(1, job.cluster.gpus_per_node);
  int best = 1;
  for (int a = 2; a <= p.cp; ++a)
    if (p.cp % a == 0 && static_cast<std::int64_t>(a) * tp <= node && job.model.num_attention_heads % (a * tp) == 0 &&
        job.model.num_query_groups % (a * tp) == 0)
      best = a;
  return best;
}

namespace {

// CUDA graphs replace the host time of the parts they capture with one replay each way
// (Megatron-Core cuda_graphs.py / Transformer Engine make_graphed_callables). A dropless layer's
// synchronisation cannot be captured: with moe_preprocess in the graphs the dispatcher moves its
// device-to-host copy behind the permutation ("before_ep_alltoall", token_dispatcher.py) and the
// host still waits there once per layer, so the graphs take the attention block and the part of
// the MoE block before the synchronisation (`presync`, `presync_backward`: its backward share,
// taken in the forward's proportion; not measured apart). Only the router or only the
// preprocessing in a graph: half of that part each, a guess. The experts and the combine stay
// eager.
void apply_cuda_graphs(unsigned modules, double replay, double presync, double presync_backward, MoeHostTime& t) {
  if (modules == 0) return;
  if (modules & kCudaGraphAttn) {
    t.attention_forward_s = replay;
    t.attention_backward_s = replay;
    ++t.graph_replays;
  }
  // Without a synchronisation (padded to capacity, or a per-rank budget) the whole MoE block can
  // be one graph.
  if (!t.synchronises && (modules & kCudaGraphMoe)) {
    t.forward_s = t.backward_s = replay;
    t.forward_presync_s = 0;
    t.activation_syncs = 0;  // a graph captures no blocking copy: the block replays whole
    ++t.graph_replays;
    return;
  }
  // The whole MoE block in a graph of a dropless layer (which cannot be captured past its
  // synchronisation) counts as its router and preprocessing here.
  const bool router = modules & (kCudaGraphMoeRouter | kCudaGraphMoe), preprocess = modules & (kCudaGraphMoePreprocess | kCudaGraphMoe);
  if (!router && !preprocess) return;
  const int graphs = (router ? 1 : 0) + (preprocess ? 1 : 0);
  const double share = graphs == 2 ? 1.0 : 0.5;
  t.forward_s += graphs * replay - share * presync;
  t.forward_presync_s += graphs * replay - share * presync;
  t.backward_s = std::max(0.0, t.backward_s + graphs * replay - share * presync_backward);
  t.graph_replays += graphs;
}

}  // namespace

bool moe_dispatcher_syncs_host(const RuntimeOptions& rt) {
  return rt.framework == Framework::megatron && !rt.moe_pad_to_capacity && !(rt.moe_rank_capacity_factor > 0);
}

MoeHostTime moe_layer_host_time(const Job& job) {
  MoeHostTime t;
  if (!job.model.moe || job.model.num_moe_layers() == 0 || job.runtime.framework != Framework::megatron ||
      (job.runtime.cuda_graph_modules & kCudaGraphFullIteration))
    return t;
  t.synchronises = moe_dispatcher_syncs_host(job.runtime);
  const HostCoefficients& h = job.calibration.host;
  const int local_experts = std::max(1, job.model.moe->num_experts / std::max(1, job.plan.ep));
  t.experts_counted = job.runtime.moe_grouped_gemm ? 0 : local_experts;
  // A grouped GEMM's biased experts get their fc2 bias one expert at a time (add_expert_bias_ops).
  t.biased_experts = job.runtime.moe_grouped_gemm && job.model.add_linear_bias ? local_experts : 0;
  // Each dispatcher has its own measured line (HostCoefficients). The flex dispatcher (DeepEP,
  // HybridEP) is not measured: it takes the alltoall line, whose dispatcher ops it fuses into fewer
  // calls, so its host time is an upper bound (README, "The host time of a MoE layer").
  struct Line {
    double fwd_fixed, fwd_per_expert, bwd_fixed, bwd_per_expert;
  };
  t.allgather_line = job.runtime.moe_allgather_dispatch;
  const Line l = t.allgather_line ? Line{h.moe_allgather_forward_fixed_s, h.moe_allgather_forward_per_expert_s,
                                         h.moe_allgather_backward_fixed_s, h.moe_allgather_backward_per_expert_s}
                                  : Line{h.moe_forward_fixed_s, h.moe_forward_per_expert_s, h.moe_backward_fixed_s,
                                         h.moe_backward_per_expert_s};
  const double line_fwd = l.fwd_fixed + l.fwd_per_expert * t.experts_counted + h.moe_expert_bias_forward_per_expert_s * t.biased_experts;
  const double line_bwd = l.bwd_fixed + l.bwd_per_expert * t.experts_counted + h.moe_expert_bias_backward_per_expert_s * t.biased_experts;
  // The router, aux loss and permutation (most of the fixed part) are issued before the
  // synchronisation; the experts, one by one or grouped, after it. The share was measured on the
  // alltoall dispatcher; the allgather one synchronises at the same point (the token counts, after
  // routing and before the local permutation), so it takes the same share.
  const double line_presync = h.moe_forward_presync_fraction * l.fwd_fixed;
  const double scale = h.moe_forward_s > 0 ? (line_fwd > 0 ? h.moe_forward_s / line_fwd : 0.0) : 1.0;
  t.measured_override = h.moe_forward_s > 0;
  t.forward_s = t.measured_override ? h.moe_forward_s : line_fwd;
  t.backward_s = scale * line_bwd;
  t.forward_presync_s = scale * line_presync;
  // A measured forward says how fast this stack's host is: the attention block's host time scales
  // with it.
  t.attention_forward_s = scale * h.moe_attention_forward_s;
  t.attention_backward_s = scale * h.moe_attention_backward_s;
  // GPT-OSS's experts run Megatron-Core's fused quick-GeGLU (bias_activation_fusion, on by default in
  // Megatron-LM, --quick-geglu, and set by Megatron-Bridge's GPT-OSS bridge), which synchronises the
  // host at every call: once per grouped GEMM (TEGroupedMLP), once per expert (SequentialMLP).
  if (job.model.activation == Activation::quick_geglu)
    t.activation_syncs = job.runtime.moe_grouped_gemm ? 1 : local_experts;
  t.forward_before_experts_s = scale * h.moe_forward_before_experts_fraction * (l.fwd_fixed - line_presync);
  t.experts_forward_s = scale * (l.fwd_per_expert * t.experts_counted + h.moe_expert_bias_forward_per_expert_s * t.biased_experts);
  t.first_activation_s = t.experts_counted > 0 ? scale * h.moe_expert_before_activation_fraction * l.fwd_per_expert : 0.0;
  apply_cuda_graphs(job.runtime.cuda_graph_modules, scale * h.cuda_graph_replay_s, scale * line_presync,
                    scale * h.moe_forward_presync_fraction * l.bwd_fixed, t);
  return t;
}

DenseHostTime dense_layer_host_time(const Job& job) {
  DenseHostTime t;
  const RuntimeOptions& rt = job.runtime;
  if ((rt.framework != Framework::megatron && rt.framework != Framework::deepspeed) || (rt.cuda_graph_modules & kCudaGraphFullIteration))
    return t;
  const HostCoefficients& h = job.calibration.host;
  const bool attention_graph = (rt.cuda_graph_modules & kCudaGraphAttn) != 0, mlp_graph = (rt.cuda_graph_modules & kCudaGraphMlp) != 0;
  const bool mamba_graph = (rt.cuda_graph_modules & kCudaGraphMamba) != 0;
  t.attention_forward_s = attention_graph ? h.cuda_graph_replay_s : h.moe_attention_forward_s;
  t.attention_backward_s = attention_graph ? h.cuda_graph_replay_s : h.moe_attention_backward_s;
  t.mlp_forward_s = mlp_graph ? h.cuda_graph_replay_s : h.moe_forward_per_expert_s;
  t.mlp_backward_s = mlp_graph ? h.cuda_graph_replay_s : h.moe_backward_per_expert_s;
  // A Mamba-2 or gated DeltaNet layer issues about as many ops as an attention block (a fused norm +
  // in_proj, the conv and the scan's Triton kernels, the norm, out_proj, the residual add): its host
  // time is taken as the attention block's measured one. A guess: not measured.
  t.mixer_forward_s = mamba_graph ? h.cuda_graph_replay_s : h.moe_attention_forward_s;
  t.mixer_backward_s = mamba_graph ? h.cuda_graph_replay_s : h.moe_attention_backward_s;
  t.forward_s = t.attention_forward_s + t.mlp_forward_s;
  t.backward_s = t.attention_backward_s + t.mlp_backward_s;
  t.graph_replays = (attention_graph ? 1 : 0) + (mlp_graph ? 1 : 0);
  return t;
}

bool moe_host_time_unmodelled(const Job& job) {
  if (!job.model.moe || job.model.num_moe_layers() == 0) return false;
  if (job.runtime.framework != Framework::megatron) return true;
  const MoeHostTime t = moe_layer_host_time(job);
  return t.synchronises && t.forward_s <= 0 && t.backward_s <= 0 && t.attention_forward_s <= 0 &&
         t.attention_backward_s <= 0;
}

bool combined_1f1b(const Job& job) {
  return job.runtime.moe_a2a_overlap && job.plan.ep > 1 && job.model.moe && job.model.num_moe_layers() > 0;
}

double effective_moe_imbalance(const RuntimeOptions& rt) {
  double f = std::max(1.0, rt.moe_load_imbalance);
  if (rt.moe_capacity_factor > 0) f = std::min(f, std::max(1.0, rt.moe_capacity_factor));
  // HybridEP's per-rank budget drops what a rank receives beyond it.
  if (rt.moe_rank_capacity_factor > 0) f = std::min(f, std::max(1.0, rt.moe_rank_capacity_factor));
  // Padding to capacity makes every expert process exactly its capacity.
  if (rt.moe_pad_to_capacity && rt.moe_capacity_factor > 0) f = std::max(1.0, rt.moe_capacity_factor);
  return f;
}

std::vector<int> stage_layer_ids(const ParallelPlan& plan, const ModelSpec& model, int stage) {
  const std::vector<int> counts = virtual_stage_layers(plan, model);
  const std::size_t pp = static_cast<std::size_t>(std::max(1, plan.pp));
  std::vector<int> ids;
  if (stage < 0 || static_cast<std::size_t>(stage) >= pp) return ids;
  int first = 0;  // global index of virtual stage vs's first layer
  for (std::size_t vs = 0; vs < counts.size(); first += counts[vs], ++vs)
    if (vs % pp == static_cast<std::size_t>(stage))
      for (int i = 0; i < counts[vs]; ++i) ids.push_back(first + i);
  return ids;
}

}  // namespace strata
