#include <doctest/doctest.h>

#include "test_util.h"

using namespace strata;

TEST_SUITE("cli") {
TEST_CASE("strata trace: a program that never uses CUDA (or no CUDA part) gives a clear message and exit 1") {
  auto t = test::run_strata("trace --out /tmp/strata_never_written.trace.json -- true");
  INFO(t.out);
  CHECK(t.exit_code == 1);
  bool explained = t.out.find("the program wrote no trace (exit code 0); did it use CUDA?") != std::string::npos ||
                   t.out.find("built without the CUDA profiler") != std::string::npos;
  CHECK(explained);
}

TEST_CASE("strata trace: the command after -- is required") {
  auto t = test::run_strata("trace --out /tmp/strata_never_written.trace.json");
  CHECK(t.exit_code == 1);
  CHECK(t.out.find("command") != std::string::npos);
}
}
