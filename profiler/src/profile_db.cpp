#include "profiler/profile_db.h"

#include <ctime>


#include "costmodel/errors.h"
#include "costmodel/file_io.h"
#include "costmodel/json_reader.h"

namespace strata::profiler {

namespace {

nlohmann::json device_to_json(const DeviceInfo& d) {
  return {{"index", d.index},
          {"name", d.name},
          {"pci_bus_id", d.pci_bus_id},
          {"compute_capability", std::to_string(d.compute_capability_major) + "." + std::to_string(d.compute_capability_minor)},
          {"sm_count", d.sm_count},
          {"memory_GiB", d.memory_GiB},
          {"sm_clock_MHz", d.sm_clock_MHz},
          {"memory_clock_MHz", d.memory_clock_MHz},
          {"memory_bus_width_bits", d.memory_bus_width_bits},
          {"l2_MiB", d.l2_MiB},
          {"max_threads_per_sm", d.max_threads_per_sm},
          {"max_blocks_per_sm", d.max_blocks_per_sm},
          {"registers_per_sm", d.registers_per_sm},
          {"shared_bytes_per_sm", d.shared_bytes_per_sm}};
}

DeviceInfo device_from_json(const nlohmann::json& j, const std::string& where, const std::string& path) {
  JsonReader r(j, where, path);
  r.reject_unknown_keys({"index", "name", "pci_bus_id", "compute_capability", "sm_count", "memory_GiB", "sm_clock_MHz",
                         "memory_clock_MHz", "memory_bus_width_bits", "l2_MiB", "max_threads_per_sm",
                         "max_blocks_per_sm", "registers_per_sm", "shared_bytes_per_sm"});
  DeviceInfo d;
  d.index = static_cast<int>(r.opt_int("index", 0, 1 << 20).value_or(0));
  d.name = r.get_string("name");
  d.pci_bus_id = r.opt_string("pci_bus_id").value_or("");
  if (auto cc = r.opt_string("compute_capability")) {
    auto dot = cc->find('.');
    try {
      d.compute_capability_major = std::stoi(cc->substr(0, dot));
      d.compute_capability_minor = dot == std::string::npos ? 0 : std::stoi(cc->substr(dot + 1));
    } catch (const std::exception&) {
      r.fail("compute_capability", "expected \"major.minor\", e.g. \"9.0\"");
    }
  }
  d.sm_count = static_cast<int>(r.get_int("sm_count", 1, 100000));
  d.memory_GiB = r.opt_number("memory_GiB").value_or(0);
  d.sm_clock_MHz = r.opt_number("sm_clock_MHz").value_or(0);
  d.memory_clock_MHz = r.opt_number("memory_clock_MHz").value_or(0);
  d.memory_bus_width_bits = static_cast<int>(r.opt_int("memory_bus_width_bits", 0, 1 << 20).value_or(0));
  d.l2_MiB = r.opt_number("l2_MiB").value_or(0);
  d.max_threads_per_sm = static_cast<int>(r.opt_int("max_threads_per_sm", 1, 1 << 20).value_or(2048));
  d.max_blocks_per_sm = static_cast<int>(r.opt_int("max_blocks_per_sm", 1, 1 << 20).value_or(32));
  d.registers_per_sm = static_cast<int>(r.opt_int("registers_per_sm", 1, 1 << 24).value_or(65536));
  d.shared_bytes_per_sm = static_cast<int>(r.opt_int("shared_bytes_per_sm", 1, 1 << 30).value_or(228 * 1024));
  return d;
}

}  // namespace

nlohmann::json profile_to_json(const ProfileDb& p) {
  nlohmann::json devices = nlohmann::json::array(), ops = nlohmann::json::array(), records = nlohmann::json::array();
  for (const auto& d : p.devices) devices.push_back(device_to_json(d));
  for (const auto& o : p.ops) ops.push_back(op_to_json(o));
  for (const auto& r : p.records) records.push_back(record_to_json(r));
  return {{"schema_version", ProfileDb::kSchemaVersion},
          {"tool", p.tool},
          {"suite", p.suite},
          {"measured_at", p.measured_at},
          {"host", p.host},
          {"command", p.command},
          {"software",
           {{"cuda_driver_version", p.driver_version},
            {"cuda_runtime_version", p.runtime_version},
            {"cupti_version", p.cupti_version},
            {"cublas_version", p.cublas_version},
            {"nccl_version", p.nccl_version}}},
          {"method", {{"warmup", p.warmup}, {"repetitions", p.repetitions}, {"dropped_records", p.dropped_records}}},
          {"devices", devices},
          {"notes", p.notes},
          {"ops", ops},
          {"records", records}};
}

ProfileDb profile_from_json(const nlohmann::json& j, const std::string& where) {
  JsonReader r(j, where);
  r.reject_unknown_keys({"schema_version", "tool", "suite", "measured_at", "host", "command", "software", "method",
                         "devices", "notes", "ops", "records"});
  ProfileDb p;
  auto version = r.get_int("schema_version", 1, 1000);
  if (version != ProfileDb::kSchemaVersion)
    r.fail("schema_version", "expected " + std::to_string(ProfileDb::kSchemaVersion) + " (this strata reads profile schema 1)");
  p.tool = r.opt_string("tool").value_or("");
  p.suite = r.opt_string("suite").value_or("");
  p.measured_at = r.opt_string("measured_at").value_or("");
  p.host = r.opt_string("host").value_or("");
  p.command = r.opt_string("command").value_or("");
  if (r.has("software")) {
    JsonReader s = r.child("software");
    s.reject_unknown_keys({"cuda_driver_version", "cuda_runtime_version", "cupti_version", "cublas_version", "nccl_version"});
    p.driver_version = static_cast<int>(s.opt_int("cuda_driver_version", 0, 1 << 30).value_or(0));
    p.runtime_version = static_cast<int>(s.opt_int("cuda_runtime_version", 0, 1 << 30).value_or(0));
    p.cupti_version = static_cast<int>(s.opt_int("cupti_version", 0, 1 << 30).value_or(0));
    p.cublas_version = s.opt_string("cublas_version").value_or("");
    p.nccl_version = s.opt_string("nccl_version").value_or("");
  }
  if (r.has("method")) {
    JsonReader m = r.child("method");
    m.reject_unknown_keys({"warmup", "repetitions", "dropped_records"});
    p.warmup = static_cast<int>(m.opt_int("warmup", 0, 1 << 20).value_or(0));
    p.repetitions = static_cast<int>(m.opt_int("repetitions", 0, 1 << 20).value_or(0));
    p.dropped_records = static_cast<std::uint64_t>(m.opt_int("dropped_records", 0, INT64_MAX).value_or(0));
  }
  auto array_of = [&](std::string_view key) -> const nlohmann::json& {
    static const nlohmann::json empty = nlohmann::json::array();
    if (!r.has(key)) return empty;
    const auto& v = r.raw(key);
    if (!v.is_array()) r.fail(key, "expected an array");
    return v;
  };
  const auto& devices = array_of("devices");
  for (std::size_t i = 0; i < devices.size(); ++i) p.devices.push_back(device_from_json(devices[i], where, "/devices/" + std::to_string(i)));
  p.notes = r.opt_string_list("notes");
  const auto& ops = array_of("ops");
  for (std::size_t i = 0; i < ops.size(); ++i) p.ops.push_back(op_from_json(ops[i], where, "/ops/" + std::to_string(i)));
  const auto& records = array_of("records");
  p.records.reserve(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    std::string path = "/records/" + std::to_string(i);
    KernelRecord k = record_from_json(records[i], where, path);
    if (k.op_index >= static_cast<int>(p.ops.size()))
      throw InputError(where, path + "/op", "expected an index into /ops (0.." + std::to_string(p.ops.size()) + "), found " + std::to_string(k.op_index));
    p.records.push_back(std::move(k));
  }
  return p;
}

ProfileDb load_profile(const std::string& path) { return profile_from_json(load_json_file(path), path); }

void save_profile(const ProfileDb& p, const std::string& path) {
  write_output_file(path, profile_to_json(p).dump(1) + "\n", "--out");
}

std::string utc_now_iso8601() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace strata::profiler
