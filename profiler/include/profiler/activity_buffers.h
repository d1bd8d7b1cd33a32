#pragma once
// Buffer lifecycle for an asynchronous activity API (CUPTI's rules, as libkineto follows them):
//  - the source asks for a buffer (CUPTI's "buffer requested" callback) and gets a fixed-size,
//    aligned one, or none when the cap on buffers is reached (the source then drops records and
//    counts them: cuptiActivityGetNumDroppedRecords);
//  - the source hands a filled buffer back ("buffer completed"), which moves to the ready list;
//  - collect() flushes the source WITHOUT holding this class's lock (CUPTI's flush calls back into
//    complete() on the same thread), then decodes the ready buffers into neutral records and
//    recycles them.
// The source is a small abstract interface so the logic is tested with a mock on machines
// without a GPU (tests/profiler/test_activity_buffers.cpp).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "profiler/kernel_record.h"

namespace strata::profiler {

class ActivityBuffers;

class ActivitySource {
 public:
  virtual ~ActivitySource() = default;
  // Start delivering activity into `buffers` (CUPTI: register callbacks, enable kinds).
  virtual void enable(ActivityBuffers& buffers) = 0;
  virtual void disable() = 0;
  // Complete every buffer in flight; may call ActivityBuffers::complete() before returning.
  virtual void flush() = 0;
  // Records the source had to drop since the last call (no buffer available).
  virtual std::uint64_t take_dropped_records() = 0;
  // Appends the neutral form of the raw records in data[0, valid_bytes).
  virtual void decode(const std::uint8_t* data, std::size_t valid_bytes, std::vector<KernelRecord>& out) = 0;
};

class ActivityBuffers {
 public:
  struct Options {
    std::size_t buffer_bytes = 8u << 20;  // CUPTI recommends a few MiB
    std::size_t max_buffers = 64;         // cap on buffers alive at once (in flight + ready)
    std::size_t alignment = 8;            // CUPTI requires 8-byte aligned buffers
  };
  struct Stats {
    std::uint64_t buffers_requested = 0;  // requests granted
    std::uint64_t buffers_refused = 0;    // requests refused at the cap
    std::uint64_t buffers_completed = 0;
    std::uint64_t empty_buffers = 0;      // completed with no valid bytes
    std::uint64_t dropped_records = 0;    // as reported by the source
    std::uint64_t records = 0;            // decoded
  };

  ActivityBuffers();
  explicit ActivityBuffers(Options options);
  ~ActivityBuffers();
  ActivityBuffers(const ActivityBuffers&) = delete;
  ActivityBuffers& operator=(const ActivityBuffers&) = delete;

  // "Buffer requested": returns an aligned buffer of *size bytes, or nullptr (and *size = 0) when
  // max_buffers are alive. Thread-safe; called from the source's threads.
  std::uint8_t* request(std::size_t* size);
  // "Buffer completed": valid_bytes of `data` hold records. Unknown pointers are ignored (a bug in
  // the source; counted nowhere but never freed twice).
  void complete(std::uint8_t* data, std::size_t valid_bytes);

  // Flushes the source (lock not held), decodes every ready buffer (in completion order), recycles
  // the buffers and adds the source's dropped-record count. Returns the decoded records.
  std::vector<KernelRecord> collect(ActivitySource& source);

  Stats stats() const;
  std::size_t buffers_alive() const;
  std::size_t ready_buffers() const;
  // True while this object's mutex is held (tests assert that a flush never sees it held).
  bool lock_held() const { return locked_.load(); }
  const Options& options() const { return options_; }

 private:
  struct Buffer;
  class Guard;
  Options options_;
  mutable std::mutex mu_;
  std::atomic<bool> locked_{false};
  std::vector<std::unique_ptr<Buffer>> in_flight_;
  std::vector<std::unique_ptr<Buffer>> ready_;
  std::vector<std::unique_ptr<Buffer>> free_;
  Stats stats_;
};

}  // namespace strata::profiler
