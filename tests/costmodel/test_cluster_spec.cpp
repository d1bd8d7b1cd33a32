#include <doctest/doctest.h>

#include "costmodel/cluster_spec.h"
#include "costmodel/json_reader.h"
#include "test_util.h"

using namespace strata;
using test::input_error;

namespace {

json minimal_cluster() {
  return json::parse(R"({"name": "toy", "gpu": "a100-80gb", "gpus_per_node": 8, "intra_node_GBps": 300,
                         "nics_per_node": 4, "nic_Gbps": 400})");
}

ClusterSpec without_aliases(ClusterSpec c) {
  c.aliases.clear();
  return c;
}

}  // namespace

TEST_SUITE("costmodel") {
TEST_CASE("ClusterSpec::inter_node_GBps_per_gpu") {
  // DGX A100: 8 HDR NICs of 200 Gb/s for 8 GPUs = 25 GB/s per GPU per direction.
  ClusterSpec c = test::catalog().cluster("dgx-a100-hdr");
  CHECK(c.inter_node_GBps_per_gpu() == doctest::Approx(8 * 200.0 / 8 / 8));
  CHECK(c.inter_node_GBps_per_gpu() == doctest::Approx(25.0));
  // The formula: node bandwidth in Gb/s, to GB/s, shared by the node's GPUs.
  ClusterSpec t = cluster_from_json(minimal_cluster(), "toy.json", c.gpu);
  CHECK(t.inter_node_GBps_per_gpu() == doctest::Approx(4 * 400.0 / 8 / 8));
  t.gpus_per_node = 4;
  CHECK(t.inter_node_GBps_per_gpu() == doctest::Approx(4 * 400.0 / 8 / 4));
}

TEST_CASE("cluster_from_json") {
  const GpuSpec gpu = test::catalog().gpu("a100-80gb");
  SUBCASE("fields and defaults") {
    ClusterSpec c = cluster_from_json(minimal_cluster(), "toy.json", gpu);
    CHECK(c.name == "toy");
    CHECK(c.gpu == gpu);
    CHECK(c.gpus_per_node == 8);
    CHECK(c.nics_per_node == 4);
    CHECK(c.nic_Gbps == 400);
    CHECK(c.intra_node_latency_us == 3.0);
    CHECK(c.inter_node_latency_us == 5.0);
    CHECK(c.pue == 1.2);
    CHECK_FALSE(c.price_per_gpu_hour_usd.has_value());
    CHECK(c.host_memory_GiB_per_node == 0);  // not known unless given
    CHECK(test::catalog().cluster("gb200-nvl72").host_memory_GiB_per_gpu() == 240);  // 36 Graces' 480 GiB over 72 GPUs
  }
  SUBCASE("every shipped cluster round-trips through cluster_to_json (aliases aside)") {
    auto entries = test::catalog().list("clusters");
    REQUIRE_FALSE(entries.empty());
    for (const auto& e : entries) {
      CAPTURE(e.id);
      ClusterSpec c = test::catalog().cluster(e.path);
      CHECK(without_aliases(cluster_from_json(cluster_to_json(c), "rt.json", c.gpu)) == without_aliases(c));
    }
  }
  SUBCASE("zero and negative values are rejected with the key named") {
    auto err = [&](const char* key, json value) {
      json j = minimal_cluster();
      j[key] = value;
      return input_error([&] { cluster_from_json(j, "toy.json", gpu); });
    };
    CHECK(err("gpus_per_node", 0).find("toy.json: /gpus_per_node: expected an integer in [1,") != std::string::npos);
    CHECK(err("intra_node_GBps", 0).find("/intra_node_GBps: expected a positive number") != std::string::npos);
    CHECK(err("intra_node_GBps", -300).find("/intra_node_GBps") != std::string::npos);
    CHECK(err("nic_Gbps", 0).find("/nic_Gbps") != std::string::npos);
    CHECK(err("nics_per_node", -8).find("/nics_per_node") != std::string::npos);
    CHECK(err("inter_node_latency_us", -5).find("/inter_node_latency_us") != std::string::npos);
    CHECK(err("price_per_gpu_hour_usd", 0).find("/price_per_gpu_hour_usd") != std::string::npos);
    CHECK(err("pue", 0).find("/pue") != std::string::npos);
    CHECK(err("host_power_W_per_node", -1).find("/host_power_W_per_node: expected a non-negative number") != std::string::npos);
    CHECK(err("host_memory_GiB", -1).find("/host_memory_GiB: expected a non-negative number of GiB") != std::string::npos);
    CHECK(err("nic_Gbs", 200).find("did you mean \"nic_Gbps\"") != std::string::npos);
  }
}

TEST_CASE("cluster_to_json") {
  ClusterSpec c = test::catalog().cluster("dgx-a100-hdr");
  REQUIRE_FALSE(c.aliases.empty());
  CHECK(cluster_from_json(cluster_to_json(c), "rt.json", c.gpu) == c);
}

TEST_CASE("default_cluster_for") {
  SUBCASE("Ampere gets 8x 200 Gb/s NICs, Hopper 8x 400 Gb/s; NVLink inside the node") {
    ClusterSpec a = default_cluster_for(test::catalog().gpu("a100-80gb"));
    CHECK(a.nics_per_node == 8);
    CHECK(a.nic_Gbps == 200);
    CHECK(a.intra_node_GBps == a.gpu.nvlink_GBps);
    ClusterSpec h = default_cluster_for(test::catalog().gpu("h100"));
    CHECK(h.nic_Gbps == 400);
    CHECK(h.inter_node_GBps_per_gpu() == doctest::Approx(2 * a.inter_node_GBps_per_gpu()));
    CHECK(a.description.find("default") != std::string::npos);
  }
  SUBCASE("a PCIe-only part uses its PCIe bandwidth inside the node") {
    GpuSpec g = test::catalog().gpu("a100-80gb");
    g.nvlink_GBps = 0;
    CHECK(default_cluster_for(g).intra_node_GBps == g.pcie_GBps);
  }
}
}
