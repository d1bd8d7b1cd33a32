#include <doctest/doctest.h>

#include "cli/progress.h"

using namespace strata;

TEST_SUITE("cli") {
TEST_CASE("ProgressBar: disabled bars (--quiet, no terminal, nothing to do) draw nothing") {
  ProgressBar quiet(10, false);
  CHECK(!quiet.enabled());
  quiet.update(5);
  quiet.finish();
  ProgressBar empty(0, true);
  CHECK(!empty.enabled());
  ProgressBar on(3, true);
  CHECK(on.enabled());
  on.update(3);
  on.finish();
  on.finish();  // idempotent
}
}
