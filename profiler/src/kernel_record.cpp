#include "profiler/kernel_record.h"

#include "costmodel/json_reader.h"

namespace strata::profiler {

const char* to_string(ActivityKind k) {
  switch (k) {
    case ActivityKind::kernel: return "kernel";
    case ActivityKind::memcpy: return "memcpy";
    case ActivityKind::memset: return "memset";
  }
  return "?";
}

namespace {

nlohmann::json dim_to_json(const Dim3& d) { return nlohmann::json::array({d.x, d.y, d.z}); }

Dim3 dim_from_json(const JsonReader& r, std::string_view key) {
  Dim3 d;
  if (!r.has(key)) return d;
  const auto& v = r.raw(key);
  if (!v.is_array() || v.size() != 3) r.fail(key, "expected [x, y, z] of three positive integers");
  int* out[3] = {&d.x, &d.y, &d.z};
  for (std::size_t i = 0; i < 3; ++i) {
    if (!v[i].is_number_integer() || v[i].get<std::int64_t>() < 1 || v[i].get<std::int64_t>() > (1LL << 31) - 1)
      r.fail(key, "expected [x, y, z] of three positive integers");
    *out[i] = v[i].get<int>();
  }
  return d;
}

}  // namespace

nlohmann::json record_to_json(const KernelRecord& r) {
  nlohmann::json j = {{"kind", to_string(r.kind)}, {"name", r.name},       {"start_ns", r.start_ns},
                      {"end_ns", r.end_ns},        {"duration_us", r.duration_us()}, {"device", r.device},
                      {"stream", r.stream},
                      {"correlation_id", r.correlation_id}};
  if (r.kind == ActivityKind::kernel) {
    j["grid"] = dim_to_json(r.grid);
    j["block"] = dim_to_json(r.block);
    j["registers_per_thread"] = r.registers_per_thread;
    j["static_shared_bytes"] = r.static_shared_bytes;
    j["dynamic_shared_bytes"] = r.dynamic_shared_bytes;
  } else {
    j["bytes"] = r.bytes;
    if (!r.copy_kind.empty()) j["copy_kind"] = r.copy_kind;
  }
  if (r.context != 0) j["context"] = r.context;
  if (r.op_index >= 0) {
    j["op"] = r.op_index;
    j["op_instance"] = r.op_instance;
  }
  return j;
}

KernelRecord record_from_json(const nlohmann::json& j, const std::string& where, const std::string& path) {
  JsonReader r(j, where, path);
  r.reject_unknown_keys({"kind", "name", "grid", "block", "registers_per_thread", "static_shared_bytes",
                         "dynamic_shared_bytes", "start_ns", "end_ns", "device", "context", "stream",
                         "correlation_id", "bytes", "copy_kind", "op", "op_instance", "duration_us"});
  KernelRecord k;  // duration_us is written for readers of the file and derived from start/end here
  std::string kind = r.opt_string("kind").value_or("kernel");
  if (kind == "kernel") k.kind = ActivityKind::kernel;
  else if (kind == "memcpy") k.kind = ActivityKind::memcpy;
  else if (kind == "memset") k.kind = ActivityKind::memset;
  else r.fail("kind", "expected \"kernel\", \"memcpy\" or \"memset\", found \"" + kind + "\"");
  k.name = r.get_string("name");
  k.grid = dim_from_json(r, "grid");
  k.block = dim_from_json(r, "block");
  constexpr std::int64_t kMaxU32 = 0xffffffffLL;
  k.registers_per_thread = static_cast<int>(r.opt_int("registers_per_thread", 0, 65536).value_or(0));
  k.static_shared_bytes = static_cast<int>(r.opt_int("static_shared_bytes", 0, 1 << 30).value_or(0));
  k.dynamic_shared_bytes = static_cast<int>(r.opt_int("dynamic_shared_bytes", 0, 1 << 30).value_or(0));
  // Timestamps exceed 2^53 only after ~104 days of uptime; JSON integers keep them exact anyway.
  auto u64 = [&](std::string_view key) -> std::uint64_t {
    if (!r.has(key)) r.fail(key, "expected a non-negative integer (nanoseconds)");
    const auto& v = r.raw(key);
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(v.get<std::int64_t>());
    r.fail(key, "expected a non-negative integer");
  };
  k.start_ns = u64("start_ns");
  k.end_ns = u64("end_ns");
  if (k.end_ns < k.start_ns) r.fail("end_ns", "expected end_ns >= start_ns");
  k.device = static_cast<int>(r.opt_int("device", 0, 1 << 20).value_or(0));
  k.context = static_cast<std::uint32_t>(r.opt_int("context", 0, kMaxU32).value_or(0));
  k.stream = static_cast<std::uint32_t>(r.opt_int("stream", 0, kMaxU32).value_or(0));
  k.correlation_id = static_cast<std::uint32_t>(r.opt_int("correlation_id", 0, kMaxU32).value_or(0));
  k.bytes = r.has("bytes") ? u64("bytes") : 0;
  k.copy_kind = r.opt_string("copy_kind").value_or("");
  k.op_index = static_cast<int>(r.opt_int("op", -1, 1 << 30).value_or(-1));
  k.op_instance = static_cast<int>(r.opt_int("op_instance", -1, 1 << 30).value_or(-1));
  return k;
}

nlohmann::json op_to_json(const OpLabel& o) {
  nlohmann::json j = {{"name", o.name}, {"kind", o.kind}, {"precision", o.precision}, {"flops", o.flops}, {"bytes", o.bytes}};
  // GEMM shape; elementwise ops keep their element count and row length in m and n, copies their size.
  if (o.kind == "gemm" || o.kind == "attention" || o.m != 0 || o.n != 0 || o.k != 0 || o.batch != 1) {
    j["m"] = o.m;
    j["n"] = o.n;
    j["k"] = o.k;
    j["batch"] = o.batch;
  }
  if (o.ranks != 1) j["ranks"] = o.ranks;
  if (!o.source.empty()) j["source"] = o.source;
  return j;
}

OpLabel op_from_json(const nlohmann::json& j, const std::string& where, const std::string& path) {
  JsonReader r(j, where, path);
  r.reject_unknown_keys({"name", "kind", "precision", "m", "n", "k", "batch", "flops", "bytes", "ranks", "source"});
  OpLabel o;
  o.name = r.get_string("name");
  o.kind = r.get_string("kind");
  if (o.kind != "gemm" && o.kind != "attention" && o.kind != "elementwise" && o.kind != "memcpy" && o.kind != "collective")
    r.fail("kind", "expected gemm, attention, elementwise, memcpy or collective, found \"" + o.kind + "\"");
  o.precision = r.opt_string("precision").value_or("bf16");
  auto nonneg = [&](std::string_view key, double fallback) {
    if (!r.has(key)) return fallback;
    double v = r.get_number(key);
    if (v < 0) r.fail(key, "expected a non-negative number");
    return v;
  };
  o.m = nonneg("m", 0);
  o.n = nonneg("n", 0);
  o.k = nonneg("k", 0);
  o.batch = nonneg("batch", 1);
  o.flops = nonneg("flops", 0);
  o.bytes = nonneg("bytes", 0);
  o.ranks = static_cast<int>(r.opt_int("ranks", 1, 1 << 20).value_or(1));
  o.source = r.opt_string("source").value_or("");
  return o;
}

}  // namespace strata::profiler
