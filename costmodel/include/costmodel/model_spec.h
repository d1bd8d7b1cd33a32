#pragma once
// The application description (Calculon's split): the shape of a decoder-only transformer.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace strata {

enum class Activation { gelu, swiglu };
enum class Normalization { layernorm, rmsnorm };
enum class PositionEmbedding { learned, rope, alibi };

struct MoeSpec {
  int num_experts = 0;
  int top_k = 0;
  std::int64_t expert_ffn_hidden_size = 0;
  bool operator==(const MoeSpec&) const = default;
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
  std::optional<MoeSpec> moe;

  std::int64_t head_dim() const { return hidden_size / num_attention_heads; }
  std::int64_t kv_hidden() const { return head_dim() * num_query_groups; }
  // Parameters of one decoder layer (weights + biases/norm gains).
  double layer_params() const;
  // Embedding table (+ learned positions) and, when untied, the output layer.
  double embedding_params(std::int64_t seq_length) const;
  double total_params(std::int64_t seq_length) const;

  bool operator==(const ModelSpec&) const = default;
};

// Parses strata's model JSON (models/*.json) or a Hugging Face config.json (detected by
// "architectures"/"model_type" or HF key names). `where` names the file in error messages.
// `path`: the JSON path of the object inside its file ("" at the top, "/model" in a plan).
ModelSpec model_from_json(const nlohmann::json& j, const std::string& where, const std::string& path = "");
nlohmann::json model_to_json(const ModelSpec& m);
// Structural checks (hidden divisible by heads, ...); throws InputError.
void validate_model(const ModelSpec& m, const std::string& where, const std::string& path = "");

const char* to_string(Activation a);
const char* to_string(Normalization n);
const char* to_string(PositionEmbedding p);

}  // namespace strata
