#pragma once
// NVTX-free bookkeeping of which op launched which kernels. Before launching an op the runner
// calls begin(op, instance); every CUDA API call made while it is open (cuBLAS's internal
// launches included) is bound to it by correlation id from the API-enter callback. Records whose
// correlation id was never seen fall back to ordering: the GPU time window [begin, end] of the
// op (the runner synchronizes the device before end(), so windows do not overlap).
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "profiler/kernel_record.h"

namespace strata::profiler {

class LaunchBook {
 public:
  // Opens an op invocation; `now_ns` is the activity clock (cuptiGetTimestamp) at the call.
  void begin(int op_index, int instance, std::uint64_t now_ns);
  void end(std::uint64_t now_ns);
  // From the API-enter callback, on the launching thread: binds the open op (if any).
  void on_api_enter(std::uint32_t correlation_id);
  // Sets op_index / op_instance of each record: by correlation id, else by time window.
  // Returns how many records were matched.
  std::size_t annotate(std::vector<KernelRecord>& records) const;
  std::size_t bound_correlations() const;

 private:
  struct Window {
    int op_index, instance;
    std::uint64_t begin_ns, end_ns;
  };
  mutable std::mutex mu_;
  int open_op_ = -1, open_instance_ = -1;
  std::uint64_t open_since_ = 0;
  std::unordered_map<std::uint32_t, std::pair<int, int>> by_correlation_;
  std::vector<Window> windows_;
};

}  // namespace strata::profiler
