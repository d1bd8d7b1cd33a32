#include "record_recompute.h"

#include <algorithm>
#include <optional>
#include <regex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "costmodel/errors.h"
#include "formats/plan_input.h"
#include "record_precision.h"
#include "record_text.h"

namespace strata::record {

namespace {

// A recompute text without a leading label ("activation checkpointing: full" reads "full").
std::string without_label(const std::string& text) {
  static const std::regex label_re("^\\s*(?:activation\\s+)?(?:checkpointing|recomputation|recompute)\\s*[:=]\\s*", std::regex::icase);
  return std::regex_replace(text, label_re, "", std::regex_constants::format_first_only);
}

// Megatron's flags that turn recompute on name its granularity: --recompute-activations is
// selective (arguments.py sets recompute_granularity = 'selective'), the older
// --checkpoint-activations full. Empty when the text names neither.
std::optional<RecomputeGranularity> recompute_flag(const std::string& text) {
  auto has = [&](const char* s) { return text.find(s) != std::string::npos; };
  if (has("recompute-activations") || has("recompute_activations")) return RecomputeGranularity::selective;
  if (has("checkpoint-activations") || has("checkpoint_activations")) return RecomputeGranularity::full;
  return std::nullopt;
}

// A recompute text that says recompute is off in other words than "none", "no" or "off" (which
// parse_recompute reads), and nothing else: "disabled", "false", "not used", "no activation
// checkpointing" (not "no recompute override in the base config", which says nothing of it).
bool recompute_said_off(const std::string& text) {
  static const std::regex off_re(
      "^\\s*(disabled?|false|0|not used|unused|(no|without)\\s+(activation\\s+)?(recompute|recomputation|checkpointing))\\s*$");
  return std::regex_search(text, off_re);
}

// The block method in prose ("full recompute, block method, 4 layers"; not "every transformer
// block"): the first N layers of each stage. Empty when the text does not name the block method
// with a layer count.
std::optional<int> block_layers_in_prose(const std::string& text) {
  static const std::regex block_re("\\bblock\\s+(method|recompute)|\\b(method|recompute)\\W+block\\b");
  static const std::regex layers_re("\\b([0-9]{1,5})\\s+layers?\\b");
  std::smatch m;
  if (!std::regex_search(text, block_re) || !std::regex_search(text, m, layers_re)) return std::nullopt;
  const int n = std::stoi(m[1].str());
  return n >= 1 ? std::optional<int>(n) : std::nullopt;
}

// A recompute text that says recompute is on without naming a granularity: plain "yes" or
// "activation checkpointing". It reads as selective, what Megatron's flag turns on; the completion
// tries full as well (and DeepSpeed's and PyTorch's checkpointing, which wraps whole layers, is full).
bool recompute_said_on(const std::string& text) {
  static const std::regex on_re(
      "^\\s*(yes|true|on|enabled?|used)\\b|(activation|gradient)s?\\s+(checkpointing|recomputation|recompute)\\b");
  return text.find("not ") == std::string::npos && text.find("unknown") == std::string::npos && std::regex_search(text, on_re);
}

// The selective-recompute modules a record names in its own words, beyond a bracketed list:
// Megatron-Core's module identifiers as written in code (lowercase tokens: "selective: layernorm,
// mla_up_proj"), and the words papers use for them ("RMSNorm and MLA up-projection", DeepSeek-V3's
// technical report, section 3.2.3; "attention core"; "the experts' activation"; "shared experts";
// "MLP"). "MoE" in prose is not read as the moe module (it also qualifies the experts' activation).
// 0 when it names none.
unsigned recompute_modules_in_text(const std::string& text) {
  unsigned bits = 0;
  static const std::regex token_re("[A-Za-z0-9_]+");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), token_re); it != std::sregex_iterator(); ++it)
    if (auto m = recompute_modules_from_string(it->str())) bits |= *m;  // exact, case-sensitive identifiers
  const std::string lt = lower(text);
  static const std::pair<std::regex, unsigned> prose[] = {
      {std::regex("\\b(rms ?norm|layer ?norms?)\\b"), kRecomputeLayernorm},
      {std::regex("\\bup[- ]?projections?\\b"), kRecomputeMlaUpProj},
      {std::regex("\\b(core attention|attention core|attention scores)\\b"), kRecomputeCoreAttn},
      {std::regex("\\b(moe|experts?'?) activations?\\b"), kRecomputeMoeAct},
      {std::regex("\\bshared[- ]experts?\\b"), kRecomputeSharedExperts},
      {std::regex("\\b(mlps?|feed[- ]forward)\\b"), kRecomputeMlp}};
  for (const auto& [re, bit] : prose)
    if (std::regex_search(lt, re)) bits |= bit;
  return bits;
}

}  // namespace

void read_recompute(const nlohmann::json& r, const std::string& where, bool recipe_assumed, TrainingSpec& t, ParallelPlan& p,
                    ValidationRun& run) {
  std::vector<std::string>& as = run.assumptions;
  std::string rtext = text_of(r, "recompute");
  auto rc = parse_recompute(without_label(rtext));
  // A recipe's selective modules ("recompute_modules": ["mla_up_proj", "mlp"]), which Megatron runs
  // only with --recompute-granularity selective.
  auto modules_knob = [](const std::string& text) -> std::optional<std::string> {
    const std::size_t at = text.find("recompute_modules"), close = text.find(']', at);
    if (at == std::string::npos || close == std::string::npos || text.find('[', at) > close || close - at >= 200) return std::nullopt;
    std::string knob = text.substr(at, close + 1 - at);
    knob.erase(std::remove_if(knob.begin(), knob.end(), [](char c) { return c == '"' || c == '\'' || c == ':'; }), knob.end());
    return "selective, " + knob;
  };
  if (!rc) {
    if (auto knob = modules_knob(lower(rtext))) {
      rtext = *knob;
      rc = parse_recompute(rtext);
    }
  }
  if (!rc) {
    // The field does not say, but the recipe knobs quoted in the notes may: its selective modules,
    // or its granularity with method and layers.
    const std::string notes = lower(text_of(r, "notes"));
    const auto granularity = knob_string(notes, "recompute_granularity");
    if (auto knob = modules_knob(notes)) {
      rtext = *knob;
    } else if (granularity && parse_recompute(*granularity)) {
      rtext = *granularity;
      if (auto method = knob_string(notes, "recompute_method")) rtext += " recompute_method: " + *method;
      if (auto n = knob_int(notes, "recompute_num_layers")) rtext += " recompute_num_layers: " + std::to_string(*n);
    }
    if (auto from_notes = parse_recompute(rtext)) {
      rc = from_notes;
      as.push_back("recompute not stated in its field; read from the recipe knobs in the notes: " + rtext);
    }
  }
  if (!rc) {
    // The field quoting Megatron's flag or knob itself ("--recompute-granularity full
    // --recompute-method uniform --recompute-num-layers 1").
    if (auto granularity = knob_string(lower(rtext), "recompute_granularity")) rc = parse_recompute(*granularity);
  }
  if (!rc) rc = recompute_flag(lower(rtext));
  if (!rc && recompute_said_off(lower(rtext))) rc = RecomputeGranularity::none;
  if (!rc) {
    if (recompute_said_on(lower(rtext))) {
      // On, in words that name no granularity: the completion tries selective and full.
      rc = RecomputeGranularity::selective;
      run.unknown.recompute = run.unknown.recompute_on = true;
    } else {
      rc = RecomputeGranularity::none;
      run.unknown.recompute = true;
    }
  }
  p.recompute.granularity = *rc;
  if (*rc == RecomputeGranularity::full) {
    // Megatron's --recompute-method block recomputes only the first --recompute-num-layers layers of
    // each stage; uniform (or no method) recomputes them all, in groups.
    const std::string lr = lower(rtext);
    if (knob_string(lr, "recompute_method").value_or("") == "block") {
      const auto n = knob_int(lr, "recompute_num_layers");
      if (!n) throw InputError(where, "/recompute", "--recompute-method block needs --recompute-num-layers N, found \"" + rtext + "\"");
      p.recompute.num_layers = *n;
    } else if (const auto n = block_layers_in_prose(lr)) {
      p.recompute.num_layers = *n;
      as.push_back(fmt::format("recompute read as Megatron's block method: the first {} layers of each stage", *n));
    }
  }
  if (*rc == RecomputeGranularity::selective && !contains(rtext, "recompute_modules")) {
    // "selective (core_attn, mlp)": a parenthesized list of Megatron-Core's module names; else the
    // modules the text names in other words; else Megatron's default module (core_attn), said.
    const auto open = rtext.find('('), close = rtext.find(')', open);
    std::optional<unsigned> listed;
    if (open != std::string::npos && close != std::string::npos)
      listed = recompute_modules_from_string(rtext.substr(open + 1, close - open - 1));
    if (listed) {
      p.recompute.modules = *listed;
    } else if (const unsigned named = recompute_modules_in_text(rtext)) {
      p.recompute.modules = named;
      as.push_back(fmt::format("selective recompute modules read from the recompute text: {}",
                               fmt::join(recompute_module_names(named), ", ")));
    } else if (!run.unknown.recompute) {
      as.push_back("selective recompute modules not named; Megatron's default, core_attn");
    }
  }
  if (*rc == RecomputeGranularity::selective && contains(rtext, "recompute_modules")) {
    // Megatron-Core's selective modules, as a recipe lists them: "recompute_modules ['layernorm', 'moe_act']".
    const auto open = rtext.find('[', rtext.find("recompute_modules")), close = rtext.find(']', open);
    std::string names = open != std::string::npos && close != std::string::npos ? rtext.substr(open + 1, close - open - 1) : "";
    names.erase(std::remove_if(names.begin(), names.end(), [](char c) { return c == '\'' || c == '"'; }), names.end());
    const auto modules = recompute_modules_from_string(names);
    if (!modules) throw InputError(where, "/recompute", "expected recompute_modules of core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, "
                                                        "shared_experts, found \"" + rtext + "\"");
    p.recompute.modules = *modules;
    // Megatron refuses these modules under delayed scaling, so a run that used them in fp8 did not
    // use Transformer Engine's default recipe.
    if (t.precision == Precision::fp8 && recipe_assumed && (*modules & (kRecomputeMoeAct | kRecomputeLayernorm))) {
      t.recipe = LowPrecisionRecipe::tensorwise;
      std::replace(as.begin(), as.end(), std::string(kAssumedDelayedRecipe),
                   std::string("fp8 recipe not stated; assumed current (tensorwise) scaling: the run recomputes moe_act or "
                               "layernorm, which Megatron refuses under the default delayed scaling"));
    }
  }
}

}  // namespace strata::record
