#include "profiler/layer_steps.h"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "costmodel/json_reader.h"
#include "costmodel/kernel_model.h"
#include "costmodel/layer_ops.h"
#include "profiler/calibrate.h"

namespace strata::profiler {

LayerStepsFile load_layer_steps(const std::string& path) {
  json j = load_json_file(path);
  JsonReader r(j, path);
  r.reject_unknown_keys({"schema_version", "gpu", "measured_at", "host", "torch_version", "cuda_version", "method", "measurements"});
  if (r.get_int("schema_version", 1, 1000) != 1) r.fail("schema_version", "expected 1");
  LayerStepsFile f;
  f.path = path;
  f.gpu = r.opt_string("gpu").value_or("");
  f.measured_at = r.opt_string("measured_at").value_or("");
  f.method = r.opt_string("method").value_or("");
  if (!r.has("measurements") || !r.raw("measurements").is_array()) r.fail("measurements", "expected an array of measurements");
  const auto& arr = r.raw("measurements");
  for (std::size_t i = 0; i < arr.size(); ++i) {
    JsonReader m(arr[i], path, "/measurements/" + std::to_string(i));
    m.reject_unknown_keys({"model", "tp", "seq", "micro_batch", "layers", "precision", "attention", "step_time_s", "forward_time_s",
                           "backward_time_s", "peak_memory_GiB"});
    LayerStep s;
    s.model = m.get_string("model");
    s.tp = static_cast<int>(m.opt_int("tp", 1, 4096).value_or(1));
    s.seq = m.get_int("seq", 1, 1 << 24);
    s.micro_batch = m.opt_int("micro_batch", 1, 1 << 20).value_or(1);
    s.layers = static_cast<int>(m.opt_int("layers", 1, 100000).value_or(1));
    s.precision = m.opt_string("precision").value_or("bf16");
    if (!precision_from_string(s.precision)) m.fail("precision", "expected bf16, fp16, fp8, tf32 or fp32");
    const std::string attention = m.opt_string("attention").value_or("flash");
    if (attention != "flash" && attention != "cudnn" && attention != "unfused") m.fail("attention", "expected flash, cudnn or unfused");
    s.flash_attention = attention != "unfused";
    s.cudnn_attention = attention == "cudnn";
    s.step_time_s = m.get_positive("step_time_s", 1e6);
    s.forward_time_s = m.opt_positive("forward_time_s", 1e6).value_or(0);
    s.peak_memory_GiB = m.opt_number("peak_memory_GiB").value_or(0);
    f.steps.push_back(s);
  }
  return f;
}

double predicted_layer_step_s(const ModelSpec& model, const LayerStep& step, const GpuSpec& gpu, const KernelCoefficients& c) {
  Precision p = *precision_from_string(step.precision);
  LayerShape shape;
  shape.micro_batch = step.micro_batch;
  shape.seq = step.seq;
  shape.tp = step.tp;
  shape.flash_attention = step.flash_attention;
  shape.cudnn_attention = step.cudnn_attention;
  shape.element_bytes = activation_bytes(p);
  LayerOps ops = decoder_layer_ops(model, shape);
  KernelModel km(gpu, p, c);
  return step.layers * (km.total_time(ops.forward) + km.total_time(ops.backward));
}

std::vector<LayerStepComparison> compare_layer_steps(const Catalog& catalog, const LayerStepsFile& file, const GpuSpec& gpu,
                                                     const KernelCoefficients& before, const KernelCoefficients& after) {
  std::vector<LayerStepComparison> out;
  for (const auto& s : file.steps) {
    // A model JSON named relative to the steps file (configs/measurements/models/...), else a
    // catalog name or a path as given.
    const auto beside = std::filesystem::path(file.path).parent_path() / s.model;
    const bool is_file_beside = s.model.ends_with(".json") && std::filesystem::path(s.model).is_relative() &&
                                std::filesystem::exists(beside);
    ModelSpec m = catalog.model(is_file_beside ? beside.string() : s.model);
    out.push_back({s, predicted_layer_step_s(m, s, gpu, before), predicted_layer_step_s(m, s, gpu, after)});
  }
  return out;
}

std::string layer_steps_report(const std::vector<LayerStepComparison>& rows) {
  std::string out = "\nlayer training steps (PyTorch) vs kernel model, forward + backward\n";
  out += fmt::format("{:<26} {:>3} {:>6} {:>6}  {:>11}  {:>11} {:>8}  {:>11} {:>8}\n", "model", "tp", "seq", "layers", "measured ms",
                     "before ms", "err %", "after ms", "err %");
  std::vector<double> eb, ea;
  for (const auto& r : rows) {
    double e0 = (r.predicted_before_s - r.step.step_time_s) / r.step.step_time_s * 100;
    double e1 = (r.predicted_after_s - r.step.step_time_s) / r.step.step_time_s * 100;
    eb.push_back(std::abs(e0));
    ea.push_back(std::abs(e1));
    const std::string label = std::filesystem::path(r.step.model).stem().string() + (r.step.flash_attention ? (r.step.cudnn_attention ? " cudnn" : "") : " unfused") +
                              (r.step.precision == "bf16" ? "" : " " + r.step.precision);
    out += fmt::format("{:<26} {:>3} {:>6} {:>6}  {:>11.3f}  {:>11.3f} {:>+8.1f}  {:>11.3f} {:>+8.1f}\n", label, r.step.tp, r.step.seq,
                       r.step.layers, r.step.step_time_s * 1e3, r.predicted_before_s * 1e3, e0, r.predicted_after_s * 1e3, e1);
  }
  ErrorStats b = error_stats(eb), a = error_stats(ea);
  out += fmt::format("absolute % error: before median {:.1f} p90 {:.1f}; after median {:.1f} p90 {:.1f} ({} steps)\n", b.median_pct,
                     b.p90_pct, a.median_pct, a.p90_pct, rows.size());
  return out;
}

}  // namespace strata::profiler
