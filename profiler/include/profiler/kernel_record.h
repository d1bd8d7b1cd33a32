#pragma once
// The neutral activity record: what strata keeps of one GPU activity (a kernel, a memory copy or a
// memset), independent of CUPTI. CUPTI records are converted into this type at one boundary
// (profiler/cuda/cupti_activity_source.cpp); nothing downstream sees a CUPTI type.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace strata::profiler {

enum class ActivityKind { kernel, memcpy, memset };
const char* to_string(ActivityKind k);

struct Dim3 {
  int x = 1, y = 1, z = 1;
  std::int64_t count() const { return std::int64_t{x} * y * z; }
  bool operator==(const Dim3&) const = default;
};

// The op that launched a group of kernels, recorded before the launch (NVTX-free bookkeeping):
// what the cost model would be asked about (kind, GEMM shape, FLOPs and DRAM bytes).
struct OpLabel {
  std::string name;       // layer op name ("qkv_proj", "fc1", "input_norm", "flash_attention_bwd", "all_reduce")
  std::string kind;       // "gemm" | "attention" | "elementwise" | "memcpy" | "collective"
  std::string precision;  // "bf16", "fp16", "fp8", "fp32"
  double m = 0, n = 0, k = 0, batch = 1;  // GEMM shape (per batch entry), as in costmodel's Op
  double flops = 0;
  double bytes = 0;     // DRAM bytes (or bytes on the wire for collectives)
  int ranks = 1;        // GPUs taking part (collectives)
  std::string source;   // which model shape asked for it ("llama3-70b tp=8 seq=8192 fwd")
  bool operator==(const OpLabel&) const = default;
};

struct KernelRecord {
  ActivityKind kind = ActivityKind::kernel;
  std::string name;  // mangled or demangled kernel name; "memcpy HtoD" for copies
  Dim3 grid, block;
  int registers_per_thread = 0;
  int static_shared_bytes = 0;
  int dynamic_shared_bytes = 0;
  std::uint64_t start_ns = 0;  // GPU timestamps (CUPTI clock, ns)
  std::uint64_t end_ns = 0;
  int device = 0;
  std::uint32_t context = 0;
  std::uint32_t stream = 0;
  std::uint32_t correlation_id = 0;
  std::uint64_t bytes = 0;  // memcpy / memset size
  std::string copy_kind;    // "HtoD", "DtoH", "DtoD", ... for memcpy
  // Bookkeeping: index into ProfileDb::ops of the op that launched it (-1: unknown), and which
  // repetition of that op (kernels of one invocation share op_index and op_instance).
  int op_index = -1;
  int op_instance = -1;

  double duration_us() const { return end_ns > start_ns ? static_cast<double>(end_ns - start_ns) * 1e-3 : 0.0; }
  int shared_bytes() const { return static_shared_bytes + dynamic_shared_bytes; }
  bool operator==(const KernelRecord&) const = default;
};

nlohmann::json record_to_json(const KernelRecord& r);
// `where` names the file and JSON path in error messages (InputError).
KernelRecord record_from_json(const nlohmann::json& j, const std::string& where, const std::string& path);
nlohmann::json op_to_json(const OpLabel& o);
OpLabel op_from_json(const nlohmann::json& j, const std::string& where, const std::string& path);

}  // namespace strata::profiler
