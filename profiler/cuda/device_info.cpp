#include "device_info.h"

#include <cuda_runtime.h>
#include <stdexcept>

namespace strata::profiler {

int cuda_device_count(std::string* error) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    *error = cudaGetErrorString(e);
    return -1;
  }
  return n;
}

DeviceInfo query_device(int index) {
  cudaDeviceProp p{};
  cudaError_t e = cudaGetDeviceProperties(&p, index);
  if (e != cudaSuccess) throw std::runtime_error(std::string("cudaGetDeviceProperties: ") + cudaGetErrorString(e));
  DeviceInfo d;
  d.index = index;
  d.name = p.name;
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, index) == cudaSuccess) d.pci_bus_id = bus;
  d.compute_capability_major = p.major;
  d.compute_capability_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.memory_GiB = static_cast<double>(p.totalGlobalMem) / (1024.0 * 1024 * 1024);
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, index) == cudaSuccess) d.sm_clock_MHz = khz / 1000.0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, index) == cudaSuccess) d.memory_clock_MHz = khz / 1000.0;
  d.memory_bus_width_bits = p.memoryBusWidth;
  d.l2_MiB = p.l2CacheSize / (1024.0 * 1024);
  d.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  d.max_blocks_per_sm = p.maxBlocksPerMultiProcessor;
  d.registers_per_sm = p.regsPerMultiprocessor;
  d.shared_bytes_per_sm = static_cast<int>(p.sharedMemPerMultiprocessor);
  return d;
}

int cuda_driver_version() {
  int v = 0;
  cudaDriverGetVersion(&v);
  return v;
}

int cuda_runtime_version() {
  int v = 0;
  cudaRuntimeGetVersion(&v);
  return v;
}

}  // namespace strata::profiler
