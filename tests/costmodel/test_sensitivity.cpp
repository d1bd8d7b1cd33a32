#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "costmodel/predictor.h"
#include "costmodel/sensitivity.h"
#include "test_util.h"

using namespace strata;

namespace {

const Sensitivity& figure(const std::vector<Sensitivity>& all, const std::string& name) {
  auto it = std::find_if(all.begin(), all.end(), [&](const Sensitivity& s) { return s.figure == name; });
  REQUIRE_MESSAGE(it != all.end(), name);
  return *it;
}

}  // namespace

TEST_SUITE("costmodel") {
TEST_CASE("prediction_sensitivity: each default figure made 10% worse, largest effect first") {
  Job job = test::gpt3_175b_job();
  const auto all = prediction_sensitivity(job);
  REQUIRE(all.size() >= 10);
  for (std::size_t i = 1; i < all.size(); ++i) CHECK(std::abs(all[i - 1].time_change) >= std::abs(all[i].time_change));
  for (const auto& s : all) {
    CAPTURE(s.figure);
    // Worse figures never make the iteration faster (the model is monotone in each of them).
    CHECK(s.time_change >= -1e-12);
    CHECK((s.direction == "-10%" || s.direction == "+10%"));
  }

  SUBCASE("GEMMs dominate GPT-3 175B: a 10% lower GEMM efficiency costs almost, never more than, 1/0.9 - 1") {
    CHECK(all.front().figure == "gemm_efficiency");
    CHECK(all.front().time_change > 0.05);
    CHECK(all.front().time_change <= 1 / 0.9 - 1 + 1e-9);
  }
  SUBCASE("the host step overhead adds linearly: its effect is exactly 10% of it over the iteration") {
    const double t = predict(job).iteration_time_s;
    CHECK(figure(all, "step_overhead_s").time_change ==
          doctest::Approx(0.1 * job.runtime.step_overhead_s / t).epsilon(1e-9));
  }
  SUBCASE("one GPU: no collective, so no network figure matters") {
    Job one = test::workload("gpt3-1.3b", "dgx-a100-hdr", 8, 2048);
    one.plan.micro_batch_size = 4;
    const auto single = prediction_sensitivity(one);
    for (const char* name : {"nvlink_efficiency", "network_efficiency", "link_latency_us", "half_bandwidth_bytes"}) {
      CAPTURE(name);
      CHECK(figure(single, name).time_change == doctest::Approx(0.0).epsilon(1e-12));
    }
  }
  SUBCASE("data parallelism across nodes without overlap: the network figure shows") {
    job.runtime.overlap_grad_reduce = false;
    job.runtime.overlap_param_gather = false;
    CHECK(figure(prediction_sensitivity(job), "network_efficiency").time_change > 0);
  }
  SUBCASE("an illegal plan has nothing to perturb") {
    job.plan.tp = 7;  // does not divide the 96 heads
    CHECK(prediction_sensitivity(job).empty());
  }
}

TEST_CASE("ranking_sensitivity: the figures that would let an alternative overtake the chosen plan") {
  // The alternative: the same plan on 1% slower GEMMs, without host overhead. The chosen plan's
  // host overhead is set to 95% of the alternative's GEMM deficit: the chosen plan wins by a
  // little, and loses once its overhead is 10% larger.
  Job chosen = test::gpt3_175b_job();
  chosen.runtime.step_overhead_s = 0;
  Job alternative = chosen;
  alternative.calibration.kernel.gemm_efficiency *= 0.99;
  const double deficit = predict(alternative).iteration_time_s - predict(chosen).iteration_time_s;
  REQUIRE(deficit > 0);
  chosen.runtime.step_overhead_s = 0.95 * deficit;
  REQUIRE(predict(chosen).iteration_time_s < predict(alternative).iteration_time_s);

  const auto flips = ranking_sensitivity(chosen, {alternative}, 0.0);
  auto has = [&](const std::string& figure, const std::string& direction) {
    return std::any_of(flips.begin(), flips.end(), [&](const RankingFlip& f) {
      return f.figure == figure && f.direction == direction && f.alternative == 0 && f.faster_by > 0;
    });
  };
  CHECK(has("step_overhead_s", "+10%"));
  CHECK_FALSE(has("step_overhead_s", "-10%"));
  // Faster GEMMs shrink the alternative's deficit below the chosen plan's overhead; slower ones grow it.
  CHECK(has("gemm_efficiency", "+10%"));
  CHECK_FALSE(has("gemm_efficiency", "-10%"));
  // A margin wider than any of these gaps is a tie: no flip reported.
  CHECK(ranking_sensitivity(chosen, {alternative}, 0.01).empty());
  // Nothing beats itself.
  CHECK(ranking_sensitivity(chosen, {chosen}, 0.0).empty());
}
}
