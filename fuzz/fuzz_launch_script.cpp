// The launch-script reader itself (launch/shell_words.h): words, variables, arithmetic,
// here-documents and the expansion budget. Whatever the script, the reader either throws
// InputError or returns words and values whose total size stays within the input plus the budget.
#include <cstdio>
#include <cstdlib>

#include "fuzz_common.h"
#include "launch/shell_words.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text = strata::fuzz::as_text(data, size);
  try {
    const strata::ScriptWords s = strata::read_script_words(text, "fuzz.sh");
    // Every copied variable value is charged to the budget, so nothing can grow beyond it.
    const std::size_t limit = 2 * (text.size() + strata::kExpansionBudget);
    std::size_t total = 0;
    for (const auto& w : s.words) total += w.size();
    for (const auto& [name, value] : s.variables) total += name.size() + value.size();
    if (total > limit) {
      std::fprintf(stderr, "expanded to %zu bytes, beyond the budget %zu\n", total, limit);
      std::abort();
    }
    if (s.word_line.size() != s.words.size() || s.word_command.size() != s.words.size() || s.word_variables.size() != s.words.size()) {
      std::fprintf(stderr, "per-word vectors out of step with the words\n");
      std::abort();
    }
  } catch (const strata::InputError&) {
  }
  return 0;
}
