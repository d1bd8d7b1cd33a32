#pragma once
// How strata reads the hardware of a published-run record: the GPU part and memory size, the
// cluster preset and the network as records word them ("8x NDR400", "3.2 Tbps per node", "4x 400
// Gb/s ConnectX-7 per compute tray"). Internal to the formats library (validation_runs.cpp).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "costmodel/catalog.h"
#include "costmodel/cluster_spec.h"

namespace strata::record {

// The cluster a record ran on: its GPU (gpu_type, gpu_memory_gb), the catalog's cluster preset of that
// GPU, the NVLink domain (nvlink_domain, else gpus_per_node) and the network its interconnect field states.
// What is assumed is added to `assumptions`.
ClusterSpec cluster_from_record(const nlohmann::json& r, const std::string& where, const Catalog& catalog,
                                std::vector<std::string>& assumptions);

}  // namespace strata::record
