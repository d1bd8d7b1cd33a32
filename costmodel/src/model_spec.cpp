#include "costmodel/model_spec.h"

#include <algorithm>
#include <cctype>

#include "costmodel/json_reader.h"

namespace strata {

namespace {

constexpr std::int64_t kMaxDim = std::int64_t{1} << 24;  // 16M: far beyond any real hidden/vocab size
constexpr std::int64_t kMaxLayers = 100000;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

Activation parse_activation(const JsonReader& r, const std::string& key) {
  std::string v = lower(r.get_string(key));
  if (v == "gelu" || v == "gelu_new" || v == "gelu_pytorch_tanh" || v == "gelu_fast") return Activation::gelu;
  if (v == "swiglu" || v == "silu" || v == "swish") return Activation::swiglu;
  r.fail(key, "expected \"gelu\" or \"swiglu\", found \"" + v + "\"");
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
  r.fail(key, "expected \"learned\", \"rope\" or \"alibi\", found \"" + v + "\"");
}

bool looks_like_hf(const json& j) {
  return j.is_object() && (j.contains("architectures") || j.contains("model_type") ||
                           j.contains("num_hidden_layers") || j.contains("n_layer"));
}

// Hugging Face config.json: Llama/Mistral/Mixtral/Qwen (num_hidden_layers, intermediate_size),
// GPT-2/GPT-J style (n_layer, n_embd, n_head), BLOOM (n_layer, hidden_size, n_head), MPT
// (n_layers, d_model, n_heads, expansion_ratio), Falcon. Keys not used are ignored on purpose:
// HF configs carry many unrelated fields.
ModelSpec model_from_hf(const json& j, const std::string& where, const std::string& path) {
  JsonReader r(j, where, path);
  ModelSpec m;
  auto pick_int = [&](std::initializer_list<const char*> keys, std::int64_t lo, std::int64_t hi,
                      const char* what) -> std::int64_t {
    for (const char* k : keys)
      if (r.has(k)) return r.get_int(k, lo, hi);
    std::string names;
    for (const char* k : keys) names += std::string(names.empty() ? "" : " or ") + k;
    throw InputError(where, "/" + std::string(*keys.begin()), std::string("missing ") + what + " (looked for " + names + ")");
  };
  std::string type = lower(r.opt_string("model_type").value_or(""));
  m.name = r.opt_string("_name_or_path").value_or(type.empty() ? where : type);
  m.source = "Hugging Face config.json: " + where;
  m.num_layers = static_cast<int>(pick_int({"num_hidden_layers", "n_layer", "n_layers", "num_layers"}, 1, kMaxLayers, "the layer count"));
  m.hidden_size = pick_int({"hidden_size", "n_embd", "d_model"}, 1, kMaxDim, "the hidden size");
  m.num_attention_heads = static_cast<int>(pick_int({"num_attention_heads", "n_head", "n_heads"}, 1, kMaxDim, "the head count"));
  m.num_query_groups = m.num_attention_heads;
  if (r.has("num_key_value_heads")) m.num_query_groups = static_cast<int>(r.get_int("num_key_value_heads", 1, kMaxDim));
  else if (r.has("attn_config") && j["attn_config"].is_object() && j["attn_config"].contains("kv_n_heads"))
    m.num_query_groups = static_cast<int>(r.child("attn_config").get_int("kv_n_heads", 1, kMaxDim));
  else if (r.has("multi_query") && r.get_bool("multi_query")) m.num_query_groups = 1;
  if (r.has("intermediate_size")) m.ffn_hidden_size = r.get_int("intermediate_size", 1, kMaxDim);
  else if (r.has("n_inner")) m.ffn_hidden_size = r.get_int("n_inner", 1, kMaxDim);
  else if (r.has("ffn_hidden_size")) m.ffn_hidden_size = r.get_int("ffn_hidden_size", 1, kMaxDim);
  else if (r.has("expansion_ratio")) {
    const double ffn = r.get_positive("expansion_ratio", 1024) * static_cast<double>(m.hidden_size);
    if (ffn < 1 || ffn > static_cast<double>(kMaxDim))
      r.fail("expansion_ratio", "gives an FFN size of " + std::to_string(ffn) + "; expected 1.." + std::to_string(kMaxDim));
    m.ffn_hidden_size = static_cast<std::int64_t>(ffn);
  }
  else m.ffn_hidden_size = 4 * m.hidden_size;  // GPT-2/BLOOM convention when absent
  m.vocab_size = pick_int({"vocab_size", "padded_vocab_size"}, 1, kMaxDim, "the vocabulary size");
  m.max_seq_length = 2048;
  for (const char* k : {"max_position_embeddings", "n_positions", "max_seq_len", "seq_length"})
    if (r.has(k)) { m.max_seq_length = r.get_int(k, 1, kMaxDim * 64); break; }
  std::string act = lower(r.opt_string("hidden_act").value_or(r.opt_string("activation_function").value_or("")));
  bool gated = type == "llama" || type == "mistral" || type == "mixtral" || type == "qwen2" || type == "gemma";
  m.activation = (act == "silu" || act == "swiglu" || gated) ? Activation::swiglu : Activation::gelu;
  m.normalization = (r.has("rms_norm_eps") || gated) ? Normalization::rmsnorm : Normalization::layernorm;
  m.tied_embeddings = r.opt_bool("tie_word_embeddings", !gated);
  if (type == "bloom" || type == "mpt" || (r.has("alibi") && r.get_bool("alibi"))) m.position_embedding = PositionEmbedding::alibi;
  else if (r.has("rope_theta") || gated) m.position_embedding = PositionEmbedding::rope;
  else m.position_embedding = PositionEmbedding::learned;
  for (const char* k : {"hidden_dropout", "resid_pdrop", "attention_dropout", "attn_pdrop"})
    if (r.has(k) && r.raw(k).is_number() && r.get_number(k) > 0) m.dropout = true;
  if (r.has("num_local_experts")) {
    MoeSpec moe;
    moe.num_experts = static_cast<int>(r.get_int("num_local_experts", 1, 1 << 16));
    moe.top_k = static_cast<int>(r.opt_int("num_experts_per_tok", 1, 1 << 16).value_or(2));
    moe.expert_ffn_hidden_size = m.ffn_hidden_size;
    m.moe = moe;
  }
  return m;
}

}  // namespace

const char* to_string(Activation a) { return a == Activation::gelu ? "gelu" : "swiglu"; }
const char* to_string(Normalization n) { return n == Normalization::layernorm ? "layernorm" : "rmsnorm"; }
const char* to_string(PositionEmbedding p) {
  switch (p) {
    case PositionEmbedding::learned: return "learned";
    case PositionEmbedding::rope: return "rope";
    case PositionEmbedding::alibi: return "alibi";
  }
  return "?";
}

double ModelSpec::layer_params() const {
  const double h = static_cast<double>(hidden_size);
  const double kv = static_cast<double>(kv_hidden());
  const bool biases = normalization == Normalization::layernorm;  // GPT/BLOOM/MPT-style linears carry biases
  double attn = h * (h + 2 * kv) + h * h + (biases ? (h + 2 * kv) + h : 0);
  auto mlp_params = [&](double f) {
    return activation == Activation::swiglu ? 3 * h * f : 2 * h * f + (biases ? f + h : 0);
  };
  double mlp = moe ? moe->num_experts * mlp_params(static_cast<double>(moe->expert_ffn_hidden_size)) + h * moe->num_experts
                   : mlp_params(static_cast<double>(ffn_hidden_size));
  double norms = (normalization == Normalization::layernorm ? 4 : 2) * h;
  return attn + mlp + norms;
}

double ModelSpec::embedding_params(std::int64_t seq_length) const {
  const double h = static_cast<double>(hidden_size);
  double p = static_cast<double>(vocab_size) * h;
  if (position_embedding == PositionEmbedding::learned) p += static_cast<double>(seq_length) * h;
  if (!tied_embeddings) p += static_cast<double>(vocab_size) * h;
  return p + 2 * h;  // final norm
}

double ModelSpec::total_params(std::int64_t seq_length) const {
  return num_layers * layer_params() + embedding_params(seq_length);
}

void validate_model(const ModelSpec& m, const std::string& where, const std::string& path) {
  if (m.hidden_size % m.num_attention_heads != 0)
    throw InputError(where, path + "/hidden_size", "hidden_size " + std::to_string(m.hidden_size) +
                                                " is not divisible by num_attention_heads " + std::to_string(m.num_attention_heads));
  if (m.num_query_groups > m.num_attention_heads || m.num_attention_heads % m.num_query_groups != 0)
    throw InputError(where, path + "/num_query_groups", "num_query_groups " + std::to_string(m.num_query_groups) +
                                                     " must divide num_attention_heads " + std::to_string(m.num_attention_heads));
  if (m.moe && (m.moe->top_k < 1 || m.moe->top_k > m.moe->num_experts))
    throw InputError(where, path + "/moe/top_k", "top_k must be between 1 and num_experts");
}

ModelSpec model_from_json(const json& j, const std::string& where, const std::string& path) {
  if (looks_like_hf(j)) {
    ModelSpec m = model_from_hf(j, where, path);
    validate_model(m, where, path);
    return m;
  }
  JsonReader r(j, where, path);
  r.reject_unknown_keys({"name", "aliases", "source", "num_layers", "hidden_size", "num_attention_heads",
                         "num_query_groups", "ffn_hidden_size", "vocab_size", "max_seq_length", "activation",
                         "normalization", "tied_embeddings", "position_embedding", "dropout", "moe", "notes"});
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
  if (r.has("moe")) {
    JsonReader mr = r.child("moe");
    mr.reject_unknown_keys({"num_experts", "top_k", "expert_ffn_hidden_size"});
    MoeSpec moe;
    moe.num_experts = static_cast<int>(mr.get_int("num_experts", 1, 1 << 16));
    moe.top_k = static_cast<int>(mr.get_int("top_k", 1, 1 << 16));
    moe.expert_ffn_hidden_size = mr.opt_int("expert_ffn_hidden_size", 1, kMaxDim).value_or(m.ffn_hidden_size);
    m.moe = moe;
  }
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
  if (m.moe) j["moe"] = {{"num_experts", m.moe->num_experts}, {"top_k", m.moe->top_k}, {"expert_ffn_hidden_size", m.moe->expert_ffn_hidden_size}};
  return j;
}

}  // namespace strata
