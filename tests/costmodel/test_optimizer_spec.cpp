#include <doctest/doctest.h>

#include "costmodel/optimizer_spec.h"

using namespace strata;

TEST_CASE("optimizer names and state dtypes read back as written") {
  for (OptimizerKind k : {OptimizerKind::adam, OptimizerKind::sgd, OptimizerKind::muon, OptimizerKind::lion})
    CHECK(optimizer_kind_from_string(to_string(k)) == k);
  for (StateDtype d : {StateDtype::fp32, StateDtype::bf16, StateDtype::fp16, StateDtype::fp8})
    CHECK(state_dtype_from_string(to_string(d)) == d);
  CHECK_FALSE(optimizer_kind_from_string("Adam").has_value());
  CHECK_FALSE(state_dtype_from_string("fp64").has_value());
}

TEST_CASE("bytes per parameter of the optimizer state") {
  OptimizerSpec o;
  SUBCASE("Megatron's default: fp32 master weights and two fp32 moments; an fp32 model has no master copy") {
    CHECK(master_weight_bytes(o, Precision::bf16, LowPrecisionRecipe::delayed) == 4);
    CHECK(moment_bytes(o) == 8);
    CHECK(master_weight_bytes(o, Precision::fp32, LowPrecisionRecipe::delayed) == 0);
    o.kind = OptimizerKind::sgd;  // one momentum buffer
    CHECK(moment_bytes(o) == 4);
  }
  SUBCASE("dtypes count only with the precision-aware optimizer") {
    o.exp_avg = StateDtype::bf16;
    CHECK(moment_bytes(o) == 8);
    o.precision_aware = true;
    o.exp_avg_sq = StateDtype::fp8;
    CHECK(moment_bytes(o) == 3);
  }
  SUBCASE("FusedAdam holds the master weights except for fp8 recipes other than delayed scaling with fp32 main params") {
    o.precision_aware = true;
    CHECK(fused_adam_holds_master(o, Precision::bf16, LowPrecisionRecipe::delayed));
    CHECK(fused_adam_holds_master(o, Precision::fp8, LowPrecisionRecipe::delayed));
    CHECK_FALSE(fused_adam_holds_master(o, Precision::fp8, LowPrecisionRecipe::mxfp8));
    CHECK(master_weight_bytes(o, Precision::fp8, LowPrecisionRecipe::mxfp8) == 4);
    CHECK(master_weight_bytes(o, Precision::bf16, LowPrecisionRecipe::delayed) == 2);  // int16 remainders
    CHECK(master_weight_bytes(o, Precision::fp16, LowPrecisionRecipe::delayed) == 4);  // remainders need bf16 parameters
    o.main_params = StateDtype::fp16;
    CHECK(fused_adam_holds_master(o, Precision::fp8, LowPrecisionRecipe::mxfp8));
    CHECK(master_weight_bytes(o, Precision::fp8, LowPrecisionRecipe::mxfp8) == 2);
    o.main_params = StateDtype::fp32;
    o.cpu_offload_fraction = 0.5;  // the hybrid optimizer takes FusedAdam's path
    CHECK(fused_adam_holds_master(o, Precision::fp8, LowPrecisionRecipe::mxfp8));
  }
}

TEST_CASE("bytes an optimizer step moves per parameter") {
  OptimizerSpec o;
  // fp32 gradients: norm, update and zeroing read or write 4 B each; the master is read, written and
  // read again for the copy into the 2 B weight; two moments read and written.
  CHECK(optimizer_step_bytes(o, Precision::bf16, LowPrecisionRecipe::delayed, 4, 2) == 12 + 12 + 2 + 16);
  // 16-bit gradients are first copied into fp32 main gradients (read 2, write 4).
  CHECK(optimizer_step_bytes(o, Precision::fp16, LowPrecisionRecipe::delayed, 2, 2) == 16 + 12 + 2 + 16);
  // An fp32 model updates its parameters in place.
  CHECK(optimizer_step_bytes(o, Precision::fp32, LowPrecisionRecipe::delayed, 4, 4) == 12 + 8 + 16);
  // FusedAdam with remainders and bf16 moments reads 16-bit gradients directly and updates the weight
  // in place: 3 x 2 + remainder r/w 4 + weight r/w 4 + moments r/w 8.
  o.precision_aware = true;
  o.exp_avg = o.exp_avg_sq = StateDtype::bf16;
  CHECK(optimizer_step_bytes(o, Precision::bf16, LowPrecisionRecipe::delayed, 2, 2) == 6 + 4 + 4 + 8);
}
