#include "costmodel/json_reader.h"

#include "costmodel/file_io.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <string_view>

namespace strata {

namespace {

std::string type_name(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// Python's json module writes the non-finite floats as the bare words Infinity, -Infinity and NaN,
// which JSON does not have (Hugging Face's Mamba configs carry "time_step_limit": [0.0, Infinity]).
// The text with each such word outside a string replaced by null, or nullopt when it has none: no
// field strata reads takes a non-finite value, and one that does reads null as a missing number.
std::optional<std::string> python_non_finite_as_null(const std::string& text) {
  std::string out;
  bool in_string = false, replaced = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        out += c;
        if (i + 1 < text.size()) out += text[++i];
        continue;
      }
      if (c == '"') in_string = false;
      out += c;
      continue;
    }
    if (c == '"') in_string = true;
    std::size_t word = 0;
    for (std::string_view w : {"-Infinity", "Infinity", "NaN"})
      if (text.compare(i, w.size(), w) == 0) word = w.size();
    if (word == 0) {
      out += c;
      continue;
    }
    out += "null";
    i += word - 1;
    replaced = true;
  }
  if (!replaced) return std::nullopt;
  return out;
}

}  // namespace

json parse_json_text(const std::string& text, const std::string& where) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw InputError(where, "", "the file is empty; expected a JSON document");
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    if (auto finite = python_non_finite_as_null(text)) {
      try {
        return json::parse(*finite);
      } catch (const json::exception&) {
        // Not the only problem: report the original text's error below.
      }
    }
    // nlohmann reports byte offsets; keep its explanation (truncation, invalid UTF-8, ...).
    std::string what = e.what();
    auto pos = what.find("parse error");
    throw InputError(where, "", "not valid JSON (" + what.substr(pos == std::string::npos ? 0 : pos) + ")");
  } catch (const json::exception& e) {
    // out_of_range 406: a number too large for a double (1e999); no other kind is expected here.
    std::string what = e.what();
    auto pos = what.find("] ");
    throw InputError(where, "", "not usable JSON (" + (pos == std::string::npos ? what : what.substr(pos + 2)) +
                                    "; expected finite numbers)");
  }
}

json load_json_file(const std::string& path) {
  // One bounded reader for every input file: regular files only, at most 64 MiB (file_io.h).
  return parse_json_text(read_input_file(path, kMaxJsonInputBytes, "a JSON document"), path);
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::string::npos;
  const std::size_t allowed = std::max<std::size_t>(2, word.size() / 3);
  for (const auto& c : candidates) {
    // The distance is at least the length difference: skip the quadratic work (a megabyte-long
    // key would otherwise cost seconds per candidate).
    const std::size_t diff = word.size() > c.size() ? word.size() - c.size() : c.size() - word.size();
    if (diff > allowed) continue;
    std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // Accept up to a third of the word's length in edits (typos, not different words).
  if (best_d == std::string::npos || best_d > allowed) return "";
  return best;
}

JsonReader::JsonReader(const json& object, std::string file, std::string path)
    : obj_(object), file_(std::move(file)), path_(std::move(path)) {
  if (!obj_.is_object())
    throw InputError(file_, path_.empty() ? "/" : path_, "expected a JSON object, found " + type_name(obj_));
}

void JsonReader::fail(std::string_view key, const std::string& expected) const {
  throw InputError(file_, path_of(key), expected);
}

bool JsonReader::has(std::string_view key) const {
  auto it = obj_.find(std::string(key));
  return it != obj_.end() && !it->is_null();
}

const json& JsonReader::raw(std::string_view key) const {
  auto it = obj_.find(std::string(key));
  if (it == obj_.end() || it->is_null()) fail(key, "missing required key");
  return *it;
}

std::string JsonReader::get_string(std::string_view key) const {
  const json& v = raw(key);
  if (!v.is_string()) fail(key, "expected a string, found " + type_name(v));
  return v.get<std::string>();
}

std::optional<std::string> JsonReader::opt_string(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_string(key);
}

bool JsonReader::get_bool(std::string_view key) const {
  const json& v = raw(key);
  if (!v.is_boolean()) fail(key, "expected true or false, found " + type_name(v));
  return v.get<bool>();
}

bool JsonReader::opt_bool(std::string_view key, bool fallback) const {
  return has(key) ? get_bool(key) : fallback;
}

double JsonReader::get_number(std::string_view key) const {
  const json& v = raw(key);
  if (!v.is_number()) fail(key, "expected a number, found " + type_name(v));
  double d = v.get<double>();
  if (!std::isfinite(d)) fail(key, "expected a finite number");
  return d;
}

std::optional<double> JsonReader::opt_number(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get_number(key);
}

std::int64_t JsonReader::get_int(std::string_view key, std::int64_t lo, std::int64_t hi) const {
  const json& v = raw(key);
  if (!v.is_number()) fail(key, "expected an integer, found " + type_name(v));
  auto out_of_range = [&] {
    fail(key, "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], found " + v.dump());
  };
  // Compare integers exactly (no detour through double, which rounds above 2^53).
  if (v.is_number_unsigned()) {
    const std::uint64_t u = v.get<std::uint64_t>();
    if (hi < 0 || u > static_cast<std::uint64_t>(hi) || static_cast<std::int64_t>(u) < lo) out_of_range();
    return static_cast<std::int64_t>(u);
  }
  if (v.is_number_integer()) {
    const std::int64_t i = v.get<std::int64_t>();
    if (i < lo || i > hi) out_of_range();
    return i;
  }
  // A float: 1e3 is accepted as 1000; 1.5, NaN and inf (1e999 parses to inf) are not.
  const double d = v.get<double>();
  if (!std::isfinite(d) || d != std::floor(d)) fail(key, "expected an integer, found " + v.dump());
  // 2^63 is exactly representable; anything at or beyond it cannot be an int64.
  constexpr double kTwo63 = 9223372036854775808.0;
  if (d >= kTwo63 || d < -kTwo63) out_of_range();
  const auto i = static_cast<std::int64_t>(d);
  if (i < lo || i > hi) out_of_range();
  return i;
}

std::optional<std::int64_t> JsonReader::opt_int(std::string_view key, std::int64_t lo, std::int64_t hi) const {
  if (!has(key)) return std::nullopt;
  return get_int(key, lo, hi);
}

double JsonReader::get_positive(std::string_view key, double hi) const {
  double d = get_number(key);
  if (d <= 0 || d > hi) {
    std::ostringstream os;
    os << "expected a positive number no larger than " << hi << ", found " << d;
    fail(key, os.str());
  }
  // Denormal-small rates and sizes turn into infinite times downstream; nothing real is this small.
  if (d < kMinPositive) {
    std::ostringstream os;
    os << "expected a positive number of at least " << kMinPositive << ", found " << d;
    fail(key, os.str());
  }
  return d;
}

std::optional<double> JsonReader::opt_positive(std::string_view key, double hi) const {
  if (!has(key)) return std::nullopt;
  return get_positive(key, hi);
}

std::vector<std::string> JsonReader::opt_string_list(std::string_view key) const {
  std::vector<std::string> out;
  if (!has(key)) return out;
  const json& v = raw(key);
  if (!v.is_array()) fail(key, "expected an array of strings, found " + type_name(v));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string())
      throw InputError(file_, path_of(key) + "/" + std::to_string(i), "expected a string, found " + type_name(v[i]));
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

JsonReader JsonReader::child(std::string_view key) const {
  const json& v = raw(key);
  if (!v.is_object()) fail(key, "expected an object, found " + type_name(v));
  return JsonReader(v, file_, path_of(key));
}

void JsonReader::reject_unknown_keys(const std::vector<std::string>& known) const {
  for (const auto& [k, v] : obj_.items()) {
    if (std::find(known.begin(), known.end(), k) != known.end()) continue;
    std::string hint = closest_match(k, known);
    fail(k, "unknown key" + (hint.empty() ? std::string() : " (did you mean \"" + hint + "\"?)"));
  }
}

}  // namespace strata
