#include "formats/validation_runs.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "costmodel/errors.h"
#include "costmodel/json_reader.h"
#include "costmodel/memory_model.h"
#include "costmodel/predictor.h"
#include "formats/plan_input.h"
#include "launch/megatron_import.h"

namespace strata {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool contains(const std::string& hay, const std::string& needle) { return lower(hay).find(lower(needle)) != std::string::npos; }

// What a record's free text says of fused (flash) attention: used ("FlashAttention-2",
// "--use-flash-attn"), not used ("no flash attention", "without flash", "unfused attention"), or
// nothing.
std::optional<bool> stated_flash_attention(const std::string& text) {
  const std::string t = lower(text);
  for (const char* off : {"no flash", "without flash", "non-flash", "flash attention off", "flash attention disabled",
                          "unfused attention", "no fused attention"})
    if (t.find(off) != std::string::npos) return false;
  if (t.find("flash") != std::string::npos || t.find("fused attention") != std::string::npos) return true;
  return std::nullopt;
}

std::string text_of(const nlohmann::json& r, const char* key) {
  auto it = r.find(key);
  return (it != r.end() && it->is_string()) ? it->get<std::string>() : std::string();
}

std::optional<double> number_of(const nlohmann::json& r, const char* key) {
  auto it = r.find(key);
  if (it == r.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// Plausible ranges of measured figures. Far wider than any real run, but a step of 1e300 s or a
// millionth of a token per second is a typo or a unit error, and fitting a calibration to it (or
// scoring a prediction against it) would only spread the error.
struct MeasuredRange {
  double lo, hi;
  const char* unit;
};
constexpr MeasuredRange kIterationTimeRange{1e-4, 1e5, "seconds (a training step of 0.1 ms to about a day)"};
constexpr MeasuredRange kTokensRange{1e-3, 1e8, "tokens/s per GPU"};
constexpr MeasuredRange kMemoryRange{1e-3, 1e4, "GB per GPU"};

// A measured figure: absent or null when not published, else a finite number within `range`.
std::optional<double> measured(const nlohmann::json& r, const char* key, const std::string& where, const MeasuredRange& range) {
  auto it = r.find(key);
  if (it == r.end() || it->is_null()) return std::nullopt;
  if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() <= 0)
    throw InputError(where, "/" + std::string(key), "expected a positive number or null, found " + it->dump());
  const double v = it->get<double>();
  if (v < range.lo || v > range.hi)
    throw InputError(where, "/" + std::string(key),
                     fmt::format("expected {:g}..{:g} {}, found {}", range.lo, range.hi, range.unit, it->dump()));
  return v;
}

// A count or rate read out of free text: digits only, within [lo, hi], else the record is rejected.
double number_in_text(const std::string& digits, double lo, double hi, const std::string& where, const char* key,
                      const std::string& text) {
  double v = digits.size() > 9 ? hi + 1 : std::stod(digits);
  if (v < lo || v > hi)
    throw InputError(where, "/" + std::string(key), "the value " + digits + " in \"" + text + "\" is out of range (expected " +
                                                        fmt::format("{:g}..{:g}", lo, hi) + ")");
  return v;
}

// Earliest four-digit year (19xx/20xx) mentioned in a text, or 0.
int year_in(const std::string& s) {
  // Whole words only, so that commit hashes ("a2019bc") are not read as years.
  static const std::regex re("\\b(19|20)[0-9]{2}\\b");
  int best = 0;
  for (auto it = std::sregex_iterator(s.begin(), s.end(), re); it != std::sregex_iterator(); ++it) {
    int y = std::stoi(it->str());
    if (best == 0 || y < best) best = y;
  }
  return best;
}

// The year of an NGC container release named YY.MM ("NeMo 25.11 container", "Megatron-Bridge
// 26.04.01", "nvcr.io/nvidia/pytorch:24.07-py3", MLPerf's "ngc23.09"), or 0. The year follows the
// name after non-digits only, so no longer number ends in it.
int container_year(const std::string& s) {
  static const std::regex re("(?:nemo|container|nvcr|pytorch|bridge|ngc)[^0-9]{0,40}(2[0-9])\\.(0[1-9]|1[0-2])\\b",
                             std::regex::icase);
  std::smatch m;
  return std::regex_search(s, m, re) ? 2000 + std::stoi(m[1].str()) : 0;
}

// The year a source was published, for records whose framework field gives none: a four-digit
// year, a venue tag ("SC21", "MICRO'24") or an arXiv identifier ("arXiv:2104.04473"). The
// earliest one found; 0 when there is none.
int publication_year(const std::string& s) {
  int best = year_in(s);
  static const std::regex venue_re("\\b(?:SC|MICRO|ISCA|ASPLOS|OSDI|SOSP|NSDI|EuroSys|PPoPP|MLSys|NeurIPS|ICML|ICLR|PACT)\\s*'?([0-9]{2})\\b");
  static const std::regex arxiv_re("arXiv:\\s*([0-9]{2})[0-9]{2}\\.");
  for (const std::regex* re : {&venue_re, &arxiv_re})
    for (auto it = std::sregex_iterator(s.begin(), s.end(), *re); it != std::sregex_iterator(); ++it) {
      int y = 2000 + std::stoi((*it)[1].str());
      if (best == 0 || y < best) best = y;
    }
  return best;
}

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

// A recompute text that says recompute is on without naming a granularity: plain "yes" or
// "activation checkpointing". It reads as selective, what Megatron's flag turns on; the completion
// tries full as well (and DeepSpeed's and PyTorch's checkpointing, which wraps whole layers, is full).
bool recompute_said_on(const std::string& text) {
  static const std::regex on_re(
      "^\\s*(yes|true|on|enabled?|used)\\b|(activation|gradient)s?\\s+(checkpointing|recomputation|recompute)\\b");
  return text.find("not ") == std::string::npos && text.find("unknown") == std::string::npos && std::regex_search(text, on_re);
}

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

// Decoder layers a low-precision record keeps in bf16 at the start and at the end of the model
// (Megatron --first-last-layers-bf16, Megatron-Bridge first_last_layers_bf16 with
// num_layers_at_start/end_in_bf16), as records word it: the knobs or flags with their counts,
// "4 last layers in BF16", "first and last layers in BF16" (Megatron's default of one each).
// Empty when the text says nothing of it.
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

GpuSpec resolve_gpu(const std::string& text, std::optional<double> memory_gb, const Catalog& catalog,
                    std::vector<std::string>& assumptions, const std::string& where) {
  if (memory_gb && (!std::isfinite(*memory_gb) || *memory_gb <= 0 || *memory_gb > 1e5))
    throw InputError(where, "/gpu_memory_gb", "expected a positive number of GB (at most 100000)");
  std::string base = text.substr(0, text.find('('));
  while (!base.empty() && std::isspace(static_cast<unsigned char>(base.back()))) base.pop_back();
  // The vendor or the system before the part ("NVIDIA B200", "DGX B200", "AMD Instinct MI300X"):
  // the part is what names the GPU.
  static const std::regex vendor_re("^((nvidia|amd|dgx|hgx|tesla|instinct)[\\s_-]+)+", std::regex::icase);
  base = std::regex_replace(base, vendor_re, "");
  // The memory size, when the record states it: gpu_memory_gb, else "NN GB" in the free text
  // ("A100-SXM4 (DGX-A100, 2020; ... likely 40GB)").
  static const std::regex mem_re("([0-9]+)\\s*GB", std::regex::icase);
  std::smatch m;
  std::optional<double> mem = memory_gb;
  if (!mem && std::regex_search(text, m, mem_re)) mem = number_in_text(m[1].str(), 1, 100000, where, "gpu_type", text);
  auto unknown = [&](const std::string& detail) {
    return InputError(where, "/gpu_type", "unknown GPU type \"" + text + "\"" + detail + "; `strata list gpus` shows the known ones");
  };
  std::optional<GpuSpec> gpu;
  try {
    gpu = catalog.gpu(base);
  } catch (const InputError&) {
  }
  // A name that resolves to a part of another memory size ("A100" is the 80GB part) is read as
  // its family plus the stated size.
  if (gpu && mem && std::fabs(gpu->memory_GiB - *mem) / *mem <= 0.1) return *gpu;
  std::string family = lower(base.substr(0, base.find_first_of("- ")));
  if (family.empty()) throw unknown("");
  // A variant the catalog does not know ("H100 NVL", "H200 NVL", "H100 PCIe" where no such part is
  // listed) is another GPU (clocks, power, links), never its family's SXM part.
  if (!gpu && (contains(base, "nvl") || contains(base, "pcie")))
    throw unknown(" (a variant of " + family + " that strata does not list; its SXM part is another GPU)");
  const bool mem_stated = mem.has_value();
  if (!mem) {
    if (gpu) {
      if (normalize_name(base) != normalize_name(gpu->name))
        assumptions.push_back("GPU memory size not stated; assumed " + gpu->name);
      return *gpu;
    }
    mem = 80;
    assumptions.push_back("GPU memory size not stated; assumed " + family + " 80GB");
  }
  try {
    return catalog.gpu(family + "-" + std::to_string(static_cast<int>(*mem)) + "gb");
  } catch (const InputError&) {
    // Neither the name nor its family with the assumed size is a known part: say only that (the
    // assumed 80 GB is not the record's). Otherwise the name resolved, but to a part of another
    // memory size than the record states: another part.
    if (!gpu && !mem_stated) throw unknown("");
    throw unknown(" (no " + family + " part with " + std::to_string(static_cast<int>(*mem)) + " GB is known)");
  }
}

// GPUs in one compute tray of an NVL72 rack (GB200/GB300: 18 trays of 4 GPUs, NVIDIA GB200 NVL72
// datasheet): the unit a rack's NIC counts are quoted per.
constexpr int kGpusPerNvl72Tray = 4;

// Rates a record writes as InfiniBand generations after a port count ("8x NDR400", "4x HDR",
// "8x ConnectX-7 NDR": EDR 100, HDR 200, NDR 400, XDR 800 Gb/s per port, the InfiniBand Trade
// Association's roadmap) or in Tb/s ("3.2 Tbps per node"), rewritten in Gb/s for the patterns of
// apply_interconnect.
std::string rates_in_gbps(const std::string& text) {
  static const std::regex ib_re("([0-9]+)\\s*x\\s*([A-Za-z0-9 -]*?)\\b(EDR|HDR|NDR|XDR)(?:100|200|400|800)?\\b", std::regex::icase);
  static const std::regex tbps_re("([0-9]{1,6}(?:\\.[0-9]{1,6})?)\\s*(?:Tb/s|Tbps|Tbit/s)", std::regex::icase);
  std::string out;
  auto rewrite = [&](const std::string& in, const std::regex& re, auto&& replacement) {
    std::string result;
    auto last = in.cbegin();
    for (auto it = std::sregex_iterator(in.begin(), in.end(), re); it != std::sregex_iterator(); ++it) {
      result.append(last, (*it)[0].first);
      result += replacement(*it);
      last = (*it)[0].second;
    }
    result.append(last, in.cend());
    return result;
  };
  out = rewrite(text, ib_re, [](const std::smatch& m) {
    const std::string gen = lower(m[3].str());
    const int rate = gen == "edr" ? 100 : gen == "hdr" ? 200 : gen == "ndr" ? 400 : 800;
    return m[1].str() + "x (" + std::to_string(rate) + " Gb/s) " + m[2].str();
  });
  return rewrite(out, tbps_re, [](const std::smatch& m) {
    return fmt::format("{:.0f} Gb/s", std::stod(m[1].str()) * 1000);
  });
}

void apply_interconnect(const std::string& record_text, ClusterSpec& c, std::vector<std::string>& assumptions, const std::string& where) {
  const std::string text = rates_in_gbps(record_text);
  // "8x200 Gb/s HCAs per node", "4x OmniPath (100 Gb/s) per node", "inter-node 800 Gb/s per node",
  // "1600 Gb/s node-node RoCE", "intra-node 150 GB/s", "4x 400Gbps", "InfiniBand XDR 800 Gb/s per
  // GPU", "4x 400 Gb/s ConnectX-7 per compute tray (one per GPU)".
  static const std::string gbps = "\\s*(?:Gb/s|Gbps|Gbit/s)";
  static const std::regex nics_re("([0-9]+)\\s*x\\s*[A-Za-z -]*\\(?\\s*([0-9]+)" + gbps, std::regex::icase);
  static const std::regex node_re("inter-node\\s*([0-9]+)" + gbps + "|([0-9]+)" + gbps + "\\s*(?:per node|node-node|node-to-node)",
                                  std::regex::icase);
  static const std::regex per_gpu_re("([0-9]+)" + gbps + "[^;,]*?(?:per GPU|each GPU)|one per GPU|1 per GPU", std::regex::icase);
  static const std::regex intra_re("intra-node\\s*([0-9]+)\\s*GB/s", std::regex::icase);
  std::smatch m;
  const bool per_gpu = std::regex_search(text, m, per_gpu_re);
  const std::string per_gpu_rate = per_gpu && m[1].matched ? m[1].str() : "";
  if (std::regex_search(text, m, nics_re)) {
    c.nics_per_node = static_cast<int>(number_in_text(m[1].str(), 1, 1024, where, "interconnect", text));
    c.nic_Gbps = number_in_text(m[2].str(), 1, 1e6, where, "interconnect", text);
    if (per_gpu) {
      c.nics_per_node = c.gpus_per_node;  // "(one per GPU)": the count describes a part of the node
    } else if (contains(text, "per tray") || contains(text, "per compute tray")) {
      c.nics_per_node = std::max(1, c.nics_per_node * c.gpus_per_node / kGpusPerNvl72Tray);
      assumptions.push_back(fmt::format("NICs quoted per compute tray: {} GPUs per tray (NVL72), {} NICs per {}-GPU NVLink domain",
                                        kGpusPerNvl72Tray, c.nics_per_node, c.gpus_per_node));
    }
  } else if (!per_gpu_rate.empty()) {
    c.nics_per_node = c.gpus_per_node;
    c.nic_Gbps = number_in_text(per_gpu_rate, 1, 1e6, where, "interconnect", text);
  } else if (std::regex_search(text, m, node_re)) {
    c.nics_per_node = 1;
    c.nic_Gbps = number_in_text(m[m[1].matched ? 1 : 2].str(), 1, 1e6, where, "interconnect", text);
  } else {
    assumptions.push_back("inter-node network not stated; assumed " + std::to_string(c.nics_per_node) + "x " +
                          std::to_string(static_cast<int>(c.nic_Gbps)) + " Gb/s per node (" + c.name + ")");
  }
  if (std::regex_search(text, m, intra_re)) c.intra_node_GBps = number_in_text(m[1].str(), 1, 1e6, where, "interconnect", text);
}

// The Megatron flag of a setting's name: "tp_comm_overlap" is "--tp-comm-overlap".
std::string flag_of(const std::string& key) {
  std::string flag = "--" + key;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

// A setting a record's free text quotes, in any of the spellings published runs use: a recipe
// knob (`"key": value`, `key=value`, `key: value`, `key = value`; quoted or not) or a Megatron flag
// (`--key-with-dashes value`, `--key-with-dashes=value`). A flag given without a value (the next
// word is another flag, or nothing) reads "true". Empty when the text does not name it.
std::optional<std::string> knob_string(const std::string& text, const std::string& key) {
  const std::string flag = flag_of(key);
  for (const std::string& name : {"\"" + key + "\"", "'" + key + "'", flag, key}) {
    for (std::size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
      // Whole names only: "etp" is not the end of "expert_etp", nor "--fp8" the start of "--fp8-recipe".
      const std::size_t after = at + name.size();
      auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; };
      if ((at > 0 && word(text[at - 1]) && name[0] != '-') || (after < text.size() && word(text[after]))) continue;
      std::size_t i = after;
      while (i < text.size() && (text[i] == ' ' || text[i] == ':' || text[i] == '=')) ++i;
      const bool separated = i > after;
      if (i >= text.size() || (name == flag && text.compare(i, 2, "--") == 0)) {
        if (name == flag) return std::string("true");
        continue;
      }
      if (!separated && name != flag) continue;
      const char quote = text[i];
      if (quote == '"' || quote == '\'') {
        // A quoted value is at most 4 KiB: look no further for its closing quote.
        const std::size_t end = std::string_view(text).substr(i + 1, 4096).find(quote);
        if (end == std::string::npos) continue;
        return text.substr(i + 1, end);
      }
      std::size_t j = i;
      while (j < text.size() && j < i + 4096 && !std::isspace(static_cast<unsigned char>(text[j])) && text[j] != ',' &&
             text[j] != ';' && text[j] != '}' && text[j] != ')')
        ++j;
      if (j > i) return text.substr(i, j - i);
      if (name == flag) return std::string("true");
    }
  }
  return std::nullopt;
}

// A list-valued knob: `"key": ["a", "b"]`, `key=[a, b]`, or a Megatron flag and the words after it
// (`--key a b`, as many words as `item` accepts); its items separated by spaces, trimmed
// ("" for an empty list). A single value reads as a list of one. nullopt when the text does not name it.
std::optional<std::string> knob_list(const std::string& text, const std::string& key,
                                     const std::function<bool(const std::string&)>& item) {
  const auto v = knob_string(text, key);
  if (!v) return std::nullopt;
  auto items = [](std::string list) {
    for (char& c : list)
      if (c == ',' || c == '"' || c == '\'' || c == '=') c = ' ';
    const std::size_t from = list.find_first_not_of(' '), to = list.find_last_not_of(' ');
    return from == std::string::npos ? std::string() : list.substr(from, to - from + 1);
  };
  for (const std::string& name : {"\"" + key + "\"", "'" + key + "'", key}) {
    const std::size_t at = text.find(name);
    if (at == std::string::npos) continue;
    std::size_t i = at + name.size();
    while (i < text.size() && (text[i] == ' ' || text[i] == ':' || text[i] == '=')) ++i;
    if (i < text.size() && text[i] == '[') {
      const std::size_t close = text.find(']', i);
      if (close == std::string::npos || close - i > 1024) return std::nullopt;
      return items(text.substr(i + 1, close - i - 1));
    }
  }
  // A flag: its words up to the first that is not a list item (a flag, prose, the next field).
  const std::string flag = flag_of(key) + " ";
  if (const std::size_t at = text.find(flag); at != std::string::npos) {
    std::string list;
    std::size_t i = at + flag.size();
    while (i < text.size()) {
      std::size_t end = i;
      while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
      if (end == i || !item(text.substr(i, end - i))) break;
      list += text.substr(i, end - i) + " ";
      i = end;
      while (i < text.size() && (text[i] == ' ' || text[i] == ',')) ++i;
    }
    return items(list);
  }
  return items(*v);
}

void read_cuda_graphs(const std::string& stated, const std::string& where, Job& job, std::vector<std::string>& as);

// The knob as a whole number (at most 6 digits), if stated as one.
std::optional<int> knob_int(const std::string& text, const std::string& key) {
  const auto v = knob_string(text, key);
  if (!v || v->empty() || v->size() > 6 || !std::all_of(v->begin(), v->end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return std::nullopt;
  return std::stoi(*v);
}

// The knob as a decimal number ("1.5"), if stated as one.
std::optional<double> knob_number(const std::string& text, const std::string& key) {
  static const std::regex decimal("[0-9]{1,6}(\\.[0-9]{1,6})?");
  const auto v = knob_string(text, key);
  if (!v || !std::regex_match(*v, decimal)) return std::nullopt;
  return std::stod(*v);
}

// The knob as a truth value ("true"/"True"/"1", or a bare flag), if stated as one. A Megatron
// flag followed by prose ("--tp-comm-overlap and ...") is a switch: it is on.
std::optional<bool> knob_bool(const std::string& text, const std::string& key) {
  const auto v = knob_string(text, key);
  if (!v) return std::nullopt;
  const std::string b = lower(*v);
  if (b == "true" || b == "1" || b == "yes" || b == "on") return true;
  if (b == "false" || b == "0" || b == "no" || b == "off") return false;
  const std::string flag = flag_of(key);
  for (std::size_t at = text.find(flag); at != std::string::npos; at = text.find(flag, at + 1)) {
    const std::size_t after = at + flag.size();
    if (after >= text.size() || !(std::isalnum(static_cast<unsigned char>(text[after])) || text[after] == '-' || text[after] == '_'))
      return true;
  }
  return std::nullopt;
}

// Whether `text` says `phrase` without a negation just before it ("not force-balanced") or a
// negative value just after it ("fp8 attention: false", "force balance off").
bool says_unnegated(const std::string& text, const std::string& phrase) {
  static const std::regex negative_value(R"(^[\s:="']*(false|off|no|disabled|none|not)\b)");
  const std::string t = lower(text);
  for (std::size_t at = t.find(phrase); at != std::string::npos; at = t.find(phrase, at + 1)) {
    const std::string before = t.substr(at >= 12 ? at - 12 : 0, at >= 12 ? 12 : at);
    const std::string after = t.substr(at + phrase.size(), 24);
    if (before.find("not ") == std::string::npos && before.find("no ") == std::string::npos &&
        before.find("without") == std::string::npos && before.find("non-") == std::string::npos &&
        !std::regex_search(after, negative_value))
      return true;
  }
  return false;
}

// The optimizer's state as a record states it: Megatron's knobs or flags (use_precision_aware_optimizer,
// exp_avg_dtype, exp_avg_sq_dtype, main_params_dtype, optimizer_cpu_offload with
// optimizer_offload_fraction) or words ("precision-aware optimizer", "bf16 optimizer states").
// Megatron runs the precision-aware optimizer only inside its distributed optimizer.
void read_optimizer_state(const std::string& stated, Framework fw, ParallelPlan& p, OptimizerSpec& o, std::vector<std::string>& as,
                          const std::string& where) {
  if (fw != Framework::megatron) return;
  auto says = [&](const char* s) { return says_unnegated(stated, s); };
  o.precision_aware = knob_bool(stated, "use_precision_aware_optimizer").value_or(false) || says("precision-aware optimizer") ||
                      says("precision aware optimizer");
  auto dtype = [&](const char* key, StateDtype& dst) {
    const auto v = knob_string(stated, key);
    if (!v) return;
    const auto d = state_dtype_from_string(lower(*v));
    if (!d) throw InputError(where, "/notes", std::string(key) + " \"" + *v + "\": expected fp32, bf16, fp16 or fp8");
    dst = *d;
    o.precision_aware = true;  // Megatron keeps other dtypes only in the precision-aware optimizer
  };
  if (says("bf16 optimizer state") || says("optimizer states in bf16") || says("bf16 moments")) {
    o.exp_avg = o.exp_avg_sq = StateDtype::bf16;
    o.precision_aware = true;
  }
  dtype("exp_avg_dtype", o.exp_avg);
  dtype("exp_avg_sq_dtype", o.exp_avg_sq);
  dtype("main_params_dtype", o.main_params);
  // Offload only as a knob or flag: prose ("optimizer offload disabled") says too little to read.
  if (knob_bool(stated, "optimizer_cpu_offload").value_or(false)) {
    o.cpu_offload_fraction = 1;  // Megatron's default --optimizer-offload-fraction
    if (const auto f = knob_string(stated, "optimizer_offload_fraction")) {
      char* end = nullptr;
      const double v = std::strtod(f->c_str(), &end);
      if (end == f->c_str() || *end != '\0' || !(v >= 0 && v <= 1))
        throw InputError(where, "/notes", "optimizer_offload_fraction \"" + *f + "\": expected a share from 0 to 1");
      o.cpu_offload_fraction = v;
    }
    o.precision_aware = true;  // Megatron requires it for the offload
  }
  if (o.is_default()) return;
  if (!p.distributed_optimizer && p.zero_stage == 0) {
    p.distributed_optimizer = true;
    as.push_back("the precision-aware optimizer runs inside Megatron's distributed optimizer: read with it");
  }
  as.push_back(fmt::format("optimizer state as stated: precision-aware Adam, main params {}, exp_avg {}, exp_avg_sq {}{}", to_string(o.main_params),
                           to_string(o.exp_avg), to_string(o.exp_avg_sq),
                           o.cpu_offload_fraction > 0 ? fmt::format(", {:g}% on the host", 100 * o.cpu_offload_fraction) : ""));
}

// MoE runtime settings a record states in its notes: force-balanced routing or token dropping with
// padding to capacity (both give every expert the mean token count), the expert tensor parallel
// size and the all-to-all overlap of the recipe. Unstated: the documented defaults, reported.
void apply_moe_runtime(const nlohmann::json& r, Job& job, std::vector<std::string>& as) {
  const std::string notes = text_of(r, "notes") + " " + text_of(r, "arch_notes");
  RuntimeOptions& rt = job.runtime;
  const bool forced = says_unnegated(notes, "force-balance") || says_unnegated(notes, "force balance") ||
                      knob_bool(notes, "moe_router_force_load_balancing").value_or(false) ||
                      contains(notes, "force_load_balancing=true");
  if (forced) {
    rt.moe_load_imbalance = 1.0;
  } else if (contains(notes, "capacity factor 1") || contains(notes, "capacity-factor 1")) {
    rt.moe_capacity_factor = 1.0;
  } else {
    as.push_back(fmt::format("MoE routing balance not stated; assumed the default load imbalance {:g}", rt.moe_load_imbalance));
  }
  if (contains(notes, "pad-expert-input-to-capacity") || contains(notes, "pad to capacity")) {
    rt.moe_capacity_factor = 1.0;  // fixed-size expert GEMMs of exactly capacity tokens
    rt.moe_pad_to_capacity = true;
    rt.moe_load_imbalance = 1.0;
  }
  auto etp = knob_int(notes, "expert_tensor_parallel_size");
  if (!etp) etp = knob_int(notes, "etp");
  if (etp && *etp >= 1) job.plan.etp = *etp;
  // Megatron-Bridge's knob, or Megatron's flag and TransformerConfig field.
  rt.moe_a2a_overlap = knob_bool(notes, "moe_a2a_overlap").value_or(false) ||
                       knob_bool(notes, "overlap_moe_expert_parallel_comm").value_or(false);
  const std::string backend = lower(knob_string(notes, "moe_flex_dispatcher_backend").value_or(""));
  rt.moe_token_dedup = backend == "deepep" || backend == "hybridep" || knob_bool(notes, "moe_enable_deepep").value_or(false);
  // HybridEP's static per-rank budget (Megatron-Bridge's full-iteration CUDA graph recipes set it).
  if (auto budget = knob_number(notes, "moe_expert_rank_capacity_factor"); budget && *budget > 0 && backend == "hybridep")
    rt.moe_rank_capacity_factor = *budget;
  // Grouped expert GEMMs unless the record says otherwise: published MoE runs use them
  // (Megatron-LM's MoE examples pass --moe-grouped-gemm; NeMo's and Megatron-Bridge's MoE recipes
  // set moe_grouped_gemm = True), though Megatron's own default is one expert after another.
  const bool sequential = contains(notes, "sequentialmlp") || contains(notes, "\"moe_grouped_gemm\": false") ||
                          contains(notes, "without grouped gemm") || contains(notes, "no grouped gemm");
  rt.moe_grouped_gemm = !sequential;
  const bool stated = sequential || contains(notes, "grouped gemm") || contains(notes, "moe_grouped_gemm") ||
                      contains(text_of(r, "framework"), "megatron-bridge");
  if (!stated)
    as.push_back("MoE expert GEMMs: grouped GEMM not stated; assumed on, as published MoE runs use it (Megatron-LM's MoE examples, "
                 "NeMo and Megatron-Bridge recipes)");
  // Megatron-Core refuses to train MoE with tensor parallelism but no sequence parallelism
  // (MoELayer.forward, megatron/core/transformer/moe/moe_layer.py).
  if (job.plan.tp > 1 && !job.plan.sequence_parallel) {
    job.plan.sequence_parallel = true;
    as.push_back("MoE with tp > 1: sequence parallelism on (Megatron requires it)");
  }
}

// Megatron-FSDP under a Megatron stack: the recipe knob (use_megatron_fsdp), Megatron's flag, the
// FSDP column of Megatron-Bridge's performance tables ("FSDP": "1"), or the optimizer field naming
// it. It shards what its strategy names over the data-parallel ranks (data_parallel_sharding_strategy,
// default optim_grads_params: ZeRO-3), as `--megatron-args` reads --use-megatron-fsdp. Any other
// "FSDP" beside a Megatron framework is the optimizer field's word for Megatron's own sharding.
void read_megatron_fsdp(const nlohmann::json& r, const std::string& where, const std::string& zero, const std::string& fwtext,
                        ParallelPlan& p, std::vector<std::string>& as) {
  const std::string notes = lower(text_of(r, "notes"));
  static const std::regex table_column("\"fsdp\"\\s*:\\s*\"?(1|true)\\b");
  const bool stated = knob_bool(notes, "use_megatron_fsdp").value_or(false) || std::regex_search(notes, table_column) ||
                      contains(zero, "megatron-fsdp") || contains(zero, "megatron fsdp") || contains(zero, "use_megatron_fsdp");
  if (!stated) {
    if (contains(zero, "fsdp")) as.push_back("\"" + zero + "\" under " + fwtext + ": read as Megatron's sharding, not PyTorch FSDP");
    return;
  }
  const std::string strategy = lower(knob_string(notes, "data_parallel_sharding_strategy").value_or("optim_grads_params"));
  // Megatron-FSDP's strategy replaces whatever sharding the optimizer field named.
  p.zero_stage = 0;
  p.distributed_optimizer = false;
  if (!apply_megatron_fsdp_strategy(strategy, p))
    throw InputError(where, "/notes", "data_parallel_sharding_strategy \"" + strategy +
                                          "\": expected no_shard, optim, optim_grads or optim_grads_params");
  static const std::map<std::string, std::string> kSharded = {
      {"optim_grads_params", "parameters, gradients and optimizer state sharded over the data-parallel ranks, costed as ZeRO-3"},
      {"optim_grads", "gradients and optimizer state sharded over the data-parallel ranks, costed as ZeRO-2"},
      {"optim", "optimizer state sharded over the data-parallel ranks, costed as the distributed optimizer"},
      {"no_shard", "nothing sharded"}};
  as.push_back("Megatron-FSDP (" + strategy + "): " + kSharded.at(strategy));
}

// What a Megatron-Bridge performance script sets in its model function, beyond the workload base
// config whose knobs a record quotes. One function does so far: Qwen3-235B-A22B on H100
// (scripts/performance/configs/qwen/qwen3_llm_pretrain.py, qwen3_235b_a22b_pretrain_config_h100)
// passes CommOverlapConfig(tp_comm_overlap=False) from v0.2.1 (v0.1.0rc3's run_script.py passed
// True), and from the r0.3.0 branch head (8301abfc) to v0.5.0 sets moe_token_dispatcher_type =
// "alltoall" after copying the base config's flex backend. The backend only acts with the flex
// dispatcher, and no later step turns it on there: r0.3.0's set_workload_base_configs applies no
// backend, and from v0.4 it applies one only where the base config names it, which no H100 235B
// preset does. So a "moe_flex_dispatcher_backend" knob of that recipe leaves the all-to-all
// dispatcher in place.
void apply_bridge_model_function(const nlohmann::json& r, Job& job, ValidationRun& run, std::vector<std::string>& as) {
  const std::string notes = text_of(r, "notes");  // contains() compares case-blind
  if (!contains(text_of(r, "framework"), "bridge") || !contains(notes, "qwen3_235b_a22b") || !contains(job.cluster.gpu.name, "h100"))
    return;
  if (job.runtime.moe_token_dedup) {
    job.runtime.moe_token_dedup = false;
    as.push_back("Megatron-Bridge's H100 Qwen3-235B function sets the all-to-all dispatcher after the base config's flex backend "
                 "(qwen3_llm_pretrain.py): read as the all-to-all dispatcher");
  }
  if (!contains(notes, "v0.1.0") && run.unknown.tp_comm_overlap) {
    run.unknown.tp_comm_overlap = false;
    job.runtime.tp_comm_overlap = false;
    as.push_back("Megatron-Bridge's H100 Qwen3-235B function passes tp_comm_overlap=False (qwen3_llm_pretrain.py, v0.2.1 on)");
  }
}

Job job_from_record(const nlohmann::json& r, const std::string& where, const Catalog& catalog, ValidationRun& run) {
  JsonReader rd(r, where);
  // The free-text fields are read with std::regex, whose backtracking recurses per character: keep
  // them to a paragraph.
  for (const char* key : {"arch_notes", "gpu_type", "interconnect", "precision", "recompute", "framework",
                          "zero_or_dist_optimizer", "model_family"})
    if (r.contains(key) && r[key].is_string() && r[key].get_ref<const std::string&>().size() > 2000)
      throw InputError(where, "/" + std::string(key), "expected a description of at most 2000 characters");
  Job job;
  ModelSpec& m = job.model;
  const std::string arch = text_of(r, "arch_notes");
  m.name = text_of(r, "model_name");
  m.num_layers = static_cast<int>(rd.get_int("num_layers", 1, 100000));
  m.hidden_size = rd.get_int("hidden_size", 1, 1 << 24);
  m.num_attention_heads = static_cast<int>(rd.get_int("num_attention_heads", 1, 1 << 20));
  const auto kv_heads = rd.opt_int("num_kv_heads", 1, 1 << 20);
  const auto ffn = rd.opt_int("ffn_hidden_size", 1, 1 << 24);
  m.num_query_groups = static_cast<int>(kv_heads.value_or(m.num_attention_heads));
  m.ffn_hidden_size = ffn.value_or(4 * m.hidden_size);
  m.vocab_size = rd.get_int("vocab_size", 1, 1 << 24);
  m.max_seq_length = rd.get_int("seq_length", 1, 1 << 24);
  // A Llama-family record ("Llama-3.1-405B shape truncated ...") has Llama's architecture unless
  // its notes say otherwise: SwiGLU, RMSNorm, RoPE, untied input/output embeddings (Llama 2 and 3
  // config.json: hidden_act silu, rms_norm_eps, rope_theta, tie_word_embeddings false).
  const bool llama = lower(text_of(r, "model_family")) == "llama" || contains(arch, "llama");
  m.activation = contains(arch, "swiglu") || (llama && !contains(arch, "gelu")) ? Activation::swiglu : Activation::gelu;
  if (contains(arch, "squared-relu") || contains(arch, "squared relu")) m.activation = Activation::squared_relu;  // Nemotron
  m.normalization = contains(arch, "rmsnorm") || (llama && !contains(arch, "layernorm")) ? Normalization::rmsnorm
                                                                                        : Normalization::layernorm;
  m.tied_embeddings = llama ? contains(arch, "tied") && !contains(arch, "untied") : !contains(arch, "untied");
  m.position_embedding = contains(arch, "alibi") ? PositionEmbedding::alibi
                         : contains(arch, "rope") || llama ? PositionEmbedding::rope
                                                           : PositionEmbedding::learned;
  // Megatron's GPT recipes train with hidden/attention dropout 0.1; Llama/MPT/BLOOM-style do not.
  m.dropout = lower(text_of(r, "model_family")) == "gpt" && !contains(arch, "no dropout");
  m.add_linear_bias = m.normalization == Normalization::layernorm;  // GPT-style records: biases; Llama-style: none
  // BLOOM normalizes the embedding output (Megatron-DeepSpeed --embed-layernorm, in BigScience's
  // tr11 launch scripts; HF word_embeddings_layernorm).
  m.embedding_norm = lower(text_of(r, "model_family")) == "bloom" || contains(arch, "embed layernorm") ||
                     contains(arch, "embedding layernorm") || contains(arch, "embedding norm");
  validate_model(m, where);
  // MoE and MLA records carry the model's config.json, which defines the architecture (the flat
  // keys above are a summary of it).
  if (r.contains("model_config") && !r["model_config"].is_null()) {
    const std::string name = m.name;
    const std::int64_t seq = m.max_seq_length;  // the record's seq_length, the run's sequence
    m = model_from_json(r["model_config"], where, "/model_config");
    if (!name.empty()) m.name = name;
    m.max_seq_length = std::max(m.max_seq_length, seq);
  }

  std::vector<std::string>& as = run.assumptions;
  // Shape fields a record leaves null, when no config.json defines them: the defaults say so.
  if (!r.contains("model_config") || r["model_config"].is_null()) {
    if (!kv_heads) as.push_back(fmt::format("num_kv_heads not stated; assumed multi-head attention ({} KV heads)", m.num_query_groups));
    if (!ffn) as.push_back(fmt::format("ffn_hidden_size not stated; assumed 4 x hidden = {}", m.ffn_hidden_size));
  }
  GpuSpec gpu = resolve_gpu(text_of(r, "gpu_type"), number_of(r, "gpu_memory_gb"), catalog, as, where);
  job.cluster = default_cluster_for(gpu);
  for (const auto& e : catalog.list("clusters")) {
    ClusterSpec c = catalog.cluster(e.path);
    if (c.gpu.name == gpu.name) {
      job.cluster = c;
      break;
    }
  }
  if (auto g = rd.opt_int("nvlink_domain", 1, 100000)) job.cluster.gpus_per_node = static_cast<int>(*g);
  else if (auto g2 = rd.opt_int("gpus_per_node", 1, 100000)) job.cluster.gpus_per_node = static_cast<int>(*g2);
  apply_interconnect(text_of(r, "interconnect"), job.cluster, as, where);
  job.calibration = catalog.calibration_or_default(gpu);

  TrainingSpec& t = job.training;
  t.global_batch_size = rd.get_int("global_batch_size", 1, std::int64_t{1} << 40);
  t.seq_length = rd.get_int("seq_length", 1, 1 << 24);
  const std::string prec = lower(text_of(r, "precision"));
  run.precision_text = prec;
  const PrecisionReading pr = read_precision_text(prec);
  if (!pr.unmodelled.empty())
    throw InputError(where, "/precision", pr.unmodelled + " training is not modelled (strata knows bf16, fp16, fp32, and fp8 and fp4 as "
                                          "Transformer Engine's delayed, current, blockwise, MXFP8 and NVFP4 recipes), found \"" + prec + "\"");
  t.precision = pr.precision;
  t.recipe = pr.recipe;
  job.runtime.fp8_param_gather = pr.fp8_params;
  job.runtime.grad_reduce_in_bf16 = pr.bf16_grads;
  if (!pr.stated) as.push_back("precision not stated; assumed bf16");
  else if (pr.recipe_assumed) as.push_back("fp8 recipe not stated; assumed Transformer Engine's default delayed scaling");

  ParallelPlan& p = job.plan;
  p.tp = static_cast<int>(rd.opt_int("tp", 1, 1 << 20).value_or(1));
  p.pp = static_cast<int>(rd.opt_int("pp", 1, 1 << 20).value_or(1));
  p.dp = static_cast<int>(rd.opt_int("dp", 1, 1 << 24).value_or(1));
  p.cp = static_cast<int>(rd.opt_int("cp", 1, 1 << 20).value_or(1));
  p.ep = static_cast<int>(rd.opt_int("ep", 1, 1 << 20).value_or(1));
  const auto vpp = rd.opt_int("vpp", 1, 1 << 10);
  p.vpp = static_cast<int>(vpp.value_or(1));
  run.unknown.vpp = !vpp && p.pp > 1;
  const bool sp_stated = r.contains("sequence_parallel") && r["sequence_parallel"].is_boolean();
  p.sequence_parallel = sp_stated && r["sequence_parallel"].get<bool>();
  run.unknown.sequence_parallel = !sp_stated && p.tp > 1;
  if (auto mbs = rd.opt_int("micro_batch_size", 1, 1 << 20)) {
    p.micro_batch_size = static_cast<int>(*mbs);
  } else {
    run.unknown.micro_batch = true;
    as.push_back("micro_batch_size not published; the fastest micro-batch size that fits is used");
  }
  if (auto problem = check_plan_input(job))
    throw InputError(where, "/" + (problem->field == "gpus" ? std::string("num_gpus") : problem->field), problem->what);
  // After the bounds check: world_size() multiplies ints.
  if (auto n = rd.opt_int("num_gpus", 1, 1 << 24); n && *n != p.world_size())
    throw InputError(where, "/num_gpus", "tp*pp*dp*cp = " + std::to_string(p.world_size()) + " differs from num_gpus " + std::to_string(*n));
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
  if (!rc) rc = recompute_flag(lower(rtext));
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
    }
  }
  if (*rc == RecomputeGranularity::selective && !contains(rtext, "recompute_modules")) {
    // "selective (core_attn, mlp)": a parenthesized list of Megatron-Core's module names; anything
    // else in parentheses is a remark, and the default module (core_attn) stays.
    const auto open = rtext.find('('), close = rtext.find(')', open);
    if (open != std::string::npos && close != std::string::npos)
      if (auto modules = recompute_modules_from_string(rtext.substr(open + 1, close - open - 1)))
        p.recompute.modules = *modules;
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
    if (t.precision == Precision::fp8 && pr.recipe_assumed && (*modules & (kRecomputeMoeAct | kRecomputeLayernorm))) {
      t.recipe = LowPrecisionRecipe::tensorwise;
      std::replace(as.begin(), as.end(), std::string("fp8 recipe not stated; assumed Transformer Engine's default delayed scaling"),
                   std::string("fp8 recipe not stated; assumed current (tensorwise) scaling: the run recomputes moe_act or "
                               "layernorm, which Megatron refuses under the default delayed scaling"));
    }
  }
  // A recipe's explicit pipeline layout (Megatron-Bridge's pp_layout knob, Megatron-Core's
  // pipeline_model_parallel_layout), e.g. DeepSeek-V3's "Et|(tt|)*30mL": it sets vpp and each
  // rank's layers.
  const std::string knobs = text_of(r, "notes");
  auto layout = knob_string(knobs, "pp_layout");
  if (!layout) layout = knob_string(knobs, "pipeline_model_parallel_layout");
  if (layout && p.pp > 1) {
    const int stated_vpp = p.vpp;
    std::vector<std::string> layout_notes;
    apply_pipeline_layout(*layout, where, "/notes (pp_layout)", m, p, layout_notes);
    run.unknown.vpp = false;
    as.push_back(fmt::format("pipeline layout \"{}\" from the recipe: vpp {}, layers per rank {}", *layout, p.vpp,
                             p.stage_layers.empty() ? std::string("even") : fmt::format("{}", fmt::join(p.stage_layers, ","))));
    if (vpp && stated_vpp != p.vpp) as.push_back(fmt::format("the record's vpp {} differs from the layout's {}; the layout is used", stated_vpp, p.vpp));
    for (auto& n : layout_notes) as.push_back(std::move(n));
  }
  // Interleaved or uneven pipelines whose layers do not divide: the layout Megatron runs them with
  // (embedding and loss counted as layers), as the run's engineers must have.
  if (p.stage_layers.empty()) {
    p.stage_layers = standard_stage_layers(m.num_layers, p.pp, p.vpp, m.mtp_layers);
    if (!p.stage_layers.empty())
      as.push_back(fmt::format("{} layers over pp={}{} do not divide: split with {} counted as "
                               "layers, as Megatron's --account-for-embedding/loss-in-pipeline-split or a balanced "
                               "--pipeline-model-parallel-layout does ({})",
                               m.num_layers, p.pp, run.unknown.vpp ? std::string() : fmt::format(" vpp={}", p.vpp),
                               m.mtp_layers > 0 ? "the embedding, the loss and the MTP layers" : "the embedding and the loss",
                               fmt::join(p.stage_layers, ",")));
  }

  const std::string fwtext = text_of(r, "framework");
  const std::string zero = lower(text_of(r, "zero_or_dist_optimizer"));
  RuntimeOptions& rt = job.runtime;
  // torchtitan shards its data-parallel ranks with FSDP2 (dp_shard) beside TP, PP and CP.
  // The framework field decides; the optimizer field's "FSDP" only where the framework field names
  // none of the frameworks ("FSDP-style sharding" beside "Megatron-Core" is Megatron's own sharding).
  const bool names_megatron = contains(fwtext, "megatron") || contains(fwtext, "nemo") || contains(fwtext, "bridge");
  if (contains(fwtext, "fsdp") || contains(fwtext, "composer") || contains(fwtext, "llm-foundry") || contains(fwtext, "torchtitan") ||
      (zero.find("fsdp") != std::string::npos && !names_megatron && !contains(fwtext, "deepspeed"))) {
    rt.framework = Framework::fsdp;
    p.zero_stage = 3;
  } else if (contains(fwtext, "deepspeed")) {
    rt.framework = Framework::deepspeed;
  } else {
    rt.framework = Framework::megatron;
    if (!names_megatron)  // JAX stacks (MaxText, Levanter, Pax), a framework left out, ...
      as.push_back((fwtext.empty() ? std::string("framework not stated") : "framework \"" + fwtext + "\" is none strata models") +
                   ": costed as Megatron-LM (strata models Megatron-LM/NeMo, DeepSpeed and PyTorch FSDP stacks)");
  }
  // Only Megatron recomputes selectively: other stacks' checkpointing wraps whole layers.
  if (run.unknown.recompute_on && rt.framework != Framework::megatron) p.recompute.granularity = RecomputeGranularity::full;
  if (rt.framework != Framework::megatron && m.mtp_layers > 0) {
    // Multi-token prediction is trained by Megatron stacks (Megatron-Core multi_token_prediction.py,
    // Megatron-Bridge's DeepSeek-V3 recipe); the FSDP and DeepSpeed stacks strata models train the
    // main model only.
    as.push_back(fmt::format("the config's {} multi-token prediction module(s) are not trained by this framework; read without", m.mtp_layers));
    m.mtp_layers = 0;
  }
  static const std::regex stage_re("(zero|stage)[^0-9]*([0-3])", std::regex::icase);
  std::smatch zm;
  if (rt.framework != Framework::fsdp && std::regex_search(zero, zm, stage_re)) p.zero_stage = std::stoi(zm[2].str());
  if (zero.find("distributed optimizer") != std::string::npos || zero.find("dist-opt") != std::string::npos) {
    p.distributed_optimizer = true;
    p.zero_stage = 0;
  }
  if (rt.framework == Framework::megatron) read_megatron_fsdp(r, where, zero, fwtext, p, as);
  if (zero.find("assumed") != std::string::npos) as.push_back("optimizer sharding not stated; read as \"" + zero + "\"");
  run.unknown.optimizer_sharding = (zero.empty() || zero.find("not stated") != std::string::npos) &&
                                   rt.framework != Framework::fsdp && !p.distributed_optimizer && p.zero_stage == 0;
  // Fused (flash) attention arrived in these frameworks in 2022-2023; older stacks materialize
  // the attention scores. DP gradient reduction overlapped with backward is likewise recent in
  // Megatron-LM (2023) and absent from the DeepSpeed pipeline engine.
  int year = year_in(fwtext);
  if (year == 0) year = container_year(fwtext);
  if (year == 0 && r.contains("source") && r["source"].is_string()) year = publication_year(r["source"].get<std::string>());
  const bool modern = year == 0 ? rt.framework == Framework::megatron : year >= 2023;
  const std::optional<bool> flash = stated_flash_attention(arch + " ; " + fwtext + " ; " + text_of(r, "parallelism_style") + " ; " +
                                                           text_of(r, "notes"));
  rt.flash_attention = flash.value_or(rt.framework == Framework::fsdp || (modern && rt.framework == Framework::megatron));
  if (!flash && rt.framework == Framework::deepspeed)
    as.push_back("attention kernel not stated: unfused, Megatron-DeepSpeed's default (--use-flash-attn is opt-in); say \"flash "
                 "attention\" in the record's notes for a run that used it");
  // Transformer Engine prefers cuDNN's fused attention on Hopper since 1.2 (December 2023; "Select
  // FusedAttention on sm90", attention.py); a 2023 stack ran flash-attn there.
  if (rt.flash_attention && rt.framework == Framework::megatron && year > 0 && year <= 2023 &&
      resolved_attention_kernel(rt, gpu) == AttentionKernel::cudnn) {
    rt.attention_kernel = AttentionKernel::flash2;
    as.push_back(fmt::format("a {} stack: FlashAttention-2 (Transformer Engine runs cuDNN's fused attention on Hopper from 1.2, "
                             "December 2023)", year));
  }
  rt.overlap_grad_reduce = rt.framework == Framework::fsdp || (modern && rt.framework == Framework::megatron);
  rt.overlap_param_gather = rt.overlap_grad_reduce;
  rt.fused_grad_accumulation = rt.framework == Framework::megatron && modern;
  // PyTorch loads CUDA modules lazily since 1.13 (October 2022, with CUDA 11.7+): a stack dated
  // 2022 or earlier loaded them all at start-up, into a larger CUDA context.
  rt.lazy_module_loading = year == 0 || year >= 2023;
  if (!rt.lazy_module_loading)
    as.push_back(fmt::format("a {} stack: CUDA modules loaded at start-up (before PyTorch 1.13's lazy loading), a 1.5 GiB CUDA context", year));
  // Overlap features a record states in its free text (flags quoted in the source or notes).
  const std::string stated = lower(text_of(r, "source") + " " + text_of(r, "notes") + " " + fwtext + " " + zero + " " +
                                   text_of(r, "parallelism_style"));
  auto says = [&](const char* s) { return stated.find(s) != std::string::npos; };
  if (t.precision == Precision::fp8) {
    if (auto bf16 = read_bf16_layers(run.precision_text + " " + stated, where)) {
      rt.bf16_first_layers = bf16->first;
      rt.bf16_last_layers = bf16->second;
      if (t.recipe == LowPrecisionRecipe::delayed) {
        // Megatron refuses bf16 end layers with delayed scaling (transformer_config.py).
        t.recipe = LowPrecisionRecipe::tensorwise;
        as.push_back("bf16 first/last layers do not run with delayed scaling in Megatron; read as current scaling");
      }
    }
  }
  const std::optional<bool> tp_overlap_knob = knob_bool(stated, "tp_comm_overlap");
  if (says("tp comm overlap explicitly disabled") || says("tp comm overlap disabled") || says("no tp comm overlap") ||
      tp_overlap_knob == false)
    rt.tp_comm_overlap = false;
  else if (tp_overlap_knob == true || says("tp communication overlap enabled") || says("tp comm overlap enabled"))
    rt.tp_comm_overlap = true;
  else
    // Userbuffers TP overlap (Transformer Engine, 2023+) is part of the performance recipes of
    // Megatron-Core based stacks; a record that does not say is completed like the other fields.
    run.unknown.tp_comm_overlap = p.tp > 1 && rt.framework == Framework::megatron && year >= 2023 &&
                                  (contains(fwtext, "nemo") || contains(fwtext, "megatron-core") || contains(fwtext, "bridge"));
  // Megatron-Bridge's performance recipes reduce gradients in bf16 in every precision
  // (perf_recipes/_common.py _perf_precision and, before it, scripts/performance/configs:
  // grad_reduce_in_fp32 = False since r0.1.0).
  if (rt.framework == Framework::megatron && contains(fwtext, "bridge") && !job.runtime.grad_reduce_in_bf16) {
    job.runtime.grad_reduce_in_bf16 = true;
    as.push_back("gradient reduction dtype not stated; bf16, as Megatron-Bridge's performance recipes set it "
                 "(grad_reduce_in_fp32 = False)");
  }
  // The loss's kernels (layer_ops add_cross_entropy_ops), where a record states them; else each
  // stack's own default.
  if (says("cross-entropy-fusion-impl te") || says("cross_entropy_fusion_impl te") || says("_cef")) {
    // SimuMax's "_cef" cases run --cross-entropy-loss-fusion --cross-entropy-fusion-impl te
    // (SimuMax docs/strategy.md, cross_entropy_loss_fusion).
    rt.cross_entropy = CrossEntropyKernel::single_pass;
  } else if (says("cross-entropy-loss-fusion") || says("cross_entropy_loss_fusion") || says("cross-entropy fusion")) {
    rt.cross_entropy = CrossEntropyKernel::jit_fused;
  } else if (rt.framework == Framework::megatron && contains(fwtext, "bridge")) {
    // Megatron-Bridge: GPTModelProvider.cross_entropy_loss_fusion = True, and its performance
    // scripts set cross_entropy_fusion_impl = "te" (the r0.1.0 recipe yamls, utils/helpers.py in
    // r0.2.0, scripts/performance/utils/overrides.py since r0.3.0).
    rt.cross_entropy = CrossEntropyKernel::single_pass;
  } else if (rt.framework == Framework::fsdp && (contains(fwtext, "llm-foundry") || contains(fwtext, "composer"))) {
    // llm-foundry's MPT computes its loss with flash-attn's fused cross entropy (loss_fn
    // "fused_crossentropy", its default where flash-attn is installed).
    rt.cross_entropy = CrossEntropyKernel::single_pass;
  } else if (rt.framework == Framework::megatron) {
    rt.cross_entropy = CrossEntropyKernel::eager;
    as.push_back("cross-entropy fusion not stated: Megatron's default, the eager fp32 loss (no --cross-entropy-loss-fusion)");
  }
  // Megatron-LM reduces an fp16 model's gradients in fp16: before 2021 LocalDDP all-reduced each
  // parameter's fp16 .grad (allreduce_params, --fp32-allreduce off by default), and since then the
  // main_grad buffer takes the parameters' dtype unless --accumulate-allreduce-grads-in-fp32
  // (arguments.py; only bf16 forces fp32), which Megatron's own fp16 example launches leave out
  // (examples/pretrain_gpt3_175B.sh). A record that says it accumulated in fp32 keeps fp32.
  if (rt.framework == Framework::megatron && t.precision == Precision::fp16 && !job.runtime.grad_reduce_in_bf16) {
    if (says("accumulate-allreduce-grads-in-fp32") || says("fp32 grad")) {
      as.push_back("gradients accumulated and reduced in fp32, as stated");
    } else {
      job.runtime.grad_reduce_in_bf16 = true;
      as.push_back("fp16 gradients reduced in fp16, Megatron-LM's default (no --accumulate-allreduce-grads-in-fp32 stated)");
    }
  }
  // fp8 weights and bf16 gradients are Megatron options (--fp8-param-gather, --grad-reduce-in-bf16)
  // that fp8 recipes use to fit; unless the record states them (in its precision text, or as
  // knobs or flags in its notes) they are completed too.
  if (t.precision == Precision::fp8 && knob_bool(stated, "fp8_param_gather").value_or(false)) job.runtime.fp8_param_gather = true;
  // fp8 attention, as Megatron-Bridge's recipes name it (mixed_precision.fp8_dot_product_attention)
  // or Transformer Engine's recipe field (fp8_dpa).
  // Or in words, in the precision text or the notes ("FP8 with fp8 dot product attention").
  const std::string precision_and_stated = run.precision_text + " " + stated;
  const bool fp8_attention_words =
      std::ranges::any_of(std::array{"fp8 attention", "fp8 dot product attention", "fp8 dot-product attention", "fp8 dpa"},
                          [&](const char* phrase) { return says_unnegated(precision_and_stated, phrase); });
  if (fp8_attention_words || knob_bool(stated, "fp8_dot_product_attention").value_or(false) ||
      knob_bool(stated, "fp8_dpa").value_or(false)) {
    if (t.precision == Precision::fp8 && t.recipe != LowPrecisionRecipe::blockwise && rt.framework == Framework::megatron)
      rt.fp8_attention = true;
    else
      as.push_back("fp8 attention (fp8_dot_product_attention) stated but not possible for this run's precision, recipe or stack: "
                   "attention timed in bf16");
  }
  if (knob_bool(stated, "grad_reduce_in_bf16").value_or(false) || knob_bool(stated, "grad_reduce_in_fp32") == false)
    job.runtime.grad_reduce_in_bf16 = true;
  read_optimizer_state(stated, rt.framework, p, t.optimizer, as, where);
  if (p.distributed_optimizer) run.unknown.optimizer_sharding = false;  // stated, or implied by the optimizer's state
  run.unknown.fp8_memory_options = t.precision == Precision::fp8 && rt.framework == Framework::megatron &&
                                   !(job.runtime.fp8_param_gather && job.runtime.grad_reduce_in_bf16);
  // Megatron --cp-comm-type as records name it ("CP a2a", "cp-comm-type allgather").
  // "a2a+p2p" (hierarchical CP) first: it also reads as "cp-comm-type a2a".
  const std::string cp_knob = knob_string(stated, "cp_comm_type").value_or("");
  if (says("a2a+p2p") || says("hierarchical cp") || says("hierarchical context parallel")) {
    rt.cp_comm_type = CpCommType::a2a_p2p;
    // --hierarchical-context-parallel-sizes a b, as flags or a list ("[2, 4]").
    static const std::regex sizes_re("hierarchical[-_ ]context[-_ ]parallel[-_ ]sizes\\W+([0-9]+)\\W+([0-9]+)");
    std::smatch hm;
    if (std::regex_search(stated, hm, sizes_re) && p.cp > 1) {
      const int a = static_cast<int>(number_in_text(hm[1].str(), 1, 1 << 20, where, "notes", stated));
      const int b = static_cast<int>(number_in_text(hm[2].str(), 1, 1 << 20, where, "notes", stated));
      if (static_cast<std::int64_t>(a) * b != p.cp)
        throw InputError(where, "/notes", fmt::format("hierarchical context-parallel sizes {} x {} do not multiply to cp = {}", a, b, p.cp));
      rt.cp_a2a_size = a;
    } else if (p.cp > 1) {
      as.push_back(fmt::format("hierarchical CP group sizes not stated; the all-to-all over the {} CP ranks within an NVLink domain, "
                               "the ring over the rest", cp_a2a_group_size(job)));
    }
  } else if (says("cp a2a") || cp_knob == "a2a" || says("ulysses")) {
    rt.cp_comm_type = CpCommType::a2a;
  } else if (says("cp allgather") || cp_knob == "allgather") {
    rt.cp_comm_type = CpCommType::allgather;
  }
  if (says("overlap-grad-reduce/param-gather off") || says("no overlap flags")) {
    rt.overlap_grad_reduce = false;
    rt.overlap_param_gather = false;
  }
  // Async backward TP all-reduce: Megatron-LM from 2022, Megatron-DeepSpeed from its 2023 rebase.
  rt.async_tp_allreduce = year == 0 ? rt.framework == Framework::megatron
                                    : year >= (rt.framework == Framework::megatron ? 2022 : 2023);
  if (m.moe) apply_moe_runtime(r, job, as);
  apply_bridge_model_function(r, job, run, as);
  // Activation offloading to the host, as a recipe knob (Megatron-Bridge cpu_offloading_num_layers)
  // or Megatron's flag: not modelled, as `--megatron-args` says.
  if (const auto layers = knob_int(stated, "cpu_offloading_num_layers"); layers && *layers > 0)
    as.push_back(fmt::format("activation offloading to the host ({} layers, cpu_offloading_num_layers) is not modelled: their "
                             "activations count on the GPU, so memory is overstated and a completion may add recompute the run did "
                             "not need",
                             *layers));
  read_cuda_graphs(stated, where, job, as);
  return job;
}

// CUDA graphs, as recipe knobs (Megatron-Bridge: "cuda_graph_impl": "transformer_engine",
// "cuda_graph_scope": ["attn", "moe_router", "moe_preprocess"]; its older "cuda_graphs": true) or
// Megatron's flags (--cuda-graph-impl, --cuda-graph-modules, the older --cuda-graph-scope and
// --enable-cuda-graph). No modules listed: the whole layer, Megatron's default.
void read_cuda_graphs(const std::string& stated, const std::string& where, Job& job, std::vector<std::string>& as) {
  std::string impl = lower(knob_string(stated, "cuda_graph_impl").value_or(""));
  if (impl.empty() && (knob_bool(stated, "cuda_graphs").value_or(false) || knob_bool(stated, "enable_cuda_graph").value_or(false)))
    impl = "local";
  if (impl.empty() || impl == "none" || impl == "null" || impl == "false") return;
  auto module = [](const std::string& w) { return cuda_graph_modules_from_string(w).has_value(); };
  std::optional<std::string> names = knob_list(stated, "cuda_graph_modules", module);
  if (!names) names = knob_list(stated, "cuda_graph_scope", module);
  if (impl == "full_iteration") names = "full_iteration";
  const auto modules = cuda_graph_modules_from_string(lower(names.value_or("")));
  if (!modules)
    throw InputError(where, "/notes (cuda_graph_scope)",
                     "expected CUDA graph modules among attn, mlp, moe, moe_router, moe_preprocess (full, full_iteration), found \"" +
                         names.value_or("") + "\"");
  job.runtime.cuda_graph_modules = *modules;
  const std::vector<std::string> list = cuda_graph_module_names(*modules);
  const bool whole_step = *modules & kCudaGraphFullIteration;
  as.push_back(fmt::format("CUDA graphs ({}, {}) from the recipe knobs{}", impl,
                           whole_step       ? std::string("the whole step")
                           : list.empty()   ? std::string("the whole layer")
                                            : fmt::format("{}", fmt::join(list, ", ")),
                           job.model.moe && !whole_step ? ": the captured parts of each MoE layer cost one graph replay of host time each way"
                                                        : "; strata takes the host to keep ahead of the GPU with or without them"));
}

// The text entries of a record's uncertain_fields (none when it is not a list).
std::vector<std::string> uncertain_fields_of(const nlohmann::json& r) {
  std::vector<std::string> out;
  if (auto it = r.find("uncertain_fields"); it != r.end() && it->is_array())
    for (const auto& f : *it)
      if (f.is_string()) out.push_back(f.get<std::string>());
  return out;
}

// The tool a record's memory figure comes from, as its notes name it (memory_model MemoryMeasure).
// Without a name, the whole device's use (nvidia-smi), which is what must fit.
MemoryMeasure memory_measure_of(const nlohmann::json& r, std::vector<std::string>& assumptions) {
  std::string text = text_of(r, "notes") + " " + text_of(r, "derivation");
  for (const auto& f : uncertain_fields_of(r)) text += " " + f;
  if (contains(text, "max_memory_allocated") || contains(text, "memory_allocated()")) return MemoryMeasure::allocated;
  if (contains(text, "max_memory_reserved") || contains(text, "memory_reserved()")) return MemoryMeasure::reserved;
  if (!contains(text, "nvidia-smi"))
    assumptions.push_back("memory figure's tool not stated; compared with the whole device's use (nvidia-smi: CUDA context "
                          "and NCCL buffers included)");
  return MemoryMeasure::device;
}

// The entry of a record's uncertain_fields that puts its measured throughput in doubt: one naming the
// tokens/s it reports, or the measured iteration time tokens/s are derived from.
std::string throughput_doubt_of(const nlohmann::json& r) {
  for (const auto& text : uncertain_fields_of(r))
    for (const char* field : {"meas_tokens_per_sec_per_gpu", "derived_tokens_per_sec_per_gpu", "meas_iteration_time_s"})
      if (text.rfind(field, 0) == 0) return text;
  return {};
}

}  // namespace

std::vector<ValidationRun> load_validation_runs(const nlohmann::json& j, const std::string& where, const Catalog& catalog) {
  if (!j.is_array()) throw InputError(where, "/", "expected a JSON array of run records");
  std::vector<ValidationRun> runs;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const auto& r = j[i];
    const std::string path = where + " [" + std::to_string(i) + "]";
    ValidationRun run;
    if (!r.is_object()) {
      run.id = "#" + std::to_string(i);
      run.error = path + ": expected a JSON object (one run record), found " + std::string(r.type_name());
      runs.push_back(std::move(run));
      continue;
    }
    run.id = text_of(r, "id");
    if (run.id.empty()) run.id = "#" + std::to_string(i);
    run.source_group = text_of(r, "source_group");
    run.tier = text_of(r, "tier");
    try {
      run.measured_tokens_per_sec_per_gpu = measured(r, "meas_tokens_per_sec_per_gpu", path, kTokensRange);
      if (!run.measured_tokens_per_sec_per_gpu) run.measured_tokens_per_sec_per_gpu = measured(r, "derived_tokens_per_sec_per_gpu", path, kTokensRange);
      run.measured_iteration_time_s = measured(r, "meas_iteration_time_s", path, kIterationTimeRange);
      run.throughput_doubt = throughput_doubt_of(r);
      if (!run.measured_iteration_time_s) run.measured_iteration_time_s = measured(r, "derived_iteration_time_s", path, kIterationTimeRange);
      // Published "GB" memory figures come from nvidia-smi / torch.cuda, which count GiB.
      run.measured_memory_GiB = measured(r, "meas_per_gpu_memory_gb", path, kMemoryRange);
      run.job = job_from_record(r, path, catalog, run);
      if (run.measured_memory_GiB) run.memory_measure = memory_measure_of(r, run.assumptions);
      // A record with only a measured iteration time (a team's own runs) gets its tokens/s/GPU
      // the way the published ones derive it: global batch x sequence / (time x GPUs).
      if (!run.measured_tokens_per_sec_per_gpu && run.measured_iteration_time_s)
        run.measured_tokens_per_sec_per_gpu = static_cast<double>(run.job->training.global_batch_size) *
                                              static_cast<double>(run.job->training.seq_length) /
                                              (*run.measured_iteration_time_s * run.job->plan.world_size());
    } catch (const InputError& e) {
      run.error = e.what();
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

namespace {

// Values tried for a field the record leaves out.
std::vector<int> micro_batch_candidates(const ValidationRun& run) {
  if (!run.unknown.micro_batch) return {run.job->plan.micro_batch_size};
  return {1, 2, 4, 8, 16, 32, 64};
}

std::vector<int> vpp_candidates(const ValidationRun& run) {
  const Job& job = *run.job;
  // Only Megatron-LM interleaves; DeepSpeed's pipeline engine runs plain 1F1B.
  if (!run.unknown.vpp || job.runtime.framework != Framework::megatron) return {job.plan.vpp};
  std::vector<int> out = {1};
  const int L = job.model.num_layers, pp = job.plan.pp;
  for (int v = 2; v <= L / pp; ++v)
    if (L % (pp * v) == 0 || !standard_stage_layers(L, pp, v, job.model.mtp_layers).empty()) out.push_back(v);
  return out;
}

std::string completion_text(const ValidationRun& run, const Job& job) {
  std::vector<std::string> parts;
  const ParallelPlan& p = job.plan;
  if (run.unknown.micro_batch) parts.push_back(fmt::format("micro_batch_size {}", p.micro_batch_size));
  if (run.unknown.vpp) parts.push_back(fmt::format("vpp {}", p.vpp));
  if (run.unknown.sequence_parallel) parts.push_back(fmt::format("sequence_parallel {}", p.sequence_parallel));
  if (run.unknown.recompute) parts.push_back(fmt::format("recompute {}", to_string(p.recompute.granularity)));
  if (run.unknown.fp8_memory_options)
    parts.push_back(fmt::format("fp8_param_gather {}, grad_reduce_in_bf16 {}", job.runtime.fp8_param_gather,
                                job.runtime.grad_reduce_in_bf16));
  if (run.unknown.tp_comm_overlap) parts.push_back(fmt::format("tp_comm_overlap {}", job.runtime.tp_comm_overlap));
  if (run.unknown.optimizer_sharding)
    parts.push_back(job.plan.distributed_optimizer ? "distributed optimizer" : fmt::format("ZeRO-{}", job.plan.zero_stage));
  return fmt::format("{}", fmt::join(parts, ", "));
}

// The opt-in defaults a completion tries first, for the fields this record leaves out.
std::string default_completion_text(const ValidationRun& run) {
  std::vector<std::string> parts;
  if (run.unknown.vpp) parts.push_back("vpp 1");
  if (run.unknown.recompute)
    parts.push_back(!run.unknown.recompute_on                             ? "no recompute"
                    : run.job->runtime.framework == Framework::megatron ? "selective recompute"
                                                                          : "full recompute");
  if (run.unknown.fp8_memory_options) parts.push_back("bf16 weights and fp32 gradients");
  if (run.unknown.optimizer_sharding) parts.push_back("unsharded optimizer");
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

// Fields a record leaves out are completed the way the run's engineers would have: the fastest
// completion that fits in memory (the run did run). Micro-batch size and sequence parallelism are
// tuned freely; interleaving (vpp) and recompute are opt-in in Megatron-LM, so their defaults (vpp 1,
// no recompute) are kept unless no completion with them fits, and only then searched.
Prediction predict_validation_run(ValidationRun& run) {
  Job& job = *run.job;
  if (!run.unknown.any()) return predict(job);
  const std::vector<int> sps = run.unknown.sequence_parallel ? std::vector<int>{1, 0} : std::vector<int>{job.plan.sequence_parallel};
  const std::vector<RecomputeGranularity> all_rcs =
      run.unknown.recompute_on ? (job.runtime.framework == Framework::megatron
                                      ? std::vector<RecomputeGranularity>{RecomputeGranularity::selective, RecomputeGranularity::full}
                                      : std::vector<RecomputeGranularity>{RecomputeGranularity::full})
      : run.unknown.recompute  ? std::vector<RecomputeGranularity>{RecomputeGranularity::none, RecomputeGranularity::selective,
                                                                   RecomputeGranularity::full}
                               : std::vector<RecomputeGranularity>{job.plan.recompute.granularity};
  Prediction best;
  Job best_job = job;
  bool have = false;
  const std::vector<int> overlaps = run.unknown.tp_comm_overlap ? std::vector<int>{1, 0} : std::vector<int>{job.runtime.tp_comm_overlap};
  auto search = [&](const std::vector<int>& vpps, const std::vector<RecomputeGranularity>& rcs, const std::vector<int>& fp8_options,
                    const std::vector<int>& shardings) {
    for (int mbs : micro_batch_candidates(run))
      for (int vpp : vpps)
        for (int sp : sps)
          for (RecomputeGranularity rc : rcs)
            for (int fp8_opt : fp8_options)
              for (int overlap : overlaps)
                for (int shard : shardings) {
            Job j = job;
            j.plan.micro_batch_size = mbs;
            j.plan.vpp = vpp;
            j.plan.sequence_parallel = sp != 0;
            j.plan.recompute.granularity = rc;
            // Options the record states stay on; the others are tried off, then on.
            if (run.unknown.fp8_memory_options) {
              j.runtime.fp8_param_gather = job.runtime.fp8_param_gather || fp8_opt != 0;
              j.runtime.grad_reduce_in_bf16 = job.runtime.grad_reduce_in_bf16 || fp8_opt != 0;
            }
            j.runtime.tp_comm_overlap = overlap != 0;
            // Sharded optimizer states: Megatron's distributed optimizer, DeepSpeed's ZeRO-1.
            if (shard != 0) {
              if (j.runtime.framework == Framework::megatron) j.plan.distributed_optimizer = true;
              else j.plan.zero_stage = 1;
            }
            if (run.unknown.vpp) j.plan.stage_layers = standard_stage_layers(j.model.num_layers, j.plan.pp, vpp, j.model.mtp_layers);
            if (!check_plan(j).empty()) continue;
            Prediction p = predict(j);
            // Feasible beats infeasible; among feasible the fastest; among infeasible the smallest.
            const bool better = !have || (p.feasible && !best.feasible) ||
                                (p.feasible && best.feasible && p.iteration_time_s < best.iteration_time_s) ||
                                (!p.feasible && !best.feasible && p.memory_per_gpu_GiB < best.memory_per_gpu_GiB);
            if (better) {
              best = p;
              best_job = j;
              have = true;
            }
          }
  };
  search({job.plan.vpp}, {job.plan.recompute.granularity}, {0}, {0});
  bool searched_all = false;
  if ((!have || !best.feasible) &&
      (run.unknown.vpp || run.unknown.recompute || run.unknown.fp8_memory_options || run.unknown.optimizer_sharding)) {
    search(vpp_candidates(run), all_rcs, run.unknown.fp8_memory_options ? std::vector<int>{0, 1} : std::vector<int>{0},
           run.unknown.optimizer_sharding ? std::vector<int>{0, 1} : std::vector<int>{0});
    searched_all = true;
  }
  if (!have) return predict(job);
  job = best_job;
  run.assumptions.push_back(fmt::format("not published: {}; completed with the fastest memory-feasible choice ({}){}{}",
                                        run.unknown.names(), completion_text(run, job),
                                        searched_all ? " after the defaults (" + default_completion_text(run) + ") did not fit" : "",
                                        best.feasible ? "" : " -- no completion fits, the smallest is shown"));
  return best;
}

std::vector<ValidationRun> select_runs(std::vector<ValidationRun> runs, const std::vector<std::string>& parts) {
  if (parts.empty()) return runs;
  auto wanted = [&](const ValidationRun& r) {
    return std::any_of(parts.begin(), parts.end(), [&](const std::string& p) {
      return r.id.find(p) != std::string::npos || r.source_group.find(p) != std::string::npos;
    });
  };
  std::erase_if(runs, [&](const ValidationRun& r) { return !wanted(r); });
  return runs;
}

}  // namespace strata
