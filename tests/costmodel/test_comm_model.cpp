#include <doctest/doctest.h>

#include "costmodel/comm_model.h"
#include "test_util.h"

using namespace strata;

TEST_SUITE("costmodel") {
TEST_CASE("place_group") {
  SUBCASE("tp = 8 with stride 1 fills one 8-GPU node") {
    GroupPlacement g = place_group(8, 1, 8);
    CHECK(g.size == 8);
    CHECK(g.ranks_per_node == 8);
    CHECK_FALSE(g.spans_nodes());
  }
  SUBCASE("a small tp group sits inside a node") {
    CHECK(place_group(2, 1, 8).ranks_per_node == 2);
    CHECK_FALSE(place_group(2, 1, 8).spans_nodes());
  }
  SUBCASE("dp after tp = 8 has one rank per node") {
    GroupPlacement g = place_group(64, 8, 8);
    CHECK(g.ranks_per_node == 1);
    CHECK(g.spans_nodes());
    CHECK(place_group(64, 16, 8).ranks_per_node == 1);
  }
  SUBCASE("dp after tp = 2 has 8/2 = 4 ranks per node") {
    GroupPlacement g = place_group(16, 2, 8);
    CHECK(g.ranks_per_node == 4);
    CHECK(g.spans_nodes());
    // ... unless the group is smaller than that.
    CHECK(place_group(2, 2, 8).ranks_per_node == 2);
    CHECK_FALSE(place_group(2, 2, 8).spans_nodes());
  }
  SUBCASE("a size-1 group") { CHECK_FALSE(place_group(1, 8, 8).spans_nodes()); }
}

TEST_CASE("CommModel::all_reduce") {
  const ClusterSpec cl = test::catalog().cluster("dgx-a100-hdr");
  const CommCoefficients cc;
  const CommModel comm(cl, cc);
  const GroupPlacement intra = place_group(8, 1, 8), inter = place_group(64, 8, 8), mixed = place_group(32, 2, 8);

  SUBCASE("zero for a single rank or an empty buffer") {
    CHECK(comm.all_reduce(1e9, place_group(1, 1, 8)) == 0);
    CHECK(comm.all_gather(1e9, place_group(1, 1, 8)) == 0);
    CHECK(comm.reduce_scatter(1e9, place_group(1, 1, 8)) == 0);
    CHECK(comm.all_to_all(1e9, place_group(1, 1, 8)) == 0);
    CHECK(comm.all_reduce(0, intra) == 0);
  }
  SUBCASE("all-reduce moves twice the bytes of an all-gather: the bandwidth terms differ by exactly 2") {
    // Ring all-reduce = reduce-scatter + all-gather: 2(n-1)/n * S vs (n-1)/n * S per rank
    // (Thakur et al. 2005; nccl-tests PERFORMANCE.md bus bandwidth). Differences of two sizes
    // cancel the latency terms.
    for (GroupPlacement g : {intra, inter, mixed}) {
      CAPTURE(g.size);
      const double B = 256.0 * 1024 * 1024;
      const double ar = comm.all_reduce(2 * B, g) - comm.all_reduce(B, g);
      const double ag = comm.all_gather(2 * B, g) - comm.all_gather(B, g);
      CHECK(ar == doctest::Approx(2 * ag).epsilon(1e-9));
      // And that difference is (n-1)/n * B at the bus bandwidth.
      const double n = g.size;
      CHECK(ag == doctest::Approx((n - 1) / n * B / comm.bus_bandwidth(g)).epsilon(1e-9));
      // For a large message the whole times are in the ratio 2.
      CHECK(comm.all_reduce(16e9, g) / comm.all_gather(16e9, g) == doctest::Approx(2.0).epsilon(0.01));
    }
  }
  SUBCASE("reduce-scatter costs the same as all-gather") {
    CHECK(comm.reduce_scatter(1e8, inter) == comm.all_gather(1e8, inter));
  }
  SUBCASE("intra-node is faster than inter-node for the same group size") {
    const GroupPlacement eight_nodes = place_group(8, 8, 8);
    CHECK(eight_nodes.spans_nodes());
    for (double bytes : {1e4, 1e6, 1e8, 1e10}) {
      CAPTURE(bytes);
      CHECK(comm.all_reduce(bytes, intra) < comm.all_reduce(bytes, eight_nodes));
      CHECK(comm.all_gather(bytes, intra) < comm.all_gather(bytes, eight_nodes));
      CHECK(comm.p2p(bytes, false) < comm.p2p(bytes, true));
    }
  }
  SUBCASE("small messages reach less bandwidth than large ones") {
    const double small = 64 * 1024, large = 1024.0 * 1024 * 1024;
    CHECK(comm.all_reduce(small, inter) / small > comm.all_reduce(large, inter) / large);
  }
  SUBCASE("time grows with the group size at a fixed message") {
    CHECK(comm.all_reduce(1e9, place_group(4, 1, 8)) < comm.all_reduce(1e9, place_group(8, 1, 8)));
    CHECK(comm.all_gather(1e9, place_group(16, 8, 8)) < comm.all_gather(1e9, place_group(256, 8, 8)));
  }
}

TEST_CASE("CommModel::bus_bandwidth") {
  const ClusterSpec cl = test::catalog().cluster("dgx-a100-hdr");
  const CommCoefficients cc;
  const CommModel comm(cl, cc);
  SUBCASE("inside a node: the NVLink rate times its efficiency") {
    CHECK(comm.bus_bandwidth(place_group(8, 1, 8)) == doctest::Approx(cl.intra_node_GBps * 1e9 * cc.nvlink_efficiency));
  }
  SUBCASE("across nodes it scales with the ranks per node (their share of the rail NICs)") {
    const double one = comm.bus_bandwidth(GroupPlacement{64, 1});
    CHECK(one == doctest::Approx(cl.inter_node_GBps_per_gpu() * 1e9 * cc.network_efficiency));
    for (int k : {2, 4, 8}) {
      CAPTURE(k);
      CHECK(comm.bus_bandwidth(GroupPlacement{64, k}) == doctest::Approx(k * one).epsilon(1e-12));
    }
  }
  SUBCASE("and is capped by NVLink when the NICs are faster") {
    ClusterSpec fat = cl;
    fat.nic_Gbps = 100000;
    const CommModel c2(fat, cc);
    CHECK(c2.bus_bandwidth(GroupPlacement{64, 8}) == doctest::Approx(c2.bus_bandwidth(place_group(8, 1, 8))));
  }
}

TEST_CASE("CommModel::p2p") {
  const ClusterSpec cl = test::catalog().cluster("dgx-a100-hdr");
  const CommCoefficients cc;
  const CommModel comm(cl, cc);
  CHECK(comm.p2p(0, true) == 0);
  // Bandwidth term linear in bytes: the difference of two sizes is B / (per-GPU NIC share * efficiency).
  const double B = 1e8;
  CHECK(comm.p2p(2 * B, true) - comm.p2p(B, true) ==
        doctest::Approx(B / (cl.inter_node_GBps_per_gpu() * 1e9 * cc.network_efficiency)).epsilon(1e-9));
  CHECK(comm.p2p(2 * B, false) - comm.p2p(B, false) ==
        doctest::Approx(B / (cl.intra_node_GBps * 1e9 * cc.nvlink_efficiency)).epsilon(1e-9));
}

TEST_CASE("CommModel::all_to_all") {
  const CommModel comm(test::catalog().cluster("dgx-h100-ndr"), CommCoefficients{});
  CHECK(comm.all_to_all(1e8, place_group(8, 1, 8)) > 0);
  CHECK(comm.all_to_all(1e8, place_group(8, 1, 8)) < comm.all_to_all(1e8, place_group(8, 8, 8)));
  CHECK(comm.all_to_all(2e8, place_group(8, 1, 8)) > comm.all_to_all(1e8, place_group(8, 1, 8)));
}
}

TEST_SUITE("costmodel") {
TEST_CASE("CommModel::all_to_all_two_level: off-node bytes go through the GPU's own NIC, on-node bytes over NVLink at once") {
  const ClusterSpec cl = test::catalog().cluster("dgx-h100-ndr");
  const CommCoefficients cc{};
  const CommModel comm(cl, cc);
  const GroupPlacement two_nodes = place_group(16, 1, 8);
  const double B = 1e9;  // large: the message-size efficiency is ~1
  const double nic = cl.inter_node_GBps_per_gpu() * 1e9 * cc.network_efficiency;
  const double t = comm.all_to_all_two_level(0.1 * B, B, two_nodes);
  // The NIC share decides: B / nic, not B / (8 NICs of the node).
  CHECK(t == doctest::Approx(B / nic).epsilon(0.02));
  CHECK(comm.all_to_all_two_level(0.1 * B, 2 * B, two_nodes) > 1.9 * t);
  // Uniform traffic over 16 ranks on 2 nodes: half the bytes leave the node.
  CHECK(comm.all_to_all(2 * B, two_nodes) == doctest::Approx(comm.all_to_all_two_level(2 * B * 7 / 16, 2 * B * 8 / 16, two_nodes)));
}
}
