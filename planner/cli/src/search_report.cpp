#include "cli/search_report.h"

#include <cmath>

#include <fmt/format.h>

#include "cli/report.h"
#include "costmodel/predictor.h"
#include "launch/megatron_args.h"

namespace strata {

namespace {

std::string numbers(const Prediction& p) {
  return fmt::format("{:.3f} s/iteration, {:.0f} tokens/s/GPU, MFU {:.1f}%, {:.1f} GiB/GPU", p.iteration_time_s,
                     p.tokens_per_sec_per_gpu, 100 * p.mfu, p.memory_per_gpu_GiB);
}

nlohmann::json plan_brief(const ParallelPlan& p) {
  return {{"tp", p.tp},
          {"pp", p.pp},
          {"dp", p.dp},
          {"cp", p.cp},
          {"ep", p.ep},
          {"etp", p.etp},
          {"sequence_parallel", p.sequence_parallel},
          {"vpp", p.vpp},
          {"micro_batch_size", p.micro_batch_size},
          {"recompute", to_string(p.recompute.granularity)},
          {"recompute_num_layers", p.recompute.num_layers < 0 ? nlohmann::json(nullptr) : nlohmann::json(p.recompute.num_layers)},
          {"distributed_optimizer", p.distributed_optimizer},
          {"offload_modules", offload_module_names(p.offload.modules)},
          {"stage_layers", p.stage_layers}};
}

// A plan the search found besides the winner, with its headline numbers.
nlohmann::json ranked_json(const RankedPlan& x) {
  return {{"plan", plan_brief(x.job.plan)},
          {"summary", plan_summary(x.job.plan)},
          {"iteration_time_s", x.prediction.iteration_time_s},
          {"tokens_per_sec_per_gpu", x.prediction.tokens_per_sec_per_gpu},
          {"mfu", x.prediction.mfu},
          {"memory_per_gpu_GiB", x.prediction.memory_per_gpu_GiB},
          {"bottleneck", x.prediction.bottleneck.kind}};
}

}  // namespace

const char* to_string(SearchAlgorithm a) { return a == SearchAlgorithm::exhaustive ? "exhaustive" : "bottleneck"; }

std::vector<Job> runner_up_jobs(const SearchResult& r) {
  std::vector<Job> jobs;
  for (const RankedPlan& x : r.runners_up) jobs.push_back(x.job);
  return jobs;
}

std::string search_report(const SearchResult& r, const SearchOptions& o, const std::vector<RankingFlip>* flips,
                          const FlagSpeedups* flags) {
  const Job& job = r.best.job;
  const Prediction& pred = r.best.prediction;
  std::string out;
  out += fmt::format("search    {} (seed {}): {} plans predicted, {} single-micro-batch predictions for time lower bounds, {} "
                     "ruled out by memory, {:.2f} s",
                     to_string(o.algorithm), o.seed, r.plans_evaluated, r.bound_predictions, r.plans_ruled_out_by_memory, r.seconds);
  out += o.algorithm == SearchAlgorithm::exhaustive ? fmt::format(", grid of {} plans\n", r.grid_size)
                                                    : fmt::format(", {} start{}\n", r.starts, r.starts == 1 ? "" : "s");
  out += prediction_report(job, pred);
  out += "\nwhy it wins:\n";
  out += fmt::format("  it ends on \"{}\": {}\n", pred.bottleneck.kind, pred.bottleneck.detail());
  if (r.fastest_tied) {
    const Prediction& f = r.fastest_tied->prediction;
    out += fmt::format("  chosen over {} ({:+.1f}% time, {:.1f} GiB/GPU): times within {:g}% are a tie, and this plan\n"
                       "      leaves {:.1f} GiB more memory headroom\n",
                       plan_summary(r.fastest_tied->job.plan), 100 * (f.iteration_time_s / pred.iteration_time_s - 1),
                       f.memory_per_gpu_GiB, 100 * kTimeTie, f.memory_per_gpu_GiB - pred.memory_per_gpu_GiB);
  }
  if (r.with_headroom) {
    const Prediction& h = r.with_headroom->prediction;
    const double reserve = job.cluster.gpu.memory_GiB - kTightMemoryFraction * pred.memory_capacity_GiB;
    out += fmt::format("  it uses {:.0f}% of the usable memory, within the memory model's error (~10%); the fastest plan\n"
                       "      under {:.0f}% (--memory-reserve {:.1f} keeps that margin): {}\n      {} ({:+.1f}% time)\n",
                       100 * pred.memory_per_gpu_GiB / pred.memory_capacity_GiB, 100 * kTightMemoryFraction, std::ceil(reserve * 10) / 10,
                       plan_summary(r.with_headroom->job.plan), numbers(h), 100 * (h.iteration_time_s / pred.iteration_time_s - 1));
  }
  if (r.runners_up.empty()) out += "  no other feasible plan was found\n";
  for (std::size_t i = 0; i < r.runners_up.size(); ++i) {
    const RankedPlan& ru = r.runners_up[i];
    const double slower = 100 * (ru.prediction.iteration_time_s / pred.iteration_time_s - 1);
    out += fmt::format("  runner-up {}: {}\n      {} ({:+.1f}% time), bottleneck {}\n", i + 1, plan_summary(ru.job.plan),
                       numbers(ru.prediction), slower, ru.prediction.bottleneck.kind);
  }
  if (flips && !r.runners_up.empty()) {
    if (flips->empty()) {
      out += fmt::format("  no runner-up gets ahead of it by more than {:g}% (a tie) with any one default figure\n"
                         "      (efficiencies, latencies, overheads) {:g}% higher or lower\n", 100 * kTimeTie, 100 * kSensitivityStep);
    } else {
      out += fmt::format("  the ranking is within the cost model's uncertainty: with one figure {:g}% off, a runner-up wins:\n",
                         100 * kSensitivityStep);
      for (const RankingFlip& f : *flips)
        out += fmt::format("      {} {}: runner-up {} is {:.1f}% faster\n", f.figure, f.direction, f.alternative + 1, 100 * f.faster_by);
      out += "      (measure those figures with `strata profile` / `strata calibrate`, or try both plans)\n";
    }
  }
  if (flags && !flags->empty()) {
    out += "  Megatron-LM flags the runtime leaves off, each added alone to this plan (the search kept your runtime):\n";
    for (const auto& [flag, speedup] : *flags) out += fmt::format("      {}: {:.3f}x faster\n", flag, speedup);
  }
  const LaunchPlan launch = megatron_launch(job, pred.feasible, pred.reason);
  if (launch.megatron_args.empty()) {
    out += "\nNo Megatron-LM launch: " + launch.refused + "\n";
  } else {
    out += "\nMegatron-LM flags:\n  " + join_args(launch.megatron_args) + "\n";
    for (const auto& [k, v] : launch.env) out += "  environment: " + k + "=" + v + "\n";
    for (const auto& n : launch.notes) out += "  note: " + n + "\n";
  }
  return out;
}

FlagSpeedups overlap_flag_speedups(const Job& job, const Prediction& prediction) {
  FlagSpeedups out;
  if (!prediction.feasible || job.runtime.framework != Framework::megatron) return out;
  // Overlaps Megatron-LM runs only when asked (arguments.py defaults them off).
  const ParallelPlan& p = job.plan;
  const RuntimeOptions& rt = job.runtime;
  const bool data_parallel = p.dp * p.cp > 1;
  const bool experts = job.model.moe && p.ep > 1;
  struct Candidate {
    const char* flag;
    bool applies;
    bool RuntimeOptions::*field;
  };
  const Candidate candidates[] = {
      {"--overlap-grad-reduce", data_parallel && !rt.overlap_grad_reduce, &RuntimeOptions::overlap_grad_reduce},
      {"--overlap-param-gather", data_parallel && p.distributed_optimizer && !rt.overlap_param_gather,
       &RuntimeOptions::overlap_param_gather},
      {"--tp-comm-overlap", p.tp > 1 && p.sequence_parallel && !rt.tp_comm_overlap, &RuntimeOptions::tp_comm_overlap},
      {"--overlap-moe-expert-parallel-comm", experts && !rt.moe_a2a_overlap, &RuntimeOptions::moe_a2a_overlap},
      // The dispatcher the launch writer emits for moe_token_dedup (DeepEP must be installed).
      {"--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend deepep", experts && !rt.moe_token_dedup && !rt.moe_allgather_dispatch,
       &RuntimeOptions::moe_token_dedup}};
  for (const Candidate& k : candidates) {
    if (!k.applies) continue;
    Job with = job;
    with.runtime.*k.field = true;
    if (!check_plan(with).empty()) continue;  // Megatron would refuse the flag with this plan
    const Prediction q = predict(with);
    const double speedup = prediction.iteration_time_s / q.iteration_time_s;
    if (q.feasible && speedup > 1 + kTimeTie) out.emplace_back(k.flag, speedup);
  }
  return out;
}

LaunchComparison compare_launch(const std::string& file, const Job& launch, std::vector<std::string> notes) {
  LaunchComparison c{file, launch, predict(launch), {}, std::move(notes)};
  c.flag_speedups = overlap_flag_speedups(launch, c.prediction);
  return c;
}

std::string launch_report(const LaunchComparison& c, const Prediction* best) {
  const Prediction& pred = c.prediction;
  std::string out = fmt::format("\nyour launch ({}): {}\n", c.file, plan_summary(c.job.plan));
  if (!pred.feasible) {
    out += fmt::format("  does not run as given: {}\n", pred.reason);
  } else {
    out += fmt::format("  predicted {:.3f} s per iteration, {:.0f} tokens/s/GPU, {:.1f} GiB per GPU\n", pred.iteration_time_s,
                       pred.tokens_per_sec_per_gpu, pred.memory_per_gpu_GiB);
    if (best) {
      const double ratio = pred.iteration_time_s / best->iteration_time_s;
      if (ratio > 1 + kTimeTie) out += fmt::format("  the plan above is {:.2f}x faster\n", ratio);
      else if (ratio < 1 - kTimeTie)
        out += fmt::format("  your launch is {:.2f}x faster than the plan above: its plan lies outside the space searched\n", 1 / ratio);
      else out += fmt::format("  the plan above matches it (within {:g}%)\n", 100 * kTimeTie);
    }
    for (const auto& [flag, speedup] : c.flag_speedups)
      out += fmt::format("  adding {} to the launch as it is: {:.3f}x faster\n", flag, speedup);
  }
  for (const auto& n : c.notes) out += "note: " + n + "\n";
  return out;
}

nlohmann::json launch_to_json(const LaunchComparison& c, const Prediction& best) {
  const Prediction& pred = c.prediction;
  nlohmann::json j = {{"file", c.file}, {"plan", plan_summary(c.job.plan)}, {"feasible", pred.feasible}, {"notes", c.notes}};
  if (!pred.feasible) {
    j["reason"] = pred.reason;
  } else {
    j["iteration_time_s"] = pred.iteration_time_s;
    j["tokens_per_sec_per_gpu"] = pred.tokens_per_sec_per_gpu;
    j["memory_per_gpu_GiB"] = pred.memory_per_gpu_GiB;
    j["speedup_of_best"] = pred.iteration_time_s / best.iteration_time_s;
    j["flag_speedups"] = nlohmann::json::object();
    for (const auto& [flag, speedup] : c.flag_speedups) j["flag_speedups"][flag] = speedup;
  }
  return j;
}

nlohmann::json search_to_json(const SearchResult& r, const SearchOptions& o, const std::vector<RankingFlip>* flips,
                              const FlagSpeedups* flags) {
  nlohmann::json ru = nlohmann::json::array();
  for (const RankedPlan& x : r.runners_up) ru.push_back(ranked_json(x));
  nlohmann::json j = {{"algorithm", to_string(o.algorithm)},
                      {"plans_evaluated", r.plans_evaluated},
                      {"lower_bound_predictions", r.bound_predictions},
                      {"plans_ruled_out_by_memory", r.plans_ruled_out_by_memory},
                      {"seed", o.seed},
                      {"runtime", o.runtime},
                      {"allow_offload", o.allow_offload},
                      {"runners_up", ru}};
  if (o.algorithm == SearchAlgorithm::exhaustive) j["grid_size"] = r.grid_size;
  else j["starts"] = r.starts;
  if (r.with_headroom) j["with_headroom"] = ranked_json(*r.with_headroom);
  if (r.fastest_tied) j["fastest_tied"] = ranked_json(*r.fastest_tied);
  if (flags) {
    j["flag_speedups"] = nlohmann::json::object();
    for (const auto& [flag, speedup] : *flags) j["flag_speedups"][flag] = speedup;
  }
  if (flips) {
    nlohmann::json a = nlohmann::json::array();
    for (const RankingFlip& f : *flips)
      a.push_back({{"figure", f.figure}, {"change", f.direction}, {"runner_up", f.alternative + 1}, {"faster_by", f.faster_by}});
    j["ranking_flips"] = a;
  }
  return j;
}

std::string infeasible_message(const SearchResult& r) {
  std::string msg = "no feasible plan: " + r.infeasible_reason;
  if (r.gpus_needed_to_fit > 0)
    msg += fmt::format("; {} GPUs of this type would fit a plan (try --gpus {})", r.gpus_needed_to_fit, r.gpus_needed_to_fit);
  else if (r.min_memory_needed_GiB > 0)
    msg += "; no GPU count up to 1024x the request fits: use a GPU with more memory, a shorter sequence or a smaller model";
  return msg;
}

}  // namespace strata
