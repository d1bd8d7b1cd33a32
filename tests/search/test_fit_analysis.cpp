#include <doctest/doctest.h>

#include <numeric>

#include "costmodel/predictor.h"
#include "search/fit_analysis.h"
#include "catalog_util.h"
#include "test_util.h"

using namespace strata;

namespace {
// The leanest plan of `w` on `gpus` GPUs.
EvalPtr leanest_on(const Job& w, int gpus, const CostModel& model) {
  SearchOptions o;
  o.num_gpus = gpus;
  Evaluator ev(w, o, model);
  return leanest_plan(ev);
}
}  // namespace

TEST_SUITE("search") {
TEST_CASE("leanest_plan and gpus_needed_to_fit: 405B does not fit 8 A100s") {
  const Job w = test::workload("llama3.1-405b", "dgx-a100-hdr", 16, 8192);
  const AnalyticalCostModel model;
  EvalPtr lean = leanest_on(w, 8, model);
  REQUIRE(lean);
  CHECK_FALSE(lean->feasible);
  CHECK(lean->plan.recompute.granularity == RecomputeGranularity::full);
  CHECK(lean->plan.micro_batch_size == 1);
  // Weights, fp32 gradients and unsharded Adam states alone: 405e9 * 18 B / 8 GPUs > 800 GiB.
  CHECK(lean->memory_GiB > 800);
  SearchOptions o;
  o.num_gpus = 8;
  const int need = gpus_needed_to_fit(w, o, model);
  CHECK(need > 8);
  CHECK(need % 8 == 0);
  EvalPtr e = leanest_on(w, need, model);
  REQUIRE(e);
  CHECK(e->feasible);
  CHECK_FALSE(leanest_on(w, need / 2, model)->feasible);
}

TEST_CASE("leanest_plan shards an MoE model's experts: DeepSeek-V3 fits a few hundred H100s, not 'none up to 1024x'") {
  const Job w = test::workload("deepseek-v3", "dgx-h100-ndr", 256, 4096);
  const AnalyticalCostModel model;
  EvalPtr lean = leanest_on(w, 64, model);
  REQUIRE(lean);
  CHECK_FALSE(lean->feasible);
  CHECK(lean->plan.ep == std::gcd(256, lean->plan.dp * lean->plan.cp));  // the widest legal expert parallelism
  // 671B parameters at ~16 B each (weights, fp32 gradients, sharded Adam states) need hundreds of
  // 80 GB GPUs; with the experts sharded the scan finds a count well under 1024x the request.
  SearchOptions o;
  o.num_gpus = 64;
  const int need = gpus_needed_to_fit(w, o, model);
  CHECK(need >= 128);
  CHECK(need <= 2048);
  CHECK(leanest_on(w, need, model)->feasible);
}
}
