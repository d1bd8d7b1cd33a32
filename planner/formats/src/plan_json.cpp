#include "formats/plan_json.h"

#include <cmath>
#include <utility>

#include "costmodel/json_reader.h"
#include "formats/plan_input.h"
#include "launch/megatron_args.h"

namespace strata {

nlohmann::json plan_to_json(const Job& job, const Prediction& prediction) {
  const ParallelPlan& p = job.plan;
  nlohmann::json stages = nlohmann::json::array();
  for (int l : resolve_stage_layers(p, job.model.num_layers)) stages.push_back(l);
  nlohmann::json cluster = cluster_to_json(job.cluster);
  nlohmann::json model = model_to_json(job.model);
  // Informational (read back and ignored): every token passes through `active` of the `total`.
  model["parameters"] = {{"total", job.model.total_params(job.training.seq_length)}, {"active", job.model.active_params(job.training.seq_length)}};
  nlohmann::json j = {{"schema_version", kPlanSchemaVersion},
          {"model", model},
          {"gpu", gpu_to_json(job.cluster.gpu)},
          {"cluster", cluster},
          {"num_gpus", p.world_size()},
          {"training",
           {{"global_batch_size", job.training.global_batch_size},
            {"seq_length", job.training.seq_length},
            {"precision", to_string(job.training.precision)},
            {"optimizer", to_string(job.training.optimizer.kind)}}},
          {"runtime",
           {{"framework", to_string(job.runtime.framework)},
            {"flash_attention", job.runtime.flash_attention},
            {"overlap_grad_reduce", job.runtime.overlap_grad_reduce},
            {"overlap_param_gather", job.runtime.overlap_param_gather},
            {"fused_grad_accumulation", job.runtime.fused_grad_accumulation},
            {"tp_comm_overlap", job.runtime.tp_comm_overlap},
            {"async_tp_allreduce", job.runtime.async_tp_allreduce},
            {"make_vocab_size_divisible_by", job.runtime.vocab_divisor},
            {"memory_reserve_GiB", job.runtime.memory_reserve_GiB},
            {"step_overhead_s", job.runtime.step_overhead_s},
            {"moe_load_imbalance", job.runtime.moe_load_imbalance},
            {"moe_capacity_factor", job.runtime.moe_capacity_factor},
            {"moe_pad_to_capacity", job.runtime.moe_pad_to_capacity},
            {"moe_rank_capacity_factor", job.runtime.moe_rank_capacity_factor},
            {"moe_paged_stash_factor", job.runtime.moe_paged_stash_factor},
            {"moe_paged_stash_host_factor", job.runtime.moe_paged_stash_host_factor},
            {"moe_a2a_overlap", job.runtime.moe_a2a_overlap},
            {"moe_shared_expert_overlap", job.runtime.moe_shared_expert_overlap},
            {"moe_token_dedup", job.runtime.moe_token_dedup},
            {"moe_allgather_dispatch", job.runtime.moe_allgather_dispatch},
            {"moe_grouped_gemm", job.runtime.moe_grouped_gemm}}},
          {"parallel",
           {{"tp", p.tp},
            {"pp", p.pp},
            {"dp", p.dp},
            {"cp", p.cp},
            {"ep", p.ep},
            {"etp", p.etp},
            {"sequence_parallel", p.sequence_parallel},
            {"vpp", p.vpp},
            {"micro_batch_size", p.micro_batch_size},
            {"zero_stage", p.zero_stage},
            {"distributed_optimizer", p.distributed_optimizer}}},
          {"recompute",
           {{"granularity", to_string(p.recompute.granularity)},
            {"num_layers", p.recompute.num_layers < 0 ? nlohmann::json(nullptr) : nlohmann::json(p.recompute.num_layers)}}},
          {"stages", stages},
          {"calibration", calibration_to_json(job.calibration)},
          {"prediction", prediction_to_json(prediction)},
          {"launch", launch_to_json(megatron_launch(job, prediction.feasible, prediction.reason))}};
  if (p.recompute.granularity == RecomputeGranularity::selective) j["recompute"]["modules"] = recompute_module_names(p.recompute.modules);
  if (p.cpu_offload_layers > 0) j["parallel"]["cpu_offload_layers"] = p.cpu_offload_layers;
  if (p.offload.modules != 0)
    j["activation_offload"] = {{"modules", offload_module_names(p.offload.modules)}, {"min_tensor_elements", p.offload.min_tensor_elements}};
  if (p.vpp > 1) {
    // The micro-batch group the schedule ran with, where it is not Megatron-Core's default pp.
    const std::int64_t group = interleaved_microbatch_group(p, job.num_micro_batches());
    if (group != p.pp) j["parallel"]["microbatch_group_size_per_vp_stage"] = group;
    // Decoder layers of each model chunk of each stage (interleaved 1F1B), as the schedule and the
    // launch's layout place them.
    nlohmann::json chunks = nlohmann::json::array();
    const std::vector<int> layers = virtual_stage_layers(p, job.model);
    for (int s = 0; s < p.pp; ++s) {
      nlohmann::json row = nlohmann::json::array();
      for (int c = 0; c < p.vpp; ++c) row.push_back(layers[static_cast<std::size_t>(c * p.pp + s)]);
      chunks.push_back(row);
    }
    j["stage_chunks"] = chunks;
  }
  // Written only where they apply, so bf16 plans read the same as before.
  if (job.training.precision == Precision::fp8) j["training"]["fp8_recipe"] = to_string(job.training.recipe);
  const OptimizerSpec& o = job.training.optimizer;
  if (o.precision_aware || o.cpu_offload_fraction > 0)
    j["training"]["optimizer_state"] = {{"precision_aware", o.precision_aware},
                                        {"main_params_dtype", to_string(o.main_params)},
                                        {"exp_avg_dtype", to_string(o.exp_avg)},
                                        {"exp_avg_sq_dtype", to_string(o.exp_avg_sq)},
                                        {"cpu_offload_fraction", o.cpu_offload_fraction}};
  if (p.optimizer_instances > 1) j["parallel"]["distributed_optimizer_instances"] = p.optimizer_instances;
  if (p.outer_optimizer_sharding) j["parallel"]["outer_dp_sharding_strategy"] = "optim";
  if (job.runtime.fp8_param_gather) j["runtime"]["fp8_param_gather"] = true;
  if (job.runtime.fp8_attention) j["runtime"]["fp8_attention"] = true;
  if (job.runtime.grad_reduce_in_bf16) j["runtime"]["grad_reduce_in_bf16"] = true;
  // Megatron's --cuda-graph-modules: an empty list is the whole layer.
  if (job.runtime.cuda_graph_modules != 0) j["runtime"]["cuda_graph_modules"] = cuda_graph_module_names(job.runtime.cuda_graph_modules);
  if (!job.runtime.lazy_module_loading) j["runtime"]["lazy_module_loading"] = false;
  if (job.runtime.cp_comm_type != CpCommType::p2p) j["runtime"]["cp_comm_type"] = to_string(job.runtime.cp_comm_type);
  if (job.runtime.attention_kernel != AttentionKernel::automatic) j["runtime"]["attention_kernel"] = to_string(job.runtime.attention_kernel);
  if (job.runtime.cross_entropy != CrossEntropyKernel::automatic) j["runtime"]["cross_entropy"] = to_string(job.runtime.cross_entropy);
  if (job.runtime.cp_comm_type == CpCommType::a2a_p2p) j["runtime"]["cp_a2a_size"] = cp_a2a_group_size(job);
  if (job.runtime.bf16_first_layers > 0) j["runtime"]["bf16_first_layers"] = job.runtime.bf16_first_layers;
  if (job.runtime.bf16_last_layers > 0) j["runtime"]["bf16_last_layers"] = job.runtime.bf16_last_layers;
  return j;
}

nlohmann::json launch_to_json(const LaunchPlan& l) {
  nlohmann::json j = {{"torchrun", {{"nnodes", l.nnodes}, {"nproc_per_node", l.nproc_per_node}}},
                      {"num_micro_batches", l.num_micro_batches}};
  if (l.megatron_args.empty()) {
    j["refused"] = l.refused;
    return j;
  }
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [k, v] : l.env) env[k] = v;
  j["env"] = env;
  j["megatron_args"] = l.megatron_args;
  if (!l.notes.empty()) j["notes"] = l.notes;
  return j;
}

std::string prediction_defect(const Prediction& p) {
  const std::pair<const char*, double> top[] = {
      {"iteration_time_s", p.iteration_time_s}, {"tokens_per_sec_per_gpu", p.tokens_per_sec_per_gpu},
      {"mfu", p.mfu}, {"hfu", p.hfu}, {"memory_per_gpu_GiB", p.memory_per_gpu_GiB},
      {"memory_capacity_GiB", p.memory_capacity_GiB}, {"breakdown/compute_s", p.breakdown.compute_s},
      {"breakdown/recompute_s", p.breakdown.recompute_s}, {"breakdown/tp_comm_s", p.breakdown.tp_comm_s},
      {"breakdown/ep_comm_s", p.breakdown.ep_comm_s}, {"breakdown/host_s", p.breakdown.host_s},
      {"breakdown/offload_s", p.breakdown.offload_s},
      {"breakdown/cp_comm_s", p.breakdown.cp_comm_s}, {"breakdown/pp_comm_s", p.breakdown.pp_comm_s},
      {"breakdown/dp_comm_s", p.breakdown.dp_comm_s}, {"breakdown/bubble_s", p.breakdown.bubble_s},
      {"breakdown/imbalance_s", p.breakdown.imbalance_s},
      {"breakdown/optimizer_s", p.breakdown.optimizer_s}, {"breakdown/step_overhead_s", p.breakdown.step_overhead_s}};
  for (const auto& [name, v] : top)
    if (!std::isfinite(v)) return std::string(name) + " is " + std::to_string(v);
  for (const auto& s : p.stages) {
    const double vals[] = {s.forward_s, s.backward_s, s.recompute_s, s.busy_s, s.memory.total_GiB};
    for (double v : vals)
      if (!std::isfinite(v)) return "stage " + std::to_string(s.stage) + " has a non-finite time or memory";
  }
  // An illegal plan has no times (0); a computed one must have positive ones.
  if (p.iteration_time_s > 0 || p.feasible) {
    if (!(p.iteration_time_s > 0)) return "iteration_time_s is not positive";
    if (!(p.tokens_per_sec_per_gpu > 0)) return "tokens_per_sec_per_gpu is not positive";
    if (!(p.memory_per_gpu_GiB > 0)) return "memory_per_gpu_GiB is not positive";
  }
  return "";
}

Job plan_from_json(const nlohmann::json& j, const std::string& where) {
  JsonReader r(j, where);
  r.reject_unknown_keys({"schema_version", "model", "gpu", "cluster", "num_gpus", "training", "runtime", "parallel",
                         "recompute", "activation_offload", "stages", "stage_chunks", "calibration", "prediction", "launch", "search",
                         "sensitivity", "megatron_launch"});
  const std::int64_t version = r.get_int("schema_version", 1, 1000);
  if (version != kPlanSchemaVersion)
    r.fail("schema_version", "this strata reads plan schema version " + std::to_string(kPlanSchemaVersion));
  Job job;
  r.child("model");  // type checks with the right JSON path
  r.child("gpu");
  r.child("cluster");
  job.model = model_from_json(j.at("model"), where, "/model");
  GpuSpec gpu = gpu_from_json(j.at("gpu"), where, "/gpu");
  job.cluster = cluster_from_json(j.at("cluster"), where, gpu, "/cluster");

  JsonReader t = r.child("training");
  t.reject_unknown_keys({"global_batch_size", "seq_length", "precision", "fp8_recipe", "optimizer", "optimizer_state"});
  job.training.global_batch_size = t.get_int("global_batch_size", 1, std::int64_t{1} << 40);
  job.training.seq_length = t.get_int("seq_length", 1, std::int64_t{1} << 24);
  auto prec = precision_from_string(t.get_string("precision"));
  if (!prec) t.fail("precision", "expected fp32, tf32, fp16, bf16 or fp8");
  job.training.precision = *prec;
  if (t.has("fp8_recipe")) {
    auto recipe = recipe_from_string(t.get_string("fp8_recipe"));
    if (!recipe) t.fail("fp8_recipe", "expected delayed, tensorwise, blockwise, mxfp8 or nvfp4");
    job.training.recipe = *recipe;
  }
  if (t.has("optimizer")) {
    auto kind = optimizer_kind_from_string(t.get_string("optimizer"));
    if (!kind) t.fail("optimizer", "expected adam, sgd, muon or lion");
    job.training.optimizer.kind = *kind;
  }
  if (t.has("optimizer_state")) {
    JsonReader o = t.child("optimizer_state");
    o.reject_unknown_keys({"precision_aware", "main_params_dtype", "exp_avg_dtype", "exp_avg_sq_dtype", "cpu_offload_fraction"});
    OptimizerSpec& spec = job.training.optimizer;
    spec.precision_aware = o.opt_bool("precision_aware", false);
    auto dtype = [&](const char* key, StateDtype& dst) {
      if (!o.has(key)) return;
      auto d = state_dtype_from_string(o.get_string(key));
      if (!d) o.fail(key, "expected fp32, bf16, fp16 or fp8");
      dst = *d;
    };
    dtype("main_params_dtype", spec.main_params);
    dtype("exp_avg_dtype", spec.exp_avg);
    dtype("exp_avg_sq_dtype", spec.exp_avg_sq);
    if (o.has("cpu_offload_fraction")) {
      spec.cpu_offload_fraction = o.get_number("cpu_offload_fraction");
      if (!(spec.cpu_offload_fraction >= 0 && spec.cpu_offload_fraction <= 1)) o.fail("cpu_offload_fraction", "expected a number from 0 to 1");
    }
  }

  if (r.has("runtime")) {
    JsonReader rt = r.child("runtime");
    rt.reject_unknown_keys({"framework", "flash_attention", "overlap_grad_reduce", "overlap_param_gather", "fused_grad_accumulation",
                            "tp_comm_overlap", "async_tp_allreduce", "make_vocab_size_divisible_by", "memory_reserve_GiB",
                            "step_overhead_s", "moe_load_imbalance", "moe_capacity_factor", "moe_pad_to_capacity", "moe_rank_capacity_factor", "moe_paged_stash_factor", "moe_paged_stash_host_factor", "moe_a2a_overlap", "moe_shared_expert_overlap",
                            "moe_token_dedup", "moe_allgather_dispatch", "moe_grouped_gemm", "fp8_param_gather", "fp8_attention", "grad_reduce_in_bf16", "cp_comm_type",
                            "cp_a2a_size", "bf16_first_layers", "bf16_last_layers", "lazy_module_loading", "attention_kernel",
                            "cross_entropy", "cuda_graph_modules"});
    if (rt.has("framework")) {
      auto fw = parse_framework(rt.get_string("framework"));
      if (!fw) rt.fail("framework", "expected megatron, deepspeed or fsdp");
      job.runtime.framework = *fw;
    }
    job.runtime.flash_attention = rt.opt_bool("flash_attention", true);
    job.runtime.overlap_grad_reduce = rt.opt_bool("overlap_grad_reduce", true);
    job.runtime.overlap_param_gather = rt.opt_bool("overlap_param_gather", true);
    job.runtime.fused_grad_accumulation = rt.opt_bool("fused_grad_accumulation", true);
    job.runtime.tp_comm_overlap = rt.opt_bool("tp_comm_overlap", false);
    job.runtime.fp8_param_gather = rt.opt_bool("fp8_param_gather", false);
    job.runtime.fp8_attention = rt.opt_bool("fp8_attention", false);
    job.runtime.grad_reduce_in_bf16 = rt.opt_bool("grad_reduce_in_bf16", false);
    job.runtime.lazy_module_loading = rt.opt_bool("lazy_module_loading", true);
    if (rt.has("cuda_graph_modules")) {
      std::string names;
      for (const std::string& n : rt.opt_string_list("cuda_graph_modules")) names += n + " ";
      const auto modules = cuda_graph_modules_from_string(names);
      if (!modules) rt.fail("cuda_graph_modules", "expected a list of attn, mlp, moe, moe_router, moe_preprocess, mamba (empty: the whole layer), or full_iteration");
      job.runtime.cuda_graph_modules = *modules;
    }
    if (rt.has("cp_comm_type")) {
      auto cp = cp_comm_type_from_string(rt.get_string("cp_comm_type"));
      if (!cp) rt.fail("cp_comm_type", "expected p2p, a2a, allgather or a2a+p2p");
      job.runtime.cp_comm_type = *cp;
    }
    if (rt.has("attention_kernel")) {
      auto k = attention_kernel_from_string(rt.get_string("attention_kernel"));
      if (!k) rt.fail("attention_kernel", "expected auto, flash or cudnn");
      job.runtime.attention_kernel = *k;
    }
    if (rt.has("cross_entropy")) {
      auto k = cross_entropy_kernel_from_string(rt.get_string("cross_entropy"));
      if (!k) rt.fail("cross_entropy", "expected auto, eager, jit-fused or single-pass");
      job.runtime.cross_entropy = *k;
    }
    job.runtime.cp_a2a_size = static_cast<int>(rt.opt_int("cp_a2a_size", 1, 1 << 20).value_or(0));
    job.runtime.bf16_first_layers = static_cast<int>(rt.opt_int("bf16_first_layers", 0, 1 << 20).value_or(0));
    job.runtime.bf16_last_layers = static_cast<int>(rt.opt_int("bf16_last_layers", 0, 1 << 20).value_or(0));
    job.runtime.async_tp_allreduce = rt.opt_bool("async_tp_allreduce", true);
    job.runtime.vocab_divisor = static_cast<int>(
        rt.opt_int("make_vocab_size_divisible_by", 1, RuntimeOptions::kMaxVocabDivisor).value_or(RuntimeOptions::kDefaultVocabDivisor));
    job.runtime.memory_reserve_GiB = rt.has("memory_reserve_GiB") ? rt.get_number("memory_reserve_GiB") : 0;
    if (job.runtime.memory_reserve_GiB < 0 || job.runtime.memory_reserve_GiB >= job.cluster.gpu.memory_GiB)
      rt.fail("memory_reserve_GiB", "expected 0 <= GiB < the GPU's memory (" + std::to_string(job.cluster.gpu.memory_GiB) + ")");
    job.runtime.step_overhead_s = rt.has("step_overhead_s") ? rt.get_number("step_overhead_s") : RuntimeOptions::kDefaultStepOverheadS;
    if (!(job.runtime.step_overhead_s >= 0 && job.runtime.step_overhead_s <= RuntimeOptions::kMaxStepOverheadS))
      rt.fail("step_overhead_s", "expected 0..3600 seconds");
    job.runtime.moe_load_imbalance = rt.has("moe_load_imbalance") ? rt.get_number("moe_load_imbalance") : RuntimeOptions::kDefaultMoeLoadImbalance;
    if (!(job.runtime.moe_load_imbalance >= 1 && job.runtime.moe_load_imbalance <= 64))
      rt.fail("moe_load_imbalance", "expected a factor from 1 (balanced) to 64");
    job.runtime.moe_capacity_factor = rt.has("moe_capacity_factor") ? rt.get_number("moe_capacity_factor") : 0.0;
    if (!(job.runtime.moe_capacity_factor >= 0 && job.runtime.moe_capacity_factor <= 1024))
      rt.fail("moe_capacity_factor", "expected 0 (dropless) or a capacity factor up to 1024");
    job.runtime.moe_rank_capacity_factor = rt.has("moe_rank_capacity_factor") ? rt.get_number("moe_rank_capacity_factor") : 0.0;
    if (!(job.runtime.moe_rank_capacity_factor >= 0 && job.runtime.moe_rank_capacity_factor <= 1024))
      rt.fail("moe_rank_capacity_factor", "expected 0 (no per-rank budget) or a budget factor up to 1024");
    job.runtime.moe_paged_stash_factor = rt.has("moe_paged_stash_factor") ? rt.get_number("moe_paged_stash_factor") : 0.0;
    if (!(std::abs(job.runtime.moe_paged_stash_factor) <= 1024))
      rt.fail("moe_paged_stash_factor", "expected 0 (no paged stash) or a stash factor of at most 1024 in size");
    job.runtime.moe_paged_stash_host_factor = rt.has("moe_paged_stash_host_factor") ? rt.get_number("moe_paged_stash_host_factor") : 0.0;
    if (!(std::abs(job.runtime.moe_paged_stash_host_factor) <= 1024))
      rt.fail("moe_paged_stash_host_factor", "expected 0 (no host pool) or a factor of at most 1024 in size");
    job.runtime.moe_pad_to_capacity = rt.opt_bool("moe_pad_to_capacity", false);
    job.runtime.moe_a2a_overlap = rt.opt_bool("moe_a2a_overlap", false);
    job.runtime.moe_shared_expert_overlap = rt.opt_bool("moe_shared_expert_overlap", false);
    job.runtime.moe_token_dedup = rt.opt_bool("moe_token_dedup", false);
    job.runtime.moe_allgather_dispatch = rt.opt_bool("moe_allgather_dispatch", false);
    job.runtime.moe_grouped_gemm = rt.opt_bool("moe_grouped_gemm", false);
  }

  JsonReader pr = r.child("parallel");
  pr.reject_unknown_keys({"tp", "pp", "dp", "cp", "ep", "etp", "sequence_parallel", "vpp", "microbatch_group_size_per_vp_stage",
                          "micro_batch_size", "zero_stage", "distributed_optimizer", "distributed_optimizer_instances",
                          "outer_dp_sharding_strategy", "cpu_offload_layers"});
  ParallelPlan& p = job.plan;
  constexpr std::int64_t kMax = 1000000;
  p.tp = static_cast<int>(pr.get_int("tp", 1, kMax));
  p.pp = static_cast<int>(pr.get_int("pp", 1, kMax));
  p.dp = static_cast<int>(pr.get_int("dp", 1, kMax));
  p.cp = static_cast<int>(pr.opt_int("cp", 1, kMax).value_or(1));
  p.ep = static_cast<int>(pr.opt_int("ep", 1, kMax).value_or(1));
  p.etp = static_cast<int>(pr.opt_int("etp", 1, kMax).value_or(1));
  p.sequence_parallel = pr.opt_bool("sequence_parallel", false);
  p.vpp = static_cast<int>(pr.opt_int("vpp", 1, kMax).value_or(1));
  p.microbatch_group = static_cast<int>(pr.opt_int("microbatch_group_size_per_vp_stage", 1, kMaxSimulatedChunks).value_or(0));
  p.micro_batch_size = static_cast<int>(pr.get_int("micro_batch_size", 1, kMax));
  p.zero_stage = static_cast<int>(pr.opt_int("zero_stage", 0, 3).value_or(0));
  p.distributed_optimizer = pr.opt_bool("distributed_optimizer", false);
  p.cpu_offload_layers = static_cast<int>(pr.opt_int("cpu_offload_layers", 0, kMax).value_or(0));
  if (pr.has("distributed_optimizer_instances")) p.optimizer_instances = static_cast<int>(pr.get_int("distributed_optimizer_instances", 1, kMax));
  if (pr.has("outer_dp_sharding_strategy")) {
    const std::string outer = pr.get_string("outer_dp_sharding_strategy");
    if (outer != "optim" && outer != "no_shard") pr.fail("outer_dp_sharding_strategy", "expected optim or no_shard");
    p.outer_optimizer_sharding = outer == "optim";
  }

  if (r.has("recompute")) {
    JsonReader rc = r.child("recompute");
    rc.reject_unknown_keys({"granularity", "num_layers", "modules"});
    auto g = parse_recompute(rc.get_string("granularity"));
    if (!g) rc.fail("granularity", "expected none, selective or full");
    p.recompute.granularity = *g;
    p.recompute.num_layers = rc.has("num_layers") ? static_cast<int>(rc.get_int("num_layers", 1, kMax)) : -1;
    if (rc.has("modules")) {
      std::string names;
      for (const auto& n : rc.opt_string_list("modules")) names += n + " ";
      const auto modules = recompute_modules_from_string(names);
      if (!modules) rc.fail("modules", "expected a list of core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts");
      p.recompute.modules = *modules;
    }
  }
  if (r.has("activation_offload")) {
    JsonReader off = r.child("activation_offload");
    off.reject_unknown_keys({"modules", "min_tensor_elements"});
    std::string names;
    for (const auto& n : off.opt_string_list("modules")) names += n + " ";
    const auto modules = offload_modules_from_string(names);
    if (!modules)
      off.fail("modules", "expected a non-empty list of attn_norm, qkv_linear, core_attn, attn_proj, mlp_norm, expert_fc1, moe_act, fused_group_mlp");
    p.offload.modules = *modules;
    if (off.has("min_tensor_elements")) p.offload.min_tensor_elements = off.get_int("min_tensor_elements", 0, std::int64_t{1} << 50);
  }
  if (r.has("stages")) {
    const auto& s = r.raw("stages");
    if (!s.is_array()) r.fail("stages", "expected an array of per-stage layer counts");
    std::vector<int> layers;
    if (static_cast<std::int64_t>(s.size()) > p.pp)
      r.fail("stages", std::to_string(s.size()) + " stage layer counts for pp=" + std::to_string(p.pp) + "; expected one per stage");
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (!s[i].is_number_integer() || s[i].get<std::int64_t>() < 1 || s[i].get<std::int64_t>() > kMax)
        throw InputError(where, "/stages/" + std::to_string(i), "expected a positive layer count");
      layers.push_back(s[i].get<int>());
    }
    // Keep only real uneven splits, so an even plan round-trips to an empty stage_layers.
    ParallelPlan even;
    even.pp = p.pp;
    if (static_cast<std::int64_t>(layers.size()) != p.pp)
      r.fail("stages", std::to_string(layers.size()) + " stage layer counts for pp=" + std::to_string(p.pp) + "; expected one per stage");
    if (layers != resolve_stage_layers(even, job.model.num_layers)) p.stage_layers = layers;
  }
  // The layers of each stage's model chunks as written (stage_chunks), kept where they differ from
  // chunk_layers' rule: an explicit layout read from a launch or a record round-trips.
  if (r.has("stage_chunks") && p.vpp > 1) {
    const auto& rows = r.raw("stage_chunks");
    const std::vector<int> stages = resolve_stage_layers(p, job.model.num_layers);
    if (!rows.is_array() || static_cast<std::int64_t>(rows.size()) != p.pp)
      r.fail("stage_chunks", "expected one array of per-chunk layer counts per pipeline stage");
    // Every row's length first: the layout below is as large as the file's own numbers.
    for (int s = 0; s < p.pp; ++s) {
      const auto& row = rows[static_cast<std::size_t>(s)];
      if (!row.is_array() || static_cast<std::int64_t>(row.size()) != p.vpp)
        throw InputError(where, "/stage_chunks/" + std::to_string(s), "expected " + std::to_string(p.vpp) + " per-chunk layer counts (vpp)");
    }
    std::vector<int> layout(static_cast<std::size_t>(p.pp) * static_cast<std::size_t>(p.vpp));
    for (int s = 0; s < p.pp; ++s) {
      const auto& row = rows[static_cast<std::size_t>(s)];
      std::int64_t held = 0;
      for (int c = 0; c < p.vpp; ++c) {
        const auto& n = row[static_cast<std::size_t>(c)];
        if (!n.is_number_integer() || n.get<std::int64_t>() < 0 || n.get<std::int64_t>() > kMax)
          throw InputError(where, "/stage_chunks/" + std::to_string(s) + "/" + std::to_string(c), "expected a layer count >= 0");
        layout[static_cast<std::size_t>(c * p.pp + s)] = n.get<int>();
        held += n.get<int>();
      }
      if (held != stages[static_cast<std::size_t>(s)])
        throw InputError(where, "/stage_chunks/" + std::to_string(s),
                         "the chunks hold " + std::to_string(held) + " layers, the stage " + std::to_string(stages[static_cast<std::size_t>(s)]));
    }
    if (layout != virtual_stage_layers(p, job.model)) p.chunk_layout = std::move(layout);
  }
  if (auto problem = check_plan_input(job)) {
    std::string path = "/parallel/" + problem->field;
    if (problem->field == "gpus") path = "/parallel";
    if (problem->field == "global_batch_size") path = "/training/global_batch_size";
    if (problem->field == "stages") path = "/stages";
    if (problem->field == "recompute_layers") path = "/recompute/num_layers";
    throw InputError(where, path, problem->what);
  }
  // After the bounds check: world_size() multiplies ints.
  if (r.has("num_gpus") && r.get_int("num_gpus", 1, kMaxGpus) != p.world_size())
    r.fail("num_gpus", "does not equal tp*pp*dp*cp = " + std::to_string(p.world_size()));
  if (r.has("calibration")) job.calibration = calibration_from_json(r.raw("calibration"), where, "/calibration");
  return job;
}

}  // namespace strata
