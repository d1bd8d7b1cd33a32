#pragma once
// Typed, path-aware access to user JSON. Every failure throws InputError naming the file, the JSON
// path and what was expected, so a user can fix the input without reading our code.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/errors.h"

namespace strata {

using json = nlohmann::json;

// Reads and parses a JSON file; empty, truncated, non-UTF-8 or unreadable files throw InputError.
json load_json_file(const std::string& path);
// Parses JSON text that came from `where` (a file name used in messages).
json parse_json_text(const std::string& text, const std::string& where);

// Closest candidate by edit distance, or "" when nothing is reasonably close ("did you mean").
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

class JsonReader {
 public:
  JsonReader(const json& object, std::string file, std::string path = "");

  const std::string& file() const { return file_; }
  std::string path_of(std::string_view key) const { return path_ + "/" + std::string(key); }
  bool has(std::string_view key) const;  // present and not null
  const json& raw(std::string_view key) const;

  std::string get_string(std::string_view key) const;
  std::optional<std::string> opt_string(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  bool opt_bool(std::string_view key, bool fallback) const;
  // Finite numbers only; NaN/inf and non-numbers are rejected.
  double get_number(std::string_view key) const;
  std::optional<double> opt_number(std::string_view key) const;
  // Integers within [lo, hi], compared exactly; 1e3 reads as 1000, 1.5 / NaN / inf are rejected.
  std::int64_t get_int(std::string_view key, std::int64_t lo, std::int64_t hi) const;
  std::optional<std::int64_t> opt_int(std::string_view key, std::int64_t lo, std::int64_t hi) const;
  // Positive finite number within [kMinPositive, hi]: rates, sizes and efficiencies.
  static constexpr double kMinPositive = 1e-6;
  double get_positive(std::string_view key, double hi) const;
  std::optional<double> opt_positive(std::string_view key, double hi) const;
  std::vector<std::string> opt_string_list(std::string_view key) const;
  JsonReader child(std::string_view key) const;  // key must be an object

  // Rejects keys not in `known`, suggesting the closest known key.
  void reject_unknown_keys(const std::vector<std::string>& known) const;

  [[noreturn]] void fail(std::string_view key, const std::string& expected) const;

 private:
  const json& obj_;
  std::string file_;
  std::string path_;
};

}  // namespace strata
