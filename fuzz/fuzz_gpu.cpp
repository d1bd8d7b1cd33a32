// GPU spec loader.
#include "costmodel/gpu_spec.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const strata::json j = strata::parse_json_text(strata::fuzz::as_text(data, size), "fuzz.json");
    const strata::GpuSpec g = strata::gpu_from_json(j, "fuzz.json");
    for (auto p : {strata::Precision::fp32, strata::Precision::bf16, strata::Precision::fp8})
      if (!(g.peak_flops(p) >= 0)) std::abort();
  } catch (const strata::InputError&) {
  }
  return 0;
}
