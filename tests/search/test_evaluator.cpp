#include <doctest/doctest.h>

#include "costmodel/predictor.h"
#include "search/evaluator.h"
#include "search/memory_bound.h"
#include "test_util.h"

using namespace strata;

namespace {

Job workload(const char* model, const char* cluster, std::int64_t gbs, std::int64_t seq) {
  Job w;
  w.model = test::catalog().model(model);
  w.cluster = test::catalog().cluster(cluster);
  w.training.global_batch_size = gbs;
  w.training.seq_length = seq;
  return w;
}

}  // namespace

TEST_SUITE("search") {
TEST_CASE("time_lower_bound: never above the predicted iteration time") {
  const AnalyticalCostModel model;
  for (auto [w, gpus] : {std::pair{workload("llama3-70b", "dgx-h100-ndr", 1024, 8192), 512},
                         std::pair{workload("gpt3-13b", "dgx-a100-hdr", 256, 2048), 64}}) {
    SearchOptions o;
    o.num_gpus = gpus;
    Evaluator ev(w, o, model);
    int checked = 0;
    for (const ParallelPlan& p : uniform_grid(w, o)) {
      if (!ev.may_fit(p) || p.micro_batch_size > 4) continue;
      const Prediction pred = model.predict(ev.job_for(p));
      const double bound = ev.time_lower_bound(p);
      INFO(p.tp, " ", p.pp, " ", p.dp, " ", p.cp, " vpp ", p.vpp, " mbs ", p.micro_batch_size);
      CHECK(bound <= pred.iteration_time_s * (1 + 1e-9));
      CHECK(bound > 0.5 * pred.iteration_time_s);  // and not useless
      ++checked;
    }
    CHECK(checked > 50);
  }
}
}

TEST_SUITE("search") {
TEST_CASE("Evaluator: caches by plan, rejects illegal plans, pre-checks memory") {
  const AnalyticalCostModel model;
  SearchOptions o;
  o.num_gpus = 1024;
  Evaluator ev(test::gpt3_175b_job(), o, model);
  ParallelPlan p = test::gpt3_175b_job().plan;
  EvalPtr a = ev.evaluate(p);
  REQUIRE(a);
  CHECK(a->feasible);
  CHECK(a->prediction);
  CHECK(a->time_s == doctest::Approx(a->prediction->iteration_time_s));
  CHECK(ev.evaluate(p) == a);  // cached
  CHECK(ev.predictions() == 1);
  ParallelPlan illegal = p;
  illegal.dp = 3;
  CHECK(ev.evaluate(illegal) == nullptr);
  ParallelPlan big = p;  // tp=1 pp=2: 175B does not fit
  big.tp = 1;
  big.pp = 2;
  big.dp = 512;
  big.sequence_parallel = false;
  EvalPtr b = ev.evaluate(big);
  REQUIRE(b);
  CHECK_FALSE(b->feasible);
  CHECK_FALSE(b->prediction);  // ruled out without a prediction
  CHECK(b->memory_GiB > 80);
  CHECK(b->bottleneck_kind() == "memory");
  CHECK(ev.pruned() == 1);
  CHECK(ev.predictions() == 1);
  CHECK(ev.all().size() == 2);
}

TEST_CASE("Evaluator: a plan that cannot beat the bound comes back bounded, whatever the cache holds") {
  const AnalyticalCostModel model;
  SearchOptions o;
  o.num_gpus = 1024;
  Evaluator ev(test::gpt3_175b_job(), o, model);
  const ParallelPlan p = test::gpt3_175b_job().plan;
  EvalPtr bounded = ev.evaluate(p, 1e-3);
  REQUIRE(bounded);
  CHECK(bounded->bounded);
  CHECK(bounded->time_s > 1e-3);
  CHECK(ev.predictions() == 0);
  EvalPtr full = ev.evaluate(p);
  CHECK_FALSE(full->bounded);
  CHECK(ev.evaluate(p, 1e-3)->bounded);  // same answer with the prediction cached
  CHECK(better(*full, *ev.evaluate(p, 1e-3)) != better(*ev.evaluate(p, 1e-3), *full));
}

TEST_CASE("better: feasible first, then faster, then less memory, total on distinct plans") {
  Evaluation fast, slow, oom, oom_less;
  fast.feasible = slow.feasible = true;
  fast.time_s = 1;
  slow.time_s = 2;
  oom.memory_GiB = 100;
  oom_less.memory_GiB = 90;
  oom_less.plan.tp = 2;
  CHECK(better(fast, slow));
  CHECK_FALSE(better(slow, fast));
  CHECK(better(slow, oom));
  CHECK(better(oom_less, oom));
  Evaluation tie = fast;
  tie.plan.tp = 2;
  CHECK(better(fast, tie) != better(tie, fast));
}
}
