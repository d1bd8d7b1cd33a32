#include "search/searcher.h"

#include <algorithm>
#include <chrono>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "costmodel/errors.h"
#include "search/bottleneck_search.h"
#include "search/evaluator.h"
#include "search/exhaustive_search.h"
#include "search/fit_analysis.h"
#include "search/threads.h"

namespace strata {

namespace {

constexpr int kRunnersUp = 3;

// Plans that differ only in stage split or recomputed-layer count are variations of one plan; a
// runner-up must differ in a parallel degree, the micro-batch, interleaving, SP or the recompute
// granularity to be worth showing.
auto signature(const ParallelPlan& p) {
  return std::make_tuple(p.tp, p.pp, p.dp, p.cp, p.ep, p.vpp, p.micro_batch_size, p.sequence_parallel, p.recompute.granularity);
}

RankedPlan ranked(const Evaluator& ev, const Evaluation& e) {
  RankedPlan r;
  r.job = ev.job_for(e.plan);
  if (e.prediction) r.prediction = *e.prediction;
  return r;
}

void validate(const SearchOptions& o) {
  if (o.num_gpus < 1) throw InputError("command line", "--gpus", "give the number of GPUs to plan for (at least 1)");
  if (o.runtime != "megatron") throw InputError("command line", "--runtime", "expected megatron, found \"" + o.runtime + "\"");
  if (o.threads < 0) throw InputError("command line", "--threads", "expected 0 (OpenMP's default) or a positive thread count");
  if (o.max_trials < 0) throw InputError("command line", "--max-trials", "expected 0 (the default budget) or a positive number");
  check_openmp_can_start();
}

SearchResult search_once(const Job& workload, const SearchOptions& options, const CostModel& model) {
  const auto t0 = std::chrono::steady_clock::now();
  Evaluator ev(workload, options, model);
  SearchResult r;
  EvalPtr best;
  if (options.algorithm == SearchAlgorithm::exhaustive) {
    ExhaustiveOutcome out = exhaustive_search(ev);
    best = out.best;
    r.grid_size = out.grid_size;
  } else {
    BottleneckOutcome out = bottleneck_search(ev);
    best = out.best;
    r.starts = out.starts;
  }
  if (!best || !best->feasible) {
    // Nothing fits: find the leanest plan for the message, and how many GPUs would fit one.
    EvalPtr lean = leanest_plan(ev);
    if (lean && (!best || lean->memory_GiB < best->memory_GiB)) best = lean;
  }
  ev.finish_progress();
  r.plans_evaluated = ev.predictions();
  r.bound_predictions = ev.bound_predictions();
  r.plans_ruled_out_by_memory = ev.pruned();

  if (best && best->feasible) {
    r.found = true;
    std::vector<EvalPtr> all = ev.all();
    std::sort(all.begin(), all.end(), [](const EvalPtr& a, const EvalPtr& b) { return better(*a, *b); });
    // Fastest first: the tied plans are a prefix; the first with the least memory wins, but one
    // that keeps its activations on the GPU beats one that offloads them (--allow-offload): the
    // copies' cost rests on a host-link model no measurement here checked, and they take host
    // memory and PCIe from the NICs, so offloading must buy time to be chosen.
    const EvalPtr fastest = best;
    auto offloads = [](const ParallelPlan& p) { return p.offload.modules != 0 || p.cpu_offload_layers > 0; };
    auto preferred = [&](const Evaluation& a, const Evaluation& b) {
      if (offloads(a.plan) != offloads(b.plan)) return !offloads(a.plan);
      return a.memory_GiB < b.memory_GiB;
    };
    for (const EvalPtr& e : all) {
      if (!e->feasible || e->time_s > fastest->time_s * (1 + kTimeTie)) break;
      if (e->prediction && preferred(*e, *best)) best = e;
    }
    if (best != fastest) r.fastest_tied = ranked(ev, *fastest);
    r.best = ranked(ev, *best);
    std::vector<decltype(signature(best->plan))> shown{signature(best->plan)};
    for (const EvalPtr& e : all) {
      if (static_cast<int>(r.runners_up.size()) >= kRunnersUp || !e->feasible) break;
      if (std::find(shown.begin(), shown.end(), signature(e->plan)) != shown.end()) continue;
      shown.push_back(signature(e->plan));
      r.runners_up.push_back(ranked(ev, *e));
    }
  } else {
    const double capacity = workload.cluster.gpu.memory_GiB - workload.runtime.memory_reserve_GiB;
    if (!best) {
      // Say which rule the simplest plan honouring the constraints breaks.
      ParallelPlan p = start_plan(options, workload.model, options.tp.value_or(1), options.pp.value_or(1), options.cp.value_or(1));
      p.recompute.granularity = options.recompute.value_or(RecomputeGranularity::none);
      r.infeasible_reason = fmt::format("no legal parallel plan exists for {} GPUs with these constraints (e.g. {})",
                                        options.num_gpus, ev.illegal_reason(p));
    } else {
      r.min_memory_needed_GiB = best->memory_GiB;
      const ParallelPlan& p = best->plan;
      r.best = ranked(ev, *best);
      r.infeasible_reason = fmt::format(
          "no plan fits in the {:.1f} GiB per GPU available on {}: the leanest (tp={} pp={} dp={} cp={}, micro-batch {}, "
          "{} recompute{}) needs {:.1f} GiB per GPU",
          capacity, workload.cluster.gpu.name, p.tp, p.pp, p.dp, p.cp, p.micro_batch_size, to_string(p.recompute.granularity),
          p.offload.modules ? fmt::format(", offloading {}", fmt::join(offload_module_names(p.offload.modules), " ")) : "",
          best->memory_GiB);
      r.gpus_needed_to_fit = gpus_needed_to_fit(workload, options, model);
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace

SearchResult search_plans(const Job& workload, const SearchOptions& options, const CostModel& model) {
  validate(options);
  if (options.runtime == "megatron" && workload.runtime.framework != Framework::megatron)
    throw InputError("command line", "--framework",
                     std::string("strata plan searches Megatron-LM plans (--runtime megatron) and the workload says ") +
                         to_string(workload.runtime.framework) + "; drop --framework, or predict a given " +
                         to_string(workload.runtime.framework) + " plan with strata predict --framework");
  SearchResult r = search_once(workload, options, model);
  const double usable = workload.cluster.gpu.memory_GiB - workload.runtime.memory_reserve_GiB;
  if (r.found && r.best.prediction.memory_per_gpu_GiB > kTightMemoryFraction * usable) {
    // A second search that keeps the tight margin free, so the report can offer the choice.
    Job roomier = workload;
    roomier.runtime.memory_reserve_GiB = workload.cluster.gpu.memory_GiB - kTightMemoryFraction * usable;
    SearchOptions quiet = options;
    quiet.on_progress = nullptr;
    SearchResult second = search_once(roomier, quiet, model);
    if (second.found) {
      // Predicted again against the memory the user gave, as the other plans are.
      Job job = second.best.job;
      job.runtime.memory_reserve_GiB = workload.runtime.memory_reserve_GiB;
      r.with_headroom = RankedPlan{job, model.predict(job)};
      r.plans_evaluated += 1;
    }
    r.plans_evaluated += second.plans_evaluated;
    r.bound_predictions += second.bound_predictions;
    r.plans_ruled_out_by_memory += second.plans_ruled_out_by_memory;
    r.seconds += second.seconds;
  }
  return r;
}

}  // namespace strata
