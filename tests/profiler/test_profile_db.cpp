#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>

#include "costmodel/errors.h"
#include "profiler/profile_db.h"
#include "profiler/profiler_test_util.h"
#include "profiler/synthetic.h"
#include "test_util.h"

using namespace strata::profiler;

TEST_SUITE("profiler") {
TEST_CASE("save_profile / load_profile: a profile round trips through its JSON file") {
  auto gpu = strata::test::catalog().gpu("h100-sxm");
  ProfileDb p = synthetic_profile(strata::test::catalog(), gpu, strata::KernelCoefficients{}, SyntheticOptions{});
  p.driver_version = 13000;
  p.runtime_version = 13000;
  p.cupti_version = 130001;
  p.cublas_version = "13.0.0";
  p.nccl_version = "2.27.7";
  p.dropped_records = 3;
  p.devices.front().pci_bus_id = "0000:1b:00.0";
  p.devices.front().compute_capability_major = 9;
  REQUIRE(p.records.size() > 100);
  auto path = (std::filesystem::temp_directory_path() / "strata_test_profile_db.json").string();
  save_profile(p, path);
  ProfileDb q = load_profile(path);
  std::filesystem::remove(path);
  CHECK(q == p);
}

TEST_CASE("profile_from_json: schema version and op indices are checked") {
  ProfileDb p;
  p.devices.push_back(test::device("x", 10));
  p.ops.push_back(test::label("fc1", "gemm"));
  KernelRecord r;
  r.name = "k";
  r.op_index = 1;  // out of range
  p.records.push_back(r);
  auto j = profile_to_json(p);
  CHECK_THROWS_WITH_AS(profile_from_json(j, "p.json"), "p.json: /records/0/op: expected an index into /ops (0..1), found 1",
                       strata::InputError);
  j["schema_version"] = 2;
  CHECK_THROWS_WITH_AS(profile_from_json(j, "p.json"), "p.json: /schema_version: expected 1 (this strata reads profile schema 1)",
                       strata::InputError);
}

TEST_CASE("utc_now_iso8601: looks like 2026-11-22T09:14:03Z") {
  std::string t = utc_now_iso8601();
  CHECK(t.size() == 20);
  CHECK(t[10] == 'T');
  CHECK(t.back() == 'Z');
}
}
