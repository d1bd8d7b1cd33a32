#include <algorithm>
#include <cmath>
#include <iostream>
#include <stdexcept>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/job_options.h"
#include "cli/report.h"
#include "costmodel/catalog.h"
#include "costmodel/errors.h"
#include "costmodel/file_io.h"
#include "costmodel/json_reader.h"
#include "costmodel/predictor.h"
#include "costmodel/sensitivity.h"
#include "formats/chrome_trace.h"
#include "formats/plan_json.h"

namespace strata {

namespace {

struct PredictArgs {
  JobOptions job;
  std::string plan_file;
  std::string out_file;
  std::string trace_file;
  bool json = false;
  bool sensitivity = false;
};


// A trace holds one event per forward and backward of every micro-batch on every (virtual) stage,
// each a JSON object of some hundred bytes, several times that while it is built: a schedule of
// millions of operations would take gigabytes. Refused before anything is simulated.
constexpr std::int64_t kMaxTraceOps = std::int64_t{1} << 18;
void refuse_oversized_trace(const Job& job) {
  const ParallelPlan& p = job.plan;
  const std::int64_t per_step = std::max<std::int64_t>(1, std::int64_t{p.dp} * p.micro_batch_size);
  const std::int64_t micro_batches = std::max<std::int64_t>(1, job.training.global_batch_size / per_step);
  const std::int64_t ops = micro_batches * std::max(1, p.pp) * std::max(1, p.vpp) * 2;  // each factor is bounded by check_plan_input
  if (ops > kMaxTraceOps)
    throw InputError("command line", "--trace",
                     fmt::format("the schedule has {} forward and backward operations ({} micro-batches x {} pipeline stages x {} "
                                 "chunks x 2); a trace holds at most {}: trace a smaller global batch, or predict without --trace",
                                 ops, micro_batches, p.pp, p.vpp, kMaxTraceOps));
}

// `predict --plan FILE`: the file fixes the model, hardware, batch, runtime and plan. Of the other
// flags, those that only adjust the prediction are applied (a calibration for the plan's GPU, the
// memory reserve, the host overheads); any other would be silently ignored, so it is refused.
void apply_plan_file_overrides(const CLI::App& cmd, const PredictArgs& a, const Catalog& catalog, Job& job) {
  static const std::vector<std::string> kOutputFlags = {"--plan", "--json", "--output", "--sensitivity", "--trace", "--help"};
  for (const CLI::Option* opt : cmd.get_options()) {
    if (opt->count() == 0) continue;
    const std::string name = opt->get_name();
    if (std::find(kOutputFlags.begin(), kOutputFlags.end(), name) != kOutputFlags.end()) continue;
    if (name == "--calibration") {
      CalibrationFile f = load_calibration_file(*a.job.calibration_file, catalog);
      if (!f.gpu.empty() && f.gpu != job.cluster.gpu.name)
        throw InputError(*a.job.calibration_file, "/gpu",
                         "calibrated on " + f.gpu + ", but the plan in " + a.plan_file + " runs on " + job.cluster.gpu.name);
      job.calibration = std::move(f.calibration);
    } else if (name == "--memory-reserve") {
      if (!std::isfinite(a.job.memory_reserve_GiB) || a.job.memory_reserve_GiB < 0 || a.job.memory_reserve_GiB >= job.cluster.gpu.memory_GiB)
        throw InputError("command line", name, "expected 0 <= GiB < the GPU's memory");
      job.runtime.memory_reserve_GiB = a.job.memory_reserve_GiB;
    } else if (name == "--step-overhead") {
      if (!(a.job.step_overhead_s >= 0 && a.job.step_overhead_s <= RuntimeOptions::kMaxStepOverheadS))
        throw InputError("command line", name, "expected 0..3600 seconds");
      job.runtime.step_overhead_s = a.job.step_overhead_s;
    } else if (name != "--moe-forward-host-ms") {  // applied below, over any --calibration
      throw InputError("command line", name,
                       "would be ignored: the plan file " + a.plan_file +
                           " fixes the model, hardware, batch and plan (only --calibration, --memory-reserve, "
                           "--step-overhead and --moe-forward-host-ms adjust it); edit the file, or predict from flags without --plan");
    }
  }
  apply_moe_forward_host(a.job, job);
}

}  // namespace

void register_predict(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("predict", "Predict iteration time, throughput and memory of one parallel plan");
  auto a = std::make_shared<PredictArgs>();
  add_workload_options(*cmd, a->job);
  add_plan_options(*cmd, a->job);
  add_megatron_option(*cmd, a->job);
  cmd->add_option("--plan", a->plan_file, "Predict the plan in this plan JSON (from `strata plan -o`)");
  cmd->add_flag("--json", a->json, "Print the plan JSON with the prediction");
  cmd->add_option("-o,--output", a->out_file, "Also write the plan JSON to this file");
  cmd->add_flag("--sensitivity", a->sensitivity,
                "Also show how the iteration time changes when each default efficiency, latency or overhead is 10% worse");
  cmd->add_option("--trace", a->trace_file, "Write the simulated pipeline schedule as a Chrome/Perfetto trace (JSON) to this file");
  cmd->callback([a, cmd, &ctx] {
    Catalog catalog(Catalog::default_data_dir());
    if (!a->plan_file.empty() && !a->job.megatron_args.empty())
      throw InputError("command line", "--megatron-args", "give either --plan or --megatron-args");
    std::vector<std::string> launch_notes;
    Job job;
    if (a->plan_file.empty()) {
      job = build_job(a->job, catalog, &launch_notes);
    } else {
      job = plan_from_json(load_json_file(a->plan_file), a->plan_file);
      apply_plan_file_overrides(*cmd, *a, catalog, job);
    }
    if (!a->trace_file.empty()) refuse_oversized_trace(job);
    std::vector<PipelineEvent> events;
    Prediction pred = predict(job, a->trace_file.empty() ? nullptr : &events);
    if (!a->trace_file.empty()) {
      if (events.empty())
        fmt::print(stderr, "strata: no schedule to trace ({}); writing an empty trace\n", pred.reason.empty() ? "nothing simulated" : pred.reason);
      write_output_file(a->trace_file, chrome_trace(job, pred, events).dump() + "\n", "--trace");
    }
    nlohmann::json plan = plan_to_json(job, pred);
    if (!a->job.megatron_args.empty()) plan["megatron_launch"] = {{"file", a->job.megatron_args}, {"notes", launch_notes}};
    std::vector<Sensitivity> sensitivity;
    if (a->sensitivity) {
      sensitivity = prediction_sensitivity(job);
      plan["sensitivity"] = sensitivity_to_json(sensitivity);
    }
    // A NaN or inf here is a bug in the cost model, not a property of the input: say so, exit 3.
    if (std::string defect = prediction_defect(pred); !defect.empty())
      throw std::runtime_error("the prediction is not finite (" + defect + ") for " + job.model.name + " on " +
                               job.cluster.name + "; please report this input");
    // File names given by the user end up in the JSON; replace bytes that are not UTF-8.
    const std::string text = plan.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    if (!a->out_file.empty()) write_output_file(a->out_file, text + "\n", "--output");
    if (a->json) fmt::print("{}\n", text);
    else {
      fmt::print("{}{}", prediction_report(job, pred), a->sensitivity ? sensitivity_report(sensitivity) : "");
      for (const auto& n : launch_notes) fmt::print("note: {}\n", n);
    }
    if (!pred.feasible) {
      if (!a->json) fmt::print(stderr, "strata: plan is infeasible: {}\n", pred.reason);
      ctx.exit_code = 2;
    }
  });
}

}  // namespace strata
