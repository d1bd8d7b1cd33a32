#include "costmodel/model_spec.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <utility>

#include "costmodel/json_reader.h"

namespace strata {

namespace {

constexpr std::int64_t kMaxDim = std::int64_t{1} << 24;  // 16M: far beyond any real hidden/vocab size
constexpr std::int64_t kMaxLayers = 100000;
constexpr std::int64_t kMaxMtpLayers = 64;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

Activation parse_activation(const JsonReader& r, const std::string& key) {
  std::string v = lower(r.get_string(key));
  if (v == "gelu" || v == "gelu_new" || v == "gelu_pytorch_tanh" || v == "gelu_fast") return Activation::gelu;
  if (v == "swiglu" || v == "silu" || v == "swish") return Activation::swiglu;
  if (v == "geglu") return Activation::geglu;
  if (v == "squared_relu" || v == "relu2") return Activation::squared_relu;
  if (v == "quick_geglu") return Activation::quick_geglu;
  r.fail(key, "expected \"gelu\", \"swiglu\" or \"squared_relu\", found \"" + v +
                  "\" (\"geglu\", Gemma's gated GELU, and \"quick_geglu\", GPT-OSS's, are accepted too)");
}

Normalization parse_norm(const JsonReader& r, const std::string& key) {
  std::string v = lower(r.get_string(key));
  if (v == "layernorm") return Normalization::layernorm;
  if (v == "rmsnorm") return Normalization::rmsnorm;
  r.fail(key, "expected \"layernorm\" or \"rmsnorm\", found \"" + v + "\"");
}

PositionEmbedding parse_pos(const JsonReader& r, const std::string& key) {
  std::string v = lower(r.get_string(key));
  if (v == "learned" || v == "absolute") return PositionEmbedding::learned;
  if (v == "rope") return PositionEmbedding::rope;
  if (v == "alibi") return PositionEmbedding::alibi;
  if (v == "none") return PositionEmbedding::none;
  r.fail(key, "expected \"learned\", \"rope\", \"alibi\" or \"none\", found \"" + v + "\"");
}

bool looks_like_hf(const json& j) {
  return j.is_object() && (j.contains("architectures") || j.contains("model_type") ||
                           j.contains("num_hidden_layers") || j.contains("n_layer") || j.contains("text_config"));
}

bool one_of(const std::string& v, std::initializer_list<const char*> set) {
  for (const char* s : set)
    if (v == s) return true;
  return false;
}

// A per-layer 0/1 list (moe_layer_pattern, sliding_window_pattern): num_layers entries of 0 or 1.
// Multi-latent attention dims, under the same key names in a Hugging Face config.json (top level)
// and in strata's model JSON ("mla" object).
MlaSpec read_mla(const JsonReader& r) {
  MlaSpec a;
  a.q_lora_rank = r.opt_int("q_lora_rank", 0, kMaxDim).value_or(0);
  a.kv_lora_rank = r.get_int("kv_lora_rank", 1, kMaxDim);
  a.qk_nope_head_dim = r.get_int("qk_nope_head_dim", 1, kMaxDim);
  a.qk_rope_head_dim = r.get_int("qk_rope_head_dim", 1, kMaxDim);
  a.v_head_dim = r.get_int("v_head_dim", 1, kMaxDim);
  return a;
}

// DeepSeek Sparse Attention's indexer, under the same key names in a Hugging Face config.json (top
// level: DeepSeek-V3.2's deepseek_v32, GLM-5's glm_moe_dsa) and in strata's model JSON ("dsa"
// object, with the launch settings beside them).
DsaSpec read_dsa(const JsonReader& r, bool strata_json) {
  DsaSpec d;
  d.index_heads = r.get_int(strata_json ? "index_heads" : "index_n_heads", 1, kMaxDim);
  d.index_head_dim = r.get_int("index_head_dim", 1, kMaxDim);
  d.index_topk = r.get_int("index_topk", 1, kMaxDim * 64);
  d.topk_freq = static_cast<int>(r.opt_int(strata_json ? "topk_freq" : "index_topk_freq", 1, kMaxLayers).value_or(1));
  d.skip_topk_offset = static_cast<int>(r.opt_int(strata_json ? "skip_topk_offset" : "index_skip_topk_offset", 0, kMaxLayers).value_or(0));
  d.rope_interleaved = r.opt_bool(strata_json ? "rope_interleaved" : "indexer_rope_interleave", false);
  if (strata_json) {
    d.rotate_activation = r.opt_bool("rotate_activation", true);
    if (r.has("indexer_loss_coeff")) {
      const double c = r.get_number("indexer_loss_coeff");
      if (!(c >= 0 && c <= 1e3)) r.fail("indexer_loss_coeff", "expected a number from 0 (indexer frozen) to 1000");
      d.indexer_loss_coeff = c;
    }
    d.sparse_indexer_loss = r.opt_bool("sparse_indexer_loss", true);
  }
  return d;
}

// Mamba-2's shape, in strata's model JSON ("mamba" object) or a Hugging Face NemotronHConfig (top
// level; HF's defaults where a key is absent: configuration_nemotron_h.py).
MambaSpec read_mamba(const JsonReader& r, bool strata_json) {
  MambaSpec mb;
  mb.num_heads = static_cast<int>(strata_json ? r.get_int("num_heads", 1, kMaxDim) : r.opt_int("mamba_num_heads", 1, kMaxDim).value_or(128));
  mb.head_dim = r.opt_int(strata_json ? "head_dim" : "mamba_head_dim", 1, kMaxDim).value_or(64);
  mb.state_dim = r.opt_int(strata_json ? "state_dim" : "ssm_state_size", 1, kMaxDim).value_or(128);
  mb.num_groups = static_cast<int>(r.opt_int(strata_json ? "num_groups" : "n_groups", 1, kMaxDim).value_or(8));
  mb.conv_kernel = static_cast<int>(r.opt_int("conv_kernel", 1, 64).value_or(4));
  mb.chunk_size = static_cast<int>(r.opt_int("chunk_size", 1, 1 << 16).value_or(128));
  return mb;
}

// Gated DeltaNet's shape, in strata's model JSON ("gdn" object) or a Hugging Face Qwen3-Next /
// Qwen3.5 config (linear_* keys, their defaults where absent: Megatron-Bridge qwen35_bridge.py).
GdnSpec read_gdn(const JsonReader& r, bool strata_json) {
  GdnSpec g;
  g.num_key_heads = static_cast<int>(r.opt_int(strata_json ? "num_key_heads" : "linear_num_key_heads", 1, kMaxDim).value_or(16));
  g.num_value_heads = static_cast<int>(r.opt_int(strata_json ? "num_value_heads" : "linear_num_value_heads", 1, kMaxDim).value_or(32));
  g.key_head_dim = r.opt_int(strata_json ? "key_head_dim" : "linear_key_head_dim", 1, kMaxDim).value_or(128);
  g.value_head_dim = r.opt_int(strata_json ? "value_head_dim" : "linear_value_head_dim", 1, kMaxDim).value_or(128);
  g.conv_kernel = static_cast<int>(r.opt_int(strata_json ? "conv_kernel" : "linear_conv_kernel_dim", 1, 64).value_or(4));
  if (strata_json) g.chunk_size = static_cast<int>(r.opt_int("chunk_size", 1, 1 << 16).value_or(64));
  return g;
}

// ERNIE-4.5 writes some MoE fields either as an integer or as a list with one entry per expert
// pool (text, vision); the text pool is the first (Megatron-Bridge ernie_45_bridge.py takes
// element 0 of moe_num_experts, moe_intermediate_size and moe_layer_start_index).
std::optional<std::int64_t> int_or_first(const JsonReader& r, const char* key, std::int64_t lo, std::int64_t hi) {
  if (!r.has(key)) return std::nullopt;
  const json& v = r.raw(key);
  if (!v.is_array()) return r.get_int(key, lo, hi);
  if (v.empty() || !v[0].is_number_integer() || v[0].get<std::int64_t>() < lo || v[0].get<std::int64_t>() > hi)
    r.fail(key, "expected an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + " or a list whose first entry is one");
  return v[0].get<std::int64_t>();
}

// A list of num_layers entries, each mapped to 0 or 1 by `flag` (nullopt: not an allowed entry);
// `expected` completes "expected a list of N" in the error.
template <class Flag>
std::vector<int> read_layer_list(const JsonReader& r, const std::string& key, int num_layers, const std::string& expected, Flag flag) {
  const json& a = r.raw(key);
  const std::string error = "expected a list of " + std::to_string(num_layers) + expected;
  if (!a.is_array() || static_cast<int>(a.size()) != num_layers) r.fail(key, error);
  std::vector<int> out;
  for (const auto& e : a) {
    const std::optional<int> v = flag(e);
    if (!v) r.fail(key, error);
    out.push_back(*v);
  }
  return out;
}

std::vector<int> read_pattern(const JsonReader& r, const std::string& key, int num_layers) {
  return read_layer_list(r, key, num_layers, " entries (one per layer), each 0 or 1", [](const json& e) -> std::optional<int> {
    if (!e.is_number_integer() || (e.get<std::int64_t>() != 0 && e.get<std::int64_t>() != 1)) return std::nullopt;
    return e.get<int>();
  });
}

// Nemotron-H's layers as a list (transformers 5 NemotronHConfig: layers_block_type, alias
// layer_types; mtp_layers_block_type for the MTP modules), written as the hybrid pattern Megatron
// takes: "mamba"/"linear_attention" M, "attention"/"full_attention" *, "mlp" -, "moe" E (the
// config's _list_to_pattern; remap_legacy_layer_types maps the older names). nullopt without a list.
std::optional<std::string> nemotron_h_layer_list(const JsonReader& r, const char* key) {
  if (!r.has(key) || r.raw(key).is_null()) return std::nullopt;
  const json& a = r.raw(key);
  const std::string expected = "expected a non-empty list of \"mamba\", \"attention\", \"mlp\" or \"moe\" (or \"linear_attention\", \"full_attention\"), one per layer";
  if (!a.is_array() || a.empty()) r.fail(key, expected);
  std::string pattern;
  for (const auto& e : a) {
    const std::string v = e.is_string() ? e.get<std::string>() : "";
    if (v == "mamba" || v == "linear_attention") pattern += 'M';
    else if (v == "attention" || v == "full_attention") pattern += '*';
    else if (v == "mlp") pattern += '-';
    else if (v == "moe") pattern += 'E';
    else r.fail(key, expected + ", found " + e.dump());
  }
  return pattern;
}

// The main layers' list key of a Nemotron-H config, if it has one (layers_block_type, else its alias
// layer_types); the list takes precedence over hybrid_override_pattern, as NemotronHConfig reads them.
const char* nemotron_h_list_key(const JsonReader& r) {
  for (const char* k : {"layers_block_type", "layer_types"})
    if (r.has(k) && !r.raw(k).is_null()) return k;
  return nullptr;
}

// DeepSeek-style routing details (HF modeling_deepseek_v3.py and modeling_glm4_moe.py MoEGate /
// TopkRouter): n_group groups of experts of which topk_group are searched, the weights scaled by
// routed_scaling_factor and renormalized when norm_topk_prob. One group is no group.
void read_router_groups(const JsonReader& r, MoeSpec& moe, const std::string& topk_method, const std::string& type) {
  const std::int64_t groups = r.has("n_group") && !r.raw("n_group").is_null() ? r.get_int("n_group", 1, moe.num_experts) : 1;
  if (groups > 1) {
    if (moe.num_experts % groups != 0)
      r.fail("n_group", "does not divide the " + std::to_string(moe.num_experts) + " routed experts");
    moe.num_groups = static_cast<int>(groups);
    moe.group_topk = static_cast<int>(r.get_int("topk_group", 1, groups));
    moe.group_by_max_score = topk_method == "group_limited_greedy";  // DeepSeek-V2
  }
  if (r.has("routed_scaling_factor") && !r.raw("routed_scaling_factor").is_null()) {
    const double f = r.get_positive("routed_scaling_factor", 1e6);
    if (f != 1.0) moe.topk_scaling_factor = f;
  }
  // Without the key, the config class's default: false for Qwen2-MoE, Qwen3-MoE, OLMoE, DeepSeek-V2
  // and dots.llm1 (transformers Qwen3MoeConfig norm_topk_prob: bool = False, and the others'), true
  // for DeepSeek-V3 and GLM-4.5; Mixtral-style routers renormalize by construction.
  moe.normalize_top_k = r.opt_bool("norm_topk_prob", !one_of(type, {"qwen2_moe", "qwen3_moe", "olmoe", "deepseek_v2", "dots1"}));
}

// The numbers of a rope_scaling (or transformers 5 rope_parameters) object, HF's defaults where absent
// (modeling_rope_utils.py _compute_llama3_parameters, _compute_yarn_parameters: the mscale pair only
// when both are given and non-zero; original_max_position_embeddings falls back to the model's).
RopeScalingParams read_rope_scaling_params(const JsonReader& rs, std::int64_t max_positions) {
  RopeScalingParams p;
  auto number = [&](const char* key, double fallback) {
    return rs.has(key) && !rs.raw(key).is_null() ? rs.get_positive(key, 1e9) : fallback;
  };
  p.factor = number("factor", 1);
  p.low_freq_factor = number("low_freq_factor", 1);
  p.high_freq_factor = number("high_freq_factor", 4);
  p.original_max_position = rs.has("original_max_position_embeddings") && !rs.raw("original_max_position_embeddings").is_null()
                                ? rs.get_int("original_max_position_embeddings", 1, kMaxDim * 64)
                                : max_positions;
  p.beta_fast = number("beta_fast", 32);
  p.beta_slow = number("beta_slow", 1);
  const bool pair = rs.has("mscale") && rs.has("mscale_all_dim") && rs.raw("mscale").is_number() &&
                    rs.raw("mscale_all_dim").is_number() && rs.get_number("mscale") != 0 && rs.get_number("mscale_all_dim") != 0;
  if (pair) {
    p.mscale = rs.get_number("mscale");
    p.mscale_all_dim = rs.get_number("mscale_all_dim");
  }
  p.truncate = rs.opt_bool("truncate", true);
  return p;
}

// Hugging Face config.json of the decoder-only families (model_type): llama (2/3/3.1), mistral,
// mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, deepseek_v2, deepseek_v3, kimi_k2, gpt_oss, gemma,
// gemma2, gemma3(_text), glm, glm4, glm4_moe, ernie4_5_moe, minimax_m2, phi3, olmo2, olmo3, falcon,
// gpt_neox, bloom, gpt2, mpt, llama4(_text). Multimodal wrappers (Gemma-3, Llama-4) are read through
// their text_config. Keys not used are ignored on purpose: HF configs carry many unrelated fields.
// Architectures whose layers strata cannot cost (state-space/linear-attention hybrids, sparse
// attention, encoder-decoder, an MoE under unknown keys) are refused with the model_type and the
// unsupported feature.
// A Hugging Face config.json being read: its decoder's keys (`r`; a multimodal config's
// text_config) and its top level's (`top`), the model_type, and the decoder family whose
// architecture the keys describe (a vision-language model's language model is its base family's
// decoder).
struct HfConfig {
  const json& j;  // the decoder's keys
  JsonReader r, top;
  std::string where, path;  // the file, and the JSON path of the decoder's keys
  std::string type, family;
  bool llama_like = false;  // a family with a gated MLP, RMSNorm, RoPE and bias-free linears (the Llama recipe)
  bool gemma = false;       // Gemma 1-3

  [[noreturn]] void refuse(const std::string& key, const std::string& what) const {
    throw InputError(where, path + "/" + key,
                     "model_type \"" + type + "\": " + what + " is not supported by strata's cost model");
  }
  // The first of `keys` the config has, as an integer in [lo, hi].
  std::int64_t pick_int(std::initializer_list<const char*> keys, std::int64_t lo, std::int64_t hi, const char* what) const {
    for (const char* k : keys)
      if (r.has(k)) return r.get_int(k, lo, hi);
    std::string names;
    for (const char* k : keys) names += std::string(names.empty() ? "" : " or ") + k;
    throw InputError(where, path + "/" + std::string(*keys.begin()), std::string("missing ") + what + " (looked for " + names + ")");
  }
};

// Qwen3-Next and Qwen3.5 (HF qwen3_next, qwen3_5, qwen3_5_moe): decoder layers whose mixer is a
// gated DeltaNet or, every full_attention_interval-th layer, gated softmax attention.
bool linear_attention_family(const std::string& type) { return one_of(type, {"qwen3_next", "qwen3_5", "qwen3_5_moe"}); }

// The model_type and the decoder family, refusing the architectures strata does not cost (encoder-
// decoders, hybrids with state-space or linear-attention layers, sparse attention, per-layer
// shapes), naming the key that shows them.
void resolve_family(HfConfig& c, const json& top, bool wrapped, ModelSpec& m) {
  const JsonReader& r = c.r;
  const JsonReader& rtop = c.top;
  std::string& type = c.type;
  if (rtop.has("is_encoder_decoder") && rtop.raw("is_encoder_decoder").is_boolean() && rtop.get_bool("is_encoder_decoder"))
    c.refuse("is_encoder_decoder", "an encoder-decoder model");
  // Nemotron-H's hybrid_override_pattern is read (read_hybrid); other hybrids name their layers
  // otherwise (Jamba, Falcon-H1, Zamba, Qwen3-Next, Kimi Linear).
  // Qwen3-Next's and Qwen3.5's gated DeltaNet layers are read too (read_gated_deltanet_hybrid).
  const bool gdn_family = linear_attention_family(type);
  for (const char* k : {"layers_block_type", "hybrid_override_pattern", "ssm_cfg", "mamba_d_state",
                        "linear_num_value_heads", "attn_layer_period", "linear_attn_config"})
    if (r.has(k) && !(type == "nemotron_h" && one_of(std::string(k), {"hybrid_override_pattern", "layers_block_type"})) &&
        !(gdn_family && std::string_view(k) == "linear_num_value_heads"))
      c.refuse(k, "a hybrid of attention and state-space/linear-attention layers");
  // MiniMax: attn_type_list marks each layer 0 (lightning, a linear attention; MiniMax-Text-01)
  // or 1 (softmax attention). MiniMax-M2 lists only 1s: a plain softmax-attention model.
  if (r.has("attn_type_list")) {
    const json& a = r.raw("attn_type_list");
    if (!a.is_array()) r.fail("attn_type_list", "expected a list of 0 (linear) or 1 (softmax attention) per layer");
    for (const auto& e : a)
      if (!(e.is_number_integer() && e.get<std::int64_t>() == 1))
        c.refuse("attn_type_list", "a hybrid of softmax and linear (lightning) attention layers");
  }
  // layer_types names each layer's mixer: softmax attention (full, sliding-window, or Llama 4's
  // chunked) is what strata costs; linear attention (Qwen3-Next), short convolutions (LFM2),
  // state-space blocks (Granite 4.0 "mamba") are other layers.
  // Nemotron-H's list (read_hybrid) and DeepSeek Sparse Attention layers ("deepseek_sparse_attention",
  // transformers' newer "indexed_attention": GLM-5.2) are read elsewhere; a list mixing DSA with
  // dense attention layers is a per-layer shape strata does not cost.
  int dsa_layers = 0, layer_count = 0;
  if (r.has("layer_types") && r.raw("layer_types").is_array() && type != "nemotron_h")
    for (const auto& e : r.raw("layer_types")) {
      const std::string v = e.is_string() ? e.get<std::string>() : e.dump();
      ++layer_count;
      if (gdn_family && v == "linear_attention") continue;  // a gated DeltaNet layer
      if (v == "deepseek_sparse_attention" || v == "indexed_attention") {
        ++dsa_layers;
        continue;
      }
      if (v.find("linear") != std::string::npos) c.refuse("layer_types", "layer type \"" + v + "\" (linear attention)");
      if (!one_of(v, {"full_attention", "sliding_attention", "chunked_attention"}))
        c.refuse("layer_types", "layer type \"" + v + "\" (strata costs softmax-attention layers: full, sliding-window or chunked)");
    }
  if (dsa_layers > 0 && !r.has("index_topk"))
    c.refuse("layer_types", "DeepSeek Sparse Attention layers without index_topk (the indexer's top-k)");
  if (dsa_layers > 0 && dsa_layers != layer_count)
    c.refuse("layer_types", "DeepSeek Sparse Attention in " + std::to_string(dsa_layers) + " of " + std::to_string(layer_count) +
                                " layers (strata's DSA runs in every layer)");
  // Llama-Nemotron (NAS-derived, HF "nemotron-nas"): per-layer block_configs that drop or replace
  // attention and size each FFN differently.
  if (r.has("block_configs")) c.refuse("block_configs", "per-layer shapes (attention removed or replaced, FFN sizes per layer)");
  // Step-3.5 (Megatron-Bridge step35_bridge.py sliding_attention_setting): its sliding-window layers
  // take their own head count, query groups or head dim from attention_other_setting.
  if (r.has("attention_other_setting") && r.raw("attention_other_setting").is_object()) {
    const json& other = r.raw("attention_other_setting");
    for (const char* k : {"num_attention_heads", "num_attention_groups", "num_key_value_heads", "head_dim"})
      if (other.contains(k) && !(r.has(k) && r.raw(k) == other[k]))
        c.refuse("attention_other_setting", "sliding-window layers with their own attention shape (" + std::string(k) + ")");
  }
  // MiMo-V2: sliding-window layers with their own number of KV heads, in a per-layer pattern.
  for (const char* k : {"hybrid_layer_pattern", "swa_num_key_value_heads"})
    if (r.has(k)) c.refuse(k, "sliding-window layers with their own attention shape");
  // DeepSeek-V4's other parts (Megatron-Bridge deepseek_v4_bridge.py): hyper-connections (hc_mult
  // residual streams mixed per layer), compressed sparse attention (compress_ratios per layer), a
  // low-rank grouped output projection (o_lora_rank, o_groups), hash-routed MoE layers
  // (num_hash_layers). Refused, never costed as DeepSeek-V3.2's layers.
  if (r.has("hc_mult") && !(r.raw("hc_mult").is_number() && r.raw("hc_mult").get<double>() <= 1))
    c.refuse("hc_mult", "hyper-connections (several residual streams mixed in every layer)");
  for (const char* k : {"compress_ratios", "compress_rates"})
    if (r.has(k) && !r.raw(k).is_null()) c.refuse(k, "compressed sparse attention (keys compressed per layer before the indexer)");
  if (r.has("o_lora_rank") && !r.raw("o_lora_rank").is_null()) c.refuse("o_lora_rank", "a low-rank grouped output projection");
  if (r.has("num_hash_layers") && !(r.raw("num_hash_layers").is_number_integer() && r.raw("num_hash_layers").get<std::int64_t>() == 0))
    c.refuse("num_hash_layers", "hash-routed MoE layers (experts chosen by token id)");
  // DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5) is read with MLA below; without MLA it is not
  // what Megatron-Core's DSAttention runs (AbsorbedMLASelfAttention).
  if (r.has("index_topk") && !r.has("kv_lora_rank"))
    c.refuse("index_topk", "DeepSeek Sparse Attention without multi-latent attention");
  // MiniMax-M3 and others name their block-sparse attention in a sub-object (an indexer and top-k
  // key blocks per query): refused like DeepSeek's, never costed as dense attention.
  if (r.has("sparse_attention_config") && r.raw("sparse_attention_config").is_object()) {
    const json& sa = r.raw("sparse_attention_config");
    const auto on = sa.find("use_sparse_attention");
    if (on == sa.end() || !on->is_boolean() || on->get<bool>())
      c.refuse("sparse_attention_config", "sparse attention (top-k key blocks per query)");
  }
  // Encoders beside the decoder, whether the decoder's keys sit in text_config (Llama 4, Gemma 3,
  // Qwen3-VL) or at the top (Qwen2-VL, Qwen2.5-VL).
  for (const char* k : {"vision_config", "audio_config"})
    if (top.contains(k) && top[k].is_object()) m.language_model_of_multimodal = true;
  if (wrapped) {
    if (type.ends_with("_text")) type.resize(type.size() - 5);
  } else if (r.has("vision_config") && !r.has("num_hidden_layers")) {
    c.refuse("vision_config", "a vision model without a text_config");
  }
  if (auto t = r.opt_string("model_type")) {
    std::string inner = lower(*t);
    if (inner.ends_with("_text")) inner.resize(inner.size() - 5);
    if (!inner.empty()) type = inner;
  }
  // Gemma 4 (HF Gemma4TextConfig): its full-attention layers take their own head_dim
  // (global_head_dim) and KV heads, and the small models add per-layer input embeddings and
  // layers that share another's keys and values; strata's layers share one attention shape.
  if (type == "gemma4")
    c.refuse("model_type", "per-layer attention shapes (global_head_dim), per-layer input embeddings and shared-KV layers");
  // Gemma 3n (HF modeling_gemma3n.py): AltUp's parallel streams, the LAuReL low-rank residual,
  // per-layer input embeddings, layers reusing earlier layers' keys and values, and per-layer FFN
  // sizes with activation sparsity.
  if (type == "gemma3n")
    c.refuse("model_type", "AltUp streams, LAuReL residuals, per-layer input embeddings and shared-KV layers (Gemma 3n)");
  // LongCat-Flash (HF modeling_longcat_flash.py): each layer runs two attention blocks, two dense
  // MLPs and a shortcut-connected MoE whose router may pick zero-computation (identity) experts;
  // strata's layer is one attention and one MLP or MoE.
  if (type == "longcat_flash")
    c.refuse("model_type", "two attention blocks, two MLPs and a shortcut-connected MoE per layer (LongCat-Flash)");
  if (r.has("zero_expert_num") && r.raw("zero_expert_num").is_number() && r.get_number("zero_expert_num") > 0)
    c.refuse("zero_expert_num", "zero-computation (identity) experts among the routed experts");
  // The decoder family whose layers the config describes: a vision-language model's language model
  // is its base family's decoder (transformers Qwen2VLTextModel ~ Qwen2, Qwen3VLTextModel ~ Qwen3
  // with q/k norms, Glm4vTextModel ~ GLM-4-0414, Glm4vMoeTextModel ~ GLM-4.5). The architecture is
  // read by family; defaults of a config class (norm_topk_prob) and messages keep model_type.
  static constexpr std::pair<std::string_view, std::string_view> kLanguageModelFamily[] = {
      {"qwen2_vl", "qwen2"}, {"qwen2_5_vl", "qwen2"}, {"qwen3_vl", "qwen3"}, {"qwen3_vl_moe", "qwen3_moe"},
      {"glm4v", "glm4"},     {"glm4v_moe", "glm4_moe"}};
  c.family = type;
  for (const auto& [vl, base] : kLanguageModelFamily)
    if (type == vl) c.family = base;
  c.llama_like = one_of(c.family, {"llama", "llama4", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe",
                        "deepseek_v2", "deepseek_v3", "kimi_k2", "gpt_oss", "gemma", "gemma2", "gemma3",
                        "glm", "glm4", "glm4_moe", "phi3", "olmo2", "olmo3", "granite", "granitemoe",
                        "deepseek", "ernie4_5", "ernie4_5_moe", "smollm3", "exaone4", "minimax", "minimax_m2", "hunyuan",
                        "hunyuan_v1_dense", "hunyuan_v1_moe", "bailing_moe", "bailing_moe_v2", "dots1", "seed_oss", "exaone_moe",
                        "arcee", "qwen3_next", "qwen3_5", "qwen3_5_moe"});
  c.gemma = one_of(type, {"gemma", "gemma2", "gemma3"});
}

// Sizes: layers, hidden size, heads and query groups, head dim, FFN, vocabulary, positions.
void read_sizes(const HfConfig& c, ModelSpec& m) {
  const JsonReader& r = c.r;
  const JsonReader& rtop = c.top;
  const json& j = c.j;
  const std::string& type = c.type;
  const std::string& where = c.where;
  const std::string& path = c.path;
  m.name = rtop.opt_string("_name_or_path").value_or(type.empty() ? where : type);
  m.source = "Hugging Face config.json: " + where;
  // Nemotron-H in transformers 5: the layer list gives the count (num_hidden_layers is deprecated
  // there and may be absent; NemotronHConfig uses the list's length when both are given).
  const char* nemotron_list = type == "nemotron_h" ? nemotron_h_list_key(r) : nullptr;
  if (nemotron_list) m.num_layers = static_cast<int>(nemotron_h_layer_list(r, nemotron_list)->size());
  else m.num_layers = static_cast<int>(c.pick_int({"num_hidden_layers", "n_layer", "n_layers", "num_layers"}, 1, kMaxLayers, "the layer count"));
  m.hidden_size = c.pick_int({"hidden_size", "n_embd", "d_model"}, 1, kMaxDim, "the hidden size");
  m.num_attention_heads = static_cast<int>(c.pick_int({"num_attention_heads", "n_head", "n_heads", "num_heads"}, 1, kMaxDim, "the head count"));
  m.num_query_groups = m.num_attention_heads;
  if (r.has("num_key_value_heads")) m.num_query_groups = static_cast<int>(r.get_int("num_key_value_heads", 1, kMaxDim));
  else if (r.has("num_kv_heads")) m.num_query_groups = static_cast<int>(r.get_int("num_kv_heads", 1, kMaxDim));
  else if (r.has("multi_query_group_num")) m.num_query_groups = static_cast<int>(r.get_int("multi_query_group_num", 1, kMaxDim));
  else if (r.has("attn_config") && j["attn_config"].is_object() && j["attn_config"].contains("kv_n_heads"))
    m.num_query_groups = static_cast<int>(r.child("attn_config").get_int("kv_n_heads", 1, kMaxDim));
  else if (r.has("multi_query") && r.get_bool("multi_query")) m.num_query_groups = 1;
  if (type == "falcon" && r.has("new_decoder_architecture") && r.get_bool("new_decoder_architecture") && !r.has("num_kv_heads"))
    m.num_query_groups = m.num_attention_heads;
  if (r.has("head_dim")) {
    const std::int64_t d = r.get_int("head_dim", 1, kMaxDim);
    if (d * m.num_attention_heads != m.hidden_size) m.kv_channels = d;
  } else if (r.has("attention_head_dim")) {  // Nemotron-H
    const std::int64_t d = r.get_int("attention_head_dim", 1, kMaxDim);
    if (d * m.num_attention_heads != m.hidden_size) m.kv_channels = d;
  } else if (!r.has("kv_lora_rank") && m.hidden_size % m.num_attention_heads != 0) {
    throw InputError(where, path + "/hidden_size", "model_type \"" + type + "\": hidden_size " + std::to_string(m.hidden_size) +
                                                       " is not divisible by num_attention_heads " +
                                                       std::to_string(m.num_attention_heads) + " and no head_dim is given");
  }
  if (r.has("intermediate_size_mlp")) m.ffn_hidden_size = r.get_int("intermediate_size_mlp", 1, kMaxDim);  // Llama-4 dense layers
  else if (r.has("intermediate_size")) m.ffn_hidden_size = r.get_int("intermediate_size", 1, kMaxDim);
  else if (r.has("n_inner")) m.ffn_hidden_size = r.get_int("n_inner", 1, kMaxDim);
  else if (r.has("ffn_hidden_size")) m.ffn_hidden_size = r.get_int("ffn_hidden_size", 1, kMaxDim);
  else if (r.has("expansion_ratio")) {
    const double ffn = r.get_positive("expansion_ratio", 1024) * static_cast<double>(m.hidden_size);
    if (ffn < 1 || ffn > static_cast<double>(kMaxDim))
      r.fail("expansion_ratio", "gives an FFN size of " + std::to_string(ffn) + "; expected 1.." + std::to_string(kMaxDim));
    m.ffn_hidden_size = static_cast<std::int64_t>(ffn);
  }
  else m.ffn_hidden_size = 4 * m.hidden_size;  // GPT-2/BLOOM/Falcon convention when absent
  // Gemma-3's text_config leaves the vocabulary at the Gemma3TextConfig default.
  if (type == "gemma3" && !r.has("vocab_size") && !r.has("padded_vocab_size")) m.vocab_size = 262208;
  else m.vocab_size = c.pick_int({"vocab_size", "padded_vocab_size"}, 1, kMaxDim, "the vocabulary size");
  // Without a key, the family's config-class default: Gemma3TextConfig's 131072 positions
  // (transformers models/gemma3/configuration_gemma3.py), else 2048.
  m.max_seq_length = type == "gemma3" ? 131072 : 2048;
  for (const char* k : {"max_position_embeddings", "n_positions", "max_seq_len", "seq_length"})
    if (r.has(k)) { m.max_seq_length = r.get_int(k, 1, kMaxDim * 64); break; }
}

// The layer's recipe: activation, norms and where they sit, linear biases, q/k norms, parallel
// residuals, scalar multipliers, tied embeddings, attention sinks.
void read_layer_recipe(const HfConfig& c, ModelSpec& m) {
  const JsonReader& r = c.r;
  const JsonReader& rtop = c.top;
  const std::string& type = c.type;
  const std::string& family = c.family;
  const bool llama_like = c.llama_like, gemma = c.gemma;
  // Nemotron-H names its MLP's activation mlp_hidden_act (its mixer's is mamba_hidden_act).
  std::string act = lower(r.opt_string("hidden_activation").value_or(r.opt_string("hidden_act").value_or(
      r.opt_string("activation_function").value_or(type == "nemotron_h" ? r.opt_string("mlp_hidden_act").value_or("") : ""))));
  // transformers ACT2FN: gelu_new, gelu_fast and gelu_pytorch_tanh are tanh approximations of GELU.
  m.gelu_tanh_approximation = type != "gpt_oss" && one_of(act, {"gelu_new", "gelu_fast", "gelu_pytorch_tanh"});
  if (gemma) m.activation = Activation::geglu;  // GeGLU (Gemma report §2)
  else if (type == "gpt_oss") {
    // GptOssExperts (HF modeling_gpt_oss.py): gate.clamp(max=limit) * sigmoid(1.702 gate) * (up.clamp(+-limit) + 1),
    // whatever hidden_act says; Megatron-Bridge gpt_oss_bridge.py: quick_gelu, glu_linear_offset 1, clamp 7.
    m.activation = Activation::quick_geglu;
    m.glu_linear_offset = 1.0;
    m.activation_clamp = r.has("swiglu_limit") ? r.get_positive("swiglu_limit", 1e6) : 7.0;
  }
  else if (act == "relu2") {
    // Squared ReLU in a plain up/down MLP: Nemotron-4 / Minitron (HF modeling_nemotron.py), Persimmon.
    // BitNet gates it (gate_proj, up_proj), which no Megatron flag expresses.
    // Arcee's AFM reuses Nemotron's MLP (HF modular_arcee.py ArceeMLP(NemotronMLP)).
    if (!one_of(type, {"nemotron", "nemotron_h", "persimmon", "arcee"}))
      c.refuse("hidden_act", "squared ReLU (relu2) outside the Nemotron, Persimmon and Arcee MLPs");
    m.activation = Activation::squared_relu;
  }
  else {
    // GELU and its tanh approximations (gelu_new, gelu_fast, gelu_pytorch_tanh) cost and launch as
    // GELU; SiLU as the gated SwiGLU of the Llama recipe. Any other activation would be costed and
    // launched as something else, so it is refused, naming it.
    const bool gelu_act = act.empty() || act.starts_with("gelu");
    const bool silu_act = act == "silu" || act == "swiglu" || act == "swish";
    if (silu_act || (llama_like && act.empty())) m.activation = Activation::swiglu;
    else if (gelu_act && !llama_like) m.activation = Activation::gelu;
    else c.refuse("hidden_act", "the activation \"" + act + "\"" + (llama_like ? " in a gated MLP" : "") +
                              " (strata knows GELU, SiLU/SwiGLU, squared ReLU and GPT-OSS's clamped GeGLU)");
  }
  const bool layernorm_family = one_of(type, {"gpt2", "gpt_neox", "falcon", "bloom", "mpt", "gptj", "opt", "phi", "gpt_bigcode", "stablelm"});
  // Nemotron-H's norms are RMSNorms whatever its epsilon key is called (HF NemotronHRMSNorm; Megatron-
  // Bridge's hybrid provider normalization "RMSNorm"): Nemotron 3's files name it layer_norm_epsilon.
  m.normalization = (r.has("rms_norm_eps") || (llama_like && !layernorm_family) || type == "nemotron_h") ? Normalization::rmsnorm
                                                                                                      : Normalization::layernorm;
  if (gemma) m.norm_epsilon = 1e-6;  // GemmaConfig, Gemma2Config and Gemma3TextConfig default rms_norm_eps
  for (const char* k : {"rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "layernorm_epsilon", "norm_eps", "norm_epsilon"})
    if (r.has(k) && r.raw(k).is_number()) { m.norm_epsilon = r.get_number(k); break; }
  // HF's PretrainedConfig ties by default; the Llama-recipe configs override it to false, Gemma keeps it.
  m.tied_embeddings = r.opt_bool("tie_word_embeddings", rtop.opt_bool("tie_word_embeddings", !llama_like || gemma));

  // Linear biases: GPT-2/NeoX/BLOOM/MPT carry them everywhere; Falcon and others say so in `bias`;
  // Llama-style configs in attention_bias/mlp_bias; Qwen2 has a QKV bias only (no key for it).
  const bool attention_bias = r.opt_bool("attention_bias", false), mlp_bias = r.opt_bool("mlp_bias", false);
  if (type == "mpt") m.add_linear_bias = !r.opt_bool("no_bias", false);
  else if (r.has("bias") && r.raw("bias").is_boolean()) m.add_linear_bias = r.get_bool("bias");
  else if (r.has("use_bias") && r.raw("use_bias").is_boolean()) m.add_linear_bias = r.get_bool("use_bias");  // ERNIE-4.5
  else if (type == "gpt_oss") m.add_linear_bias = true;  // attention, expert and router linears all carry biases
  else if (layernorm_family) m.add_linear_bias = true;
  // Llama-style and unknown RMSNorm-era families: no biases unless the config says so.
  else m.add_linear_bias = mlp_bias && attention_bias;
  if (!m.add_linear_bias) {
    m.add_qkv_bias = one_of(family, {"qwen2", "qwen2_moe"}) || attention_bias || r.opt_bool("qkv_bias", false) ||
                     r.opt_bool("add_qkv_bias", false) || r.opt_bool("use_qkv_bias", false);  // the last: Ling 2.0 (bailing_moe_v2)
    // attention_bias biases q/k/v and o_proj in the Llama recipe (HF LlamaAttention and the families
    // copied from it); GLM-4's attention biases q/k/v only (Glm4Attention o_proj bias=False), and
    // Seed-OSS keys its o_proj bias apart (attention_out_bias).
    const bool attention_bias_reaches_output = !one_of(family, {"glm", "glm4", "glm4_moe", "seed_oss"});
    m.partial_linear_biases = (attention_bias && attention_bias_reaches_output) || r.opt_bool("attention_out_bias", false) || mlp_bias;
  }
  // Llama 4's use_qk_norm is a weightless L2 norm (HF modeling_llama4.py Llama4TextL2Norm), not a
  // learned RMSNorm.
  const bool qk_norm_key = r.opt_bool("use_qk_norm", false);
  m.qk_l2_norm = type == "llama4" && qk_norm_key;
  // OLMo-2/3 (transformers modeling_olmo2.py: q_norm over num_heads * head_dim, norms after the
  // attention and the MLP); MiniMax-M2 names its whole-layer q/k norm qk_norm_type "per_layer".
  m.qk_norm_across_heads = one_of(type, {"olmo2", "olmo3"}) || (qk_norm_key && r.opt_string("qk_norm_type").value_or("") == "per_layer");
  // EXAONE 4.0 places its norms as OLMo-2 does, with per-head q/k norms (HF modeling_exaone4.py
  // Exaone4DecoderLayer: post_attention_layernorm, post_feedforward_layernorm; q_norm over head_dim).
  // K-EXAONE (exaone_moe) keeps the per-head q/k norms in pre-norm layers (Megatron-Bridge
  // exaone_moe_provider.py: the standard GPT layer spec with qk_layernorm=True).
  m.norm_after_sublayers = one_of(type, {"olmo2", "olmo3", "exaone4"});
  m.norm_around_sublayers = one_of(family, {"gemma2", "gemma3", "glm4"});
  m.embedding_norm = type == "bloom";  // BloomModel.word_embeddings_layernorm, in every BLOOM config
  m.qk_layernorm = one_of(family, {"qwen3", "qwen3_moe", "olmo2", "olmo3", "gemma3", "exaone4", "exaone_moe", "dots1"}) || (qk_norm_key && type != "llama4") ||
                   r.opt_bool("qk_layernorm", false);
  // Parallel residual: always in GPT-J, CodeGen, Phi-1/2 and Cohere (1 and 2) layers; GPT-NeoX and
  // StableLM say so in use_parallel_residual (GPTNeoXConfig default true, StableLmConfig false);
  // Falcon in parallel_attn (FalconConfig default true), and its new_decoder_architecture layers
  // (Falcon-40B/180B) always run in parallel (HF modeling_falcon.py FalconDecoderLayer).
  m.parallel_attention_mlp = one_of(type, {"gptj", "codegen", "phi", "cohere", "cohere2"}) ||
                             (type == "gpt_neox" && r.opt_bool("use_parallel_residual", true)) ||
                             (type == "stablelm" && r.opt_bool("use_parallel_residual", false)) ||
                             (type == "falcon" && (r.opt_bool("new_decoder_architecture", false) || r.opt_bool("parallel_attn", true)));
  // Multipliers a config states away from their neutral value (Granite: GraniteConfig multipliers
  // and logits_scaling; Cohere: logit_scale; MiniCPM: scale_emb, scale_depth). Granite's
  // attention_multiplier replaces 1/sqrt(head_dim), so only another value is a multiplier.
  for (const char* k : {"embedding_multiplier", "residual_multiplier", "logits_scaling", "logit_scale", "scale_emb", "scale_depth"})
    if (r.has(k) && r.raw(k).is_number() && r.get_number(k) != 1.0) m.scalar_multipliers = true;
  if (r.has("attention_multiplier") && r.raw("attention_multiplier").is_number()) {
    const double head = static_cast<double>(m.head_dim());
    if (std::abs(r.get_number("attention_multiplier") * std::sqrt(head) - 1.0) > 1e-6) m.scalar_multipliers = true;
  }
  m.kv_shared_across_layers = r.opt_bool("use_cla", false) && r.opt_int("cla_share_factor", 1, kMaxLayers).value_or(1) > 1;
  // K-EXAONE: a SwiGLU clamp limit per layer (0: none), applied layer by layer.
  if (r.has("swiglu_limits") && !r.raw("swiglu_limits").is_null()) {
    const json& limits = r.raw("swiglu_limits");
    if (!limits.is_array() || static_cast<int>(limits.size()) != m.num_layers)
      r.fail("swiglu_limits", "expected " + std::to_string(m.num_layers) + " clamp limits, one per layer (0: none)");
    for (const auto& v : limits) {
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
        r.fail("swiglu_limits", "expected a clamp limit per layer, a finite number >= 0 (0: none)");
      if (v.get<double>() > 0) m.per_layer_activation_clamp = true;
    }
  }
  // GPT-OSS: a learned sink logit per head joins every softmax (HF modeling_gpt_oss.py self.sinks;
  // Megatron-Bridge softmax_type "learnable").
  m.attention_sinks = type == "gpt_oss";
  m.zero_centered_gamma = type == "nemotron";  // HF modeling_nemotron.py NemotronLayerNorm1P
}

// Positions (rotary, ALiBi or learned), the rotary base, fraction and scaling, and dropout.
void read_positions(const HfConfig& c, ModelSpec& m) {
  const JsonReader& r = c.r;
  const json& j = c.j;
  const std::string& type = c.type;
  const bool llama_like = c.llama_like;
  // Transformers 5 keeps the rotary settings in one rope_parameters object (rope_theta, rope_type,
  // partial_rotary_factor and the scaling fields that were rope_scaling's), or in one per attention
  // layer type ({"full_attention": {...}, "sliding_attention": {...}}; Gemma 3 also {"global":
  // {"base": ...}, "local": ...}; Megatron-Bridge transformers_compat.py rope_theta_from_hf). The
  // full-attention (global) entry is the model's: its base is the one Megatron's --rotary-base takes.
  // Read as 10000 instead, a Llama 3 launch would train with another base than the model's.
  std::optional<JsonReader> rope_params;
  if (r.has("rope_parameters")) {
    const JsonReader all = r.child("rope_parameters");
    if (all.has("full_attention")) rope_params.emplace(all.child("full_attention"));
    else if (all.has("global")) rope_params.emplace(all.child("global"));
    else rope_params.emplace(all);
  }

  if (type == "bloom" || type == "mpt" || (r.has("alibi") && r.raw("alibi").is_boolean() && r.get_bool("alibi")) ||
      (r.has("attn_config") && j["attn_config"].is_object() && j["attn_config"].value("alibi", false)))
    m.position_embedding = PositionEmbedding::alibi;
  else if (type == "nemotron_h")
    // Nemotron-H's attention layers take no positions (HF NemotronHAttention applies no rotary;
    // Megatron-Bridge nemotron_h_bridge.py sets position_embedding_type "none"), whatever
    // rope_theta a Nemotron 3 config carries.
    m.position_embedding = PositionEmbedding::none;
  else if (r.has("rope_theta") || r.has("rotary_emb_base") || r.has("rotary_pct") || rope_params || llama_like || type == "falcon" ||
           type == "gpt_neox")
    m.position_embedding = PositionEmbedding::rope;
  else m.position_embedding = PositionEmbedding::learned;
  auto top_number = [&](std::initializer_list<const char*> keys) -> std::optional<double> {
    for (const char* k : keys)
      if (r.has(k) && r.raw(k).is_number()) return r.get_number(k);
    return std::nullopt;
  };
  // A config that carries both forms (some writers keep the old keys beside rope_parameters) must
  // say the same in both.
  auto agreed = [&](std::optional<double> outer, const char* outer_key, const char* inner_key, double hi) -> std::optional<double> {
    if (!rope_params || !rope_params->has(inner_key)) return outer;
    const double inner = rope_params->get_positive(inner_key, hi);
    if (outer && std::abs(*outer - inner) > 1e-9 * std::abs(inner))
      rope_params->fail(inner_key, json(inner).dump() + " here, but " + outer_key + " is " + json(*outer).dump() +
                                       ": the two rotary settings must agree");
    return inner;
  };
  const char* inner_base = rope_params && !rope_params->has("rope_theta") ? "base" : "rope_theta";  // "base": Gemma 3's "global"
  const std::optional<double> base = agreed(top_number({"rope_theta", "rotary_emb_base"}), "rope_theta", inner_base, 1e12);
  if (base) m.rotary_base = *base;
  else if (type == "gemma3") m.rotary_base = 1e6;  // Gemma3TextConfig's default (the local layers' 1e4 is not modelled)
  const std::optional<double> fraction = agreed(top_number({"partial_rotary_factor", "rotary_pct"}), "partial_rotary_factor",
                                                "partial_rotary_factor", 1);
  if (fraction) m.rotary_percent = *fraction;
  // MiniMax-M2 gives the rotated channels instead (Megatron-Bridge minimax_m2_bridge.py:
  // rotary_percent = rotary_dim / head_dim).
  if (r.has("rotary_dim") && r.raw("rotary_dim").is_number_integer() && !fraction) {
    const std::int64_t head = m.head_dim();
    m.rotary_percent = static_cast<double>(r.get_int("rotary_dim", 1, kMaxDim)) / static_cast<double>(head);
  }
  auto scaling_of = [&](const JsonReader& rs) {
    std::string t = lower(rs.opt_string("rope_type").value_or(rs.opt_string("type").value_or("")));
    // Multimodal RoPE (Qwen2-VL's "mrope", mrope_section) gives a text token the same position in
    // every section: plain RoPE for the language model strata costs.
    return t == "default" || t == "mrope" ? std::string() : t;
  };
  if (r.has("rope_scaling") && r.raw("rope_scaling").is_object()) {
    m.rope_scaling = scaling_of(r.child("rope_scaling"));
    m.rope_params = read_rope_scaling_params(r.child("rope_scaling"), m.max_seq_length);
  }
  if (rope_params && (rope_params->has("rope_type") || rope_params->has("type"))) {
    const std::string inner = scaling_of(*rope_params);
    if (r.has("rope_scaling") && r.raw("rope_scaling").is_object() && inner != m.rope_scaling)
      rope_params->fail("rope_type", "\"" + inner + "\" here, but rope_scaling says \"" + m.rope_scaling +
                                         "\": the two rotary settings must agree");
    m.rope_scaling = inner;
    m.rope_params = read_rope_scaling_params(*rope_params, m.max_seq_length);
  }
  if (m.rope_scaling.empty()) m.rope_params = {};
  for (const char* k : {"hidden_dropout", "resid_pdrop", "attention_dropout", "attn_pdrop"})
    if (r.has(k) && r.raw(k).is_number() && r.get_number(k) > 0) m.dropout = true;
}

// Which layers attend how: sliding windows, layers without RoPE, Llama 4's attention chunks.
void read_attention_layers(const HfConfig& c, ModelSpec& m) {
  const JsonReader& r = c.r;
  const std::string& type = c.type;
  // ---- sliding-window attention ----
  const bool window_off = r.has("use_sliding_window") && r.raw("use_sliding_window").is_boolean() && !r.get_bool("use_sliding_window");
  if (r.has("sliding_window") && r.raw("sliding_window").is_number() && !window_off) {
    m.sliding_window = r.get_int("sliding_window", 0, kMaxDim * 64);
    if (r.has("layer_types") && r.raw("layer_types").is_array()) {
      const json& lt = r.raw("layer_types");
      if (static_cast<int>(lt.size()) != m.num_layers)
        r.fail("layer_types", "expected " + std::to_string(m.num_layers) + " entries, one per layer");
      for (const auto& e : lt) {
        const std::string v = e.is_string() ? e.get<std::string>() : "";
        if (v == "sliding_attention") m.sliding_window_pattern.push_back(1);
        else if (v == "full_attention") m.sliding_window_pattern.push_back(0);
        else c.refuse("layer_types", "layer type \"" + v + "\"");
      }
    } else if (r.has("sliding_window_pattern") && r.raw("sliding_window_pattern").is_string()) {
      // EXAONE 4.0 (HF Exaone4Config): a string such as "LLLG" repeated over the layers, L a
      // sliding-window (local) layer, G a global one.
      const std::string pat = r.get_string("sliding_window_pattern");
      if (pat.empty() || pat.find_first_not_of("LG") != std::string::npos)
        r.fail("sliding_window_pattern", "expected an integer or a string of L (local) and G (global) layers, found \"" + pat + "\"");
      for (int i = 0; i < m.num_layers; ++i) m.sliding_window_pattern.push_back(pat[i % pat.size()] == 'L' ? 1 : 0);
    } else if (type == "gemma3" || r.has("sliding_window_pattern")) {
      // Gemma-3: every sliding_window_pattern-th layer (default 6) is global (HF Gemma3TextConfig).
      const int every = static_cast<int>(r.opt_int("sliding_window_pattern", 1, kMaxLayers).value_or(6));
      for (int i = 0; i < m.num_layers; ++i) m.sliding_window_pattern.push_back((i + 1) % every == 0 ? 0 : 1);
    } else if (type == "gemma2") {
      for (int i = 0; i < m.num_layers; ++i) m.sliding_window_pattern.push_back(i % 2 == 0 ? 1 : 0);  // even layers local
    } else if (r.has("max_window_layers") && (type.starts_with("qwen") || type == "dots1")) {
      // Qwen2/3 and dots.llm1: the first max_window_layers layers attend in full, the later ones use
      // the window (transformers Qwen2Config, Dots1Config layer_types: sliding_attention iff
      // i >= max_window_layers).
      const std::int64_t n = r.get_int("max_window_layers", 0, kMaxLayers);
      for (int i = 0; i < m.num_layers; ++i) m.sliding_window_pattern.push_back(i >= n ? 1 : 0);
    }
    if (m.sliding_window == 0) m.sliding_window_pattern.clear();
  } else if (r.has("sliding_windows") && r.raw("sliding_windows").is_array() && !window_off) {
    // K-EXAONE (Megatron-Bridge exaone_moe_bridge.py): each layer's window, 0 for a full-attention
    // layer. strata's sliding-window layers share one window size.
    const json& ws = r.raw("sliding_windows");
    if (static_cast<int>(ws.size()) != m.num_layers) r.fail("sliding_windows", "expected " + std::to_string(m.num_layers) + " entries, one per layer");
    for (const auto& e : ws) {
      if (!e.is_number_integer() || e.get<std::int64_t>() < 0 || e.get<std::int64_t>() > kMaxDim * 64)
        r.fail("sliding_windows", "expected a window size per layer, a whole number (0: full attention)");
      const std::int64_t w = e.get<std::int64_t>();
      if (w > 0 && m.sliding_window > 0 && w != m.sliding_window)
        c.refuse("sliding_windows", "sliding windows of different sizes (" + std::to_string(m.sliding_window) + " and " + std::to_string(w) + ")");
      if (w > 0) m.sliding_window = w;
      m.sliding_window_pattern.push_back(w > 0 ? 1 : 0);
    }
    if (m.sliding_window == 0) m.sliding_window_pattern.clear();
  }

  // ---- NoPE layers and chunked attention (Llama 4, SmolLM3) ----
  // no_rope_layers lists 1 for a layer that rotates and 0 for one that does not; without it (or
  // empty) every no_rope_layer_interval-th layer (default 4) goes without (HF Llama4TextConfig,
  // SmolLM3Config: int((i + 1) % interval != 0)). strata keeps Megatron's sense: 1 = no RoPE.
  if (m.position_embedding == PositionEmbedding::rope &&
      (r.has("no_rope_layers") || r.has("no_rope_layer_interval") || one_of(type, {"llama4", "smollm3"}))) {
    if (r.has("no_rope_layers") && !(r.raw("no_rope_layers").is_array() && r.raw("no_rope_layers").empty()))
      for (int uses_rope : read_pattern(r, "no_rope_layers", m.num_layers)) m.no_rope_layers.push_back(1 - uses_rope);
    else
      m.no_rope_layers = every_nth_layer(m.num_layers, r.opt_int("no_rope_layer_interval", 1, kMaxLayers).value_or(4));
    if (std::none_of(m.no_rope_layers.begin(), m.no_rope_layers.end(), [](int x) { return x == 1; })) m.no_rope_layers.clear();
  }
  // Cohere 2, EXAONE 4.0 and K-EXAONE rotate queries and keys in their sliding-window layers only;
  // their global layers take no positions (HF Cohere2Attention, Exaone4Attention: rotary applied
  // when the layer has a window, or when the model has none; Megatron-Bridge exaone_moe_bridge.py:
  // no_rope_freq 1 for every full-attention layer).
  if (m.position_embedding == PositionEmbedding::rope && one_of(type, {"cohere2", "exaone4", "exaone_moe"}) && !m.sliding_window_pattern.empty() &&
      m.no_rope_layers.empty()) {
    for (int slides : m.sliding_window_pattern) m.no_rope_layers.push_back(1 - slides);
    if (std::none_of(m.no_rope_layers.begin(), m.no_rope_layers.end(), [](int x) { return x == 1; })) m.no_rope_layers.clear();
  }
  // Llama 4's RoPE layers attend within chunks of attention_chunk_size tokens (Llama4TextConfig
  // default 8192); its NoPE layers attend over the whole sequence.
  if (type == "llama4" || r.has("attention_chunk_size"))
    m.attention_chunk_size = r.opt_int("attention_chunk_size", 1, kMaxDim * 64).value_or(type == "llama4" ? 8192 : 0);
}

// Mixture of experts: experts, top-k, expert and shared-expert sizes, the router, and which
// layers are MoE layers; a config that names experts in a form strata does not read is refused.
void read_moe(const HfConfig& c, ModelSpec& m) {
  const JsonReader& r = c.r;
  const json& j = c.j;
  const std::string& type = c.type;
  const std::string& family = c.family;
  // ---- mixture of experts ----
  // DBRX nests its MoE in ffn_config (moe_num_experts, moe_top_k, ffn_hidden_size).
  if (r.has("ffn_config") && r.raw("ffn_config").is_object() && r.raw("ffn_config").contains("moe_num_experts")) {
    JsonReader fr = r.child("ffn_config");
    MoeSpec moe;
    moe.num_experts = static_cast<int>(fr.get_int("moe_num_experts", 1, 1 << 16));
    moe.top_k = static_cast<int>(fr.opt_int("moe_top_k", 1, 1 << 16).value_or(1));
    moe.expert_ffn_hidden_size = fr.get_int("ffn_hidden_size", 1, kMaxDim);
    m.ffn_hidden_size = moe.expert_ffn_hidden_size;
    m.activation = Activation::swiglu;  // DBRX's GLU experts
    m.normalization = Normalization::layernorm;
    m.add_linear_bias = false;
    m.position_embedding = PositionEmbedding::rope;
    m.moe = moe;
    return;
  }
  std::optional<std::int64_t> experts;
  for (const char* k : {"n_routed_experts", "num_local_experts", "num_experts"})
    if (r.has(k) && r.raw(k).is_number()) { experts = r.get_int(k, 0, 1 << 16); break; }
  if (!experts) experts = int_or_first(r, "moe_num_experts", 0, 1 << 16);  // ERNIE-4.5
  if (experts && *experts > 0) {
    MoeSpec moe;
    moe.num_experts = static_cast<int>(*experts);
    std::optional<std::int64_t> k = r.opt_int("num_experts_per_tok", 1, 1 << 16);
    if (!k) k = r.opt_int("experts_per_token", 1, 1 << 16);
    if (!k) k = r.opt_int("num_experts_per_token", 1, 1 << 16);  // Kimi
    if (!k) k = int_or_first(r, "moe_topk", 1, 1 << 16);         // Hunyuan: one entry per layer
    if (!k) k = r.opt_int("moe_k", 1, 1 << 16);                  // ERNIE-4.5
    if (!k) c.refuse("num_experts_per_tok", "an MoE config without num_experts_per_tok (top-k)");
    moe.top_k = static_cast<int>(*k);
    if (auto e = int_or_first(r, "moe_intermediate_size", 1, kMaxDim)) moe.expert_ffn_hidden_size = *e;
    else if (r.has("intermediate_size")) moe.expert_ffn_hidden_size = r.get_int("intermediate_size", 1, kMaxDim);
    else moe.expert_ffn_hidden_size = m.ffn_hidden_size;
    // Shared experts of the routed experts' size: DeepSeek, ERNIE-4.5, Ling 2.0, Hunyuan (per layer).
    for (const char* key : {"n_shared_experts", "moe_num_shared_experts", "num_shared_experts", "num_shared_expert"}) {
      if (!r.has(key) || r.raw(key).is_null()) continue;
      moe.shared_expert_ffn_hidden_size = *int_or_first(r, key, 0, 1 << 16) * moe.expert_ffn_hidden_size;
      break;
    }
    if (r.has("shared_expert_intermediate_size")) {  // Qwen2-MoE: one gated shared expert of this size
      moe.shared_expert_ffn_hidden_size = r.get_int("shared_expert_intermediate_size", 0, kMaxDim);
      // HF Qwen2MoeSparseMoeBlock: sigmoid(shared_expert_gate(x)) * shared_expert(x).
      moe.shared_expert_gate = type == "qwen2_moe" && moe.shared_expert_ffn_hidden_size > 0;
    }
    if (type == "llama4") moe.shared_expert_ffn_hidden_size = moe.expert_ffn_hidden_size;  // one shared expert per MoE layer
    moe.router_score_function = lower(r.opt_string("scoring_func").value_or(r.opt_string("score_function").value_or("softmax")));
    // Llama 4's router and GLM-4.5's Glm4MoeTopkRouter (HF modeling_glm4_moe.py: sigmoid scores plus
    // e_score_correction_bias for selection) are sigmoid routers whose configs carry no scoring_func.
    // dots.llm1 runs DeepSeek-V3's router (HF modular_dots1.py Dots1TopkRouter(DeepseekV3TopkRouter)),
    // sigmoid with the correction bias, whatever its config's scoring_func says.
    if (one_of(family, {"llama4", "glm4_moe", "dots1"})) moe.router_score_function = "sigmoid";
    if (!one_of(moe.router_score_function, {"softmax", "sigmoid"})) c.refuse("scoring_func", "router score function \"" + moe.router_score_function + "\"");
    // An expert bias added to the scores for selection: DeepSeek-V3's noaux_tc, GPT-OSS's router
    // bias, MiniMax-M2's use_routing_bias, ERNIE-4.5's moe_statics correction bias (HF
    // modeling_ernie4_5_moe.py; Megatron-Bridge enables the expert bias for it).
    const std::string topk_method = lower(r.opt_string("topk_method").value_or(""));
    moe.router_bias = one_of(family, {"gpt_oss", "ernie4_5_moe", "glm4_moe", "dots1"}) || topk_method == "noaux_tc" ||
                      r.opt_bool("use_routing_bias", false) || r.opt_bool("moe_router_enable_expert_bias", false);
    read_router_groups(r, moe, topk_method, type);
    // Which layers are MoE layers (the rest run a dense MLP of intermediate_size).
    std::vector<int> pattern(m.num_layers, 1);
    if (r.has("is_moe_layer")) {
      // EXAONE MoE: one true/false per layer.
      pattern = read_layer_list(r, "is_moe_layer", m.num_layers, " true/false entries, one per layer", [](const json& e) -> std::optional<int> {
        if (!e.is_boolean()) return std::nullopt;
        return e.get<bool>() ? 1 : 0;
      });
    } else if (r.has("mlp_layer_types")) {
      // One "dense" or "sparse" per layer (newer HF configs; Megatron-Bridge reads it first).
      pattern = read_layer_list(r, "mlp_layer_types", m.num_layers, " entries, \"dense\" or \"sparse\"", [](const json& e) -> std::optional<int> {
        const std::string v = e.is_string() ? e.get<std::string>() : "";
        if (v != "dense" && v != "sparse") return std::nullopt;
        return v == "sparse" ? 1 : 0;
      });
    } else if (r.has("moe_layer_start_index")) {
      // ERNIE-4.5 (HF modeling_ernie4_5_moe.py): layer i is MoE iff (i+1) % moe_layer_interval == 0
      // and moe_layer_start_index <= i <= moe_layer_end_index (-1: the last layer).
      const auto start = *int_or_first(r, "moe_layer_start_index", 0, kMaxLayers);
      auto end = int_or_first(r, "moe_layer_end_index", -1, kMaxLayers).value_or(-1);
      if (end < 0) end = m.num_layers - 1;
      const auto interval = r.opt_int("moe_layer_interval", 1, kMaxLayers).value_or(1);
      for (int i = 0; i < m.num_layers; ++i) pattern[i] = ((i + 1) % interval == 0 && i >= start && i <= end) ? 1 : 0;
    } else if (r.has("moe_layer_freq") && r.raw("moe_layer_freq").is_array()) {
      pattern = read_pattern(r, "moe_layer_freq", m.num_layers);  // one 0/1 per layer, as Megatron's flag takes it
    } else if (r.has("first_k_dense_replace") || r.has("moe_layer_freq") || r.has("first_last_k_dense_replace")) {
      // DeepSeek-V2/V3 (modeling_deepseek.py): layer i is MoE iff i >= first_k_dense_replace and
      // i % moe_layer_freq == 0. K-EXAONE's first published config named the leading dense layers
      // first_last_k_dense_replace (renamed first_k_dense_replace since; llama.cpp's converter reads
      // either as the leading dense block count).
      const char* dense_key = r.has("first_k_dense_replace") ? "first_k_dense_replace" : "first_last_k_dense_replace";
      const auto first_dense = r.opt_int(dense_key, 0, kMaxLayers).value_or(0);
      const auto freq = r.opt_int("moe_layer_freq", 1, kMaxLayers).value_or(1);
      for (int i = 0; i < m.num_layers; ++i) pattern[i] = (i >= first_dense && i % freq == 0) ? 1 : 0;
    } else if (r.has("interleave_moe_layer_step")) {
      // Llama-4 (HF Llama4TextConfig): MoE layers step-1, 2*step-1, ...
      const auto step = r.get_int("interleave_moe_layer_step", 1, kMaxLayers);
      for (int i = 0; i < m.num_layers; ++i) pattern[i] = (i + 1) % step == 0 ? 1 : 0;
    } else if (r.has("decoder_sparse_step") || r.has("mlp_only_layers")) {
      // Qwen2/3-MoE (modeling_qwen3_moe.py): MoE iff i not in mlp_only_layers and (i+1) % step == 0.
      const auto step = r.opt_int("decoder_sparse_step", 1, kMaxLayers).value_or(1);
      for (int i = 0; i < m.num_layers; ++i) pattern[i] = (i + 1) % step == 0 ? 1 : 0;
      if (r.has("mlp_only_layers")) {
        const json& only = r.raw("mlp_only_layers");
        if (!only.is_array()) r.fail("mlp_only_layers", "expected a list of layer indices");
        for (const auto& e : only) {
          if (!e.is_number_integer() || e.get<std::int64_t>() < 0 || e.get<std::int64_t>() >= m.num_layers)
            r.fail("mlp_only_layers", "expected layer indices 0.." + std::to_string(m.num_layers - 1));
          pattern[e.get<int>()] = 0;
        }
      }
    }
    if (std::find(pattern.begin(), pattern.end(), 0) != pattern.end()) moe.layer_pattern = pattern;
    if (std::find(pattern.begin(), pattern.end(), 1) == pattern.end())
      c.refuse("num_hidden_layers", "an MoE config whose layer pattern leaves no MoE layer");
    m.moe = moe;
  } else if (!experts) {
    // No expert count strata reads, yet the config names experts: an MoE encoding this reader does
    // not know would otherwise be costed as a dense model.
    for (const auto& [key, v] : j.items()) {
      if (lower(key).find("expert") == std::string::npos) continue;
      const bool some = (v.is_number() && v.get<double>() > 0) || (v.is_array() && !v.empty());
      if (some) c.refuse(key, "an MoE config in a form strata does not read (no n_routed_experts, num_local_experts, "
                            "num_experts or moe_num_experts)");
    }
  }
}

// Nemotron-H and Nemotron 3 (HF NemotronHConfig, configuration_nemotron_h.py; Megatron-Bridge
// nemotron_h_bridge.py): hybrid_override_pattern places Mamba-2 (M), attention (*), MLP (-) and
// MoE (E) layers. The MoE layers route by sigmoid scores with an expert bias (the bridge's
// moe_router_score_function "sigmoid", moe_router_enable_expert_bias) through squared-ReLU experts
// and one shared expert of moe_shared_expert_intermediate_size; Nemotron 3 Super's experts work in
// its moe_latent_size (latent MoE), and its multi-token prediction modules run the layers of
// mtp_hybrid_override_pattern.
void read_hybrid(const HfConfig& c, ModelSpec& m) {
  const JsonReader& r = c.r;
  // Multi-token prediction (Nemotron 3 Super): num_nextn_predict_layers modules, each running the
  // layers of mtp_hybrid_override_pattern (Megatron-Bridge nemotron_h_bridge.py _hf_mtp_config).
  // Their layers: mtp_layers_block_type, else mtp_hybrid_override_pattern, else NemotronHConfig's
  // default ["full_attention", "moe"].
  if (m.mtp_layers > 0) {
    if (auto list = nemotron_h_layer_list(r, "mtp_layers_block_type")) {
      m.hybrid_mtp_pattern = *list;
    } else if (r.has("mtp_hybrid_override_pattern")) {
      m.hybrid_mtp_pattern = r.get_string("mtp_hybrid_override_pattern");
      if (m.hybrid_mtp_pattern.empty() || m.hybrid_mtp_pattern.find_first_not_of("M*-E") != std::string::npos)
        r.fail("mtp_hybrid_override_pattern",
               "expected a pattern of M (Mamba), * (attention), - (MLP) and E (MoE) layers, found \"" + m.hybrid_mtp_pattern + "\"");
    } else {
      m.hybrid_mtp_pattern = "*E";
    }
  }
  // MambaMixer's fixed recipe (Megatron-Core asserts no linear bias, a conv bias, SiLU).
  if (lower(r.opt_string("mamba_hidden_act").value_or("silu")) != "silu")
    c.refuse("mamba_hidden_act", "a Mamba mixer activation other than SiLU");
  if (r.opt_bool("mamba_proj_bias", false)) c.refuse("mamba_proj_bias", "biased Mamba projections");
  if (!r.opt_bool("use_conv_bias", true)) c.refuse("use_conv_bias", "a Mamba conv1d without bias");
  if (const char* list = nemotron_h_list_key(r)) {
    m.hybrid_pattern = *nemotron_h_layer_list(r, list);
  } else {
    if (!r.has("hybrid_override_pattern")) r.fail("hybrid_override_pattern", "missing: the layers (or layers_block_type, a list of them)");
    m.hybrid_pattern = r.get_string("hybrid_override_pattern");
    if (m.hybrid_pattern.empty()) r.fail("hybrid_override_pattern", "expected one symbol per layer (M, *, - or E), found an empty pattern");
  }
  if (m.hybrid_pattern.find('M') != std::string::npos) {
    MambaSpec mb = read_mamba(r, false);
    if (!r.has("mamba_num_heads")) mb.num_heads = 128;  // NemotronHConfig's default
    m.mamba = mb;
  }
  if (m.moe) {
    if (r.has("moe_shared_expert_intermediate_size"))
      m.moe->shared_expert_ffn_hidden_size = r.get_int("moe_shared_expert_intermediate_size", 0, kMaxDim);
    m.moe->router_score_function = "sigmoid";
    m.moe->router_bias = true;
    if (r.has("moe_latent_size") && !r.raw("moe_latent_size").is_null())
      m.moe->latent_size = r.get_int("moe_latent_size", 1, m.hidden_size);
  }
}

// Qwen3-Next and Qwen3.5 (HF Qwen3NextConfig, Qwen3_5TextConfig; Megatron-Bridge qwen3_next_bridge.py
// and qwen35_bridge.py): every decoder layer's mixer is a gated DeltaNet (layer_types
// "linear_attention") or gated softmax attention ("full_attention"; without layer_types every
// full_attention_interval-th layer), followed by an MoE or a dense MLP. Read as Megatron-Core's
// HybridModel stacks them: each decoder layer one mixer layer ("G" or "*") and one MLP layer ("E" or
// "-"), the cost a decoder layer has (predict's "*-" test). Norms are zero-centred (1 + w), q and k
// RMS-normed, the attention output gated per query channel (Qwen3.5's attn_output_gate), the shared
// expert gated; Qwen3.5's MTP module (mtp_num_hidden_layers) is a gated attention layer and the MLP
// the model's layers have.
void read_gated_deltanet_hybrid(const HfConfig& c, ModelSpec& m) {
  const JsonReader& r = c.r;
  const int layers = m.num_layers;
  std::string mixers(static_cast<std::size_t>(layers), 'G');
  if (r.has("layer_types") && r.raw("layer_types").is_array()) {
    const json& lt = r.raw("layer_types");
    if (static_cast<int>(lt.size()) != layers) r.fail("layer_types", "expected " + std::to_string(layers) + " entries, one per layer");
    for (int i = 0; i < layers; ++i) {
      const std::string v = lt[static_cast<std::size_t>(i)].is_string() ? lt[static_cast<std::size_t>(i)].get<std::string>() : "";
      if (v != "linear_attention" && v != "full_attention") r.fail("layer_types", "expected \"linear_attention\" or \"full_attention\" per layer");
      if (v == "full_attention") mixers[static_cast<std::size_t>(i)] = '*';
    }
  } else {
    const std::int64_t every = r.opt_int("full_attention_interval", 1, kMaxLayers).value_or(4);
    for (int i = 0; i < layers; ++i)
      if ((i + 1) % every == 0) mixers[static_cast<std::size_t>(i)] = '*';
  }
  if (mixers.find('G') != std::string::npos) m.gdn = read_gdn(r, false);
  if (m.moe) m.moe->shared_expert_gate = m.moe->shared_expert_ffn_hidden_size > 0;
  if (r.has("mtp_num_hidden_layers") && !r.raw("mtp_num_hidden_layers").is_null())
    m.mtp_layers = static_cast<int>(r.get_int("mtp_num_hidden_layers", 0, kMaxMtpLayers));
  split_into_hybrid_layers(m, mixers);
  m.attention_output_gate = c.type == "qwen3_next" || r.opt_bool("attn_output_gate", true);
  m.zero_centered_gamma = true;
  m.qk_layernorm = true;
}

ModelSpec model_from_hf(const json& top, const std::string& where, const std::string& top_path) {
  const bool wrapped = top.contains("text_config") && top["text_config"].is_object() && !top.contains("num_hidden_layers");
  const json& j = wrapped ? top["text_config"] : top;
  const std::string path = wrapped ? top_path + "/text_config" : top_path;
  const JsonReader r(j, where, path), rtop(top, where, top_path);
  HfConfig c{j, r, rtop, where, path, lower(rtop.opt_string("model_type").value_or(r.opt_string("model_type").value_or(""))), ""};
  ModelSpec m;
  resolve_family(c, top, wrapped, m);
  read_sizes(c, m);
  read_layer_recipe(c, m);
  read_positions(c, m);
  read_attention_layers(c, m);
  // ---- multi-latent attention (DeepSeek-V2/V3, Kimi-K2) ----
  if (r.has("kv_lora_rank")) {
    const MlaSpec a = read_mla(r);
    m.mla = a;
    m.num_query_groups = m.num_attention_heads;  // MLA up-projects K and V per head
    m.kv_channels = a.qk_nope_head_dim + a.qk_rope_head_dim;
    m.add_qkv_bias = false;
    m.qk_layernorm = true;  // q_a_layernorm (with q_lora_rank) and kv_a_layernorm (HF modeling_deepseek_v3.py)
  }
  if (r.has("index_topk")) {
    DsaSpec d = read_dsa(r, false);
    // DeepSeek's reference indexer rotates q and k by a Hadamard transform (DeepSeek-V3.2
    // inference/model.py rotate_activation); GLM-5's does not (Megatron-Bridge glm5_bridge.py sets
    // dsa_indexer_rotate_activation False).
    d.rotate_activation = c.type != "glm_moe_dsa";
    // GLM-5.2 writes the layers that reuse an earlier layer's top-k as a list too; strata reads the
    // rule (index_topk_freq, index_skip_topk_offset) and refuses a list that says otherwise.
    if (r.has("index_topk_pattern") && !r.raw("index_topk_pattern").is_null())
      c.refuse("index_topk_pattern", "a per-layer top-k sharing pattern");
    if (r.has("indexer_types") && r.raw("indexer_types").is_array()) {
      const json& t = r.raw("indexer_types");
      if (static_cast<int>(t.size()) != m.num_layers) r.fail("indexer_types", "expected one entry per layer");
      for (int i = 0; i < m.num_layers; ++i) {
        const bool own = t[i].is_string() && t[i].get<std::string>() == "full";
        const bool shared = t[i].is_string() && t[i].get<std::string>() == "shared";
        if (!own && !shared) r.fail("indexer_types", "expected \"full\" or \"shared\" per layer");
        if (own != d.computes_topk(i + 1))
          c.refuse("indexer_types", "layer " + std::to_string(i) + " sharing top-k other than index_topk_freq/index_skip_topk_offset say");
      }
    }
    m.dsa = d;
  }

  // ---- multi-token prediction (DeepSeek-V3, GLM-4.5, MiMo): trained with the model, as
  // Megatron-Bridge's DeepSeek-V3 bridge sets mtp_num_layers from num_nextn_predict_layers ----
  if (r.has("num_nextn_predict_layers") && !r.raw("num_nextn_predict_layers").is_null())
    m.mtp_layers = static_cast<int>(r.get_int("num_nextn_predict_layers", 0, kMaxMtpLayers));

  read_moe(c, m);
  if (c.type == "nemotron_h") read_hybrid(c, m);
  if (linear_attention_family(c.type)) read_gated_deltanet_hybrid(c, m);
  return m;
}

}  // namespace

const char* to_string(Activation a) {
  switch (a) {
    case Activation::gelu: return "gelu";
    case Activation::swiglu: return "swiglu";
    case Activation::geglu: return "geglu";
    case Activation::squared_relu: return "squared_relu";
    case Activation::quick_geglu: return "quick_geglu";
  }
  return "?";
}
const char* to_string(Normalization n) { return n == Normalization::layernorm ? "layernorm" : "rmsnorm"; }
const char* to_string(PositionEmbedding p) {
  switch (p) {
    case PositionEmbedding::learned: return "learned";
    case PositionEmbedding::rope: return "rope";
    case PositionEmbedding::alibi: return "alibi";
    case PositionEmbedding::none: return "none";
  }
  return "?";
}

int ModelSpec::count_hybrid(char symbol) const {
  return static_cast<int>(std::count(hybrid_pattern.begin(), hybrid_pattern.end(), symbol));
}

LayerKind ModelSpec::hybrid_kind(char symbol) const {
  LayerKind kind;
  kind.moe = symbol == 'E' && moe.has_value();
  switch (symbol) {
    case 'M': kind.part = Sublayer::mamba; break;
    case 'G': kind.part = Sublayer::gdn; break;
    case '*': kind.part = Sublayer::attention; break;
    case '-':
    case 'E': kind.part = Sublayer::mlp; break;
    default: break;
  }
  return kind;
}

LayerKind ModelSpec::layer_kind(int layer) const {
  if (!hybrid()) return {is_moe_layer(layer), uses_sliding_window(layer)};
  LayerKind kind = hybrid_kind(hybrid_symbol(layer));
  kind.sliding_window = uses_sliding_window(layer);
  return kind;
}

std::vector<LayerKind> ModelSpec::mtp_layer_kinds() const {
  if (hybrid_mtp_pattern.empty()) return {layer_kind(num_layers - 1)};
  std::vector<LayerKind> kinds;
  for (char c : hybrid_mtp_pattern) kinds.push_back(hybrid_kind(c));
  return kinds;
}

bool ModelSpec::is_moe_layer(int layer) const {
  if (!moe) return false;
  if (hybrid()) return hybrid_symbol(layer) == 'E';
  if (moe->layer_pattern.empty()) return true;
  return layer >= 0 && layer < static_cast<int>(moe->layer_pattern.size()) && moe->layer_pattern[layer] != 0;
}

int ModelSpec::num_moe_layers() const {
  int n = 0;
  for (int i = 0; i < num_layers; ++i) n += is_moe_layer(i) ? 1 : 0;
  return n;
}

bool ModelSpec::uses_sliding_window(int layer) const {
  if (sliding_window <= 0) return false;
  if (hybrid() && hybrid_symbol(layer) != '*') return false;
  if (sliding_window_pattern.empty()) return true;
  return layer >= 0 && layer < static_cast<int>(sliding_window_pattern.size()) && sliding_window_pattern[layer] != 0;
}

int ModelSpec::full_attention_every() const {
  if (sliding_window <= 0 || sliding_window_pattern.empty()) return 0;
  for (int n = 1; n <= num_layers; ++n) {
    bool ok = true;
    for (int i = 0; i < num_layers && ok; ++i) ok = uses_sliding_window(i) == ((i + 1) % n != 0);
    if (ok) return n;
  }
  return 0;
}

bool DsaSpec::computes_topk(int layer) const {
  if (topk_freq <= 1) return true;
  const int offset = std::max(skip_topk_offset, 1);
  return std::max(layer - offset, 0) % topk_freq == 0;
}

double ModelSpec::indexer_params() const {
  if (!dsa || !mla) return 0;
  // Megatron-Core DSAIndexer: linear_wq_b (q latent, or the hidden state without one, to
  // heads x dim), linear_wk (hidden to one key of dim), k_norm (a LayerNorm: gain and bias),
  // linear_weights_proj (hidden to one weight per head).
  const double h = static_cast<double>(hidden_size);
  const double q_in = mla->q_lora_rank > 0 ? static_cast<double>(mla->q_lora_rank) : h;
  const double heads = static_cast<double>(dsa->index_heads), d = static_cast<double>(dsa->index_head_dim);
  return q_in * heads * d + h * d + 2 * d + h * heads;
}

double ModelSpec::indexer_params_at(int layer) const { return dsa && dsa->computes_topk(layer + 1) ? indexer_params() : 0; }

double ModelSpec::indexer_share() const {
  if (!dsa || num_layers <= 0) return dsa ? 1.0 : 0.0;
  if (dsa->topk_freq <= 1) return 1.0;
  // computes_topk counted in closed form (called per layer kind on the prediction path): layers
  // 1..offset, then every freq-th layer after the offset.
  const int offset = std::max(dsa->skip_topk_offset, 1);
  const int own = std::min(num_layers, offset) + std::max(0, num_layers - offset) / dsa->topk_freq;
  return static_cast<double>(own) / num_layers;
}

double ModelSpec::attention_params() const {
  const double h = static_cast<double>(hidden_size);
  const double heads = num_attention_heads;
  if (mla) {
    // DeepSeek-V2 §2.1 (modeling_deepseek.py DeepseekV2Attention): q_a (h x q_lora) + its RMSNorm
    // + q_b (q_lora x heads*(nope+rope)), or q_proj when q_lora_rank is 0; kv_a (h x kv_lora+rope)
    // + its RMSNorm + kv_b (kv_lora x heads*(nope+v)); o_proj (heads*v x h).
    const double qk = static_cast<double>(mla->qk_nope_head_dim + mla->qk_rope_head_dim);
    const double ql = static_cast<double>(mla->q_lora_rank), kl = static_cast<double>(mla->kv_lora_rank);
    // The latent norms exist only with qk_layernorm, as in Megatron's MLA (gpt_layer_specs.py).
    const double norm = qk_layernorm ? 1 : 0;
    const double q = ql > 0 ? h * ql + norm * ql + ql * heads * qk : h * heads * qk;
    const double kv = h * (kl + static_cast<double>(mla->qk_rope_head_dim)) + norm * kl +
                      kl * heads * static_cast<double>(mla->qk_nope_head_dim + mla->v_head_dim);
    const double o = heads * static_cast<double>(mla->v_head_dim) * h;
    return q + kv + o + (add_linear_bias ? h : 0);
  }
  const double qd = static_cast<double>(q_hidden()), kv = static_cast<double>(kv_hidden());
  double p = h * (qd + 2 * kv) + qd * h;
  if (attention_output_gate) p += h * qd;  // the gate's half of the query projection
  if (add_linear_bias) p += (qd + 2 * kv) + h;
  else if (add_qkv_bias) p += qd + 2 * kv;
  if (qk_layernorm) p += 2.0 * static_cast<double>(head_dim());  // q_norm, k_norm gains shared by the heads
  if (attention_sinks) p += heads;                                 // one sink logit per head
  return p;
}

namespace {
double mlp_params_of(const ModelSpec& m, double f, double h) {
  const bool gated = m.gated_mlp();
  double p = (gated ? 3 : 2) * h * f;
  if (m.add_linear_bias) p += (gated ? 2 : 1) * f + h;
  return p;
}
}  // namespace

double ModelSpec::dense_mlp_params() const {
  return mlp_params_of(*this, static_cast<double>(ffn_hidden_size), static_cast<double>(hidden_size));
}
double ModelSpec::expert_params() const {
  return moe ? mlp_params_of(*this, static_cast<double>(moe->expert_ffn_hidden_size), static_cast<double>(expert_width())) : 0;
}
double ModelSpec::shared_expert_params() const {
  return moe && moe->shared_expert_ffn_hidden_size > 0
             ? mlp_params_of(*this, static_cast<double>(moe->shared_expert_ffn_hidden_size), static_cast<double>(hidden_size))
             : 0;
}
double ModelSpec::moe_latent_params() const {
  if (!moe || moe->latent_size <= 0) return 0;
  const double h = static_cast<double>(hidden_size), l = static_cast<double>(moe->latent_size);
  return 2 * h * l + (add_linear_bias ? h + l : 0);
}
double ModelSpec::router_params() const {
  return moe ? (static_cast<double>(hidden_size) + (moe->router_bias ? 1 : 0)) * moe->num_experts : 0;
}
double ModelSpec::layer_norm_params() const {
  return (normalization == Normalization::layernorm ? 4 : 2) * static_cast<double>(hidden_size);
}

double ModelSpec::norm_params() const { return layer_norm_params() / 2; }

double ModelSpec::mamba_params() const {
  if (!mamba) return 0;
  // Megatron-Core MambaMixer: in_proj (h x (z x B C dt)), conv1d weight (conv_kernel taps) and bias
  // per x/B/C channel, dt_bias, A_log and D per head, the gated RMSNorm's gain over d_inner, out_proj
  // (d_inner x h); no linear biases (MambaMixer asserts `not bias`).
  const MambaSpec& mb = *mamba;
  const double h = static_cast<double>(hidden_size);
  return h * static_cast<double>(mb.in_proj_width()) + static_cast<double>(mb.conv_channels()) * (mb.conv_kernel + 1) +
         3.0 * mb.num_heads + static_cast<double>(mb.d_inner()) * (1 + h);
}

double ModelSpec::gdn_params() const {
  if (!gdn) return 0;
  // Megatron-Core GatedDeltaNet: in_proj, conv1d without bias (conv_bias False), dt_bias and A_log per
  // value head, the gated RMSNorm's gain over one value head (shared by the heads), out_proj.
  const GdnSpec& g = *gdn;
  const double h = static_cast<double>(hidden_size);
  return h * static_cast<double>(g.in_proj_width()) + static_cast<double>(g.conv_channels()) * g.conv_kernel +
         2.0 * g.num_value_heads + static_cast<double>(g.value_head_dim) + static_cast<double>(g.v_dim()) * h;
}

double ModelSpec::kind_params(LayerKind kind, double experts) const {
  const double mlp = kind.moe && moe ? experts * expert_params() + shared_expert_params() + router_params() + moe_latent_params()
                                     : dense_mlp_params();
  switch (kind.part) {
    case Sublayer::decoder: return attention_params() + mlp + layer_norm_params();
    case Sublayer::attention: return attention_params() + norm_params();
    case Sublayer::mamba: return mamba_params() + norm_params();
    case Sublayer::gdn: return gdn_params() + norm_params();
    case Sublayer::mlp: return mlp + norm_params();
  }
  return 0;
}

// One layer's parameters with all its routed experts, or the top_k a token passes through.
double ModelSpec::layer_params_at(int layer) const {
  return kind_params(layer_kind(layer), moe ? moe->num_experts : 0) + indexer_params_at(layer);
}

double ModelSpec::active_layer_params_at(int layer) const {
  return kind_params(layer_kind(layer), moe ? moe->top_k : 0) + indexer_params_at(layer);
}

double ModelSpec::layer_params() const {
  if (num_layers <= 0) return layer_params_at(0);
  double sum = 0;
  for (int i = 0; i < num_layers; ++i) sum += layer_params_at(i);
  return sum / num_layers;
}

double ModelSpec::mtp_head_params() const {
  const double h = static_cast<double>(hidden_size);
  const double norms = (normalization == Normalization::layernorm ? 2 : 1) * 3 * h;  // enorm, hnorm, final norm
  return 2 * h * h + norms;
}

double ModelSpec::mtp_params() const {
  if (mtp_layers <= 0 || num_layers <= 0) return 0;
  double layers = hybrid_mtp_pattern.empty() ? layer_params_at(num_layers - 1) : 0.0;
  if (!hybrid_mtp_pattern.empty())
    for (LayerKind kind : mtp_layer_kinds()) layers += kind_params(kind, moe ? moe->num_experts : 0);
  return mtp_weight_copies() * (layers + mtp_head_params());
}

double ModelSpec::embedding_params(std::int64_t seq_length) const {
  const double h = static_cast<double>(hidden_size);
  double p = static_cast<double>(vocab_size) * h;
  if (position_embedding == PositionEmbedding::learned) p += static_cast<double>(seq_length) * h;
  if (!tied_embeddings) p += static_cast<double>(vocab_size) * h;
  return p + 2 * h;  // final norm
}

double ModelSpec::total_params(std::int64_t seq_length) const {
  double sum = 0;
  for (int i = 0; i < num_layers; ++i) sum += layer_params_at(i);
  return sum + embedding_params(seq_length);
}

std::vector<int> every_nth_layer(int num_layers, std::int64_t n) {
  std::vector<int> v;
  for (int i = 0; i < num_layers; ++i) v.push_back((i + 1) % n == 0 ? 1 : 0);
  return v;
}

double ModelSpec::active_params(std::int64_t seq_length) const {
  double sum = 0;
  for (int i = 0; i < num_layers; ++i) sum += active_layer_params_at(i);
  return sum + embedding_params(seq_length);
}

namespace {
// A hybrid pattern's symbols against the model: one per layer, each a layer strata costs, the parts
// each symbol needs present (Megatron-Core hybrid_layer_allocation.py validate_segment_layers).
void validate_hybrid(const ModelSpec& m, const std::string& where, const std::string& path) {
  if (!m.hybrid()) {
    if (m.mamba) throw InputError(where, path + "/mamba", "Mamba layers need a hybrid_pattern that places them (\"M\")");
    if (m.gdn) throw InputError(where, path + "/gdn", "gated DeltaNet layers need a hybrid_pattern that places them (\"G\")");
    if (!m.hybrid_mtp_pattern.empty()) throw InputError(where, path + "/hybrid_mtp_pattern", "an MTP pattern needs a hybrid_pattern");
    return;
  }
  if (static_cast<int>(m.hybrid_pattern.size()) != m.num_layers)
    throw InputError(where, path + "/hybrid_pattern", "expected " + std::to_string(m.num_layers) + " symbols, one per layer; found " +
                                                          std::to_string(m.hybrid_pattern.size()));
  if (m.mtp_layers > 0 && m.hybrid_mtp_pattern.empty())
    throw InputError(where, path + "/hybrid_mtp_pattern", "a hybrid model's MTP layers need their pattern (Megatron's \"main/mtp\" form)");
  if (m.mtp_layers == 0 && !m.hybrid_mtp_pattern.empty())
    throw InputError(where, path + "/mtp_layers", "an MTP pattern without MTP layers (expected mtp_layers of 1 or more)");
  for (const auto& [pattern, key] : {std::pair{&m.hybrid_pattern, "/hybrid_pattern"}, std::pair{&m.hybrid_mtp_pattern, "/hybrid_mtp_pattern"}})
    for (char c : *pattern) {
      if (c == 'D' || c == '+')
        throw InputError(where, path + key, std::string("symbol '") + c + "' (" +
                                                (c == 'D' ? "DeepSeek sparse attention" : "multi-latent attention") +
                                                " layers in a hybrid) is not supported by strata's cost model");
      if (c != 'M' && c != 'G' && c != '*' && c != '-' && c != 'E')
        throw InputError(where, path + key, std::string("unknown symbol '") + c +
                                                "': expected M (Mamba), G (gated DeltaNet), * (attention), - (MLP) or E (MoE)");
    }
  // Each part the layers (those of the MTP modules included) hold needs its shape, and a shape its layers.
  const std::string layers = m.hybrid_pattern + m.hybrid_mtp_pattern;
  struct Part {
    char symbol;
    bool shaped;
    const char *key, *name;
  };
  for (const Part& part : {Part{'M', m.mamba.has_value(), "/mamba", "Mamba"}, Part{'G', m.gdn.has_value(), "/gdn", "gated DeltaNet"},
                           Part{'E', m.moe.has_value(), "/moe", "MoE"}}) {
    const bool placed = layers.find(part.symbol) != std::string::npos;
    if (placed && !part.shaped)
      throw InputError(where, path + part.key, std::string("the pattern has ") + part.name + " layers (" + part.symbol +
                                                   ") but the model gives no " + part.name + " shape");
    if (!placed && part.shaped)
      throw InputError(where, path + part.key, std::string(part.symbol == 'E' ? "an " : "a ") + part.name + " shape without " +
                                                   part.name + " layers (" + part.symbol + ") in the pattern");
  }
  if (m.gdn && m.gdn->num_value_heads % m.gdn->num_key_heads != 0)
    throw InputError(where, path + "/gdn/num_value_heads", "num_value_heads " + std::to_string(m.gdn->num_value_heads) +
                                                              " must be a multiple of num_key_heads " + std::to_string(m.gdn->num_key_heads));
  if (m.moe && !m.moe->layer_pattern.empty())
    throw InputError(where, path + "/moe/layer_pattern", "a hybrid model places its MoE layers by its pattern (E), not a layer_pattern");
  if (m.mla || m.dsa) throw InputError(where, path + "/mla", "multi-latent attention in a hybrid model is not supported by strata's cost model");
  if (m.mamba) {
    const MambaSpec& mb = *m.mamba;
    if (mb.num_heads % mb.num_groups != 0)
      throw InputError(where, path + "/mamba/num_groups", "num_groups " + std::to_string(mb.num_groups) + " must divide num_heads " +
                                                           std::to_string(mb.num_heads) + " (MambaMixer)");
  }
}
}  // namespace

void split_into_hybrid_layers(ModelSpec& m, const std::string& mixers) {
  std::string pattern;
  for (int i = 0; i < m.num_layers; ++i) {
    pattern += mixers[static_cast<std::size_t>(i)];
    pattern += m.is_moe_layer(i) ? 'E' : '-';
  }
  if (m.moe) m.moe->layer_pattern.clear();
  m.hybrid_pattern = pattern;
  m.num_layers = static_cast<int>(pattern.size());
  if (m.mtp_layers > 0) m.hybrid_mtp_pattern = m.default_hybrid_mtp_pattern();
}

void validate_model(const ModelSpec& m, const std::string& where, const std::string& path) {
  if (m.kv_channels == 0 && !m.mla && m.hidden_size % m.num_attention_heads != 0)
    throw InputError(where, path + "/hidden_size", "hidden_size " + std::to_string(m.hidden_size) +
                                                " is not divisible by num_attention_heads " + std::to_string(m.num_attention_heads));
  if (m.num_query_groups > m.num_attention_heads || m.num_attention_heads % m.num_query_groups != 0)
    throw InputError(where, path + "/num_query_groups", "num_query_groups " + std::to_string(m.num_query_groups) +
                                                     " must divide num_attention_heads " + std::to_string(m.num_attention_heads));
  if (m.dsa && !m.mla)
    throw InputError(where, path + "/dsa", "DeepSeek Sparse Attention needs multi-latent attention (an \"mla\" object): "
                                           "Megatron-Core's DSAttention is MLA's absorbed form");
  if (m.moe && (m.moe->top_k < 1 || m.moe->top_k > m.moe->num_experts))
    throw InputError(where, path + "/moe/top_k", "top_k must be between 1 and num_experts");
  if (m.moe && !m.moe->layer_pattern.empty() && static_cast<int>(m.moe->layer_pattern.size()) != m.num_layers)
    throw InputError(where, path + "/moe/layer_pattern", "expected " + std::to_string(m.num_layers) + " entries, one per layer");
  if (!m.sliding_window_pattern.empty() && static_cast<int>(m.sliding_window_pattern.size()) != m.num_layers)
    throw InputError(where, path + "/sliding_window_pattern", "expected " + std::to_string(m.num_layers) + " entries, one per layer");
  if (!m.no_rope_layers.empty() && static_cast<int>(m.no_rope_layers.size()) != m.num_layers)
    throw InputError(where, path + "/no_rope_layers", "expected " + std::to_string(m.num_layers) + " entries, one per layer");
  if (!m.no_rope_layers.empty() && m.position_embedding != PositionEmbedding::rope)
    throw InputError(where, path + "/no_rope_layers", "layers without rotary embedding need a rope model");
  if (m.rotary_percent <= 0 || m.rotary_percent > 1)
    throw InputError(where, path + "/rotary_percent", "expected a fraction in (0, 1]");
  validate_hybrid(m, where, path);
}

namespace {

// Rotary settings mean nothing without rotary positions, and the writer leaves them out then:
// one representation per model, so a model reads back equal to itself.
void forget_unused_rotary(ModelSpec& m) {
  if (m.position_embedding == PositionEmbedding::rope) return;
  m.rotary_base = 10000;
  m.rotary_percent = 1.0;
}

}  // namespace

ModelSpec model_from_json(const json& j, const std::string& where, const std::string& path) {
  if (looks_like_hf(j)) {
    ModelSpec m = model_from_hf(j, where, path);
    forget_unused_rotary(m);
    validate_model(m, where, path);
    return m;
  }
  JsonReader r(j, where, path);
  r.reject_unknown_keys({"name", "aliases", "source", "num_layers", "hidden_size", "num_attention_heads",
                         "num_query_groups", "ffn_hidden_size", "vocab_size", "max_seq_length", "activation",
                         "normalization", "tied_embeddings", "position_embedding", "dropout", "moe", "notes", "head_dim",
                         "add_linear_bias", "add_qkv_bias", "qk_layernorm", "qk_l2_norm", "qk_norm_across_heads", "norm_after_sublayers",
                         "norm_around_sublayers", "embedding_norm", "parallel_attention_mlp", "scalar_multipliers", "kv_shared_across_layers",
                         "per_layer_activation_clamp", "partial_linear_biases", "gelu_tanh_approximation", "language_model_of_multimodal",
                         "attention_sinks", "glu_linear_offset",
                         "activation_clamp", "zero_centered_gamma", "rotary_base", "rotary_percent", "norm_epsilon",
                         "rope_scaling", "rope_scaling_parameters", "sliding_window", "sliding_window_pattern", "no_rope_layers", "attention_chunk_size", "mla",
                         "dsa", "mtp_layers", "mtp_repeated_layer", "hybrid_pattern", "hybrid_mtp_pattern", "mamba", "gdn", "attention_output_gate",
                         "parameters"});
  ModelSpec m;
  m.name = r.get_string("name");
  m.aliases = r.opt_string_list("aliases");
  m.source = r.opt_string("source").value_or("");
  m.num_layers = static_cast<int>(r.get_int("num_layers", 1, kMaxLayers));
  m.hidden_size = r.get_int("hidden_size", 1, kMaxDim);
  m.num_attention_heads = static_cast<int>(r.get_int("num_attention_heads", 1, kMaxDim));
  m.num_query_groups = static_cast<int>(r.opt_int("num_query_groups", 1, kMaxDim).value_or(m.num_attention_heads));
  m.ffn_hidden_size = r.get_int("ffn_hidden_size", 1, kMaxDim);
  m.vocab_size = r.get_int("vocab_size", 1, kMaxDim);
  m.max_seq_length = r.opt_int("max_seq_length", 1, kMaxDim * 64).value_or(2048);
  m.activation = r.has("activation") ? parse_activation(r, "activation") : Activation::gelu;
  m.normalization = r.has("normalization") ? parse_norm(r, "normalization") : Normalization::layernorm;
  m.tied_embeddings = r.opt_bool("tied_embeddings", true);
  m.position_embedding = r.has("position_embedding") ? parse_pos(r, "position_embedding") : PositionEmbedding::learned;
  m.dropout = r.opt_bool("dropout", false);
  if (r.has("head_dim")) {
    const std::int64_t d = r.get_int("head_dim", 1, kMaxDim);
    if (d * m.num_attention_heads != m.hidden_size) m.kv_channels = d;
  }
  // Older model files carry no bias keys: GPT-style LayerNorm models had biases, RMSNorm ones not.
  m.add_linear_bias = r.opt_bool("add_linear_bias", m.normalization == Normalization::layernorm);
  m.add_qkv_bias = r.opt_bool("add_qkv_bias", false);
  m.qk_layernorm = r.opt_bool("qk_layernorm", false);
  m.qk_l2_norm = r.opt_bool("qk_l2_norm", false);
  m.qk_norm_across_heads = r.opt_bool("qk_norm_across_heads", false);
  m.norm_after_sublayers = r.opt_bool("norm_after_sublayers", false);
  m.norm_around_sublayers = r.opt_bool("norm_around_sublayers", false);
  m.embedding_norm = r.opt_bool("embedding_norm", false);
  m.parallel_attention_mlp = r.opt_bool("parallel_attention_mlp", false);
  m.scalar_multipliers = r.opt_bool("scalar_multipliers", false);
  m.kv_shared_across_layers = r.opt_bool("kv_shared_across_layers", false);
  m.per_layer_activation_clamp = r.opt_bool("per_layer_activation_clamp", false);
  m.partial_linear_biases = r.opt_bool("partial_linear_biases", false);
  m.gelu_tanh_approximation = r.opt_bool("gelu_tanh_approximation", false);
  m.language_model_of_multimodal = r.opt_bool("language_model_of_multimodal", false);
  m.attention_sinks = r.opt_bool("attention_sinks", false);
  m.glu_linear_offset = r.has("glu_linear_offset") ? r.get_number("glu_linear_offset") : 0.0;
  m.activation_clamp = r.opt_positive("activation_clamp", 1e6).value_or(0.0);
  m.zero_centered_gamma = r.opt_bool("zero_centered_gamma", false);
  m.rotary_base = r.opt_positive("rotary_base", 1e12).value_or(10000);
  m.rotary_percent = r.opt_positive("rotary_percent", 1).value_or(1.0);
  m.norm_epsilon = r.opt_positive("norm_epsilon", 1).value_or(1e-5);
  m.rope_scaling = r.opt_string("rope_scaling").value_or("");
  if (r.has("rope_scaling_parameters")) {
    JsonReader pr = r.child("rope_scaling_parameters");
    pr.reject_unknown_keys({"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings", "beta_fast",
                            "beta_slow", "mscale", "mscale_all_dim", "truncate"});
    m.rope_params = read_rope_scaling_params(pr, m.max_seq_length);
  } else if (m.rope_scaling == "llama3") {
    m.rope_params = {.factor = 8, .original_max_position = 8192};  // Llama 3.1's (and Megatron --use-rope-scaling's)
  }
  m.sliding_window = r.opt_int("sliding_window", 0, kMaxDim * 64).value_or(0);
  if (r.has("sliding_window_pattern")) m.sliding_window_pattern = read_pattern(r, "sliding_window_pattern", m.num_layers);
  if (r.has("no_rope_layers")) m.no_rope_layers = read_pattern(r, "no_rope_layers", m.num_layers);
  m.attention_chunk_size = r.opt_int("attention_chunk_size", 0, kMaxDim * 64).value_or(0);
  m.mtp_layers = static_cast<int>(r.opt_int("mtp_layers", 0, kMaxMtpLayers).value_or(0));
  m.mtp_repeated_layer = r.opt_bool("mtp_repeated_layer", false);
  if (m.mtp_repeated_layer && m.mtp_layers == 0)
    r.fail("mtp_repeated_layer", "a shared MTP module needs MTP layers (expected mtp_layers of 1 or more)");
  if (r.has("mla")) {
    JsonReader ar = r.child("mla");
    ar.reject_unknown_keys({"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"});
    m.mla = read_mla(ar);
  }
  if (r.has("dsa")) {
    JsonReader dr = r.child("dsa");
    dr.reject_unknown_keys({"index_heads", "index_head_dim", "index_topk", "topk_freq", "skip_topk_offset", "rope_interleaved",
                            "rotate_activation", "indexer_loss_coeff", "sparse_indexer_loss"});
    m.dsa = read_dsa(dr, true);
  }
  if (r.has("hybrid_pattern")) {
    m.hybrid_pattern = r.get_string("hybrid_pattern");
    if (m.hybrid_pattern.empty()) r.fail("hybrid_pattern", "expected one symbol per layer (M, *, - or E), found an empty pattern");
  }
  if (r.has("hybrid_mtp_pattern")) m.hybrid_mtp_pattern = r.get_string("hybrid_mtp_pattern");
  if (r.has("mamba")) {
    JsonReader mr = r.child("mamba");
    mr.reject_unknown_keys({"num_heads", "head_dim", "state_dim", "num_groups", "conv_kernel", "chunk_size"});
    m.mamba = read_mamba(mr, true);
  }
  if (r.has("gdn")) {
    JsonReader gr = r.child("gdn");
    gr.reject_unknown_keys({"num_key_heads", "num_value_heads", "key_head_dim", "value_head_dim", "conv_kernel", "chunk_size"});
    m.gdn = read_gdn(gr, true);
  }
  m.attention_output_gate = r.opt_bool("attention_output_gate", false);
  if (r.has("moe")) {
    JsonReader mr = r.child("moe");
    mr.reject_unknown_keys({"num_experts", "top_k", "expert_ffn_hidden_size", "shared_expert_ffn_hidden_size", "shared_expert_gate", "layer_pattern",
                            "router_score_function", "router_bias", "num_groups", "group_topk", "group_by_max_score",
                            "topk_scaling_factor", "normalize_top_k", "latent_size", "sinkhorn"});
    MoeSpec moe;
    moe.num_experts = static_cast<int>(mr.get_int("num_experts", 1, 1 << 16));
    moe.top_k = static_cast<int>(mr.get_int("top_k", 1, 1 << 16));
    moe.expert_ffn_hidden_size = mr.opt_int("expert_ffn_hidden_size", 1, kMaxDim).value_or(m.ffn_hidden_size);
    moe.shared_expert_ffn_hidden_size = mr.opt_int("shared_expert_ffn_hidden_size", 0, kMaxDim).value_or(0);
    moe.shared_expert_gate = mr.opt_bool("shared_expert_gate", false);
    if (mr.has("layer_pattern")) moe.layer_pattern = read_pattern(mr, "layer_pattern", m.num_layers);
    moe.router_score_function = lower(mr.opt_string("router_score_function").value_or("softmax"));
    if (!one_of(moe.router_score_function, {"softmax", "sigmoid"}))
      mr.fail("router_score_function", "expected \"softmax\" or \"sigmoid\"");
    moe.router_bias = mr.opt_bool("router_bias", false);
    moe.num_groups = static_cast<int>(mr.opt_int("num_groups", 0, moe.num_experts).value_or(0));
    moe.group_topk = static_cast<int>(mr.opt_int("group_topk", 0, 1 << 16).value_or(0));
    moe.group_by_max_score = mr.opt_bool("group_by_max_score", false);
    moe.topk_scaling_factor = mr.opt_positive("topk_scaling_factor", 1e6).value_or(0.0);
    moe.normalize_top_k = mr.opt_bool("normalize_top_k", true);
    moe.sinkhorn = mr.opt_bool("sinkhorn", false);
    moe.latent_size = mr.opt_int("latent_size", 0, m.hidden_size).value_or(0);
    m.moe = moe;
  }
  forget_unused_rotary(m);
  validate_model(m, where, path);
  return m;
}

json model_to_json(const ModelSpec& m) {
  json j = {{"name", m.name},
            {"num_layers", m.num_layers},
            {"hidden_size", m.hidden_size},
            {"num_attention_heads", m.num_attention_heads},
            {"num_query_groups", m.num_query_groups},
            {"ffn_hidden_size", m.ffn_hidden_size},
            {"vocab_size", m.vocab_size},
            {"max_seq_length", m.max_seq_length},
            {"activation", to_string(m.activation)},
            {"normalization", to_string(m.normalization)},
            {"tied_embeddings", m.tied_embeddings},
            {"position_embedding", to_string(m.position_embedding)},
            {"dropout", m.dropout}};
  if (!m.aliases.empty()) j["aliases"] = m.aliases;
  if (!m.source.empty()) j["source"] = m.source;
  j["add_linear_bias"] = m.add_linear_bias;
  if (m.add_qkv_bias) j["add_qkv_bias"] = true;
  if (m.qk_layernorm) j["qk_layernorm"] = true;
  if (m.qk_l2_norm) j["qk_l2_norm"] = true;
  if (m.qk_norm_across_heads) j["qk_norm_across_heads"] = true;
  if (m.norm_after_sublayers) j["norm_after_sublayers"] = true;
  if (m.norm_around_sublayers) j["norm_around_sublayers"] = true;
  if (m.embedding_norm) j["embedding_norm"] = true;
  if (m.parallel_attention_mlp) j["parallel_attention_mlp"] = true;
  if (m.scalar_multipliers) j["scalar_multipliers"] = true;
  if (m.kv_shared_across_layers) j["kv_shared_across_layers"] = true;
  if (m.per_layer_activation_clamp) j["per_layer_activation_clamp"] = true;
  if (m.partial_linear_biases) j["partial_linear_biases"] = true;
  if (m.gelu_tanh_approximation) j["gelu_tanh_approximation"] = true;
  if (m.language_model_of_multimodal) j["language_model_of_multimodal"] = true;
  if (m.attention_sinks) j["attention_sinks"] = true;
  if (m.glu_linear_offset != 0) j["glu_linear_offset"] = m.glu_linear_offset;
  if (m.activation_clamp > 0) j["activation_clamp"] = m.activation_clamp;
  if (m.zero_centered_gamma) j["zero_centered_gamma"] = true;
  if (m.kv_channels > 0) j["head_dim"] = m.kv_channels;
  if (m.position_embedding == PositionEmbedding::rope) {
    j["rotary_base"] = m.rotary_base;
    if (m.rotary_percent != 1.0) j["rotary_percent"] = m.rotary_percent;
  }
  j["norm_epsilon"] = m.norm_epsilon;
  if (!m.rope_scaling.empty()) {
    const RopeScalingParams& p = m.rope_params;
    j["rope_scaling"] = m.rope_scaling;
    j["rope_scaling_parameters"] = {{"factor", p.factor}, {"low_freq_factor", p.low_freq_factor}, {"high_freq_factor", p.high_freq_factor},
                                    {"original_max_position_embeddings", p.original_max_position}, {"beta_fast", p.beta_fast},
                                    {"beta_slow", p.beta_slow}, {"mscale", p.mscale}, {"mscale_all_dim", p.mscale_all_dim},
                                    {"truncate", p.truncate}};
  }
  if (m.sliding_window > 0) j["sliding_window"] = m.sliding_window;
  if (!m.sliding_window_pattern.empty()) j["sliding_window_pattern"] = m.sliding_window_pattern;
  if (!m.no_rope_layers.empty()) j["no_rope_layers"] = m.no_rope_layers;
  if (m.attention_chunk_size > 0) j["attention_chunk_size"] = m.attention_chunk_size;
  if (m.mtp_layers > 0) j["mtp_layers"] = m.mtp_layers;
  if (m.mtp_repeated_layer) j["mtp_repeated_layer"] = true;
  if (m.mla)
    j["mla"] = {{"q_lora_rank", m.mla->q_lora_rank}, {"kv_lora_rank", m.mla->kv_lora_rank}, {"qk_nope_head_dim", m.mla->qk_nope_head_dim},
                {"qk_rope_head_dim", m.mla->qk_rope_head_dim}, {"v_head_dim", m.mla->v_head_dim}};
  if (m.dsa)
    j["dsa"] = {{"index_heads", m.dsa->index_heads}, {"index_head_dim", m.dsa->index_head_dim}, {"index_topk", m.dsa->index_topk},
                {"topk_freq", m.dsa->topk_freq}, {"skip_topk_offset", m.dsa->skip_topk_offset},
                {"rope_interleaved", m.dsa->rope_interleaved}, {"rotate_activation", m.dsa->rotate_activation},
                {"indexer_loss_coeff", m.dsa->indexer_loss_coeff}, {"sparse_indexer_loss", m.dsa->sparse_indexer_loss}};
  if (m.hybrid()) j["hybrid_pattern"] = m.hybrid_pattern;
  if (!m.hybrid_mtp_pattern.empty()) j["hybrid_mtp_pattern"] = m.hybrid_mtp_pattern;
  if (m.mamba)
    j["mamba"] = {{"num_heads", m.mamba->num_heads}, {"head_dim", m.mamba->head_dim}, {"state_dim", m.mamba->state_dim},
                  {"num_groups", m.mamba->num_groups}, {"conv_kernel", m.mamba->conv_kernel}, {"chunk_size", m.mamba->chunk_size}};
  if (m.gdn)
    j["gdn"] = {{"num_key_heads", m.gdn->num_key_heads}, {"num_value_heads", m.gdn->num_value_heads}, {"key_head_dim", m.gdn->key_head_dim},
                {"value_head_dim", m.gdn->value_head_dim}, {"conv_kernel", m.gdn->conv_kernel}, {"chunk_size", m.gdn->chunk_size}};
  if (m.attention_output_gate) j["attention_output_gate"] = true;
  if (m.moe) {
    j["moe"] = {{"num_experts", m.moe->num_experts}, {"top_k", m.moe->top_k}, {"expert_ffn_hidden_size", m.moe->expert_ffn_hidden_size}};
    if (m.moe->shared_expert_ffn_hidden_size > 0) j["moe"]["shared_expert_ffn_hidden_size"] = m.moe->shared_expert_ffn_hidden_size;
    if (m.moe->shared_expert_gate) j["moe"]["shared_expert_gate"] = true;
    if (!m.moe->layer_pattern.empty()) j["moe"]["layer_pattern"] = m.moe->layer_pattern;
    j["moe"]["router_score_function"] = m.moe->router_score_function;
    if (m.moe->router_bias) j["moe"]["router_bias"] = true;
    if (m.moe->num_groups > 1) {
      j["moe"]["num_groups"] = m.moe->num_groups;
      j["moe"]["group_topk"] = m.moe->group_topk;
      if (m.moe->group_by_max_score) j["moe"]["group_by_max_score"] = true;
    }
    if (m.moe->topk_scaling_factor > 0) j["moe"]["topk_scaling_factor"] = m.moe->topk_scaling_factor;
    if (!m.moe->normalize_top_k) j["moe"]["normalize_top_k"] = false;
    if (m.moe->sinkhorn) j["moe"]["sinkhorn"] = true;
    if (m.moe->latent_size > 0) j["moe"]["latent_size"] = m.moe->latent_size;
  }
  return j;
}

}  // namespace strata
