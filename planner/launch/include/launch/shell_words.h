#pragma once
// Reads a launch script the way a person skimming it would: the words of its commands, with line
// continuations, quotes, comments and simple variable assignments resolved. It is not a shell: no
// control flow, globbing, command substitution or environment. An expansion it cannot resolve stays
// in the word as written (for example "$NNODES"), so callers can say which value they could not read.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace strata {

struct ScriptWords {
  std::vector<std::string> words;                // every word outside assignments, in order
  std::map<std::string, std::string> variables;  // NAME=value assignments, last one wins
  // For each word, the variables whose values went into it; and every value each variable was
  // assigned, in order. A variable assigned different values (branches of an if or a case the
  // reader does not follow) makes a word that uses it a guess, which callers can say.
  std::vector<std::vector<std::string>> word_variables;
  std::map<std::string, std::vector<std::string>> assignments;
  std::vector<std::string> assigned_in_order;  // each variable once, in the order of its first assignment
  // For each word, its line in the text (1-based) and the command it belongs to: commands are
  // separated by newlines, ';', '&' and '|', so two launch lines are two commands.
  std::vector<int> word_line;
  std::vector<int> word_command;
};

// Bytes of variable values the reader copies in all (see read_script_words); beyond it the script
// is refused.
inline constexpr std::size_t kExpansionBudget = std::size_t{4} << 20;
// Words a script may have (each costs some hundred bytes of bookkeeping); beyond it it is refused.
inline constexpr std::size_t kMaxWords = 100'000;

// Handles: backslash-newline continuations; '...' and "..." quoting; # comments; NAME=value and
// export NAME=value (the value expanded with the variables assigned before it); $NAME, ${NAME},
// ${NAME:-default}, ${NAME-default}, ${NAME:=default}; $(( integer arithmetic )) over + - * / %
// and parentheses, with bash's integer constants (040 is octal, 0x hex, 10#08); bash array
// assignments NAME=( words ) contribute their words. Here-documents (<<EOF ... EOF) are the input of
// their command, not words. Expanding more than kExpansionBudget bytes of variable values throws
// InputError naming `where`.
ScriptWords read_script_words(const std::string& text, const std::string& where = "launch script");

// True when the word still holds an expansion read_script_words could not resolve.
bool has_unresolved_expansion(const std::string& word);

}  // namespace strata
