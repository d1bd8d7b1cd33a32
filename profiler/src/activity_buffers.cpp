#include "profiler/activity_buffers.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>

namespace strata::profiler {

struct ActivityBuffers::Buffer {
  std::uint8_t* data = nullptr;
  std::size_t size = 0;
  std::size_t valid = 0;
  Buffer(std::size_t bytes, std::size_t alignment) : size(bytes) {
    // aligned_alloc needs the size to be a multiple of the alignment.
    std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    data = static_cast<std::uint8_t*>(std::aligned_alloc(alignment, rounded));
    if (!data) throw std::bad_alloc();
  }
  ~Buffer() { std::free(data); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

// Holds the mutex and marks it held, so tests can check a flush never runs under it.
class ActivityBuffers::Guard {
 public:
  explicit Guard(const ActivityBuffers& b) : b_(b), lock_(b.mu_) { const_cast<ActivityBuffers&>(b_).locked_ = true; }
  ~Guard() { const_cast<ActivityBuffers&>(b_).locked_ = false; }

 private:
  const ActivityBuffers& b_;
  std::unique_lock<std::mutex> lock_;
};

ActivityBuffers::ActivityBuffers() : ActivityBuffers(Options{}) {}

ActivityBuffers::ActivityBuffers(Options options) : options_(options) {
  assert(options_.buffer_bytes > 0 && options_.max_buffers > 0);
  assert(options_.alignment > 0 && (options_.alignment & (options_.alignment - 1)) == 0);
}

ActivityBuffers::~ActivityBuffers() = default;

std::uint8_t* ActivityBuffers::request(std::size_t* size) {
  Guard g(*this);
  if (in_flight_.size() + ready_.size() >= options_.max_buffers) {
    ++stats_.buffers_refused;
    *size = 0;
    return nullptr;
  }
  std::unique_ptr<Buffer> b;
  if (!free_.empty()) {
    b = std::move(free_.back());
    free_.pop_back();
  } else {
    b = std::make_unique<Buffer>(options_.buffer_bytes, options_.alignment);
  }
  b->valid = 0;
  ++stats_.buffers_requested;
  *size = b->size;
  std::uint8_t* p = b->data;
  in_flight_.push_back(std::move(b));
  return p;
}

void ActivityBuffers::complete(std::uint8_t* data, std::size_t valid_bytes) {
  Guard g(*this);
  auto it = std::find_if(in_flight_.begin(), in_flight_.end(), [&](const auto& b) { return b->data == data; });
  if (it == in_flight_.end()) return;  // not ours (or completed twice): never touch it
  std::unique_ptr<Buffer> b = std::move(*it);
  in_flight_.erase(it);
  ++stats_.buffers_completed;
  b->valid = std::min(valid_bytes, b->size);
  if (b->valid == 0) {
    ++stats_.empty_buffers;
    free_.push_back(std::move(b));
  } else {
    ready_.push_back(std::move(b));
  }
}

std::vector<KernelRecord> ActivityBuffers::collect(ActivitySource& source) {
  // CUPTI's flush calls the completion callback (complete()) on this thread: our lock must not be
  // held here, or the flush deadlocks.
  assert(!locked_.load());
  source.flush();
  const std::uint64_t dropped = source.take_dropped_records();
  std::vector<std::unique_ptr<Buffer>> ready;
  {
    Guard g(*this);
    ready.swap(ready_);
    stats_.dropped_records += dropped;
  }
  // Decode outside the lock: the source may keep completing buffers meanwhile.
  std::vector<KernelRecord> out;
  for (const auto& b : ready) source.decode(b->data, b->valid, out);
  {
    Guard g(*this);
    stats_.records += out.size();
    for (auto& b : ready) free_.push_back(std::move(b));
    // Keep at most max_buffers allocated in total.
    while (!free_.empty() && free_.size() + in_flight_.size() > options_.max_buffers) free_.pop_back();
  }
  return out;
}

ActivityBuffers::Stats ActivityBuffers::stats() const {
  Guard g(*this);
  return stats_;
}

std::size_t ActivityBuffers::buffers_alive() const {
  Guard g(*this);
  return in_flight_.size() + ready_.size();
}

std::size_t ActivityBuffers::ready_buffers() const {
  Guard g(*this);
  return ready_.size();
}

}  // namespace strata::profiler
