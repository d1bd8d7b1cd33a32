#include "launch/shell_words.h"

#include <cctype>
#include <cstdint>
#include <algorithm>
#include <optional>
#include <string_view>

#include "costmodel/errors.h"

namespace strata {

namespace {

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Integer arithmetic of $(( ... )): + - * / % and parentheses over integers and variable names.
class Arithmetic {
 public:
  Arithmetic(const std::string& s, const std::map<std::string, std::string>& vars, std::vector<std::string>& used)
      : s_(s), vars_(vars), used_(used) {}
  std::optional<std::int64_t> evaluate() {
    auto v = expr(0);
    skip_space();
    if (!v || pos_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  static constexpr int kMaxDepth = 64;  // nesting of parentheses and unary signs

  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  std::optional<std::int64_t> expr(int depth) {
    auto left = term(depth);
    while (left) {
      skip_space();
      if (pos_ >= s_.size() || (s_[pos_] != '+' && s_[pos_] != '-')) break;
      const char op = s_[pos_++];
      auto right = term(depth);
      if (!right) return std::nullopt;
      std::int64_t r = 0;
      if (op == '+' ? __builtin_add_overflow(*left, *right, &r) : __builtin_sub_overflow(*left, *right, &r)) return std::nullopt;
      left = r;
    }
    return left;
  }
  std::optional<std::int64_t> term(int depth) {
    auto left = factor(depth);
    while (left) {
      skip_space();
      if (pos_ >= s_.size() || (s_[pos_] != '*' && s_[pos_] != '/' && s_[pos_] != '%')) break;
      const char op = s_[pos_++];
      auto right = factor(depth);
      if (!right) return std::nullopt;
      std::int64_t r = 0;
      if (op == '*') {
        if (__builtin_mul_overflow(*left, *right, &r)) return std::nullopt;
      } else {
        if (*right == 0 || (*left == INT64_MIN && *right == -1)) return std::nullopt;
        r = op == '/' ? *left / *right : *left % *right;
      }
      left = r;
    }
    return left;
  }
  std::optional<std::int64_t> factor(int depth) {
    if (depth > kMaxDepth) return std::nullopt;
    skip_space();
    if (pos_ >= s_.size()) return std::nullopt;
    const char c = s_[pos_];
    if (c == '-' || c == '+') {
      ++pos_;
      auto v = factor(depth + 1);
      if (!v || (c == '-' && *v == INT64_MIN)) return std::nullopt;
      return c == '-' ? -*v : *v;
    }
    if (c == '(') {
      ++pos_;
      auto v = expr(depth + 1);
      skip_space();
      if (!v || pos_ >= s_.size() || s_[pos_] != ')') return std::nullopt;
      ++pos_;
      return v;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      const std::size_t start = pos_;
      while (pos_ < s_.size() && (is_name_char(s_[pos_]) || s_[pos_] == '#')) ++pos_;
      return integer(s_.substr(start, pos_ - start));
    }
    if (is_name_start(c)) {
      const std::size_t start = pos_;
      while (pos_ < s_.size() && is_name_char(s_[pos_])) ++pos_;
      const std::string name = s_.substr(start, pos_ - start);
      auto it = vars_.find(name);
      if (it == vars_.end()) return std::nullopt;
      used_.push_back(name);
      return integer(it->second);
    }
    return std::nullopt;
  }
  // A bash integer constant (bash(1), ARITHMETIC EVALUATION): a leading 0 means octal (040 is 32,
  // 08 is an error), 0x hexadecimal, BASE#DIGITS any base from 2 to 36; otherwise decimal. A
  // variable's value is read the same way. Anything else, or a value beyond int64, is not resolved.
  static std::optional<std::int64_t> integer(const std::string& text) {
    int base = 10;
    std::string digits = text;
    if (const std::size_t hash = text.find('#'); hash != std::string::npos) {
      const auto b = digits_in_base(text.substr(0, hash), 10);
      if (!b || *b < 2 || *b > 36) return std::nullopt;
      base = static_cast<int>(*b);
      digits = text.substr(hash + 1);
    } else if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
      base = 16;
      digits = text.substr(2);
    } else if (text.size() > 1 && text[0] == '0') {
      base = 8;
      digits = text.substr(1);
    }
    return digits_in_base(digits, base);
  }
  static std::optional<std::int64_t> digits_in_base(const std::string& digits, int base) {
    if (digits.empty()) return std::nullopt;
    std::int64_t v = 0;
    for (char ch : digits) {
      const unsigned char u = static_cast<unsigned char>(std::tolower(static_cast<unsigned char>(ch)));
      const int d = std::isdigit(u) ? u - '0' : std::isalpha(u) ? u - 'a' + 10 : 99;
      if (d >= base) return std::nullopt;  // bash: "value too great for base"
      if (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, d, &v)) return std::nullopt;
    }
    return v;
  }

  const std::string& s_;
  const std::map<std::string, std::string>& vars_;
  std::vector<std::string>& used_;
  std::size_t pos_ = 0;
};

// Index just past the bracket that closes the one at s[open] ('(' or '{'), or npos.
std::size_t matching_close(const std::string& s, std::size_t open) {
  const char o = s[open], c = o == '(' ? ')' : '}';
  int depth = 0;
  for (std::size_t i = open; i < s.size(); ++i) {
    if (s[i] == o) ++depth;
    else if (s[i] == c && --depth == 0) return i + 1;
  }
  return std::string::npos;
}

// Where a value's text came from: the variables expanded into [begin, end) of it.
struct Span {
  std::size_t begin, end;
  std::vector<std::string> vars;
};

class Lexer {
 public:
  Lexer(const std::string& text, const std::string& where) : s_(text), where_(where) {}

  ScriptWords run() {
    while (i_ < s_.size()) step();
    end_word();
    return std::move(out_);
  }

 private:
  static constexpr int kMaxExpansionDepth = 16;
  // Spans kept per value: a launch's flag string holds some tens of variables; a variable doubled
  // again and again (A="$A$A") would double its spans each time. Beyond this a value's later
  // variables go unnamed in the ambiguity notes.
  static constexpr std::size_t kMaxSpans = 512;

  // Variable values copied into words and other values, in bytes, over the whole script. A short
  // script can double a variable into gigabytes (A=$A$A nine times over a long value); a real
  // launch script expands to kilobytes.
  void charge(std::size_t bytes) {
    expanded_ += bytes;
    if (expanded_ > kExpansionBudget)
      throw InputError(where_, "", "the script's variables expand to more than " + std::to_string(kExpansionBudget >> 20) +
                                       " MiB of text (a variable doubled again and again?); strata reads launch scripts "
                                       "of ordinary size");
  }
  void note_used(const std::string& name) {
    if (used_.empty() || used_.back() != name) used_.push_back(name);
  }
  // The word takes text [begin, end) of an expansion's value: it used the expanded variables
  // (`vars`) and those inside their values that the text overlaps (`inner`); all of them when it
  // takes the whole value (end npos), empty ones included.
  void note_used(const std::vector<std::string>& vars, const std::vector<Span>& inner, std::size_t begin = 0,
                 std::size_t end = std::string::npos) {
    for (const auto& v : vars) note_used(v);
    for (const Span& sp : inner)
      if (end == std::string::npos || (sp.begin < end && sp.end > begin))
        for (const auto& v : sp.vars) note_used(v);
  }

  // Appends the value of the set variable `name` to `word`; where `spans` is given (the expansion
  // is the word's own, not a default's), also where the variables inside that value sit in it.
  void append_value(const std::string& name, const std::string& value, std::string& word, std::vector<Span>* spans) {
    charge(value.size());
    if (spans) {
      if (auto it = value_spans_.find(name); it != value_spans_.end())
        for (const Span& sp : it->second)
          if (spans->size() < kMaxSpans) spans->push_back({word.size() + sp.begin, word.size() + sp.end, sp.vars});
    }
    word += value;
  }

  // Expands the expansion starting at s[i] == '$' into `word`; returns the index after it.
  // `spans`, at the top level only, receives where other variables' text sits in what was added.
  std::size_t expand(const std::string& s, std::size_t i, std::string& word, int depth, std::vector<Span>* spans = nullptr) {
    if (i + 1 >= s.size()) {
      word += '$';
      return i + 1;
    }
    const char n = s[i + 1];
    if (n == '(' && i + 2 < s.size() && s[i + 2] == '(') {  // $(( arithmetic ))
      const std::size_t end = matching_close(s, i + 1);
      if (end == std::string::npos || end < i + 4 || s[end - 2] != ')') return literal_rest(s, i, word);
      const std::string inner = expand_all(s.substr(i + 3, end - 2 - (i + 3)), depth + 1);
      auto v = Arithmetic(inner, out_.variables, used_).evaluate();
      charge(inner.size());
      word += v ? std::to_string(*v) : s.substr(i, end - i);
      return end;
    }
    if (n == '(') {  // $(command): not run; kept as written
      const std::size_t end = matching_close(s, i + 1);
      if (end == std::string::npos) return literal_rest(s, i, word);
      word += s.substr(i, end - i);
      return end;
    }
    if (n == '{') {
      const std::size_t end = matching_close(s, i + 1);
      if (end == std::string::npos) return literal_rest(s, i, word);
      const std::string body = s.substr(i + 2, end - 1 - (i + 2));
      std::size_t k = 0;
      while (k < body.size() && is_name_char(body[k])) ++k;
      const std::string name = body.substr(0, k), rest = body.substr(k);
      auto it = out_.variables.find(name);
      const bool set = it != out_.variables.end();
      if (set) note_used(name);
      if (!name.empty() && rest.empty() && set) {
        append_value(name, it->second, word, spans);
      } else if (!name.empty() && (rest.starts_with(":-") || rest.starts_with(":=") || rest.starts_with("-"))) {
        const bool colon = rest[0] == ':';
        const bool use_value = set && (!colon || !it->second.empty());
        // The word after :- goes through quote removal: ${S:-"optim"} is optim.
        std::string word_text = rest.substr(colon ? 2 : 1);
        const bool single = word_text.size() >= 2 && word_text.front() == '\'' && word_text.back() == '\'';
        const bool dbl = word_text.size() >= 2 && word_text.front() == '"' && word_text.back() == '"';
        if (single || dbl) word_text = word_text.substr(1, word_text.size() - 2);
        if (use_value) {
          append_value(name, it->second, word, spans);
        } else {
          const std::string fallback = single ? word_text : expand_all(word_text, depth + 1);
          charge(fallback.size());
          word += fallback;
          if (rest.starts_with(":=")) assign(name, fallback, {});
        }
      } else {
        word += s.substr(i, end - i);  // unset, arrays, other operators: kept as written
      }
      return end;
    }
    if (is_name_start(n)) {
      std::size_t k = i + 1;
      while (k < s.size() && is_name_char(s[k])) ++k;
      auto it = out_.variables.find(s.substr(i + 1, k - i - 1));
      if (it != out_.variables.end()) {
        note_used(it->first);
        append_value(it->first, it->second, word, spans);
      } else {
        word += s.substr(i, k - i);
      }
      return k;
    }
    word += '$';  // $1, $@, $# ...: positional parameters are not known
    return i + 1;
  }
  std::size_t literal_rest(const std::string& s, std::size_t i, std::string& word) {
    word += s.substr(i);
    return s.size();
  }
  std::string expand_all(const std::string& s, int depth, std::vector<Span>* spans = nullptr) {
    if (depth > kMaxExpansionDepth) return s;
    std::string r;
    for (std::size_t i = 0; i < s.size();) {
      if (s[i] == '$') i = expand(s, i, r, depth, spans);
      else r += s[i++];
    }
    return r;
  }

  // The value of the expansion at s_[i_, end) for the current word, the variables it used
  // (`vars`), and where the variables inside those variables' values sit in it (`inner`).
  std::string expand_for_word(std::size_t end, std::vector<std::string>& vars, std::vector<Span>& inner) {
    std::vector<std::string> outer;
    outer.swap(used_);
    std::string value = expand_all(s_.substr(i_, end - i_), 0, &inner);
    vars.swap(used_);
    used_ = std::move(outer);
    return value;
  }
  // Appends an expansion's value to the word unsplit: the word used its variables, and those inside
  // them (A="--tp $TP" then "$A": the word depends on TP too).
  void append_unsplit(const std::string& value, const std::vector<std::string>& vars, const std::vector<Span>& inner) {
    if (!assign_name_.empty()) {  // only an assignment's spans are kept (for the variable's value)
      const std::size_t start = word_.size();
      word_spans_.push_back({start, start + value.size(), vars});
      for (const Span& sp : inner)
        if (word_spans_.size() < kMaxSpans) word_spans_.push_back({start + sp.begin, start + sp.end, sp.vars});
    }
    note_used(vars, inner);
    word_ += value;
  }

  // The text from s_[i_] to the end of the shell construct that starts there, for "$(" "${" "$((".
  std::size_t construct_end(std::size_t i) const {
    if (i + 1 < s_.size() && (s_[i + 1] == '(' || s_[i + 1] == '{')) {
      const std::size_t end = matching_close(s_, i + 1);
      return end == std::string::npos ? s_.size() : end;
    }
    std::size_t k = i + 1;
    while (k < s_.size() && is_name_char(s_[k])) ++k;
    return k == i + 1 ? std::min(i + 2, s_.size()) : k;
  }

  // An unquoted expansion outside an assignment. bash splits the value of a parameter expansion
  // ($NAME, ${NAME...}) into fields on blanks (bash(1), Word Splitting), so flags collected in a
  // string (`options="--num-layers 24 ..."` then `torchrun pretrain_gpt.py ${options}`, as
  // Megatron-LM's examples/mamba/train.sh) reach the program as separate words, and an empty value
  // with nothing around it is no word at all. Command substitutions stay whole, as written (they
  // are not run); arithmetic yields one number.
  void add_expansion() {
    const std::size_t end = construct_end(i_);
    const bool command_or_arithmetic = i_ + 1 < s_.size() && s_[i_ + 1] == '(';
    std::vector<std::string> vars;
    std::vector<Span> inner;
    const std::string value = expand_for_word(end, vars, inner);
    i_ = end;
    if (!assign_name_.empty() || command_or_arithmetic) {
      append_unsplit(value, vars, inner);
      in_word_ = true;
      literal_name_ = false;
      return;
    }
    // Blanks end the word so far; each field depends on the expanded variables and on the
    // variables inside their values that it overlaps. The last field goes on with what follows.
    const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\n'; };
    for (std::size_t k = 0; k < value.size();) {
      std::size_t b = k;
      while (b < value.size() && blank(value[b])) ++b;
      if (b > k) end_word();
      if (b == value.size()) break;
      std::size_t e = b;
      while (e < value.size() && !blank(value[e])) ++e;
      word_ += value.substr(b, e - b);
      in_word_ = true;
      literal_name_ = false;  // a field is never an assignment (NAME=... from a value)
      note_used(vars, inner, b, e);
      k = e;
    }
  }

  void end_word() {
    if (!in_word_) return;
    if (!assign_name_.empty()) {
      const std::size_t offset = assign_name_.size() + 1;  // NAME=
      std::vector<Span> spans;
      for (const Span& sp : word_spans_)
        if (sp.end > offset) spans.push_back({std::max(sp.begin, offset) - offset, sp.end - offset, sp.vars});
      assign(assign_name_, word_.substr(offset), std::move(spans));
    } else {
      if (out_.words.size() >= kMaxWords)
        throw InputError(where_, "", "more than " + std::to_string(kMaxWords) +
                                         " words; a launch script or a list of flags has thousands at most");
      out_.words.push_back(word_);
      out_.word_variables.push_back(used_);
      out_.word_line.push_back(line_at(i_));
      out_.word_command.push_back(command_);
    }
    used_.clear();
    word_.clear();
    word_spans_.clear();
    assign_name_.clear();
    in_word_ = false;
    literal_name_ = true;
  }

  void step() {
    const char c = s_[i_];
    if (c == '\\') {
      if (i_ + 1 < s_.size() && s_[i_ + 1] == '\n') i_ += 2;  // line continuation
      else if (i_ + 2 < s_.size() && s_[i_ + 1] == '\r' && s_[i_ + 2] == '\n') i_ += 3;
      else {
        if (i_ + 1 < s_.size()) word_ += s_[i_ + 1];
        in_word_ = true;
        literal_name_ = false;
        i_ += 2;
      }
      return;
    }
    if (c == '#' && !in_word_) {
      while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      return;
    }
    if (c == '<' && s_.compare(i_, 3, "<<<") == 0) {  // a here-string: the next word is data, but one word
      end_word();
      i_ += 3;
      return;
    }
    if (c == '<' && s_.compare(i_, 2, "<<") == 0) {
      end_word();
      read_heredoc_operator();
      return;
    }
    if (std::isspace(static_cast<unsigned char>(c)) || c == ';' || c == '&' || c == '|' || c == '(' || c == ')' ||
        c == '<' || c == '>') {
      end_word();
      if (c == '\n' || c == ';' || c == '&' || c == '|') ++command_;
      ++i_;
      if (c == '\n') skip_heredoc_bodies();
      return;
    }
    if (c == '\'') {
      const std::size_t end = s_.find('\'', i_ + 1);
      const std::size_t stop = end == std::string::npos ? s_.size() : end;
      word_ += s_.substr(i_ + 1, stop - i_ - 1);
      in_word_ = true;
      literal_name_ = false;
      i_ = stop + 1;
      return;
    }
    if (c == '"') {
      in_word_ = true;
      literal_name_ = false;
      ++i_;
      while (i_ < s_.size() && s_[i_] != '"') {
        if (s_[i_] == '\\' && i_ + 1 < s_.size() && std::string_view("$`\"\\\n").find(s_[i_ + 1]) != std::string::npos) {
          if (s_[i_ + 1] != '\n') word_ += s_[i_ + 1];
          i_ += 2;
        } else if (s_[i_] == '$') {
          const std::size_t end = construct_end(i_);
          std::vector<std::string> vars;
          std::vector<Span> inner;
          const std::string value = expand_for_word(end, vars, inner);
          append_unsplit(value, vars, inner);
          i_ = end;
        } else {
          word_ += s_[i_++];
        }
      }
      ++i_;  // closing quote
      return;
    }
    if (c == '$') {
      add_expansion();
      return;
    }
    if (c == '=' && in_word_ && literal_name_ && assign_name_.empty() && is_name_start(word_[0])) {
      assign_name_ = word_;
    } else if (!is_name_char(c)) {
      literal_name_ = false;
    }
    word_ += c;
    in_word_ = true;
    ++i_;
  }

  void assign(const std::string& name, const std::string& value, std::vector<Span> spans) {
    charge(value.size());
    out_.variables[name] = value;
    auto& values = out_.assignments[name];
    if (values.empty()) out_.assigned_in_order.push_back(name);
    values.push_back(value);
    value_spans_[name] = std::move(spans);
  }

  // `<<WORD`, `<<-WORD`, `<<'WORD'`, `<<"WORD"`: the lines after this command line, up to the
  // line holding only WORD, are the command's input, not its arguments (bash(1), Here Documents).
  // A notes block (`cat <<EOF ... --tensor-model-parallel-size 8 ... EOF`) must not be read as flags.
  void read_heredoc_operator() {
    i_ += 2;
    bool strip_tabs = false;
    if (i_ < s_.size() && s_[i_] == '-') {
      strip_tabs = true;
      ++i_;
    }
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
    std::string delimiter;
    while (i_ < s_.size() && !std::isspace(static_cast<unsigned char>(s_[i_])) && std::string_view(";&|<>()").find(s_[i_]) == std::string_view::npos) {
      if (s_[i_] != '\'' && s_[i_] != '"' && s_[i_] != '\\') delimiter += s_[i_];
      ++i_;
    }
    if (!delimiter.empty()) pending_heredocs_.push_back({delimiter, strip_tabs});
  }
  // At the end of a command line: skip the bodies of the here-documents it opened.
  void skip_heredoc_bodies() {
    for (const auto& [delimiter, strip_tabs] : pending_heredocs_) {
      while (i_ < s_.size()) {
        std::size_t end = s_.find('\n', i_);
        if (end == std::string::npos) end = s_.size();
        std::string_view line(s_.data() + i_, end - i_);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (strip_tabs) line.remove_prefix(std::min(line.find_first_not_of('\t'), line.size()));
        i_ = std::min(end + 1, s_.size());
        if (line == delimiter) break;
      }
    }
    pending_heredocs_.clear();
  }

  // 1-based line of offset `pos` (called with non-decreasing positions).
  int line_at(std::size_t pos) {
    pos = std::min(pos, s_.size());
    for (; counted_upto_ < pos; ++counted_upto_)
      if (s_[counted_upto_] == '\n') ++line_;
    return line_;
  }

  struct Heredoc {
    std::string delimiter;
    bool strip_tabs;
  };

  const std::string& s_;
  const std::string& where_;
  std::size_t expanded_ = 0;
  std::vector<Heredoc> pending_heredocs_;
  int command_ = 0;
  int line_ = 1;
  std::size_t counted_upto_ = 0;
  std::size_t i_ = 0;
  std::string word_;
  std::vector<std::string> used_;  // variables expanded into the current word
  bool in_word_ = false;
  bool literal_name_ = true;  // the word so far is an unquoted NAME, so a '=' makes it an assignment
  std::string assign_name_;
  std::vector<Span> word_spans_;                        // of word_: the expansions in it, for an assignment
  std::map<std::string, std::vector<Span>> value_spans_;  // of each variable's value
  ScriptWords out_;
};

}  // namespace

ScriptWords read_script_words(const std::string& text, const std::string& where) { return Lexer(text, where).run(); }

bool has_unresolved_expansion(const std::string& word) { return word.find_first_of("$`") != std::string::npos; }

}  // namespace strata
