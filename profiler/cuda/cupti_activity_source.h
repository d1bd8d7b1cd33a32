#pragma once
// The CUPTI activity source: the only place where CUPTI records are read. It implements the
// neutral ActivitySource interface (buffers via ActivityBuffers, records as KernelRecord) and,
// optionally, binds CUDA API calls to the LaunchBook by correlation id (Callback API).
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "profiler/activity_buffers.h"
#include "profiler/launch_book.h"
#include "profiler/profile_db.h"

namespace strata::profiler {

class CuptiActivitySource final : public ActivitySource {
 public:
  // CUPTI's buffer callbacks are process-wide, so there is one source per process.
  static CuptiActivitySource& instance();

  void enable(ActivityBuffers& buffers) override;
  void disable() override;
  void flush() override;
  std::uint64_t take_dropped_records() override;
  void decode(const std::uint8_t* data, std::size_t valid_bytes, std::vector<KernelRecord>& out) override;

  // Subscribes to runtime and driver API callbacks and reports each API call's correlation id to
  // `book` (which binds it to the op being launched). Call before enable().
  void bind_launches(LaunchBook* book);
  // Flushes the activity buffers when a CUDA context is about to be destroyed (the injection
  // library: a program may tear its contexts down before our exit handler runs).
  void flush_at_context_destroy();
  // Devices seen in CUPTI_ACTIVITY_KIND_DEVICE records so far.
  std::vector<DeviceInfo> devices() const;

  static std::uint64_t timestamp_ns();  // cuptiGetTimestamp: the activity records' clock
  static int version();                 // cuptiGetVersion

 private:
  CuptiActivitySource() = default;
  ActivityBuffers* buffers_ = nullptr;
  LaunchBook* book_ = nullptr;
  void subscribe();
  void* subscriber_ = nullptr;
  bool flush_on_destroy_ = false;
  bool enabled_ = false;
  mutable std::mutex devices_mu_;
  std::vector<DeviceInfo> devices_;
  friend struct CuptiCallbacks;
};

}  // namespace strata::profiler
