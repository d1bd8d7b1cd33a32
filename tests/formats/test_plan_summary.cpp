#include <doctest/doctest.h>

#include "formats/plan_summary.h"
#include "test_util.h"

using namespace strata;

TEST_SUITE("formats") {
TEST_CASE("plan_summary") {
  CHECK(plan_summary(test::gpt3_175b_job().plan) == "tp=8 pp=16 dp=8 sp mbs=1 recompute=selective dist-opt");
  ParallelPlan copies = test::gpt3_175b_job().plan;
  copies.optimizer_instances = 2;
  CHECK(plan_summary(copies) == "tp=8 pp=16 dp=8 sp mbs=1 recompute=selective dist-optx2");
  ParallelPlan p;
  p.tp = 2;
  p.pp = 4;
  p.dp = 2;
  p.cp = 2;
  p.vpp = 3;
  p.zero_stage = 1;
  p.recompute.granularity = RecomputeGranularity::full;
  p.recompute.num_layers = 2;
  p.stage_layers = {5, 7, 7, 5};
  CHECK(plan_summary(p) == "tp=2 pp=4 dp=2 cp=2 vpp=3 mbs=1 recompute=full(2 layers/stage) zero=1 stages=[5,7,7,5]");
  // Selective recompute names its modules unless they are Megatron's default (core_attn).
  p.recompute = {RecomputeGranularity::selective, -1};
  CHECK(plan_summary(p).find("recompute=selective zero=1") != std::string::npos);
  p.recompute.modules = kRecomputeLayernorm | kRecomputeMlaUpProj;
  CHECK(plan_summary(p).find("recompute=selective(layernorm,mla_up_proj) zero=1") != std::string::npos);
}
}
