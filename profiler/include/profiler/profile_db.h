#pragma once
// The profile database: one JSON file per measurement session (`strata profile`, `strata trace`),
// holding the device, software versions, how and when it was measured, the ops that were run and
// every activity record. `strata calibrate` reads it.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/kernel_record.h"

namespace strata::profiler {

struct DeviceInfo {
  int index = 0;
  std::string name;  // as the driver reports it ("NVIDIA H100 80GB HBM3")
  std::string pci_bus_id;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int sm_count = 0;
  double memory_GiB = 0;
  double sm_clock_MHz = 0;      // peak SM clock reported by the driver
  double memory_clock_MHz = 0;  // peak memory clock
  int memory_bus_width_bits = 0;
  double l2_MiB = 0;
  // Per-SM limits, for occupancy (how many CTAs of a kernel fit on one SM).
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  int registers_per_sm = 65536;
  int shared_bytes_per_sm = 228 * 1024;
  bool operator==(const DeviceInfo&) const = default;
};

struct ProfileDb {
  static constexpr int kSchemaVersion = 1;
  std::string tool;         // "strata profile", "strata trace"
  std::string suite;        // "full", "quick", "trace", "synthetic", "pytorch-sdpa"
  std::string measured_at;  // ISO 8601 UTC
  std::string host;
  std::string command;  // the command line that produced it
  int driver_version = 0;   // CUDA driver API version (e.g. 13000)
  int runtime_version = 0;  // CUDA runtime version
  int cupti_version = 0;
  std::string cublas_version;
  std::string nccl_version;
  int warmup = 0;        // untimed launches before the recorded ones
  int repetitions = 0;   // recorded launches per op (upper bound)
  std::uint64_t dropped_records = 0;  // activity records CUPTI could not store
  std::vector<DeviceInfo> devices;
  std::vector<OpLabel> ops;
  std::vector<KernelRecord> records;
  std::vector<std::string> notes;
  bool operator==(const ProfileDb&) const = default;
};

nlohmann::json profile_to_json(const ProfileDb& p);
ProfileDb profile_from_json(const nlohmann::json& j, const std::string& where);
ProfileDb load_profile(const std::string& path);
void save_profile(const ProfileDb& p, const std::string& path);  // throws InputError when unwritable

// Current UTC time as ISO 8601 ("2026-11-22T09:14:03Z").
std::string utc_now_iso8601();

}  // namespace strata::profiler
