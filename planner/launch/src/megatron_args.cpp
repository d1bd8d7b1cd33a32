#include "launch/megatron_args.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "costmodel/errors.h"
#include "costmodel/file_io.h"
#include "costmodel/predictor.h"

namespace strata {

namespace {

void flag(std::vector<std::string>& a, const std::string& name) { a.push_back(name); }
void opt(std::vector<std::string>& a, const std::string& name, const std::string& value) {
  a.push_back(name);
  a.push_back(value);
}
void opt(std::vector<std::string>& a, const std::string& name, std::int64_t value) { opt(a, name, std::to_string(value)); }

// Megatron-Core's per-stage layout string: E = embedding, t = decoder layer, m = MTP layer, L =
// loss, stages separated by '|' (--pipeline-model-parallel-layout). The MTP layers go with the loss
// in the last virtual stage, after every decoder layer (PipelineParallelLayerLayout
// validate_layer_layout).
std::string layout_string(const std::vector<int>& layers, int mtp_layers) {
  std::string s;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (i > 0) s += "|";
    if (i == 0) s += "E";
    if (layers[i] > 0) s += "t*" + std::to_string(layers[i]);  // the embedding's or the loss's chunk may hold none
    if (i + 1 == layers.size()) s += std::string(static_cast<std::size_t>(std::max(0, mtp_layers)), 'm') + "L";
  }
  return s;
}

// A per-layer 0/1 pattern as the Python list expression Megatron's --moe-layer-freq and
// --window-attn-skip-freq evaluate (arguments.py moe_freq_type), run-length encoded:
// [0,0,0,1,1] -> "([0]*3+[1]*2)".
std::string pattern_expression(const std::vector<int>& pattern) {
  std::string s = "(";
  for (std::size_t i = 0; i < pattern.size();) {
    std::size_t j = i;
    while (j < pattern.size() && pattern[j] == pattern[i]) ++j;
    if (i > 0) s += "+";
    s += fmt::format("[{}]*{}", pattern[i], j - i);
    i = j;
  }
  return s + ")";
}

// A float flag's value without trailing zeros (1e-05, 0.5).
std::string number(double v) { return fmt::format("{}", v); }

// Megatron-Core's MLA takes YaRN's beta_fast, beta_slow, original_max_position_embeddings and the
// rounding of the correction range from MLATransformerConfig's defaults (transformer_config.py: 32, 1,
// 4096; arguments.py has no flag for them), and its llama3 scaling fixes low_freq_factor 1,
// high_freq_factor 4 and original_max_position_embeddings 8192 (rotary_pos_embedding.py
// _apply_scaling; only the factor has a flag). Defaults Megatron keeps.
constexpr RopeScalingParams kMegatronMlaYarn{.original_max_position = 4096};
constexpr RopeScalingParams kMegatronLlama3{.factor = 8, .original_max_position = 8192};

bool same_mla_yarn_fixed_settings(const RopeScalingParams& p) {
  return p.beta_fast == kMegatronMlaYarn.beta_fast && p.beta_slow == kMegatronMlaYarn.beta_slow &&
         p.original_max_position == kMegatronMlaYarn.original_max_position && p.truncate;
}

bool same_llama3_fixed_settings(const RopeScalingParams& p) {
  return p.low_freq_factor == kMegatronLlama3.low_freq_factor && p.high_freq_factor == kMegatronLlama3.high_freq_factor &&
         p.original_max_position == kMegatronLlama3.original_max_position;
}

// YaRN's mscale pair (arguments.py --mscale, --mscale-all-dim; defaults 1 and 0).
void yarn_mscale_flags(std::vector<std::string>& a, const RopeScalingParams& p) {
  if (p.mscale != 1.0) opt(a, "--mscale", number(p.mscale));
  if (p.mscale_all_dim != 0.0) opt(a, "--mscale-all-dim", number(p.mscale_all_dim));
}

// Rotary scaling: Llama 3's frequency scaling (--use-rope-scaling, --rope-scaling-factor, default 8),
// YaRN inside MLA (MLATransformerConfig rope_type "yarn" by default, its factor from
// --rotary-scaling-factor, whose default 1 is no scaling), or YaRN for standard attention
// (--position-embedding-type yarn; argument_utils.py _apply_yarn_config_from_args).
void rope_scaling_flags(std::vector<std::string>& a, const ModelSpec& m) {
  const RopeScalingParams& p = m.rope_params;
  if (m.rope_scaling == "llama3") {
    flag(a, "--use-rope-scaling");
    if (p.factor != kMegatronLlama3.factor) opt(a, "--rope-scaling-factor", number(p.factor));
  } else if (m.rope_scaling == "yarn" && m.mla) {
    opt(a, "--rotary-scaling-factor", number(p.factor));
    yarn_mscale_flags(a, p);
  } else if (m.rope_scaling == "yarn") {
    opt(a, "--rotary-scaling-factor", number(p.factor));
    opt(a, "--yarn-original-max-position-embeddings", p.original_max_position);
    opt(a, "--yarn-beta-fast", number(p.beta_fast));
    opt(a, "--yarn-beta-slow", number(p.beta_slow));
    yarn_mscale_flags(a, p);
    if (!p.truncate) flag(a, "--no-yarn-correction-range-round-to-int");
  } else if (m.rope_scaling == "linear") {
    // Position interpolation divides every position by the factor (HF _compute_linear_scaling_rope_parameters;
    // Megatron RotaryEmbedding seq_len_interpolation_factor, an integer flag).
    opt(a, "--rotary-seq-len-interpolation-factor", static_cast<std::int64_t>(p.factor));
  }
}

// The MoE router (moe_utils.py topk_routing_with_score_function): score function, expert bias,
// group-limited top-k, the scaling of the weights, softmax before top-k when they are not renormalized.
void router_flags(std::vector<std::string>& a, const MoeSpec& e) {
  // Sinkhorn routing bypasses the score function (router.py sinkhorn_load_balancing); Megatron's
  // default --moe-aux-loss-coeff 0 is what it asserts.
  if (e.sinkhorn) {
    opt(a, "--moe-router-load-balancing-type", "sinkhorn");
    return;
  }
  if (e.router_score_function != "softmax") opt(a, "--moe-router-score-function", e.router_score_function);
  if (e.router_bias && e.router_score_function == "sigmoid") flag(a, "--moe-router-enable-expert-bias");
  if (e.num_groups > 1) {
    opt(a, "--moe-router-num-groups", e.num_groups);
    opt(a, "--moe-router-group-topk", e.group_topk);
  }
  if (e.topk_scaling_factor > 0) opt(a, "--moe-router-topk-scaling-factor", number(e.topk_scaling_factor));
  if (!e.normalize_top_k && e.router_score_function == "softmax") flag(a, "--moe-router-pre-softmax");
}

// The model-defining flags: shape, attention variant, activations, norms, positions, MoE routing.
void model_flags(std::vector<std::string>& a, const ModelSpec& m) {
  opt(a, "--num-layers", m.num_layers);
  opt(a, "--hidden-size", m.hidden_size);
  opt(a, "--ffn-hidden-size", m.ffn_hidden_size);
  opt(a, "--num-attention-heads", m.num_attention_heads);
  if (m.mla) {
    // Multi-latent attention (Megatron-Core MLASelfAttention): queries and keys/values through
    // low-rank latents; the per-head dims replace kv_channels and query groups.
    flag(a, "--multi-latent-attention");
    if (m.mla->q_lora_rank > 0) opt(a, "--q-lora-rank", m.mla->q_lora_rank);
    opt(a, "--kv-lora-rank", m.mla->kv_lora_rank);
    opt(a, "--qk-head-dim", m.mla->qk_nope_head_dim);
    opt(a, "--qk-pos-emb-head-dim", m.mla->qk_rope_head_dim);
    opt(a, "--v-head-dim", m.mla->v_head_dim);
    if (m.dsa) {
      // DeepSeek Sparse Attention (Megatron-Core experimental_attention_variant/dsa.py), with the
      // fused kernels strata costs (--dsa-kernel-backend cudnn: FlashMLA's sparse prefill); its rope
      // is unfused (TransformerConfig: "RoPE fusion is not supported for DSAttention").
      opt(a, "--experimental-attention-variant", "dsa");
      opt(a, "--dsa-indexer-n-heads", m.dsa->index_heads);
      opt(a, "--dsa-indexer-head-dim", m.dsa->index_head_dim);
      opt(a, "--dsa-indexer-topk", m.dsa->index_topk);
      if (m.dsa->topk_freq != 1) opt(a, "--dsa-indexer-topk-freq", m.dsa->topk_freq);
      if (m.dsa->skip_topk_offset != 0) opt(a, "--dsa-indexer-skip-topk-offset", m.dsa->skip_topk_offset);
      if (m.dsa->rope_interleaved) flag(a, "--dsa-indexer-rope-interleaved");
      if (!m.dsa->rotate_activation) flag(a, "--no-dsa-indexer-rotate-activation");
      opt(a, "--dsa-indexer-loss-coeff", number(m.dsa->indexer_loss_coeff));
      if (m.dsa->sparse_indexer_loss) flag(a, "--dsa-indexer-use-sparse-loss");
      opt(a, "--dsa-kernel-backend", "cudnn");
      flag(a, "--no-rope-fusion");
    }
  } else {
    if (m.num_query_groups != m.num_attention_heads) {
      flag(a, "--group-query-attention");
      opt(a, "--num-query-groups", m.num_query_groups);
    }
    if (m.kv_channels > 0 && m.kv_channels * m.num_attention_heads != m.hidden_size) opt(a, "--kv-channels", m.kv_channels);
  }
  if (m.mamba) {
    // Megatron-Core MambaMixer's shape (--hybrid-layer-pattern places the layers: pipeline_split).
    opt(a, "--mamba-num-heads", m.mamba->num_heads);
    opt(a, "--mamba-head-dim", m.mamba->head_dim);
    opt(a, "--mamba-state-dim", m.mamba->state_dim);
    opt(a, "--mamba-num-groups", m.mamba->num_groups);
  }
  if (m.gdn) {
    // Megatron-Core GatedDeltaNet's shape (TransformerConfig linear_*), for the pattern's "G" layers.
    opt(a, "--linear-num-key-heads", m.gdn->num_key_heads);
    opt(a, "--linear-num-value-heads", m.gdn->num_value_heads);
    opt(a, "--linear-key-head-dim", m.gdn->key_head_dim);
    opt(a, "--linear-value-head-dim", m.gdn->value_head_dim);
    opt(a, "--linear-conv-kernel-dim", m.gdn->conv_kernel);
  }
  if (m.attention_output_gate) flag(a, "--attention-output-gate");
  if (m.activation == Activation::swiglu) flag(a, "--swiglu");
  if (m.activation == Activation::squared_relu) flag(a, "--squared-relu");
  if (m.activation == Activation::quick_geglu) flag(a, "--quick-geglu");
  if (m.glu_linear_offset != 0) opt(a, "--glu-linear-offset", number(m.glu_linear_offset));
  if (m.activation_clamp > 0) opt(a, "--activation-func-clamp-value", number(m.activation_clamp));
  if (m.normalization == Normalization::rmsnorm) opt(a, "--normalization", "RMSNorm");
  if (m.norm_epsilon != 1e-5) opt(a, "--norm-epsilon", number(m.norm_epsilon));  // Megatron's default: 1e-5
  if (!m.add_linear_bias) flag(a, "--disable-bias-linear");
  if (m.add_qkv_bias && !m.add_linear_bias) flag(a, "--add-qkv-bias");
  if (m.qk_layernorm) flag(a, "--qk-layernorm");
  if (m.qk_l2_norm) flag(a, "--qk-l2-norm");
  if (m.attention_sinks) opt(a, "--softmax-type", "learnable");
  if (m.zero_centered_gamma) flag(a, "--apply-layernorm-1p");
  if (!m.tied_embeddings) flag(a, "--untie-embeddings-and-output-weights");
  if (m.position_embedding == PositionEmbedding::rope) {
    opt(a, "--position-embedding-type", m.rope_scaling == "yarn" && !m.mla ? "yarn" : "rope");
    opt(a, "--rotary-base", static_cast<std::int64_t>(m.rotary_base));
    if (m.rotary_percent != 1.0) opt(a, "--rotary-percent", number(m.rotary_percent));
    rope_scaling_flags(a, m);
    // NoPE layers (1 = no rotary embedding): N when every Nth layer goes without (Megatron expands
    // it to ([0]*(N-1)+[1]) repeated), else the list expression --no-rope-freq evaluates.
    if (!m.no_rope_layers.empty()) {
      const int n = static_cast<int>(std::find(m.no_rope_layers.begin(), m.no_rope_layers.end(), 1) - m.no_rope_layers.begin()) + 1;
      const bool periodic = m.num_layers % n == 0 && m.no_rope_layers == every_nth_layer(m.num_layers, n);
      opt(a, "--no-rope-freq", periodic ? std::to_string(n) : pattern_expression(m.no_rope_layers));
    }
  } else if (m.position_embedding == PositionEmbedding::learned) {
    opt(a, "--position-embedding-type", "learned_absolute");
  } else if (m.position_embedding == PositionEmbedding::none) {
    opt(a, "--position-embedding-type", "none");
  }
  if (m.sliding_window > 0) {
    // Window attention (no look-ahead) on the layers the pattern marks 1. Hugging Face's window W
    // holds the query and W - 1 keys before it (masking_utils.py: q_idx - kv_idx < W); Megatron's and
    // Transformer Engine's left size counts the keys before the query only (Megatron-Bridge
    // gpt_oss_bridge.py: window_size = (sliding_window - 1, 0)).
    opt(a, "--window-size", fmt::format("({},0)", m.sliding_window - 1));
    if (!m.sliding_window_pattern.empty()) opt(a, "--window-attn-skip-freq", pattern_expression(m.sliding_window_pattern));
  }
  opt(a, "--vocab-size", m.vocab_size);
  if (!m.dropout) {
    opt(a, "--attention-dropout", "0.0");
    opt(a, "--hidden-dropout", "0.0");
  }
  if (m.moe) {
    const MoeSpec& e = *m.moe;
    opt(a, "--num-experts", e.num_experts);
    opt(a, "--moe-router-topk", e.top_k);
    opt(a, "--moe-ffn-hidden-size", e.expert_ffn_hidden_size);
    if (e.shared_expert_ffn_hidden_size > 0) opt(a, "--moe-shared-expert-intermediate-size", e.shared_expert_ffn_hidden_size);
    if (e.shared_expert_gate) flag(a, "--moe-shared-expert-gate");
    if (e.latent_size > 0) opt(a, "--moe-latent-size", e.latent_size);
    if (!e.layer_pattern.empty()) opt(a, "--moe-layer-freq", pattern_expression(e.layer_pattern));
    router_flags(a, e);
  }
  if (m.mtp_layers > 0) opt(a, "--mtp-num-layers", m.mtp_layers);
  if (m.mtp_layers > 0 && m.mtp_repeated_layer) flag(a, "--mtp-use-repeated-layer");
}

// The pipeline split: Megatron's default even split when it equals strata's, else the flags that
// give strata's split (first/last stage sizes, or the explicit per-virtual-stage layout).
void pipeline_split(std::vector<std::string>& a, const Job& job) {
  const ParallelPlan& p = job.plan;
  const int L = job.model.num_layers;
  if (job.model.hybrid()) {
    // A hybrid model's layers and their split in one pattern (Megatron-Core
    // hybrid_layer_allocation.py): '|' ends each model chunk, chunk v of pipeline rank r being
    // segment v * pp + r, as strata's schedule places them; the number of segments sets the
    // virtual pipeline size. No other split flag may join it (arguments.py).
    const std::vector<int> chunks = p.pp > 1 ? virtual_stage_layers(p, job.model) : std::vector<int>{L};
    std::string pattern;
    std::size_t at = 0;
    for (std::size_t c = 0; c < chunks.size(); ++c) {
      if (c > 0) pattern += "|";
      pattern += job.model.hybrid_pattern.substr(at, static_cast<std::size_t>(chunks[c]));
      at += static_cast<std::size_t>(chunks[c]);
    }
    // MTP modules: the unified form "main/mtp/mtp", one "/mtp" per depth (parse_hybrid_pattern).
    for (int d = 0; d < job.model.mtp_layers; ++d) pattern += "/" + job.model.hybrid_mtp_pattern;
    opt(a, "--hybrid-layer-pattern", pattern);
    if (p.vpp > 1) {
      const std::int64_t group = interleaved_microbatch_group(p, job.num_micro_batches());
      if (group != p.pp) opt(a, "--microbatch-group-size-per-virtual-pipeline-stage", group);
    }
    return;
  }
  if (p.pp == 1) return;
  const std::vector<int> stages = resolve_stage_layers(p, L);
  const bool even = L % p.pp == 0 && std::all_of(stages.begin(), stages.end(), [&](int l) { return l == L / p.pp; });
  if (p.vpp > 1) {
    const std::vector<int> v = virtual_stage_layers(p, job.model);  // as strata's schedule places them
    const bool even_chunks = even && std::all_of(v.begin(), v.end(), [&](int l) { return l == v.front(); });
    if (even_chunks) opt(a, "--num-layers-per-virtual-pipeline-stage", v.front());
    else opt(a, "--pipeline-model-parallel-layout", layout_string(v, job.model.mtp_layers));  // also sets the virtual pipeline size
    // Megatron-Core runs groups of pp micro-batches per model chunk unless told otherwise, and
    // refuses a step whose last group is shorter than pp (schedules.py).
    const std::int64_t group = interleaved_microbatch_group(p, job.num_micro_batches());
    if (group != p.pp) opt(a, "--microbatch-group-size-per-virtual-pipeline-stage", group);
    return;
  }
  if (even) return;
  // Megatron gives every middle stage (L - first - last) / (pp - 2) layers
  // (transformer_block.get_num_layers_to_build).
  const bool middle_even = stages.size() > 2 && std::all_of(stages.begin() + 2, stages.end() - 1, [&](int l) { return l == stages[1]; });
  if (middle_even) {
    if (stages.front() != stages[1]) opt(a, "--decoder-first-pipeline-num-layers", stages.front());
    if (stages.back() != stages[1]) opt(a, "--decoder-last-pipeline-num-layers", stages.back());
  } else {
    opt(a, "--pipeline-model-parallel-layout", layout_string(stages, job.model.mtp_layers));
  }
}

// The CUDA graph modules a launch names. Transformer Engine captures a whole layer only where
// nothing in it waits on the host, and a dropless MoE layer's dispatcher waits for its token counts
// (moe_dispatcher_syncs_host). For whole-layer graphs over such layers the cost model counts the
// parts before that wait as captured (apply_cuda_graphs: the attention block, the router and the
// preprocessing), so the launch names those, and the dense MLPs and Mamba mixers of the other layers.
unsigned launched_cuda_graph_modules(const Job& job) {
  const unsigned g = job.runtime.cuda_graph_modules;
  const ModelSpec& m = job.model;
  if (g != kCudaGraphWholeLayer || !m.moe || !moe_dispatcher_syncs_host(job.runtime)) return g;
  const int moe_layers = m.num_moe_layers();
  if (moe_layers == 0) return g;
  unsigned named = kCudaGraphAttn | kCudaGraphMoeRouter | kCudaGraphMoePreprocess;
  if (m.hybrid() ? m.count_hybrid('-') > 0 : moe_layers < m.num_layers) named |= kCudaGraphMlp;  // dense MLP layers
  if (m.mamba) named |= kCudaGraphMamba;
  return named;
}

// Model details no Megatron-LM flag expresses: a launch would train another model.
std::optional<std::string> unlaunchable_model_detail(const ModelSpec& m) {
  const RopeScalingParams& p = m.rope_params;
  if (m.qk_norm_across_heads)
    return "the model's query and key norms span all heads (one RMSNorm over heads x head_dim: OLMo-2, MiniMax-M2's "
           "qk_norm_type per_layer); Megatron-LM's --qk-layernorm norms each head: a launch would train another model";
  if (m.norm_after_sublayers)
    return "the model normalizes each sublayer's output, not its input (OLMo-2: post_attention_layernorm and "
           "post_feedforward_layernorm); Megatron-LM's layers are pre-norm: a launch would train another model";
  if (m.norm_around_sublayers)
    return "the model normalizes each sublayer's input and its output (Gemma 2/3, GLM-4-0414: post-sublayer norms beside the "
           "pre-norms); Megatron-LM's layers have the pre-norms only: a launch would train another model";
  if (m.embedding_norm)
    return "the model normalizes its embedding output (BLOOM's word_embeddings_layernorm; Megatron-DeepSpeed --embed-layernorm); "
           "Megatron-LM has no norm there: a launch would train another model";
  if (m.parallel_attention_mlp)
    return "the model runs attention and MLP side by side on one normalized input (parallel residual: GPT-J, GPT-NeoX, Falcon, "
           "Phi-2, Cohere); Megatron-LM's layers run the MLP after the attention: a launch would train another model";
  if (m.scalar_multipliers)
    return "the model scales its embedding, residual branches, attention scores or logits by configured multipliers (Granite, "
           "Cohere's logit_scale, MiniCPM), which no Megatron-LM flag sets: a launch would train another model";
  if (m.partial_linear_biases)
    return "the model biases some linears and not others (attention_bias: q/k/v and the output projection without the MLP; or "
           "mlp_bias alone); Megatron-LM biases every linear (--add-bias-linear) or the QKV projection only (--add-qkv-bias): "
           "a launch would train another model";
  if (m.kv_shared_across_layers)
    return "adjacent layers of the model share one layer's keys and values (cross-layer attention, Hunyuan use_cla); "
           "Megatron-LM's layers each project their own: a launch would train another model";
  if (m.per_layer_activation_clamp)
    return "the model clamps its SwiGLU inputs with a limit set layer by layer (K-EXAONE's swiglu_limits); Megatron-LM's one "
           "--activation-func-clamp-value applies to every MoE layer alike: a launch would train another model";
  if (m.position_embedding == PositionEmbedding::rope && m.rope_scaling == "llama3" && !same_llama3_fixed_settings(p))
    return fmt::format("the model's llama3 rope scaling has low_freq_factor {}, high_freq_factor {} and original_max_position_embeddings {}; "
                       "Megatron-LM's fixes them at 1, 4 and 8192 (rotary_pos_embedding.py _apply_scaling; only the factor has a flag): "
                       "a launch would train other rotary frequencies",
                       p.low_freq_factor, p.high_freq_factor, p.original_max_position);
  if (m.position_embedding == PositionEmbedding::rope && m.rope_scaling == "yarn" && m.mla && !same_mla_yarn_fixed_settings(p))
    return fmt::format("the model's YaRN rope scaling has beta_fast {}, beta_slow {}, original_max_position_embeddings {}{}; Megatron-LM's "
                       "multi-latent attention keeps MLATransformerConfig's 32, 1 and 4096 with a rounded correction range, which no "
                       "flag changes: a launch would train other rotary frequencies",
                       p.beta_fast, p.beta_slow, p.original_max_position, p.truncate ? "" : " and an unrounded correction range");
  if (m.position_embedding == PositionEmbedding::rope && (m.rope_scaling == "longrope" || m.rope_scaling == "su"))
    return "the model's LongRoPE scaling (Phi-3/3.5) rescales every rotary frequency (short_factor) and the attention logits at "
           "every sequence length (HF _compute_longrope_parameters); Megatron-LM has no flag for it: a launch would train other "
           "rotary frequencies";
  if (m.position_embedding == PositionEmbedding::rope && m.rope_scaling == "linear" && m.rope_params.factor != std::floor(m.rope_params.factor))
    return fmt::format("the model's linear rope scaling factor {} is not a whole number; Megatron-LM's "
                       "--rotary-seq-len-interpolation-factor takes an integer: a launch would train other positions",
                       m.rope_params.factor);
  if (m.moe && m.moe->num_groups > 1 && m.moe->group_by_max_score)
    return "the model's group-limited greedy routing (DeepSeek-V2) scores a group by its best expert; Megatron-LM's group-limited "
           "routing scores it by the sum of its top experts (moe_utils.py group_limited_topk): a launch would route differently";
  if (m.moe && !m.moe->normalize_top_k && m.moe->router_score_function == "sigmoid" && m.moe->top_k > 1 && !m.moe->sinkhorn)
    return "the model's sigmoid router does not renormalize its top-k weights (norm_topk_prob false); Megatron-LM's always does "
           "(moe_utils.py topk_routing_with_score_function): a launch would weight the experts differently";
  if (m.moe && m.moe->top_k == 1 && m.moe->router_score_function == "softmax" && m.moe->normalize_top_k && !m.moe->sinkhorn)
    return "the model's top-1 softmax router takes the softmax after its one pick (a weight of 1, no gradient); Megatron-Core "
           "refuses that router (TransformerConfig: \"Please use --moe-router-pre-softmax when topk is 1\") unless it balances "
           "with sinkhorn: predict the model with the softmax before the top-1, or with Sinkhorn routing (\"sinkhorn\": true "
           "in the model's moe, or --moe-router-load-balancing-type sinkhorn in a launch)";
  return std::nullopt;
}

}  // namespace

int cuda_arch_major(const GpuSpec& gpu) {
  std::string a = gpu.architecture;
  std::transform(a.begin(), a.end(), a.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (a == "ampere" || a == "ada") return 8;
  if (a == "hopper") return 9;
  if (a == "blackwell") return 10;
  return 0;
}

std::optional<std::string> megatron_launch_refusal(const Job& job) {
  const ParallelPlan& p = job.plan;
  switch (job.runtime.framework) {
    case Framework::megatron: break;
    case Framework::deepspeed:
      return fmt::format("the plan is modelled for Megatron-DeepSpeed (DeepSpeed ZeRO-{} runtime), which Megatron-LM does not run: "
                         "launch it with Megatron-DeepSpeed and a DeepSpeed config (zero_optimization.stage {})",
                         p.zero_stage, p.zero_stage);
    case Framework::fsdp:
      return "the plan is modelled for PyTorch FSDP (FULL_SHARD, as llm-foundry runs it), which Megatron-LM does not run: "
             "launch it with that stack";
  }
  if (job.model.activation == Activation::geglu)
    return "the model's gated GELU (GeGLU, Gemma) has no Megatron-LM flag (--swiglu is gated SiLU, --quick-geglu another "
           "approximation): a launch would train another model";
  if (auto why = unlaunchable_model_detail(job.model)) return why;
  if (resolved_cross_entropy(job.runtime) == CrossEntropyKernel::single_pass)
    return "the job computes its loss with Transformer Engine's cross entropy (--cross-entropy-fusion-impl te), which "
           "Megatron-LM refuses (disabled for stability): predict it with --cross-entropy jit-fused for a launch";
  if (job.model.position_embedding == PositionEmbedding::alibi)
    return "the model uses ALiBi positions, which Megatron-LM does not implement (BLOOM and MPT trained with Megatron-DeepSpeed and "
           "llm-foundry): no Megatron-LM launch trains this model";
  if (job.model.moe && job.runtime.moe_grouped_gemm)
    return std::string("the plan times grouped-GEMM experts (--moe-grouped-gemm), which strata does not write (Megatron checks it "
                       "against the GPU's compute capability, which a launch cannot be verified for without the GPU): ") +
           (p.offload.modules & kOffloadExpertModules
                ? "its offloading inside the experts needs them, so add --moe-grouped-gemm to that launch yourself, or plan "
                  "without the expert offload modules"
                : "plan without --moe-grouped-gemm (the experts one after another, Megatron's default, as strata's launch runs "
                  "them), or add --moe-grouped-gemm to that launch yourself");
  if (const unsigned named = launched_cuda_graph_modules(job); named != job.runtime.cuda_graph_modules) {
    Job launched = job;
    launched.runtime.cuda_graph_modules = named;
    if (std::string why = check_plan(launched); !why.empty())
      return "whole-layer CUDA graphs cannot capture a dropless MoE layer past its dispatcher's wait for token counts, so the "
             "launch would name the modules before it (" + fmt::format("{}", fmt::join(cuda_graph_module_names(named), ", ")) +
             "), and " + why + ": name the modules yourself (--cuda-graphs), or pad the experts to capacity";
  }
  if (job.runtime.fp8_attention)
    return "the plan times fp8 attention (Transformer Engine's fp8_dpa), which Megatron-LM has no flag for "
           "(TransformerConfig.fp8_dot_product_attention is set in code or by Megatron-Bridge's "
           "mixed_precision.fp8_dot_product_attention): predict without --fp8-attention for strata's launch, or set it in "
           "the config that builds the model";
  if (job.model.moe && job.runtime.moe_rank_capacity_factor > 0)
    return "the plan times HybridEP's static per-rank token budget (--moe-expert-rank-capacity-factor), which strata does not "
           "write (it needs HybridEP and Transformer Engine's op fuser where the job runs; strata's launch dispatches with "
           "DeepEP's dynamic shapes): predict without the budget for strata's launch, or add --moe-flex-dispatcher-backend "
           "hybridep and the budget to that launch yourself";
  if (p.recompute.granularity == RecomputeGranularity::selective && (p.recompute.modules & kRecomputeMoeAct))
    return "recomputing the experts' activation (moe_act) needs Megatron's grouped-GEMM experts (--moe-grouped-gemm), which "
           "strata does not write (Megatron checks it against the GPU's compute capability, which a launch cannot be "
           "verified for without the GPU): add --moe-grouped-gemm --recompute-granularity selective --recompute-modules "
           "yourself, or drop moe_act";
  if (p.recompute.granularity == RecomputeGranularity::full && p.recompute.num_layers >= 0 && !recompute_layers_per_chunk(p, job.model))
    return fmt::format("Megatron-LM recomputes --recompute-num-layers layers in each of a stage's {} model chunks: {} layers per stage "
                       "is not a whole number per chunk; give a multiple of vpp (or full recompute of every layer)",
                       p.vpp, p.recompute.num_layers);
  return std::nullopt;
}

std::vector<std::string> megatron_args(const Job& job) {
  if (megatron_launch_refusal(job)) return {};
  const ModelSpec& m = job.model;
  const ParallelPlan& p = job.plan;
  std::vector<std::string> a;
  model_flags(a, m);
  // Batch.
  opt(a, "--micro-batch-size", p.micro_batch_size);
  opt(a, "--global-batch-size", job.training.global_batch_size);
  opt(a, "--seq-length", job.training.seq_length);
  opt(a, "--max-position-embeddings", std::max(job.training.seq_length, m.max_seq_length));
  // Parallelism.
  opt(a, "--tensor-model-parallel-size", p.tp);
  opt(a, "--pipeline-model-parallel-size", p.pp);
  if (p.cp > 1) opt(a, "--context-parallel-size", p.cp);
  if (m.moe) {
    if (p.ep > 1) opt(a, "--expert-model-parallel-size", p.ep);
    // Megatron's default expert tensor parallel size is tp; strata's plan names its own.
    opt(a, "--expert-tensor-parallel-size", p.etp);
    if (job.runtime.moe_capacity_factor > 0) opt(a, "--moe-expert-capacity-factor", number(job.runtime.moe_capacity_factor));
    if (job.runtime.moe_capacity_factor > 0 && job.runtime.moe_pad_to_capacity) flag(a, "--moe-pad-expert-input-to-capacity");
    // What the cost model times: tokens dispatched by all-to-all over the expert-parallel group
    // (Megatron-Core MoEAlltoAllTokenDispatcher), or, when the plan deduplicates tokens per node,
    // the flex dispatcher with DeepEP (which must be installed where the job runs); the local
    // experts run one after another, Megatron's default SequentialMLP, as the plan times them
    // (RuntimeOptions::moe_grouped_gemm false). --moe-grouped-gemm is not written: its check asks
    // the GPU for its compute capability (arguments.py), which an argument check without a GPU
    // cannot answer, so such a launch cannot be verified before it runs.
    if (job.runtime.moe_token_dedup) {
      opt(a, "--moe-token-dispatcher-type", "flex");
      opt(a, "--moe-flex-dispatcher-backend", "deepep");
    } else if (job.runtime.moe_allgather_dispatch) {
      opt(a, "--moe-token-dispatcher-type", "allgather");
    } else {
      opt(a, "--moe-token-dispatcher-type", "alltoall");
    }
    // The combined 1F1B schedule the cost model times for --moe-a2a-overlap; Megatron runs it
    // only with expert parallelism (TransformerConfig asserts ep > 1).
    if (job.runtime.moe_a2a_overlap && p.ep > 1) flag(a, "--overlap-moe-expert-parallel-comm");
    // The shared experts beside the dispatcher's all-to-alls, as the cost model times them.
    if (job.runtime.moe_shared_expert_overlap && m.moe->shared_expert_ffn_hidden_size > 0) flag(a, "--moe-shared-expert-overlap");
  }
  if (p.sequence_parallel && p.tp > 1) flag(a, "--sequence-parallel");
  pipeline_split(a, job);
  // Memory.
  switch (p.recompute.granularity) {
    case RecomputeGranularity::none: break;
    case RecomputeGranularity::selective:
      opt(a, "--recompute-granularity", "selective");
      if (p.recompute.modules != kRecomputeCoreAttn) {  // Megatron's default is core_attn alone
        a.push_back("--recompute-modules");
        for (const auto& name : recompute_module_names(p.recompute.modules)) a.push_back(name);
      }
      break;
    case RecomputeGranularity::full:
      opt(a, "--recompute-granularity", "full");
      if (p.recompute.num_layers < 0) {
        opt(a, "--recompute-method", "uniform");
        opt(a, "--recompute-num-layers", 1);
      } else {
        opt(a, "--recompute-method", "block");
        opt(a, "--recompute-num-layers", *recompute_layers_per_chunk(job.plan, job.model));
      }
      break;
  }
  // Fine-grained activation offloading; the fused grouped MLP's group exists only on Transformer
  // Engine's op-fuser path (TransformerConfig asks for use_transformer_engine_op_fuser).
  if (p.cpu_offload_layers > 0) opt(a, "--cpu-offloading-num-layers", p.cpu_offload_layers);
  if (p.offload.modules != 0) {
    flag(a, "--fine-grained-activation-offloading");
    a.push_back("--offload-modules");
    for (const auto& name : offload_module_names(p.offload.modules)) a.push_back(name);
    if (p.offload.min_tensor_elements != ActivationOffloadSpec{}.min_tensor_elements)
      opt(a, "--min-offloaded-tensor-size", p.offload.min_tensor_elements);
    if (p.offload.modules & kOffloadFusedGroupMlp) flag(a, "--use-transformer-engine-op-fuser");
  }
  // Gradients are reduced over dp*cp, and a MoE model's expert gradients over the expert-data-
  // parallel group, which can be larger (tp*dp*cp / (ep*etp)): either makes the overlap flags count.
  const bool data_parallel = p.dp * p.cp > 1 || (job.model.moe && job.model.num_moe_layers() > 0 && p.expert_data_parallel() > 1);
  const bool sharded_optimizer = p.distributed_optimizer || p.zero_stage >= 1;
  if (sharded_optimizer) flag(a, "--use-distributed-optimizer");
  if (p.sharded_copies() > 1) opt(a, "--num-distributed-optimizer-instances", p.optimizer_instances);
  if (p.outer_optimizer_sharding) opt(a, "--outer-dp-sharding-strategy", "optim");
  if (p.zero_stage >= 2) {
    // ZeRO-2/3 in Megatron-LM is Megatron-FSDP: grads (and params) sharded over the DP ranks.
    flag(a, "--use-megatron-fsdp");
    opt(a, "--data-parallel-sharding-strategy", p.zero_stage == 2 ? "optim_grads" : "optim_grads_params");
    opt(a, "--ckpt-format", "fsdp_dtensor");
  }
  // The optimizer and its state's dtypes and placement, where they are not Megatron's defaults.
  const OptimizerSpec& o = job.training.optimizer;
  if (o.kind != OptimizerKind::adam) opt(a, "--optimizer", to_string(o.kind));
  if (o.precision_aware) {
    flag(a, "--use-precision-aware-optimizer");
    if (o.main_params != StateDtype::fp32) opt(a, "--main-params-dtype", to_string(o.main_params));
    if (o.exp_avg != StateDtype::fp32) opt(a, "--exp-avg-dtype", to_string(o.exp_avg));
    if (o.exp_avg_sq != StateDtype::fp32) opt(a, "--exp-avg-sq-dtype", to_string(o.exp_avg_sq));
  }
  if (o.cpu_offload_fraction > 0) {
    flag(a, "--optimizer-cpu-offload");
    opt(a, "--optimizer-offload-fraction", fmt::format("{:g}", o.cpu_offload_fraction));
  }
  if (data_parallel && job.runtime.overlap_grad_reduce) flag(a, "--overlap-grad-reduce");
  if (sharded_optimizer && data_parallel && job.runtime.overlap_grad_reduce && job.runtime.overlap_param_gather)
    flag(a, "--overlap-param-gather");
  if (job.runtime.tp_comm_overlap && p.tp > 1 && p.sequence_parallel) flag(a, "--tp-comm-overlap");
  // The CUDA graphs whose host time the plan counts (dense_layer_host_time, moe_layer_host_time):
  // Transformer Engine's per-layer graphs (make_graphed_callables) of the listed modules, none
  // listed for the whole layer, or Megatron's graph of the whole step, which runs without the
  // loss's NaN check (arguments.py asks for --no-check-for-nan-in-loss-and-grad). A launch read
  // with Megatron's own per-layer graphs (local) is written with Transformer Engine's: the modules,
  // and so the host time, are the same. check_plan holds Megatron-Core's rules for the modules.
  if (const unsigned graphs = launched_cuda_graph_modules(job); graphs != 0) {
    if (graphs & kCudaGraphFullIteration) {
      opt(a, "--cuda-graph-impl", "full_iteration");
      flag(a, "--no-check-for-nan-in-loss-and-grad");
    } else {
      opt(a, "--cuda-graph-impl", "transformer_engine");
      if (graphs != kCudaGraphWholeLayer) {
        a.push_back("--cuda-graph-modules");
        for (const auto& name : cuda_graph_module_names(graphs)) a.push_back(name);
      }
    }
  }
  // The loss the prediction timed: Megatron's fused cross entropy (impl native, its default with the
  // flag) unless the job runs the eager one. Megatron-LM refuses Transformer Engine's (single_pass):
  // such a job gets no launch (megatron_launch_refusal), and a launch asking for it is refused when
  // read (megatron_import).
  if (resolved_cross_entropy(job.runtime) == CrossEntropyKernel::jit_fused) flag(a, "--cross-entropy-loss-fusion");
  // Megatron fuses gradient accumulation into the weight-gradient GEMM by default.
  if (!job.runtime.fused_grad_accumulation) flag(a, "--no-gradient-accumulation-fusion");
  // Megatron-Core picks flash or cuDNN fused attention by default; say so when the plan assumed none.
  if (!job.runtime.flash_attention) opt(a, "--attention-backend", "unfused");
  else if (job.runtime.attention_kernel == AttentionKernel::cudnn) opt(a, "--attention-backend", "fused");
  else if (job.runtime.attention_kernel == AttentionKernel::flash2) opt(a, "--attention-backend", "flash");
  // The gradient reduction dtype (arguments.py): a bf16 model's gradients are reduced in fp32
  // unless --grad-reduce-in-bf16; an fp16 model's in fp16 unless --accumulate-allreduce-grads-in-fp32.
  if (job.training.precision == Precision::fp16) {
    if (!job.runtime.grad_reduce_in_bf16) flag(a, "--accumulate-allreduce-grads-in-fp32");
  } else if (job.runtime.grad_reduce_in_bf16 && job.training.precision != Precision::fp32 && job.training.precision != Precision::tf32) {
    flag(a, "--grad-reduce-in-bf16");
  }
  if (p.cp > 1 && job.runtime.cp_comm_type != CpCommType::p2p) opt(a, "--cp-comm-type", to_string(job.runtime.cp_comm_type));
  if (job.training.precision == Precision::fp8 && (job.runtime.bf16_first_layers > 0 || job.runtime.bf16_last_layers > 0)) {
    flag(a, "--first-last-layers-bf16");
    opt(a, "--num-layers-at-start-in-bf16", job.runtime.bf16_first_layers);
    opt(a, "--num-layers-at-end-in-bf16", job.runtime.bf16_last_layers);
  }
  if (p.cp > 1 && job.runtime.cp_comm_type == CpCommType::a2a_p2p) {
    // Megatron requires the two group sizes with a2a+p2p: the all-to-all group, then the ring.
    const int inner = cp_a2a_group_size(job);
    a.push_back("--hierarchical-context-parallel-sizes");
    a.push_back(std::to_string(inner));
    a.push_back(std::to_string(p.cp / inner));
  }
  if (job.runtime.vocab_divisor != RuntimeOptions::kDefaultVocabDivisor)
    opt(a, "--make-vocab-size-divisible-by", job.runtime.vocab_divisor);
  // Precision.
  switch (job.training.precision) {
    case Precision::fp16: flag(a, "--fp16"); break;
    case Precision::bf16: flag(a, "--bf16"); break;
    case Precision::fp8:
      // Transformer Engine's recipe: fp8 ones through --fp8-recipe (delayed is Megatron's default),
      // NVFP4 through the fp4 flags (arguments.py; transformer_engine/common/recipe).
      flag(a, "--bf16");
      if (job.training.recipe == LowPrecisionRecipe::nvfp4) {
        opt(a, "--fp4-format", "e2m1");
        opt(a, "--fp4-recipe", "nvfp4");
        if (job.runtime.fp8_param_gather) flag(a, "--fp4-param-gather");
      } else {
        opt(a, "--fp8-format", "hybrid");
        opt(a, "--fp8-recipe", to_string(job.training.recipe));
        if (job.runtime.fp8_param_gather) flag(a, "--fp8-param-gather");
      }
      break;
    case Precision::fp32:
    case Precision::tf32: break;
  }
  return a;
}

LaunchPlan megatron_launch(const Job& job, bool feasible, const std::string& infeasible_reason) {
  LaunchPlan l;
  const ParallelPlan& p = job.plan;
  const int world = p.world_size();
  const int per_node = std::max(1, job.cluster.gpus_per_node);
  l.nproc_per_node = std::min(world, per_node);
  l.nnodes = (world + l.nproc_per_node - 1) / l.nproc_per_node;
  l.num_micro_batches = job.num_micro_batches();
  if (!feasible) {
    l.refused = "the plan is infeasible: " + (infeasible_reason.empty() ? std::string("see prediction.reason") : infeasible_reason);
    return l;
  }
  if (auto why = megatron_launch_refusal(job)) {
    l.refused = *why;
    return l;
  }
  l.megatron_args = megatron_args(job);
  const ModelSpec& m = job.model;
  if (m.moe && m.moe->router_bias && m.moe->router_score_function != "sigmoid")
    l.notes.push_back("the model's router has a linear bias (GPT-OSS); Megatron-Core's router has none (its expert bias is for "
                      "sigmoid routing): the launch trains without it, num_experts parameters per MoE layer fewer");
  if (const unsigned named = launched_cuda_graph_modules(job); named != job.runtime.cuda_graph_modules)
    l.notes.push_back(fmt::format("CUDA graphs of the whole layer stop at a dropless MoE layer's wait for its token counts, which "
                                  "Transformer Engine cannot capture: the launch names the modules strata counts as captured, "
                                  "--cuda-graph-modules {}", fmt::join(cuda_graph_module_names(named), " ")));
  if (m.language_model_of_multimodal)
    l.notes.push_back("the launch (pretrain_gpt.py) trains the language model of the multimodal config alone; its encoders "
                      "need Megatron's multimodal training scripts");
  // megatron/training/arguments.py parses --openai-gelu, and nothing in the pinned snapshot reads it
  // into the layer's activation_func: a flag would change nothing.
  if (m.gelu_tanh_approximation)
    l.notes.push_back("the model's GELU is the tanh approximation (hidden_act gelu_new / gelu_pytorch_tanh); Megatron-LM trains "
                      "erf GELU (its --openai-gelu is parsed but not applied): the launch trains erf GELU, which differs by under "
                      "0.001 per activation");
  // Dynamic NTK (HF _compute_dynamic_ntk_parameters) changes the frequencies only beyond the original
  // positions, which training within them never reaches.
  if (!m.rope_scaling.empty() && m.rope_scaling != "llama3" && m.rope_scaling != "yarn" && m.rope_scaling != "linear")
    l.notes.push_back("rope scaling \"" + m.rope_scaling + "\" is a long-context extension the launch does not set (it does not change "
                      "the cost); add Megatron's flags for it if this run extends the context");
  // Megatron-LM asserts CUDA_DEVICE_MAX_CONNECTIONS=1 with tensor or context parallelism before
  // Blackwell, so kernels queue in issue order and the TP/CP communication overlaps as scheduled
  // (arguments.py validate_args); Megatron-FSDP wants it unset (more than one connection).
  const bool fsdp = p.zero_stage >= 2;
  const int arch = cuda_arch_major(job.cluster.gpu);
  // A GPU of unknown architecture (0: not NVIDIA's) gets it too: Megatron's check asks for it
  // whenever the device does not report Blackwell or later, and it is harmless where unused.
  if ((p.tp > 1 || p.cp > 1) && !fsdp && arch < 10) l.env.emplace_back("CUDA_DEVICE_MAX_CONNECTIONS", "1");
  // Megatron-LM asks for Transformer Engine's first CPU-offload implementation with fine-grained
  // activation offloading (TE >= 2.10), which offloads activations and never weights.
  if (p.offload.modules != 0) l.env.emplace_back("NVTE_CPU_OFFLOAD_V1", "1");
  return l;
}

std::string join_args(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& x : args) {
    if (!s.empty()) s += ' ';
    bool quote = x.find_first_of(" |*()[]$\"'\\;&<>") != std::string::npos;
    s += quote ? "'" + x + "'" : x;
  }
  return s;
}

std::string launch_script(const Job& job, const LaunchPlan& launch) {
  std::string s = "#!/usr/bin/env bash\n";
  s += "# Megatron-LM launch written by strata for " + job.model.name + " on " + std::to_string(job.plan.world_size()) + " x " +
       job.cluster.gpu.name + ".\n";
  if (launch.megatron_args.empty()) {
    s += "# No launch: " + launch.refused + "\n";
    s += "echo 'strata wrote no launch for this plan' >&2\nexit 1\n";
    return s;
  }
  s += "# Run it on every node with NODE_RANK and MASTER_ADDR set; fill in the data and tokenizer below.\n";
  s += "# The prediction assumes the model's tokenizer: a vocabulary of " + std::to_string(job.model.vocab_size) + " tokens.\n";
  s += "set -euo pipefail\n\n";
  for (const auto& [k, v] : launch.env) s += "export " + k + "=" + v + "\n";
  s += "\n# ---- fill these in: your data, tokenizer and checkpoints (strata does not choose them) ----\n";
  s += ": \"${MEGATRON_LM:?set MEGATRON_LM to your Megatron-LM checkout}\"\n";
  s += ": \"${DATA_PATH:?set DATA_PATH to your preprocessed data prefix}\"\n";
  s += ": \"${TOKENIZER_MODEL:?set TOKENIZER_MODEL to your tokenizer (name or path)}\"\n";
  s += "CHECKPOINT_DIR=\"${CHECKPOINT_DIR:-checkpoints}\"\n";
  s += "DATA_ARGS=(--data-path \"$DATA_PATH\" --tokenizer-type HuggingFaceTokenizer --tokenizer-model \"$TOKENIZER_MODEL\" "
       "--split 99,1,0)\n";
  s += "RUN_ARGS=(--train-iters \"${TRAIN_ITERS:-1000}\" --lr \"${LR:-3e-4}\" --min-lr \"${MIN_LR:-3e-5}\" --lr-decay-style cosine "
       "--save \"$CHECKPOINT_DIR\" --load \"$CHECKPOINT_DIR\" --log-interval 1)\n";
  s += "\n# ---- the plan strata predicted (do not edit: these flags are what the prediction is for) ----\n";
  s += "PLAN_ARGS=(\n";
  const auto& a = launch.megatron_args;
  for (std::size_t i = 0; i < a.size(); ++i) {
    s += "  " + join_args({a[i]});
    if (i + 1 < a.size() && !a[i + 1].starts_with("--")) s += fmt::format(" {}", join_args({a[++i]}));
    s += "\n";
  }
  s += ")\n\n";
  s += fmt::format(
      "torchrun --nnodes {} --nproc-per-node {} --node-rank \"${{NODE_RANK:-0}}\" \\\n"
      "  --master-addr \"${{MASTER_ADDR:-localhost}}\" --master-port \"${{MASTER_PORT:-6000}}\" \\\n"
      "  \"$MEGATRON_LM/{}\" \"${{PLAN_ARGS[@]}}\" \"${{DATA_ARGS[@]}}\" \"${{RUN_ARGS[@]}}\"\n",
      launch.nnodes, launch.nproc_per_node, job.model.hybrid() ? "pretrain_hybrid.py" : "pretrain_gpt.py");
  return s;
}

void write_launch_script(const std::string& dir, const std::string& script) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) throw InputError("command line", "--emit-launch", "cannot create the directory \"" + dir + "\"");
  const std::string path = (fs::path(dir) / "launch.sh").string();
  write_output_file(path, script, "--emit-launch");
  fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec, fs::perm_options::add, ec);
  if (ec) throw InputError("command line", "--emit-launch", "cannot make \"" + path + "\" executable: " + ec.message());
}

}  // namespace strata
