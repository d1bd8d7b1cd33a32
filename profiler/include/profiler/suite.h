#pragma once
// The microbenchmark suite: the GEMM, attention and elementwise ops that transformer layers of
// 1B..1T-parameter models produce under tp 1..8, taken from costmodel's decoder_layer_ops so they
// are exactly the shapes the predictor asks about; plus memory copies and collectives.
// Pure data (no CUDA): the runner in strata_profiler_cuda executes it.
#include <string>
#include <vector>

#include "costmodel/catalog.h"
#include "costmodel/layer_ops.h"
#include "profiler/kernel_record.h"

namespace strata::profiler {

struct SuiteOptions {
  bool quick = false;
  std::vector<std::string> models;      // empty: the default set (quick: 3 models, full: 1B..1T)
  std::vector<int> tp;                  // empty: quick {1, 8}, full {1, 2, 4, 8}
  std::vector<std::int64_t> seq;        // empty: quick {2048}, full {2048, 8192}
  std::vector<std::string> precisions;  // empty: {"bf16", "fp16", "fp8"} (fp8 only where supported)
  bool fp8_supported = true;
  // Skip ops whose operands would not fit in this many bytes of device memory (0: no limit).
  double max_operand_bytes = 0;
};

std::vector<std::string> default_suite_models(bool quick);

// Ops of the suite, deduplicated by (name kind, shape, precision). Names are the layer op names
// (elementwise: "layernorm", "rmsnorm", "gelu", "swiglu", "residual_add", "softmax"); `source`
// says which model/tp/seq first produced the shape.
// The label of a cost-model op: its shape, FLOPs and bytes, so profiled kernels carry exactly
// what the predictor asks about.
OpLabel label_of(const Op& op, const std::string& kind, const std::string& precision);

std::vector<OpLabel> kernel_suite(const Catalog& catalog, const SuiteOptions& options);
// Memory copies (HtoD, DtoH, DtoD) over sizes, and collectives (all_reduce, all_gather,
// reduce_scatter) over message sizes for `ranks` GPUs (empty when ranks < 2).
std::vector<OpLabel> memcpy_suite(bool quick);
std::vector<OpLabel> collective_suite(bool quick, int ranks);

}  // namespace strata::profiler
