#pragma once
// The application description (Calculon's split): the shape of a decoder-only transformer.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata {

// geglu: gated GELU (Gemma's GeGLU), the same three-matrix shape as SwiGLU.
// squared_relu: relu(x)^2, the non-gated MLP of Nemotron-4 (Megatron --squared-relu).
// quick_geglu: GPT-OSS's gated unit, x*sigmoid(1.702x) of the clamped gate times (up + 1) (HF
// modeling_gpt_oss.py GptOssExperts; Megatron --quick-geglu with ModelSpec::glu_linear_offset and
// activation_clamp).
enum class Activation { gelu, swiglu, geglu, squared_relu, quick_geglu };
enum class Normalization { layernorm, rmsnorm };
// none: no position information in the layers (Nemotron-H's attention layers; Megatron
// --position-embedding-type none).
enum class PositionEmbedding { learned, rope, alibi, none };

struct MoeSpec {
  int num_experts = 0;  // routed experts
  int top_k = 0;
  std::int64_t expert_ffn_hidden_size = 0;
  // Total FFN size of the shared (always-active) experts of an MoE layer: n_shared_experts *
  // moe_intermediate_size (Megatron --moe-shared-expert-intermediate-size); 0 = none.
  std::int64_t shared_expert_ffn_hidden_size = 0;
  // A sigmoid gate (a hidden -> 1 linear) scales the shared expert's output per token (Qwen2-MoE's
  // shared_expert_gate; Megatron --moe-shared-expert-gate). Its work is not costed (one GEMV).
  bool shared_expert_gate = false;
  // One entry per decoder layer: 1 = MoE layer, 0 = dense MLP of ModelSpec::ffn_hidden_size
  // (Megatron --moe-layer-freq list form). Empty = every layer is an MoE layer.
  std::vector<int> layer_pattern;
  // Router score function: "softmax" (Mixtral, Qwen, DeepSeek-V2, GPT-OSS) or "sigmoid"
  // (DeepSeek-V3, Kimi-K2; Megatron --moe-router-score-function).
  std::string router_score_function = "softmax";
  // A learned per-expert router bias (GPT-OSS's router linear bias, DeepSeek-V3's
  // e_score_correction_bias; Megatron --moe-router-enable-expert-bias for the latter).
  bool router_bias = false;
  // Group-limited routing (DeepSeek-V3 n_group/topk_group; Megatron --moe-router-num-groups,
  // --moe-router-group-topk): experts in num_groups groups, a token picks experts from its best
  // group_topk groups only; 0 = no groups. Megatron scores a group by the sum of its top
  // (top_k / group_topk) experts, as DeepSeek-V3's noaux_tc does; DeepSeek-V2's
  // group_limited_greedy scores it by its best expert (group_by_max_score), which no flag says.
  int num_groups = 0;
  int group_topk = 0;
  bool group_by_max_score = false;
  // routed_scaling_factor: the routed experts' weights are multiplied by it (Megatron
  // --moe-router-topk-scaling-factor); 0 = none.
  double topk_scaling_factor = 0;
  // Latent MoE (Nemotron 3 Super's moe_latent_size; Megatron-Core MoELayer fc1/fc2_latent_proj,
  // --moe-latent-size): each token is projected from the hidden size down to this width before the
  // dispatch and back up after the combine, by linears replicated on every TP rank ("duplicated");
  // the routed experts map latent -> ffn -> latent. The router and the shared experts read the
  // hidden state. 0 = none.
  std::int64_t latent_size = 0;
  // norm_topk_prob: the top-k weights renormalized to sum to 1 (Megatron's softmax after top-k and
  // its sigmoid router); false: softmax over all experts, then top-k (--moe-router-pre-softmax).
  bool normalize_top_k = true;
  // The experts are chosen on Sinkhorn-balanced scores (S-BASE; Megatron-Core
  // --moe-router-load-balancing-type sinkhorn, router.py sinkhorn_load_balancing), weighted by the
  // sigmoid of the logit for top-1 and the softmax for top-k; the score function, pre-softmax,
  // groups and expert bias do not apply. The same router cost: a few passes over [tokens, experts].
  bool sinkhorn = false;
  bool operator==(const MoeSpec&) const = default;
};

// The numbers of a Hugging Face rope_scaling (HF modeling_rope_utils.py), with HF's defaults where a
// key is absent. llama3: factor, low/high_freq_factor, original_max_position. yarn: factor,
// original_max_position, beta_fast/slow, mscale/mscale_all_dim (an mscale pair is used only when both
// are given; otherwise 1 and 0, Megatron's defaults, which give HF's 0.1*ln(factor)+1) and truncate
// (round the correction range to whole dimensions).
struct RopeScalingParams {
  double factor = 1;
  double low_freq_factor = 1;
  double high_freq_factor = 4;
  std::int64_t original_max_position = 0;
  double beta_fast = 32;
  double beta_slow = 1;
  double mscale = 1;
  double mscale_all_dim = 0;
  bool truncate = true;
  bool operator==(const RopeScalingParams&) const = default;
};

// Multi-latent attention (DeepSeek-V2, arXiv:2405.04434 §2.1; Megatron --multi-latent-attention).
struct MlaSpec {
  std::int64_t q_lora_rank = 0;  // 0: queries are not compressed (DeepSeek-V2-Lite)
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  bool operator==(const MlaSpec&) const = default;
};

// DeepSeek Sparse Attention (DeepSeek-V3.2, arXiv:2512.02556 §2.1; GLM-5; Megatron-Core
// experimental_attention_variant/dsa.py, --experimental-attention-variant dsa). A lightning indexer
// (index_heads x index_head_dim, ReLU scores weighted per head) scores every earlier key of each
// query; the query then attends to its index_topk best keys only, with MLA in its absorbed form
// (AbsorbedMLASelfAttention: each head reads the shared kv latent and rope key, kv_lora_rank +
// qk_rope_head_dim channels, and writes kv_lora_rank channels that W_UV maps to v_head_dim).
// The indexer's projections are replicated on every TP rank (parallel_mode "duplicated") and run
// on inputs detached from the model; it learns from its own KL loss against the attention's
// distribution (dsa_indexer_loss_coeff) when that is on.
struct DsaSpec {
  std::int64_t index_heads = 0;
  std::int64_t index_head_dim = 0;
  std::int64_t index_topk = 0;
  // Cross-layer top-k sharing (GLM-5.2's index_topk_freq / index_skip_topk_offset; Megatron
  // is_dsa_skip_topk_layer): past the first `offset` layers only every freq-th layer runs the
  // indexer, the others reuse its top-k. freq 1: every layer runs its own.
  int topk_freq = 1;
  int skip_topk_offset = 0;
  bool rope_interleaved = false;  // indexer_rope_interleave: the launch's --dsa-indexer-rope-interleaved
  bool rotate_activation = true;  // the indexer's Hadamard rotation of q and k (DeepSeek's reference; GLM-5 without)
  // The indexer's KL loss: its coefficient (0: off, the indexer is frozen) and whether it is taken
  // over the top-k keys only. A training setting, not in config.json: the default is what
  // Megatron-Bridge's GLM-5 provider sets (glm5_bridge.py: 0.001, sparse), a default, not a
  // measurement of any run.
  double indexer_loss_coeff = 0.001;
  bool sparse_indexer_loss = true;
  // Does 1-based decoder layer `layer` run its own indexer (Megatron dsa.py is_dsa_skip_topk_layer)?
  bool computes_topk(int layer) const;
  bool operator==(const DsaSpec&) const = default;
};

// Mamba-2's selective state-space mixer (Dao & Gu 2024, "Transformers are SSMs", arXiv:2405.21060
// §7; Megatron-Core ssm/mamba_mixer.py MambaMixer, --mamba-*; HF NemotronHConfig). in_proj maps the
// hidden state to z, x (num_heads x head_dim each), B, C (num_groups x state_dim each) and one dt per
// head; a depthwise causal conv1d (conv_kernel taps) runs over x, B, C; the SSD scan (chunks of
// chunk_size tokens) gives y, gated by silu(z), group-RMS-normed, and out_proj maps it back.
struct MambaSpec {
  int num_heads = 0;
  std::int64_t head_dim = 64;
  std::int64_t state_dim = 128;
  int num_groups = 8;
  int conv_kernel = 4;
  int chunk_size = 128;
  std::int64_t d_inner() const { return num_heads * head_dim; }
  std::int64_t in_proj_width() const { return 2 * d_inner() + 2 * num_groups * state_dim + num_heads; }  // z x B C dt
  std::int64_t conv_channels() const { return d_inner() + 2 * num_groups * state_dim; }                // x B C
  bool operator==(const MambaSpec&) const = default;
};

// Gated DeltaNet (Yang, Kautz & Hatamizadeh 2024, arXiv:2412.06464; Megatron-Core
// ssm/gated_delta_net, --linear-*; HF Qwen3NextGatedDeltaNet): in_proj maps the hidden state to q, k
// (num_key_heads x key_head_dim each), v, z (num_value_heads x value_head_dim each) and a beta and
// alpha per value head; a depthwise causal conv1d (conv_kernel taps, no bias) runs over q, k, v;
// the gated delta rule runs chunk by chunk (FLA's chunk_gated_delta_rule, chunks of chunk_size
// tokens) with q and k repeated to the value heads; a gated RMSNorm (by z, per value head) and
// out_proj map it back.
struct GdnSpec {
  int num_key_heads = 16;
  int num_value_heads = 32;
  std::int64_t key_head_dim = 128;
  std::int64_t value_head_dim = 128;
  int conv_kernel = 4;
  int chunk_size = 64;
  std::int64_t qk_dim() const { return num_key_heads * key_head_dim; }
  std::int64_t v_dim() const { return num_value_heads * value_head_dim; }
  std::int64_t in_proj_width() const { return 2 * qk_dim() + 2 * v_dim() + 2 * num_value_heads; }  // q k v z beta alpha
  std::int64_t conv_channels() const { return 2 * qk_dim() + v_dim(); }                           // q k v
  bool operator==(const GdnSpec&) const = default;
};

// What one layer of a model holds. A transformer's decoder layer holds an attention and an MLP;
// a hybrid model (Megatron-Core HybridModel, --hybrid-layer-pattern) stacks layers that hold one
// of them each: attention ("*"), a Mamba-2 mixer ("M"), a gated DeltaNet ("G"), a dense MLP ("-")
// or an MoE ("E").
enum class Sublayer : unsigned char { decoder, attention, mamba, mlp, gdn };

// What sets one layer's cost apart from another's: an MoE or a dense MLP, a sliding-window or full
// attention, what the layer holds.
struct LayerKind {
  bool moe = false;
  bool sliding_window = false;
  bool bf16 = false;  // a layer kept in bf16 in an fp8/fp4 run (layer_kind(const Job&, int))
  Sublayer part = Sublayer::decoder;
  bool operator==(const LayerKind&) const = default;
  bool has_attention() const { return part == Sublayer::decoder || part == Sublayer::attention; }
  bool has_mlp() const { return part == Sublayer::decoder || part == Sublayer::mlp; }
  bool has_mamba() const { return part == Sublayer::mamba; }
  bool has_gdn() const { return part == Sublayer::gdn; }
  // The kind's slot, 0..kCount-1, in tables that keep one value per kind.
  static constexpr int kCount = 40;
  int index() const { return 8 * static_cast<int>(part) + (bf16 ? 4 : 0) + (moe ? 2 : 0) + (sliding_window ? 1 : 0); }
};

struct ModelSpec {
  std::string name;
  std::vector<std::string> aliases;
  std::string source;
  int num_layers = 0;
  std::int64_t hidden_size = 0;
  int num_attention_heads = 0;
  int num_query_groups = 0;  // GQA; equals num_attention_heads for MHA
  std::int64_t ffn_hidden_size = 0;
  std::int64_t vocab_size = 0;
  std::int64_t max_seq_length = 0;
  Activation activation = Activation::gelu;
  Normalization normalization = Normalization::layernorm;
  bool tied_embeddings = true;
  PositionEmbedding position_embedding = PositionEmbedding::learned;
  bool dropout = false;  // hidden + attention dropout during training (GPT-3/Megatron GPT: yes)
  // Head dimension when it is not hidden/heads (Qwen3, Gemma, GLM-4.5, GPT-OSS; Megatron
  // --kv-channels); 0 = hidden/heads.
  std::int64_t kv_channels = 0;
  // Biases on every linear layer (GPT-2/3, BLOOM, MPT, Falcon-style; Megatron
  // --disable-bias-linear when false). Llama/Mistral/Qwen/DeepSeek: false.
  bool add_linear_bias = true;
  bool add_qkv_bias = false;  // bias on the QKV projection only (Qwen2, GLM-4; Megatron --add-qkv-bias)
  // Biases on a set of linears Megatron-LM cannot bias alone: the attention's output projection
  // without the MLP's linears (the Llama recipe's attention_bias biases q/k/v/o_proj: HF
  // LlamaAttention, Qwen3, OLMo-2, Granite, Gemma, DeepSeek-V2/3), or the MLP's without the
  // attention's (mlp_bias alone). Megatron-LM biases every linear (--add-bias-linear) or the QKV
  // projection only (--add-qkv-bias). Under 0.01% of a layer's parameters and time, not counted;
  // not launchable.
  bool partial_linear_biases = false;
  // Per-head query/key norms (Qwen3, OLMo-2, Gemma-3; Megatron --qk-layernorm); with MLA the norms
  // of the q and kv latents (DeepSeek q_a_layernorm, kv_a_layernorm), which Megatron builds only
  // with --qk-layernorm (gpt_layer_specs.py: linear_q/kv_up_proj take the layer norm then).
  bool qk_layernorm = false;
  // Llama 4's weightless L2 norm of queries and keys (HF Llama4TextL2Norm; Megatron --qk-l2-norm).
  bool qk_l2_norm = false;
  // The query and key norms span all heads' channels, one RMSNorm over num_heads x head_dim (OLMo-2
  // and -3: Olmo2Attention q_norm/k_norm; MiniMax-M2's qk_norm_type "per_layer"), where Megatron's
  // --qk-layernorm norms each head. Costed as per-head norms (the same work); not launchable.
  bool qk_norm_across_heads = false;
  // Each sublayer's output is normalized before the residual add, and its input is not (OLMo-2 and
  // -3: post_attention_layernorm, post_feedforward_layernorm); Megatron's layers normalize their
  // inputs. The same norms' work; not launchable.
  bool norm_after_sublayers = false;
  // Norms on both sides of each sublayer: its input, and its output before the residual add (Gemma 2
  // and 3: post_attention_layernorm, pre/post_feedforward_layernorm; GLM-4-0414: Glm4DecoderLayer's
  // post_self_attn_layernorm and post_mlp_layernorm). Two norm passes per layer more than costed
  // (well under 1% of a layer); no Megatron-LM flag adds them: not launchable.
  bool norm_around_sublayers = false;
  // A norm right after the embedding (BLOOM: HF BloomModel word_embeddings_layernorm; Megatron-
  // DeepSpeed --embed-layernorm). Its input, the whole embedding output, is kept for its backward
  // on the first stage for every micro-batch in flight (memory model); its 2h parameters and one
  // norm pass per micro-batch are not costed (well under 0.1%). Megatron-LM has no such norm: not
  // launchable.
  bool embedding_norm = false;
  // Attention and MLP read the same normalized input and both outputs join the residual at once
  // (parallel residual: GPT-J, GPT-NeoX, Falcon, Phi-1/2, Cohere). Costed as the sequential layer,
  // the same work; Megatron-LM's layers run the MLP on the attention's output: not launchable.
  bool parallel_attention_mlp = false;
  // Scalar multipliers outside Megatron-LM's layer: on the embedding, the residual branches, the
  // attention scores or the logits (Granite's embedding/residual/attention multipliers and
  // logits_scaling, Cohere's logit_scale, MiniCPM's scale_emb/scale_depth). Free in time and
  // memory; a launch without them trains another model.
  bool scalar_multipliers = false;
  // Adjacent layers share one layer's keys and values (cross-layer attention: Hunyuan-Large's
  // use_cla, cla_share_factor). Costed as if every layer projected its own (the K/V share of the
  // QKV projection, a few % of a layer); Megatron-LM has no such layer: not launchable.
  bool kv_shared_across_layers = false;
  // SwiGLU clamp limits set layer by layer (K-EXAONE's swiglu_limits: Megatron-Bridge's
  // ExaoneMoeDecoderLayer sets activation_func_clamp_value per layer). Free in time and memory;
  // Megatron-LM's one --activation-func-clamp-value applies to every MoE layer alike: not launchable.
  bool per_layer_activation_clamp = false;
  // A learned per-head attention sink in the softmax's denominator (GPT-OSS's sinks; Megatron
  // --softmax-type learnable).
  bool attention_sinks = false;
  // Gated MLP details of GPT-OSS (Activation::quick_geglu): (up + offset), both halves clamped at
  // +-activation_clamp (Megatron --glu-linear-offset, --activation-func-clamp-value; 0 = none).
  double glu_linear_offset = 0;
  double activation_clamp = 0;
  // Norm gains stored as gamma - 1 (Nemotron's LayerNorm1P; Megatron --apply-layernorm-1p): the same
  // cost, another parametrization (weight decay pulls the gain towards 1, not 0).
  bool zero_centered_gamma = false;
  // The language model of a multimodal config (text_config beside a vision_config or
  // audio_config: Llama 4, Gemma 3, Mistral 3, Qwen-VL, GLM-4.xV): strata costs and launches the
  // decoder only; the encoders and their projector are left out, and the prediction says so.
  bool language_model_of_multimodal = false;
  // GELU by its tanh approximation (HF hidden_act gelu_new, gelu_fast, gelu_pytorch_tanh; GPT-2,
  // StarCoder, Gemma's gelu_pytorch_tanh), not erf's. The same cost; Megatron-LM's --openai-gelu is
  // parsed but sets no activation in the pinned snapshot, so a launch trains erf GELU (a note).
  bool gelu_tanh_approximation = false;
  double rotary_base = 10000;       // rope_theta (rope models only)
  double rotary_percent = 1.0;      // partial rotary (GLM, GPT-NeoX, Phi; Megatron --rotary-percent)
  double norm_epsilon = 1e-5;       // rms_norm_eps / layer_norm_eps
  std::string rope_scaling;         // "" none, else Hugging Face rope_scaling.rope_type ("llama3", "yarn")
  RopeScalingParams rope_params;    // rope_scaling's numbers, meaningful when rope_scaling is set
  // Layers without rotary embedding, one entry per layer (1 = no RoPE: Llama 4's and SmolLM3's
  // every fourth "NoPE" layer; Megatron --no-rope-freq); empty: every layer rotates. The cost model
  // still counts the fused rope kernel there (one pass over q and k, well under 1% of a layer).
  std::vector<int> no_rope_layers;
  // Chunked attention (Llama 4: its RoPE layers attend only within chunks of this many tokens; 0 =
  // none). Below that sequence length it is causal attention; beyond it strata does not model it and
  // Megatron-LM cannot run it (check_plan refuses).
  std::int64_t attention_chunk_size = 0;
  // Sliding-window (local) attention: the window in tokens (0 = none) and which layers use it, one
  // entry per layer (1 = sliding window, 0 = full attention). An empty pattern with a window means
  // every layer uses the window (Mistral 7B v0.1). GPT-OSS alternates [1, 0, 1, 0, ...]; Gemma-3
  // has five local layers per global one. full_attention_every() gives Megatron's
  // --window-attn-skip-freq when the pattern is that periodic form.
  std::int64_t sliding_window = 0;
  std::vector<int> sliding_window_pattern;
  std::optional<MoeSpec> moe;
  std::optional<MlaSpec> mla;
  std::optional<DsaSpec> dsa;  // needs mla (validate_model)
  // A hybrid model's layers, one Megatron symbol each (hybrid_layer_allocation.py Symbols): "M"
  // Mamba-2, "*" attention, "-" dense MLP, "E" MoE (Nemotron-H's hybrid_override_pattern). Empty:
  // every layer is a transformer decoder layer. num_layers counts the symbols.
  std::string hybrid_pattern;
  std::optional<MambaSpec> mamba;  // the "M" layers' mixer (validate_model: needed iff the pattern has one)
  std::optional<GdnSpec> gdn;      // the "G" layers' mixer (likewise)
  // A sigmoid gate per query channel on the attention output, from a query projection of twice the
  // width (Qwen3-Next, Qwen3.5: HF attn_output_gate; Megatron --attention-output-gate).
  bool attention_output_gate = false;
  // A hybrid model's MTP module holds these layers (Nemotron 3 Super's mtp_hybrid_override_pattern
  // "*E"; Megatron's unified pattern "main/mtp/..."), in place of a decoder layer of the last kind.
  std::string hybrid_mtp_pattern;
  // Multi-token prediction depth (DeepSeek-V3 report §2.2, Hugging Face num_nextn_predict_layers;
  // Megatron --mtp-num-layers), trained with the model: each MTP module normalizes the hidden
  // state and the embedding of the next token, projects their concatenation (2h -> h), runs one
  // decoder layer of the last layer's kind and its own logits and loss through the shared output
  // layer, all on the last pipeline stage (Megatron-Core multi_token_prediction.py). 0 = none.
  int mtp_layers = 0;
  // The MTP depths run one shared module, its weights once, computed mtp_layers times (Megatron-Core
  // TransformerConfig.mtp_use_repeated_layer, --mtp-use-repeated-layer; Megatron-Bridge's Nemotron 3
  // recipes train two depths so from a checkpoint's one).
  bool mtp_repeated_layer = false;
  // MTP modules that hold their own weights: 1 when the depths share one, else mtp_layers.
  int mtp_weight_copies() const { return mtp_repeated_layer && mtp_layers > 0 ? 1 : mtp_layers; }
  // The layers of a hybrid model's MTP module where its config gives none: NemotronHConfig's
  // default, attention then the model's MLP kind (MoE where it has experts).
  std::string default_hybrid_mtp_pattern() const { return moe ? "*E" : "*-"; }
  // Trains `n` MTP modules (a launch's or recipe's depth over the config's): none drops the MTP
  // pattern and the shared module; a hybrid model without an MTP pattern gets the default one.
  void set_mtp_layers(int n) {
    mtp_layers = n;
    if (n == 0) {
      hybrid_mtp_pattern.clear();
      mtp_repeated_layer = false;
    } else if (!hybrid_pattern.empty() && hybrid_mtp_pattern.empty()) {
      hybrid_mtp_pattern = default_hybrid_mtp_pattern();
    }
  }

  std::int64_t head_dim() const { return kv_channels > 0 ? kv_channels : hidden_size / num_attention_heads; }
  std::int64_t kv_hidden() const { return head_dim() * num_query_groups; }
  std::int64_t q_hidden() const { return head_dim() * num_attention_heads; }
  bool gated_mlp() const {
    return activation == Activation::swiglu || activation == Activation::geglu || activation == Activation::quick_geglu;
  }
  bool is_moe_layer(int layer) const;
  int num_moe_layers() const;
  bool uses_sliding_window(int layer) const;
  bool hybrid() const { return !hybrid_pattern.empty(); }
  // The symbol of 0-based layer `layer` of a hybrid model, 0 outside it or for a transformer.
  char hybrid_symbol(int layer) const {
    return layer >= 0 && layer < static_cast<int>(hybrid_pattern.size()) ? hybrid_pattern[static_cast<std::size_t>(layer)] : '\0';
  }
  int count_hybrid(char symbol) const;
  LayerKind layer_kind(int layer) const;
  // The kind of layer a hybrid symbol stands for.
  LayerKind hybrid_kind(char symbol) const;
  // The layers of one MTP module: its hybrid pattern's, or one decoder layer of the last layer's kind.
  std::vector<LayerKind> mtp_layer_kinds() const;
  // Parameters of a layer of `kind` with `experts` of its routed experts counted (a hybrid layer's
  // part and its norm; a decoder layer's attention, MLP and norms, without a DSA indexer).
  double kind_params(LayerKind kind, double experts) const;
  // Every layer of the same kind (no MoE, sliding-window or hybrid pattern): layer 0 stands for all.
  bool uniform_layers() const {
    return !hybrid() && (!moe || moe->layer_pattern.empty()) && (sliding_window <= 0 || sliding_window_pattern.empty());
  }
  // N when layer i (1-based) uses full attention exactly when i % N == 0, every other layer the
  // window (Megatron --window-attn-skip-freq); 0 when there is no window or no such period.
  int full_attention_every() const;

  // Parameters of parts of one decoder layer (weights + biases + norm gains).
  double attention_params() const;
  // The DSA indexer's parameters in a layer that runs one (0 without DSA), replicated on every TP
  // rank; those of 0-based layer `layer` (0 where it reuses another layer's top-k); the share of
  // layers that run one (1 without top-k sharing, 0 without DSA).
  double indexer_params() const;
  double indexer_params_at(int layer) const;
  double indexer_share() const;
  double dense_mlp_params() const;
  double expert_params() const;  // one routed expert
  double shared_expert_params() const;
  double router_params() const;
  double moe_latent_params() const;  // an MoE layer's latent down and up projections (0 without latent MoE)
  // The width the routed experts read and write: the latent size, or the hidden size.
  std::int64_t expert_width() const { return moe && moe->latent_size > 0 ? moe->latent_size : hidden_size; }
  double layer_norm_params() const;  // the layer's two norms
  double norm_params() const;        // one norm (a hybrid layer has one)
  double mamba_params() const;       // a Mamba-2 mixer: in_proj, conv1d, dt bias, A, D, norm, out_proj
  double gdn_params() const;         // a gated DeltaNet: in_proj, conv1d, dt bias, A, norm, out_proj
  double layer_params_at(int layer) const;
  // Active parameters of one layer per token: top_k routed experts, shared experts, router.
  double active_layer_params_at(int layer) const;
  // Mean parameters per decoder layer (exact for dense models).
  double layer_params() const;
  // Parameters of the mtp_layers MTP modules: a decoder layer of the last layer's kind, the 2h x h
  // projection and three norms each (the embedding and output layer are shared). Not part of
  // total_params(): DeepSeek-V3's 671B leaves its MTP module out (685B with it on Hugging Face).
  double mtp_params() const;
  // One MTP module's own parameters around its decoder layer: the 2h x h projection and three norms.
  double mtp_head_params() const;
  // Embedding table (+ learned positions) and, when untied, the output layer.
  double embedding_params(std::int64_t seq_length) const;
  double total_params(std::int64_t seq_length) const;
  double total_params() const { return total_params(max_seq_length); }
  // Parameters one token passes through: every non-expert parameter, top_k routed experts and the
  // shared experts, both embedding tables (the convention of DeepSeek-V3's 37B and Qwen3's
  // "A3B"/"A22B"; OpenAI's 5.1B for GPT-OSS-120B leaves the input embedding out). Learned
  // positions count up to seq_length, as in total_params.
  double active_params(std::int64_t seq_length) const;
  double active_params() const { return active_params(max_seq_length); }

  bool operator==(const ModelSpec&) const = default;
};

// Parses strata's model JSON (models/*.json) or a Hugging Face config.json (detected by
// "architectures"/"model_type" or HF key names). `where` names the file in error messages.
// `path`: the JSON path of the object inside its file ("" at the top, "/model" in a plan).
ModelSpec model_from_json(const nlohmann::json& j, const std::string& where, const std::string& path = "");
nlohmann::json model_to_json(const ModelSpec& m);
// A per-layer 0/1 list marking every nth layer (layers n, 2n, ... counted from 1): the no-RoPE layers
// of Megatron's --no-rope-freq n and of Hugging Face's no_rope_layer_interval.
std::vector<int> every_nth_layer(int num_layers, std::int64_t n);
// A transformer's decoder layers as Megatron-Core's HybridModel stacks them: decoder layer i becomes
// a mixer layer (`mixers[i]`: '*' softmax attention, 'G' gated DeltaNet) and its MLP layer ('E' on an
// MoE layer, '-' else), and an MTP module a softmax-attention layer and the model's MLP (Megatron's
// GPT MTP layer). num_layers doubles; the MoE layers are placed by the pattern from then on.
void split_into_hybrid_layers(ModelSpec& m, const std::string& mixers);
// Structural checks (hidden divisible by heads, ...); throws InputError.
void validate_model(const ModelSpec& m, const std::string& where, const std::string& path = "");

const char* to_string(Activation a);
const char* to_string(Normalization n);
const char* to_string(PositionEmbedding p);

}  // namespace strata
