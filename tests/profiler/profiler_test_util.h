#pragma once
// Small builders for profiler value types in tests.
#include <string>

#include "profiler/profile_db.h"

namespace strata::profiler::test {

inline DeviceInfo device(const std::string& name, int sm_count, int index = 0) {
  DeviceInfo d;
  d.index = index;
  d.name = name;
  d.sm_count = sm_count;
  return d;
}

inline OpLabel label(const std::string& name, const std::string& kind, double flops = 0, double bytes = 0,
                     const std::string& precision = "bf16") {
  OpLabel o;
  o.name = name;
  o.kind = kind;
  o.precision = precision;
  o.flops = flops;
  o.bytes = bytes;
  return o;
}

inline OpLabel gemm_label(const std::string& name, const std::string& kind, double m, double n, double k, double batch,
                          double flops, double bytes) {
  OpLabel o = label(name, kind, flops, bytes);
  o.m = m;
  o.n = n;
  o.k = k;
  o.batch = batch;
  return o;
}

inline KernelRecord record(const std::string& name, std::uint64_t start_ns = 0, std::uint64_t end_ns = 0) {
  KernelRecord r;
  r.name = name;
  r.start_ns = start_ns;
  r.end_ns = end_ns;
  return r;
}

}  // namespace strata::profiler::test
