#include "record_text.h"

#include <algorithm>
#include <cctype>
#include <regex>
#include <string_view>

#include <fmt/format.h>

#include "costmodel/errors.h"

namespace strata::record {

namespace {

// The Megatron flag of a setting's name: "tp_comm_overlap" is "--tp-comm-overlap".
std::string flag_of(const std::string& key) {
  std::string flag = "--" + key;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

}  // namespace

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool contains(const std::string& hay, const std::string& needle) { return lower(hay).find(lower(needle)) != std::string::npos; }

std::string text_of(const nlohmann::json& r, const char* key) {
  auto it = r.find(key);
  return (it != r.end() && it->is_string()) ? it->get<std::string>() : std::string();
}

std::optional<double> number_of(const nlohmann::json& r, const char* key) {
  auto it = r.find(key);
  if (it == r.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

double number_in_text(const std::string& digits, double lo, double hi, const std::string& where, const char* key,
                      const std::string& text) {
  double v = digits.size() > 9 ? hi + 1 : std::stod(digits);
  if (v < lo || v > hi)
    throw InputError(where, "/" + std::string(key), "the value " + digits + " in \"" + text + "\" is out of range (expected " +
                                                        fmt::format("{:g}..{:g}", lo, hi) + ")");
  return v;
}

int year_in(const std::string& s) {
  // Whole words only, so that commit hashes ("a2019bc") are not read as years.
  static const std::regex re("\\b(19|20)[0-9]{2}\\b");
  int best = 0;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), re); it != std::sregex_iterator(); ++it) {
    int y = std::stoi(it->str());
    if (best == 0 || y < best) best = y;
  }
  return best;
}

int container_year(const std::string& s) {
  static const std::regex re("(?:nemo|container|nvcr|pytorch|bridge|ngc)[^0-9]{0,40}(2[0-9])\\.(0[1-9]|1[0-2])\\b",
                             std::regex::icase);
  std::smatch m;
  return std::regex_search(s, m, re) ? 2000 + std::stoi(m[1].str()) : 0;
}

int publication_year(const std::string& s) {
  int best = year_in(s);
  static const std::regex venue_re("\\b(?:SC|MICRO|ISCA|ASPLOS|OSDI|SOSP|NSDI|EuroSys|PPoPP|MLSys|NeurIPS|ICML|ICLR|PACT)\\s*'?([0-9]{2})\\b");
  static const std::regex arxiv_re("arXiv:\\s*([0-9]{2})[0-9]{2}\\.");
  for (const std::regex* re : {&venue_re, &arxiv_re})
    for (auto it = std::sregex_iterator(s.begin(), s.end(), *re); it != std::sregex_iterator(); ++it) {
      int y = 2000 + std::stoi((*it)[1].str());
      if (best == 0 || y < best) best = y;
    }
  return best;
}

std::optional<std::string> knob_string(const std::string& text, const std::string& key) {
  const std::string flag = flag_of(key);
  for (const std::string& name : {"\"" + key + "\"", "'" + key + "'", flag, key}) {
    for (std::size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
      // Whole names only: "etp" is not the end of "expert_etp", nor "--fp8" the start of "--fp8-recipe".
      const std::size_t after = at + name.size();
      auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; };
      if ((at > 0 && word(text[at - 1]) && name[0] != '-') || (after < text.size() && word(text[after]))) continue;
      std::size_t i = after;
      while (i < text.size() && (text[i] == ' ' || text[i] == ':' || text[i] == '=')) ++i;
      const bool separated = i > after;
      if (i >= text.size() || (name == flag && text.compare(i, 2, "--") == 0)) {
        if (name == flag) return std::string("true");
        continue;
      }
      if (!separated && name != flag) continue;
      const char quote = text[i];
      if (quote == '"' || quote == '\'') {
        // A quoted value is at most 4 KiB: look no further for its closing quote.
        const std::size_t end = std::string_view(text).substr(i + 1, 4096).find(quote);
        if (end == std::string::npos) continue;
        return text.substr(i + 1, end);
      }
      std::size_t j = i;
      while (j < text.size() && j < i + 4096 && !std::isspace(static_cast<unsigned char>(text[j])) && text[j] != ',' &&
             text[j] != ';' && text[j] != '}' && text[j] != ')')
        ++j;
      if (j > i) return text.substr(i, j - i);
      if (name == flag) return std::string("true");
    }
  }
  return std::nullopt;
}

std::optional<std::string> knob_list(const std::string& text, const std::string& key,
                                     const std::function<bool(const std::string&)>& item) {
  const auto v = knob_string(text, key);
  if (!v) return std::nullopt;
  auto items = [](std::string list) {
    for (char& c : list)
      if (c == ',' || c == '"' || c == '\'' || c == '=') c = ' ';
    const std::size_t from = list.find_first_not_of(' '), to = list.find_last_not_of(' ');
    return from == std::string::npos ? std::string() : list.substr(from, to - from + 1);
  };
  for (const std::string& name : {"\"" + key + "\"", "'" + key + "'", key}) {
    const std::size_t at = text.find(name);
    if (at == std::string::npos) continue;
    std::size_t i = at + name.size();
    while (i < text.size() && (text[i] == ' ' || text[i] == ':' || text[i] == '=')) ++i;
    if (i < text.size() && text[i] == '[') {
      const std::size_t close = text.find(']', i);
      if (close == std::string::npos || close - i > 1024) return std::nullopt;
      return items(text.substr(i + 1, close - i - 1));
    }
  }
  // A flag: its words up to the first that is not a list item (a flag, prose, the next field).
  const std::string flag = flag_of(key) + " ";
  if (const std::size_t at = text.find(flag); at != std::string::npos) {
    std::string list;
    std::size_t i = at + flag.size();
    while (i < text.size()) {
      std::size_t end = i;
      while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
      if (end == i || !item(text.substr(i, end - i))) break;
      list += text.substr(i, end - i) + " ";
      i = end;
      while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    }
    return items(list);
  }
  return items(*v);
}

std::optional<int> knob_int(const std::string& text, const std::string& key) {
  const auto v = knob_string(text, key);
  if (!v || v->empty() || v->size() > 6 || !std::all_of(v->begin(), v->end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return std::nullopt;
  return std::stoi(*v);
}

std::optional<double> knob_number(const std::string& text, const std::string& key) {
  static const std::regex decimal("[0-9]{1,6}(\\.[0-9]{1,6})?");
  const auto v = knob_string(text, key);
  if (!v || !std::regex_match(*v, decimal)) return std::nullopt;
  return std::stod(*v);
}

std::optional<bool> knob_bool(const std::string& text, const std::string& key) {
  const auto v = knob_string(text, key);
  if (!v) return std::nullopt;
  const std::string b = lower(*v);
  if (b == "true" || b == "1" || b == "yes" || b == "on") return true;
  if (b == "false" || b == "0" || b == "no" || b == "off") return false;
  const std::string flag = flag_of(key);
  for (std::size_t at = text.find(flag); at != std::string::npos; at = text.find(flag, at + 1)) {
    const std::size_t after = at + flag.size();
    if (after >= text.size() || !(std::isalnum(static_cast<unsigned char>(text[after])) || text[after] == '-' || text[after] == '_'))
      return true;
  }
  return std::nullopt;
}

bool says_unnegated(const std::string& text, const std::string& phrase) {
  static const std::regex negative_value(R"(^[\s:="']*(false|off|no|disabled|none|not)\b)");
  const std::string t = lower(text);
  for (std::size_t at = t.find(phrase); at != std::string::npos; at = t.find(phrase, at + 1)) {
    const std::string before = t.substr(at >= 12 ? at - 12 : 0, at >= 12 ? 12 : at);
    const std::string after = t.substr(at + phrase.size(), 24);
    if (before.find("not ") == std::string::npos && before.find("no ") == std::string::npos &&
        before.find("without") == std::string::npos && before.find("non-") == std::string::npos &&
        !std::regex_search(after, negative_value))
      return true;
  }
  return false;
}

}  // namespace strata::record
