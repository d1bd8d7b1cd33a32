#include <doctest/doctest.h>

#include <set>

#include "costmodel/predictor.h"
#include "formats/chrome_trace.h"
#include "test_util.h"

using namespace strata;

TEST_SUITE("formats") {
TEST_CASE("chrome_trace: complete events per stage and lane, in microseconds") {
  Job job = test::gpt3_175b_job();
  job.training.global_batch_size = 128;  // 16 micro-batches, divisible by pp for vpp=2
  job.plan.vpp = 2;
  std::vector<PipelineEvent> events;
  const Prediction pred = predict(job, &events);
  REQUIRE(!events.empty());
  const auto j = chrome_trace(job, pred, events);
  REQUIRE(j.contains("traceEvents"));
  int fwd = 0, bwd = 0, rec = 0, send = 0, meta = 0;
  double last_end_us = 0;
  std::set<int> pids;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M") { ++meta; continue; }
    REQUIRE(e["ph"] == "X");
    const int pid = e["pid"], tid = e["tid"];
    CHECK(pid >= 0);
    CHECK(pid < job.plan.pp);
    CHECK((tid >= 0 && tid <= 2));
    CHECK(e["dur"].get<double>() >= 0);
    pids.insert(pid);
    last_end_us = std::max(last_end_us, e["ts"].get<double>() + e["dur"].get<double>());
    const std::string name = e["name"], cat = e["cat"];
    if (cat == "forward") { ++fwd; CHECK(name.rfind("F mb", 0) == 0); CHECK(tid == 0); }
    if (cat == "backward") { ++bwd; CHECK(name.rfind("B mb", 0) == 0); }
    if (cat == "recompute") ++rec;
    if (cat == "pp_comm") { ++send; CHECK(tid == 2); }
  }
  const int ops = static_cast<int>(job.num_micro_batches()) * job.plan.pp * job.plan.vpp;
  CHECK(fwd == ops);
  CHECK(bwd == ops);
  CHECK(rec == ops);  // selective recompute in every backward
  CHECK(send == 2 * (ops - static_cast<int>(job.num_micro_batches())));  // all but the last/first virtual stage send
  CHECK(meta == 5 * job.plan.pp);
  CHECK(static_cast<int>(pids.size()) == job.plan.pp);
  CHECK(last_end_us == doctest::Approx(pred.iteration_time_s * 1e6).epsilon(1e-3));
  bool named = false;
  for (const auto& e : j["traceEvents"]) named |= e["name"] == "F mb3 chunk0" && e["pid"] == 0;
  CHECK(named);
  // The step's tail (exposed DP sync, optimizer step, host overhead) runs on the critical stage and
  // ends the iteration.
  int tails = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["name"] != "step overhead (host)") continue;
    ++tails;
    CHECK(e["pid"] == pred.breakdown.stage);
    CHECK(e["ts"].get<double>() + e["dur"].get<double>() == doctest::Approx(pred.iteration_time_s * 1e6).epsilon(1e-6));
  }
  CHECK(tails == 1);
}
}
