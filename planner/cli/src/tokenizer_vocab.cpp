#include "cli/tokenizer_vocab.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include "costmodel/errors.h"
#include "costmodel/file_io.h"
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

// The special tokens a tokenizer adds: those of `special` (each once) for which `is_new` holds.
template <class IsNew>
std::int64_t added_special_tokens(const std::vector<std::string>& special, IsNew is_new) {
  std::set<std::string> added;
  for (const std::string& t : special)
    if (is_new(t)) added.insert(t);
  return static_cast<std::int64_t>(added.size());
}

// Protocol Buffers' wire format (protobuf.dev/programming-guides/encoding): each field is a varint
// key (field number << 3 | wire type) and a value: a varint (type 0), 8 bytes (1), a varint length
// and that many bytes (2), or 4 bytes (5); 3 and 4 (groups) are not in sentencepiece_model.proto.
class WireReader {
 public:
  WireReader(std::string_view bytes, std::size_t base, const std::string& path) : b_(bytes), base_(base), path_(path) {}
  bool done() const { return at_ >= b_.size(); }
  std::size_t offset() const { return base_ + at_; }

  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= b_.size()) fail("a varint runs past the end");
      const auto byte = static_cast<unsigned char>(b_[at_++]);
      v |= std::uint64_t{byte & 0x7fu} << shift;
      if (!(byte & 0x80u)) return v;
    }
    fail("a varint longer than 10 bytes");
  }

  // One field: its number and wire type, a varint's value, a length-delimited value's bytes (other
  // values are skipped); `offset` is where its key starts in the file.
  struct Field {
    std::uint64_t number = 0;
    unsigned type = 0;
    std::uint64_t varint = 0;
    std::string_view bytes;
    std::size_t offset = 0, bytes_offset = 0;
  };
  Field field() {
    Field f;
    f.offset = offset();
    const std::uint64_t key = varint();
    f.number = key >> 3;
    f.type = static_cast<unsigned>(key & 7u);
    if (f.number == 0) fail_at(f.offset, "field number 0");
    switch (f.type) {
      case 0: f.varint = varint(); break;
      case 1: skip(8); break;
      case 5: skip(4); break;
      case 2: {
        const std::uint64_t n = varint();
        if (n > b_.size() - at_) fail_at(f.offset, fmt::format("field {} claims {} bytes, past the end", f.number, n));
        f.bytes_offset = offset();
        f.bytes = b_.substr(at_, static_cast<std::size_t>(n));
        at_ += static_cast<std::size_t>(n);
        break;
      }
      default: fail_at(f.offset, fmt::format("field {} has wire type {}, which no SentencePiece model uses", f.number, f.type));
    }
    return f;
  }
  [[noreturn]] void fail_at(std::size_t where, const std::string& what) const {
    throw InputError(path_, fmt::format("byte {}", where),
                     what + "; expected a SentencePiece model (the ModelProto of sentencepiece_model.proto)");
  }

 private:
  void skip(std::size_t n) {
    if (n > b_.size() - at_) fail("a fixed-size value runs past the end");
    at_ += n;
  }
  [[noreturn]] void fail(const std::string& what) const { fail_at(offset(), what); }

  std::string_view b_;
  std::size_t base_, at_ = 0;
  const std::string& path_;
};

// The Hugging Face hub cache, where transformers' AutoTokenizer.from_pretrained(id) finds a
// tokenizer it has downloaded (huggingface_hub constants.py): $HF_HUB_CACHE, else
// $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub.
fs::path hub_cache_dir() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? std::string(v) : std::string();
  };
  if (const std::string v = env("HF_HUB_CACHE"); !v.empty()) return v;
  if (const std::string v = env("HUGGINGFACE_HUB_CACHE"); !v.empty()) return v;
  if (const std::string v = env("HF_HOME"); !v.empty()) return fs::path(v) / "hub";
  if (const std::string v = env("XDG_CACHE_HOME"); !v.empty()) return fs::path(v) / "huggingface" / "hub";
  if (const std::string v = env("HOME"); !v.empty()) return fs::path(v) / ".cache" / "huggingface" / "hub";
  return {};
}

// The tokenizer.json of hub id `id` ("org/name") in that cache: models--org--name/snapshots/<the
// commit refs/main names>/tokenizer.json, or the only snapshot's when refs/main is missing. Empty
// when it is not there or several snapshots leave the revision in doubt.
fs::path cached_hub_tokenizer(const std::string& id) {
  const fs::path cache = hub_cache_dir();
  if (cache.empty()) return {};
  std::string folder = "models--" + id;
  for (std::size_t at = folder.find('/'); at != std::string::npos; at = folder.find('/', at + 2)) folder.replace(at, 1, "--");
  const fs::path repo = cache / folder;
  std::error_code ec;
  if (!fs::is_directory(repo / "snapshots", ec)) return {};
  std::string revision;
  if (std::ifstream ref(repo / "refs" / "main"); ref) std::getline(ref, revision);
  if (revision.empty() || revision.find_first_of("/\\") != std::string::npos || revision == "." || revision == "..") {
    revision.clear();
    int snapshots = 0;
    for (const auto& e : fs::directory_iterator(repo / "snapshots", ec))
      if (e.is_directory(ec) && ++snapshots == 1) revision = e.path().filename().string();
    if (snapshots != 1) return {};
  }
  const fs::path file = repo / "snapshots" / revision / "tokenizer.json";
  return fs::is_regular_file(file, ec) ? file : fs::path();
}

// sentencepiece_model.proto: ModelProto.pieces = 1 (repeated SentencePiece); SentencePiece.piece
// = 1 (string), .type = 3 (enum; UNKNOWN = 2, the default NORMAL = 1).
constexpr std::uint64_t kModelPieces = 1, kPieceText = 1, kPieceType = 3, kTypeUnknown = 2;

}  // namespace

std::int64_t tokenizer_json_tokens(const nlohmann::json& j, const std::string& path, const std::vector<std::string>& special_tokens) {
  const nlohmann::json* vocab = j.is_object() && j.contains("model") && j["model"].is_object() && j["model"].contains("vocab")
                                    ? &j["model"]["vocab"]
                                    : nullptr;
  if (!vocab) throw InputError(path, "/model/vocab", "expected the vocabulary of a Hugging Face tokenizer.json");
  std::set<std::int64_t> ids;
  std::set<std::string> tokens;  // get_vocab()'s keys
  if (vocab->is_object()) {
    for (const auto& [token, id] : vocab->items()) {
      ids.insert(token_id(id, path, "/model/vocab/" + token));
      tokens.insert(token);
    }
  } else if (vocab->is_array()) {  // Unigram: [token, score] pairs, the position is the id
    for (std::size_t i = 0; i < vocab->size(); ++i) {
      ids.insert(static_cast<std::int64_t>(i));
      const nlohmann::json& pair = (*vocab)[i];
      if (pair.is_array() && !pair.empty() && pair[0].is_string()) tokens.insert(pair[0].get<std::string>());
    }
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
      if (added[i].contains("content") && added[i]["content"].is_string()) tokens.insert(added[i]["content"].get<std::string>());
    }
  }
  if (ids.empty()) throw InputError(path, "/model/vocab", "expected at least one token");
  return static_cast<std::int64_t>(ids.size()) +
         added_special_tokens(special_tokens, [&](const std::string& t) { return !tokens.count(t); });
}

std::int64_t sentencepiece_model_tokens(std::string_view bytes, const std::string& path, const std::vector<std::string>& special_tokens) {
  std::set<std::string> pieces;
  std::optional<std::string> unknown;
  std::int64_t count = 0;
  WireReader model(bytes, 0, path);
  while (!model.done()) {
    const WireReader::Field f = model.field();
    if (f.number != kModelPieces) continue;  // trainer and normalizer specs, self-test data
    if (f.type != 2) model.fail_at(f.offset, "a piece that is not a message");
    WireReader piece(f.bytes, f.bytes_offset, path);
    std::optional<std::string> text;
    std::uint64_t type = 1;
    while (!piece.done()) {
      const WireReader::Field pf = piece.field();
      if (pf.number == kPieceText && pf.type == 2) text = std::string(pf.bytes);
      if (pf.number == kPieceType && pf.type != 0) piece.fail_at(pf.offset, "a piece type that is not an enum");
      if (pf.number == kPieceType) type = pf.varint;
    }
    if (!text) model.fail_at(f.offset, "a piece without its text");
    if (type == kTypeUnknown) unknown = *text;
    pieces.insert(*text);
    ++count;
  }
  if (count == 0) throw InputError(path, "pieces", "no pieces; expected a SentencePiece model (the ModelProto of sentencepiece_model.proto)");
  // piece_to_id() answers the unknown token's id for a string that is no piece, and for the
  // unknown piece itself: Megatron adds both as new tokens.
  return count + added_special_tokens(special_tokens, [&](const std::string& t) { return !pieces.count(t) || t == unknown; });
}

std::optional<TokenizerVocab> tokenizer_vocabulary(const TokenizerRequest& request, const Catalog& catalog) {
  std::error_code ec;
  const fs::path p(request.model);
  const bool sentencepiece = request.type != "HuggingFaceTokenizer" && request.type != "SFTTokenizer";
  const std::string with_special =
      request.special_tokens.empty() ? "" : fmt::format(", with --tokenizer-special-tokens ({} listed)", request.special_tokens.size());
  if (sentencepiece) {
    if (!fs::is_regular_file(p, ec)) return std::nullopt;
    const std::string path = p.string();
    const std::string bytes = read_input_file(path, kMaxJsonInputBytes, "a SentencePiece model", "--tokenizer-model");
    return TokenizerVocab{sentencepiece_model_tokens(bytes, path, request.special_tokens), path + with_special};
  }
  auto from_tokenizer_json = [&](const fs::path& file, const std::string& what) {
    const std::string path = file.string();
    return TokenizerVocab{tokenizer_json_tokens(load_json_file(path), path, request.special_tokens), path + what + with_special};
  };
  if (fs::is_directory(p, ec) && fs::is_regular_file(p / "tokenizer.json", ec)) return from_tokenizer_json(p / "tokenizer.json", "");
  if (fs::is_regular_file(p, ec) && p.extension() == ".json") return from_tokenizer_json(p, "");
  if (fs::exists(p, ec)) return std::nullopt;  // a directory without tokenizer.json, another file
  // A Hugging Face id ("org/name"), not a file here: its tokenizer.json in this machine's hub cache,
  // where AutoTokenizer would find it, else the built-in model of that name.
  if (!is_hugging_face_id(request.model)) return std::nullopt;
  if (const fs::path cached = cached_hub_tokenizer(request.model); !cached.empty())
    return from_tokenizer_json(cached, " (the Hugging Face hub cache's copy of " + request.model + ")");
  try {
    const ModelSpec m = catalog.model(request.model);
    return TokenizerVocab{m.vocab_size, "the built-in model " + m.name + " (Hugging Face id " + request.model +
                                            "): its embedding's rows, which can exceed the tokenizer's own count by its padding" +
                                            (request.special_tokens.empty() ? "" : "; the special tokens of --tokenizer-special-tokens are not counted")};
  } catch (const InputError&) {
    return std::nullopt;
  }
}

}  // namespace strata
