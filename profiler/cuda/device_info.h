#pragma once
// Device properties, clocks and CUDA versions through the CUDA runtime.
#include <string>

#include "profiler/profile_db.h"

namespace strata::profiler {

// Number of CUDA devices, or -1 with *error set when the runtime/driver is unusable.
int cuda_device_count(std::string* error);
DeviceInfo query_device(int index);
int cuda_driver_version();
int cuda_runtime_version();

}  // namespace strata::profiler
