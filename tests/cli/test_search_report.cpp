#include <doctest/doctest.h>

#include "cli/search_report.h"
#include "costmodel/predictor.h"
#include "test_util.h"

using namespace strata;

namespace {

SearchResult small_result() {
  const AnalyticalCostModel model;
  SearchResult r;
  r.found = true;
  r.best.job = test::gpt3_175b_job();
  r.best.prediction = model.predict(r.best.job);
  RankedPlan ru;
  ru.job = test::gpt3_175b_job();
  ru.job.plan.micro_batch_size = 2;
  ru.prediction = model.predict(ru.job);
  r.runners_up.push_back(ru);
  r.plans_evaluated = 42;
  r.starts = 5;
  r.seconds = 0.25;
  return r;
}

}  // namespace

TEST_SUITE("cli") {
TEST_CASE("search_to_json: how the search ran and its runners-up") {
  SearchOptions o;
  o.seed = 9;
  const nlohmann::json j = search_to_json(small_result(), o);
  CHECK(j["algorithm"] == "bottleneck");
  CHECK(j["plans_evaluated"] == 42);
  CHECK(j["seed"] == 9);
  CHECK(j["starts"] == 5);
  CHECK_FALSE(j.contains("seconds"));  // wall-clock time would make the plan JSON differ between runs
  CHECK_FALSE(j.contains("threads"));
  REQUIRE(j["runners_up"].size() == 1);
  CHECK(j["runners_up"][0]["plan"]["micro_batch_size"] == 2);
  CHECK(j["runners_up"][0]["summary"] == "tp=8 pp=16 dp=8 sp mbs=2 recompute=selective dist-opt");
  CHECK(j["runners_up"][0]["tokens_per_sec_per_gpu"].get<double>() > 0);
}

TEST_CASE("search_report: plan, why it wins, runners-up, flags") {
  const std::string s = search_report(small_result(), SearchOptions{});
  CHECK(s.find("search    bottleneck (seed 0): 42 plans predicted") == 0);
  CHECK(s.find("why it wins:\n  it ends on \"") != std::string::npos);
  CHECK(s.find("runner-up 1: tp=8 pp=16 dp=8 sp mbs=2") != std::string::npos);
  CHECK(s.find("Megatron-LM flags:\n  --num-layers 96") != std::string::npos);
}

TEST_CASE("search_report and search_to_json: whether the ranking holds with a default 10% off") {
  const SearchResult r = small_result();
  CHECK(search_report(r, SearchOptions{}).find("10% higher or lower") == std::string::npos);  // not asked
  CHECK_FALSE(search_to_json(r, SearchOptions{}).contains("ranking_flips"));
  const std::vector<RankingFlip> none;
  CHECK(search_report(r, SearchOptions{}, &none).find("no runner-up gets ahead of it by more than 0.5%") != std::string::npos);
  CHECK(search_to_json(r, SearchOptions{}, &none)["ranking_flips"].empty());
  const std::vector<RankingFlip> one = {{"nvlink_efficiency", "-10%", 0, 0.012}};
  const std::string s = search_report(r, SearchOptions{}, &one);
  CHECK(s.find("a runner-up wins:\n      nvlink_efficiency -10%: runner-up 1 is 1.2% faster") != std::string::npos);
  const nlohmann::json j = search_to_json(r, SearchOptions{}, &one);
  REQUIRE(j["ranking_flips"].size() == 1);
  CHECK(j["ranking_flips"][0]["figure"] == "nvlink_efficiency");
  CHECK(j["ranking_flips"][0]["change"] == "-10%");
  CHECK(j["ranking_flips"][0]["runner_up"] == 1);
  CHECK(j["ranking_flips"][0]["faster_by"] == doctest::Approx(0.012));
}

TEST_CASE("search_report and search_to_json: the tie it broke and the plan with headroom") {
  SearchResult r = small_result();
  CHECK(search_report(r, SearchOptions{}).find("chosen over") == std::string::npos);
  CHECK(search_report(r, SearchOptions{}).find("--memory-reserve") == std::string::npos);
  r.fastest_tied = r.runners_up[0];
  r.with_headroom = r.runners_up[0];
  const std::string s = search_report(r, SearchOptions{});
  CHECK(s.find("chosen over tp=8 pp=16 dp=8 sp mbs=2") != std::string::npos);
  CHECK(s.find("times within 0.5% are a tie") != std::string::npos);
  CHECK(s.find("% of the usable memory") != std::string::npos);
  CHECK(s.find("(--memory-reserve ") != std::string::npos);
  const nlohmann::json j = search_to_json(r, SearchOptions{});
  CHECK(j["fastest_tied"]["plan"]["micro_batch_size"] == 2);
  CHECK(j["starts"] == 5);  // the other fields stay
  CHECK(j["with_headroom"]["summary"] == "tp=8 pp=16 dp=8 sp mbs=2 recompute=selective dist-opt");
  CHECK(j["with_headroom"]["memory_per_gpu_GiB"].get<double>() > 0);
}

TEST_CASE("infeasible_message: the reason and the GPU count that fits") {
  SearchResult r;
  r.infeasible_reason = "no plan fits";
  r.min_memory_needed_GiB = 100;
  r.gpus_needed_to_fit = 64;
  CHECK(infeasible_message(r) == "no feasible plan: no plan fits; 64 GPUs of this type would fit a plan (try --gpus 64)");
  r.gpus_needed_to_fit = 0;
  CHECK(infeasible_message(r).find("no GPU count up to 1024x the request fits") != std::string::npos);
}
}
