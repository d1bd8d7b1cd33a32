#include <doctest/doctest.h>

#include "costmodel/json_reader.h"
#include "costmodel/model_spec.h"
#include "test_util.h"

using namespace strata;
using test::input_error;

namespace {

json strata_model_json() {
  return json::parse(R"({
    "name": "toy", "aliases": ["toy-model"], "source": "handmade",
    "num_layers": 4, "hidden_size": 256, "num_attention_heads": 8, "num_query_groups": 2,
    "ffn_hidden_size": 688, "vocab_size": 1000, "max_seq_length": 512,
    "activation": "swiglu", "normalization": "rmsnorm", "tied_embeddings": false,
    "position_embedding": "rope", "dropout": false})");
}

// Hugging Face meta-llama/Llama-2-7b-hf config.json (the keys that matter).
json llama2_7b_hf() {
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "_name_or_path": "meta-llama/Llama-2-7b-hf",
    "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 11008, "max_position_embeddings": 4096,
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32, "rms_norm_eps": 1e-05,
    "tie_word_embeddings": false, "torch_dtype": "float16", "vocab_size": 32000, "rope_theta": 10000.0})");
}

// Hugging Face meta-llama/Meta-Llama-3-70B config.json.
json llama3_70b_hf() {
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu", "hidden_size": 8192,
    "intermediate_size": 28672, "max_position_embeddings": 8192, "num_attention_heads": 64,
    "num_hidden_layers": 80, "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
    "tie_word_embeddings": false, "vocab_size": 128256})");
}

// Hugging Face gpt2-xl config.json (GPT-2 naming: n_layer, n_embd, n_head, n_positions).
json gpt2_xl_hf() {
  return json::parse(R"({
    "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "activation_function": "gelu_new",
    "n_ctx": 1024, "n_embd": 1600, "n_head": 25, "n_layer": 48, "n_positions": 1024,
    "resid_pdrop": 0.1, "attn_pdrop": 0.1, "embd_pdrop": 0.1, "vocab_size": 50257})");
}

// Hugging Face mosaicml/mpt-7b config.json (MPT naming: n_layers, d_model, n_heads, expansion_ratio).
json mpt_7b_hf() {
  return json::parse(R"({
    "architectures": ["MPTForCausalLM"], "model_type": "mpt", "d_model": 4096, "n_heads": 32, "n_layers": 32,
    "expansion_ratio": 4, "max_seq_len": 2048, "vocab_size": 50432, "resid_pdrop": 0.0, "emb_pdrop": 0.0,
    "no_bias": true, "attn_config": {"alibi": true, "attn_pdrop": 0.0, "attn_impl": "torch"}})");
}

}  // namespace

TEST_SUITE("costmodel") {
TEST_CASE("model_from_json") {
  SUBCASE("strata format") {
    ModelSpec m = model_from_json(strata_model_json(), "toy.json");
    CHECK(m.name == "toy");
    CHECK(m.aliases == std::vector<std::string>{"toy-model"});
    CHECK(m.num_layers == 4);
    CHECK(m.hidden_size == 256);
    CHECK(m.num_attention_heads == 8);
    CHECK(m.num_query_groups == 2);
    CHECK(m.head_dim() == 32);
    CHECK(m.kv_hidden() == 64);
    CHECK(m.ffn_hidden_size == 688);
    CHECK(m.activation == Activation::swiglu);
    CHECK(m.normalization == Normalization::rmsnorm);
    CHECK(m.position_embedding == PositionEmbedding::rope);
    CHECK_FALSE(m.tied_embeddings);
    CHECK_FALSE(m.moe.has_value());
  }
  SUBCASE("strata format defaults: MHA, GELU, LayerNorm, learned positions, tied") {
    json j = {{"name", "m"}, {"num_layers", 2}, {"hidden_size", 64}, {"num_attention_heads", 4}, {"ffn_hidden_size", 256},
              {"vocab_size", 100}};
    ModelSpec m = model_from_json(j, "m.json");
    CHECK(m.num_query_groups == 4);
    CHECK(m.activation == Activation::gelu);
    CHECK(m.normalization == Normalization::layernorm);
    CHECK(m.position_embedding == PositionEmbedding::learned);
    CHECK(m.tied_embeddings);
  }
  SUBCASE("Llama-style config.json with num_key_value_heads") {
    ModelSpec m = model_from_json(llama3_70b_hf(), "config.json");
    CHECK(m.num_layers == 80);
    CHECK(m.hidden_size == 8192);
    CHECK(m.num_attention_heads == 64);
    CHECK(m.num_query_groups == 8);
    CHECK(m.ffn_hidden_size == 28672);
    CHECK(m.vocab_size == 128256);
    CHECK(m.max_seq_length == 8192);
    CHECK(m.activation == Activation::swiglu);
    CHECK(m.normalization == Normalization::rmsnorm);
    CHECK(m.position_embedding == PositionEmbedding::rope);
    CHECK_FALSE(m.tied_embeddings);
    CHECK_FALSE(m.dropout);
    // Same shape as the shipped strata file.
    ModelSpec ref = test::catalog().model("llama3-70b");
    CHECK(m.layer_params() == ref.layer_params());
    CHECK(m.total_params(8192) == ref.total_params(8192));
  }
  SUBCASE("Llama without num_key_value_heads is MHA") {
    json j = llama2_7b_hf();
    j.erase("num_key_value_heads");
    CHECK(model_from_json(j, "config.json").num_query_groups == 32);
  }
  SUBCASE("GPT-2 style n_layer / n_embd / n_head") {
    ModelSpec m = model_from_json(gpt2_xl_hf(), "config.json");
    CHECK(m.num_layers == 48);
    CHECK(m.hidden_size == 1600);
    CHECK(m.num_attention_heads == 25);
    CHECK(m.num_query_groups == 25);
    CHECK(m.ffn_hidden_size == 4 * 1600);  // GPT-2: n_inner absent means 4*n_embd
    CHECK(m.max_seq_length == 1024);
    CHECK(m.activation == Activation::gelu);
    CHECK(m.normalization == Normalization::layernorm);
    CHECK(m.position_embedding == PositionEmbedding::learned);
    CHECK(m.tied_embeddings);
    CHECK(m.dropout);
  }
  SUBCASE("MPT style d_model / n_heads / expansion_ratio") {
    ModelSpec m = model_from_json(mpt_7b_hf(), "config.json");
    CHECK(m.num_layers == 32);
    CHECK(m.hidden_size == 4096);
    CHECK(m.num_attention_heads == 32);
    CHECK(m.ffn_hidden_size == 4 * 4096);
    CHECK(m.vocab_size == 50432);
    CHECK(m.max_seq_length == 2048);
    CHECK(m.position_embedding == PositionEmbedding::alibi);
    CHECK(m.activation == Activation::gelu);
    CHECK(m.tied_embeddings);
    CHECK_FALSE(m.dropout);
  }
  SUBCASE("Mixtral-style num_local_experts") {
    json j = llama2_7b_hf();
    j["model_type"] = "mixtral";
    j["num_local_experts"] = 8;
    j["num_experts_per_tok"] = 2;
    ModelSpec m = model_from_json(j, "config.json");
    REQUIRE(m.moe.has_value());
    CHECK(m.moe->num_experts == 8);
    CHECK(m.moe->top_k == 2);
    CHECK(m.moe->expert_ffn_hidden_size == 11008);
  }
  SUBCASE("config.json missing the hidden size lists the keys it looked for") {
    json j = llama2_7b_hf();
    j.erase("hidden_size");
    std::string msg = input_error([&] { model_from_json(j, "config.json"); });
    CHECK(msg.find("config.json") != std::string::npos);
    CHECK(msg.find("hidden_size or n_embd or d_model") != std::string::npos);
  }
  SUBCASE("strata format errors name the key") {
    json j = strata_model_json();
    j["num_layer"] = 4;
    CHECK(input_error([&] { model_from_json(j, "toy.json"); }).find("/num_layer: unknown key (did you mean \"num_layers\"?)") !=
          std::string::npos);
    j = strata_model_json();
    j.erase("hidden_size");
    CHECK(input_error([&] { model_from_json(j, "toy.json"); }).find("toy.json: /hidden_size: missing required key") !=
          std::string::npos);
    j = strata_model_json();
    j["activation"] = "relu";
    CHECK(input_error([&] { model_from_json(j, "toy.json"); }).find("/activation: expected \"gelu\" or \"swiglu\"") !=
          std::string::npos);
    j = strata_model_json();
    j["num_layers"] = 4.5;
    CHECK(input_error([&] { model_from_json(j, "toy.json"); }).find("/num_layers: expected an integer") != std::string::npos);
    j = strata_model_json();
    j["moe"] = {{"num_experts", 8}, {"top_k", 2}, {"capacity", 1.0}};
    CHECK(input_error([&] { model_from_json(j, "toy.json"); }).find("/moe/capacity: unknown key") != std::string::npos);
  }
}

TEST_CASE("validate_model") {
  ModelSpec m = test::catalog().model("llama3-70b");
  CHECK_NOTHROW(validate_model(m, "x"));
  SUBCASE("hidden size not divisible by heads") {
    m.hidden_size = 8001;
    std::string msg = input_error([&] { validate_model(m, "m.json"); });
    CHECK(msg.find("m.json: /hidden_size") != std::string::npos);
    CHECK(msg.find("not divisible by num_attention_heads 64") != std::string::npos);
  }
  SUBCASE("query groups that do not divide the heads") {
    m.num_query_groups = 6;
    CHECK(input_error([&] { validate_model(m, "m.json"); }).find("/num_query_groups: num_query_groups 6 must divide num_attention_heads 64") !=
          std::string::npos);
    m.num_query_groups = 128;  // more groups than heads
    CHECK(input_error([&] { validate_model(m, "m.json"); }).find("/num_query_groups") != std::string::npos);
  }
  SUBCASE("MoE top_k beyond the experts") {
    m.moe = MoeSpec{8, 9, 1024};
    CHECK(input_error([&] { validate_model(m, "m.json"); }).find("/moe/top_k") != std::string::npos);
  }
  SUBCASE("model_from_json applies it to both formats") {
    json j = strata_model_json();
    j["num_query_groups"] = 3;
    CHECK(input_error([&] { model_from_json(j, "toy.json"); }).find("/num_query_groups") != std::string::npos);
    json hf = llama2_7b_hf();
    hf["num_key_value_heads"] = 5;
    CHECK(input_error([&] { model_from_json(hf, "config.json"); }).find("/num_query_groups") != std::string::npos);
  }
}

TEST_CASE("ModelSpec::total_params") {
  SUBCASE("published sizes") {
    // Llama 2 7B: 6.74B parameters (Touvron et al. 2023; HF model card 6,738,415,616).
    CHECK(test::catalog().model("llama2-7b").total_params(4096) == doctest::Approx(6.74e9).epsilon(0.01));
    CHECK(model_from_json(llama2_7b_hf(), "config.json").total_params(4096) == doctest::Approx(6.74e9).epsilon(0.01));
    // Llama 3 70B: 70.6B (HF meta-llama/Meta-Llama-3-70B, 70,553,706,496).
    CHECK(test::catalog().model("llama3-70b").total_params(8192) == doctest::Approx(70.6e9).epsilon(0.01));
    // GPT-3 175B with the 50257-token GPT-2 vocabulary and 2048 learned positions: 174.6B.
    CHECK(test::catalog().model("gpt3-175b").total_params(2048) == doctest::Approx(174.6e9).epsilon(0.01));
    // MPT-7B: 6.7B (MosaicML model card).
    CHECK(model_from_json(mpt_7b_hf(), "config.json").total_params(2048) == doctest::Approx(6.7e9).epsilon(0.01));
  }
  SUBCASE("GPT-2 closed form: 12h^2 + 13h per layer, V*h + n_ctx*h embeddings, 2h final LayerNorm") {
    ModelSpec m = model_from_json(gpt2_xl_hf(), "config.json");
    const double h = 1600, L = 48, V = 50257, ctx = 1024;
    const double expected = L * (12 * h * h + 13 * h) + V * h + ctx * h + 2 * h;
    CHECK(m.layer_params() == doctest::Approx(12 * h * h + 13 * h).epsilon(1e-15));
    CHECK(m.total_params(1024) == doctest::Approx(expected).epsilon(1e-15));
    CHECK(expected == doctest::Approx(1557611200.0).epsilon(1e-12));  // HF gpt2-xl num_parameters()
  }
  SUBCASE("untying adds exactly one V*h output matrix; learned positions add seq*h") {
    ModelSpec m = test::catalog().model("gpt3-175b");
    const double base = m.total_params(2048);
    m.tied_embeddings = false;
    CHECK(m.total_params(2048) - base == doctest::Approx(50257.0 * 12288).epsilon(1e-9));
    CHECK(m.total_params(4096) - m.total_params(2048) == doctest::Approx(2048.0 * 12288).epsilon(1e-6));
    m.position_embedding = PositionEmbedding::rope;
    CHECK(m.total_params(4096) == m.total_params(2048));
  }
}

TEST_CASE("model_to_json") {
  SUBCASE("every shipped model round-trips") {
    for (const auto& e : test::catalog().list("models")) {
      CAPTURE(e.id);
      ModelSpec m = test::catalog().model(e.path);
      CHECK(model_from_json(model_to_json(m), "rt.json") == m);
    }
  }
  SUBCASE("a handmade MoE model round-trips") {
    ModelSpec m = model_from_json(strata_model_json(), "toy.json");
    m.moe = MoeSpec{8, 2, 512};
    m.dropout = true;
    m.position_embedding = PositionEmbedding::alibi;
    CHECK(model_from_json(model_to_json(m), "rt.json") == m);
  }
  SUBCASE("a model read from a config.json round-trips through the strata format") {
    ModelSpec m = model_from_json(gpt2_xl_hf(), "config.json");
    CHECK(model_from_json(model_to_json(m), "rt.json") == m);
  }
}
}
