#pragma once
// The vocabulary of the Hugging Face tokenizer a Megatron-LM launch names (--tokenizer-type
// HuggingFaceTokenizer --tokenizer-model PATH_OR_ID), for launches that give no --vocab-size.

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "costmodel/catalog.h"
#include "launch/megatron_import.h"

namespace strata {

// Its tokenizer.json where the path is on this machine (a directory holding one, or the file),
// else the built-in model a Hugging Face id ("meta-llama/Meta-Llama-3-8B") names; nullopt when
// neither tells (a SentencePiece model file, an unknown id).
std::optional<TokenizerVocab> tokenizer_vocabulary(const std::string& tokenizer_model, const Catalog& catalog);

// len(tokenizer) of a tokenizer.json (the Hugging Face tokenizers format): the model's vocabulary
// (a token -> id map for BPE and WordPiece, a [token, score] list for Unigram) and the added tokens,
// each id counted once. Throws InputError naming `path` and the field when the document is not one.
std::int64_t tokenizer_json_tokens(const nlohmann::json& j, const std::string& path);

}  // namespace strata
