#include <doctest/doctest.h>

#include "costmodel/predictor.h"
#include "fake_cost_model.h"
#include "search/bottleneck_search.h"
#include "test_util.h"

using namespace strata;

namespace {

Job llama_workload() { return test::workload("llama3-70b", "dgx-h100-ndr", 256, 4096); }

// Optimum at tp=4 pp=4 mbs=2 selective recompute, vpp=1; plans with tp*pp < 8 do not fit.
test::FakeCostModel known_optimum() {
  return test::FakeCostModel(
      [](const ParallelPlan& p) {
        double t = 10 + 3 * test::dist(p.tp, 4) + 2 * test::dist(p.pp, 4) + test::dist(p.micro_batch_size, 2) + 0.5 * (p.vpp - 1) + 0.25 * p.cp;
        t += p.recompute.granularity == RecomputeGranularity::selective ? 0 : 0.7;
        return t;
      },
      [](const ParallelPlan& p) { return 400.0 / (p.tp * p.pp); }, 80);
}

}  // namespace

TEST_SUITE("search") {
TEST_CASE("bottleneck_search: finds the known optimum of a fake cost model") {
  const test::FakeCostModel model = known_optimum();
  SearchOptions o;
  o.num_gpus = 64;
  Evaluator ev(llama_workload(), o, model);
  const BottleneckOutcome out = bottleneck_search(ev);
  REQUIRE(out.best);
  CHECK(out.best->feasible);
  CHECK(out.best->plan.tp == 4);
  CHECK(out.best->plan.pp == 4);
  CHECK(out.best->plan.dp == 4);
  CHECK(out.best->plan.cp == 1);
  CHECK(out.best->plan.micro_batch_size == 2);
  CHECK(out.best->plan.vpp == 1);
  CHECK(out.best->plan.recompute.granularity == RecomputeGranularity::selective);
  CHECK(out.starts > 0);
}

TEST_CASE("climb_from: climbs out of memory and respects the trial budget") {
  const test::FakeCostModel model = known_optimum();
  SearchOptions o;
  o.num_gpus = 64;
  Evaluator ev(llama_workload(), o, model);
  ParallelPlan start;
  start.tp = 1;
  start.pp = 1;
  start.dp = 64;
  start.distributed_optimizer = true;
  EvalPtr e = climb_from(ev, start, 0, 400);
  REQUIRE(e);
  CHECK(e->feasible);
  CHECK(e->time_s == doctest::Approx(10.25));  // the optimum: tp4 pp4 mbs2 selective, cp1
  Evaluator small(llama_workload(), o, model);
  climb_from(small, start, 0, 5);
  CHECK(small.predictions() <= 5);
}

TEST_CASE("initial_plans: legal, distinct (tp, pp, cp) shapes with the least recompute that fits") {
  const AnalyticalCostModel model;
  SearchOptions o;
  o.num_gpus = 64;
  Evaluator ev(llama_workload(), o, model);
  const auto starts = initial_plans(ev);
  REQUIRE_FALSE(starts.empty());
  for (const ParallelPlan& p : starts) {
    CHECK(ev.illegal_reason(p) == "");
    CHECK(p.vpp == 1);
    CHECK(p.micro_batch_size == 1);
    CHECK(p.stage_layers.empty());
  }
}

TEST_CASE("bottleneck_search: the same plan whatever the thread count") {
  const AnalyticalCostModel model;
  SearchOptions o;
  o.num_gpus = 128;
  o.seed = 7;
  EvalPtr first;
  std::int64_t predictions = -1;
  for (int threads : {1, 2, 3}) {
    o.threads = threads;
    Evaluator ev(llama_workload(), o, model);
    const BottleneckOutcome out = bottleneck_search(ev);
    REQUIRE(out.best);
    if (!first) {
      first = out.best;
      predictions = ev.predictions();
    }
    CHECK(out.best->plan == first->plan);
    CHECK(out.best->time_s == first->time_s);
    CHECK(ev.predictions() == predictions);
  }
}
}
