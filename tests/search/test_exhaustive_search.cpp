#include <doctest/doctest.h>

#include "costmodel/predictor.h"
#include "fake_cost_model.h"
#include "search/exhaustive_search.h"
#include "test_util.h"

using namespace strata;

namespace {

Job small_workload() { return test::workload("gpt3-13b", "dgx-a100-hdr", 128, 2048); }

}  // namespace

TEST_SUITE("search") {
TEST_CASE("exhaustive_search: the best of the whole grid, despite branch and bound") {
  const AnalyticalCostModel model;
  SearchOptions o;
  o.num_gpus = 32;
  Evaluator ev(small_workload(), o, model);
  const ExhaustiveOutcome out = exhaustive_search(ev);
  REQUIRE(out.best);
  REQUIRE(out.best->feasible);
  // Brute force over the same grid.
  double best = 1e300;
  for (const ParallelPlan& p : uniform_grid(small_workload(), o)) {
    Job j = small_workload();
    j.plan = p;
    const Prediction pred = model.predict(j);
    if (pred.feasible) best = std::min(best, pred.iteration_time_s);
  }
  CHECK(out.best->time_s == best);
  CHECK(out.grid_size == static_cast<std::int64_t>(uniform_grid(small_workload(), o).size()));
  CHECK(ev.predictions() < out.grid_size / 4);  // the bound skips most of the grid
}

TEST_CASE("exhaustive_search: finds the fake model's optimum and is deterministic across threads") {
  const test::FakeCostModel model(
      [](const ParallelPlan& p) { return 5 + 2 * test::dist(p.tp, 2) + test::dist(p.pp, 2) + 0.1 * test::dist(p.micro_batch_size, 4) + 0.3 * (p.vpp - 1); },
      [](const ParallelPlan& p) { return 200.0 / (p.tp * p.pp); }, 40);
  SearchOptions o;
  o.num_gpus = 32;
  ParallelPlan first;
  for (int threads : {1, 2}) {
    o.threads = threads;
    Evaluator ev(small_workload(), o, model);
    const ExhaustiveOutcome out = exhaustive_search(ev);
    REQUIRE(out.best);
    CHECK(out.best->plan.tp == 2);
    CHECK(out.best->plan.pp == 4);  // tp2 pp2 does not fit (200/4 > 40); tp4 pp2 costs more
    CHECK(out.best->plan.micro_batch_size == 4);
    if (threads == 1) first = out.best->plan;
    CHECK(out.best->plan == first);
  }
}
}
