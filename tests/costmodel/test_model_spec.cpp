#include <cmath>

#include <doctest/doctest.h>

#include "costmodel/json_reader.h"
#include "costmodel/model_spec.h"
#include "test_util.h"

using namespace strata;
using test::input_error;

namespace {

MoeSpec moe_spec(int experts, int top_k, std::int64_t expert_ffn) {
  MoeSpec moe;
  moe.num_experts = experts;
  moe.top_k = top_k;
  moe.expert_ffn_hidden_size = expert_ffn;
  return moe;
}

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
    CHECK(input_error([&] { model_from_json(j, "toy.json"); }).find("/activation: expected \"gelu\", \"swiglu\" or \"squared_relu\"") !=
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
    m.moe = moe_spec(8, 9, 1024);
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
  SUBCASE("a dense model's active parameters are all of them, learned positions up to the same length") {
    const ModelSpec m = test::catalog().model("gpt3-175b");
    for (std::int64_t seq : {1024, 2048, 8192}) CHECK(m.active_params(seq) == doctest::Approx(m.total_params(seq)).epsilon(1e-15));
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
    m.moe = moe_spec(8, 2, 512);
    m.dropout = true;
    m.position_embedding = PositionEmbedding::alibi;
    CHECK(model_from_json(model_to_json(m), "rt.json") == m);
    m.moe->sinkhorn = true;  // Sinkhorn routing
    CHECK(model_to_json(m)["moe"]["sinkhorn"] == true);
    CHECK(model_from_json(model_to_json(m), "rt.json") == m);
  }
  SUBCASE("a model read from a config.json round-trips through the strata format") {
    ModelSpec m = model_from_json(gpt2_xl_hf(), "config.json");
    CHECK(model_from_json(model_to_json(m), "rt.json") == m);
  }
}
}

namespace {
ModelSpec hf_model(const std::string& name) {
  const std::string path = test::data_file("hf/" + name + ".json");
  return model_from_json(load_json_file(path), path);
}
}  // namespace

TEST_SUITE("costmodel") {
// tests/data/hf/*.json are the published Hugging Face config.json files (model repos of the same
// name); the expected counts are the ones their model cards / technical reports publish.
TEST_CASE("Hugging Face config.json: total and active parameters match the published counts") {
  struct Case {
    const char* file;
    double total, active;  // active 0: a dense model (active == total); < 0: not published in our convention
    double eps;
  };
  const Case cases[] = {
      {"deepseek-v3", 671e9, 37e9, 0.02},        // DeepSeek-V3 report: 671B total, 37B activated (MTP module excluded)
      {"deepseek-v2", 236e9, 21e9, 0.02},        // DeepSeek-V2 report: 236B, 21B activated
      {"kimi-k2", 1.04e12, 32e9, 0.03},          // Kimi-K2 model card: 1T (1.04T) total, 32B activated (both rounded)
      {"qwen3-30b-a3b", 30.5e9, 3.3e9, 0.02},    // Qwen3 model card: 30.5B total, 3.3B activated
      {"qwen3-235b-a22b", 235e9, 22e9, 0.02},    // Qwen3 model card: 235B total, 22B activated
      {"qwen1.5-moe-a2.7b", 14.3e9, 2.7e9, 0.02},  // Qwen1.5-MoE model card: 14.3B total, 2.7B activated
      {"mixtral-8x7b", 46.7e9, 12.9e9, 0.01},    // Mistral AI: 46.7B total, 12.9B active
      {"llama-4-maverick", 400e9, 17e9, 0.02},   // Meta: 17B active, 400B total (text decoder)
      {"qwen3-32b", 32.8e9, 0, 0.01},            // Qwen3 model card: 32.8B
      {"llama-3.1-8b", 8.03e9, 0, 0.01},         // HF: 8,030,261,248
      {"mistral-7b-v0.1", 7.24e9, 0, 0.01},      // HF: 7,241,732,096
      {"gemma-3-27b", 27.0e9, 0, 0.02},          // Gemma 3 report: 27B (text decoder ~27.0B + 0.4B vision)
      {"gemma-2-9b", 9.24e9, 0, 0.01},           // HF: 9,241,705,984
      {"glm-4.5", 355e9, -1, 0.02},              // Z.ai: 355B total (with the MTP layer, not modelled); its 32B active leaves out the embeddings
      {"phi-3-mini-4k", 3.8e9, 0, 0.01},         // Phi-3 report: 3.8B
      {"phi-4", 14.7e9, 0, 0.01},                // Phi-4 report: 14B (HF: 14.7B)
      {"olmo-2-7b", 7.3e9, 0, 0.01},             // OLMo 2 report: 7.3B
      {"gpt-neox-20b", 20.55e9, 0, 0.01},        // Black et al. 2022: 20.55B
      {"bloom-176b", 176.2e9, 0, 0.01},          // BigScience: 176,247,271,424
      {"dbrx", 132e9, 36e9, 0.02},               // Databricks: 132B total, 36B active (MoE nested in ffn_config)
      {"olmoe-1b-7b", 6.92e9, 1.3e9, 0.02},      // OLMoE paper (Muennighoff et al. 2024): 6.9B total, 1.3B active
      {"ling-mini-2.0", 16.3e9, 1.4e9, 0.03},    // inclusionAI model card: 16B total, 1.4B activated (rounded)
      {"nemotron-h-56b", 56e9, 0, 0.01},         // NVIDIA Nemotron-H report (arXiv:2504.03624): 56B
      {"nemotron-h-8b", 8e9, 0, 0.02},           // the same: 8B (rounded)
      {"nemotron-3-nano-30b-a3b", 31.6e9, 3.6e9, 0.02},  // NVIDIA model card: 31.6B total, 3.6B active with embeddings
      {"qwen3-next-80b-a3b", 80e9, -1, 0.01},     // Qwen: 80B total (its "3B active" leaves the embeddings out)
      {"qwen3.5-35b-a3b", 35e9, -1, 0.02},        // Qwen3.5-35B-A3B (language model; the MTP module not counted)
      {"qwen3.5-27b", 27e9, 0, 0.01},             // Qwen3.5-27B
  };
  for (const auto& c : cases) {
    CAPTURE(c.file);
    const ModelSpec m = hf_model(c.file);
    CHECK(m.total_params() == doctest::Approx(c.total).epsilon(c.eps));
    if (c.active > 0) CHECK(m.active_params() == doctest::Approx(c.active).epsilon(c.eps));
    else if (c.active == 0) CHECK(m.active_params() == doctest::Approx(m.total_params()).epsilon(1e-12));
  }
  SUBCASE("GPT-OSS: OpenAI's model card counts 116.8B total and 5.13B active without the input embedding") {
    const ModelSpec m = hf_model("gpt-oss-120b");
    CHECK(m.total_params() == doctest::Approx(116.83e9).epsilon(0.01));
    const double input_embedding = static_cast<double>(m.vocab_size * m.hidden_size);
    CHECK(m.active_params() - input_embedding == doctest::Approx(5.13e9).epsilon(0.02));
    const ModelSpec small = hf_model("gpt-oss-20b");
    CHECK(small.total_params() == doctest::Approx(20.91e9).epsilon(0.01));
    CHECK(small.active_params() - static_cast<double>(small.vocab_size * small.hidden_size) == doctest::Approx(3.61e9).epsilon(0.02));
  }
}

TEST_CASE("Hugging Face config.json: the architecture details are read") {
  SUBCASE("DeepSeek-V3: MLA, dense-first layers, shared expert, sigmoid router with expert bias") {
    const ModelSpec m = hf_model("deepseek-v3");
    REQUIRE(m.mla.has_value());
    CHECK(m.mla->q_lora_rank == 1536);
    CHECK(m.mla->kv_lora_rank == 512);
    CHECK(m.mla->qk_nope_head_dim == 128);
    CHECK(m.mla->qk_rope_head_dim == 64);
    CHECK(m.mla->v_head_dim == 128);
    REQUIRE(m.moe.has_value());
    CHECK(m.moe->num_experts == 256);
    CHECK(m.moe->top_k == 8);
    CHECK(m.moe->expert_ffn_hidden_size == 2048);
    CHECK(m.moe->shared_expert_ffn_hidden_size == 2048);
    CHECK(m.ffn_hidden_size == 18432);
    CHECK(m.num_moe_layers() == 58);
    CHECK_FALSE(m.is_moe_layer(2));
    CHECK(m.is_moe_layer(3));
    CHECK(m.moe->router_score_function == "sigmoid");
    CHECK(m.moe->router_bias);
    CHECK(m.rope_scaling == "yarn");
    CHECK_FALSE(m.add_linear_bias);
    // One MTP module (num_nextn_predict_layers): an MoE layer like the last, the 2h x h projection
    // and three RMSNorms, outside the 671B; with it the Hugging Face checkpoint's 685B less its
    // stored copies of the shared embedding and output layer.
    CHECK(m.mtp_layers == 1);
    const double h = 7168;
    CHECK(m.mtp_params() == doctest::Approx(m.layer_params_at(60) + 2 * h * h + 3 * h).epsilon(1e-12));
    CHECK((m.total_params() + m.mtp_params() + 2.0 * 129280 * h) / 1e9 == doctest::Approx(685).epsilon(0.01));
    CHECK(hf_model("kimi-k2").mtp_layers == 0);
    json j = load_json_file(test::data_file("hf/deepseek-v3.json"));
    j["num_nextn_predict_layers"] = nullptr;
    CHECK(model_from_json(j, "config.json").mtp_layers == 0);
    j["num_nextn_predict_layers"] = -1;
    CHECK(input_error([&] { model_from_json(j, "config.json"); }).find("num_nextn_predict_layers") != std::string::npos);
  }
  SUBCASE("Qwen3: head_dim, QK norm, no biases") {
    const ModelSpec m = hf_model("qwen3-32b");
    CHECK(m.head_dim() == 128);
    CHECK(m.kv_channels == 128);  // 5120 / 64 = 80 would be wrong
    CHECK(m.qk_layernorm);
    CHECK_FALSE(m.add_linear_bias);
    CHECK_FALSE(m.add_qkv_bias);
    CHECK(m.rotary_base == 1e6);
    CHECK(m.norm_epsilon == 1e-6);
    CHECK(m.sliding_window == 0);  // use_sliding_window false
    const ModelSpec moe = hf_model("qwen3-30b-a3b");
    CHECK(moe.num_moe_layers() == 48);
    CHECK(moe.moe->layer_pattern.empty());
  }
  SUBCASE("Qwen2-MoE: shared expert, QKV bias") {
    const ModelSpec m = hf_model("qwen1.5-moe-a2.7b");
    CHECK(m.moe->shared_expert_ffn_hidden_size == 5632);
    CHECK(m.moe->shared_expert_gate);  // Qwen2MoeSparseMoeBlock's shared_expert_gate
    CHECK_FALSE(hf_model("deepseek-v3").moe->shared_expert_gate);
    CHECK(model_from_json(model_to_json(m), "model.json") == m);
    CHECK(m.add_qkv_bias);
    CHECK_FALSE(m.add_linear_bias);
  }
  SUBCASE("Qwen3-MoE mlp_only_layers and decoder_sparse_step make dense layers") {
    json j = load_json_file(test::data_file("hf/qwen3-30b-a3b.json"));
    j["mlp_only_layers"] = {0, 1};
    j["decoder_sparse_step"] = 2;
    const ModelSpec m = model_from_json(j, "config.json");
    CHECK_FALSE(m.is_moe_layer(0));
    CHECK_FALSE(m.is_moe_layer(1));
    CHECK_FALSE(m.is_moe_layer(2));
    CHECK(m.is_moe_layer(3));
    CHECK(m.num_moe_layers() == 23);
    j["mlp_only_layers"] = {48};
    CHECK(input_error([&] { model_from_json(j, "config.json"); }).find("/mlp_only_layers") != std::string::npos);
  }
  SUBCASE("GPT-OSS: alternating sliding/full attention, head_dim, biases") {
    const ModelSpec m = hf_model("gpt-oss-120b");
    CHECK(m.sliding_window == 128);
    CHECK(m.uses_sliding_window(0));
    CHECK_FALSE(m.uses_sliding_window(1));
    CHECK(m.full_attention_every() == 2);
    CHECK(m.head_dim() == 64);
    CHECK(m.q_hidden() == 4096);
    CHECK(m.add_linear_bias);
    CHECK(m.moe->num_experts == 128);
    CHECK(m.moe->top_k == 4);
    CHECK(m.moe->router_bias);
  }
  SUBCASE("Gemma-3 and Llama-4: the text_config wrapper") {
    const ModelSpec g = hf_model("gemma-3-27b");
    CHECK(g.num_layers == 62);
    CHECK(g.activation == Activation::geglu);
    CHECK(g.tied_embeddings);
    CHECK(g.qk_layernorm);
    CHECK(g.sliding_window == 1024);
    CHECK(g.full_attention_every() == 6);
    const ModelSpec l = hf_model("llama-4-maverick");
    CHECK(l.num_layers == 48);
    CHECK(l.ffn_hidden_size == 16384);  // intermediate_size_mlp of the dense layers
    CHECK(l.moe->expert_ffn_hidden_size == 8192);
    CHECK(l.moe->shared_expert_ffn_hidden_size == 8192);
    CHECK(l.num_moe_layers() == 24);
    CHECK_FALSE(l.is_moe_layer(0));
    CHECK(l.is_moe_layer(1));
  }
  SUBCASE("transformers 5 configs (rope_parameters) read as the same models as their transformers 4 files") {
    // Transformers 5 writes rope_theta and rope_scaling's fields into one rope_parameters object
    // (standardize_rope_params), or one per attention layer type. Read as the old defaults, a Llama 3
    // launch would get --rotary-base 10000 and no --use-rope-scaling: another model.
    json v4 = load_json_file(test::data_file("hf/llama-3.1-8b.json"));
    json v5 = v4;
    v5["rope_parameters"] = v5["rope_scaling"];
    v5["rope_parameters"]["rope_theta"] = v5["rope_theta"];
    v5.erase("rope_scaling");
    v5.erase("rope_theta");
    const ModelSpec old_llama = model_from_json(v4, "config.json"), new_llama = model_from_json(v5, "config.json");
    CHECK(new_llama.rotary_base == 500000);
    CHECK(new_llama.rope_scaling == "llama3");
    CHECK(new_llama == old_llama);
    // Gemma 3: one entry per layer type; the full-attention one is the model's. Its transformers 4
    // file leaves rope_theta at Gemma3TextConfig's default, 1e6.
    json g4 = load_json_file(test::data_file("hf/gemma-3-27b.json"));
    json g5 = g4;
    json& text = g5["text_config"];
    text["rope_parameters"] = {{"full_attention", {{"rope_type", "linear"}, {"factor", 8.0}, {"rope_theta", 1e6}}},
                               {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 1e4}}}};
    text.erase("rope_scaling");
    const ModelSpec old_gemma = model_from_json(g4, "config.json"), new_gemma = model_from_json(g5, "config.json");
    CHECK(old_gemma.rotary_base == 1e6);
    CHECK(new_gemma == old_gemma);
    // A partial rotary fraction moves there too (GLM-4.5 rotates half of each head).
    json glm = load_json_file(test::data_file("hf/glm-4.5.json"));
    const ModelSpec old_glm = model_from_json(glm, "config.json");
    REQUIRE(old_glm.rotary_percent == 0.5);
    glm["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", glm["rope_theta"]}, {"partial_rotary_factor", 0.5}};
    glm.erase("rope_theta");
    glm.erase("partial_rotary_factor");
    CHECK(model_from_json(glm, "config.json") == old_glm);
    // A model type strata does not know as a rope family is still read as rotary.
    json cohere = v5;
    cohere["model_type"] = "cohere2";
    CHECK(model_from_json(cohere, "config.json").position_embedding == PositionEmbedding::rope);
    // Both forms in one file must agree; rope_parameters must be an object.
    json both = v5;
    both["rope_theta"] = 10000.0;
    const std::string msg = input_error([&] { model_from_json(both, "config.json"); });
    CHECK(msg.find("/rope_parameters/rope_theta") != std::string::npos);
    CHECK(msg.find("must agree") != std::string::npos);
    both = v5;
    both["rope_theta"] = 500000.0;  // the same: fine
    CHECK(model_from_json(both, "config.json") == old_llama);
    both["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
    CHECK(input_error([&] { model_from_json(both, "config.json"); }).find("/rope_parameters/rope_type") != std::string::npos);
    json bad = v5;
    bad["rope_parameters"] = 5;
    CHECK(input_error([&] { model_from_json(bad, "config.json"); }).find("/rope_parameters") != std::string::npos);
  }
  SUBCASE("Gemma-2 alternates local and global layers") {
    const ModelSpec m = hf_model("gemma-2-9b");
    CHECK(m.head_dim() == 256);
    CHECK(m.full_attention_every() == 2);
  }
  SUBCASE("GLM-4.5: head_dim (hidden not divisible by heads), partial rotary, QKV bias") {
    const ModelSpec m = hf_model("glm-4.5");
    CHECK(m.head_dim() == 128);
    CHECK(m.rotary_percent == 0.5);
    CHECK(m.add_qkv_bias);
    CHECK(m.qk_layernorm);
    CHECK(m.num_moe_layers() == 89);
    // Z.ai's 32B active parameters without the two embedding tables (1.55B).
    CHECK(m.active_params() - 2.0 * static_cast<double>(m.vocab_size * m.hidden_size) == doctest::Approx(32e9).epsilon(0.02));
  }
  SUBCASE("GPT-NeoX, BLOOM, Falcon: LayerNorm families") {
    const ModelSpec neox = hf_model("gpt-neox-20b");
    CHECK(neox.normalization == Normalization::layernorm);
    CHECK(neox.add_linear_bias);
    CHECK(neox.rotary_percent == 0.25);
    CHECK(neox.position_embedding == PositionEmbedding::rope);
    const ModelSpec bloom = hf_model("bloom-176b");
    CHECK(bloom.position_embedding == PositionEmbedding::alibi);
    CHECK(bloom.tied_embeddings);
    CHECK(bloom.embedding_norm);  // word_embeddings_layernorm
    CHECK_FALSE(neox.embedding_norm);
    CHECK(model_from_json(model_to_json(bloom), "round trip").embedding_norm);
    const ModelSpec falcon = hf_model("falcon-40b");
    CHECK(falcon.num_query_groups == 8);
    CHECK_FALSE(falcon.add_linear_bias);
    CHECK(falcon.position_embedding == PositionEmbedding::rope);
  }
  SUBCASE("OLMoE: an RMSNorm-era family the reader does not list gets no biases") {
    const ModelSpec m = hf_model("olmoe-1b-7b");
    CHECK_FALSE(m.add_linear_bias);
    CHECK(m.moe->num_experts == 64);
  }
  SUBCASE("Mistral 7B v0.1 uses its window on every layer") {
    const ModelSpec m = hf_model("mistral-7b-v0.1");
    CHECK(m.sliding_window == 4096);
    CHECK(m.uses_sliding_window(31));
  }
  SUBCASE("ERNIE-4.5: its own MoE keys, a dense first layer, shared experts, the correction bias") {
    const ModelSpec m = hf_model("ernie-4.5-21b-a3b");
    REQUIRE(m.moe.has_value());
    CHECK(m.moe->num_experts == 64);
    CHECK(m.moe->top_k == 6);
    CHECK(m.moe->expert_ffn_hidden_size == 1536);
    CHECK(m.moe->shared_expert_ffn_hidden_size == 2 * 1536);
    CHECK(m.moe->router_bias);
    CHECK_FALSE(m.is_moe_layer(0));  // moe_layer_start_index 1
    CHECK(m.num_moe_layers() == 27);
    CHECK(m.ffn_hidden_size == 12288);  // the dense layer
    CHECK(m.tied_embeddings);
    CHECK_FALSE(m.add_linear_bias);
    // Baidu's model card: 21B total, 3B activated per token (rounded; embeddings not counted).
    CHECK(m.total_params() / 1e9 == doctest::Approx(21.5).epsilon(0.025));
    CHECK((m.active_params() - static_cast<double>(m.vocab_size * m.hidden_size)) / 1e9 == doctest::Approx(3.0).epsilon(0.06));
    json j = load_json_file(test::data_file("hf/ernie-4.5-21b-a3b.json"));
    j["moe_num_experts"] = {64, 64};  // one entry per expert pool (text, vision): the text pool is the first
    j["moe_layer_interval"] = 2;      // layer i is MoE iff (i + 1) % 2 == 0 and 1 <= i <= 27
    ModelSpec e = model_from_json(j, "config.json");
    CHECK(e.moe->num_experts == 64);
    CHECK(e.is_moe_layer(1));
    CHECK_FALSE(e.is_moe_layer(2));
    CHECK(e.num_moe_layers() == 14);
    j.erase("moe_layer_interval");
    j["mlp_layer_types"] = json::array();
    for (int i = 0; i < 28; ++i) j["mlp_layer_types"].push_back(i < 4 ? "dense" : "sparse");
    CHECK(model_from_json(j, "config.json").num_moe_layers() == 24);
    j.erase("mlp_layer_types");
    j.erase("moe_layer_start_index");
    j["moe_layer_freq"] = json::array();  // Megatron's list form: one 0/1 per layer
    for (int i = 0; i < 28; ++i) j["moe_layer_freq"].push_back(i % 4 == 3 ? 1 : 0);
    CHECK(model_from_json(j, "config.json").num_moe_layers() == 7);
    j["moe_layer_freq"].erase(0);
    CHECK(input_error([&] { model_from_json(j, "config.json"); }).find("/moe_layer_freq: expected a list of 28 entries") != std::string::npos);
    j.erase("moe_layer_freq");
    j["mlp_layer_types"] = json::array();
    for (int i = 0; i < 28; ++i) j["mlp_layer_types"].push_back(i < 4 ? "dense" : "sparse");
    j["mlp_layer_types"][5] = "moe";
    CHECK(input_error([&] { model_from_json(j, "config.json"); }).find("/mlp_layer_types") != std::string::npos);
  }
  SUBCASE("MiniMax-M2: attn_type_list of softmax layers, rotary_dim, routing bias") {
    const ModelSpec m = hf_model("minimax-m2");
    CHECK(m.moe->num_experts == 256);
    CHECK(m.moe->top_k == 8);
    CHECK(m.moe->expert_ffn_hidden_size == 1536);
    CHECK(m.moe->shared_expert_ffn_hidden_size == 0);
    CHECK(m.moe->router_score_function == "sigmoid");
    CHECK(m.moe->router_bias);
    CHECK(m.rotary_percent == 0.5);  // rotary_dim 64 of head_dim 128
    CHECK(m.qk_layernorm);
    // MiniMax's model card: 230B total, 10B activated (rounded; embeddings not counted).
    CHECK(m.total_params() / 1e9 == doctest::Approx(230).epsilon(0.01));
    CHECK((m.active_params() - 2.0 * static_cast<double>(m.vocab_size * m.hidden_size)) / 1e9 == doctest::Approx(10).epsilon(0.03));
    json j = load_json_file(test::data_file("hf/minimax-m2.json"));
    j["attn_type_list"][0] = 0;  // MiniMax-Text-01's lightning (linear) attention layers
    CHECK(input_error([&] { model_from_json(j, "config.json"); }).find("linear (lightning) attention") != std::string::npos);
  }
  SUBCASE("Ling 2.0 and Hunyuan: shared experts and top-k under their own keys") {
    const ModelSpec m = hf_model("ling-mini-2.0");
    CHECK(m.moe->num_experts == 256);
    CHECK(m.moe->shared_expert_ffn_hidden_size == 512);  // num_shared_experts 1 x moe_intermediate_size
    CHECK(m.moe->router_bias);                          // moe_router_enable_expert_bias
    CHECK(m.qk_layernorm);
    CHECK_FALSE(m.is_moe_layer(0));
    CHECK(m.num_moe_layers() == 19);
    json j = load_json_file(test::data_file("hf/ling-mini-2.0.json"));
    j.erase("num_experts_per_tok");
    j.erase("num_shared_experts");
    j["moe_topk"] = json::array({8, 8});  // Hunyuan writes top-k and shared experts once per layer
    j["num_shared_expert"] = json::array({1, 1});
    const ModelSpec h = model_from_json(j, "config.json");
    CHECK(h.moe->top_k == 8);
    CHECK(h.moe->shared_expert_ffn_hidden_size == 512);
    j["moe_topk"] = json::array({"eight"});
    CHECK(input_error([&] { model_from_json(j, "config.json"); }).find("/moe_topk: expected an integer") != std::string::npos);
  }
  SUBCASE("Kimi's linear (KDA) attention, Gemma 4's and MiMo-V2's per-layer attention shapes are refused") {
    json j = load_json_file(test::data_file("hf/kimi-k2.json"));
    j["linear_attn_config"] = {{"kda_layers", {1, 2, 3}}, {"num_heads", 32}, {"head_dim", 128}};
    CHECK(input_error([&] { model_from_json(j, "config.json"); }).find("/linear_attn_config") != std::string::npos);
    j = load_json_file(test::data_file("hf/gemma-3-27b.json"));
    j["text_config"]["model_type"] = "gemma4_text";
    const std::string msg = input_error([&] { model_from_json(j, "config.json"); });
    CHECK(msg.find("model_type \"gemma4\"") != std::string::npos);
    CHECK(msg.find("global_head_dim") != std::string::npos);
    j = load_json_file(test::data_file("hf/llama-3.1-8b.json"));
    j["swa_num_key_value_heads"] = 8;  // MiMo-V2
    CHECK(input_error([&] { model_from_json(j, "config.json"); }).find("sliding-window layers with their own attention shape") != std::string::npos);
  }
  SUBCASE("EXAONE: a string sliding-window pattern, MoE layers flagged per layer; Llama-Nemotron refused") {
    json j = load_json_file(test::data_file("hf/llama-3.1-8b.json"));
    j["model_type"] = "exaone4";
    j["sliding_window"] = 4096;
    j["sliding_window_pattern"] = "LLLG";  // HF Exaone4Config: L local, G global, repeated
    ModelSpec m = model_from_json(j, "config.json");
    CHECK(m.sliding_window == 4096);
    CHECK(m.uses_sliding_window(0));
    CHECK(m.uses_sliding_window(2));
    CHECK_FALSE(m.uses_sliding_window(3));
    CHECK(m.full_attention_every() == 4);
    j["sliding_window_pattern"] = "LLX";
    CHECK(input_error([&] { model_from_json(j, "config.json"); }).find("/sliding_window_pattern: expected an integer or a string of L") != std::string::npos);
    j["sliding_window_pattern"] = "LLLG";
    j["num_experts"] = 8;
    j["num_experts_per_tok"] = 2;
    j["moe_intermediate_size"] = 1024;
    j["is_moe_layer"] = json::array();
    for (int i = 0; i < 32; ++i) j["is_moe_layer"].push_back(i > 0);
    m = model_from_json(j, "config.json");
    CHECK_FALSE(m.is_moe_layer(0));
    CHECK(m.num_moe_layers() == 31);
    j["is_moe_layer"][3] = 1;
    CHECK(input_error([&] { model_from_json(j, "config.json"); }).find("/is_moe_layer: expected a list of 32 true/false") != std::string::npos);
    j = load_json_file(test::data_file("hf/llama-3.1-8b.json"));
    j["model_type"] = "nemotron-nas";
    j["block_configs"] = json::array({json::object({{"attention", {{"no_op", true}}}})});
    CHECK(input_error([&] { model_from_json(j, "config.json"); }).find("/block_configs") != std::string::npos);
  }
  SUBCASE("K-EXAONE (exaone_moe): pre-norm with per-head q/k norms, NoPE global layers, per-layer windows and clamps") {
    // The keys Megatron-Bridge's exaone_moe_bridge.py reads: per-layer windows (0: full attention),
    // MoE layers flagged per layer, grouped sigmoid routing, shared experts, SwiGLU clamp limits.
    json j = load_json_file(test::data_file("hf/llama-3.1-8b.json"));
    j["model_type"] = "exaone_moe";
    j.erase("rope_scaling");
    j["num_experts"] = 16;
    j["num_experts_per_tok"] = 4;
    j["moe_intermediate_size"] = 1024;
    j["num_shared_experts"] = 1;
    j["scoring_func"] = "sigmoid";
    j["mlp_layer_types"] = json::array();
    j["sliding_windows"] = json::array();
    for (int i = 0; i < 32; ++i) {
      j["mlp_layer_types"].push_back(i == 0 ? "dense" : "sparse");
      j["sliding_windows"].push_back(i % 4 == 3 ? 0 : 128);
    }
    ModelSpec m = model_from_json(j, "config.json");
    CHECK(m.qk_layernorm);
    CHECK_FALSE(m.norm_after_sublayers);
    CHECK(m.activation == Activation::swiglu);
    CHECK(m.num_moe_layers() == 31);
    CHECK(m.moe->shared_expert_ffn_hidden_size == 1024);
    CHECK(m.sliding_window == 128);
    CHECK(m.full_attention_every() == 4);
    REQUIRE(static_cast<int>(m.no_rope_layers.size()) == 32);
    for (int i = 0; i < 32; ++i) CHECK(m.no_rope_layers[i] == (i % 4 == 3 ? 1 : 0));
    CHECK_FALSE(m.per_layer_activation_clamp);
    // K-EXAONE's first published config names the leading dense layers first_last_k_dense_replace.
    json first = j;
    first.erase("mlp_layer_types");
    first["first_last_k_dense_replace"] = 2;
    CHECK(model_from_json(first, "config.json").num_moe_layers() == 30);
    // Windows of two sizes, or a list of the wrong length, are refused naming the key.
    j["sliding_windows"][1] = 256;
    CHECK(input_error([&] { model_from_json(j, "config.json"); }).find("/sliding_windows: model_type \"exaone_moe\": sliding windows of different sizes") !=
          std::string::npos);
    j["sliding_windows"].erase(1);
    CHECK(input_error([&] { model_from_json(j, "config.json"); }).find("/sliding_windows: expected 32 entries") != std::string::npos);
    j["sliding_windows"].insert(j["sliding_windows"].begin() + 1, 128);
    // A clamp limit per layer: costed, and written into the model JSON (a launch is refused for it).
    j["swiglu_limits"] = json::array();
    for (int i = 0; i < 32; ++i) j["swiglu_limits"].push_back(i == 0 ? 0.0 : 7.0);
    m = model_from_json(j, "config.json");
    CHECK(m.per_layer_activation_clamp);
    CHECK(model_from_json(model_to_json(m), "roundtrip.json") == m);
    j["swiglu_limits"][2] = -1.0;
    CHECK(input_error([&] { model_from_json(j, "config.json"); }).find("/swiglu_limits: expected a clamp limit per layer") != std::string::npos);
  }
  SUBCASE("Step-3.5: sliding-window layers with their own head count are refused") {
    json j = load_json_file(test::data_file("hf/llama-3.1-8b.json"));
    j["model_type"] = "step3p5";
    j["attention_other_setting"] = {{"attention_type", "sliding_attention"}, {"num_attention_heads", 96}, {"head_dim", 128}};
    CHECK(input_error([&] { model_from_json(j, "config.json"); })
              .find("/attention_other_setting: model_type \"step3p5\": sliding-window layers with their own attention shape (num_attention_heads)") !=
          std::string::npos);
    j["attention_other_setting"]["num_attention_heads"] = j["num_attention_heads"];  // the same shape: nothing of its own
    j["attention_other_setting"].erase("head_dim");
    CHECK_NOTHROW(model_from_json(j, "config.json"));
  }
  SUBCASE("Nemotron / Minitron: squared ReLU in a plain up/down MLP") {
    const ModelSpec m = hf_model("minitron-8b");
    CHECK(m.activation == Activation::squared_relu);
    CHECK_FALSE(m.gated_mlp());
    CHECK(m.zero_centered_gamma);  // NemotronLayerNorm1P
    CHECK_FALSE(hf_model("llama-3.1-8b").zero_centered_gamma);
    CHECK(m.normalization == Normalization::layernorm);
    CHECK(m.rotary_percent == 0.5);
    CHECK(m.head_dim() == 128);
    // NVIDIA's model card: Minitron-8B, 8B parameters (rounded).
    CHECK(m.total_params() / 1e9 == doctest::Approx(8.3).epsilon(0.03));
    CHECK(model_from_json(model_to_json(m), "rt.json") == m);
    json j = load_json_file(test::data_file("hf/llama-3.1-8b.json"));
    j["model_type"] = "bitnet";  // BitNet gates its squared ReLU, which no Megatron flag expresses
    j["hidden_act"] = "relu2";
    CHECK(input_error([&] { model_from_json(j, "config.json"); }).find("/hidden_act: model_type \"bitnet\": squared ReLU") != std::string::npos);
  }
  SUBCASE("Llama 4 and SmolLM3: NoPE layers (1 = no RoPE in strata, as Megatron counts them) and chunked attention") {
    const ModelSpec l = hf_model("llama-4-maverick");
    REQUIRE(l.no_rope_layers.size() == 48);
    for (int i = 0; i < 48; ++i) CHECK(l.no_rope_layers[i] == ((i + 1) % 4 == 0 ? 1 : 0));  // Llama4TextConfig's default
    CHECK(l.attention_chunk_size == 8192);
    // The built-in model says the same.
    CHECK(test::catalog().model("llama-4-maverick").no_rope_layers == l.no_rope_layers);
    CHECK(test::catalog().model("llama-4-maverick").attention_chunk_size == 8192);
    CHECK(model_from_json(model_to_json(l), "rt.json") == l);
    // SmolLM3's config lists the layers that rotate (1) and those that do not (0).
    json j = load_json_file(test::data_file("hf/llama-3.1-8b.json"));
    j["model_type"] = "smollm3";
    j["no_rope_layers"] = json::array();
    for (int i = 0; i < 32; ++i) j["no_rope_layers"].push_back(i % 3 == 2 ? 0 : 1);
    ModelSpec m = model_from_json(j, "config.json");
    REQUIRE(m.no_rope_layers.size() == 32);
    for (int i = 0; i < 32; ++i) CHECK(m.no_rope_layers[i] == (i % 3 == 2 ? 1 : 0));
    CHECK(m.attention_chunk_size == 0);
    j["no_rope_layers"] = json::array();  // empty: every no_rope_layer_interval-th layer
    j["no_rope_layer_interval"] = 8;
    m = model_from_json(j, "config.json");
    CHECK(m.no_rope_layers[7] == 1);
    CHECK(m.no_rope_layers[6] == 0);
    CHECK(std::count(m.no_rope_layers.begin(), m.no_rope_layers.end(), 1) == 4);
    j["no_rope_layers"] = json::array({1, 0});
    CHECK(input_error([&] { model_from_json(j, "config.json"); }).find("/no_rope_layers") != std::string::npos);
    j["no_rope_layers"] = 4;
    CHECK(input_error([&] { model_from_json(j, "config.json"); }).find("/no_rope_layers") != std::string::npos);
    // A Llama without those keys rotates every layer.
    CHECK(hf_model("llama-3.1-8b").no_rope_layers.empty());
  }
  SUBCASE("an MoE in keys strata does not read is refused, not costed as a dense model") {
    json j = load_json_file(test::data_file("hf/llama-3.1-8b.json"));
    j["routed_expert_count"] = 64;
    std::string msg = input_error([&] { model_from_json(j, "config.json"); });
    CHECK(msg.find("/routed_expert_count") != std::string::npos);
    CHECK(msg.find("MoE config in a form strata does not read") != std::string::npos);
    j.erase("routed_expert_count");
    j["num_experts"] = 0;  // an explicit zero: a dense model
    j["num_experts_per_tok"] = 2;
    CHECK_FALSE(model_from_json(j, "config.json").moe.has_value());
  }
  // tests/data/hf/glm-5.json: zai-org/GLM-5's config.json at revision 4e6698ba (the file's git hash
  // matches the hub's etag); deepseek-v3.2.json: deepseek-ai/DeepSeek-V3.2's config.json with all its
  // keys as a public model report printed it (the bytes could not be checked against the hub).
  SUBCASE("DeepSeek-V3.2 and GLM-5: MLA with DeepSeek Sparse Attention's indexer") {
    const ModelSpec ds = hf_model("deepseek-v3.2");
    REQUIRE(ds.mla.has_value());
    REQUIRE(ds.dsa.has_value());
    CHECK(ds.dsa->index_heads == 64);
    CHECK(ds.dsa->index_head_dim == 128);
    CHECK(ds.dsa->index_topk == 2048);
    CHECK(ds.dsa->topk_freq == 1);
    CHECK(ds.dsa->rotate_activation);  // DeepSeek's reference indexer rotates q and k
    CHECK_FALSE(ds.dsa->rope_interleaved);
    // Each layer's indexer: wq_b (1536 -> 64 x 128), wk (7168 -> 128), k_norm (LayerNorm), weights_proj (7168 -> 64).
    const double indexer = 1536.0 * 64 * 128 + 7168.0 * 128 + 2 * 128 + 7168.0 * 64;
    CHECK(ds.indexer_params() == doctest::Approx(indexer).epsilon(1e-12));
    const ModelSpec v3 = hf_model("deepseek-v3");
    CHECK(ds.total_params() - v3.total_params() == doctest::Approx(61 * indexer).epsilon(1e-9));
    CHECK(ds.indexer_share() == 1.0);
    const ModelSpec glm = hf_model("glm-5");
    REQUIRE(glm.dsa.has_value());
    CHECK(glm.dsa->index_heads == 32);
    CHECK(glm.dsa->rope_interleaved);         // indexer_rope_interleave
    CHECK_FALSE(glm.dsa->rotate_activation);  // Megatron-Bridge's GLM-5 provider
    CHECK(glm.mla->qk_nope_head_dim == 192);
    CHECK(glm.mla->v_head_dim == 256);
    CHECK(glm.total_params() / 1e9 == doctest::Approx(744).epsilon(0.01));  // GLM-5's published 744B
    // The strata model JSON keeps the indexer and its launch settings.
    CHECK(model_from_json(model_to_json(glm), "model.json") == glm);
  }
  SUBCASE("DSA: top-k shared across layers, and what is refused") {
    json j = load_json_file(test::data_file("hf/glm-5.json"));
    j["index_topk_freq"] = 4;
    j["index_skip_topk_offset"] = 3;
    const ModelSpec m = model_from_json(j, "config.json");
    // Megatron is_dsa_skip_topk_layer: layers 1-3 and then every 4th (3, 7, 11, ...) run the indexer.
    CHECK(m.dsa->computes_topk(1));
    CHECK(m.dsa->computes_topk(3));
    CHECK_FALSE(m.dsa->computes_topk(4));
    CHECK(m.dsa->computes_topk(7));
    CHECK(m.indexer_params_at(6) > 0);
    CHECK(m.indexer_params_at(3) == 0);
    CHECK(m.indexer_share() == doctest::Approx(21.0 / 78));  // layers 1, 2, 3, 7, ..., 75
    // The share is the count of layers computes_topk says run the indexer, for any rule.
    ModelSpec rule = m;
    for (int freq = 1; freq <= 5; ++freq)
      for (int offset = 0; offset <= 6; ++offset)
        for (int layers = 1; layers <= 20; ++layers) {
          rule.dsa->topk_freq = freq;
          rule.dsa->skip_topk_offset = offset;
          rule.num_layers = layers;
          int own = 0;
          for (int i = 1; i <= layers; ++i) own += rule.dsa->computes_topk(i) ? 1 : 0;
          CHECK(rule.indexer_share() * layers == doctest::Approx(own));
        }
    json listed = j;
    listed["indexer_types"] = json::array();
    for (int i = 1; i <= 78; ++i) listed["indexer_types"].push_back(m.dsa->computes_topk(i) ? "full" : "shared");
    CHECK(model_from_json(listed, "config.json") == m);
    listed["indexer_types"][3] = "full";
    CHECK(input_error([&] { model_from_json(listed, "config.json"); }).find("/indexer_types") != std::string::npos);
    // GLM-5.2's config (transformers 5) also names every layer "deepseek_sparse_attention" in
    // layer_types (the newer name "indexed_attention"): the same model. A list mixing DSA with dense
    // attention layers is refused, naming the key.
    for (const char* name : {"deepseek_sparse_attention", "indexed_attention"}) {
      json typed = j;
      typed["layer_types"] = json::array();
      for (int i = 0; i < 78; ++i) typed["layer_types"].push_back(name);
      CHECK(model_from_json(typed, "config.json") == m);
      typed["layer_types"][5] = "full_attention";
      const std::string err = input_error([&] { model_from_json(typed, "config.json"); });
      CHECK(err.find("/layer_types") != std::string::npos);
      CHECK(err.find("DeepSeek Sparse Attention in 77 of 78 layers") != std::string::npos);
    }
    json no_mla = load_json_file(test::data_file("hf/llama-3.1-8b.json"));
    no_mla["index_topk"] = 2048;
    const std::string msg = input_error([&] { model_from_json(no_mla, "config.json"); });
    CHECK(msg.find("/index_topk") != std::string::npos);
    CHECK(msg.find("without multi-latent attention") != std::string::npos);
    // DeepSeek-V4's further parts are refused, never costed as DeepSeek-V3.2's layers.
    for (const auto& [key, value, what] : {std::tuple<const char*, json, const char*>{"hc_mult", 4, "hyper-connections"},
                                           {"compress_ratios", json::array({0, 4, 128}), "compressed sparse attention"},
                                           {"o_lora_rank", 1024, "low-rank grouped output projection"},
                                           {"num_hash_layers", 3, "hash-routed MoE layers"}}) {
      json v4 = load_json_file(test::data_file("hf/deepseek-v3.2.json"));
      v4[key] = value;
      const std::string err = input_error([&] { model_from_json(v4, "config.json"); });
      CHECK(err.find(std::string("/") + key) != std::string::npos);
      CHECK(err.find(what) != std::string::npos);
    }
    json strata_json = model_to_json(m);
    strata_json.erase("mla");
    CHECK(input_error([&] { model_from_json(strata_json, "model.json"); }).find("/dsa") != std::string::npos);
  }
  SUBCASE("block-sparse attention in sparse_attention_config is refused; switched off, it is plain attention") {
    json j = load_json_file(test::data_file("hf/qwen3-30b-a3b.json"));
    j["model_type"] = "minimax_m3";
    j["sparse_attention_config"] = {{"use_sparse_attention", true}, {"topk_blocks", 16}};
    std::string msg = input_error([&] { model_from_json(j, "config.json"); });
    CHECK(msg.find("/sparse_attention_config") != std::string::npos);
    CHECK(msg.find("sparse attention") != std::string::npos);
    j["sparse_attention_config"]["use_sparse_attention"] = false;
    CHECK_NOTHROW(model_from_json(j, "config.json"));
  }
  SUBCASE("an activation strata does not know is refused, never costed and launched as GELU or SwiGLU") {
    json gpt2 = load_json_file(test::data_file("hf/gpt-neox-20b.json"));  // gelu_fast: GELU
    CHECK(model_from_json(gpt2, "config.json").activation == Activation::gelu);
    gpt2["hidden_act"] = "gelu_new";
    CHECK(model_from_json(gpt2, "config.json").activation == Activation::gelu);
    gpt2["hidden_act"] = "silu";
    CHECK(model_from_json(gpt2, "config.json").activation == Activation::swiglu);
    for (const char* act : {"relu", "swigluoai", "quick_gelu"}) {
      CAPTURE(act);
      gpt2["hidden_act"] = act;
      std::string msg = input_error([&] { model_from_json(gpt2, "config.json"); });
      CHECK(msg.find("/hidden_act") != std::string::npos);
      CHECK(msg.find(std::string("\"") + act + "\"") != std::string::npos);
    }
    // The Llama recipe gates its MLP: SiLU (or nothing said) is SwiGLU; a gated GELU is not.
    json llama = load_json_file(test::data_file("hf/llama-3.1-8b.json"));
    llama.erase("hidden_act");
    CHECK(model_from_json(llama, "config.json").activation == Activation::swiglu);
    llama["hidden_act"] = "gelu";
    CHECK(input_error([&] { model_from_json(llama, "config.json"); }).find("in a gated MLP") != std::string::npos);
  }
  SUBCASE("query/key norms over all heads and norms after the sublayers are read, and kept by strata's model file") {
    const ModelSpec olmo = hf_model("olmo-2-7b");
    CHECK(olmo.qk_norm_across_heads);
    CHECK(olmo.norm_after_sublayers);
    const ModelSpec minimax = hf_model("minimax-m2");  // qk_norm_type "per_layer"
    CHECK(minimax.qk_norm_across_heads);
    CHECK_FALSE(minimax.norm_after_sublayers);
    for (const char* per_head : {"qwen3-32b", "glm-4.5"}) {
      CAPTURE(per_head);
      const ModelSpec m = hf_model(per_head);
      CHECK(m.qk_layernorm);
      CHECK_FALSE(m.qk_norm_across_heads);
    }
    const ModelSpec back = model_from_json(model_to_json(olmo), "model.json");
    CHECK(back.qk_norm_across_heads);
    CHECK(back.norm_after_sublayers);
  }
  SUBCASE("parallel residual, norms around or after the sublayers, multipliers and shared KV are read, and kept") {
    // GPT-NeoX (use_parallel_residual), Falcon's new decoder, Cohere 2: attention and MLP side by side.
    for (const char* parallel : {"gpt-neox-20b", "falcon-40b", "command-r7b"}) {
      CAPTURE(parallel);
      CHECK(hf_model(parallel).parallel_attention_mlp);
    }
    json neox = load_json_file(test::data_file("hf/gpt-neox-20b.json"));
    neox["use_parallel_residual"] = false;
    CHECK_FALSE(model_from_json(neox, "config.json").parallel_attention_mlp);
    for (const char* sequential : {"llama-3.1-8b", "phi-3-mini-4k", "olmo-2-7b"}) {
      CAPTURE(sequential);
      CHECK_FALSE(hf_model(sequential).parallel_attention_mlp);
    }
    // GLM-4-0414 normalizes both sides of each sublayer; EXAONE 4.0 only the outputs, with per-head q/k norms.
    CHECK(hf_model("glm-4-9b-0414").norm_around_sublayers);
    CHECK_FALSE(hf_model("glm-4-9b-0414").norm_after_sublayers);
    CHECK_FALSE(hf_model("glm-4.5").norm_around_sublayers);
    const ModelSpec exaone = hf_model("exaone-4.0-32b");
    CHECK(exaone.norm_after_sublayers);
    CHECK(exaone.qk_layernorm);
    // Cohere 2 and EXAONE 4.0 rotate in their sliding-window layers only: every fourth (global) layer has no RoPE.
    for (const ModelSpec& m : {exaone, hf_model("command-r7b")}) {
      CAPTURE(m.name);
      REQUIRE(static_cast<int>(m.no_rope_layers.size()) == m.num_layers);
      for (int i = 0; i < m.num_layers; ++i) CHECK(m.no_rope_layers[i] == 1 - m.sliding_window_pattern[i]);
      CHECK(m.no_rope_layers[3] == 1);
      CHECK(m.no_rope_layers[0] == 0);
    }
    // Granite's multipliers and Cohere's logit_scale; an attention multiplier of 1/sqrt(head_dim) is the usual scale.
    CHECK(hf_model("granite-3.1-8b").scalar_multipliers);
    CHECK(hf_model("command-r7b").scalar_multipliers);
    json granite = load_json_file(test::data_file("hf/granite-3.1-8b.json"));
    for (const char* k : {"embedding_multiplier", "residual_multiplier", "logits_scaling"}) granite[k] = 1.0;
    granite["attention_multiplier"] = 1.0 / std::sqrt(128.0);
    CHECK_FALSE(model_from_json(granite, "config.json").scalar_multipliers);
    granite["residual_multiplier"] = 0.22;
    CHECK(model_from_json(granite, "config.json").scalar_multipliers);
    // Hunyuan's cross-layer attention shares K/V only with a share factor above 1 (HunYuanConfig default 1).
    json cla = load_json_file(test::data_file("hf/llama-3.1-8b.json"));
    cla["model_type"] = "hunyuan";
    cla["use_cla"] = true;
    CHECK_FALSE(model_from_json(cla, "config.json").kv_shared_across_layers);
    cla["cla_share_factor"] = 2;
    const ModelSpec hunyuan = model_from_json(cla, "config.json");
    CHECK(hunyuan.kv_shared_across_layers);
    // strata's model file keeps them.
    for (const ModelSpec& m : {hf_model("falcon-40b"), hf_model("glm-4-9b-0414"), hf_model("granite-3.1-8b"), hunyuan}) {
      CAPTURE(m.name);
      CHECK(model_from_json(model_to_json(m), "model.json") == m);
    }
  }
  SUBCASE("biases Megatron-LM cannot place alone: attention_bias reaching o_proj, mlp_bias alone") {
    json llama = load_json_file(test::data_file("hf/llama-3.1-8b.json"));
    CHECK_FALSE(model_from_json(llama, "config.json").partial_linear_biases);
    llama["attention_bias"] = true;  // LlamaAttention: q/k/v/o_proj all take attention_bias
    const ModelSpec biased = model_from_json(llama, "config.json");
    CHECK(biased.partial_linear_biases);
    CHECK(biased.add_qkv_bias);
    llama["mlp_bias"] = true;  // every linear biased: Megatron's --add-bias-linear
    CHECK_FALSE(model_from_json(llama, "config.json").partial_linear_biases);
    CHECK(model_from_json(llama, "config.json").add_linear_bias);
    llama["attention_bias"] = false;  // the MLP's linears only
    CHECK(model_from_json(llama, "config.json").partial_linear_biases);
    // GLM-4's attention_bias stops at q/k/v (Glm4Attention o_proj bias=False); Qwen2's is built in.
    CHECK(hf_model("glm-4-9b-0414").add_qkv_bias);
    CHECK_FALSE(hf_model("glm-4-9b-0414").partial_linear_biases);
    CHECK_FALSE(hf_model("glm-4.5").partial_linear_biases);
    CHECK_FALSE(hf_model("qwen1.5-moe-a2.7b").partial_linear_biases);
    // Seed-OSS keys the output projection's bias apart.
    json seed = load_json_file(test::data_file("hf/llama-3.1-8b.json"));
    seed["model_type"] = "seed_oss";
    seed["attention_bias"] = true;
    seed["attention_out_bias"] = false;
    CHECK_FALSE(model_from_json(seed, "config.json").partial_linear_biases);
    seed["attention_out_bias"] = true;
    CHECK(model_from_json(seed, "config.json").partial_linear_biases);
    CHECK(model_from_json(model_to_json(biased), "model.json") == biased);
  }
  SUBCASE("dots.llm1: Qwen3's attention with DeepSeek-V3's router and MoE") {
    const ModelSpec m = hf_model("dots.llm1");
    CHECK(m.qk_layernorm);  // Dots1Attention(Qwen3Attention)
    CHECK(m.activation == Activation::swiglu);
    CHECK(m.normalization == Normalization::rmsnorm);
    CHECK_FALSE(m.tied_embeddings);
    REQUIRE(m.moe);
    CHECK(m.moe->router_score_function == "sigmoid");
    CHECK(m.moe->router_bias);  // e_score_correction_bias
    CHECK(m.moe->topk_scaling_factor == doctest::Approx(2.5));
    CHECK(m.moe->shared_expert_ffn_hidden_size == 2 * 1408);
    CHECK_FALSE(m.is_moe_layer(0));
    CHECK(m.is_moe_layer(1));
    // 142B parameters, 14B active (the dots.llm1 report's abstract).
    CHECK(m.total_params() / 1e9 == doctest::Approx(142).epsilon(0.02));
    CHECK(m.active_params() / 1e9 == doctest::Approx(14).epsilon(0.03));
    // Whatever scoring_func says (DeepseekV3TopkRouter is sigmoid); norm_topk_prob defaults to false.
    json j = load_json_file(test::data_file("hf/dots.llm1.json"));
    j["scoring_func"] = "noaux_tc";
    j.erase("norm_topk_prob");
    const ModelSpec again = model_from_json(j, "config.json");
    CHECK(again.moe->router_score_function == "sigmoid");
    CHECK_FALSE(again.moe->normalize_top_k);
  }
  SUBCASE("Qwen2's sliding window covers the layers from max_window_layers on") {
    json qwen = load_json_file(test::data_file("hf/qwen3-32b.json"));
    qwen["use_sliding_window"] = true;
    qwen["sliding_window"] = 4096;
    qwen["max_window_layers"] = 60;
    const ModelSpec m = model_from_json(qwen, "config.json");
    REQUIRE(static_cast<int>(m.sliding_window_pattern.size()) == m.num_layers);
    CHECK(m.sliding_window_pattern[59] == 0);  // the first max_window_layers attend in full
    CHECK(m.sliding_window_pattern[60] == 1);
    qwen["use_sliding_window"] = false;
    CHECK(model_from_json(qwen, "config.json").sliding_window == 0);
  }
  SUBCASE("Arcee's squared-ReLU MLP is Nemotron's; LongCat-Flash's and Gemma 3n's layers are refused") {
    json arcee = load_json_file(test::data_file("hf/llama-3.1-8b.json"));
    arcee["model_type"] = "arcee";
    arcee["hidden_act"] = "relu2";
    CHECK(model_from_json(arcee, "config.json").activation == Activation::squared_relu);
    arcee["model_type"] = "llama";
    CHECK_THROWS_WITH_AS(model_from_json(arcee, "config.json"), doctest::Contains("squared ReLU"), InputError);
    json gemma3n = load_json_file(test::data_file("hf/gemma-2-9b.json"));
    gemma3n["model_type"] = "gemma3n_text";
    CHECK_THROWS_WITH_AS(model_from_json(gemma3n, "config.json"), doctest::Contains("AltUp"), InputError);
    json longcat = load_json_file(test::data_file("hf/deepseek-v3.json"));
    longcat["model_type"] = "longcat_flash";
    CHECK_THROWS_WITH_AS(model_from_json(longcat, "config.json"), doctest::Contains("two attention blocks"), InputError);
    longcat["model_type"] = "deepseek_v3";
    longcat["zero_expert_num"] = 256;
    CHECK_THROWS_WITH_AS(model_from_json(longcat, "config.json"), doctest::Contains("zero-computation"), InputError);
  }
  SUBCASE("vision-language configs: the language model, read as its family's decoder, and said to be only that") {
    CHECK(hf_model("llama-4-maverick").language_model_of_multimodal);
    CHECK(hf_model("gemma-3-27b").language_model_of_multimodal);
    CHECK_FALSE(hf_model("llama-3.1-8b").language_model_of_multimodal);
    // Qwen3-VL: Qwen3's decoder (per-head q/k norms) under text_config, with M-RoPE sections.
    json text = load_json_file(test::data_file("hf/qwen3-32b.json"));
    text["model_type"] = "qwen3_vl_text";
    text["rope_scaling"] = {{"rope_type", "default"}, {"mrope_section", {24, 20, 20}}, {"mrope_interleaved", true}};
    const json vl = {{"model_type", "qwen3_vl"}, {"text_config", text}, {"vision_config", {{"depth", 27}}}};
    const ModelSpec qwen3_vl = model_from_json(vl, "config.json");
    CHECK(qwen3_vl.language_model_of_multimodal);
    CHECK(qwen3_vl.qk_layernorm);
    CHECK(qwen3_vl.rope_scaling.empty());
    CHECK(model_from_json(model_to_json(qwen3_vl), "model.json") == qwen3_vl);
    // Qwen2-VL: Qwen2's built-in QKV bias; its rope_scaling type "mrope" is plain RoPE for text tokens.
    text["model_type"] = "qwen2_vl";
    text["rope_scaling"] = {{"type", "mrope"}, {"mrope_section", {16, 24, 24}}};
    text["vision_config"] = {{"depth", 32}};
    const ModelSpec qwen2_vl = model_from_json(text, "config.json");
    CHECK(qwen2_vl.add_qkv_bias);
    CHECK_FALSE(qwen2_vl.partial_linear_biases);
    CHECK(qwen2_vl.rope_scaling.empty());
    CHECK(qwen2_vl.language_model_of_multimodal);  // the decoder's keys at the top, beside vision_config
  }
  SUBCASE("layer_types other than softmax attention are refused, naming the type") {
    json j = load_json_file(test::data_file("hf/llama-3.1-8b.json"));
    j["layer_types"] = json::array();
    for (int i = 0; i < 32; ++i) j["layer_types"].push_back(i % 4 == 3 ? "full_attention" : "conv");  // LFM2
    j["model_type"] = "lfm2";
    CHECK_THROWS_WITH_AS(model_from_json(j, "config.json"), doctest::Contains("layer type \"conv\""), InputError);
    for (auto& t : j["layer_types"]) t = "full_attention";
    CHECK_NOTHROW(model_from_json(j, "config.json"));
    j["layer_types"][5] = "mamba";  // Granite 4.0 hybrids
    CHECK_THROWS_WITH_AS(model_from_json(j, "config.json"), doctest::Contains("layer type \"mamba\""), InputError);
  }
  SUBCASE("GELU's tanh approximations are read as such") {
    json gpt2 = load_json_file(test::data_file("hf/gpt-neox-20b.json"));
    CHECK(model_from_json(gpt2, "config.json").gelu_tanh_approximation);  // GPT-NeoX-20B: gelu_fast
    gpt2["hidden_act"] = "gelu";  // erf
    CHECK_FALSE(model_from_json(gpt2, "config.json").gelu_tanh_approximation);
    for (const char* act : {"gelu_new", "gelu_fast", "gelu_pytorch_tanh"}) {
      CAPTURE(act);
      gpt2["hidden_act"] = act;
      const ModelSpec m = model_from_json(gpt2, "config.json");
      CHECK(m.gelu_tanh_approximation);
      CHECK(m.activation == Activation::gelu);
      CHECK(model_from_json(model_to_json(m), "model.json") == m);
    }
    CHECK(hf_model("gemma-2-9b").gelu_tanh_approximation);
    CHECK_FALSE(hf_model("gpt-oss-20b").gelu_tanh_approximation);
  }
  SUBCASE("StarCoder2 names its norm epsilon norm_epsilon") {
    json j = load_json_file(test::data_file("hf/gpt-neox-20b.json"));
    j.erase("layer_norm_eps");
    j["model_type"] = "starcoder2";
    j["norm_epsilon"] = 1e-3;
    CHECK(model_from_json(j, "config.json").norm_epsilon == doctest::Approx(1e-3));
  }
  SUBCASE("norm_topk_prob takes the config class's default when absent") {
    json qwen = load_json_file(test::data_file("hf/qwen3-30b-a3b.json"));
    REQUIRE(qwen.contains("norm_topk_prob"));
    qwen.erase("norm_topk_prob");
    CHECK_FALSE(model_from_json(qwen, "config.json").moe->normalize_top_k);  // Qwen3MoeConfig: False
    json glm = load_json_file(test::data_file("hf/glm-4.5.json"));
    glm.erase("norm_topk_prob");
    CHECK(model_from_json(glm, "config.json").moe->normalize_top_k);  // Glm4MoeConfig: True
  }
  SUBCASE("Gemma 3's text_config without the keys takes Gemma3TextConfig's defaults") {
    json j = load_json_file(test::data_file("hf/gemma-2-9b.json"));
    j["model_type"] = "gemma3_text";
    j.erase("max_position_embeddings");
    j.erase("rms_norm_eps");
    const ModelSpec m = model_from_json(j, "config.json");
    CHECK(m.max_seq_length == 131072);
    CHECK(m.norm_epsilon == doctest::Approx(1e-6));
  }
  SUBCASE("unsupported architectures are refused naming model_type") {
    json j = load_json_file(test::data_file("hf/llama-3.1-8b.json"));
    j["model_type"] = "jamba";
    j["layers_block_type"] = json::array({"mamba", "attention"});
    std::string msg = input_error([&] { model_from_json(j, "config.json"); });
    CHECK(msg.find("model_type \"jamba\"") != std::string::npos);
    CHECK(msg.find("state-space") != std::string::npos);
    j = load_json_file(test::data_file("hf/gpt-oss-120b.json"));
    j["layer_types"][3] = "linear_attention";
    CHECK(input_error([&] { model_from_json(j, "config.json"); }).find("layer type \"linear_attention\"") != std::string::npos);
  }
  SUBCASE("GLM-4.5: Glm4MoeTopkRouter is sigmoid with a correction bias though the config names no scoring_func") {
    json j = load_json_file(test::data_file("hf/glm-4.5.json"));
    REQUIRE_FALSE(j.contains("scoring_func"));
    ModelSpec m = model_from_json(j, "config.json");
    CHECK(m.moe->router_score_function == "sigmoid");
    CHECK(m.moe->router_bias);
    CHECK(m.moe->topk_scaling_factor == j["routed_scaling_factor"].get<double>());
    CHECK(m.moe->normalize_top_k);
    CHECK(m.moe->num_groups == 0);  // n_group 1: no group-limited routing
    j["n_group"] = 4;
    j["topk_group"] = 2;
    m = model_from_json(j, "config.json");
    CHECK(m.moe->num_groups == 4);
    CHECK(m.moe->group_topk == 2);
    j["n_group"] = 7;  // 160 experts
    CHECK(input_error([&] { model_from_json(j, "config.json"); }).find("/n_group") != std::string::npos);
  }
  SUBCASE("DeepSeek: latent norms, YaRN numbers, group-limited routing as each topk_method scores groups") {
    const json j = load_json_file(test::data_file("hf/deepseek-v3.json"));
    const ModelSpec v3 = model_from_json(j, "config.json");
    CHECK(v3.qk_layernorm);
    CHECK(v3.rope_scaling == "yarn");
    CHECK(v3.rope_params.factor == j["rope_scaling"]["factor"].get<double>());
    CHECK(v3.rope_params.mscale_all_dim == j["rope_scaling"]["mscale_all_dim"].get<double>());
    CHECK(v3.rope_params.original_max_position == j["rope_scaling"]["original_max_position_embeddings"].get<std::int64_t>());
    CHECK(v3.moe->num_groups == j["n_group"].get<int>());
    CHECK(v3.moe->group_topk == j["topk_group"].get<int>());
    CHECK_FALSE(v3.moe->group_by_max_score);
    CHECK(v3.moe->topk_scaling_factor == j["routed_scaling_factor"].get<double>());
    const ModelSpec v2 = hf_model("deepseek-v2");
    CHECK(v2.moe->group_by_max_score);
    CHECK_FALSE(v2.moe->normalize_top_k);
    const ModelSpec kimi = hf_model("kimi-k2");
    CHECK(kimi.rope_params.beta_fast == 1.0);
    // Without latent norms, MLA has fewer parameters by their gains (q_lora_rank + kv_lora_rank per layer).
    ModelSpec bare = v3;
    bare.qk_layernorm = false;
    CHECK(v3.attention_params() - bare.attention_params() == 1536 + 512);
  }
  SUBCASE("YaRN without an mscale pair takes HF's default attention factor (Megatron's mscale 1, mscale_all_dim 0)") {
    json j = load_json_file(test::data_file("hf/gpt-oss-20b.json"));
    ModelSpec m = model_from_json(j, "config.json");
    CHECK(m.rope_params.mscale == 1.0);
    CHECK(m.rope_params.mscale_all_dim == 0.0);
    CHECK_FALSE(m.rope_params.truncate);
    j["rope_scaling"]["mscale"] = 0.707;  // alone it is ignored (modeling_rope_utils.py needs both)
    CHECK(model_from_json(j, "config.json").rope_params.mscale == 1.0);
  }
  SUBCASE("Llama 4: use_qk_norm is a weightless L2 norm; rope_scaling's llama3 numbers are kept") {
    const ModelSpec m = hf_model("llama-4-scout");
    CHECK(m.qk_l2_norm);
    CHECK_FALSE(m.qk_layernorm);
    CHECK(m.rope_scaling == "llama3");
    CHECK(m.rope_params.factor == 16);
    CHECK(m.rope_params.high_freq_factor == 1);
    CHECK(m.rope_params.original_max_position == 8192);
    ModelSpec learned = m;
    learned.qk_l2_norm = false;
    learned.qk_layernorm = true;
    CHECK(learned.attention_params() - m.attention_params() == 2 * 128);  // the L2 norm has no gains
  }
  SUBCASE("GPT-OSS: clamped quick-GeGLU with +1 offset and attention sinks") {
    const ModelSpec m = hf_model("gpt-oss-20b");
    CHECK(m.activation == Activation::quick_geglu);
    CHECK(m.gated_mlp());
    CHECK(m.glu_linear_offset == 1.0);
    CHECK(m.activation_clamp == 7.0);
    CHECK(m.attention_sinks);
    ModelSpec no_sinks = m;
    no_sinks.attention_sinks = false;
    CHECK(m.attention_params() - no_sinks.attention_params() == m.num_attention_heads);
  }
  SUBCASE("every config round-trips through the strata format") {
    for (const char* f : {"deepseek-v3", "deepseek-v2", "gpt-oss-120b", "llama-4-maverick", "llama-4-scout", "gemma-3-27b", "glm-4.5",
                          "qwen3-32b", "llama-3.1-8b", "nemotron-h-56b", "nemotron-3-nano-30b-a3b"}) {
      CAPTURE(f);
      const ModelSpec m = hf_model(f);
      CHECK(model_from_json(model_to_json(m), "rt.json") == m);
    }
  }
}

// tests/data/hf/nemotron-*.json: nvidia/Nemotron-H-8B-Base-8K's config.json (byte-exact: its sha256
// matches the hub file's), and Nemotron-H-56B-Base-8K's, NVIDIA-Nemotron-3-Nano-30B-A3B-BF16's and
// NVIDIA-Nemotron-3-Super-120B-A12B-FP8's as ai-dynamo/aiconfigurator keeps them (the same keys and
// values, reindented).
TEST_CASE("Hugging Face config.json: Nemotron-H hybrids (Mamba-2, attention, MLP and MoE layers)") {
  SUBCASE("Nemotron-H 8B: its pattern, Mamba shape, no positions, squared ReLU; Python's Infinity is read") {
    const ModelSpec m = hf_model("nemotron-h-8b");
    CHECK(m.hybrid_pattern == "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-");
    CHECK(m.num_layers == 52);
    CHECK(m.count_hybrid('M') == 24);
    CHECK(m.count_hybrid('*') == 4);
    CHECK(m.count_hybrid('-') == 24);
    REQUIRE(m.mamba.has_value());
    CHECK(m.mamba->num_heads == 128);
    CHECK(m.mamba->head_dim == 64);
    CHECK(m.mamba->state_dim == 128);
    CHECK(m.mamba->num_groups == 8);
    CHECK(m.mamba->d_inner() == 8192);
    CHECK(m.position_embedding == PositionEmbedding::none);
    CHECK(m.activation == Activation::squared_relu);
    CHECK(m.normalization == Normalization::rmsnorm);
    CHECK_FALSE(m.tied_embeddings);
    CHECK_FALSE(m.add_linear_bias);
    CHECK(m.num_query_groups == 8);
    CHECK(m.layer_kind(0).part == Sublayer::mamba);
    CHECK(m.layer_kind(1).part == Sublayer::mlp);
    CHECK(m.layer_kind(7).part == Sublayer::attention);
    CHECK_FALSE(m.uniform_layers());
    // A Mamba layer: in_proj 4096 x (2*8192 + 2*8*128 + 128), conv1d 4 taps + bias over 8192 + 2048
    // channels, dt_bias/A_log/D per head, the 8192-wide norm, out_proj 8192 x 4096, the input norm.
    const double mamba = 4096.0 * (16384 + 2048 + 128) + (8192 + 2048) * 5.0 + 3 * 128 + 8192 + 8192.0 * 4096 + 4096;
    CHECK(m.layer_params_at(0) == doctest::Approx(mamba).epsilon(1e-12));
    CHECK(m.layer_params_at(1) == doctest::Approx(2.0 * 4096 * 21504 + 4096).epsilon(1e-12));
  }
  SUBCASE("Nemotron 3 Nano: MoE layers by the pattern, sigmoid router with bias, the shared expert's own size") {
    const ModelSpec m = hf_model("nemotron-3-nano-30b-a3b");
    REQUIRE(m.moe.has_value());
    CHECK(m.count_hybrid('E') == 23);
    CHECK(m.num_moe_layers() == 23);
    CHECK(m.moe->num_experts == 128);
    CHECK(m.moe->top_k == 6);
    CHECK(m.moe->expert_ffn_hidden_size == 1856);
    CHECK(m.moe->shared_expert_ffn_hidden_size == 3712);
    CHECK(m.moe->router_score_function == "sigmoid");
    CHECK(m.moe->router_bias);
    CHECK(m.moe->layer_pattern.empty());
    CHECK(m.normalization == Normalization::rmsnorm);  // NemotronHRMSNorm, though the file says layer_norm_epsilon
    CHECK(m.kv_channels == 128);  // head_dim 128 with 32 heads over 2688
    CHECK(m.position_embedding == PositionEmbedding::none);  // its rope_theta notwithstanding
    CHECK(m.layer_kind(1).moe);
    CHECK(m.layer_kind(1).part == Sublayer::mlp);
  }
  SUBCASE("Nemotron 3 Super: latent MoE and an MTP module of its own pattern") {
    const ModelSpec m = hf_model("nemotron-3-super-120b-a12b");
    REQUIRE(m.moe.has_value());
    CHECK(m.moe->latent_size == 1024);
    CHECK(m.expert_width() == 1024);
    CHECK(m.moe->num_experts == 512);
    CHECK(m.moe->top_k == 22);
    // A routed expert maps 1024 -> 2688 -> 1024 (squared ReLU, not gated); the layer adds the
    // 4096 <-> 1024 projections.
    CHECK(m.expert_params() == doctest::Approx(2.0 * 1024 * 2688).epsilon(1e-12));
    CHECK(m.moe_latent_params() == doctest::Approx(2.0 * 4096 * 1024).epsilon(1e-12));
    CHECK(m.mtp_layers == 1);
    CHECK(m.hybrid_mtp_pattern == "*E");
    REQUIRE(m.mtp_layer_kinds().size() == 2);
    CHECK(m.mtp_layer_kinds()[0].part == Sublayer::attention);
    CHECK(m.mtp_layer_kinds()[1].moe);
    // NVIDIA's name: 120B total, 12B active (A12B), the latter without the two embedding tables.
    CHECK(m.total_params() == doctest::Approx(120e9).epsilon(0.01));
    const double tables = 2.0 * static_cast<double>(m.vocab_size * m.hidden_size);
    CHECK(m.active_params() - tables == doctest::Approx(12e9).epsilon(0.03));
    CHECK(model_from_json(model_to_json(m), "rt.json") == m);
  }
  // tests/data/hf/nemotron-3-ultra-550b-a55b.json: NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16's config.json
  // as ai-dynamo/aiconfigurator keeps it (HEAD 095f58a5): transformers 5's form, its layers a list
  // (layers_block_type, no num_hidden_layers) and its MTP module's too (mtp_layers_block_type).
  SUBCASE("Nemotron 3 Ultra: layers_block_type and mtp_layers_block_type lists") {
    const ModelSpec m = hf_model("nemotron-3-ultra-550b-a55b");
    CHECK(m.num_layers == 108);
    CHECK(m.hybrid_pattern.substr(0, 9) == "MEMEMEM*E");
    CHECK(m.count_hybrid('M') == 48);
    CHECK(m.count_hybrid('E') == 48);
    CHECK(m.count_hybrid('*') == 12);
    CHECK(m.hybrid_mtp_pattern == "*E");
    CHECK(m.mtp_layers == 1);
    REQUIRE(m.moe.has_value());
    CHECK(m.moe->latent_size == 2048);
    CHECK(m.moe->num_experts == 512);
    CHECK(m.moe->top_k == 22);
    CHECK(m.mamba->num_heads == 256);
    // NVIDIA's name: 550B total, 55B active (A55B).
    CHECK(m.total_params() == doctest::Approx(550e9).epsilon(0.01));
    CHECK(m.active_params() == doctest::Approx(55e9).epsilon(0.03));
    CHECK(model_from_json(model_to_json(m), "rt.json") == m);
  }
  SUBCASE("MTP depths sharing one module (mtp_use_repeated_layer): its weights once, in the model file too") {
    ModelSpec m = hf_model("nemotron-3-ultra-550b-a55b");
    m.mtp_layers = 2;
    const double two = m.mtp_params();
    m.mtp_repeated_layer = true;
    CHECK(m.mtp_weight_copies() == 1);
    CHECK(m.mtp_params() == doctest::Approx(two / 2).epsilon(1e-12));
    CHECK(model_from_json(model_to_json(m), "rt.json") == m);
    json j = model_to_json(m);
    j["mtp_layers"] = 0;
    CHECK(input_error([&] { model_from_json(j, "m.json"); }).find("/mtp_repeated_layer: a shared MTP module needs MTP layers") !=
          std::string::npos);
  }
  SUBCASE("the list and the pattern say the same; the list wins; the MTP layers default to NemotronHConfig's") {
    json j = load_json_file(test::data_file("hf/nemotron-3-nano-30b-a3b.json"));
    const ModelSpec nano = model_from_json(j, "config.json");
    json listed = j;
    listed["layers_block_type"] = json::array();
    for (char s : nano.hybrid_pattern) {
      const char* name = s == 'M' ? "mamba" : s == '*' ? "attention" : s == 'E' ? "moe" : "mlp";
      listed["layers_block_type"].push_back(name);
    }
    listed.erase("hybrid_override_pattern");
    listed.erase("num_hidden_layers");
    CHECK(model_from_json(listed, "config.json") == nano);
    // transformers 5's own names, under the alias layer_types
    json renamed = listed;
    renamed.erase("layers_block_type");
    renamed["layer_types"] = listed["layers_block_type"];
    for (auto& e : renamed["layer_types"]) {
      if (e == "mamba") e = "linear_attention";
      if (e == "attention") e = "full_attention";
    }
    CHECK(model_from_json(renamed, "config.json") == nano);
    // NemotronHConfig takes the list over a stale pattern, and its length over num_hidden_layers.
    listed["hybrid_override_pattern"] = std::string(52, 'M');
    listed["num_hidden_layers"] = 52;
    CHECK(model_from_json(listed, "config.json") == nano);
    listed["layers_block_type"][4] = "gdn";
    const std::string err = input_error([&] { model_from_json(listed, "config.json"); });
    CHECK(err.find("/layers_block_type") != std::string::npos);
    CHECK(err.find("\"gdn\"") != std::string::npos);
    // An MTP module without its layers given runs NemotronHConfig's default, attention then MoE.
    j["num_nextn_predict_layers"] = 1;
    CHECK(model_from_json(j, "config.json").hybrid_mtp_pattern == "*E");
    j["mtp_layers_block_type"] = json::array({"mamba", "moe"});
    CHECK(model_from_json(j, "config.json").hybrid_mtp_pattern == "ME");
  }
  SUBCASE("patterns that do not fit the model are refused") {
    json j = load_json_file(test::data_file("hf/nemotron-h-8b.json"));
    j["hybrid_override_pattern"] = "M-M*";
    CHECK_THROWS_WITH_AS(model_from_json(j, "c.json"), doctest::Contains("/hybrid_pattern: expected 52 symbols"), InputError);
    j["hybrid_override_pattern"] = std::string(51, '-') + "G";  // Nemotron-H's config gives no gated DeltaNet shape
    CHECK_THROWS_WITH_AS(model_from_json(j, "c.json"), doctest::Contains("/gdn: the pattern has gated DeltaNet layers (G)"), InputError);
    j["hybrid_override_pattern"] = std::string(51, '-') + "D";
    CHECK_THROWS_WITH_AS(model_from_json(j, "c.json"), doctest::Contains("symbol 'D' (DeepSeek sparse attention"), InputError);
    j["hybrid_override_pattern"] = std::string(51, '-') + "E";
    CHECK_THROWS_WITH_AS(model_from_json(j, "c.json"), doctest::Contains("MoE layers (E) but the model gives no MoE shape"), InputError);
    j["hybrid_override_pattern"] = "";  // never read as a transformer of decoder layers
    CHECK_THROWS_WITH_AS(model_from_json(j, "c.json"), doctest::Contains("/hybrid_override_pattern: expected one symbol per layer"), InputError);
    j["hybrid_override_pattern"] = std::string(52, 'M');
    j["num_nextn_predict_layers"] = 1;  // NemotronHConfig's default MTP layers, attention then MoE: no MoE shape here
    CHECK_THROWS_WITH_AS(model_from_json(j, "c.json"), doctest::Contains("MoE layers (E) but the model gives no MoE shape"), InputError);
    j["mtp_hybrid_override_pattern"] = "*G";
    CHECK_THROWS_WITH_AS(model_from_json(j, "c.json"), doctest::Contains("/mtp_hybrid_override_pattern: expected a pattern of M"), InputError);
    j.erase("num_nextn_predict_layers");
    j.erase("mtp_hybrid_override_pattern");
    j["n_groups"] = 7;
    CHECK_THROWS_WITH_AS(model_from_json(j, "c.json"), doctest::Contains("/mamba/num_groups: num_groups 7 must divide num_heads 128"),
                         InputError);
  }
}

// tests/data/hf/qwen3-next-80b-a3b.json: Qwen3-Next-80B-A3B-Thinking's config.json as
// ai-dynamo/aiconfigurator keeps it (commit 1b7cfb10; the same values as aliyun/SimAI's copy);
// qwen3.5-*.json: Qwen3.5-35B-A3B's and Qwen3.5-27B's as aiconfigurator keeps them (HEAD 095f58a5).
// Neither could be checked against the hub's bytes.
TEST_CASE("Hugging Face config.json: Qwen3-Next and Qwen3.5 (gated DeltaNet and gated attention layers)") {
  SUBCASE("Qwen3-Next: every fourth layer attends, the others run a gated DeltaNet, each followed by an MoE") {
    const ModelSpec m = hf_model("qwen3-next-80b-a3b");
    CHECK(m.num_layers == 96);  // 48 decoder layers, each a mixer layer and an MoE layer
    CHECK(m.hybrid_pattern.substr(0, 8) == "GEGEGE*E");
    CHECK(m.count_hybrid('G') == 36);
    CHECK(m.count_hybrid('*') == 12);
    CHECK(m.count_hybrid('E') == 48);
    REQUIRE(m.gdn.has_value());
    CHECK(m.gdn->num_key_heads == 16);
    CHECK(m.gdn->num_value_heads == 32);
    CHECK(m.gdn->key_head_dim == 128);
    CHECK(m.gdn->value_head_dim == 128);
    CHECK(m.attention_output_gate);
    CHECK(m.zero_centered_gamma);
    CHECK(m.qk_layernorm);
    CHECK(m.rotary_percent == 0.25);
    REQUIRE(m.moe.has_value());
    CHECK(m.moe->shared_expert_gate);
    CHECK(m.moe->shared_expert_ffn_hidden_size == 512);
    CHECK(m.mtp_layers == 0);
    // A gated DeltaNet layer: in_proj 2048 x (2*2048 + 2*4096 + 64), conv1d 4 taps over 8192
    // channels (no bias), dt_bias and A_log per value head, a 128-wide norm gain, out_proj, its norm.
    const double gdn = 2048.0 * (4096 + 8192 + 64) + 8192 * 4.0 + 64 + 128 + 4096.0 * 2048 + 2048;
    CHECK(m.layer_params_at(0) == doctest::Approx(gdn).epsilon(1e-12));
    CHECK(model_from_json(model_to_json(m), "rt.json") == m);
  }
  SUBCASE("Qwen3.5: the language model of a vision-language config, its layer_types and MTP module") {
    const ModelSpec m = hf_model("qwen3.5-35b-a3b");
    CHECK(m.language_model_of_multimodal);
    CHECK(m.num_layers == 80);
    CHECK(m.count_hybrid('*') == 10);
    CHECK(m.mtp_layers == 1);
    CHECK(m.hybrid_mtp_pattern == "*E");
    CHECK(m.attention_output_gate);
    const ModelSpec dense = hf_model("qwen3.5-27b");
    CHECK_FALSE(dense.moe.has_value());
    CHECK(dense.hybrid_pattern.find('E') == std::string::npos);
    CHECK(model_from_json(model_to_json(m), "rt.json") == m);
  }
  SUBCASE("a value head count that is not a multiple of the key heads is refused") {
    json j = load_json_file(test::data_file("hf/qwen3-next-80b-a3b.json"));
    j["linear_num_value_heads"] = 24;
    j["linear_num_key_heads"] = 16;
    CHECK_THROWS_WITH_AS(model_from_json(j, "c.json"), doctest::Contains("num_value_heads 24 must be a multiple of num_key_heads 16"),
                         InputError);
  }
}

TEST_CASE("validation records' model_config objects read as the models they name") {
  const json runs = load_json_file(std::string(STRATA_SOURCE_DIR) + "/../shared/validation/modern_runs.json");
  int n = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].contains("model_config")) continue;
    CAPTURE(runs[i]["id"].get<std::string>());
    const ModelSpec m = model_from_json(runs[i]["model_config"], "modern_runs.json", "/" + std::to_string(i) + "/model_config");
    CHECK(m.num_layers == runs[i]["num_layers"].get<int>());
    CHECK(m.hidden_size == runs[i]["hidden_size"].get<std::int64_t>());
    CHECK(m.moe.has_value());
    if (!runs[i]["params_b"].is_null()) CHECK(m.total_params() / 1e9 == doctest::Approx(runs[i]["params_b"].get<double>()).epsilon(0.02));
    ++n;
  }
  CHECK(n > 0);
}
}
