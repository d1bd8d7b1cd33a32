// Accuracy of the predictions against published measurements (../shared/validation/public_runs.json,
// see its README for the sources of every record).
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace {

// Regression guards at the current accuracy, for the cost-model owner to tighten as the model
// improves. The targets are 12% overall, 20% per source group and 10% for memory.
constexpr double kMaxOverallMape = 0.14;
constexpr double kMaxGroupMape = 0.20;
// The BigScience prequel runs are all slower than predicted, by ~42% on a single node with no
// pipeline, data-parallel or inter-node traffic at all: a deficit of that cluster or software
// stack that no modelled mechanism explains (see README "Accuracy"). Its own guard, until explained.
constexpr double kMaxBigScienceMape = 0.36;
// BigScience's memory figures are nvidia-smi's (the whole device, the CUDA context of a 2022 stack
// that loaded every kernel module at start-up included): 6.8% when last set, the target 8%.
constexpr double kMaxMemoryMape = 0.075;

const std::string kRunsFile = std::string(STRATA_SOURCE_DIR) + "/../shared/validation/public_runs.json";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::optional<double> number(const nlohmann::json& r, const char* key) {
  if (!r.contains(key) || !r[key].is_number()) return std::nullopt;
  return r[key].get<double>();
}

// `strata validate --runs FILE --json`, one object per run, keyed by the run's id.
std::map<std::string, nlohmann::json> validate_by_id(const std::string& file) {
  auto r = strata::test::run_strata("validate --runs '" + file + "' --json");
  REQUIRE_MESSAGE(r.exit_code == 0, r.out);
  std::map<std::string, nlohmann::json> predicted;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    nlohmann::json o = nlohmann::json::parse(line);
    predicted[o.at("id").get<std::string>()] = o;
  }
  return predicted;
}

struct Mape {
  double sum = 0;
  int n = 0;
  void add(double predicted, double measured) {
    sum += std::fabs(predicted - measured) / measured;
    ++n;
  }
  double value() const { return n ? sum / n : 0; }
};

}  // namespace

TEST_SUITE("cli") {
TEST_CASE("strata validate: accuracy on the published runs") {
  if (!std::filesystem::is_regular_file(kRunsFile))
    FAIL("the published-runs file " << kRunsFile
                                    << " is missing; it lives in shared/validation/ beside the checkout (CI has it)");
  nlohmann::json records;
  {
    std::ifstream in(kRunsFile);
    records = nlohmann::json::parse(in);
  }
  REQUIRE(records.is_array());
  REQUIRE_FALSE(records.empty());
  const std::map<std::string, nlohmann::json> predicted = validate_by_id(kRunsFile);
  REQUIRE(predicted.size() == records.size());

  Mape overall, memory;
  std::map<std::string, Mape> groups;
  for (const auto& rec : records) {
    const std::string id = rec.at("id").get<std::string>();
    CAPTURE(id);
    const auto& p = predicted.at(id);
    const std::string precision = lower(rec.value("precision", ""));
    const bool half = precision.find("fp16") != std::string::npos || precision.find("bf16") != std::string::npos;
    auto measured = number(rec, "meas_tokens_per_sec_per_gpu");
    if (!measured) measured = number(rec, "derived_tokens_per_sec_per_gpu");
    if (half && measured) {
      // Every run with a published speed must be predicted, and predicted to fit: it ran.
      CHECK_MESSAGE(p["error"].is_null(), p["error"]);
      if (!p["error"].is_null()) continue;
      CHECK_MESSAGE(p.value("feasible", false), p.value("infeasible_reason", std::string()));
      const double pred = p["tokens_per_sec_per_gpu"].get<double>();
      overall.add(pred, *measured);
      groups[rec.value("source_group", "")].add(pred, *measured);
    }
    const std::string group = lower(rec.value("source_group", ""));
    if (auto mem = number(rec, "meas_per_gpu_memory_gb"); mem && group.find("bigscience") != std::string::npos &&
                                                         p["error"].is_null())
      memory.add(p["memory_comparable_GiB"].get<double>(), *mem);  // as the record's tool counts it
  }

  REQUIRE(overall.n > 0);
  REQUIRE(memory.n > 0);
  MESSAGE("tokens/s/GPU MAPE overall: " << 100 * overall.value() << "% over " << overall.n << " runs (guard "
                                        << 100 * kMaxOverallMape << "%)");
  for (const auto& [g, m] : groups)
    MESSAGE("tokens/s/GPU MAPE " << g << ": " << 100 * m.value() << "% over " << m.n << " runs (guard "
                                 << 100 * (lower(g).find("bigscience") != std::string::npos ? kMaxBigScienceMape : kMaxGroupMape)
                                 << "%)");
  MESSAGE("BigScience memory MAPE: " << 100 * memory.value() << "% over " << memory.n << " runs (guard "
                                     << 100 * kMaxMemoryMape << "%)");
  CHECK(overall.value() <= kMaxOverallMape);
  for (const auto& [g_, m] : groups) {
    const auto& g = g_;  // a plain name: clang 14 cannot capture structured bindings (CAPTURE)
    CAPTURE(g);
    CHECK(m.value() <= (lower(g).find("bigscience") != std::string::npos ? kMaxBigScienceMape : kMaxGroupMape));
  }
  CHECK(memory.value() <= kMaxMemoryMape);
}
}

namespace {

const std::string kModernRunsFile = std::string(STRATA_SOURCE_DIR) + "/../shared/validation/modern_runs.json";

// Guards on ../shared/validation/modern_runs.json (today's stacks: H100/B200, fp8, Megatron-Core
// overlaps, context parallelism), at the accuracy reached, per source group. Mixture-of-experts
// rows (the mbridge group, SimuMax's DeepSeek shapes) are guarded with the MoE model support.
struct GroupGuard {
  const char* group;
  double max_mape;         // tokens/s/GPU
  double max_memory_mape;  // < 0: no memory guard
};
// Since 2026-11-27 Megatron runs on Hopper of 2024 and later time attention at the measured rate of
// cuDNN's fused kernel, which Transformer Engine runs there (1.5-1.8x FlashAttention-2's): the
// Megatron-Core group moved from 6.8% to 5.0%, NeMo 24.07's from 5.0% to 9.4% (bias +1.2% ->
// +6.6%, with fp8's longer k-loop overhead), the MoE group from 41.9% to 50.9%. Their remaining
// optimism is not the attention kernel (whole layers with it are predicted within 3%,
// tests/profiler/test_layer_steps.cpp); README "Accuracy on today's stacks" keeps the analysis.
// The session after, a p2p CP ring's attention was costed step by step (NeMo 9.4% -> 8.7%) and
// dropout inside fused attention at its measured rate (Megatron-Core 5.0% -> 6.0%, bias -3.8% ->
// -6.0%; MLPerf 4.3% -> 4.2%; NeMo 8.7% -> 7.8%): the GPT-style rows are read with the convention's
// attention dropout, which no record states. The session after that, the loss is costed as each
// stack runs it (layer_ops add_cross_entropy_ops): Megatron's eager fp32 cross entropy where a
// record does not name the fusion (Megatron-Core 6.0% -> 7.1%, its 1.7B model with a 131k vocabulary
// -3.3% -> -8.9%; NeMo 7.8% -> 6.2%; Korthikanti 2.6% -> 2.7%), Transformer Engine's single pass for
// Megatron-Bridge and SimuMax's "_cef" cases (MoE 18.0% -> 18.4%, SimuMax 7.6% -> 7.7%). Since
// 2026-11-28 the first stage keeps the embedding's dropout mask, not a copy of its output per
// in-flight chunk (memory_model.cpp): Nemotron-340B fits without recompute, as NeMo's launcher
// config runs it (NeMo 6.2% -> 5.0%, bias +3.1% -> +4.9%).
constexpr GroupGuard kModernGuards[] = {
    {"korthikanti2022_table5", 0.03, -1},
    {"megatron_core_h100_weak_scaling", 0.075, -1},
    {"mlperf_training_gpt3", 0.05, -1},
    {"nemo_24.07_perf_summary", 0.055, -1},
    // SimuMax's memory is torch.cuda.max_memory_allocated: compared without the CUDA context, NCCL's
    // buffers and the allocator's slack (3.4% when set, every row a little under; 4.7% since the
    // "_cef" runs' Transformer Engine cross entropy keeps only the 16-bit logits, as its
    // CrossEntropyFunction saves them, where 4 more bytes per logit were counted).
    {"simumax_b200", 0.085, 0.05},
};
constexpr double kMaxModernOverallMape = 0.07;
// The mixture-of-experts rows of Megatron-Bridge's H100 tables; this guards the accuracy reached so
// that a change cannot make it worse unnoticed. 17.2% MAPE (bias +11.3%) when last set (18 runs, two
// of them the table's 2x throughput anomalies, +53% and +116%; 18.4% before the H100 Qwen3-235B
// recipe was read with the all-to-all dispatcher its model function sets; 18.0% before Transformer Engine's
// single-pass cross entropy, which these runs' recipes select; 20.1% before GPT-OSS-120B's eager
// per-expert bias path and its windows' key loop): the host time of Megatron-Core's MoE
// layer, measured (configs/measurements/h100-2026-11-27.moe-layer-host.json), binds the layers, its
// router and dispatcher part alone with these runs' grouped GEMM, and since the session after,
// the synchronisation splits each layer and its attention block's measured host time counts (36.0%
// before, 50.9% before the host time, 41.9% before cuDNN's attention rates). See README "The host
// time of a MoE layer".
constexpr GroupGuard kModernMoeGuards[] = {
    {"mbridge_moe_h100", 0.18, -1},
};

}  // namespace

TEST_SUITE("cli") {
TEST_CASE("strata validate: accuracy on today's stacks (modern_runs.json)") {
  if (!std::filesystem::is_regular_file(kModernRunsFile))
    FAIL("the published-runs file " << kModernRunsFile << " is missing; it lives in shared/validation/ beside the checkout");
  nlohmann::json records;
  {
    std::ifstream in(kModernRunsFile);
    records = nlohmann::json::parse(in);
  }
  REQUIRE(records.is_array());
  const std::map<std::string, nlohmann::json> predicted = validate_by_id(kModernRunsFile);
  REQUIRE(predicted.size() == records.size());

  Mape overall;
  std::map<std::string, Mape> groups, memory;
  for (const auto& rec : records) {
    const std::string id = rec.at("id").get<std::string>();
    const std::string group = rec.value("source_group", "");
    const GroupGuard* guard = nullptr;
    // Mixture-of-experts rows carry model_config; SimuMax's are guarded with its group, the
    // others on their own.
    for (const auto& g : kModernGuards)
      if (group == g.group && !rec.contains("model_config")) guard = &g;
    bool moe_group = false;
    for (const auto& g : kModernMoeGuards)
      if (group == g.group) guard = &g, moe_group = true;
    if (!guard) continue;
    CAPTURE(id);
    const auto& p = predicted.at(id);
    // Every guarded run must be predicted, and predicted to fit: it ran.
    CHECK_MESSAGE(p["error"].is_null(), p["error"]);
    if (!p["error"].is_null()) continue;
    CHECK_MESSAGE(p.value("feasible", false), p.value("infeasible_reason", std::string()));
    auto measured = number(rec, "meas_tokens_per_sec_per_gpu");
    if (!measured) measured = number(rec, "derived_tokens_per_sec_per_gpu");
    if (measured) {
      const double pred = p["tokens_per_sec_per_gpu"].get<double>();
      if (!moe_group) overall.add(pred, *measured);
      groups[group].add(pred, *measured);
    }
    if (auto mem = number(rec, "meas_per_gpu_memory_gb")) memory[group].add(p["memory_comparable_GiB"].get<double>(), *mem);
  }
  REQUIRE(overall.n > 0);
  MESSAGE("modern tokens/s/GPU MAPE overall (dense rows): " << 100 * overall.value() << "% over " << overall.n << " runs");
  CHECK(overall.value() <= kMaxModernOverallMape);
  for (const auto& g : kModernMoeGuards) {
    CAPTURE(g.group);
    REQUIRE(groups.count(g.group) == 1);
    MESSAGE("modern tokens/s/GPU MAPE " << g.group << ": " << 100 * groups[g.group].value() << "% over " << groups[g.group].n
                                       << " runs (guard " << 100 * g.max_mape << "%)");
    CHECK(groups[g.group].value() <= g.max_mape);
  }
  for (const auto& g : kModernGuards) {
    CAPTURE(g.group);
    REQUIRE(groups.count(g.group) == 1);
    MESSAGE("modern tokens/s/GPU MAPE " << g.group << ": " << 100 * groups[g.group].value() << "% over " << groups[g.group].n
                                       << " runs (guard " << 100 * g.max_mape << "%)");
    CHECK(groups[g.group].value() <= g.max_mape);
    if (g.max_memory_mape >= 0) {
      REQUIRE(memory[g.group].n > 0);
      MESSAGE("modern memory MAPE " << g.group << ": " << 100 * memory[g.group].value() << "% (guard " << 100 * g.max_memory_mape
                                    << "%)");
      CHECK(memory[g.group].value() <= g.max_memory_mape);
    }
  }
}
}
