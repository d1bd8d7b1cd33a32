#include <doctest/doctest.h>

#include "costmodel/errors.h"
#include "profiler/kernel_record.h"
#include "profiler/profiler_test_util.h"

using namespace strata::profiler;

TEST_SUITE("profiler") {
TEST_CASE("record_to_json / record_from_json: kernel and memcpy records round trip") {
  KernelRecord k;
  k.name = "sm90_xmma_gemm_bf16bf16_bf16f32";
  k.grid = {66, 2, 1};
  k.block = {384, 1, 1};
  k.registers_per_thread = 168;
  k.static_shared_bytes = 1024;
  k.dynamic_shared_bytes = 200 * 1024;
  k.start_ns = 1'700'000'000'123'456'789ULL;  // above 2^53: must stay exact
  k.end_ns = k.start_ns + 1234;
  k.device = 3;
  k.stream = 13;
  k.correlation_id = 77;
  k.op_index = 5;
  k.op_instance = 2;
  CHECK(record_from_json(record_to_json(k), "t", "") == k);

  KernelRecord m;
  m.kind = ActivityKind::memcpy;
  m.name = "memcpy HtoD";
  m.copy_kind = "HtoD";
  m.bytes = 1ULL << 30;
  m.start_ns = 10;
  m.end_ns = 20;
  CHECK(record_from_json(record_to_json(m), "t", "") == m);
}

TEST_CASE("record_from_json: bad records name the file, the JSON path and what was expected") {
  nlohmann::json j = record_to_json(test::record("k", 5, 1));
  CHECK_THROWS_WITH_AS(record_from_json(j, "p.json", "/records/3"), "p.json: /records/3/end_ns: expected end_ns >= start_ns",
                       strata::InputError);
  j = record_to_json(test::record("k"));
  j["grid"] = {1, 2};
  CHECK_THROWS_WITH_AS(record_from_json(j, "p.json", "/records/0"),
                       "p.json: /records/0/grid: expected [x, y, z] of three positive integers", strata::InputError);
  j = record_to_json(test::record("k"));
  j["kind"] = "graph";
  CHECK_THROWS_AS(record_from_json(j, "p.json", ""), strata::InputError);
}

TEST_CASE("op_to_json / op_from_json: labels round trip and unknown kinds are rejected") {
  OpLabel o{"qkv_proj", "gemm", "bf16", 8192, 1280, 8192, 1, 2 * 8192.0 * 1280 * 8192, 1e8, 1, "llama3-70b tp=8 seq=8192 fwd"};
  CHECK(op_from_json(op_to_json(o), "t", "") == o);
  auto j = op_to_json(o);
  j["kind"] = "conv";
  CHECK_THROWS_WITH_AS(op_from_json(j, "t", "/ops/0"),
                       "t: /ops/0/kind: expected gemm, attention, elementwise, memcpy or collective, found \"conv\"",
                       strata::InputError);
}
}
