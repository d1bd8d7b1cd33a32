#include <doctest/doctest.h>

#include "cli/tokenizer_vocab.h"
#include "launch/megatron_import.h"
#include "test_util.h"

using namespace strata;
using test::input_error;

TEST_SUITE("cli") {
TEST_CASE("tokenizer_json_tokens: len(tokenizer) of a Hugging Face tokenizer.json") {
  // BPE: a token -> id map; added tokens past it count, one already in it does not.
  const nlohmann::json bpe = nlohmann::json::parse(
      R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2}},
          "added_tokens": [{"id": 3, "content": "<s>"}, {"id": 1, "content": "b"}]})");
  CHECK(tokenizer_json_tokens(bpe, "tok.json") == 4);
  // Unigram: [token, score] pairs, the position is the id.
  const nlohmann::json unigram = nlohmann::json::parse(R"({"model": {"type": "Unigram", "vocab": [["a", -1.0], ["b", -2.0]]}})");
  CHECK(tokenizer_json_tokens(unigram, "tok.json") == 2);
  CHECK(input_error([] { tokenizer_json_tokens(nlohmann::json::parse(R"({"model": {}})"), "tok.json"); })
            .find("tok.json: /model/vocab: expected the vocabulary") != std::string::npos);
  CHECK(input_error([] { tokenizer_json_tokens(nlohmann::json::parse(R"({"model": {"vocab": {"a": -1}}})"), "tok.json"); })
            .find("/model/vocab/a: expected a token id") != std::string::npos);
  CHECK(input_error([] { tokenizer_json_tokens(nlohmann::json::parse(R"({"model": {"vocab": {"a": 0}}, "added_tokens": [{}]})"), "t.json"); })
            .find("/added_tokens/0/id: expected the added token's id") != std::string::npos);
}

TEST_CASE("tokenizer_vocabulary: a tokenizer.json here, or the built-in model a Hugging Face id names") {
  const test::TempFile file("tokenizer.json", R"({"model": {"vocab": {"a": 0, "b": 1}}, "added_tokens": [{"id": 2}]})");
  const auto here = tokenizer_vocabulary(file.path(), test::catalog());
  REQUIRE(here.has_value());
  CHECK(here->tokens == 3);
  CHECK(here->source == file.path());
  const auto hub = tokenizer_vocabulary("meta-llama/Meta-Llama-3-8B", test::catalog());
  REQUIRE(hub.has_value());
  CHECK(hub->tokens == test::catalog().model("llama3-8b").vocab_size);
  // Neither: an id of no built-in model, a bare name, a file that is no tokenizer.json.
  CHECK_FALSE(tokenizer_vocabulary("google/gemma-3-27b", test::catalog()).has_value());
  CHECK_FALSE(tokenizer_vocabulary("gpt2", test::catalog()).has_value());
  const test::TempFile sentencepiece("tokenizer.model", "not json");
  CHECK_FALSE(tokenizer_vocabulary(sentencepiece.path(), test::catalog()).has_value());
  // A launch with HuggingFaceTokenizer and no --vocab-size takes the size, and says where from.
  const std::string launch = "pretrain_gpt.py --num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 128 "
                             "--max-position-embeddings 128 --micro-batch-size 1 --global-batch-size 8 "
                             "--tokenizer-type HuggingFaceTokenizer --tokenizer-model " + file.path();
  const MegatronLaunch read = read_megatron_launch(launch, "launch.sh", nullptr,
                                                   [](const std::string& t) { return tokenizer_vocabulary(t, test::catalog()); });
  CHECK(read.model.vocab_size == 3);
  CHECK(std::any_of(read.notes.begin(), read.notes.end(), [](const std::string& n) { return n.find("vocabulary: 3 tokens") != std::string::npos; }));
  CHECK(input_error([&] { read_megatron_launch(launch, "launch.sh", nullptr); }).find("--vocab-size: missing") != std::string::npos);
}
}
