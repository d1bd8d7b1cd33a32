#include "profiler/chrome_trace.h"

#include <algorithm>
#include <limits>
#include <set>

namespace strata::profiler {

nlohmann::json chrome_trace(const ProfileDb& p) {
  std::uint64_t t0 = std::numeric_limits<std::uint64_t>::max();
  for (const auto& r : p.records) t0 = std::min(t0, r.start_ns);
  if (p.records.empty()) t0 = 0;
  nlohmann::json events = nlohmann::json::array();
  std::set<int> devices;
  std::set<std::pair<int, std::uint32_t>> streams;
  for (const auto& r : p.records) {
    nlohmann::json args = {{"correlation", r.correlation_id}};
    if (r.kind == ActivityKind::kernel) {
      args["grid"] = {r.grid.x, r.grid.y, r.grid.z};
      args["block"] = {r.block.x, r.block.y, r.block.z};
      args["registers per thread"] = r.registers_per_thread;
      args["shared memory"] = r.shared_bytes();
    } else {
      args["bytes"] = r.bytes;
      if (!r.copy_kind.empty()) args["kind"] = r.copy_kind;
    }
    if (r.op_index >= 0 && r.op_index < static_cast<int>(p.ops.size())) {
      const auto& op = p.ops[r.op_index];
      args["op"] = op.name;
      args["op kind"] = op.kind;
      args["op instance"] = r.op_instance;
      if (!op.source.empty()) args["op source"] = op.source;
    }
    // Trace Event Format: ts and dur in microseconds (fractions allowed).
    events.push_back({{"name", r.name},
                      {"cat", r.kind == ActivityKind::kernel ? "kernel" : to_string(r.kind)},
                      {"ph", "X"},
                      {"pid", r.device},
                      {"tid", r.stream},
                      {"ts", static_cast<double>(r.start_ns - t0) * 1e-3},
                      {"dur", r.duration_us()},
                      {"args", args}});
    devices.insert(r.device);
    streams.insert({r.device, r.stream});
  }
  for (int d : devices) {
    std::string name = "GPU " + std::to_string(d);
    for (const auto& dev : p.devices)
      if (dev.index == d) name += " " + dev.name;
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", d}, {"tid", 0}, {"args", {{"name", name}}}});
  }
  for (const auto& [d, s] : streams)
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", d}, {"tid", s}, {"args", {{"name", "stream " + std::to_string(s)}}}});
  return {{"traceEvents", events},
          {"displayTimeUnit", "ns"},
          {"otherData", {{"tool", p.tool}, {"measured_at", p.measured_at}, {"host", p.host}, {"command", p.command},
                         {"dropped_records", p.dropped_records}}}};
}

}  // namespace strata::profiler
