#include "costmodel/catalog.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "costmodel/errors.h"
#include "costmodel/file_io.h"
#include "costmodel/json_reader.h"

#ifndef STRATA_DATA_DIR
#define STRATA_DATA_DIR "."
#endif

namespace fs = std::filesystem;

namespace strata {

std::string normalize_name(const std::string& s) {
  std::string out;
  for (unsigned char c : s)
    if (std::isalnum(c) || c == '.') out.push_back(static_cast<char>(std::tolower(c)));
  return out;
}

Catalog::Catalog(std::string data_dir) : dir_(std::move(data_dir)) {}

std::string Catalog::default_data_dir() {
  if (const char* env = std::getenv("STRATA_DATA_DIR"); env && *env) return env;
  return STRATA_DATA_DIR;
}

namespace {

std::string kind_dir(const std::string& kind) {
  if (kind == "models") return "models";
  if (kind == "gpus") return "configs/gpus";
  if (kind == "clusters") return "configs/clusters";
  return kind;
}

std::string singular(const std::string& kind) { return kind.substr(0, kind.size() - 1); }

// A loose match ("H100-SXM5-80GB-HBM3" for h100-sxm) must not swallow words that name another
// variant of the part: "A100 80GB PCIe" extends "A100-80GB" (the SXM4 module) but is the PCIe card,
// with other clocks, power and links. `extra` is the normalized text beyond the matched name.
bool names_other_variant(const std::string& extra, const std::vector<std::string>& entry_names) {
  // A memory size right after the name ("h200-100gb", "gh200 120GB") is another part than the
  // matched one, whose name would have carried its own size.
  std::size_t digits = 0;
  while (digits < extra.size() && std::isdigit(static_cast<unsigned char>(extra[digits]))) ++digits;
  if (digits > 0 && extra.compare(digits, 2, "gb") == 0) return true;
  for (const char* word : {"pcie", "sxm", "nvl", "oam", "mxm", "nvlink"}) {
    if (extra.find(word) == std::string::npos) continue;
    bool entry_has_it = false;
    for (const auto& n : entry_names) entry_has_it = entry_has_it || normalize_name(n).find(word) != std::string::npos;
    if (!entry_has_it) return true;
  }
  return false;
}

// Published names often lead with the vendor ("NVIDIA H100 80GB HBM3", what torch.cuda's
// get_device_name prints; "AMD Instinct MI300X"), and GPU names with the 8-GPU SXM system that
// carries the part ("DGX H100", "HGX B200") or its architecture ("Blackwell B200", "Grace
// Blackwell GB200", "Blackwell Ultra B300", "Grace Hopper GH200"). Whether a word is one of those,
// for entries of this kind.
constexpr std::array<std::string_view, 9> kLeadingWords = {"nvidia", "amd",    "dgx",   "hgx",  "grace",
                                                           "blackwell", "ultra", "hopper", "ampere"};
bool leading_word(std::string_view word, const std::string& kind) {
  const bool vendor = word == "nvidia" || word == "amd";
  return vendor || (kind == "gpus" && std::find(kLeadingWords.begin(), kLeadingWords.end(), word) != kLeadingWords.end());
}

// The normalized query without its leading words, tried after the query as given.
std::string without_vendor_words(std::string q, const std::string& kind) {
  for (bool again = true; again;) {
    again = false;
    for (const std::string_view word : kLeadingWords) {
      if (leading_word(word, kind) && q.size() > word.size() && q.starts_with(word)) {
        q.erase(0, word.size());
        again = true;
      }
    }
  }
  return q;
}

// The words of a name, normalized and sorted, without the leading words without_vendor_words
// drops: "H100 80GB PCIe" and the alias "h100 pcie 80gb" are one part written in two word orders.
std::vector<std::string> sorted_words(const std::string& name, const std::string& kind) {
  std::vector<std::string> words;
  std::string word;
  for (unsigned char c : name + " ") {
    if (std::isalnum(c) || c == '.') {  // the characters normalize_name keeps
      word.push_back(static_cast<char>(std::tolower(c)));
    } else if (!word.empty()) {
      if (!leading_word(word, kind) || !words.empty()) words.push_back(word);
      word.clear();
    }
  }
  std::sort(words.begin(), words.end());
  return words;
}

}  // namespace

std::vector<Catalog::Entry> Catalog::list(const std::string& kind) const {
  std::vector<Entry> out;
  fs::path d = fs::path(dir_) / kind_dir(kind);
  std::error_code ec;
  if (!fs::is_directory(d, ec)) return out;
  for (const auto& f : fs::directory_iterator(d, ec)) {
    if (f.path().extension() != ".json") continue;
    Entry e;
    e.id = f.path().stem().string();
    e.path = f.path().string();
    try {
      json j = load_json_file(e.path);
      if (j.is_object()) {
        if (j.contains("name") && j["name"].is_string()) e.name = j["name"].get<std::string>();
        if (j.contains("aliases") && j["aliases"].is_array())
          for (const auto& a : j["aliases"])
            if (a.is_string()) e.aliases.push_back(a.get<std::string>());
      }
    } catch (const InputError&) {
      // A broken data file is reported when it is actually used, not while listing.
    }
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.id < b.id; });
  return out;
}

bool is_hugging_face_id(const std::string& s) {
  const std::size_t slash = s.find('/');
  return slash != std::string::npos && slash > 0 && slash + 1 < s.size() && s.find('/', slash + 1) == std::string::npos &&
         !s.ends_with(".json") && s[0] != '.';
}

std::string Catalog::resolve(const std::string& kind, const std::string& query, const std::string& flag) const {
  if (query.empty()) throw InputError("command line", flag, "expected a " + singular(kind) + " name or a path to a JSON file");
  std::error_code ec;
  auto names_of = [](const Entry& e) {
    std::vector<std::string> n{e.id, e.name};
    n.insert(n.end(), e.aliases.begin(), e.aliases.end());
    return n;
  };
  auto exactly_named = [&](const std::vector<Entry>& entries, const std::string& wanted) -> const Entry* {
    for (const auto& e : entries)
      for (const auto& n : names_of(e))
        if (!n.empty() && normalize_name(n) == wanted) return &e;
    return nullptr;
  };
  if (query.find('/') != std::string::npos || query.ends_with(".json")) {
    if (fs::exists(query, ec)) {
      // A directory, FIFO or device: say what it is (the reader refuses it without blocking on it).
      if (!fs::is_regular_file(query, ec)) (void)read_input_file(query, kMaxJsonInputBytes, "a JSON document", flag);
      return query;
    }
    // A Hugging Face id ("Qwen/Qwen3-30B-A3B", "meta-llama/Meta-Llama-3-8B") that is no file here:
    // the built-in model of that exact name, as "org-name" or as the name alone.
    const bool hub_id = kind == "models" && is_hugging_face_id(query);
    if (hub_id) {
      const std::vector<Entry> entries = list(kind);
      for (const std::string& wanted : {normalize_name(query), normalize_name(query.substr(query.find('/') + 1))})
        if (const Entry* e = exactly_named(entries, wanted)) return e->path;
    }
    throw InputError(query, "", "no such file (given to " + flag + ")" +
                                    (hub_id ? std::string("; as a Hugging Face id it names no built-in model (`strata list models`): "
                                                          "download its config.json and give that file")
                                            : std::string()));
  }
  auto entries = list(kind);
  const std::string as_given = normalize_name(query);
  const std::string q = without_vendor_words(as_given, kind);
  for (const std::string& wanted : {as_given, q})
    if (const Entry* e = exactly_named(entries, wanted)) return e->path;
  // The same words in another order ("H100 80GB PCIe" for the alias "h100 pcie 80gb"): only when
  // the query has two words or more, and it names one entry.
  if (const std::vector<std::string> words = sorted_words(query, kind); words.size() >= 2) {
    const Entry* found = nullptr;
    bool several = false;
    for (const auto& e : entries)
      for (const auto& n : names_of(e))
        if (!n.empty() && sorted_words(n, kind) == words && found != &e) {
          several = several || found != nullptr;
          found = &e;
        }
    if (found && !several) return found->path;
  }
  // Loose match: the query extends the full name or id of an entry ("H100-SXM5-80GB-HBM3").
  // Short aliases ("a100", "gpt3") never match loosely: "a100-40" or "gpt3-20b" are other parts
  // or models, not spellings of the aliased entry.
  std::vector<const Entry*> hits;
  std::size_t best_len = 0;
  for (const auto& e : entries)
    for (const auto& n : {e.id, e.name}) {
      std::string nn = normalize_name(n);
      if (nn.size() < 3) continue;
      if (q.starts_with(nn) && nn.size() >= best_len && !names_other_variant(q.substr(nn.size()), names_of(e))) {
        if (nn.size() > best_len) hits.clear();
        best_len = nn.size();
        if (std::find(hits.begin(), hits.end(), &e) == hits.end()) hits.push_back(&e);
      }
    }
  if (hits.size() == 1) return hits.front()->path;
  std::vector<std::string> all;
  for (const auto& e : entries) all.push_back(e.id);
  std::string hint = closest_match(query, all);
  std::string msg = "unknown " + singular(kind) + " \"" + query + "\"";
  if (hits.size() > 1) msg += " (ambiguous: matches " + hits[0]->id + " and " + hits[1]->id + ")";
  else if (!hint.empty()) msg += " (did you mean \"" + hint + "\"?)";
  msg += "; `strata list " + kind + "` shows the known ones, or give a path to a JSON file";
  throw InputError("command line", flag, msg);
}

ModelSpec Catalog::model(const std::string& q) const {
  std::string path = resolve("models", q, "--model");
  return model_from_json(load_json_file(path), path);
}

GpuSpec Catalog::gpu(const std::string& q) const {
  std::string path = resolve("gpus", q, "--gpu");
  return gpu_from_json(load_json_file(path), path);
}

ClusterSpec Catalog::cluster(const std::string& q) const {
  std::string path = resolve("clusters", q, "--cluster");
  json j = load_json_file(path);
  JsonReader r(j, path);
  const std::string gpu_name = r.get_string("gpu");
  GpuSpec g;
  try {
    g = gpu(gpu_name);
  } catch (const InputError& e) {
    // Name the cluster file's key, not the --gpu flag, when the lookup fails.
    if (e.where() != "command line") throw;
    std::string what = e.what();
    const std::string prefix = e.where() + ": " + e.path() + ": ";
    if (what.starts_with(prefix)) what = what.substr(prefix.size());
    throw InputError(path, r.path_of("gpu"), what);
  }
  return cluster_from_json(j, path, g);
}

std::optional<Calibration> Catalog::calibration_for(const GpuSpec& gpu) const {
  for (const auto& e : list("gpus")) {
    if (normalize_name(e.name) != normalize_name(gpu.name)) continue;
    fs::path p = fs::path(dir_) / "configs" / "calibration" / (e.id + ".json");
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return calibration_from_json(load_json_file(p.string()), p.string());
  }
  return std::nullopt;
}

Calibration Catalog::calibration_or_default(const GpuSpec& gpu) const {
  if (auto c = calibration_for(gpu)) return *c;
  return default_calibration(gpu);
}

}  // namespace strata
