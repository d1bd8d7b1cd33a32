#pragma once
// Collectives on a two-level topology: an NVLink (or PCIe) domain of gpus_per_node GPUs, then the
// inter-node fabric. Bandwidth-optimal ring/tree costs (Thakur et al. 2005; NCCL's "bus bandwidth"
// convention, nccl-tests doc/PERFORMANCE.md) with a message-size-dependent efficiency.
#include "costmodel/calibration.h"
#include "costmodel/cluster_spec.h"

namespace strata {

// Where the ranks of one communicator sit. Megatron orders ranks tp, cp, (ep), dp, pp from the
// fastest-varying, so a group of `size` ranks with rank stride `stride` has this many members in
// each node.
struct GroupPlacement {
  int size = 1;
  int ranks_per_node = 1;
  bool spans_nodes() const { return size > ranks_per_node; }
};
GroupPlacement place_group(int size, int stride, int gpus_per_node);

class CommModel {
 public:
  CommModel(const ClusterSpec& cluster, const CommCoefficients& coeff);
  // `bytes` is the full buffer: the all-reduced tensor, the gathered output, the scattered input.
  double all_reduce(double bytes, GroupPlacement g) const;
  double all_gather(double bytes, GroupPlacement g) const;
  double reduce_scatter(double bytes, GroupPlacement g) const { return all_gather(bytes, g); }
  double all_to_all(double bytes_per_rank, GroupPlacement g) const;
  // An all-to-all whose per-rank traffic is split into bytes for peers on the same node (NVLink)
  // and bytes for peers on other nodes (the GPU's own NIC): the MoE token dispatch.
  double all_to_all_two_level(double intra_bytes, double inter_bytes, GroupPlacement g) const;
  double p2p(double bytes, bool inter_node) const;
  // Bus bandwidth (bytes/s) a large collective of this group reaches.
  double bus_bandwidth(GroupPlacement g) const;

 private:
  double effective_bandwidth(double bytes, GroupPlacement g) const;
  double latency_s(GroupPlacement g) const;
  // The numbers of the cluster's links the collectives use (not the whole ClusterSpec, whose names
  // and descriptions would be copied on every prediction).
  struct Links {
    double intra_node_GBps, intra_node_latency_us, inter_node_GBps_per_gpu, inter_node_latency_us;
  } cl_;
  CommCoefficients c_;
};

}  // namespace strata
