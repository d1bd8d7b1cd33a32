// strata plan: search for the fastest plan that fits, print it with why it wins and the
// Megatron-LM flags that run it; -o/--json write the plan JSON that `strata predict --plan` reads.
#include <charconv>
#include <cstdint>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/job_options.h"
#include "cli/progress.h"
#include "cli/search_report.h"
#include "costmodel/catalog.h"
#include "costmodel/errors.h"
#include "costmodel/file_io.h"
#include "costmodel/predictor.h"
#include "formats/plan_json.h"
#include "search/searcher.h"
#include "search/threads.h"

namespace strata {

namespace {

constexpr const char* kCmd = "command line";

struct PlanArgs {
  JobOptions job;
  std::string algorithm = "bottleneck";
  std::string seed = "0";
  bool seed_given = false, max_trials_given = false;
  int threads = 0;
  int max_trials = 0;
  bool quiet = false;
  std::string runtime = "megatron";
  bool allow_tp_across_nodes = false;
  bool allow_offload = false;
  std::optional<int> tp, pp, cp, ep, etp, vpp, mbs;
  std::optional<std::string> recompute;
  std::string out_file;
  std::string launch_dir;
  bool json = false;
};

std::optional<int> positive(const std::optional<int>& v, const char* flag) {
  if (v && (*v < 1 || *v > 1000000)) throw InputError(kCmd, flag, "expected a positive integer, found " + std::to_string(*v));
  return v;
}

// Read as text: a numeric option would wrap -1 to 2^64-1 and 2^64 to 0 instead of refusing them.
std::uint64_t parse_seed(const std::string& text) {
  std::uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end)
    throw InputError(kCmd, "--seed", fmt::format("expected a seed 0..{}, found \"{}\"", UINT64_MAX, text));
  return v;
}

// `launched_gpus`: the world size of a --megatron-args launch, used when --gpus is not given.
SearchOptions search_options(const PlanArgs& a, std::optional<int> launched_gpus) {
  SearchOptions o;
  if (!a.job.gpus && !launched_gpus) throw InputError(kCmd, "--gpus", "give the number of GPUs to plan for");
  o.num_gpus = a.job.gpus ? *a.job.gpus : *launched_gpus;
  if (a.algorithm == "bottleneck") o.algorithm = SearchAlgorithm::bottleneck;
  else if (a.algorithm == "exhaustive") o.algorithm = SearchAlgorithm::exhaustive;
  else throw InputError(kCmd, "--search", "expected bottleneck or exhaustive, found \"" + a.algorithm + "\"");
  // The exhaustive search scores the whole grid without random kicks: a seed or a trial budget
  // would be ignored.
  if (o.algorithm == SearchAlgorithm::exhaustive && (a.seed_given || a.max_trials_given))
    throw InputError(kCmd, a.seed_given ? "--seed" : "--max-trials",
                     "applies to the bottleneck search; --search exhaustive scores the whole grid and would ignore it");
  o.seed = parse_seed(a.seed);
  if (a.threads < 0) throw InputError(kCmd, "--threads", "expected 0 (OpenMP's default) or a positive thread count, found " + std::to_string(a.threads));
  if (a.threads > available_cores() && !a.quiet)
    fmt::print(stderr, "note: --threads {} capped at the {} cores this process may use\n", a.threads, available_cores());
  o.threads = a.threads;
  o.max_trials = a.max_trials;
  if (!a.quiet) o.on_progress = print_search_progress;
  o.runtime = a.runtime;
  o.allow_tp_across_nodes = a.allow_tp_across_nodes;
  o.allow_offload = a.allow_offload;
  if (o.allow_offload && o.algorithm == SearchAlgorithm::exhaustive)
    throw InputError(kCmd, "--allow-offload", "applies to the bottleneck search; --search exhaustive scores the uniform grid, which does not offload");
  o.tp = positive(a.tp, "--tp");
  o.pp = positive(a.pp, "--pp");
  o.cp = positive(a.cp, "--cp");
  o.ep = positive(a.ep, "--ep");
  o.etp = positive(a.etp, "--etp");
  o.vpp = positive(a.vpp, "--vpp");
  o.micro_batch_size = positive(a.mbs, "--mbs");
  if (a.recompute) {
    o.recompute = parse_recompute(*a.recompute);
    if (!o.recompute) throw InputError(kCmd, "--recompute", "expected none, selective or full, found \"" + *a.recompute + "\"");
  }
  return o;
}

}  // namespace

void register_plan(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("plan", "Search for the fastest parallel plan that fits and print its Megatron-LM flags");
  auto a = std::make_shared<PlanArgs>();
  add_workload_options(*cmd, a->job);
  add_megatron_option(*cmd, a->job);
  cmd->add_option("--search", a->algorithm, "bottleneck (default: iterative bottleneck alleviation) | exhaustive (the uniform grid)");
  cmd->add_option("--seed", a->seed, "Seed of the search's random kicks (default 0); same seed, same plan");
  cmd->add_option("--threads", a->threads, "Search threads (default: OpenMP's); the result does not depend on it");
  cmd->add_option("--max-trials", a->max_trials, "Bound on the plans the bottleneck search scores (default: 400 per start; fewer than 4 starts share 1600)");
  cmd->add_flag("--quiet", a->quiet, "No progress line on stderr");
  cmd->add_option("--runtime", a->runtime, "megatron (default): only plans stock Megatron-LM runs");
  cmd->add_flag("--allow-tp-across-nodes", a->allow_tp_across_nodes, "Allow tensor parallelism beyond one node's NVLink domain");
  cmd->add_flag("--allow-offload", a->allow_offload,
                "Let the search offload activations to host memory (Megatron-Core --fine-grained-activation-offloading; "
                "the copies' contention with the NICs is not modelled)");
  cmd->add_option("--tp", a->tp, "Fix the tensor-parallel size");
  cmd->add_option("--pp", a->pp, "Fix the pipeline-parallel size");
  cmd->add_option("--cp", a->cp, "Fix the context-parallel size");
  cmd->add_option("--ep", a->ep, "MoE: fix the expert-parallel size");
  cmd->add_option("--etp", a->etp, "MoE: fix the expert-tensor-parallel size (1: experts whole; the search tries 1 and tp)");
  cmd->add_option("--vpp", a->vpp, "Fix the virtual pipeline size (interleaved 1F1B)");
  cmd->add_option("--mbs", a->mbs, "Fix the micro-batch size");
  cmd->add_option("--recompute", a->recompute, "Fix the recompute granularity: none | selective | full");
  cmd->add_flag("--json", a->json, "Print the plan JSON (with a \"search\" object) instead of the report");
  cmd->add_option("-o,--output", a->out_file, "Also write the plan JSON to this file (read it back with strata predict --plan)");
  cmd->add_option("--emit-launch", a->launch_dir,
                  "Write DIR/launch.sh: torchrun, environment and Megatron-LM flags of the plan (data and tokenizer left as variables)");
  cmd->callback([a, cmd, &ctx] {
    a->seed_given = cmd->count("--seed") > 0;
    a->max_trials_given = cmd->count("--max-trials") > 0;
    Catalog catalog(Catalog::default_data_dir());
    // With --megatron-args the workload is the launch's, and its own plan is the baseline to beat.
    std::optional<Job> launch;
    std::vector<std::string> launch_notes;
    bool launch_plan_ok = false;
    if (!a->job.megatron_args.empty()) launch = build_launch_workload(a->job, catalog, launch_notes, launch_plan_ok);
    SearchOptions options = search_options(*a, launch ? std::optional<int>(launch->plan.world_size()) : std::nullopt);
    // A launch that offloads activations itself has accepted what offloading asks of the hosts.
    if (launch && launch->plan.offload.modules != 0 && options.algorithm == SearchAlgorithm::bottleneck && !options.allow_offload) {
      options.allow_offload = true;
      if (!a->quiet) fmt::print(stderr, "note: the launch offloads activations (--fine-grained-activation-offloading): the search may too\n");
    }
    const Job workload = launch ? *launch : build_workload(a->job, catalog);
    if (!workload.model.moe)
      for (const auto& [flag, v] : {std::pair{"--ep", options.ep}, std::pair{"--etp", options.etp}})
        if (v && *v > 1) throw InputError(kCmd, flag, "applies to MoE models; " + workload.model.name + " has no experts");
    const AnalyticalCostModel model;
    const SearchResult result = search_plans(workload, options, model);
    std::optional<LaunchComparison> current;
    if (launch && launch_plan_ok) current = compare_launch(a->job.megatron_args, *launch, launch_notes);
    if (launch && !launch_plan_ok)
      for (const auto& n : launch_notes) fmt::print(stderr, "note: {}\n", n);
    if (!result.found) {
      fmt::print(stderr, "strata: {}\n", infeasible_message(result));
      // Worth saying only where the leanest plan's fullest stage holds more activations than it lacks.
      const double lacking = result.min_memory_needed_GiB - (workload.cluster.gpu.memory_GiB - workload.runtime.memory_reserve_GiB);
      // (The memory pre-check may have ruled the leanest plan out without a full prediction.)
      const Prediction lean = result.best.prediction.stages.empty() ? model.predict(result.best.job) : result.best.prediction;
      const MemoryBreakdown* fullest = nullptr;
      for (const StagePrediction& s : lean.stages)
        if (!fullest || s.memory.total_GiB > fullest->total_GiB) fullest = &s.memory;
      if (!options.allow_offload && workload.runtime.framework == Framework::megatron && result.min_memory_needed_GiB > 0 &&
          fullest && fullest->activations_GiB > lacking)
        fmt::print(stderr, "note: --allow-offload lets the search move activations to host memory (Megatron-Core's fine-grained "
                           "activation offloading)\n");
      if (current) fmt::print(stderr, "{}", launch_report(*current, nullptr));
      ctx.exit_code = 2;
      return;
    }
    // Would the winner still win if one default figure were 10% off? (costmodel/sensitivity)
    const std::vector<RankingFlip> flips = ranking_sensitivity(result.best.job, runner_up_jobs(result), kTimeTie);
    nlohmann::json plan = plan_to_json(result.best.job, result.best.prediction);
    const FlagSpeedups flags = overlap_flag_speedups(result.best.job, result.best.prediction);
    plan["search"] = search_to_json(result, options, &flips, &flags);
    if (current) plan["search"]["megatron_launch"] = launch_to_json(*current, result.best.prediction);
    else if (launch) plan["search"]["megatron_launch"] = {{"file", a->job.megatron_args}, {"feasible", false}, {"notes", launch_notes}};
    if (!a->out_file.empty()) {
      write_output_file(a->out_file, plan.dump(2) + "\n", "--output");
    }
    if (!a->launch_dir.empty()) {
      const LaunchPlan l = megatron_launch(result.best.job, result.best.prediction.feasible, result.best.prediction.reason);
      if (l.megatron_args.empty()) throw InputError(kCmd, "--emit-launch", "no Megatron-LM launch for this plan: " + l.refused);
      write_launch_script(a->launch_dir, launch_script(result.best.job, l));
      if (!a->json) fmt::print(stderr, "wrote {}/launch.sh\n", a->launch_dir);
    }
    if (a->json) {
      fmt::print("{}\n", plan.dump(2));
      // Timings are not part of the JSON, which is byte-identical across runs and thread counts.
      if (!a->quiet) fmt::print(stderr, "strata: search took {:.2f} s\n", result.seconds);
    }
    else {
      fmt::print("{}", search_report(result, options, &flips, &flags));
      if (current) fmt::print("{}", launch_report(*current, &result.best.prediction));
    }
  });
}

}  // namespace strata
