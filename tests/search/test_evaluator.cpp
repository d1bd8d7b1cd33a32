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
