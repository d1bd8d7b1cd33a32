#include "costmodel/cluster_spec.h"

#include "costmodel/json_reader.h"

namespace strata {

ClusterSpec cluster_from_json(const json& j, const std::string& where, const GpuSpec& gpu, const std::string& path) {
  JsonReader r(j, where, path);
  r.reject_unknown_keys({"name", "aliases", "description", "gpu", "gpus_per_node", "intra_node_GBps",
                         "intra_node_latency_us", "nics_per_node", "nic_Gbps", "inter_node_latency_us",
                         "price_per_gpu_hour_usd", "price_source", "carbon_intensity_g_per_kWh", "pue",
                         "host_power_W_per_node", "host_memory_GiB", "sources", "notes", "num_nodes"});
  ClusterSpec c;
  c.name = r.get_string("name");
  c.aliases = r.opt_string_list("aliases");
  c.description = r.opt_string("description").value_or("");
  c.gpu = gpu;
  c.gpus_per_node = static_cast<int>(r.get_int("gpus_per_node", 1, 100000));
  c.intra_node_GBps = r.get_positive("intra_node_GBps", 1e6);
  c.intra_node_latency_us = r.opt_positive("intra_node_latency_us", 1e6).value_or(3.0);
  c.nics_per_node = static_cast<int>(r.get_int("nics_per_node", 1, 100000));
  c.nic_Gbps = r.get_positive("nic_Gbps", 1e6);
  c.inter_node_latency_us = r.opt_positive("inter_node_latency_us", 1e6).value_or(5.0);
  if (r.has("price_per_gpu_hour_usd")) c.price_per_gpu_hour_usd = r.get_positive("price_per_gpu_hour_usd", 1e6);
  c.price_source = r.opt_string("price_source").value_or("");
  if (r.has("carbon_intensity_g_per_kWh")) c.carbon_intensity_g_per_kWh = r.get_positive("carbon_intensity_g_per_kWh", 1e5);
  // Power usage effectiveness is facility power / IT power: 1 at best (all power reaches the IT
  // equipment), never below; the same 1..5 range as whatif --pue.
  c.pue = r.opt_number("pue").value_or(1.2);
  if (!(c.pue >= 1 && c.pue <= 5)) r.fail("pue", "expected a power usage effectiveness between 1 and 5, found " + r.raw("pue").dump());
  c.host_power_W_per_node = r.has("host_power_W_per_node") ? r.get_number("host_power_W_per_node") : 0;
  if (c.host_power_W_per_node < 0 || c.host_power_W_per_node > 1e6)
    r.fail("host_power_W_per_node", "expected a non-negative number of W per node, at most 1000000");
  c.host_memory_GiB_per_node = r.has("host_memory_GiB") ? r.get_number("host_memory_GiB") : 0;
  if (!(c.host_memory_GiB_per_node >= 0 && c.host_memory_GiB_per_node <= 1e7))
    r.fail("host_memory_GiB", "expected a non-negative number of GiB of host memory per node, at most 10000000");
  return c;
}

json cluster_to_json(const ClusterSpec& c) {
  json j = {{"name", c.name},
            {"aliases", c.aliases},
            {"description", c.description},
            {"gpu", c.gpu.name},
            {"gpus_per_node", c.gpus_per_node},
            {"intra_node_GBps", c.intra_node_GBps},
            {"intra_node_latency_us", c.intra_node_latency_us},
            {"nics_per_node", c.nics_per_node},
            {"nic_Gbps", c.nic_Gbps},
            {"inter_node_latency_us", c.inter_node_latency_us},
            {"pue", c.pue},
            {"host_power_W_per_node", c.host_power_W_per_node}};
  if (c.price_per_gpu_hour_usd) j["price_per_gpu_hour_usd"] = *c.price_per_gpu_hour_usd;
  if (!c.price_source.empty()) j["price_source"] = c.price_source;
  if (c.carbon_intensity_g_per_kWh) j["carbon_intensity_g_per_kWh"] = *c.carbon_intensity_g_per_kWh;
  if (c.host_memory_GiB_per_node > 0) j["host_memory_GiB"] = c.host_memory_GiB_per_node;
  return j;
}

ClusterSpec default_cluster_for(const GpuSpec& gpu) {
  ClusterSpec c;
  c.gpu = gpu;
  c.name = "generic-" + gpu.name;
  bool newer = gpu.architecture == "hopper" || gpu.architecture == "blackwell" || gpu.architecture == "cdna3" ||
               gpu.architecture == "cdna4";
  c.gpus_per_node = 8;
  c.intra_node_GBps = gpu.nvlink_GBps > 0 ? gpu.nvlink_GBps : gpu.pcie_GBps;
  c.nics_per_node = 8;
  c.nic_Gbps = newer ? 400 : 200;
  c.description = "default cluster (no preset named): 8 GPUs per node, " + std::to_string(c.nics_per_node) + "x " +
                  std::to_string(static_cast<int>(c.nic_Gbps)) + " Gb/s NICs per node";
  return c;
}

}  // namespace strata
