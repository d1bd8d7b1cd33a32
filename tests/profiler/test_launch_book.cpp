#include <doctest/doctest.h>

#include "profiler/launch_book.h"

using namespace strata::profiler;

namespace {
KernelRecord rec(std::uint32_t corr, std::uint64_t start) {
  KernelRecord r;
  r.correlation_id = corr;
  r.start_ns = start;
  r.end_ns = start + 10;
  return r;
}
}  // namespace

TEST_SUITE("profiler") {
TEST_CASE("LaunchBook: API calls made while an op is open bind its kernels by correlation id") {
  LaunchBook book;
  book.on_api_enter(1);  // before any op: not bound
  book.begin(0, 0, 100);
  book.on_api_enter(2);
  book.on_api_enter(3);  // e.g. cuBLAS launching a GEMM and a split-K reduction
  book.end(200);
  book.begin(1, 4, 300);
  book.on_api_enter(4);
  book.end(400);
  CHECK(book.bound_correlations() == 3);
  // Records arrive in any order; their GPU times may lie outside the host windows.
  std::vector<KernelRecord> r{rec(4, 5000), rec(2, 5001), rec(3, 5002), rec(1, 5003)};
  CHECK(book.annotate(r) == 3);
  CHECK(r[0].op_index == 1);
  CHECK(r[0].op_instance == 4);
  CHECK(r[1].op_index == 0);
  CHECK(r[2].op_index == 0);
  CHECK(r[3].op_index == -1);
}

TEST_CASE("LaunchBook: records with unknown correlation ids fall back to the op's time window") {
  LaunchBook book;
  book.begin(0, 0, 100);
  book.end(200);
  book.begin(2, 1, 300);
  book.end(400);
  std::vector<KernelRecord> r{rec(90, 150), rec(91, 350), rec(92, 250), rec(93, 50)};
  CHECK(book.annotate(r) == 2);
  CHECK(r[0].op_index == 0);
  CHECK(r[1].op_index == 2);
  CHECK(r[1].op_instance == 1);
  CHECK(r[2].op_index == -1);  // between windows (a warmup launch)
  CHECK(r[3].op_index == -1);
}
}
