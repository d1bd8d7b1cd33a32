#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "costmodel/calibration.h"
#include "costmodel/catalog.h"
#include "costmodel/json_reader.h"
#include "costmodel/memory_model.h"
#include "costmodel/prediction.h"
#include "costmodel/predictor.h"
#include "costmodel/errors.h"
#include "cli/commands.h"
#include "cli/job_options.h"
#include "formats/plan_json.h"
#include "cli/report.h"
#include "formats/validation_runs.h"

namespace strata {

namespace {

const char* memory_measure_text(MemoryMeasure m) {
  switch (m) {
    case MemoryMeasure::device: return "the device's use, nvidia-smi";
    case MemoryMeasure::reserved: return "torch.cuda.max_memory_reserved";
    case MemoryMeasure::allocated: return "torch.cuda.max_memory_allocated";
  }
  return "?";
}

// How the record was read, beyond the plan line of the report: the settings its free text decides.
std::string record_reading(const Job& job) {
  const RuntimeOptions& rt = job.runtime;
  const char* kernel = resolved_attention_kernel(rt, job.cluster.gpu) == AttentionKernel::cudnn ? " (cuDNN's kernel)" : " (FlashAttention-2)";
  std::string out = fmt::format("framework {}, flash attention {}{}, overlap grad reduce {}, overlap param gather {}, tp comm overlap {}\n",
                                to_string(rt.framework), rt.flash_attention, rt.flash_attention ? kernel : "", rt.overlap_grad_reduce,
                                rt.overlap_param_gather, rt.tp_comm_overlap);
  out += fmt::format("read as: {}", to_string(job.training.precision));
  if (job.training.precision == Precision::fp8)
    out += fmt::format(" ({} recipe, fp8 parameters {}, fp8 attention {}, bf16 first/last layers {}/{})", to_string(job.training.recipe),
                       rt.fp8_param_gather, rt.fp8_attention, rt.bf16_first_layers, rt.bf16_last_layers);
  out += fmt::format(", {} gradients", rt.grad_reduce_in_bf16 ? "16-bit" : "fp32");
  out += fmt::format(", {} cross entropy", to_string(resolved_cross_entropy(rt)));
  if (job.plan.recompute.granularity == RecomputeGranularity::selective)
    out += fmt::format(", selective recompute of {}", fmt::join(recompute_module_names(job.plan.recompute.modules), ","));
  if (job.plan.recompute.granularity == RecomputeGranularity::full && job.plan.recompute.num_layers >= 0)
    out += fmt::format(", full recompute of {} layers per stage", job.plan.recompute.num_layers);
  if (job.plan.cp > 1) out += fmt::format(", cp comm {}", to_string(rt.cp_comm_type));
  if (job.model.moe)
    out += fmt::format(", MoE load imbalance {:g}, capacity factor {:g}{}, {} dispatcher, all-to-all overlap {}, grouped GEMM {}",
                       rt.moe_load_imbalance, rt.moe_capacity_factor, rt.moe_pad_to_capacity ? " (padded)" : "",
                       rt.moe_allgather_dispatch ? "allgather" : rt.moe_token_dedup ? "DeepEP/HybridEP" : "all-to-all",
                       rt.moe_a2a_overlap, rt.moe_grouped_gemm);
  out += fmt::format(", CUDA modules loaded {}\n", rt.lazy_module_loading ? "lazily" : "at start-up");
  return out;
}

struct ValidateArgs {
  std::string runs_file;
  bool json = false;
  std::string explain;
  std::string calibration;
  std::vector<std::string> only;
};

// Applies a calibration file to the runs on its GPU (every run when the file names none) and
// returns the ids of the runs it was fitted to (`strata calibrate --steps` lists them), which are
// shown but left out of the MAPE: a fit says nothing about accuracy on its own data.
std::set<std::string> apply_calibration(std::vector<ValidationRun>& runs, const std::string& file, const Catalog& catalog) {
  const CalibrationFile f = load_calibration_file(file, catalog);
  const nlohmann::json& j = f.json;
  const Calibration& cal = f.calibration;
  const std::string& gpu = f.gpu;
  int applied = 0;
  for (auto& run : runs)
    if (run.job && (gpu.empty() || run.job->cluster.gpu.name == gpu)) {
      run.job->calibration = cal;
      applied += 1;
    }
  std::set<std::string> fitted;
  if (j.contains("fit") && j["fit"].is_object() && j["fit"].contains("runs") && j["fit"]["runs"].is_array())
    for (const auto& r : j["fit"]["runs"])
      if (r.is_object() && r.contains("id") && r["id"].is_string()) fitted.insert(r["id"].get<std::string>());
  fmt::print(stderr, "calibration {} ({}) applied to {} of {} runs{}\n", file, cal.source, applied, runs.size(),
             gpu.empty() ? "" : " (those on " + gpu + ")");
  return fitted;
}

double pct_error(double predicted, double measured) { return 100.0 * (predicted - measured) / measured; }

}  // namespace

void register_validate(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("validate", "Predict every run of a published-runs file and compare with the measurements");
  auto a = std::make_shared<ValidateArgs>();
  cmd->add_option("--runs", a->runs_file, "Runs file in the format of shared/validation/public_runs.json")->required();
  cmd->add_flag("--json", a->json,
                "One JSON object per run: id, iteration_time_s, tokens_per_sec_per_gpu, memory_per_gpu_GiB, error; and "
                "the full prediction (stages, breakdown, notes) and the calibration of each run predicted");
  cmd->add_option("--explain", a->explain, "Print the full prediction report of the run with this id");
  cmd->add_option("--calibration", a->calibration,
                  "Calibration JSON (strata calibrate) for the runs on its GPU; the runs it was fitted to are left out of the MAPE");
  cmd->add_option("--only", a->only, "Only the runs whose id or source_group contains this text (repeatable)");
  cmd->callback([a, &ctx] {
    if (!a->explain.empty() && a->json)
      throw InputError("command line", "--json", "--explain prints one run's report as text; --json would be ignored");
    Catalog catalog(Catalog::default_data_dir());
    auto runs = select_runs(load_validation_runs(load_json_file(a->runs_file), a->runs_file, catalog), a->only);
    // An empty selection would print an empty table and exit 0: a typo in --only must not pass as a result.
    if (!a->only.empty() && runs.empty()) {
      std::string wanted;
      for (const auto& o : a->only) wanted += (wanted.empty() ? "\"" : ", \"") + o + "\"";
      throw InputError("command line", "--only", "no run of " + a->runs_file + " has an id or source_group containing " + wanted);
    }
    const std::set<std::string> fitted = a->calibration.empty() ? std::set<std::string>{} : apply_calibration(runs, a->calibration, catalog);
    // Absolute and signed percentage errors: MAPE, and the bias (+: predicted too fast or too big).
    struct Acc {
      double sum = 0, signed_sum = 0;
      int n = 0;
      void add(double e) {
        sum += std::fabs(e);
        signed_sum += e;
        n += 1;
      }
    };
    std::map<std::string, Acc> by_group, trusted_by_group;  // trusted: without the runs whose record doubts its throughput
    int internal_errors = 0;
    Acc all, trusted, mem_all;
    if (!a->json && a->explain.empty())
      fmt::print("{:<62} {:>9} {:>9} {:>7}  {:>6} {:>6} {:>6}  {}\n", "run", "meas tok/s", "pred", "err%", "memGiB", "pred", "err%", "plan");
    for (auto& run : runs) {
      if (!a->explain.empty()) {
        if (run.id != a->explain) continue;
        if (!run.job) throw InputError(a->runs_file, run.id, run.error);
        Prediction p = predict_validation_run(run);
        if (std::string defect = prediction_defect(p); !defect.empty())
          throw std::runtime_error("run " + run.id + ": the prediction is not finite (" + defect + ")");
        fmt::print("{}", prediction_report(*run.job, p));
        for (const auto& as : run.assumptions) fmt::print("assumption: {}\n", as);
        fmt::print("{}", record_reading(*run.job));
        if (run.measured_tokens_per_sec_per_gpu) fmt::print("measured tokens/s/GPU {:.0f}\n", *run.measured_tokens_per_sec_per_gpu);
        if (run.measured_memory_GiB)
          fmt::print("measured memory {:.1f} GiB ({}; predicted in that view {:.1f} GiB)\n", *run.measured_memory_GiB,
                     memory_measure_text(run.memory_measure), peak_measured_as_GiB(p, run.memory_measure));
        ctx.exit_code = 0;
        return;
      }
      nlohmann::json out = {{"id", run.id}, {"iteration_time_s", nullptr}, {"tokens_per_sec_per_gpu", nullptr},
                            {"memory_per_gpu_GiB", nullptr}, {"error", nullptr}};
      if (!run.job) {
        out["error"] = run.error;
        if (a->json) fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        else fmt::print("{:<62} cannot predict: {}\n", run.id, run.error);
        continue;
      }
      Prediction p = predict_validation_run(run);
      if (std::string defect = prediction_defect(p); !defect.empty()) {
        // A bug in the cost model, not a property of the record: report it for this run, exit 3.
        out["error"] = "internal error: the prediction is not finite (" + defect + ")";
        fmt::print(stderr, "strata: internal error: run {}: the prediction is not finite ({})\n", run.id, defect);
        if (a->json) fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        internal_errors += 1;
        continue;
      }
      if (p.iteration_time_s <= 0) {
        out["error"] = p.reason;
        if (a->json) fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        else fmt::print("{:<62} cannot predict: {}\n", run.id, p.reason);
        continue;
      }
      out["iteration_time_s"] = p.iteration_time_s;
      out["tokens_per_sec_per_gpu"] = p.tokens_per_sec_per_gpu;
      out["memory_per_gpu_GiB"] = p.memory_per_gpu_GiB;
      if (run.measured_memory_GiB) {
        // The prediction as the tool that measured the run counts memory (memory_model MemoryMeasure).
        out["memory_measured_as"] = to_string(run.memory_measure);
        out["memory_comparable_GiB"] = peak_measured_as_GiB(p, run.memory_measure);
      }
      out["feasible"] = p.feasible;
      out["assumptions"] = run.assumptions;  // how fields the record leaves out were completed
      if (fitted.count(run.id) > 0) out["calibration_fit_run"] = true;  // the calibration was fitted to this run
      if (!run.throughput_doubt.empty()) out["throughput_doubt"] = run.throughput_doubt;
      if (!p.feasible) out["infeasible_reason"] = p.reason;
      // The whole prediction as the plan file carries it (stages with their forward and backward
      // times per micro-batch, the breakdown, the notes), for analyses beyond the summary.
      out["prediction"] = prediction_to_json(p);
      out["calibration"] = calibration_to_json(run.job->calibration);  // the coefficients this run was predicted with
      if (a->json) {
        fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        continue;
      }
      std::string meas = "-", err = "-", mmeas = "-", merr = "-";
      const bool fitted_run = fitted.count(run.id) > 0;
      if (run.measured_tokens_per_sec_per_gpu && fitted_run) {
        meas = fmt::format("{:.0f}", *run.measured_tokens_per_sec_per_gpu);
        err = "fit";
      } else if (run.measured_tokens_per_sec_per_gpu) {
        double e = pct_error(p.tokens_per_sec_per_gpu, *run.measured_tokens_per_sec_per_gpu);
        meas = fmt::format("{:.0f}", *run.measured_tokens_per_sec_per_gpu);
        err = fmt::format("{:+.1f}", e);
        by_group[run.source_group].add(e);
        all.add(e);
        if (run.throughput_doubt.empty()) {
          trusted_by_group[run.source_group].add(e);
          trusted.add(e);
        }
      }
      double pred_memory = p.memory_per_gpu_GiB;
      if (run.measured_memory_GiB) {
        pred_memory = peak_measured_as_GiB(p, run.memory_measure);
        double e = pct_error(pred_memory, *run.measured_memory_GiB);
        mmeas = fmt::format("{:.0f}", *run.measured_memory_GiB);
        merr = fmt::format("{:+.1f}", e);
        mem_all.add(e);
      }
      const auto& pl = run.job->plan;
      fmt::print("{:<62} {:>9} {:>9.0f} {:>7}  {:>6} {:>6.1f} {:>6}  tp{} pp{} dp{} mbs{}{}\n", run.id.substr(0, 62), meas,
                 p.tokens_per_sec_per_gpu, err, mmeas, pred_memory, merr, pl.tp, pl.pp, pl.dp, pl.micro_batch_size,
                 p.feasible ? "" : " (predicted OOM)");
    }
    if (!a->explain.empty()) throw InputError(a->runs_file, "--explain", "no run with id \"" + a->explain + "\"");
    if (!a->json && all.n > 0) {
      fmt::print("\nMAPE of tokens/s/GPU by source group (bias: mean signed error, + when predicted faster):\n");
      if (!fitted.empty())
        fmt::print("  (the {} run(s) the calibration was fitted to, marked \"fit\", are not counted)\n", fitted.size());
      auto line = [](const std::string& g, const Acc& acc) {
        fmt::print("  {:<40} {:6.1f}%  bias {:+6.1f}%  ({} runs)\n", g, acc.sum / acc.n, acc.signed_sum / acc.n, acc.n);
      };
      for (const auto& [g, acc] : by_group) line(g, acc);
      line("overall", all);
      // Runs whose record marks its own measured throughput uncertain (uncertain_fields) stay in the
      // MAPE above; the same figures without them, for the groups that have such runs.
      if (trusted.n < all.n) {
        fmt::print("without the {} run(s) whose record marks its measured throughput uncertain (uncertain_fields):\n", all.n - trusted.n);
        for (const auto& [g, acc] : trusted_by_group)
          if (acc.n < by_group.at(g).n) line(g, acc);
        for (const auto& [g, acc] : by_group)
          if (trusted_by_group.count(g) == 0) fmt::print("  {:<40} every run marked\n", g);
        if (trusted.n > 0) line("overall", trusted);
      }
      if (mem_all.n > 0)
        fmt::print("MAPE of memory per GPU: {:.1f}%, bias {:+.1f}% ({} runs)\n", mem_all.sum / mem_all.n, mem_all.signed_sum / mem_all.n,
                   mem_all.n);
    }
    ctx.exit_code = internal_errors > 0 ? 3 : 0;
  });
}

}  // namespace strata
