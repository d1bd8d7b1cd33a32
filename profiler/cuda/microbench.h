#pragma once
// Microbenchmark launchers: one call launches one op of the suite on the current device's stream
// (no synchronization). GEMMs through cuBLAS (fp16/bf16: cublasGemmEx / strided batched) and
// cuBLASLt (fp8 e4m3), elementwise ops through the project's kernels, copies through
// cudaMemcpyAsync, collectives through NCCL across all visible GPUs.
#include <cstddef>
#include <memory>
#include <string>

#include "profiler/kernel_record.h"

namespace strata::profiler {

class Microbench {
 public:
  // workspace_bytes of device memory are carved into the operands of each op.
  Microbench(int device, std::size_t workspace_bytes, std::size_t pinned_bytes);
  ~Microbench();
  Microbench(const Microbench&) = delete;
  Microbench& operator=(const Microbench&) = delete;

  // Bytes of device memory the op's operands need (0 for host copies beyond the pinned buffer).
  static std::size_t operand_bytes(const OpLabel& op);
  // Checks the op can run here; otherwise returns false with the reason.
  bool supported(const OpLabel& op, std::string* why) const;
  // Launches the op once (asynchronously); throws std::runtime_error on a CUDA/cuBLAS/NCCL error.
  void launch(const OpLabel& op);
  void synchronize();

  std::string cublas_version() const;
  static std::string nccl_version();
  int collective_ranks() const;  // GPUs NCCL runs across (1: collectives unavailable)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::profiler
