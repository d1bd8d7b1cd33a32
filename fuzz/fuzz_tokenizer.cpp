// Tokenizer files a launch names: a SentencePiece model (protobuf bytes) and a Hugging Face
// tokenizer.json, each read for the vocabulary Megatron builds.
#include "cli/tokenizer_vocab.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes = strata::fuzz::as_text(data, size);
  const std::vector<std::string> special = {"<unk>", "<s>", "<new>"};
  try {
    // A model has at least one piece; the special tokens add at most their count.
    const std::int64_t pieces = strata::sentencepiece_model_tokens(bytes, "fuzz.model");
    const std::int64_t with_special = strata::sentencepiece_model_tokens(bytes, "fuzz.model", special);
    if (pieces < 1 || with_special < pieces || with_special > pieces + 3) std::abort();
  } catch (const strata::InputError&) {
  }
  try {
    const std::int64_t tokens = strata::tokenizer_json_tokens(strata::parse_json_text(bytes, "fuzz.json"), "fuzz.json", special);
    if (tokens < 1) std::abort();
  } catch (const strata::InputError&) {
  }
  return 0;
}
