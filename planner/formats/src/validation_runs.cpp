#include "formats/validation_runs.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "costmodel/errors.h"
#include "costmodel/json_reader.h"
#include "costmodel/memory_model.h"
#include "costmodel/predictor.h"
#include "formats/plan_input.h"
#include "launch/megatron_import.h"
#include "record_hardware.h"
#include "record_precision.h"
#include "record_recompute.h"
#include "record_runtime.h"
#include "record_text.h"

namespace strata {

using namespace record;

namespace {

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

// The model a record describes: its flat shape fields and the architecture its family and arch_notes
// name (Llama-style SwiGLU/RMSNorm/RoPE, GPT-style biases and dropout), or the config.json of an MoE or
// MLA record (model_config). Defaults taken for fields left null are added to `as`.
ModelSpec model_from_record(const nlohmann::json& r, const std::string& where, std::vector<std::string>& as) {
  JsonReader rd(r, where);
  ModelSpec m;
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
  // Shape fields a record leaves null, when no config.json defines them: the defaults say so.
  if (!r.contains("model_config") || r["model_config"].is_null()) {
    if (!kv_heads) as.push_back(fmt::format("num_kv_heads not stated; assumed multi-head attention ({} KV heads)", m.num_query_groups));
    if (!ffn) as.push_back(fmt::format("ffn_hidden_size not stated; assumed 4 x hidden = {}", m.ffn_hidden_size));
  }
  return m;
}

// The parallel degrees of a record (tp, pp, dp, cp, ep), checked against num_gpus. A degree left
// null is 1, except that one of tp, pp and dp left out is what num_gpus leaves for it; and a record
// that counts expert parallelism beside data parallelism (tp x pp x dp x cp x ep = num_gpus, as
// DeepSpeed-MoE and some reports write it) is read with Megatron's data-parallel size dp x ep,
// which the experts' ranks are carved from; without num_gpus, a null dp is what the global batch
// `gbs` leaves over one replica's micro-batches. Each such reading is recorded in `as`.
void read_parallel_degrees(const nlohmann::json& r, const std::string& where, const ModelSpec& m, std::int64_t gbs, ParallelPlan& p,
                           std::vector<std::string>& as) {
  JsonReader rd(r, where);
  const auto tp = rd.opt_int("tp", 1, 1 << 20), pp = rd.opt_int("pp", 1, 1 << 20), dp = rd.opt_int("dp", 1, 1 << 24);
  p.tp = static_cast<int>(tp.value_or(1));
  p.pp = static_cast<int>(pp.value_or(1));
  p.dp = static_cast<int>(dp.value_or(1));
  const auto cp = rd.opt_int("cp", 1, 1 << 20);
  p.cp = static_cast<int>(cp.value_or(1));
  p.ep = static_cast<int>(rd.opt_int("ep", 1, 1 << 20).value_or(1));
  const auto n = rd.opt_int("num_gpus", 1, 1 << 24);
  // Each degree is bounded, their product is not (check_plan_input bounds it later): products are
  // capped above any num_gpus, so hostile degrees cannot overflow.
  constexpr std::int64_t kCap = std::int64_t{1} << 30;  // above any num_gpus (at most 2^24)
  auto times = [&](std::int64_t a, std::int64_t b) { return std::min(kCap, a * b); };  // a, b <= 2^30: no overflow
  const std::int64_t world = times(times(times(p.tp, p.pp), p.dp), p.cp);
  // Without num_gpus, dp is what the global batch leaves over the micro-batches of one replica. Only
  // then is num_microbatches_per_replica read (an informational field, never refused: a fraction
  // there means the stack splits micro-batches unevenly, and dp stays unknown).
  if (!n && !dp) {
    auto count = [&](const char* key) -> std::int64_t {
      auto it = r.find(key);
      return it != r.end() && it->is_number_integer() && it->get<std::int64_t>() >= 1 && it->get<std::int64_t>() <= (1 << 30)
                 ? it->get<std::int64_t>()
                 : 0;
    };
    const std::int64_t replica_batch = times(count("micro_batch_size"), count("num_microbatches_per_replica"));
    if (replica_batch > 0 && gbs >= replica_batch && gbs % replica_batch == 0 && gbs / replica_batch <= (1 << 24)) {
      p.dp = static_cast<int>(gbs / replica_batch);
      as.push_back(fmt::format("dp not published; global_batch_size / (micro_batch_size x num_microbatches_per_replica) = {}", p.dp));
      return;
    }
  }
  if (!n || *n == world) {
    for (auto [stated, name] : {std::pair{tp.has_value(), "tp"}, std::pair{pp.has_value(), "pp"}, std::pair{dp.has_value(), "dp"}})
      if (!stated) as.push_back(fmt::format("{} not published; read as 1{}", name, n ? " (the other degrees fill num_gpus)" : ""));
    return;
  }
  const int missing = !tp + !pp + !dp;
  if (missing == 1) {
    int& degree = !tp ? p.tp : !pp ? p.pp : p.dp;
    const char* name = !tp ? "tp" : !pp ? "pp" : "dp";
    const std::int64_t others = world / degree;
    if (*n % others != 0)
      throw InputError(where, std::string("/") + name,
                       fmt::format("not published, and num_gpus {} is not a multiple of the other degrees' product {}", *n, others));
    degree = static_cast<int>(*n / others);
    as.push_back(fmt::format("{} not published; num_gpus / the other degrees = {}", name, degree));
    return;
  }
  if (missing == 0 && m.moe && p.ep > 1 && times(world, p.ep) == *n) {
    as.push_back(fmt::format("tp x pp x dp x cp x ep = num_gpus: dp {} counted beside expert parallelism, read as Megatron's "
                             "data-parallel size dp x ep = {}, which the expert-parallel ranks divide",
                             p.dp, std::int64_t{p.dp} * p.ep));
    p.dp *= p.ep;
    return;
  }
  // tp, pp and dp stated and cp left out: Megatron's dp excludes the context-parallel ranks
  // (world = tp x pp x dp x cp), so what num_gpus leaves over is the CP size.
  if (missing == 0 && !cp && *n % world == 0) {
    p.cp = static_cast<int>(*n / world);
    as.push_back(fmt::format("cp not published; num_gpus / (tp x pp x dp) = {}", p.cp));
    return;
  }
  throw InputError(where, "/num_gpus",
                   fmt::format("tp*pp*dp*cp = {} differs from num_gpus {}{}", world < kCap ? std::to_string(world) : "2^30 or more", *n,
                               missing > 1 ? " (more than one of tp, pp and dp not published)" : ""));
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
  std::vector<std::string>& as = run.assumptions;
  job.model = model_from_record(r, where, as);
  ModelSpec& m = job.model;
  job.cluster = cluster_from_record(r, where, catalog, as);
  job.calibration = catalog.calibration_or_default(job.cluster.gpu);

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
  else if (pr.recipe_assumed) as.push_back(std::string(kAssumedDelayedRecipe));

  ParallelPlan& p = job.plan;
  read_parallel_degrees(r, where, m, t.global_batch_size, p, as);
  // Some tables write 0 for "no virtual pipeline" (Megatron's None): one model chunk per stage.
  const auto vpp = rd.opt_int("vpp", 0, 1 << 10);
  p.vpp = static_cast<int>(std::max<std::int64_t>(1, vpp.value_or(1)));
  if (vpp == 0) as.push_back("vpp 0 read as no interleaving (one model chunk per stage)");
  run.unknown.vpp = !vpp && p.pp > 1;
  run.unknown.expert_parallel = m.moe && !(r.contains("ep") && r["ep"].is_number());
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
  read_recompute(r, where, pr.recipe_assumed, t, p, run);
  // A recipe's explicit pipeline layout (Megatron-Bridge's pp_layout knob, Megatron-Core's
  // pipeline_model_parallel_layout), e.g. DeepSeek-V3's "Et|(tt|)*30mL": it sets vpp and each
  // rank's layers.
  const std::string knobs = text_of(r, "notes");
  // The recipe's MTP depth (Megatron-Bridge's mtp_num_layers knob, Megatron's --mtp-num-layers)
  // over the config's, and whether its depths share one module (mtp_use_repeated_layer): before
  // the pipeline split, which counts MTP layers.
  if (auto depth = knob_int(knobs, "mtp_num_layers"); depth && *depth >= 0 && *depth <= 64 && *depth != m.mtp_layers) {
    as.push_back(fmt::format("{} MTP depth(s) from the recipe (mtp_num_layers) over the model config's {}", *depth, m.mtp_layers));
    m.set_mtp_layers(*depth);
  }
  if (knob_bool(knobs, "mtp_use_repeated_layer").value_or(false) && m.mtp_layers > 0) {
    m.mtp_repeated_layer = true;
    as.push_back("the MTP depths share one module (mtp_use_repeated_layer): its weights counted once");
  }
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
  // A recipe's uneven first and last stages (Megatron-Bridge's GLM-5 on GB200: 14 and 16 of 78
  // layers over pp 6), as TransformerConfig or Megatron's flags name them.
  if (p.stage_layers.empty() && p.pp > 1) {
    auto stage_knob = [&](const char* config_key, const char* flag_key) {
      auto v = knob_int(knobs, config_key);
      return v ? v : knob_int(knobs, flag_key);
    };
    const std::optional<int> first = stage_knob("num_layers_in_first_pipeline_stage", "decoder_first_pipeline_num_layers");
    const std::optional<int> last = stage_knob("num_layers_in_last_pipeline_stage", "decoder_last_pipeline_num_layers");
    if (first || last) {
      p.stage_layers = first_last_stage_layers(m.num_layers, p.pp, first, last);
      if (p.stage_layers.empty())
        throw InputError(where, "/notes (num_layers_in_first_pipeline_stage)",
                         fmt::format("the first/last stage layers ({}, {}) leave a rest of the {} layers the other stages cannot share evenly",
                                     first ? std::to_string(*first) : "-", last ? std::to_string(*last) : "-", m.num_layers));
      run.unknown.vpp = false;
      as.push_back(fmt::format("uneven first/last pipeline stages from the recipe: {} layers per stage", fmt::join(p.stage_layers, ",")));
    }
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
  read_runtime(r, where, job, run);
  // An fp8 recipe left unsaid is the stack's default: Transformer Engine's delayed scaling, or on
  // an FSDP stack torchao's Float8 training, whose default is tensorwise dynamic scaling.
  if (pr.recipe_assumed && job.runtime.framework == Framework::fsdp && t.recipe == LowPrecisionRecipe::delayed) {
    t.recipe = LowPrecisionRecipe::tensorwise;
    std::replace(as.begin(), as.end(), std::string(kAssumedDelayedRecipe),
                 std::string("fp8 recipe not stated; assumed torchao's default Float8 training, tensorwise scaling (an FSDP stack)"));
  }
  return job;
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

// Expert-parallel sizes: the divisors of the expert count (check_plan drops those that do not tile
// the data-parallel ranks).
std::vector<int> ep_candidates(const ValidationRun& run) {
  const Job& job = *run.job;
  if (!run.unknown.expert_parallel || !job.model.moe) return {job.plan.ep};
  std::vector<int> out;
  for (int d = 1; d <= job.model.moe->num_experts; ++d)
    if (job.model.moe->num_experts % d == 0) out.push_back(d);
  return out;
}

std::vector<int> vpp_candidates(const ValidationRun& run) {
  const Job& job = *run.job;
  // Only Megatron-LM interleaves; DeepSpeed's pipeline engine runs plain 1F1B.
  if (!run.unknown.vpp || job.runtime.framework != Framework::megatron) return {job.plan.vpp};
  std::vector<int> out = {1};
  const int L = job.model.num_layers, pp = job.plan.pp;
  for (int v = 2; v <= max_virtual_stages(job.model, pp); ++v)
    if (L % (pp * v) == 0 || !standard_stage_layers(L, pp, v, job.model.mtp_layers).empty()) out.push_back(v);
  return out;
}

// Recompute settings tried for a record that leaves recompute out (or says only that it is on),
// for each granularity of `granularities`. On Megatron stacks also: selective recompute of each
// set of the model's applicable modules (Megatron-Core's --recompute-modules; the recipes of
// today's MoE models recompute the norms, the experts' activation, MLA's up-projections rather than
// the attention core), and full recompute of only the first k layers of each model chunk
// (--recompute-method block --recompute-num-layers k: n = k x vpp per stage, below the stage's
// layers), which keeps the activations of the others. The fastest setting that fits is often one
// of these, and engineers launch it (Korthikanti et al. 2022, section 5: recompute only as much as
// memory requires). Sets Megatron refuses are dropped by check_plan, a count some chunk cannot hold
// by the caller (recompute_layers_per_chunk).
std::vector<RecomputeSpec> recompute_candidates(const ValidationRun& run, const Job& job, int vpp,
                                                const std::vector<RecomputeGranularity>& granularities) {
  std::vector<RecomputeSpec> out;
  const bool free = (run.unknown.recompute || run.unknown.recompute_on) && job.runtime.framework == Framework::megatron;
  const std::vector<int> stages = resolve_stage_layers(job.plan, job.model.num_layers);
  const int stage_layers = stages.empty() ? 0 : *std::max_element(stages.begin(), stages.end());
  for (RecomputeGranularity g : granularities) {
    RecomputeSpec r = job.plan.recompute;
    r.granularity = g;
    out.push_back(r);
    if (!free) continue;
    if (g == RecomputeGranularity::selective) {
      // Every non-empty subset of the applicable modules other than the default already added,
      // smaller sets first (of two equally fast sets the first found, the smaller, is kept).
      const unsigned all = applicable_recompute_modules(job.model);
      for (unsigned sub = (0u - all) & all; sub != 0; sub = (sub - all) & all) {
        if (sub == r.modules) continue;
        RecomputeSpec m = r;
        m.modules = sub;
        out.push_back(m);
      }
    } else if (g == RecomputeGranularity::full) {
      for (int n = vpp; n < stage_layers; n += vpp) {
        r.num_layers = n;
        out.push_back(r);
      }
    }
  }
  return out;
}

std::string recompute_text(const ParallelPlan& p) {
  const RecomputeSpec& r = p.recompute;
  if (r.granularity == RecomputeGranularity::selective)
    return fmt::format("selective of {}", fmt::join(recompute_module_names(r.modules), ", "));
  if (r.granularity != RecomputeGranularity::full || r.num_layers < 0) return std::string(to_string(r.granularity));
  std::string text = fmt::format("full, method block, {} layer{} of each stage", r.num_layers, r.num_layers == 1 ? "" : "s");
  if (p.vpp > 1) text += fmt::format(" ({} per model chunk)", r.num_layers / p.vpp);
  return text;
}

std::string completion_text(const ValidationRun& run, const Job& job) {
  std::vector<std::string> parts;
  const ParallelPlan& p = job.plan;
  if (run.unknown.micro_batch) parts.push_back(fmt::format("micro_batch_size {}", p.micro_batch_size));
  if (run.unknown.expert_parallel) parts.push_back(fmt::format("ep {}", p.ep));
  if (run.unknown.vpp) parts.push_back(fmt::format("vpp {}", p.vpp));
  if (run.unknown.sequence_parallel) parts.push_back(fmt::format("sequence_parallel {}", p.sequence_parallel));
  if (run.unknown.recompute) parts.push_back(fmt::format("recompute {}", recompute_text(p)));
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
     for (int ep : ep_candidates(run))
      for (int vpp : vpps)
        for (int sp : sps)
          for (const RecomputeSpec& rc : recompute_candidates(run, job, vpp, rcs))
            for (int fp8_opt : fp8_options)
              for (int overlap : overlaps)
                for (int shard : shardings) {
            Job j = job;
            j.plan.micro_batch_size = mbs;
            j.plan.ep = ep;
            j.plan.vpp = vpp;
            j.plan.sequence_parallel = sp != 0;
            j.plan.recompute = rc;
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
            if (rc.num_layers >= 0 && !recompute_layers_per_chunk(j.plan, j.model)) continue;
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
