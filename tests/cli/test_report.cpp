#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>

#include "cli/report.h"
#include "costmodel/predictor.h"
#include "test_util.h"

using namespace strata;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

}  // namespace

TEST_SUITE("cli") {
TEST_CASE("prediction_report") {
  SUBCASE("a feasible plan: headline figures, the bottleneck and one row per stage") {
    Job job = test::gpt3_175b_job();
    Prediction pred = predict(job);
    REQUIRE(pred.feasible);
    const std::string text = prediction_report(job, pred);
    for (const char* part : {"iteration ", "tokens/s/GPU ", "MFU ", "memory ", "breakdown (critical stage ", "pipeline bubble",
                             "DP comm (exposed)"})
      CHECK_MESSAGE(text.find(part) != std::string::npos, part);
    CHECK(text.find("bottleneck " + pred.bottleneck.kind + " (stage " + std::to_string(pred.bottleneck.stage) + ")") !=
          std::string::npos);
    CHECK(text.find(pred.bottleneck.detail()) != std::string::npos);
    // The stage table: after its header, one row per stage, starting with the stage index and its layers.
    auto lines = lines_of(text);
    auto it = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.find("stage layers") != std::string::npos; });
    REQUIRE(it != lines.end());
    for (int s = 0; s < job.plan.pp; ++s) {
      ++it;
      REQUIRE(it != lines.end());
      std::istringstream row(*it);
      int stage = -1, layers = -1;
      row >> stage >> layers;
      CHECK(stage == s);
      CHECK(layers == pred.stages[s].layers);
    }
  }
  SUBCASE("an optimizer other than plain Adam gets its own line") {
    Job job = test::gpt3_175b_job();
    CHECK(prediction_report(job, predict(job)).find("\noptimizer ") == std::string::npos);
    job.training.optimizer.precision_aware = true;
    job.training.optimizer.exp_avg = StateDtype::bf16;
    job.training.optimizer.cpu_offload_fraction = 0.25;
    CHECK(prediction_report(job, predict(job)).find(
              "optimizer adam, precision-aware: 2 B master weights, moments bf16/fp32, 25% of its state on the host\n") !=
          std::string::npos);
  }
  SUBCASE("an infeasible plan says so with the reason") {
    Job job = test::gpt3_175b_job();
    job.plan.pp = 1;
    job.plan.dp = 1;
    job.training.global_batch_size = 8;
    Prediction pred = predict(job);
    REQUIRE_FALSE(pred.feasible);
    const std::string text = prediction_report(job, pred);
    CHECK(text.find("INFEASIBLE: " + pred.reason) != std::string::npos);
    CHECK(text.find("bottleneck memory") != std::string::npos);
  }
  SUBCASE("an illegal plan reports only the reason") {
    Job job = test::gpt3_175b_job();
    job.plan.tp = 5;
    Prediction pred = predict(job);
    const std::string text = prediction_report(job, pred);
    CHECK(text.find("INFEASIBLE: tp=5 does not divide the 96 attention heads") != std::string::npos);
    CHECK(text.find("iteration ") == std::string::npos);
  }
  SUBCASE("notes are printed") {
    Job job = test::gpt3_175b_job();
    job.training.seq_length = 4096;  // beyond the model's 2048 context
    job.plan.pp = 8;
    job.plan.dp = 16;
    job.plan.recompute.granularity = RecomputeGranularity::full;
    Prediction pred = predict(job);
    REQUIRE_FALSE(pred.notes.empty());
    const std::string text = prediction_report(job, pred);
    for (const auto& n : pred.notes) CHECK(text.find("note: " + n) != std::string::npos);
    CHECK(text.find("exceeds the model's max_seq_length 2048") != std::string::npos);
  }
}
}
