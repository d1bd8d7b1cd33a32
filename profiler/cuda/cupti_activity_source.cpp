// CUPTI -> neutral records. This file is the boundary: it alone includes CUPTI headers and reads
// CUPTI activity structs; everything else works on KernelRecord (libkineto's layout).
#include "cupti_activity_source.h"

#include <cxxabi.h>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include <cupti.h>

namespace strata::profiler {

// The activity record versions of the CUPTI in use (CUDA 13: Kernel10 / Memcpy6; CUDA 12: Kernel9 / Memcpy5).
#if CUPTI_API_VERSION >= 130000
using KernelActivity = CUpti_ActivityKernel10;
using MemcpyActivity = CUpti_ActivityMemcpy6;
#else
using KernelActivity = CUpti_ActivityKernel9;
using MemcpyActivity = CUpti_ActivityMemcpy5;
#endif
using MemsetActivity = CUpti_ActivityMemset4;
using DeviceActivity = CUpti_ActivityDevice5;

namespace {

void check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  throw std::runtime_error(std::string("CUPTI: ") + what + " failed: " + (msg ? msg : "unknown error"));
}

std::string demangle(const char* name) {
  if (!name) return "?";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : std::string(name);
}

const char* copy_kind(std::uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
    default: return "unknown";
  }
}

// Fields every timed activity record (kernel, memcpy, memset) carries under the same names.
template <class Activity>
void copy_timing(KernelRecord& r, const Activity* a) {
  r.start_ns = a->start;
  r.end_ns = a->end;
  r.device = static_cast<int>(a->deviceId);
  r.context = a->contextId;
  r.stream = a->streamId;
  r.correlation_id = a->correlationId;
}

}  // namespace

// Static trampolines CUPTI calls (it takes plain function pointers).
struct CuptiCallbacks {
  static void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
    auto& s = CuptiActivitySource::instance();
    *max_records = 0;  // as many as fit
    *buffer = s.buffers_ ? s.buffers_->request(size) : nullptr;
    if (!*buffer) *size = 0;  // CUPTI drops records and counts them
  }
  static void CUPTIAPI buffer_completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t valid) {
    auto& s = CuptiActivitySource::instance();
    if (s.buffers_ && buffer) s.buffers_->complete(buffer, valid);
  }
  static void CUPTIAPI api_callback(void* user, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
    auto* self = static_cast<CuptiActivitySource*>(user);
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
      if (self->flush_on_destroy_ && id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) cuptiActivityFlushAll(0);
      return;
    }
    if (!self->book_) return;
    if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
    const auto* info = static_cast<const CUpti_CallbackData*>(data);
    if (info->callbackSite == CUPTI_API_ENTER) self->book_->on_api_enter(info->correlationId);
  }
};

CuptiActivitySource& CuptiActivitySource::instance() {
  static CuptiActivitySource s;
  return s;
}

// CUPTI allows one subscriber per process: API and resource callbacks share it.
void CuptiActivitySource::subscribe() {
  if (subscriber_) return;
  CUpti_SubscriberHandle h = nullptr;
  check(cuptiSubscribe(&h, &CuptiCallbacks::api_callback, this), "cuptiSubscribe");
  subscriber_ = h;
}

void CuptiActivitySource::bind_launches(LaunchBook* book) {
  book_ = book;
  subscribe();
  auto h = static_cast<CUpti_SubscriberHandle>(subscriber_);
  check(cuptiEnableDomain(1, h, CUPTI_CB_DOMAIN_RUNTIME_API), "cuptiEnableDomain(runtime)");
  check(cuptiEnableDomain(1, h, CUPTI_CB_DOMAIN_DRIVER_API), "cuptiEnableDomain(driver)");
}

void CuptiActivitySource::flush_at_context_destroy() {
  flush_on_destroy_ = true;
  subscribe();
  check(cuptiEnableCallback(1, static_cast<CUpti_SubscriberHandle>(subscriber_), CUPTI_CB_DOMAIN_RESOURCE,
                            CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING),
        "cuptiEnableCallback(context destroy)");
}

void CuptiActivitySource::enable(ActivityBuffers& buffers) {
  buffers_ = &buffers;
  check(cuptiActivityRegisterCallbacks(&CuptiCallbacks::buffer_requested, &CuptiCallbacks::buffer_completed),
        "cuptiActivityRegisterCallbacks");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable(CONCURRENT_KERNEL)");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "cuptiActivityEnable(MEMCPY)");
  // Best effort: device records (the injection library's device properties) and memsets.
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
  enabled_ = true;
}

void CuptiActivitySource::disable() {
  if (!enabled_) return;
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DEVICE);
  enabled_ = false;
  if (subscriber_) {
    cuptiUnsubscribe(static_cast<CUpti_SubscriberHandle>(subscriber_));
    subscriber_ = nullptr;
  }
}

void CuptiActivitySource::flush() {
  // CUPTI calls buffer_completed from inside this call: ActivityBuffers must not hold its lock.
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

std::uint64_t CuptiActivitySource::take_dropped_records() {
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) != CUPTI_SUCCESS) return 0;
  return dropped;
}

void CuptiActivitySource::decode(const std::uint8_t* data, std::size_t valid, std::vector<KernelRecord>& out) {
  CUpti_Activity* rec = nullptr;
  auto* buf = const_cast<std::uint8_t*>(data);  // CUPTI's iterator takes a non-const pointer
  while (cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
    switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const KernelActivity*>(rec);
        KernelRecord r;
        r.kind = ActivityKind::kernel;
        r.name = demangle(k->name);
        r.grid = {k->gridX, k->gridY, k->gridZ};
        r.block = {k->blockX, k->blockY, k->blockZ};
        r.registers_per_thread = k->registersPerThread;
        r.static_shared_bytes = k->staticSharedMemory;
        r.dynamic_shared_bytes = k->dynamicSharedMemory;
        copy_timing(r, k);
        out.push_back(std::move(r));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const MemcpyActivity*>(rec);
        KernelRecord r;
        r.kind = ActivityKind::memcpy;
        r.copy_kind = copy_kind(m->copyKind);
        r.name = "memcpy " + r.copy_kind;
        r.bytes = m->bytes;
        copy_timing(r, m);
        out.push_back(std::move(r));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const MemsetActivity*>(rec);
        KernelRecord r;
        r.kind = ActivityKind::memset;
        r.name = "memset";
        r.bytes = m->bytes;
        copy_timing(r, m);
        out.push_back(std::move(r));
        break;
      }
      case CUPTI_ACTIVITY_KIND_DEVICE: {
        const auto* d = reinterpret_cast<const DeviceActivity*>(rec);
        DeviceInfo info;
        info.index = static_cast<int>(d->id);
        info.name = d->name ? d->name : "?";
        info.compute_capability_major = static_cast<int>(d->computeCapabilityMajor);
        info.compute_capability_minor = static_cast<int>(d->computeCapabilityMinor);
        info.sm_count = static_cast<int>(d->numMultiprocessors);
        info.memory_GiB = static_cast<double>(d->globalMemorySize) / (1024.0 * 1024 * 1024);
        info.sm_clock_MHz = d->coreClockRate / 1000.0;  // kHz
        info.l2_MiB = d->l2CacheSize / (1024.0 * 1024);
        info.max_threads_per_sm = static_cast<int>(d->maxWarpsPerMultiprocessor * d->numThreadsPerWarp);
        info.max_blocks_per_sm = static_cast<int>(d->maxBlocksPerMultiprocessor);
        info.registers_per_sm = static_cast<int>(d->maxRegistersPerMultiprocessor);
        info.shared_bytes_per_sm = static_cast<int>(d->maxSharedMemoryPerMultiprocessor);
        std::lock_guard lock(devices_mu_);
        bool seen = false;
        for (const auto& x : devices_) seen = seen || x.index == info.index;
        if (!seen) devices_.push_back(info);
        break;
      }
      default: break;
    }
  }
}

std::vector<DeviceInfo> CuptiActivitySource::devices() const {
  std::lock_guard lock(devices_mu_);
  return devices_;
}

std::uint64_t CuptiActivitySource::timestamp_ns() {
  std::uint64_t t = 0;
  cuptiGetTimestamp(&t);
  return t;
}

int CuptiActivitySource::version() {
  std::uint32_t v = 0;
  cuptiGetVersion(&v);
  return static_cast<int>(v);
}

}  // namespace strata::profiler
