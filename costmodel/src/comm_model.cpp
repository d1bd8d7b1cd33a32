#include "costmodel/comm_model.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>

namespace strata {

GroupPlacement place_group(int size, int stride, int gpus_per_node) {
  assert(size >= 1 && stride >= 1 && gpus_per_node >= 1);
  GroupPlacement g;
  g.size = size;
  if (stride >= gpus_per_node) g.ranks_per_node = 1;
  else g.ranks_per_node = std::min(size, std::max(1, gpus_per_node / stride));
  return g;
}

CommModel::CommModel(const ClusterSpec& cluster, const CommCoefficients& coeff)
    : cl_{cluster.intra_node_GBps, cluster.intra_node_latency_us, cluster.inter_node_GBps_per_gpu(), cluster.inter_node_latency_us},
      c_(coeff) {}

double CommModel::bus_bandwidth(GroupPlacement g) const {
  const double intra = cl_.intra_node_GBps * 1e9 * c_.nvlink_efficiency;
  if (!g.spans_nodes()) return intra;
  // A group with k members per node gets k GPUs' share of the node's NICs (rail-optimized:
  // NCCL runs one ring/tree channel per NIC), and can go no faster than its NVLink hops.
  const double inter = g.ranks_per_node * cl_.inter_node_GBps_per_gpu * 1e9 * c_.network_efficiency;
  return std::min(intra, inter);
}

double CommModel::effective_bandwidth(double bytes, GroupPlacement g) const {
  // Small messages do not reach the bus bandwidth: protocol and pipelining overheads leave
  // about half of it at `half_bandwidth_bytes` (nccl-tests curves rise over 1-64 MiB).
  return bus_bandwidth(g) * bytes / (bytes + c_.half_bandwidth_bytes);
}

double CommModel::latency_s(GroupPlacement g) const {
  // Tree/ring hop latency: log2(n) steps (NCCL switches to trees at scale), each a link latency.
  const double hop = (g.spans_nodes() ? cl_.inter_node_latency_us : cl_.intra_node_latency_us) * 1e-6;
  // ceil(log2(n)) of an integer n >= 1 is the bit width of n - 1 (exact, and no libm call).
  return hop * std::bit_width(static_cast<unsigned>(std::max(1, g.size) - 1));
}

double CommModel::all_reduce(double bytes, GroupPlacement g) const {
  if (g.size <= 1 || bytes <= 0) return 0;
  const double n = g.size;
  return 2.0 * (n - 1) / n * bytes / effective_bandwidth(bytes, g) + 2.0 * latency_s(g);
}

double CommModel::all_gather(double bytes, GroupPlacement g) const {
  if (g.size <= 1 || bytes <= 0) return 0;
  const double n = g.size;
  // NCCL runs all-gather and reduce-scatter only as rings: n-1 steps, each paying a hop latency,
  // which dominates at thousands of ranks (no tree algorithm for these collectives).
  // The ring visits the group's members node by node: one inter-node hop per node, the rest
  // over NVLink.
  const double nodes = std::ceil(n / g.ranks_per_node);
  const double inter_hops = g.spans_nodes() ? nodes : 0;
  const double latency = (inter_hops * cl_.inter_node_latency_us + (n - 1 - inter_hops) * cl_.intra_node_latency_us) * 1e-6;
  return (n - 1) / n * bytes / effective_bandwidth(bytes, g) + latency;
}

double CommModel::all_to_all(double bytes_per_rank, GroupPlacement g) const {
  if (g.size <= 1 || bytes_per_rank <= 0) return 0;
  // Uniform traffic: each peer gets 1/n of the rank's bytes; those on other nodes go over the
  // network.
  const double n = g.size, local = std::min<double>(g.ranks_per_node, n);
  return all_to_all_two_level(bytes_per_rank * (local - 1) / n, bytes_per_rank * (n - local) / n, g);
}

double CommModel::all_to_all_two_level(double intra_bytes, double inter_bytes, GroupPlacement g) const {
  if (g.size <= 1 || intra_bytes + inter_bytes <= 0) return 0;
  // Unlike a ring, an all-to-all cannot borrow the other GPUs' NICs: each GPU sends its off-node
  // share through its own NIC (rail-optimized nodes: one NIC per GPU) while its on-node share
  // goes over NVLink at the same time; the slower of the two decides.
  auto eff = [&](double bytes) { return bytes / (bytes + c_.half_bandwidth_bytes); };
  const double nvlink = cl_.intra_node_GBps * 1e9 * c_.nvlink_efficiency;
  const double nic = cl_.inter_node_GBps_per_gpu * 1e9 * c_.network_efficiency;
  const double t_intra = intra_bytes > 0 ? intra_bytes / (nvlink * eff(intra_bytes)) : 0.0;
  const double t_inter = inter_bytes > 0 && g.spans_nodes() ? inter_bytes / (nic * eff(inter_bytes)) : 0.0;
  return std::max(t_intra, t_inter) + latency_s(g);
}

double CommModel::p2p(double bytes, bool inter_node) const {
  if (bytes <= 0) return 0;
  double bw = inter_node ? cl_.inter_node_GBps_per_gpu * 1e9 * c_.network_efficiency
                         : cl_.intra_node_GBps * 1e9 * c_.nvlink_efficiency;
  bw *= bytes / (bytes + c_.half_bandwidth_bytes);
  return bytes / bw + (inter_node ? cl_.inter_node_latency_us : cl_.intra_node_latency_us) * 1e-6;
}

}  // namespace strata
