#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "cli/tokenizer_vocab.h"
#include "costmodel/json_reader.h"
#include "launch/megatron_import.h"
#include "test_util.h"

using namespace strata;
using test::input_error;

namespace {

TokenizerVocabLookup lookup() {
  return [](const TokenizerRequest& r) { return tokenizer_vocabulary(r, test::catalog()); };
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// An environment variable set for one test, restored after it: the hub cache a test looks in is
// the test's own, never the machine's.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* v = std::getenv(name)) saved_ = v;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (saved_) setenv(name_, saved_->c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

bool has_note(const MegatronLaunch& l, const std::string& text) {
  return std::any_of(l.notes.begin(), l.notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

const std::string kShape = "pretrain_gpt.py --num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 128 "
                           "--max-position-embeddings 128 --micro-batch-size 1 --global-batch-size 8 ";

}  // namespace

TEST_SUITE("cli") {
TEST_CASE("tokenizer_json_tokens: len(tokenizer) of a Hugging Face tokenizer.json") {
  // BPE: a token -> id map; added tokens past it count, one already in it does not.
  const nlohmann::json bpe = nlohmann::json::parse(
      R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "c": 2}},
          "added_tokens": [{"id": 3, "content": "<s>"}, {"id": 1, "content": "b"}]})");
  CHECK(tokenizer_json_tokens(bpe, "tok.json") == 4);
  // Megatron's additional special tokens: new ones (each once) add a token; those in the vocabulary
  // or among the added tokens do not.
  CHECK(tokenizer_json_tokens(bpe, "tok.json", {"<s>", "a", "<new>", "<new>", "<other>"}) == 6);
  // Unigram: [token, score] pairs, the position is the id.
  const nlohmann::json unigram = nlohmann::json::parse(R"({"model": {"type": "Unigram", "vocab": [["a", -1.0], ["b", -2.0]]}})");
  CHECK(tokenizer_json_tokens(unigram, "tok.json") == 2);
  CHECK(tokenizer_json_tokens(unigram, "tok.json", {"b", "<x>"}) == 3);
  CHECK(input_error([] { tokenizer_json_tokens(nlohmann::json::parse(R"({"model": {}})"), "tok.json"); })
            .find("tok.json: /model/vocab: expected the vocabulary") != std::string::npos);
  CHECK(input_error([] { tokenizer_json_tokens(nlohmann::json::parse(R"({"model": {"vocab": {"a": -1}}})"), "tok.json"); })
            .find("/model/vocab/a: expected a token id") != std::string::npos);
  CHECK(input_error([] { tokenizer_json_tokens(nlohmann::json::parse(R"({"model": {"vocab": {"a": 0}}, "added_tokens": [{}]})"), "t.json"); })
            .find("/added_tokens/0/id: expected the added token's id") != std::string::npos);
}

TEST_CASE("sentencepiece_model_tokens: a SentencePiece model as the sentencepiece library reads it") {
  // tiny.model and what the sentencepiece library said of it (tests/data/sentencepiece/make_fixture.py).
  const std::string model = test::data_file("sentencepiece/tiny.model");
  const nlohmann::json expected = load_json_file(test::data_file("sentencepiece/tiny.expected.json"));
  const std::string bytes = file_bytes(model);
  REQUIRE(bytes.size() > 100);
  CHECK(sentencepiece_model_tokens(bytes, model) == expected["piece_size"].get<std::int64_t>());
  CHECK(sentencepiece_model_tokens(bytes, model, expected["special_tokens"].get<std::vector<std::string>>()) ==
        expected["vocab_with_special_tokens"].get<std::int64_t>());
  // Not a model: text, a truncated file, nothing, a message without pieces.
  CHECK(input_error([] { sentencepiece_model_tokens("{\"model\": 1}", "tok.model"); }).find("tok.model: byte 0: field 15 has wire type 3") !=
        std::string::npos);
  CHECK(input_error([&] { sentencepiece_model_tokens(std::string_view(bytes).substr(0, bytes.size() / 2), "tok.model"); })
            .find("expected a SentencePiece model") != std::string::npos);
  CHECK(input_error([] { sentencepiece_model_tokens("", "tok.model"); }).find("tok.model: pieces: no pieces") != std::string::npos);
  CHECK(input_error([] { sentencepiece_model_tokens(std::string("\x10\x05", 2), "tok.model"); }).find("no pieces") != std::string::npos);
  // A piece (field 1) holding a score (field 2, 4 bytes) and no text.
  CHECK(input_error([] { sentencepiece_model_tokens(std::string("\x0a\x05\x15\x00\x00\x00\x00", 7), "tok.model"); })
            .find("byte 0: a piece without its text") != std::string::npos);
  // A piece type given as bytes, not an enum.
  CHECK(input_error([] { sentencepiece_model_tokens(std::string("\x0a\x06\x0a\x01" "a" "\x1a\x01" "x", 8), "tok.model"); })
            .find("byte 5: a piece type that is not an enum") != std::string::npos);
  // Two pieces, the first the unknown token (type 2): listing it adds a token, as piece_to_id()
  // answers the unknown id for it; the normal piece does not.
  const std::string two("\x0a\x09\x0a\x05<unk>\x18\x02\x0a\x03\x0a\x01" "a", 16);
  CHECK(sentencepiece_model_tokens(two, "tok.model") == 2);
  CHECK(sentencepiece_model_tokens(two, "tok.model", {"a", "<unk>"}) == 3);
}

TEST_CASE("tokenizer_vocabulary: a tokenizer file here, or the built-in model a Hugging Face id names") {
  const ScopedEnv no_hub_cache("HF_HUB_CACHE", "/nonexistent/strata-test-hub-cache");
  const test::TempFile file("tokenizer.json", R"({"model": {"vocab": {"a": 0, "b": 1}}, "added_tokens": [{"id": 2}]})");
  const auto here = tokenizer_vocabulary({"HuggingFaceTokenizer", file.path(), {}}, test::catalog());
  REQUIRE(here.has_value());
  CHECK(here->tokens == 3);
  CHECK(here->source == file.path());
  const auto hub = tokenizer_vocabulary({"HuggingFaceTokenizer", "meta-llama/Meta-Llama-3-8B", {}}, test::catalog());
  REQUIRE(hub.has_value());
  CHECK(hub->tokens == test::catalog().model("llama3-8b").vocab_size);
  // Neither: an id of no built-in model, a bare name, a file that is no tokenizer.json.
  CHECK_FALSE(tokenizer_vocabulary({"HuggingFaceTokenizer", "google/gemma-3-27b", {}}, test::catalog()).has_value());
  CHECK_FALSE(tokenizer_vocabulary({"HuggingFaceTokenizer", "gpt2", {}}, test::catalog()).has_value());
  const test::TempFile not_json("tokenizer.model", "not json");
  CHECK_FALSE(tokenizer_vocabulary({"HuggingFaceTokenizer", not_json.path(), {}}, test::catalog()).has_value());
  // A SentencePiece tokenizer: its .model file here; an id or a missing file tells nothing; a file
  // that is no model is refused naming it.
  const std::string model = test::data_file("sentencepiece/tiny.model");
  const auto sp = tokenizer_vocabulary({"GPTSentencePieceTokenizer", model, {"<new_a>"}}, test::catalog());
  REQUIRE(sp.has_value());
  CHECK(sp->tokens == 601);
  CHECK(sp->source.find("with --tokenizer-special-tokens (1 listed)") != std::string::npos);
  CHECK_FALSE(tokenizer_vocabulary({"Llama2Tokenizer", "meta-llama/Llama-2-7b-hf", {}}, test::catalog()).has_value());
  CHECK(input_error([&] { tokenizer_vocabulary({"SentencePieceTokenizer", not_json.path(), {}}, test::catalog()); })
            .find(not_json.path() + ": byte 0") != std::string::npos);
}

TEST_CASE("tokenizer_vocabulary: a Hugging Face id's tokenizer.json in the hub cache, as AutoTokenizer finds it") {
  namespace fs = std::filesystem;
  const fs::path cache = fs::temp_directory_path() / ("strata_test_hub_" + std::to_string(getpid()));
  const fs::path repo = cache / "models--meta-llama--Meta-Llama-3-8B";
  fs::create_directories(repo / "refs");
  fs::create_directories(repo / "snapshots" / "abc123");
  std::ofstream(repo / "refs" / "main") << "abc123";
  std::ofstream(repo / "snapshots" / "abc123" / "tokenizer.json") << R"({"model": {"vocab": {"a": 0, "b": 1}}, "added_tokens": [{"id": 2, "content": "<s>"}]})";
  const ScopedEnv hub("HF_HUB_CACHE", cache.string());
  // The cached file wins over the built-in model of that name: it is what Megatron will load.
  const auto cached = tokenizer_vocabulary({"HuggingFaceTokenizer", "meta-llama/Meta-Llama-3-8B", {"<s>", "<new>"}}, test::catalog());
  REQUIRE(cached.has_value());
  CHECK(cached->tokens == 4);
  CHECK(cached->source.find("hub cache's copy of meta-llama/Meta-Llama-3-8B") != std::string::npos);
  // Without refs/main, the only snapshot; with two, the revision is in doubt: the built-in model.
  fs::remove(repo / "refs" / "main");
  CHECK(tokenizer_vocabulary({"HuggingFaceTokenizer", "meta-llama/Meta-Llama-3-8B", {}}, test::catalog())->tokens == 3);
  fs::create_directories(repo / "snapshots" / "def456");
  CHECK(tokenizer_vocabulary({"HuggingFaceTokenizer", "meta-llama/Meta-Llama-3-8B", {}}, test::catalog())->tokens ==
        test::catalog().model("llama3-8b").vocab_size);
  std::error_code ec;
  fs::remove_all(cache, ec);
}

TEST_CASE("a launch without --vocab-size takes its tokenizer's size, and says where from") {
  const test::TempFile file("tokenizer.json", R"({"model": {"vocab": {"a": 0, "b": 1}}, "added_tokens": [{"id": 2}]})");
  const std::string hf = kShape + "--tokenizer-type HuggingFaceTokenizer --tokenizer-model " + file.path();
  const MegatronLaunch read = read_megatron_launch(hf, "launch.sh", nullptr, lookup());
  CHECK(read.model.vocab_size == 3);
  CHECK(has_note(read, "vocabulary: 3 tokens"));
  CHECK(read_megatron_launch(hf + " --tokenizer-special-tokens '<x>' '<y>' a", "launch.sh", nullptr, lookup()).model.vocab_size == 5);
  CHECK(input_error([&] { read_megatron_launch(hf, "launch.sh", nullptr); }).find("--vocab-size: missing") != std::string::npos);
  // SFTTokenizer wraps the same Hugging Face tokenizer, without Megatron's special tokens (sft_tokenizer.py).
  const std::string sft = kShape + "--tokenizer-type SFTTokenizer --tokenizer-model " + file.path() + " --tokenizer-special-tokens '<x>'";
  CHECK(read_megatron_launch(sft, "launch.sh", nullptr, lookup()).model.vocab_size == 3);

  // SentencePiece (Megatron's GPTSentencePieceTokenizer): the model's pieces; special tokens only in
  // the wrapper's legacy mode, where the new ones add tokens.
  const std::string sp = kShape + "--tokenizer-type GPTSentencePieceTokenizer --tokenizer-model " + test::data_file("sentencepiece/tiny.model");
  CHECK(read_megatron_launch(sp, "launch.sh", nullptr, lookup()).model.vocab_size == 600);
  const std::string special = " --tokenizer-special-tokens '<new_a>' '<s>' '<new_b>'";
  CHECK(input_error([&] { read_megatron_launch(sp + special, "launch.sh", nullptr, lookup()); })
            .find("launch.sh: --tokenizer-special-tokens: Megatron's GPTSentencePieceTokenizer refuses special tokens without "
                  "--tokenizer-sentencepiece-legacy") != std::string::npos);
  CHECK(read_megatron_launch(sp + special + " --tokenizer-sentencepiece-legacy", "launch.sh", nullptr, lookup()).model.vocab_size == 602);
  // The file wins over --model's vocabulary (the flags win where both say something).
  const ModelSpec llama = test::catalog().model("llama2-7b");
  CHECK(read_megatron_launch(sp, "launch.sh", &llama, lookup()).model.vocab_size == 600);
  // Llama2Tokenizer without its file here: the --model's, else Llama 2's 32000 pieces, said so.
  const std::string llama2 = kShape + "--tokenizer-type Llama2Tokenizer --tokenizer-model /nonexistent/tokenizer.model";
  const MegatronLaunch assumed = read_megatron_launch(llama2, "launch.sh", nullptr, lookup());
  CHECK(assumed.model.vocab_size == 32000);
  CHECK(has_note(assumed, "Llama 2's 32000 SentencePiece pieces assumed"));
  const std::string missing = kShape + "--tokenizer-type SentencePieceTokenizer --tokenizer-model /nonexistent/tokenizer.model";
  CHECK(input_error([&] { read_megatron_launch(missing, "launch.sh", nullptr, lookup()); })
            .find("a SentencePiece .model file on this machine") != std::string::npos);
}
}
