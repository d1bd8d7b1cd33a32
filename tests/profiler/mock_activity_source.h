#pragma once
// A mock of CUPTI's activity API for tests without a GPU: it packs CUPTI-like fixed-size kernel
// records into buffers obtained from ActivityBuffers::request (dropping and counting records when
// none is available, as CUPTI does), completes full buffers, and completes the partial one from
// flush(), calling back into ActivityBuffers like cuptiActivityFlushAll does.
#include <cstring>
#include <stdexcept>
#include <vector>

#include "profiler/activity_buffers.h"

namespace strata::profiler::test {

// Laid out like the head of CUpti_ActivityKernel: kind first, then the fields strata keeps.
struct FakeKernelActivity {
  std::uint32_t kind = 10;  // CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
  std::uint32_t correlation_id = 0;
  std::uint64_t start = 0, end = 0;
  std::int32_t grid[3] = {1, 1, 1};
  std::int32_t block[3] = {1, 1, 1};
  std::uint16_t registers_per_thread = 0;
  std::uint16_t pad = 0;
  std::int32_t static_shared = 0, dynamic_shared = 0;
  std::uint32_t device = 0, stream = 0;
  char name[36] = {};
};
static_assert(sizeof(FakeKernelActivity) % 8 == 0);

class MockActivitySource : public ActivitySource {
 public:
  bool enabled = false;
  int flushes = 0;
  bool lock_seen_held_in_flush = false;

  void enable(ActivityBuffers& b) override {
    buffers_ = &b;
    enabled = true;
  }
  void disable() override { enabled = false; }
  void flush() override {
    ++flushes;
    if (buffers_->lock_held()) lock_seen_held_in_flush = true;
    if (current_) complete_current();
  }
  std::uint64_t take_dropped_records() override {
    auto d = dropped_;
    dropped_ = 0;
    return d;
  }
  void decode(const std::uint8_t* data, std::size_t valid, std::vector<KernelRecord>& out) override {
    for (std::size_t off = 0; off + sizeof(FakeKernelActivity) <= valid; off += sizeof(FakeKernelActivity)) {
      FakeKernelActivity a;
      std::memcpy(&a, data + off, sizeof a);
      if (a.kind != 10) throw std::runtime_error("corrupt record");
      KernelRecord r;
      r.name = a.name;
      r.grid = {a.grid[0], a.grid[1], a.grid[2]};
      r.block = {a.block[0], a.block[1], a.block[2]};
      r.registers_per_thread = a.registers_per_thread;
      r.static_shared_bytes = a.static_shared;
      r.dynamic_shared_bytes = a.dynamic_shared;
      r.start_ns = a.start;
      r.end_ns = a.end;
      r.device = static_cast<int>(a.device);
      r.stream = a.stream;
      r.correlation_id = a.correlation_id;
      out.push_back(r);
    }
  }

  // The GPU "executes" a kernel: its record goes into the current buffer.
  void emit(const FakeKernelActivity& a) {
    if (!current_) {
      std::size_t size = 0;
      current_ = buffers_->request(&size);
      if (!current_) {
        ++dropped_;
        return;
      }
      size_ = size;
      used_ = 0;
    }
    std::memcpy(current_ + used_, &a, sizeof a);
    used_ += sizeof a;
    if (used_ + sizeof a > size_) complete_current();
  }

 private:
  void complete_current() {
    buffers_->complete(current_, used_);
    current_ = nullptr;
  }
  ActivityBuffers* buffers_ = nullptr;
  std::uint8_t* current_ = nullptr;
  std::size_t size_ = 0, used_ = 0;
  std::uint64_t dropped_ = 0;
};

inline FakeKernelActivity fake_kernel(std::uint32_t corr, std::uint64_t start, std::uint64_t end, const char* name = "gemm") {
  FakeKernelActivity a;
  a.correlation_id = corr;
  a.start = start;
  a.end = end;
  a.grid[0] = 132;
  a.block[0] = 256;
  a.registers_per_thread = 128;
  a.dynamic_shared = 96 * 1024;
  a.stream = 7;
  std::strncpy(a.name, name, sizeof a.name - 1);
  return a;
}

}  // namespace strata::profiler::test
