// strata calibrate: fit the kernel model's coefficients to CUPTI profiles (SEER classes, Eigen
// least squares), or one kernel-throughput factor (or the MoE host time) to measured training
// steps, and write a calibration JSON that predict/plan/whatif/validate read.

#include <algorithm>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/step_calibration.h"
#include "costmodel/catalog.h"
#include "costmodel/errors.h"
#include "costmodel/file_io.h"
#include "costmodel/json_reader.h"
#include "formats/validation_runs.h"
#include "profiler/calibrate.h"
#include "profiler/classify.h"
#include "profiler/layer_steps.h"
#include "profiler/profile_db.h"

namespace strata {

namespace {

struct CalibrateArgs {
  std::vector<std::string> profiles;
  std::string steps;
  std::string fit = "throughput";  // with --steps: throughput | moe-host
  std::vector<std::string> only;
  std::string out;
  std::string gpu;
  std::string layers;
  bool json = false;
  bool cross_validate = false;
};

// The catalog GPU of a profiled device: --gpu, else the driver's name ("NVIDIA H100 80GB HBM3"),
// else that name without the vendor prefix.
GpuSpec gpu_for(const Catalog& catalog, const std::string& flag_gpu, const profiler::DeviceInfo& dev, const std::string& where) {
  if (!flag_gpu.empty()) return catalog.gpu(flag_gpu);
  std::vector<std::string> tries{dev.name};
  for (const char* prefix : {"NVIDIA ", "Nvidia ", "nvidia "})
    if (dev.name.starts_with(prefix)) tries.push_back(dev.name.substr(std::string(prefix).size()));
  for (const auto& t : tries) {
    try {
      return catalog.gpu(t);
    } catch (const InputError&) {
    }
  }
  throw InputError(where, "/devices/0/name",
                   "the device \"" + dev.name + "\" matches no GPU in configs/gpus; name it with --gpu (see `strata list gpus`)");
}

void write_calibration(const nlohmann::json& j, const std::string& out) {
  // The file must read back exactly as predict/plan/validate will read it.
  (void)calibration_from_json(j, out.empty() ? "calibration" : out);
  if (out.empty()) return;
  write_output_file(out, j.dump(2) + "\n", "--output");
}

void calibrate_from_steps(const CalibrateArgs& a) {
  Catalog catalog(Catalog::default_data_dir());
  auto runs = select_runs(load_validation_runs(load_json_file(a.steps), a.steps, catalog), a.only);
  // Dropless MoE runs whose dispatcher synchronises the host each layer: their missing time may be
  // the host's, which the host-time fit models and a throughput factor only averages.
  const bool syncing_moe = std::any_of(runs.begin(), runs.end(), [](const ValidationRun& r) {
    return r.job && r.job->model.num_moe_layers() > 0 && moe_dispatcher_syncs_host(r.job->runtime);
  });
  profiler::StepFit fit = fit_step_times(std::move(runs), a.steps,
                                         a.fit == "moe-host" ? profiler::StepFitTarget::moe_host : profiler::StepFitTarget::throughput);
  nlohmann::json j = profiler::step_fit_to_json(fit, a.steps);
  write_calibration(j, a.out);
  if (a.json) fmt::print("{}\n", j.dump(2));
  else {
    fmt::print("{}", profiler::step_fit_report(fit));
    if (syncing_moe && fit.target == profiler::StepFitTarget::throughput)
      fmt::print("  note: MoE runs whose dispatcher synchronises the host each layer: if they ran at micro-batch 1, the time\n"
                 "        missing may be the host's (README, \"The host time of a MoE layer\"); --fit moe-host fits that instead,\n"
                 "        and carries to the same model's other configurations better than one throughput factor\n");
    if (!a.out.empty()) fmt::print("\nwrote {}\n", a.out);
  }
}

}  // namespace

void register_calibrate(CLI::App& app, CommandContext& ctx) {
  auto* cmd = app.add_subcommand("calibrate", "Fit the kernel model to CUPTI profiles or to measured step times and write a calibration JSON");
  auto a = std::make_shared<CalibrateArgs>();
  auto* profile = cmd->add_option("--profile", a->profiles, "Profile JSON from `strata profile` (repeat to merge several)");
  auto* steps_opt = cmd->add_option("--steps", a->steps,
                                "Measured training steps of your own stack, in the runs format of `strata validate`: fits one "
                                "kernel-throughput factor to their iteration times");
  profile->excludes(steps_opt);
  cmd->add_option("--only", a->only, "With --steps: use only the runs whose id or source_group contains this text (repeatable)")
      ->needs(steps_opt);
  cmd->add_option("--fit", a->fit,
                  "With --steps: what to fit, throughput (one kernel-throughput factor, default) or moe-host (the host time "
                  "of a MoE layer's forward, host.moe_forward_s: measure it on runs at micro-batch 1)")
      ->check(CLI::IsMember({"throughput", "moe-host"}))
      ->needs(steps_opt);
  cmd->add_option("-o,--output", a->out, "Write the calibration here (configs/calibration/<gpu id>.json is used automatically)");
  cmd->add_option("--gpu", a->gpu, "Catalog GPU the profile was measured on (default: from the profile's device name)");
  cmd->add_option("--layers", a->layers,
                  "Layer-step measurements (scripts/measure_layer_step.py) to compare with the kernel model before/after");
  cmd->add_flag("--json", a->json, "Print the calibration JSON instead of the report");
  cmd->add_flag("--cross-validate", a->cross_validate,
                "With --profile: report each kernel class's error on kernels held out of the fit, one model's shapes at a "
                "time (with --json: {\"classes\": {class: {n, median_pct, p90_pct}}}); writes no calibration")
      ->needs(profile)
      ->excludes(cmd->get_option("--output"));
  cmd->callback([a, &ctx] {
    if (!a->steps.empty()) {
      if (!a->layers.empty() || !a->gpu.empty())
        throw InputError("command line", !a->layers.empty() ? "--layers" : "--gpu", "applies to --profile, not to --steps");
      calibrate_from_steps(*a);
      ctx.exit_code = 0;
      return;
    }
    if (a->profiles.empty()) throw InputError("command line", "--profile", "expected --profile FILE (CUPTI profile) or --steps FILE (measured step times)");
    Catalog catalog(Catalog::default_data_dir());
    std::vector<profiler::Sample> samples;
    std::vector<profiler::CollectiveSample> collectives;
    std::optional<GpuSpec> gpu;
    std::string measured;
    for (const auto& path : a->profiles) {
      profiler::ProfileDb p = profiler::load_profile(path);
      if (p.devices.empty()) throw InputError(path, "/devices", "expected at least one device");
      GpuSpec g = gpu_for(catalog, a->gpu, p.devices.front(), path);
      if (gpu && g.name != gpu->name)
        throw InputError(path, "/devices/0/name", "measured on " + g.name + ", but the other profiles on " + gpu->name + "; calibrate one GPU at a time");
      gpu = g;
      auto s = profiler::build_samples(p, g, p.devices.front());
      samples.insert(samples.end(), s.begin(), s.end());
      auto c = profiler::build_collective_samples(p);
      collectives.insert(collectives.end(), c.begin(), c.end());
      measured += fmt::format("{}{} ({}, {} records)", measured.empty() ? "" : "; ", path, p.measured_at, p.records.size());
    }
    if (samples.empty())
      throw InputError(a->profiles.front(), "/records",
                       "no kernel records labelled with a gemm, attention or elementwise op; calibration needs a profile from "
                       "`strata profile` (a `strata trace` of an arbitrary program has no op labels)");
    // "Before" is what predict uses for this GPU without a calibration: its architecture's defaults,
    // which also stand for the coefficients the profile does not constrain.
    const Calibration base = default_calibration(*gpu);
    if (a->cross_validate) {
      if (!a->layers.empty()) throw InputError("command line", "--layers", "does not apply to --cross-validate");
      const profiler::CrossValidation cv = profiler::cross_validate(samples, *gpu, base);
      if (a->json) fmt::print("{}\n", profiler::cross_validation_to_json(cv).dump(2));
      else fmt::print("{}", profiler::cross_validation_report(cv, gpu->name));
      ctx.exit_code = 0;
      return;
    }
    profiler::CalibrationFit fit = profiler::fit_calibration(samples, *gpu, base);
    profiler::fit_comm(collectives, *gpu, fit);
    fit.calibration.source = "strata calibrate: " + measured;
    nlohmann::json j = profiler::calibration_fit_to_json(fit, gpu->name);
    std::string layer_report;
    if (!a->layers.empty()) {
      auto steps = profiler::load_layer_steps(a->layers);
      auto rows = profiler::compare_layer_steps(catalog, steps, *gpu, base.kernel, fit.calibration.kernel);
      layer_report = profiler::layer_steps_report(rows);
      nlohmann::json lj = nlohmann::json::array();
      for (const auto& r : rows)
        lj.push_back({{"model", r.step.model}, {"tp", r.step.tp}, {"seq", r.step.seq}, {"layers", r.step.layers},
                      {"measured_s", r.step.step_time_s}, {"predicted_before_s", r.predicted_before_s},
                      {"predicted_after_s", r.predicted_after_s}});
      j["fit"]["layer_steps"] = {{"file", a->layers}, {"steps", lj}};
    }
    write_calibration(j, a->out);
    if (a->json) fmt::print("{}\n", j.dump(2));
    else {
      fmt::print("{}{}", profiler::calibration_report(fit, gpu->name), layer_report);
      if (!a->out.empty()) fmt::print("\nwrote {}\n", a->out);
    }
    ctx.exit_code = 0;
  });
}

}  // namespace strata
