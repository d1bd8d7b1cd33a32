#pragma once
// The vocabulary of the tokenizer a Megatron-LM launch names (--tokenizer-type HuggingFaceTokenizer,
// SFTTokenizer, SentencePieceTokenizer, GPTSentencePieceTokenizer or Llama2Tokenizer with --tokenizer-model
// PATH_OR_ID), for launches that give no --vocab-size: the size Megatron's tokenizer classes build.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/catalog.h"
#include "launch/megatron_import.h"

namespace strata {

// A Hugging Face tokenizer (HuggingFaceTokenizer, or SFTTokenizer, which wraps one): its
// tokenizer.json where the path is on this machine (a directory holding one, or the file); for a
// Hugging Face id ("meta-llama/Meta-Llama-3-8B"), its tokenizer.json in this machine's hub cache
// (where AutoTokenizer finds it: $HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub), else the
// built-in model it names. A SentencePiece tokenizer: the .model file. nullopt when none of these
// tells (no such file here, an unknown id).
std::optional<TokenizerVocab> tokenizer_vocabulary(const TokenizerRequest& request, const Catalog& catalog);

// len(tokenizer) of a tokenizer.json (the Hugging Face tokenizers format) once Megatron has added
// `special_tokens` (huggingface_tokenizer.py: each one not already in get_vocab() is a new token):
// the model's vocabulary (a token -> id map for BPE and WordPiece, a [token, score] list for
// Unigram) and the added tokens, each id counted once. Throws InputError naming `path` and the
// field when the document is not one.
std::int64_t tokenizer_json_tokens(const nlohmann::json& j, const std::string& path,
                                   const std::vector<std::string>& special_tokens = {});

// The vocabulary of a SentencePiece model file (the ModelProto of sentencepiece_model.proto) as
// Megatron's SentencePieceTokenizer builds it: get_piece_size() pieces, plus each of
// `special_tokens` that piece_to_id() maps to the unknown token's id (sentencepiece_tokenizer.py
// add_special_tokens, in legacy mode). Throws InputError naming `path` and the byte offset where
// the bytes are not such a model.
std::int64_t sentencepiece_model_tokens(std::string_view bytes, const std::string& path,
                                        const std::vector<std::string>& special_tokens = {});

}  // namespace strata
