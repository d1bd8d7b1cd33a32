// Plan JSON loader (`strata predict --plan`), then the prediction of the plan it accepted.
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const strata::json j = strata::parse_json_text(strata::fuzz::as_text(data, size), "fuzz.json");
    const strata::Job job = strata::plan_from_json(j, "fuzz.json");
    strata::fuzz::check_prediction(job);
  } catch (const strata::InputError&) {
  }
  return 0;
}
