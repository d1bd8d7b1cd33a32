#include "cli/tokenizer_vocab.h"

#include <filesystem>
#include <set>

#include "costmodel/errors.h"
#include "costmodel/json_reader.h"

namespace strata {

namespace fs = std::filesystem;

namespace {

// Token ids past this are not a tokenizer's (the largest vocabularies are a few hundred thousand).
constexpr std::int64_t kMaxTokenId = std::int64_t{1} << 31;

std::int64_t token_id(const nlohmann::json& id, const std::string& path, const std::string& field) {
  if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() >= kMaxTokenId)
    throw InputError(path, field, "expected a token id, a whole number from 0 below 2^31");
  return id.get<std::int64_t>();
}

}  // namespace

std::int64_t tokenizer_json_tokens(const nlohmann::json& j, const std::string& path) {
  const nlohmann::json* vocab = j.is_object() && j.contains("model") && j["model"].is_object() && j["model"].contains("vocab")
                                    ? &j["model"]["vocab"]
                                    : nullptr;
  if (!vocab) throw InputError(path, "/model/vocab", "expected the vocabulary of a Hugging Face tokenizer.json");
  std::set<std::int64_t> ids;
  if (vocab->is_object()) {
    for (const auto& [token, id] : vocab->items()) ids.insert(token_id(id, path, "/model/vocab/" + token));
  } else if (vocab->is_array()) {  // Unigram: [token, score] pairs, the position is the id
    for (std::size_t i = 0; i < vocab->size(); ++i) ids.insert(static_cast<std::int64_t>(i));
  } else {
    throw InputError(path, "/model/vocab", "expected a token -> id object or a list of [token, score] pairs");
  }
  if (j.contains("added_tokens")) {
    const nlohmann::json& added = j["added_tokens"];
    if (!added.is_array()) throw InputError(path, "/added_tokens", "expected a list of added tokens");
    for (std::size_t i = 0; i < added.size(); ++i) {
      const std::string field = "/added_tokens/" + std::to_string(i) + "/id";
      if (!added[i].is_object() || !added[i].contains("id")) throw InputError(path, field, "expected the added token's id");
      ids.insert(token_id(added[i]["id"], path, field));
    }
  }
  if (ids.empty()) throw InputError(path, "/model/vocab", "expected at least one token");
  return static_cast<std::int64_t>(ids.size());
}

std::optional<TokenizerVocab> tokenizer_vocabulary(const std::string& tokenizer_model, const Catalog& catalog) {
  std::error_code ec;
  const fs::path p(tokenizer_model);
  fs::path file;
  if (fs::is_directory(p, ec) && fs::is_regular_file(p / "tokenizer.json", ec)) file = p / "tokenizer.json";
  else if (fs::is_regular_file(p, ec) && p.extension() == ".json") file = p;
  if (!file.empty()) {
    const std::string path = file.string();
    return TokenizerVocab{tokenizer_json_tokens(load_json_file(path), path), path};
  }
  if (fs::exists(p, ec)) return std::nullopt;  // a SentencePiece model, a directory without tokenizer.json
  // A Hugging Face id ("org/name"), not a file here: the built-in model of that name.
  const std::size_t slash = tokenizer_model.find('/');
  if (slash == 0 || slash == std::string::npos || tokenizer_model.find('/', slash + 1) != std::string::npos) return std::nullopt;
  try {
    const ModelSpec m = catalog.model(tokenizer_model);
    return TokenizerVocab{m.vocab_size, "the built-in model " + m.name + " (Hugging Face id " + tokenizer_model +
                                            "): its embedding's rows, which can exceed the tokenizer's own count by its padding"};
  } catch (const InputError&) {
    return std::nullopt;
  }
}

}  // namespace strata
