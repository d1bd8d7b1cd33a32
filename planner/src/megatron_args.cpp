#include "planner/megatron_args.h"

#include <algorithm>

namespace strata {

namespace {

void flag(std::vector<std::string>& a, const std::string& name) { a.push_back(name); }
void opt(std::vector<std::string>& a, const std::string& name, const std::string& value) {
  a.push_back(name);
  a.push_back(value);
}
void opt(std::vector<std::string>& a, const std::string& name, std::int64_t value) { opt(a, name, std::to_string(value)); }

// Megatron-Core's per-stage layout string: E = embedding, t = decoder layer, L = loss, stages
// separated by '|' (--pipeline-model-parallel-layout).
std::string layout_string(const std::vector<int>& layers) {
  std::string s;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (i > 0) s += "|";
    if (i == 0) s += "E";
    s += "t*" + std::to_string(layers[i]);
    if (i + 1 == layers.size()) s += "L";
  }
  return s;
}

}  // namespace

std::vector<std::string> megatron_args(const Job& job) {
  const ModelSpec& m = job.model;
  const ParallelPlan& p = job.plan;
  std::vector<std::string> a;
  // Model.
  opt(a, "--num-layers", m.num_layers);
  opt(a, "--hidden-size", m.hidden_size);
  opt(a, "--ffn-hidden-size", m.moe ? m.moe->expert_ffn_hidden_size : m.ffn_hidden_size);
  opt(a, "--num-attention-heads", m.num_attention_heads);
  if (m.num_query_groups != m.num_attention_heads) {
    flag(a, "--group-query-attention");
    opt(a, "--num-query-groups", m.num_query_groups);
  }
  if (m.activation == Activation::swiglu) flag(a, "--swiglu");
  if (m.normalization == Normalization::rmsnorm) opt(a, "--normalization", "RMSNorm");
  if (!m.tied_embeddings) flag(a, "--untie-embeddings-and-output-weights");
  if (m.position_embedding == PositionEmbedding::rope) opt(a, "--position-embedding-type", "rope");
  else if (m.position_embedding == PositionEmbedding::learned) opt(a, "--position-embedding-type", "learned_absolute");
  opt(a, "--vocab-size", m.vocab_size);
  if (!m.dropout) {
    opt(a, "--attention-dropout", "0.0");
    opt(a, "--hidden-dropout", "0.0");
  }
  if (m.moe) {
    opt(a, "--num-experts", m.moe->num_experts);
    opt(a, "--moe-router-topk", m.moe->top_k);
  }
  // Batch.
  opt(a, "--micro-batch-size", p.micro_batch_size);
  opt(a, "--global-batch-size", job.training.global_batch_size);
  opt(a, "--seq-length", job.training.seq_length);
  opt(a, "--max-position-embeddings", std::max(job.training.seq_length, m.max_seq_length));
  // Parallelism.
  opt(a, "--tensor-model-parallel-size", p.tp);
  opt(a, "--pipeline-model-parallel-size", p.pp);
  if (p.cp > 1) opt(a, "--context-parallel-size", p.cp);
  if (m.moe && p.ep > 1) opt(a, "--expert-model-parallel-size", p.ep);
  if (p.sequence_parallel && p.tp > 1) flag(a, "--sequence-parallel");
  if (p.vpp > 1 && !p.stage_layers.empty()) {
    // Uneven stages with interleaving: Megatron-Core's layout lists every virtual stage in
    // schedule order (chunk-major), pp*vpp of them, which also sets the virtual pipeline size.
    std::vector<int> virtual_stages;
    for (int c = 0; c < p.vpp; ++c)
      for (int s = 0; s < p.pp; ++s) virtual_stages.push_back(chunk_layers(p, s, p.stage_layers[s], c));
    opt(a, "--pipeline-model-parallel-layout", layout_string(virtual_stages));
  } else if (p.vpp > 1) {
    opt(a, "--num-layers-per-virtual-pipeline-stage", m.num_layers / (p.pp * p.vpp));
  } else if (!p.stage_layers.empty() && p.pp > 1) {
    const auto& L = p.stage_layers;
    bool middle_even = true;
    for (std::size_t i = 2; i + 1 < L.size(); ++i) middle_even = middle_even && L[i] == L[1];
    const bool uneven = std::any_of(L.begin(), L.end(), [&](int l) { return l != L[0]; });
    if (uneven && L.size() > 2 && middle_even) {
      if (L.front() != L[1]) opt(a, "--decoder-first-pipeline-num-layers", L.front());
      if (L.back() != L[1]) opt(a, "--decoder-last-pipeline-num-layers", L.back());
    } else if (uneven) {
      opt(a, "--pipeline-model-parallel-layout", layout_string(L));
    }
  }
  // Memory.
  switch (p.recompute.granularity) {
    case RecomputeGranularity::none: break;
    case RecomputeGranularity::selective: opt(a, "--recompute-granularity", "selective"); break;
    case RecomputeGranularity::full:
      opt(a, "--recompute-granularity", "full");
      if (p.recompute.num_layers < 0) {
        opt(a, "--recompute-method", "uniform");
        opt(a, "--recompute-num-layers", 1);
      } else {
        opt(a, "--recompute-method", "block");
        opt(a, "--recompute-num-layers", p.recompute.num_layers);
      }
      break;
  }
  if (p.distributed_optimizer) flag(a, "--use-distributed-optimizer");
  if (p.dp * p.cp > 1 && job.runtime.overlap_grad_reduce) flag(a, "--overlap-grad-reduce");
  if (p.distributed_optimizer && p.dp * p.cp > 1 && job.runtime.overlap_param_gather) flag(a, "--overlap-param-gather");
  if (job.runtime.tp_comm_overlap && p.tp > 1) flag(a, "--tp-comm-overlap");
  // Megatron fuses gradient accumulation into the weight-gradient GEMM by default.
  if (!job.runtime.fused_grad_accumulation) flag(a, "--no-gradient-accumulation-fusion");
  // Megatron-Core picks flash or cuDNN fused attention by default; say so when the plan assumed none.
  if (!job.runtime.flash_attention) opt(a, "--attention-backend", "unfused");
  if (job.runtime.vocab_divisor != RuntimeOptions::kDefaultVocabDivisor)
    opt(a, "--make-vocab-size-divisible-by", job.runtime.vocab_divisor);
  // Precision.
  switch (job.training.precision) {
    case Precision::fp16: flag(a, "--fp16"); break;
    case Precision::bf16: flag(a, "--bf16"); break;
    case Precision::fp8:
      flag(a, "--bf16");
      opt(a, "--fp8-format", "hybrid");
      break;
    case Precision::fp32:
    case Precision::tf32: break;
  }
  return a;
}

std::string join_args(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& x : args) {
    if (!s.empty()) s += ' ';
    bool quote = x.find_first_of(" |*()") != std::string::npos;
    s += quote ? "'" + x + "'" : x;
  }
  return s;
}

}  // namespace strata
