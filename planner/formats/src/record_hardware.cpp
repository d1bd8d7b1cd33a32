#include "record_hardware.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <optional>
#include <regex>

#include <fmt/format.h>

#include "costmodel/errors.h"
#include "costmodel/json_reader.h"
#include "record_text.h"

namespace strata::record {

namespace {

// The GPU a record's gpu_type names ("NVIDIA B200", "A100-SXM4 (..., 40GB)"), with the memory size
// gpu_memory_gb or the text states; an unknown part or size is refused, naming the field.
GpuSpec resolve_gpu(const std::string& text, std::optional<double> memory_gb, const Catalog& catalog,
                    std::vector<std::string>& assumptions, const std::string& where) {
  if (memory_gb && (!std::isfinite(*memory_gb) || *memory_gb <= 0 || *memory_gb > 1e5))
    throw InputError(where, "/gpu_memory_gb", "expected a positive number of GB (at most 100000)");
  std::string base = text.substr(0, text.find('('));
  while (!base.empty() && std::isspace(static_cast<unsigned char>(base.back()))) base.pop_back();
  // The vendor, the system or a GPU count before the part ("NVIDIA B200", "DGX B200", "AMD Instinct
  // MI300X", "8x H100 SXM"): the part is what names the GPU.
  static const std::regex vendor_re("^(([0-9]+\\s*x|nvidia|amd|dgx|hgx|tesla|instinct)[\\s_-]+)+", std::regex::icase);
  base = std::regex_replace(base, vendor_re, "");
  // The memory size, when the record states it: gpu_memory_gb, else "NN GB" in the free text
  // ("A100-SXM4 (DGX-A100, 2020; ... likely 40GB)").
  static const std::regex mem_re("([0-9]+)\\s*GB", std::regex::icase);
  std::smatch m;
  std::optional<double> mem = memory_gb;
  if (!mem && std::regex_search(text, m, mem_re)) mem = number_in_text(m[1].str(), 1, 100000, where, "gpu_type", text);
  auto unknown = [&](const std::string& detail) {
    return InputError(where, "/gpu_type", "unknown GPU type \"" + text + "\"" + detail + "; `strata list gpus` shows the known ones");
  };
  std::optional<GpuSpec> gpu;
  try {
    gpu = catalog.gpu(base);
  } catch (const InputError&) {
  }
  // A name that resolves to a part of another memory size ("A100" is the 80GB part) is read as
  // its family plus the stated size.
  if (gpu && mem && std::fabs(gpu->memory_GiB - *mem) / *mem <= 0.1) return *gpu;
  std::string family = lower(base.substr(0, base.find_first_of("- ")));
  if (family.empty()) throw unknown("");
  // A variant the catalog does not know ("H100 NVL", "H200 NVL", "H100 PCIe" where no such part is
  // listed) is another GPU (clocks, power, links), never its family's SXM part.
  if (!gpu && (contains(base, "nvl") || contains(base, "pcie")))
    throw unknown(" (a variant of " + family + " that strata does not list; its SXM part is another GPU)");
  const bool mem_stated = mem.has_value();
  if (!mem) {
    if (gpu) {
      if (normalize_name(base) != normalize_name(gpu->name))
        assumptions.push_back("GPU memory size not stated; assumed " + gpu->name);
      return *gpu;
    }
    mem = 80;
    assumptions.push_back("GPU memory size not stated; assumed " + family + " 80GB");
  }
  try {
    return catalog.gpu(family + "-" + std::to_string(static_cast<int>(*mem)) + "gb");
  } catch (const InputError&) {
    // Neither the name nor its family with the assumed size is a known part: say only that (the
    // assumed 80 GB is not the record's). Otherwise the name resolved, but to a part of another
    // memory size than the record states: another part.
    if (!gpu && !mem_stated) throw unknown("");
    throw unknown(" (no " + family + " part with " + std::to_string(static_cast<int>(*mem)) + " GB is known)");
  }
}

// GPUs in one compute tray of an NVL72 rack (GB200/GB300: 18 trays of 4 GPUs, NVIDIA GB200 NVL72
// datasheet): the unit a rack's NIC counts are quoted per.
constexpr int kGpusPerNvl72Tray = 4;

// Rates a record writes as InfiniBand generations after a port count ("8x NDR400", "4x HDR",
// "8x ConnectX-7 NDR": EDR 100, HDR 200, NDR 400, XDR 800 Gb/s per port, the InfiniBand Trade
// Association's roadmap), in Tb/s ("3.2 Tbps per node") or as Ethernet port speeds ("8x400GbE",
// "25GbE"), rewritten in Gb/s for the patterns of apply_interconnect.
std::string rates_in_gbps(const std::string& text) {
  static const std::regex ib_re("([0-9]+)\\s*x\\s*([A-Za-z0-9 -]*?)\\b(EDR|HDR|NDR|XDR)(?:100|200|400|800)?\\b", std::regex::icase);
  static const std::regex tbps_re("([0-9]{1,6}(?:\\.[0-9]{1,6})?)\\s*(?:Tb/s|Tbps|Tbit/s)", std::regex::icase);
  static const std::regex gbe_re("([0-9]{1,6})\\s*(?:GbE|GigE|G Ethernet)\\b", std::regex::icase);
  std::string out;
  auto rewrite = [&](const std::string& in, const std::regex& re, auto&& replacement) {
    std::string result;
    auto last = in.cbegin();
    for (auto it = std::sregex_iterator(in.begin(), in.end(), re); it != std::sregex_iterator(); ++it) {
      result.append(last, (*it)[0].first);
      result += replacement(*it);
      last = (*it)[0].second;
    }
    result.append(last, in.cend());
    return result;
  };
  out = rewrite(text, ib_re, [](const std::smatch& m) {
    const std::string gen = lower(m[3].str());
    const int rate = gen == "edr" ? 100 : gen == "hdr" ? 200 : gen == "ndr" ? 400 : 800;
    return m[1].str() + "x (" + std::to_string(rate) + " Gb/s) " + m[2].str();
  });
  out = rewrite(out, tbps_re, [](const std::smatch& m) {
    return fmt::format("{:.0f} Gb/s", std::stod(m[1].str()) * 1000);
  });
  return rewrite(out, gbe_re, [](const std::smatch& m) { return m[1].str() + " Gb/s Ethernet"; });
}

// The fastest single port the configs' NICs have (InfiniBand XDR, 800G Ethernet): a bare rate
// above it can only be a node's total.
constexpr double kFastestPortGbps = 800;

// The inter-node links (NICs per node and their rate) and the intra-node rate a record's
// interconnect field states, onto the cluster; the preset's, reported as assumed, where it states none.
void apply_interconnect(const std::string& record_text, ClusterSpec& c, std::vector<std::string>& assumptions, const std::string& where) {
  const std::string text = rates_in_gbps(record_text);
  // "8x200 Gb/s HCAs per node", "4x OmniPath (100 Gb/s) per node", "inter-node 800 Gb/s per node",
  // "1600 Gb/s node-node RoCE", "intra-node 150 GB/s", "4x 400Gbps", "InfiniBand XDR 800 Gb/s per
  // GPU", "4x 400 Gb/s ConnectX-7 per compute tray (one per GPU)".
  static const std::string gbps = "\\s*(?:Gb/s|Gbps|Gbit/s)";
  static const std::regex nics_re("([0-9]+)\\s*x\\s*[A-Za-z -]*\\(?\\s*([0-9]+)" + gbps, std::regex::icase);
  static const std::regex node_re("inter-node\\s*([0-9]+)" + gbps + "|([0-9]+)" + gbps +
                                      "[^;,]*?(?:per node|node-node|node-to-node|per instance|per VM|per host|per server)",
                                  std::regex::icase);
  static const std::regex bare_re("([0-9]+)" + gbps, std::regex::icase);
  static const std::regex per_gpu_re("([0-9]+)" + gbps + "[^;,]*?(?:per GPU|each GPU)|one per GPU|1 per GPU", std::regex::icase);
  static const std::regex intra_re("intra-node\\s*([0-9]+)\\s*GB/s", std::regex::icase);
  std::smatch m;
  const bool per_gpu = std::regex_search(text, m, per_gpu_re);
  const std::string per_gpu_rate = per_gpu && m[1].matched ? m[1].str() : "";
  if (std::regex_search(text, m, nics_re)) {
    c.nics_per_node = static_cast<int>(number_in_text(m[1].str(), 1, 1024, where, "interconnect", text));
    c.nic_Gbps = number_in_text(m[2].str(), 1, 1e6, where, "interconnect", text);
    if (per_gpu) {
      c.nics_per_node = c.gpus_per_node;  // "(one per GPU)": the count describes a part of the node
    } else if (contains(text, "per tray") || contains(text, "per compute tray")) {
      c.nics_per_node = std::max(1, c.nics_per_node * c.gpus_per_node / kGpusPerNvl72Tray);
      assumptions.push_back(fmt::format("NICs quoted per compute tray: {} GPUs per tray (NVL72), {} NICs per {}-GPU NVLink domain",
                                        kGpusPerNvl72Tray, c.nics_per_node, c.gpus_per_node));
    }
  } else if (!per_gpu_rate.empty()) {
    c.nics_per_node = c.gpus_per_node;
    c.nic_Gbps = number_in_text(per_gpu_rate, 1, 1e6, where, "interconnect", text);
  } else if (std::regex_search(text, m, node_re)) {
    c.nics_per_node = 1;
    c.nic_Gbps = number_in_text(m[m[1].matched ? 1 : 2].str(), 1, 1e6, where, "interconnect", text);
  } else if (std::regex_search(text, m, bare_re)) {
    // A rate with no count and no "per node" or "per GPU" ("EFA v2 3200 Gbps", "400 Gb/s
    // InfiniBand"): above any single port it is the node's total; else one port's rate, on the
    // preset's count of ports.
    const double rate = number_in_text(m[1].str(), 1, 1e6, where, "interconnect", text);
    if (rate > kFastestPortGbps) {
      c.nics_per_node = 1;
      c.nic_Gbps = rate;
      assumptions.push_back(fmt::format("interconnect {:g} Gb/s with no count: above any single port, read as the node's total", rate));
    } else {
      c.nic_Gbps = rate;
      assumptions.push_back(fmt::format("interconnect {:g} Gb/s with no count: read as each NIC's rate, {} NICs per node as {} has",
                                        rate, c.nics_per_node, c.name));
    }
  } else {
    assumptions.push_back("inter-node network not stated; assumed " + std::to_string(c.nics_per_node) + "x " +
                          std::to_string(static_cast<int>(c.nic_Gbps)) + " Gb/s per node (" + c.name + ")");
  }
  if (std::regex_search(text, m, intra_re)) c.intra_node_GBps = number_in_text(m[1].str(), 1, 1e6, where, "interconnect", text);
}

}  // namespace

ClusterSpec cluster_from_record(const nlohmann::json& r, const std::string& where, const Catalog& catalog,
                                std::vector<std::string>& assumptions) {
  JsonReader rd(r, where);
  const GpuSpec gpu = resolve_gpu(text_of(r, "gpu_type"), number_of(r, "gpu_memory_gb"), catalog, assumptions, where);
  ClusterSpec cluster = default_cluster_for(gpu);
  for (const auto& e : catalog.list("clusters")) {
    ClusterSpec c = catalog.cluster(e.path);
    if (c.gpu.name == gpu.name) {
      cluster = c;
      break;
    }
  }
  if (auto g = rd.opt_int("nvlink_domain", 1, 100000)) cluster.gpus_per_node = static_cast<int>(*g);
  else if (auto g2 = rd.opt_int("gpus_per_node", 1, 100000)) cluster.gpus_per_node = static_cast<int>(*g2);
  apply_interconnect(text_of(r, "interconnect"), cluster, assumptions, where);
  return cluster;
}

}  // namespace strata::record
