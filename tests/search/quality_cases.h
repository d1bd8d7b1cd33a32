#pragma once
// The search-quality suite: (model, cluster, GPUs, global batch, sequence) cases from 7B on 8 GPUs
// to 405B on 16,384 GPUs, on which the bottleneck search must reach >= 99% of the exhaustive
// grid's best predicted throughput. Shared by tests/search/test_quality.cpp and
// bench/bench_search.cpp.
#include <cstdint>
#include <vector>

#include "costmodel/catalog.h"
#include "costmodel/job.h"
#include "search/searcher.h"

namespace strata::quality {

struct Case {
  const char* name;
  const char* model;  // catalog name, or a path relative to the source directory
  const char* cluster;
  int gpus;
  std::int64_t global_batch;
  std::int64_t seq;
  bool heavy;  // left out of the unit-test subset (run by the benchmark)
  int fixed_cp = 0;  // > 0: context parallelism fixed (--cp), which makes memory the constraint
};

inline const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"llama2-7b/8xA100", "llama2-7b", "dgx-a100-hdr", 8, 128, 4096, false},
      {"gpt3-6.7b/32xL40S", "gpt3-6.7b", "l40s-pcie-eth", 32, 256, 2048, false},
      {"llama3-8b/64xH100", "llama3-8b", "dgx-h100-ndr", 64, 512, 8192, false},
      {"llama3-8b/64xMI300X", "llama3-8b", "mi300x-ib", 64, 512, 8192, false},
      {"mixtral-8x7b/64xH100", "mixtral-8x7b", "dgx-h100-ndr", 64, 512, 4096, false},
      {"gpt3-13b/128xA100", "gpt3-13b", "dgx-a100-hdr", 128, 1024, 2048, false},
      {"mpt-30b/256xH100", "mpt-30b", "dgx-h100-ndr", 256, 1024, 8192, false},
      {"bloom-176b/384xA100", "bloom-176b", "dgx-a100-hdr", 384, 2048, 2048, false},
      {"llama2-70b/512xA100", "llama2-70b", "dgx-a100-hdr", 512, 1024, 4096, false},
      {"llama3-70b/512xH100", "llama3-70b", "dgx-h100-ndr", 512, 1024, 8192, false},
      {"gpt3-175b/1024xA100", "gpt3-175b", "dgx-a100-hdr", 1024, 1536, 2048, false},
      {"llama3.1-405b/2048xH200", "llama3.1-405b", "hgx-h200-ndr", 2048, 1024, 8192, false},
      {"gpt-1t/3072xA100", "sc21-gpt-1t", "dgx-a100-hdr", 3072, 3072, 2048, false},
      {"llama3.1-405b/16384xH100", "llama3.1-405b", "dgx-h100-ndr", 16384, 2048, 8192, false},
      {"llama3.1-405b/1024xH100/cp1", "llama3.1-405b", "dgx-h100-ndr", 1024, 512, 8192, false, 1},
      {"gpt-1024-layers/1024xA100", "tests/data/gpt-1024-layers.json", "dgx-a100-hdr", 1024, 1536, 2048, false},
  };
  return all;
}

inline SearchOptions options(const Case& c) {
  SearchOptions o;
  o.num_gpus = c.gpus;
  if (c.fixed_cp > 0) o.cp = c.fixed_cp;
  return o;
}

inline Job workload(const Case& c, const Catalog& catalog, const std::string& source_dir) {
  Job w;
  const std::string model = c.model;
  w.model = catalog.model(model.ends_with(".json") ? source_dir + "/" + model : model);
  w.cluster = catalog.cluster(c.cluster);
  w.training.global_batch_size = c.global_batch;
  w.training.seq_length = c.seq;
  w.calibration = catalog.calibration_or_default(w.cluster.gpu);  // as the CLI does
  return w;
}

}  // namespace strata::quality
