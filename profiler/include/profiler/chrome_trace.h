#pragma once
// Chrome / Perfetto trace ("traceEvents" JSON, the Trace Event Format): one complete ("X") event
// per activity, pid = device, tid = stream, timestamps in microseconds from the first activity,
// kernel launch configuration and the op label in "args".
#include <nlohmann/json.hpp>

#include "profiler/profile_db.h"

namespace strata::profiler {

nlohmann::json chrome_trace(const ProfileDb& profile);

}  // namespace strata::profiler
