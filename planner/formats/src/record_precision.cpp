#include "record_precision.h"

#include <cctype>
#include <regex>
#include <string_view>

#include "record_text.h"

namespace strata::record {

namespace {

// The fp8 recipe a precision text names first by one of Megatron-Bridge's short names (its
// performance tables and recipe names: FP8-CS current scaling, FP8-MX MXFP8, FP8-DS delayed,
// FP8-SC sub-channel, i.e. Transformer Engine's blockwise recipe). Empty when it names none.
std::optional<LowPrecisionRecipe> first_named_fp8_recipe(const std::string& prec) {
  static constexpr std::pair<const char*, LowPrecisionRecipe> kNames[] = {
      {"fp8-cs", LowPrecisionRecipe::tensorwise}, {"fp8_cs", LowPrecisionRecipe::tensorwise},
      {"fp8-mx", LowPrecisionRecipe::mxfp8},      {"fp8_mx", LowPrecisionRecipe::mxfp8},
      {"mx-fp8", LowPrecisionRecipe::mxfp8},      {"mxfp8", LowPrecisionRecipe::mxfp8},
      {"fp8-ds", LowPrecisionRecipe::delayed},    {"fp8_ds", LowPrecisionRecipe::delayed},
      {"fp8-sc", LowPrecisionRecipe::blockwise},  {"fp8_sc", LowPrecisionRecipe::blockwise}};
  std::optional<LowPrecisionRecipe> first;
  std::size_t first_at = std::string::npos;
  for (const auto& [name, recipe] : kNames) {
    const std::string_view n(name);
    for (std::size_t at = prec.find(n); at < first_at; at = prec.find(n, at + 1)) {
      // A whole name: "fp8_cs_v2" and "FP8-CS," are, "fp8_scaling" is not FP8-SC.
      const std::size_t end = at + n.size();
      if (end < prec.size() && std::isalpha(static_cast<unsigned char>(prec[end]))) continue;
      first_at = at;
      first = recipe;
    }
  }
  return first;
}

}  // namespace

PrecisionReading read_precision_text(const std::string& prec) {
  PrecisionReading out;
  auto has = [&](const char* s) { return prec.find(s) != std::string::npos; };
  if (has("mxfp4") || has("mx-fp4") || has("mx fp4")) {
    // OCP MXFP4 (E2M1 with an E8M0 scale per 32 elements) is not NVFP4 (E4M3 scale per 16, plus a
    // per-tensor scale): another recipe, which Transformer Engine's training recipes do not offer.
    out.unmodelled = "MXFP4";
  } else if (has("nvfp4") || has("fp4")) {
    out.precision = Precision::fp8;
    out.recipe = LowPrecisionRecipe::nvfp4;
  } else if (const auto named = first_named_fp8_recipe(prec)) {
    // Megatron-Bridge's short names ("FP8-MX", "FP8-CS"); a table cell can hold two, the run's
    // first and an alternative in parentheses ("FP8-CS (FP8-MX)"): the first named is the run's.
    out.precision = Precision::fp8;
    out.recipe = *named;
  } else if (has("fp8") || has("float8")) {
    out.precision = Precision::fp8;
    // Megatron-Bridge's short recipe names were read above (first_named_fp8_recipe). Per-tensor
    // current scaling is also torchao's default Float8 training (tensorwise dynamic scaling).
    // Blockwise first: Transformer Engine's Float8BlockScaling recipe also says "float8".
    // DeepSeek-V3's scaling (1x128 activation tiles, 128x128 weight blocks) is also written
    // "per-block" or "block-wise".
    if (has("blockwise") || has("block-wise") || has("per-block") || has("per block") || has("block scaling") ||
        has("block-scaling") || has("blockscaling") || has("deepseek") || has("128x128") || has("sub-channel") ||
        has("subchannel"))
      out.recipe = LowPrecisionRecipe::blockwise;
    else if (has("current scaling") || has("tensorwise") || has("float8") ||
             has("dynamic scaling") || has("per-tensor dynamic") || has("per-tensor current"))
      out.recipe = LowPrecisionRecipe::tensorwise;
    else if (has("delayed") || has("amax history"))
      out.recipe = LowPrecisionRecipe::delayed;
    else
      out.recipe_assumed = true;  // Transformer Engine's default recipe is delayed scaling
  } else if ((has("bf16") || has("bfloat16")) && !has("fp16")) {
    out.precision = Precision::bf16;
  } else if (has("fp16") || has("float16")) {  // "fp16 or bf16" reads as fp16, the older default
    out.precision = Precision::fp16;
  } else if (has("tf32")) {  // fp32 tensors, GEMMs on the TF32 tensor cores
    out.precision = Precision::tf32;
  } else if (has("fp32")) {
    out.precision = Precision::fp32;
  } else if (has("int8") || has("int4")) {
    // Integer GEMMs in training (SwitchBack, Jetfire) have no Transformer Engine recipe; read as
    // bf16 they would pass for a stated precision.
    out.unmodelled = has("int8") ? "INT8" : "INT4";
  } else {
    out.stated = false;
  }
  if (out.precision == Precision::fp8 && out.recipe != LowPrecisionRecipe::nvfp4)
    out.fp8_params = has("fp8 params") || has("fp8-param") || has("fp8_param") || has("fp8 weights");
  out.bf16_grads = has("grad-reduce-in-bf16") || has("bf16 grad");
  return out;
}

std::optional<std::pair<int, int>> read_bf16_layers(const std::string& text, const std::string& where) {
  // The count: the first group of the pattern that matched ("first 2" or "2 first" word orders).
  auto count = [&](const std::regex& re) -> std::optional<int> {
    std::smatch m;
    if (!std::regex_search(text, m, re)) return std::nullopt;
    const std::string digits = m[1].matched ? m[1].str() : m[2].str();
    return static_cast<int>(number_in_text(digits, 0, 1 << 20, where, "precision", text));
  };
  static const std::regex start_knob("num[-_ ]layers[-_ ]at[-_ ]start[-_ ]in[-_ ]bf16\\W+([0-9]+)");
  static const std::regex end_knob("num[-_ ]layers[-_ ]at[-_ ]end[-_ ]in[-_ ]bf16\\W+([0-9]+)");
  static const std::regex first_words("(?:first ([0-9]+)|([0-9]+) first) (?:decoder |transformer )?(?:layers|blocks) (?:in |kept in |as )?bf16");
  static const std::regex last_words("(?:last ([0-9]+)|([0-9]+) last) (?:decoder |transformer )?(?:layers|blocks) (?:in |kept in |as )?bf16");
  // "first 2 and last 2 layers in BF16": one noun for both counts.
  static const std::regex both_words("first ([0-9]+) and (?:the )?last ([0-9]+) (?:decoder |transformer )?(?:layers|blocks) (?:in |kept in |as )?bf16");
  std::optional<int> first = count(start_knob), last = count(end_knob);
  if (std::smatch m; (!first || !last) && std::regex_search(text, m, both_words)) {
    if (!first) first = static_cast<int>(number_in_text(m[1].str(), 0, 1 << 20, where, "precision", text));
    if (!last) last = static_cast<int>(number_in_text(m[2].str(), 0, 1 << 20, where, "precision", text));
  }
  if (!first) first = count(first_words);
  if (!last) last = count(last_words);
  const bool named = text.find("first_last_layers_bf16") != std::string::npos ||
                     text.find("first-last-layers-bf16") != std::string::npos ||
                     text.find("first and last layers in bf16") != std::string::npos;
  if (!first && !last && !named) return std::nullopt;
  return std::pair<int, int>{first.value_or(named ? 1 : 0), last.value_or(named ? 1 : 0)};
}

}  // namespace strata::record
