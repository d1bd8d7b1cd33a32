#include <fstream>
#include <iostream>
#include <stdexcept>

#include <fmt/format.h>

#include "costmodel/catalog.h"
#include "costmodel/errors.h"
#include "costmodel/json_reader.h"
#include "costmodel/predictor.h"
#include "costmodel/sensitivity.h"
#include "planner/chrome_trace.h"
#include "planner/commands.h"
#include "planner/job_options.h"
#include "planner/plan_json.h"
#include "planner/report.h"

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

void write_file(const std::string& path, const std::string& text, const char* flag) {
  std::ofstream out(path);
  if (!out) throw InputError("command line", flag, "cannot write \"" + path + "\"");
  out << text;
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
  cmd->callback([a, &ctx] {
    Catalog catalog(Catalog::default_data_dir());
    if (!a->plan_file.empty() && !a->job.megatron_args.empty())
      throw InputError("command line", "--megatron-args", "give either --plan or --megatron-args");
    std::vector<std::string> launch_notes;
    Job job = a->plan_file.empty() ? build_job(a->job, catalog, &launch_notes) : plan_from_json(load_json_file(a->plan_file), a->plan_file);
    std::vector<PipelineEvent> events;
    Prediction pred = predict(job, a->trace_file.empty() ? nullptr : &events);
    if (!a->trace_file.empty()) {
      if (events.empty())
        fmt::print(stderr, "strata: no schedule to trace ({}); writing an empty trace\n", pred.reason.empty() ? "nothing simulated" : pred.reason);
      write_file(a->trace_file, chrome_trace(job, pred, events).dump() + "\n", "--trace");
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
    if (!a->out_file.empty()) write_file(a->out_file, text + "\n", "--output");
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
