#include "record_runtime.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <regex>
#include <string_view>

#include <fmt/format.h>

#include "costmodel/errors.h"
#include "launch/megatron_import.h"
#include "record_precision.h"
#include "record_text.h"

namespace strata::record {

namespace {

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
  rt.moe_shared_expert_overlap = knob_bool(notes, "moe_shared_expert_overlap").value_or(false);
  rt.moe_a2a_overlap = knob_bool(notes, "moe_a2a_overlap").value_or(false) ||
                       knob_bool(notes, "overlap_moe_expert_parallel_comm").value_or(false);
  const std::string backend = lower(knob_string(notes, "moe_flex_dispatcher_backend").value_or(""));
  rt.moe_token_dedup = backend == "deepep" || backend == "hybridep" || knob_bool(notes, "moe_enable_deepep").value_or(false);
  // HybridEP's static per-rank budget (Megatron-Bridge's full-iteration CUDA graph recipes set it).
  if (auto budget = knob_number(notes, "moe_expert_rank_capacity_factor"); budget && *budget > 0 && backend == "hybridep")
    rt.moe_rank_capacity_factor = *budget;
  // Megatron-Core's paged stash under that budget (Megatron-Bridge's DeepSeek recipes set it).
  if (knob_bool(notes, "moe_paged_stash").value_or(false) && rt.moe_rank_capacity_factor > 0) {
    rt.moe_paged_stash_factor = knob_number(notes, "moe_paged_stash_buffer_size_factor_cuda").value_or(kMegatronPagedStashFactor);
    rt.moe_paged_stash_host_factor = knob_number(notes, "moe_paged_stash_buffer_size_factor_cpu").value_or(0);
  }
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
    if (contains(zero, "fsdp")) {
      // "FSDP-style sharding (ZeRO-1/2-like)" on a Megatron stack names its own sharding of the
      // optimizer state, whatever ZeRO stage the words compare it to.
      p.distributed_optimizer = true;
      p.zero_stage = 0;
      as.push_back("\"" + zero + "\" under " + fwtext + ": read as Megatron's sharding (the distributed optimizer), not PyTorch FSDP");
    }
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
  // Hybrid sharding (HSDP): replica groups of the sharded state (Megatron-Bridge
  // num_distributed_optimizer_instances with use_megatron_fsdp), the optimizer state split across
  // them with outer_dp_sharding_strategy "optim".
  if (auto n = knob_number(notes, "num_distributed_optimizer_instances"); n && *n > 1 && p.zero_stage >= 2) {
    if (*n != std::floor(*n) || *n > 1e6)
      throw InputError(where, "/notes", "num_distributed_optimizer_instances: expected a whole number of replica groups");
    p.optimizer_instances = static_cast<int>(*n);
    p.outer_optimizer_sharding = p.zero_stage == 3 && lower(knob_string(notes, "outer_dp_sharding_strategy").value_or("")) == "optim";
    as.push_back(fmt::format("Megatron-FSDP hybrid sharding (HSDP): {} replica groups{}", p.optimizer_instances,
                             p.outer_optimizer_sharding ? ", the optimizer state split across them (outer optim)" : ""));
  }
}

// FSDP2's hybrid sharding (HSDP) on a PyTorch stack: torchtitan's data_parallel_replicate_degree
// (--parallelism.data_parallel_replicate_degree) replica groups, each sharding over the rest of the
// record's data-parallel ranks (its data_parallel_shard_degree).
void read_fsdp_replicas(const nlohmann::json& r, const std::string& where, ParallelPlan& p, std::vector<std::string>& as) {
  const std::string notes = lower(text_of(r, "notes"));
  const auto n = knob_number(notes, "data_parallel_replicate_degree");
  if (!n || *n <= 1) return;
  if (*n != std::floor(*n) || *n > 1e6 || (static_cast<std::int64_t>(p.dp) * p.cp) % static_cast<std::int64_t>(*n) != 0)
    throw InputError(where, "/notes",
                     fmt::format("data_parallel_replicate_degree {:g}: expected a whole number of replica groups dividing dp x cp = {}", *n,
                                 static_cast<std::int64_t>(p.dp) * p.cp));
  p.optimizer_instances = static_cast<int>(*n);
  as.push_back(fmt::format("FSDP2 hybrid sharding (HSDP): {} replica groups, each sharding over {} ranks", p.optimizer_instances,
                           p.optimizer_shard_ranks()));
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
                     "expected CUDA graph modules among attn, mlp, moe, moe_router, moe_preprocess, mamba (full, full_iteration), found \"" +
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

// Whether the lower-cased text a record states names any of `phrases` (flags and knobs quoted as they
// are; says_unnegated is the reading for worded options, which also rejects negations).
bool mentions(const std::string& stated, std::initializer_list<std::string_view> phrases) {
  return std::ranges::any_of(phrases, [&](std::string_view phrase) { return stated.find(phrase) != std::string::npos; });
}

// The framework a record names (framework; the optimizer field's "FSDP" where it names none) and the
// optimizer sharding it states (zero_or_dist_optimizer, Megatron-FSDP), onto job.runtime and job.plan.
void read_framework(const nlohmann::json& r, const std::string& where, const std::string& fwtext, const std::string& zero,
                    Job& job, ValidationRun& run) {
  std::vector<std::string>& as = run.assumptions;
  ModelSpec& m = job.model;
  ParallelPlan& p = job.plan;
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
  // A stated selective recompute on an FSDP stack is torchtitan's op-level checkpointing, which
  // saves the attention output and every other matmul's and recomputes the rest
  // (torchtitan/distributed/activation_checkpoint.py, SelectiveAC): not modelled; Megatron's
  // selective recompute stands in for it, and the assumptions say so.
  if (rt.framework == Framework::fsdp && p.recompute.granularity == RecomputeGranularity::selective && !run.unknown.recompute)
    as.push_back("selective recompute on an FSDP stack (torchtitan's op-level checkpointing: every other matmul saved) is not "
                 "modelled; costed as Megatron's selective recompute of the modules above");
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
  // Megatron's distributed optimizer in the words, flags and knobs sources use for it, or as
  // "sharded optimizer states" (on DeepSpeed stacks ZeRO-1, the same sharding).
  static const std::regex dist_opt_re(
      "distributed[ _-]optimi[sz]er|dist[-_]opt\\b|sharded optimi[sz]er|optimi[sz]er(?: state)? sharding|optimi[sz]er states? sharded");
  const bool names_no = zero.find("no distributed") != std::string::npos || zero.find("without") != std::string::npos ||
                        zero.find("=false") != std::string::npos || zero.find("= false") != std::string::npos;
  if (std::regex_search(zero, dist_opt_re) && !names_no) {
    if (rt.framework == Framework::deepspeed) {
      if (p.zero_stage == 0) p.zero_stage = 1;
    } else if (rt.framework == Framework::megatron) {
      p.distributed_optimizer = true;
      p.zero_stage = 0;
    }
  }
  if (rt.framework == Framework::megatron) read_megatron_fsdp(r, where, zero, fwtext, p, as);
  if (rt.framework == Framework::fsdp) read_fsdp_replicas(r, where, p, as);
  if (zero.find("assumed") != std::string::npos) as.push_back("optimizer sharding not stated; read as \"" + zero + "\"");
  run.unknown.optimizer_sharding = (zero.empty() || zero.find("not stated") != std::string::npos) &&
                                   rt.framework != Framework::fsdp && !p.distributed_optimizer && p.zero_stage == 0;
}

// The year of the stack a record ran: named in its framework field (a year or an NGC container
// release), else the publication year of its source; 0 when neither gives one.
int stack_year(const nlohmann::json& r, const std::string& fwtext) {
  int year = year_in(fwtext);
  if (year == 0) year = container_year(fwtext);
  if (year == 0 && r.contains("source") && r["source"].is_string()) year = publication_year(r["source"].get<std::string>());
  return year;
}

// The features a stack of that year has, unless the record states otherwise: fused (flash) attention
// arrived in these frameworks in 2022-2023, and older stacks materialize the attention scores; DP
// gradient reduction overlapped with backward is likewise recent in Megatron-LM (2023) and absent from
// the DeepSpeed pipeline engine.
void apply_year_defaults(const nlohmann::json& r, const std::string& fwtext, int year, Job& job, std::vector<std::string>& as) {
  RuntimeOptions& rt = job.runtime;
  const std::string arch = text_of(r, "arch_notes");
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
      resolved_attention_kernel(rt, job.cluster.gpu) == AttentionKernel::cudnn) {
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
}

// Precision options a record states in its free text or knobs (`stated`, lower-cased): bf16 end
// layers, fp8 parameters and attention, the gradients' dtype; fp8 memory options left unstated are
// marked for the completion.
void read_precision_options(const std::string& stated, const std::string& where, const std::string& fwtext, Job& job,
                            ValidationRun& run) {
  std::vector<std::string>& as = run.assumptions;
  TrainingSpec& t = job.training;
  RuntimeOptions& rt = job.runtime;
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
  // Megatron-Bridge's performance recipes reduce gradients in bf16 in every precision
  // (perf_recipes/_common.py _perf_precision and, before it, scripts/performance/configs:
  // grad_reduce_in_fp32 = False since r0.1.0).
  if (rt.framework == Framework::megatron && contains(fwtext, "bridge") && !job.runtime.grad_reduce_in_bf16) {
    job.runtime.grad_reduce_in_bf16 = true;
    as.push_back("gradient reduction dtype not stated; bf16, as Megatron-Bridge's performance recipes set it "
                 "(grad_reduce_in_fp32 = False)");
  }
  // Megatron-LM reduces an fp16 model's gradients in fp16: before 2021 LocalDDP all-reduced each
  // parameter's fp16 .grad (allreduce_params, --fp32-allreduce off by default), and since then the
  // main_grad buffer takes the parameters' dtype unless --accumulate-allreduce-grads-in-fp32
  // (arguments.py; only bf16 forces fp32), which Megatron's own fp16 example launches leave out
  // (examples/pretrain_gpt3_175B.sh). A record that says it accumulated in fp32 keeps fp32.
  if (rt.framework == Framework::megatron && t.precision == Precision::fp16 && !job.runtime.grad_reduce_in_bf16) {
    if (mentions(stated, {"accumulate-allreduce-grads-in-fp32", "fp32 grad"})) {
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
  // On an FSDP stack the same thing is torchao's float8 all-gather (torchtitan's
  // --float8.enable_fsdp_float8_all_gather): the linears' weights gathered in fp8.
  if (t.precision == Precision::fp8 && rt.framework == Framework::fsdp &&
      knob_bool(stated, "enable_fsdp_float8_all_gather").value_or(false)) {
    job.runtime.fp8_param_gather = true;
    as.push_back("FSDP float8 all-gather: the linears' weights gathered in fp8 (torchao's enable_fsdp_float8_all_gather)");
  }
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
  run.unknown.fp8_memory_options = t.precision == Precision::fp8 && rt.framework == Framework::megatron &&
                                   !(job.runtime.fp8_param_gather && job.runtime.grad_reduce_in_bf16);
}

// The loss's kernels (layer_ops add_cross_entropy_ops), where a record states them; else each
// stack's own default.
void read_loss_kernels(const std::string& stated, const std::string& fwtext, RuntimeOptions& rt, std::vector<std::string>& as) {
  if (mentions(stated, {"cross-entropy-fusion-impl te", "cross_entropy_fusion_impl te", "_cef"})) {
    // SimuMax's "_cef" cases run --cross-entropy-loss-fusion --cross-entropy-fusion-impl te
    // (SimuMax docs/strategy.md, cross_entropy_loss_fusion).
    rt.cross_entropy = CrossEntropyKernel::single_pass;
  } else if (mentions(stated, {"cross-entropy-loss-fusion", "cross_entropy_loss_fusion", "cross-entropy fusion"})) {
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
}

// Communication options a record states: TP overlap (completed where a Megatron-Core stack leaves it
// out), the CP exchange (Megatron --cp-comm-type), overlap switched off, and the async TP all-reduce
// of the stack's year.
void read_communication_options(const std::string& stated, const std::string& where, const std::string& fwtext, int year, Job& job,
                                ValidationRun& run) {
  std::vector<std::string>& as = run.assumptions;
  ParallelPlan& p = job.plan;
  RuntimeOptions& rt = job.runtime;
  const std::optional<bool> tp_overlap_knob = knob_bool(stated, "tp_comm_overlap");
  if (mentions(stated, {"tp comm overlap explicitly disabled", "tp comm overlap disabled", "no tp comm overlap"}) ||
      tp_overlap_knob == false)
    rt.tp_comm_overlap = false;
  else if (tp_overlap_knob == true || mentions(stated, {"tp communication overlap enabled", "tp comm overlap enabled"}))
    rt.tp_comm_overlap = true;
  else
    // Userbuffers TP overlap (Transformer Engine, 2023+) is part of the performance recipes of
    // Megatron-Core based stacks; a record that does not say is completed like the other fields.
    run.unknown.tp_comm_overlap = p.tp > 1 && rt.framework == Framework::megatron && year >= 2023 &&
                                  (contains(fwtext, "nemo") || contains(fwtext, "megatron-core") || contains(fwtext, "bridge"));
  // Megatron --cp-comm-type as records name it ("CP a2a", "cp-comm-type allgather").
  // "a2a+p2p" (hierarchical CP) first: it also reads as "cp-comm-type a2a".
  const std::string cp_knob = knob_string(stated, "cp_comm_type").value_or("");
  if (mentions(stated, {"a2a+p2p", "hierarchical cp", "hierarchical context parallel"})) {
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
  } else if (mentions(stated, {"cp a2a"}) || cp_knob == "a2a" || mentions(stated, {"ulysses"})) {
    rt.cp_comm_type = CpCommType::a2a;
  } else if (mentions(stated, {"cp allgather"}) || cp_knob == "allgather") {
    rt.cp_comm_type = CpCommType::allgather;
  } else if (mentions(stated, {"cp p2p"}) || cp_knob == "p2p") {
    rt.cp_comm_type = CpCommType::p2p;
  } else if (job.model.dsa && p.cp > 1) {
    rt.cp_comm_type = CpCommType::allgather;
    as.push_back("CP exchange not stated: all-gather, the only one Megatron-Core's DeepSeek Sparse Attention runs");
  } else if (rt.framework == Framework::fsdp && p.cp > 1 &&
             lower(knob_string(stated, "context_parallel_rotate_method").value_or("")) == "alltoall") {
    // torchtitan's "alltoall" rotation swaps K/V shards step by step behind each sub-attention
    // (PyTorch's _AllToAllRotater): the ring's traffic and overlap.
    rt.cp_comm_type = CpCommType::p2p;
  } else if (rt.framework == Framework::fsdp && p.cp > 1) {
    rt.cp_comm_type = CpCommType::allgather;
    as.push_back("CP exchange not stated: K/V all-gathered, torchtitan's default context_parallel_rotate_method for PyTorch's "
                 "context parallelism (say \"cp p2p\" or \"cp a2a\" in the notes for another)");
  }
  if (mentions(stated, {"overlap-grad-reduce/param-gather off", "no overlap flags"})) {
    rt.overlap_grad_reduce = false;
    rt.overlap_param_gather = false;
  }
  // Async backward TP all-reduce: Megatron-LM from 2022, Megatron-DeepSpeed from its 2023 rebase.
  rt.async_tp_allreduce = year == 0 ? rt.framework == Framework::megatron
                                    : year >= (rt.framework == Framework::megatron ? 2022 : 2023);
}

}  // namespace

// Megatron-Core's fine-grained activation offloading, as recipe knobs (Megatron-Bridge:
// "fine_grained_activation_offloading": true, "offload_modules": ["core_attn", "attn_proj"],
// "min_offloaded_tensor_size": 350000000) or Megatron's flags.
void read_activation_offload(const std::string& stated, const std::string& where, ParallelPlan& p, std::vector<std::string>& as) {
  if (!knob_bool(stated, "fine_grained_activation_offloading").value_or(false)) return;
  auto module = [](const std::string& w) { return offload_modules_from_string(w).has_value(); };
  const std::optional<std::string> names = knob_list(stated, "offload_modules", module);
  const auto modules = offload_modules_from_string(names.value_or(""));
  if (!modules)
    throw InputError(where, "/notes (offload_modules)",
                     "fine_grained_activation_offloading needs offload_modules among attn_norm, qkv_linear, core_attn, attn_proj, "
                     "mlp_norm, expert_fc1, moe_act, fused_group_mlp; found \"" + names.value_or("") + "\"");
  p.offload.modules = *modules;
  if (auto n = knob_string(stated, "min_offloaded_tensor_size")) {
    // An element count, Python's digit separators allowed (350_000_000).
    std::string digits;
    for (char c : *n)
      if (c != '_') digits += c;
    if (digits.empty() || digits.size() > 15 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      throw InputError(where, "/notes (min_offloaded_tensor_size)", "expected a whole number of elements, found \"" + *n + "\"");
    p.offload.min_tensor_elements = std::stoll(digits);
  }
  as.push_back(fmt::format("fine-grained activation offloading of {} from the recipe knobs (tensors of {} elements and more)",
                           fmt::join(offload_module_names(*modules), ", "), p.offload.min_tensor_elements));
}

void read_runtime(const nlohmann::json& r, const std::string& where, Job& job, ValidationRun& run) {
  std::vector<std::string>& as = run.assumptions;
  const std::string fwtext = text_of(r, "framework");
  const std::string zero = lower(text_of(r, "zero_or_dist_optimizer"));
  read_framework(r, where, fwtext, zero, job, run);
  const int year = stack_year(r, fwtext);
  apply_year_defaults(r, fwtext, year, job, as);
  // Options a record states in its free text (flags and knobs quoted in the source or notes).
  const std::string stated = lower(text_of(r, "source") + " " + text_of(r, "notes") + " " + fwtext + " " + zero + " " +
                                   text_of(r, "parallelism_style"));
  read_precision_options(stated, where, fwtext, job, run);
  read_loss_kernels(stated, fwtext, job.runtime, as);
  read_optimizer_state(stated, job.runtime.framework, job.plan, job.training.optimizer, as, where);
  if (job.plan.distributed_optimizer) run.unknown.optimizer_sharding = false;  // stated, or implied by the optimizer's state
  read_communication_options(stated, where, fwtext, year, job, run);
  if (job.model.moe) apply_moe_runtime(r, job, as);
  apply_bridge_model_function(r, job, run, as);
  // Layer-level CPU offloading, as a recipe knob (Megatron-Bridge cpu_offloading_num_layers, with
  // cpu_offloading True) or Megatron's flag (--cpu-offloading-num-layers turns it on). The weights'
  // offloading (cpu_offloading_weights) is not modelled: said.
  const bool switched_off = knob_bool(stated, "cpu_offloading") == false;
  if (const auto layers = knob_int(stated, "cpu_offloading_num_layers"); layers && *layers > 0 && !switched_off) {
    job.plan.cpu_offload_layers = *layers;
    as.push_back(fmt::format("layer-level CPU offloading of the first {} layers' activations (cpu_offloading_num_layers)", *layers));
    if (knob_bool(stated, "cpu_offloading_weights").value_or(false))
      as.push_back("cpu_offloading_weights: the weights' offloading is not modelled (they count on the GPU)");
  }
  read_cuda_graphs(stated, where, job, as);
  read_activation_offload(stated, where, job.plan, as);
}

}  // namespace strata::record
