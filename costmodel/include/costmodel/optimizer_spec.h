#pragma once
// The optimizer a job trains with and where, and in which precision, it keeps its state: what
// Megatron-LM's OptimizerConfig decides (--optimizer, --use-precision-aware-optimizer with
// --main-params-dtype / --exp-avg-dtype / --exp-avg-sq-dtype, --optimizer-cpu-offload with
// --optimizer-offload-fraction). The memory model and the optimizer-step time read their bytes per
// parameter from here, one definition for both.
#include <optional>
#include <string>

#include "costmodel/gpu_spec.h"

namespace strata {

// Megatron-LM's --optimizer choices that strata costs. Adam keeps two moments per parameter; SGD
// (with Megatron's default --sgd-momentum 0.9), Muon and Lion one.
enum class OptimizerKind { adam, sgd, muon, lion };
const char* to_string(OptimizerKind k);
std::optional<OptimizerKind> optimizer_kind_from_string(const std::string& s);  // "adam", "sgd", "muon", "lion"

// The dtype an optimizer tensor is kept in (Megatron's dtype_map: fp8 is a byte per element).
enum class StateDtype { fp32, bf16, fp16, fp8 };
const char* to_string(StateDtype d);
std::optional<StateDtype> state_dtype_from_string(const std::string& s);  // "fp32", "bf16", "fp16", "fp8"
int state_bytes(StateDtype d);

struct OptimizerSpec {
  OptimizerKind kind = OptimizerKind::adam;
  // Transformer Engine's FusedAdam keeps the master weights and moments in the dtypes below
  // (Megatron --use-precision-aware-optimizer: Adam and the distributed optimizer only). Without
  // it every optimizer tensor is fp32.
  bool precision_aware = false;
  StateDtype main_params = StateDtype::fp32;  // --main-params-dtype: fp32 or fp16
  StateDtype exp_avg = StateDtype::fp32;      // --exp-avg-dtype
  StateDtype exp_avg_sq = StateDtype::fp32;   // --exp-avg-sq-dtype
  // Share of the optimizer (master weights and moments, and their update) kept and run on the host
  // (Megatron --optimizer-cpu-offload --optimizer-offload-fraction; HybridDeviceOptimizer).
  double cpu_offload_fraction = 0;
  bool operator==(const OptimizerSpec&) const = default;
  bool is_default() const { return *this == OptimizerSpec{}; }
};

// Whether TE's FusedAdam holds the master weights itself (Megatron OptimizerConfig
// use_precision_aware_optimizer_no_fp8_or_ds_fp8): precision-aware, and the model is not fp8 with
// a recipe other than delayed scaling unless the master weights are 16-bit or offloaded. Otherwise
// Megatron's distributed optimizer keeps fp32 main parameters of its own.
bool fused_adam_holds_master(const OptimizerSpec& o, Precision model, LowPrecisionRecipe recipe);

// Bytes per parameter of the master weights: none for an fp32 model (the parameters are the
// master), 4 for fp32, 2 for fp16, and 2 when FusedAdam stores only the 16 bits of each fp32 master
// weight that a bf16 parameter does not hold (store_param_remainders, Megatron's default with
// Transformer Engine 2.1+, for bf16 parameters with fp32 main params).
double master_weight_bytes(const OptimizerSpec& o, Precision model, LowPrecisionRecipe recipe);

// Bytes per parameter of the optimizer's moments (exp_avg, and exp_avg_sq for Adam).
double moment_bytes(const OptimizerSpec& o);

// Bytes the optimizer phase of a step moves through GPU memory per parameter it updates on the
// GPU, given the gradient buffer's and the model weights' bytes per element. Megatron's
// mixed-precision step: the grad-norm pass reads the gradient, the optimizer reads it again, the
// buffer is zeroed for the next step (3 x grad; a 16-bit buffer is first copied to fp32 unless
// FusedAdam reads it directly); the optimizer reads and writes the master weights
// and the moments; the update reaches the 16-bit model weights by a separate copy (a third read of
// the master, a write of the weight) unless FusedAdam updates them in place (it writes the weight,
// and with remainders reads it too). PyTorch's clip_grad_norm_ rescales on every step: 50 B with
// fp32 state, measured on an H100 as 50.9 ms for GPT-3 2.7B's 2.65B parameters (configs/
// measurements, train-steps), 2.6 TB/s; Megatron rescales only above the threshold (not counted):
// 42 B with fp32 gradients and state.
double optimizer_step_bytes(const OptimizerSpec& o, Precision model, LowPrecisionRecipe recipe, double grad_bytes, double weight_bytes);

}  // namespace strata
