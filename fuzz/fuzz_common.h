#pragma once
// Shared helpers of the libFuzzer targets. Each target feeds the input to one loader: bad input
// must come back as strata::InputError (caught here); any other exception escapes and libFuzzer
// reports it (std::terminate -> abort) together with sanitizer findings, leaks and timeouts.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "costmodel/catalog.h"
#include "costmodel/errors.h"
#include "costmodel/json_reader.h"
#include "costmodel/predictor.h"
#include "formats/plan_json.h"

namespace strata::fuzz {

inline std::string as_text(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// The built-in catalog (models/, configs/) of the source tree this target was built from.
inline const Catalog& catalog() {
  static Catalog c(Catalog::default_data_dir());
  return c;
}

// A prediction the loaders let through must be finite and positive (or an ordinary infeasible
// result): anything else is a bug, reported as a crash.
inline void check_prediction(const Job& job) {
  Prediction p = predict(job);
  if (std::string defect = prediction_defect(p); !defect.empty()) {
    std::fprintf(stderr, "non-finite prediction: %s\n", defect.c_str());
    std::abort();
  }
}

}  // namespace strata::fuzz
