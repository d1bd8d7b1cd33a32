// The quality suite (quality_cases.h), heavy cases left out: the bottleneck search must reach
// 99% of the exhaustive grid's best predicted throughput. The full suite with timings runs in
// bench/bench_search.cpp (BM_Quality).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "costmodel/predictor.h"
#include "quality_cases.h"
#include "search/searcher.h"
#include "test_util.h"

using namespace strata;

TEST_SUITE("search") {
TEST_CASE("quality: bottleneck search >= 99% of the exhaustive optimum") {
  const AnalyticalCostModel model;
  for (const quality::Case& c : quality::cases()) {
    if (c.heavy) continue;
    INFO(c.name);
    const Job w = quality::workload(c, test::catalog(), STRATA_SOURCE_DIR);
    SearchOptions o = quality::options(c);
    o.algorithm = SearchAlgorithm::exhaustive;
    const SearchResult ex = search_plans(w, o, model);
    o.algorithm = SearchAlgorithm::bottleneck;
    const SearchResult bn = search_plans(w, o, model);
    REQUIRE(ex.found);
    REQUIRE(bn.found);
    const double ratio = bn.best.prediction.tokens_per_sec_per_gpu / ex.best.prediction.tokens_per_sec_per_gpu;
    MESSAGE(std::string(c.name), ": exhaustive ", ex.best.prediction.tokens_per_sec_per_gpu, " tokens/s/GPU, bottleneck ",
            bn.best.prediction.tokens_per_sec_per_gpu, " (", ratio, ")");
    CHECK(ratio >= 0.99);
  }
}
}

TEST_SUITE("search") {
TEST_CASE("quality: beats the uniform grid where uneven stages or per-stage recompute help") {
  const AnalyticalCostModel model;
  auto run = [&](const char* name) {
    const auto& all = quality::cases();
    const auto it = std::find_if(all.begin(), all.end(), [&](const quality::Case& c) { return std::string(c.name) == name; });
    REQUIRE(it != all.end());
    const Job w = quality::workload(*it, test::catalog(), STRATA_SOURCE_DIR);
    SearchOptions o = quality::options(*it);
    o.algorithm = SearchAlgorithm::exhaustive;
    const SearchResult ex = search_plans(w, o, model);
    o.algorithm = SearchAlgorithm::bottleneck;
    const SearchResult bn = search_plans(w, o, model);
    REQUIRE(ex.found);
    REQUIRE(bn.found);
    return std::pair{ex, bn};
  };
  SUBCASE("BLOOM-176B: 70 layers over 12 stages, the last (with the output layer) lighter") {
    const auto [ex, bn] = run("bloom-176b/384xA100");
    CHECK(bn.best.prediction.tokens_per_sec_per_gpu > 1.01 * ex.best.prediction.tokens_per_sec_per_gpu);
    CHECK_FALSE(bn.best.job.plan.stage_layers.empty());
  }
  SUBCASE("Llama-3.1-405B at 8K without CP: the grid must recompute every layer; the search need not") {
    const auto [ex, bn] = run("llama3.1-405b/1024xH100/cp1");
    CHECK(bn.best.prediction.tokens_per_sec_per_gpu > 1.05 * ex.best.prediction.tokens_per_sec_per_gpu);
    CHECK(ex.best.job.plan.recompute.granularity == RecomputeGranularity::full);
    // What the grid cannot express: fewer recomputed layers per stage, finer interleaving than its
    // (model chunks may hold only the embedding or the loss: "E|t|...|t|L"), or deeper pipelines
    // of uneven stages (126 layers over 64 stages) whose activations fit without recompute.
    const ParallelPlan& won = bn.best.job.plan;
    MESSAGE("exhaustive vpp ", ex.best.job.plan.vpp, ", bottleneck pp ", won.pp, " vpp ", won.vpp, " recompute ",
            std::string(to_string(won.recompute.granularity)), " layers ", won.recompute.num_layers);
    CHECK((won.recompute.num_layers > 0 || won.vpp > ex.best.job.plan.vpp || !won.stage_layers.empty()));
    CHECK((won.recompute.granularity != RecomputeGranularity::full || won.recompute.num_layers > 0 || won.vpp > ex.best.job.plan.vpp));
  }
}
}
