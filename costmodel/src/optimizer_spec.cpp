#include "costmodel/optimizer_spec.h"

namespace strata {

const char* to_string(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::adam: return "adam";
    case OptimizerKind::sgd: return "sgd";
    case OptimizerKind::muon: return "muon";
    case OptimizerKind::lion: return "lion";
  }
  return "?";
}

std::optional<OptimizerKind> optimizer_kind_from_string(const std::string& s) {
  if (s == "adam") return OptimizerKind::adam;
  if (s == "sgd") return OptimizerKind::sgd;
  if (s == "muon") return OptimizerKind::muon;
  if (s == "lion") return OptimizerKind::lion;
  return std::nullopt;
}

const char* to_string(StateDtype d) {
  switch (d) {
    case StateDtype::fp32: return "fp32";
    case StateDtype::bf16: return "bf16";
    case StateDtype::fp16: return "fp16";
    case StateDtype::fp8: return "fp8";
  }
  return "?";
}

std::optional<StateDtype> state_dtype_from_string(const std::string& s) {
  if (s == "fp32") return StateDtype::fp32;
  if (s == "bf16") return StateDtype::bf16;
  if (s == "fp16") return StateDtype::fp16;
  if (s == "fp8") return StateDtype::fp8;
  return std::nullopt;
}

int state_bytes(StateDtype d) {
  switch (d) {
    case StateDtype::fp32: return 4;
    case StateDtype::bf16:
    case StateDtype::fp16: return 2;
    case StateDtype::fp8: return 1;
  }
  return 4;
}

namespace {
bool fp32_model(Precision p) { return p == Precision::fp32 || p == Precision::tf32; }
}  // namespace

bool fused_adam_holds_master(const OptimizerSpec& o, Precision model, LowPrecisionRecipe recipe) {
  return o.precision_aware && (o.main_params != StateDtype::fp32 || model != Precision::fp8 || recipe == LowPrecisionRecipe::delayed ||
                               o.cpu_offload_fraction > 0);
}

double master_weight_bytes(const OptimizerSpec& o, Precision model, LowPrecisionRecipe recipe) {
  if (fp32_model(model)) return 0;
  if (!fused_adam_holds_master(o, model, recipe)) return 4;
  // fp8 runs keep bf16 parameters (Megatron trains them with --bf16): remainders apply to both.
  const bool bf16_params = model == Precision::bf16 || model == Precision::fp8;
  if (o.main_params == StateDtype::fp32 && bf16_params) return 2;  // distrib_optimizer.py: an int16 remainder
  return state_bytes(o.main_params);
}

double moment_bytes(const OptimizerSpec& o) {
  const double first = o.precision_aware ? state_bytes(o.exp_avg) : 4;
  const double second = o.precision_aware ? state_bytes(o.exp_avg_sq) : 4;
  return o.kind == OptimizerKind::adam ? first + second : first;
}

double optimizer_step_bytes(const OptimizerSpec& o, Precision model, LowPrecisionRecipe recipe, double grad_bytes, double weight_bytes) {
  // The norm, the optimizer and the zeroing each pass over the gradient. FusedAdam reads 16-bit
  // gradients as they are (decoupled grads); Megatron's own optimizers first copy them into fp32
  // main gradients (copy_model_grads_to_main_grads: .float()), which the norm and update then read.
  const bool fused = fused_adam_holds_master(o, model, recipe);
  const double grads = fused || grad_bytes >= 4 ? 3 * grad_bytes : 2 * grad_bytes + 3 * 4;
  const double moments = 2 * moment_bytes(o);
  if (fp32_model(model)) return grads + 2 * weight_bytes + moments;  // the parameters are the master
  const double master = master_weight_bytes(o, model, recipe);
  if (fused) {
    const bool remainders = master == 2 && o.main_params == StateDtype::fp32;
    return grads + 2 * master + weight_bytes * (remainders ? 2 : 1) + moments;
  }
  return grads + 3 * master + weight_bytes + moments;
}

}  // namespace strata
