#pragma once
// Measured transformer-layer training steps (scripts/measure_layer_step.py: PyTorch, bf16 or fp16,
// SDPA flash or unfused attention, one GPU running a TP rank's shard) against the kernel model's layer time
// (decoder_layer_ops forward + backward through KernelModel), before and after calibration.
#include <string>
#include <vector>

#include "costmodel/calibration.h"
#include "costmodel/catalog.h"
#include "costmodel/gpu_spec.h"

namespace strata::profiler {

struct LayerStep {
  std::string model;  // catalog name, or a model JSON path (relative paths: to the steps file's folder)
  int tp = 1;
  std::int64_t seq = 0;
  std::int64_t micro_batch = 1;
  int layers = 1;
  std::string precision = "bf16";
  bool flash_attention = true;   // "attention": "flash" | "cudnn" | "unfused"
  bool cudnn_attention = false;  // "cudnn": PyTorch SDPA's cuDNN backend (cuDNN's fused flash attention)
  double step_time_s = 0;     // forward + backward of `layers` layers
  double forward_time_s = 0;  // 0: not measured
  double peak_memory_GiB = 0;
};

struct LayerStepsFile {
  std::string path;
  std::string gpu;
  std::string measured_at;
  std::string method;
  std::vector<LayerStep> steps;
};

LayerStepsFile load_layer_steps(const std::string& path);  // InputError on bad input

struct LayerStepComparison {
  LayerStep step;
  double predicted_before_s = 0;
  double predicted_after_s = 0;
};

// Kernel-model time of forward + backward of the measured layers (no TP communication: the
// measurement runs one rank's shard alone).
double predicted_layer_step_s(const ModelSpec& model, const LayerStep& step, const GpuSpec& gpu, const KernelCoefficients& c);
std::vector<LayerStepComparison> compare_layer_steps(const Catalog& catalog, const LayerStepsFile& file, const GpuSpec& gpu,
                                                     const KernelCoefficients& before, const KernelCoefficients& after);
std::string layer_steps_report(const std::vector<LayerStepComparison>& rows);

}  // namespace strata::profiler
