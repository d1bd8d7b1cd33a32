// Model loader: strata model JSON and Hugging Face config.json.
#include <cmath>

#include "costmodel/model_spec.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const strata::json j = strata::parse_json_text(strata::fuzz::as_text(data, size), "fuzz.json");
    const strata::ModelSpec m = strata::model_from_json(j, "fuzz.json");
    // What the loader accepts must give finite, positive sizes.
    const double params = m.total_params(m.max_seq_length);
    if (!std::isfinite(params) || params <= 0 || m.head_dim() < 1 || m.kv_hidden() < 1) std::abort();
    // Round trip: the written JSON reads back to the same model.
    if (strata::model_from_json(strata::model_to_json(m), "roundtrip.json") != m) std::abort();
  } catch (const strata::InputError&) {
  }
  return 0;
}
