// The doctest main of every test executable, with one guard: a run whose filters select no test
// case fails. ctest runs each TEST_CASE by name (--test-case=NAME); a name that CMake or doctest's
// filter syntax mangles (a ';' splits a CMake list, a ',' separates filters) would otherwise
// select nothing and pass without running a single check.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

namespace {

unsigned g_selected = 0;  // test cases that passed the filters in the last run
bool g_ran = false;       // a run happened (not a query such as --list-test-cases)

struct SelectionCounter : doctest::IReporter {
  explicit SelectionCounter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override {
    g_selected = stats.numTestCasesPassingFilters;
    g_ran = true;
  }
  void test_case_start(const doctest::TestCaseData&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

}  // namespace

REGISTER_LISTENER("selection_counter", 1, SelectionCounter);

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (context.shouldExit()) return result;
  if (g_ran && g_selected == 0) {
    std::fprintf(stderr, "no test case matches the filters given: nothing was tested\n");
    return result != 0 ? result : 1;
  }
  return result;
}
