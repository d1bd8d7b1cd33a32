#pragma once
// How strata reads the precision a published-run record states: the GEMM precision, the
// Transformer Engine recipe and the fp8 options, and the layers kept in bf16. Internal to the
// formats library (validation_runs.cpp).

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "costmodel/job.h"

namespace strata::record {

// What a record's free-text precision says: the GEMM precision, and for fp8 the Transformer Engine
// recipe and whether the parameters themselves are fp8. A low-precision format wins over the
// "BF16 master" / "--bf16" that fp8 and fp4 runs also mention.
struct PrecisionReading {
  Precision precision = Precision::bf16;
  LowPrecisionRecipe recipe = LowPrecisionRecipe::delayed;
  bool fp8_params = false;
  bool bf16_grads = false;
  bool stated = true;
  bool recipe_assumed = false;
  std::string unmodelled;  // a format strata has no recipe for (the record is refused, naming it)
};

// The assumption an fp8 record without a named recipe is read with (Transformer Engine's default),
// until its recompute modules or its stack say otherwise and replace it.
inline constexpr std::string_view kAssumedDelayedRecipe = "fp8 recipe not stated; assumed Transformer Engine's default delayed scaling";

// The reading of a record's precision field, lower-cased.
PrecisionReading read_precision_text(const std::string& prec);

// Decoder layers a low-precision record keeps in bf16 at the start and at the end of the model
// (Megatron --first-last-layers-bf16, Megatron-Bridge first_last_layers_bf16 with
// num_layers_at_start/end_in_bf16), as records word it: the knobs or flags with their counts,
// "4 last layers in BF16", "first and last layers in BF16" (Megatron's default of one each).
// Empty when the text says nothing of it.
std::optional<std::pair<int, int>> read_bf16_layers(const std::string& text, const std::string& where);

}  // namespace strata::record
