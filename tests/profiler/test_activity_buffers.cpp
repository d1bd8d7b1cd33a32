#include <doctest/doctest.h>

#include "mock_activity_source.h"
#include "profiler/activity_buffers.h"

using namespace strata::profiler;
using strata::profiler::test::fake_kernel;
using strata::profiler::test::MockActivitySource;

TEST_SUITE("profiler") {
TEST_CASE("ActivityBuffers: records written by the source come back decoded, in order") {
  ActivityBuffers::Options o;
  o.buffer_bytes = 4 * sizeof(test::FakeKernelActivity);  // 4 records per buffer
  ActivityBuffers buffers(o);
  MockActivitySource src;
  src.enable(buffers);
  for (std::uint32_t i = 1; i <= 10; ++i) src.emit(fake_kernel(i, 1000 * i, 1000 * i + 500));
  CHECK(buffers.ready_buffers() == 2);  // two full buffers completed, one partial in flight
  auto records = buffers.collect(src);
  REQUIRE(records.size() == 10);
  for (std::uint32_t i = 0; i < 10; ++i) CHECK(records[i].correlation_id == i + 1);
  CHECK(records[3].name == "gemm");
  CHECK(records[3].grid == Dim3{132, 1, 1});
  CHECK(records[3].block == Dim3{256, 1, 1});
  CHECK(records[3].registers_per_thread == 128);
  CHECK(records[3].shared_bytes() == 96 * 1024);
  CHECK(records[3].duration_us() == doctest::Approx(0.5));
  CHECK(src.flushes == 1);
  CHECK(buffers.stats().records == 10);
  CHECK(buffers.stats().buffers_completed == 3);
}

TEST_CASE("ActivityBuffers: the flush runs without the buffers' lock held (CUPTI calls back into complete)") {
  ActivityBuffers buffers;
  MockActivitySource src;
  src.enable(buffers);
  src.emit(fake_kernel(1, 10, 20));
  auto records = buffers.collect(src);
  CHECK(records.size() == 1);
  CHECK_FALSE(src.lock_seen_held_in_flush);
  CHECK_FALSE(buffers.lock_held());
}

TEST_CASE("ActivityBuffers: the cap on buffers refuses requests and the source's dropped records are counted") {
  ActivityBuffers::Options o;
  o.buffer_bytes = 2 * sizeof(test::FakeKernelActivity);
  o.max_buffers = 3;
  ActivityBuffers buffers(o);
  MockActivitySource src;
  src.enable(buffers);
  // 3 buffers x 2 records fit; the next 4 records find no buffer and are dropped.
  for (std::uint32_t i = 1; i <= 10; ++i) src.emit(fake_kernel(i, i * 10, i * 10 + 5));
  CHECK(buffers.buffers_alive() == 3);
  CHECK(buffers.stats().buffers_refused == 4);
  auto records = buffers.collect(src);
  CHECK(records.size() == 6);
  CHECK(buffers.stats().dropped_records == 4);
  // After collect the buffers are recycled: recording continues.
  CHECK(buffers.buffers_alive() == 0);
  for (std::uint32_t i = 11; i <= 12; ++i) src.emit(fake_kernel(i, i * 10, i * 10 + 5));
  auto more = buffers.collect(src);
  REQUIRE(more.size() == 2);
  CHECK(more[0].correlation_id == 11);
  CHECK(buffers.stats().buffers_refused == 4);
}

TEST_CASE("ActivityBuffers: buffers are aligned, empty completions recycle, unknown pointers are ignored") {
  ActivityBuffers::Options o;
  o.buffer_bytes = 1000;
  o.alignment = 64;
  ActivityBuffers buffers(o);
  std::size_t size = 0;
  std::uint8_t* b = buffers.request(&size);
  REQUIRE(b != nullptr);
  CHECK(size == 1000);
  CHECK(reinterpret_cast<std::uintptr_t>(b) % 64 == 0);
  buffers.complete(b, 0);
  CHECK(buffers.stats().empty_buffers == 1);
  CHECK(buffers.ready_buffers() == 0);
  std::uint8_t bogus[16];
  buffers.complete(bogus, 16);  // not ours: ignored
  CHECK(buffers.stats().buffers_completed == 1);
  // The recycled buffer is handed out again.
  std::uint8_t* again = buffers.request(&size);
  CHECK(again == b);
  buffers.complete(again, 0);
}
}
