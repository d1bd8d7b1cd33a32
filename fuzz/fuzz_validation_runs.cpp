// Published-run records (`strata validate --runs`), then the prediction of every run it accepted.
#include "formats/validation_runs.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const strata::json j = strata::parse_json_text(strata::fuzz::as_text(data, size), "fuzz.json");
    const auto runs = strata::load_validation_runs(j, "fuzz.json", strata::fuzz::catalog());
    for (const auto& run : runs)
      if (run.job) strata::fuzz::check_prediction(*run.job);
  } catch (const strata::InputError&) {
  }
  return 0;
}
