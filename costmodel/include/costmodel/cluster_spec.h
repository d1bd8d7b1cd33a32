#pragma once
// The network and packaging part of the system description: a two-level topology, an NVLink (or
// PCIe) domain of gpus_per_node GPUs, then the inter-node fabric through the node's NICs.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/gpu_spec.h"

namespace strata {

struct ClusterSpec {
  std::string name;
  std::vector<std::string> aliases;
  std::string description;
  GpuSpec gpu;
  int gpus_per_node = 8;            // size of the NVLink domain
  double intra_node_GBps = 0;       // per GPU, per direction
  double intra_node_latency_us = 3;
  int nics_per_node = 8;
  double nic_Gbps = 200;
  double inter_node_latency_us = 5;
  std::optional<double> price_per_gpu_hour_usd;  // a default guess unless the user gave one
  std::string price_source;
  std::optional<double> carbon_intensity_g_per_kWh;
  double pue = 1.2;
  double host_power_W_per_node = 0;
  // The node's host (CPU) memory, where offloaded activations and optimizer state go; 0: not known.
  double host_memory_GiB_per_node = 0;
  double host_memory_GiB_per_gpu() const { return gpus_per_node > 0 ? host_memory_GiB_per_node / gpus_per_node : 0.0; }

  // Per-GPU share of the node's inter-node bandwidth, per direction, in GB/s (rail-optimized:
  // every GPU reaches the fabric through its share of the node's NICs).
  double inter_node_GBps_per_gpu() const {
    return nics_per_node * nic_Gbps / 8.0 / gpus_per_node;
  }
  bool operator==(const ClusterSpec&) const = default;
};

// gpu_lookup resolves the "gpu" field (an id) of a cluster file.
// `path`: the JSON path of the object inside its file ("" at the top, "/cluster" in a plan).
ClusterSpec cluster_from_json(const nlohmann::json& j, const std::string& where, const GpuSpec& gpu,
                              const std::string& path = "");
nlohmann::json cluster_to_json(const ClusterSpec& c);
// A generic cluster around a GPU when no preset is named: NVLink domain of 8 (or PCIe), 8x 400 Gb/s
// NICs for Hopper and newer, 8x 200 Gb/s for Ampere. The description says it is a default.
ClusterSpec default_cluster_for(const GpuSpec& gpu);

}  // namespace strata
