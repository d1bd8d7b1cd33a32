#include <doctest/doctest.h>

#include "profiler/chrome_trace.h"
#include "profiler/profiler_test_util.h"

using namespace strata::profiler;

TEST_SUITE("profiler") {
TEST_CASE("chrome_trace: one complete event per record, microseconds from the first, pid/tid = device/stream") {
  ProfileDb p;
  p.devices.push_back(test::device("NVIDIA H100 80GB HBM3", 132));
  p.ops.push_back(test::label("fc1", "gemm"));
  KernelRecord k;
  k.name = "gemm_kernel";
  k.start_ns = 5'000;
  k.end_ns = 7'500;
  k.stream = 7;
  k.grid = {132, 1, 1};
  k.op_index = 0;
  k.op_instance = 1;
  KernelRecord m;
  m.kind = ActivityKind::memcpy;
  m.name = "memcpy HtoD";
  m.bytes = 4096;
  m.start_ns = 1'000;
  m.end_ns = 2'000;
  p.records = {k, m};
  auto j = chrome_trace(p);
  const auto& ev = j.at("traceEvents");
  REQUIRE(ev.size() >= 2);
  CHECK(ev[0]["ph"] == "X");
  CHECK(ev[0]["name"] == "gemm_kernel");
  CHECK(ev[0]["ts"].get<double>() == doctest::Approx(4.0));
  CHECK(ev[0]["dur"].get<double>() == doctest::Approx(2.5));
  CHECK(ev[0]["tid"] == 7);
  CHECK(ev[0]["args"]["op"] == "fc1");
  CHECK(ev[1]["cat"] == "memcpy");
  CHECK(ev[1]["ts"].get<double>() == doctest::Approx(0.0));
  bool named = false;
  for (const auto& e : ev)
    if (e["ph"] == "M" && e["name"] == "process_name") named = e["args"]["name"] == "GPU 0 NVIDIA H100 80GB HBM3";
  CHECK(named);
}
}
