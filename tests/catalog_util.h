#pragma once
// The built-in catalog and a plan-less workload, shared by the tests and the benchmarks (both
// compile with STRATA_SOURCE_DIR defined).
#include <cstdint>
#include <string>

#include "costmodel/catalog.h"
#include "costmodel/job.h"

namespace strata::test {

inline const Catalog& catalog() {
  static Catalog c(STRATA_SOURCE_DIR);
  return c;
}

// A workload without a plan: model and cluster presets, global batch, sequence length.
inline Job workload(const std::string& model, const std::string& cluster, std::int64_t global_batch, std::int64_t seq) {
  Job w;
  w.model = catalog().model(model);
  w.cluster = catalog().cluster(cluster);
  w.training.global_batch_size = global_batch;
  w.training.seq_length = seq;
  return w;
}

}  // namespace strata::test
